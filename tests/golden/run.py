"""Golden replay tests, data-driven as curl's: one directory per case under tests/golden/.

A case holds its input (`cells.py` or `cells.ipynb`, or a `cells.*` made by `make.py` with
nbformat), and what `cellbox replay` must do with it:

  args             extra arguments, one per line (optional)
  rc               the expected exit code (default 0)
  stdout           the expected transcript, exactly, after normalising plot paths
  stderr_contains  lines that must each appear in stderr (optional)
  notebook.ipynb   the expected -o notebook after normalising ids and PNG data (optional)

    run.py CASE            run one case (meson registers each)
    run.py --update CASE   rewrite the expected files from what cellbox does now
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
BIN = os.environ.get('CELLBOX_BIN', 'cellbox')
PYTHON = os.environ.get('CELLBOX_TEST_PYTHON', '/usr/bin/python3')


def normalise_transcript(text, tmp):
    text = text.replace(tmp, '<tmp>')
    text = re.sub(r'0x[0-9a-fA-F]{6,16}', '0x<addr>', text)
    text = re.sub(r'saved to <tmp>/state/cellbox/sessions/[^/]+/', 'saved to <session>/', text)
    return re.sub(r'at \S+/plots/(\d+)\.png\]', r'at <channel>/plots/\1.png]', text)


def normalise_notebook(nb):
    info = nb['metadata'].get('language_info')
    if info:
        info['version'] = '<python version>'
    for i, cell in enumerate(nb['cells']):
        cell['id'] = 'cell-%d' % i
        for key in cell['metadata'].get('execution', {}):
            cell['metadata']['execution'][key] = '<time>'
        # What a cell used is measured (tests/e2e/test_replay.py checks it), not golden.
        cellbox = cell['metadata'].get('cellbox', {})
        cellbox.pop('usage', None)
        if 'cellbox' in cell['metadata'] and not cellbox:
            del cell['metadata']['cellbox']

        for out in cell.get('outputs', []):
            png = out.get('data', {}).get('image/png')
            if png is not None:
                out['data']['image/png'] = '<png %d bytes of base64>' % (len(png) > 0)
    return json.dumps(nb, indent=1, sort_keys=True, ensure_ascii=False) + '\n'


def read(path, default=None):
    try:
        with open(path, encoding='utf-8', newline='') as f:
            return f.read()
    except FileNotFoundError:
        return default


def main(argv):
    update = argv[1:2] == ['--update']
    name = argv[-1]
    case = os.path.join(HERE, name)
    tmp = tempfile.mkdtemp(prefix='cellbox-golden-')
    try:
        env = {k: v for k, v in os.environ.items() if not k.startswith('CELLBOX_')}
        env.update(XDG_STATE_HOME=os.path.join(tmp, 'state'),
                   XDG_CONFIG_HOME=os.path.join(tmp, 'config'),
                   CELLBOX_RUNTIME_DIR=os.path.join(tmp, 'run'), CELLBOX_PYTHON=PYTHON)
        env.pop('NO_COLOR', None)
        if os.path.exists(os.path.join(case, 'make.py')):
            subprocess.run([PYTHON, os.path.join(case, 'make.py'), tmp], check=True)
        inputs = [f for f in os.listdir(case) if f.startswith('cells.')]
        for f in inputs:
            shutil.copy(os.path.join(case, f), tmp)
        inputs = sorted(f for f in os.listdir(tmp) if f.startswith('cells.'))
        args = [a for a in read(os.path.join(case, 'args'), '').splitlines() if a]
        out_nb = os.path.join(tmp, 'out.ipynb')
        cmd = [BIN, 'replay', inputs[0], '-o', out_nb] + args
        p = subprocess.run(cmd, cwd=tmp, env=env, capture_output=True, timeout=300)
        stdout = normalise_transcript(p.stdout.decode('utf-8', 'replace'), tmp)
        stderr = p.stderr.decode('utf-8', 'replace')
        got_nb = None
        if os.path.exists(out_nb):
            with open(out_nb, encoding='utf-8') as f:
                got_nb = normalise_notebook(json.load(f))
        if update:
            with open(os.path.join(case, 'stdout'), 'w', encoding='utf-8', newline='') as f:
                f.write(stdout)
            with open(os.path.join(case, 'rc'), 'w') as f:
                f.write('%d\n' % p.returncode)
            if got_nb is not None and os.path.exists(os.path.join(case, 'notebook.ipynb')):
                with open(os.path.join(case, 'notebook.ipynb'), 'w', encoding='utf-8') as f:
                    f.write(got_nb)
            print(stderr, end='')
            return 0
        failures = []
        want_rc = int(read(os.path.join(case, 'rc'), '0').strip())
        if p.returncode != want_rc:
            failures.append('exit code %d, expected %d' % (p.returncode, want_rc))
        want_out = read(os.path.join(case, 'stdout'), '')
        if stdout != want_out:
            failures.append('stdout differs:\n--- expected\n%s--- got\n%s' % (want_out, stdout))
        for line in read(os.path.join(case, 'stderr_contains'), '').splitlines():
            if line and line not in stderr:
                failures.append('stderr lacks %r' % line)
        want_nb = read(os.path.join(case, 'notebook.ipynb'))
        if want_nb is not None and got_nb != want_nb:
            failures.append('notebook differs:\n--- expected\n%s--- got\n%s' % (want_nb, got_nb))
        if os.path.isdir(os.path.join(tmp, 'run')) and os.listdir(os.path.join(tmp, 'run')):
            failures.append('channel directories left behind')
        if failures:
            print('case %s: %s' % (name, ' '.join(cmd)))
            print('stderr:\n' + stderr)
            for f in failures:
                print('FAIL: ' + f)
            return 1
        print('case %s: ok' % name)
        return 0
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == '__main__':
    sys.exit(main(sys.argv))
