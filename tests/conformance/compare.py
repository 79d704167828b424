"""Compare two executed notebooks cell by cell, as the conformance suite judges them.

    compare.py REFERENCE.ipynb OTHER.ipynb      prints the differences, exit 1 if any

What is compared, per code cell, after normalising both sides the same way:
- the outputs' kinds and order, where a run of consecutive stream outputs counts as one
  (a kernel may split a stream in several outputs, and stdout and stderr interleave by
  timing): its stdout text and its stderr text, with `\r` and backspace applied;
- stream text, text/plain and text/html with addresses (0x7f...), timings (1.2 ms), %timeit's
  run and loop counts (and its note that the slowest run took longer), uuids and cell file
  names (/tmp/ipykernel_<pid>/<hash>.py) replaced by placeholders; other text mimes
  (markdown, latex, javascript) as they are;
- errors by ename, evalue and the traceback's text without colours or cell names;
- JSON mimes as values (a float that is integral, 0.0, may be written 0);
- images (png, jpeg) by presence, format and pixel size within 2 px; svg and pdf by presence;
- each output's metadata keys, and the notebook's language_info (when the reference has one).
"""
import base64
import json
import re
import struct
import sys

TOLERANCE = 2

_SUBS = [
    (re.compile(r'\x1b\[[0-9;]*[A-Za-z]'), ''),
    (re.compile(r'0x[0-9a-fA-F]{6,16}'), '0x<addr>'),
    (re.compile(r'[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}'), '<uuid>'),
    (re.compile(r'\S*/ipykernel_\d+/\d+\.py|<ipython-input-\d+-[0-9a-f]+>'), '<cell>'),
    (re.compile(r'(?:Cell|Input) In ?\[\d*\]'), 'Cell In [n]'),
    (re.compile(r'The slowest run took [\d.]+ times longer than the fastest\. This could mean '
                r'that an intermediate result is being cached\.\n'), ''),
    (re.compile(r'\b\d[\d,]*(?= (?:runs?|loops?)\b)'), '<n>'),
    (re.compile(r'\b\d+(?:\.\d+)?\s*(?:ns|µs|us|ms|s|sec|seconds|min)\b'), '<time>'),
]


def collapse(text):
    """A stream's carriage returns and backspaces applied, as JupyterLab and nbconvert store
    the text (nbclient keeps it raw)."""
    text = re.sub(r'[^\n]*\r(?=[^\n])', '', text)
    while True:
        new = re.sub(r'[^\n\x08]\x08', '', text)
        if new == text:
            return new
        text = new


def normalise(text):
    if isinstance(text, list):
        text = ''.join(text)
    for pattern, repl in _SUBS:
        text = pattern.sub(repl, text)
    return text


def image_size(mime, b64):
    raw = base64.b64decode(''.join(b64) if isinstance(b64, list) else b64)
    if mime == 'image/png' and raw[12:16] == b'IHDR':
        return struct.unpack('>II', raw[16:24])
    i = 2
    while mime == 'image/jpeg' and i + 9 < len(raw) and raw[i] == 0xFF:
        m = raw[i + 1]
        if 0xC0 <= m <= 0xCF and m not in (0xC4, 0xC8, 0xCC):
            h, w = struct.unpack('>HH', raw[i + 5:i + 9])
            return w, h
        i += 2 + struct.unpack('>H', raw[i + 2:i + 4])[0]
    return None


def items(outputs):
    """The comparable items of a cell's outputs: (kind, value) pairs."""
    out = []
    streams = None
    for o in list(outputs) + [None]:
        if o is not None and o['output_type'] == 'stream':
            if streams is None:
                streams = {'stdout': '', 'stderr': ''}
            streams[o['name']] += ''.join(o['text']) if isinstance(o['text'], list) else o['text']
            continue
        if streams is not None:
            out.append(('streams', {k: normalise(collapse(v)) for k, v in streams.items()
                                    if v}))
            streams = None
        if o is None:
            break
        kind = o['output_type']
        if kind == 'error':
            tb = normalise('\n'.join(o.get('traceback', [])))
            out.append(('error', (o['ename'], normalise(o['evalue']), tb)))
            continue
        bundle = {}
        for mime, value in o.get('data', {}).items():
            if mime in ('image/png', 'image/jpeg'):
                bundle[mime] = ('image', image_size(mime, value))
            elif mime in ('image/svg+xml', 'application/pdf'):
                bundle[mime] = 'present'
            elif mime == 'application/json' or mime.endswith('+json'):
                bundle[mime] = ('json', value)     # compared as values: 0.0 == 0
            else:
                bundle[mime] = normalise(value)
        out.append((kind, bundle, sorted(o.get('metadata', {}))))
    return out


def same(a, b):
    """Whether two items match (images within TOLERANCE pixels)."""
    if a[0] != b[0] or len(a) != len(b):
        return False
    if a[0] not in ('display_data', 'execute_result'):
        return a == b
    if set(a[1]) != set(b[1]) or a[2] != b[2]:
        return False
    for mime, x in a[1].items():
        y = b[1][mime]
        if isinstance(x, tuple) and x[0] == 'image':
            if x[1] is None or y[1] is None or any(abs(p - q) > TOLERANCE
                                                   for p, q in zip(x[1], y[1])):
                return False
        elif x != y:
            return False
    return True


def short(item):
    s = repr(item)
    return s if len(s) < 400 else s[:400] + '...'


def compare(ref, other):
    """The differences between two notebooks, as lines of text."""
    diffs = []
    if ('language_info' in ref['metadata'] and
            ref['metadata']['language_info'] != other['metadata'].get('language_info')):
        diffs.append('language_info: %r != %r' % (ref['metadata'].get('language_info'),
                                                  other['metadata'].get('language_info')))
    code = [(i, c) for i, c in enumerate(ref['cells']) if c['cell_type'] == 'code']
    code_o = [(i, c) for i, c in enumerate(other['cells']) if c['cell_type'] == 'code']
    if len(code) != len(code_o):
        diffs.append('%d code cells against %d' % (len(code), len(code_o)))
    for (i, a), (_, b) in zip(code, code_o):
        ia, ib = items(a['outputs']), items(b['outputs'])
        src = ''.join(a['source']).split('\n')[0][:60]
        if len(ia) != len(ib):
            diffs.append('cell %d (%s): %d outputs against %d\n  ref:   %s\n  other: %s'
                         % (i, src, len(ia), len(ib), short(ia), short(ib)))
            continue
        for k, (x, y) in enumerate(zip(ia, ib)):
            if not same(x, y):
                diffs.append('cell %d (%s) output %d:\n  ref:   %s\n  other: %s'
                             % (i, src, k, short(x), short(y)))
    return diffs


def main(argv):
    with open(argv[1], encoding='utf-8') as f:
        ref = json.load(f)
    with open(argv[2], encoding='utf-8') as f:
        other = json.load(f)
    diffs = compare(ref, other)
    for d in diffs:
        print(d)
    return 1 if diffs else 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
