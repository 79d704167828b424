#!/usr/bin/python3
"""Random keys into the real full-screen UI: sessions of cellbox in a pty (the ASan and UBSan
build in CI), each on a fixture that varies what the panes draw (no file, one-line and empty
cells, long lines, wide and combining characters, hundreds of cells, plots, markdown, an R
notebook, a history store with odd entries), at a random size down to 20x8, in emacs or vi
editing mode, fed random keys
from a vocabulary of the key table's keys, text, pastes, the ':' commands, resizes, Ctrl-C at
random moments and a kernel that dies mid-cell. A session ends by quitting; it must end by
itself (else it hung) and leave no sanitizer report and no death by a signal; a session the
keys detached (F12, :detach) is ended with `cellbox kill` after its UI.

    ui_keys.py --bin build-asan/tui/cellbox --seconds 60 [--seed N] [--events 400]

Prints one line a session and a summary; exits 1 on a crash or a hang, naming the seed and the
session so that `--seed N --only K` runs that session again.
"""
import argparse
import base64
import fcntl
import json
import os
import pty
import random
import select
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import termios
import time
import zlib

try:
    import pyte                 # the screen at a failure (python3-pyte), else the raw tail
except ImportError:
    pyte = None

PYTHON = os.environ.get('CELLBOX_TEST_PYTHON', '/usr/bin/python3')
RSCRIPT = os.environ.get('CELLBOX_TEST_RSCRIPT', '/usr/bin/Rscript')

# Keys as a terminal (xterm) sends them.
KEYS = {
    'Up': '\x1b[A', 'Down': '\x1b[B', 'Right': '\x1b[C', 'Left': '\x1b[D',
    'Home': '\x1b[H', 'End': '\x1b[F', 'PgUp': '\x1b[5~', 'PgDn': '\x1b[6~',
    'Delete': '\x1b[3~', 'Insert': '\x1b[2~', 'BTab': '\x1b[Z',
    'S-Up': '\x1b[1;2A', 'S-Down': '\x1b[1;2B', 'C-Left': '\x1b[1;5D', 'C-Right': '\x1b[1;5C',
    'S-Enter': '\x1b[13;2u', 'C-Enter': '\x1b[13;5u', 'A-Enter': '\x1b\r',
    'F1': '\x1bOP', 'F2': '\x1bOQ', 'F3': '\x1bOR', 'F4': '\x1bOS', 'F5': '\x1b[15~',
    'F6': '\x1b[17~', 'F7': '\x1b[18~', 'F8': '\x1b[19~', 'F9': '\x1b[20~', 'F10': '\x1b[21~',
    'F11': '\x1b[23~', 'F12': '\x1b[24~',
    'Enter': '\r', 'Tab': '\t', 'Backspace': '\x7f', 'Esc': '\x1b',
    'C-a': '\x01', 'C-e': '\x05', 'C-k': '\x0b', 'C-u': '\x15', 'C-w': '\x17', 'C-l': '\x0c',
    'C-o': '\x0f', 'C-r': '\x12', 'C-s': '\x13', 'C-j': '\x0a', 'C-c': '\x03', 'C-z': '\x1a',
    'C-y': '\x19', 'C-v': '\x16', 'C-_': '\x1f', 'C-d': '\x04',
    # the editor's words, undo and redo, and Esc with a key in one read
    'M-b': '\x1bb', 'M-f': '\x1bf', 'M-d': '\x1bd', 'M-BSpace': '\x1b\x7f',
    'C-BSpace': '\x1b[127;5u', 'C-Delete': '\x1b[3;5~', 'A-Left': '\x1b[1;3D',
    'S-Left': '\x1b[1;2D', 'S-Right': '\x1b[1;2C', 'C-S-z': '\x1b[90;6u', 'Esc-j': '\x1bj',
    'Esc-x': '\x1bx', 'Esc-Up': '\x1b\x1b[A',
    # a selection and the clipboard; redo; the output's one-row scroll
    'S-Home': '\x1b[1;2H', 'S-End': '\x1b[1;2F', 'C-S-Left': '\x1b[1;6D',
    'C-S-Right': '\x1b[1;6C', 'M-w': '\x1bw', 'C-x': '\x18', 'C-M-_': '\x1b\x1f',
    'C-Up': '\x1b[1;5A', 'C-Down': '\x1b[1;5B',
}
# Notebook command mode's letters (and vi normal mode's) and the editor's text.
LETTERS = 'abcdxvVmyrojkKJznNsiI0/:qgG wbehlpPuADCO^$23'
TEXT = ['x = 1', 'print("hi")', '1/0', 'for i in range(3):', '    print(i)', 'def f():',
        'import time; time.sleep(0.3)', '"\u00e9\u4e2d\u6587 \u0301e\u0308"', '# %% ',
        'import matplotlib.pyplot as plt; plt.plot([1, 2]); plt.show()',
        'print("w" * 300)', 'print("\\n".join(map(str, range(80))))', 'input("? ")',
        'from IPython.display import display, Markdown; display(Markdown("**b**"))',
        '\u200b\u202e\u00ad', '\t', 'x <- 41', 'df', '%time 1', 'help', '?len',
        'from IPython.display import HTML; HTML("<table><tr><th>a</th></tr><tr><td>'
        '\u4e2d&amp;</td></tr></table><ul><li>x")', 'print("y" * 300000)']
COMMANDS = ['help', 'restart', 'theme light', 'theme dark', 'theme nope', 'save', 'save x.py',
            'load none.py', 'clear', 'side', 'plots', 'save-plot 1 p.png', 'history', 'graphics',
            'bogus', 'copy-in', 'copy-out', 'interrupt', 'timeout 1', 'vars', 'vars x',
            'side vars', 'side plots', 'output', 'output 1', 'output x', '']
DEATH = 'import os; os._exit(1)'


def png_bytes(w, h):
    """A small valid RGB PNG (no matplotlib needed)."""
    rows = b''.join(b'\0' + b''.join(bytes((x * 7 % 256, y * 5 % 256, 128)) for x in range(w))
                    for y in range(h))

    def chunk(kind, data):
        return (struct.pack('>I', len(data)) + kind + data +
                struct.pack('>I', zlib.crc32(kind + data) & 0xffffffff))
    return (b'\x89PNG\r\n\x1a\n' + chunk(b'IHDR', struct.pack('>IIBBBBB', w, h, 8, 2, 0, 0, 0))
            + chunk(b'IDAT', zlib.compress(rows)) + chunk(b'IEND', b''))


def nb_json(cells, kernel=None):
    nb = {'cells': cells, 'metadata': {}, 'nbformat': 4, 'nbformat_minor': 5}
    if kernel:
        nb['metadata']['kernelspec'] = kernel
    return json.dumps(nb)


def code(src, outputs=()):
    return {'cell_type': 'code', 'execution_count': None, 'metadata': {},
            'outputs': list(outputs), 'source': src}


def make_fixtures(d):
    """The files the sessions open (None: the console with no file)."""
    img = base64.b64encode(png_bytes(64, 48)).decode()
    plot = {'output_type': 'display_data', 'metadata': {},
            'data': {'image/png': img, 'text/plain': '<Figure>'}}
    text = {'output_type': 'stream', 'name': 'stdout', 'text': 'out\u4e2d\n' * 3}
    files = {
        'plots.ipynb': nb_json([code('p%d = %d' % (i, i), [plot] if i % 2 else [text])
                                for i in range(20)] + [code('')]),
        'many.ipynb': nb_json([code('c%d = %d' % (i, i)) for i in range(300)]),
        'odd.ipynb': nb_json([code(''), code('x'), {'cell_type': 'markdown', 'metadata': {},
                                                    'source': '# T\n**b** `c` \u4e2d\u6587'},
                              {'cell_type': 'markdown', 'metadata': {}, 'source': ''},
                              {'cell_type': 'raw', 'metadata': {}, 'source': 'raw'},
                              code('s = "' + 'w' * 500 + '"'),
                              code('e\u0301 = "\u00e9\u0308\u4e2d"\n\n\n')]),
        'script.py': '# %%\nx = 1\n\n# %% [markdown]\n# text\n\n# %%\nprint(x)\n',
        'empty.ipynb': nb_json([]),
    }
    if os.path.exists(RSCRIPT):
        files['analysis.ipynb'] = nb_json([code('x <- 41\nx + 1'), code('plot(1:3)')],
                                          {'name': 'ir', 'display_name': 'R', 'language': 'R'})
    for name, body in files.items():
        with open(os.path.join(d, name), 'w') as f:
            f.write(body)
    return [None] + sorted(files)


def seed_history(binary, env, d):
    """A history store with odd entries: empty, multi-line, wide, control-laden, long."""
    for src in ['', 'print("a")\n', 'x = "\u4e2d\u6587"\n\n', 'y = "\x1b[31mred"',
                's = "' + 'z' * 2000 + '"', 'def g():\n    return 1\n']:
        subprocess.run([binary, 'run', '-c', src], env=env, cwd=d, capture_output=True,
                       timeout=120)


def set_size(fd, rows, cols):
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack('HHHH', rows, cols, 0, 0))


class Session:
    def __init__(self, args, env, d, fixture, rnd):
        self.rnd = rnd
        self.rows, self.cols = rnd.randint(8, 40), rnd.randint(20, 140)
        argv = [args.bin]
        if fixture:
            argv.append(os.path.join(d, fixture))
        argv += ['--graphics', rnd.choice(['blocks', 'none', 'sixel', 'kitty', 'iterm'])]
        self.mode = rnd.choice(['emacs', 'vi'])    # vi's normal mode takes text as commands
        argv += ['--editing-mode', self.mode]
        self.pid, self.fd = pty.fork()
        if self.pid == 0:
            os.chdir(d)
            os.execve(args.bin, argv, env)
        set_size(self.fd, self.rows, self.cols)
        self.out = 0
        self.status = None
        self.tail = b''
        if pyte:
            self.screen = pyte.Screen(self.cols, self.rows)
            self.stream = pyte.ByteStream(self.screen)

    def drain(self, wait=0.0):
        end = time.monotonic() + wait
        while True:
            left = max(0.0, end - time.monotonic())
            r, _, _ = select.select([self.fd], [], [], left)
            if not r:
                return
            try:
                data = os.read(self.fd, 65536)
            except OSError:
                return
            if not data:
                return
            self.out += len(data)
            self.tail = (self.tail + data)[-8192:]
            if pyte:
                self.stream.feed(data)

    def shown(self):
        """The screen as the terminal has it (or the output's last bytes)."""
        if pyte:
            return '\n'.join(line.rstrip() for line in self.screen.display)
        return self.tail.decode('utf-8', 'replace')[-2000:]

    def resize(self, rows, cols):
        self.rows, self.cols = rows, cols
        set_size(self.fd, rows, cols)
        if pyte:
            self.screen.resize(rows, cols)

    def wait_ready(self, timeout):
        """Until the first frame: keys before it reach a terminal not yet raw (Ctrl-C would
        be a SIGINT from the terminal, as for any program starting)."""
        end = time.monotonic() + timeout
        while time.monotonic() < end and b'F1' not in self.tail and self.alive():
            self.drain(0.05)

    def send(self, s):
        data = s.encode()
        while data:
            try:
                n = os.write(self.fd, data[:512])
            except OSError:
                return
            data = data[n:]
            self.drain()

    def alive(self):
        if self.status is not None:
            return False
        pid, status = os.waitpid(self.pid, os.WNOHANG)
        if pid:
            self.status = status
            return False
        return True

    def event(self):
        rnd = self.rnd
        k = rnd.random()
        if k < 0.35:
            self.send(KEYS[rnd.choice(list(KEYS))])
        elif k < 0.55:
            self.send(rnd.choice(LETTERS))
        elif k < 0.72:
            self.send(rnd.choice(TEXT))
        elif k < 0.78:
            self.send('\x1b[200~' + '\n'.join(rnd.choice(TEXT) for _ in range(rnd.randint(1, 6)))
                      + '\x1b[201~')
        elif k < 0.83:
            self.send(rnd.choice(['\x0f', '\x1bOQ']) + rnd.choice(COMMANDS) + '\r')
        elif k < 0.88:
            self.resize(rnd.randint(8, 45), rnd.randint(20, 160))
        elif k < 0.91:
            self.send('\x03')
        elif k < 0.92:
            self.send(DEATH + '\r')
        elif k < 0.93:
            self.send(KEYS['Esc'] + KEYS['S-Enter'])
        else:
            self.drain(rnd.random() * 0.15)     # let the kernel and the screen catch up
        self.drain(0.002)

    def finish(self, timeout):
        """Quit (Ctrl-Q, twice for unsaved changes; Esc first for an overlay). Returns
        None when it ended by itself, else 'hang'."""
        deadline = time.monotonic() + timeout
        tries = 0
        while time.monotonic() < deadline:
            if not self.alive():
                return None
            if tries % 4 == 0:
                self.send('\x1b' + '\x11')
                time.sleep(0.05)
                self.send('\x11')
            tries += 1
            self.drain(0.25)
        if not self.alive():
            return None
        os.kill(self.pid, signal.SIGKILL)
        _, self.status = os.waitpid(self.pid, 0)
        return 'hang'


def end_detached(bin, env):
    """End the named sessions the keys left running (F12, :detach: an unnamed session's
    kernel handed to a host that outlives the UI, as it should): their names."""
    p = subprocess.run([bin, 'ls'], capture_output=True, text=True, env=env, timeout=60)
    names = [line.split()[0] for line in p.stdout.splitlines()[1:] if line.strip()]
    if names:
        subprocess.run([bin, 'kill', *names], capture_output=True, env=env, timeout=60)
    return names


def sanitizer_reports(logdir):
    return [os.path.join(logdir, f) for f in os.listdir(logdir)]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('--bin', required=True)
    ap.add_argument('--seconds', type=float, default=60)
    ap.add_argument('--seed', type=int, default=None)
    ap.add_argument('--events', type=int, default=400, help='key events a session at most')
    ap.add_argument('--only', type=int, default=None, help='run only session K of the seed')
    ap.add_argument('--keep', action='store_true', help='keep the work directory')
    args = ap.parse_args()
    args.bin = os.path.abspath(args.bin)
    seed = args.seed if args.seed is not None else random.randrange(1 << 30)
    d = tempfile.mkdtemp(prefix='cellbox-uikeys-')
    logdir = os.path.join(d, 'sanitizer')
    os.mkdir(logdir)
    env = {k: v for k, v in os.environ.items() if not k.startswith('CELLBOX_')}
    env.update(TERM='xterm-256color', LANG='C.UTF-8', LC_ALL='C.UTF-8',
               XDG_CONFIG_HOME=os.path.join(d, 'config'), XDG_STATE_HOME=os.path.join(d, 'state'),
               CELLBOX_RUNTIME_DIR=os.path.join(d, 'run'), CELLBOX_PYTHON=PYTHON,
               CELLBOX_RSCRIPT=RSCRIPT, PAGER='cat', EDITOR='true',
               ASAN_OPTIONS='detect_leaks=1:abort_on_error=0:log_path=' + logdir + '/asan',
               UBSAN_OPTIONS='halt_on_error=1:print_stacktrace=1:log_path=' + logdir + '/ubsan')
    env.pop('NO_COLOR', None)
    env.pop('TMUX', None)
    fixtures = make_fixtures(d)
    seed_history(args.bin, env, d)
    for f in sanitizer_reports(logdir):     # `run`'s own: not the UI's
        print('ui_keys: a report from seeding the history: %s' % f)
    start = time.monotonic()
    sessions = events = failures = 0
    k = 0
    print('ui_keys: seed %d, %s' % (seed, args.bin))
    while time.monotonic() - start < args.seconds:
        rnd = random.Random(seed * 1000003 + k)
        this = k
        k += 1
        if args.only is not None and this != args.only:
            if this > args.only:
                break
            continue
        fixture = rnd.choice(fixtures)
        n = rnd.randint(20, args.events)
        before = set(sanitizer_reports(logdir))
        s = Session(args, env, d, fixture, rnd)
        s.wait_ready(60)
        done = 0
        for _ in range(n):
            if not s.alive():
                break
            s.event()
            done += 1
        hang = s.finish(30)
        status = s.status or 0
        left = end_detached(args.bin, env)
        reports = set(sanitizer_reports(logdir)) - before
        signalled = os.WIFSIGNALED(status) and os.WTERMSIG(status) not in (signal.SIGTERM,)
        bad = hang or reports or signalled
        sessions += 1
        events += done
        line = 'session %d: %s %dx%d %s, %d events' % (this, fixture or '(console)', s.cols,
                                                        s.rows, s.mode, done)
        if bad:
            failures += 1
            why = hang or ('signal %d' % os.WTERMSIG(status) if signalled else 'sanitizer')
            print(line + ' FAILED: %s (rerun: --seed %d --only %d)' % (why, seed, this))
            for r in reports:
                with open(r, errors='replace') as f:
                    print(f.read()[:6000])
            print('the screen:\n' + s.shown())
        else:
            print(line + ' ok' + (', detached: ended %s' % ' '.join(left) if left else ''))
        sys.stdout.flush()
        try:
            os.close(s.fd)
        except OSError:
            pass
    print('ui_keys: %d sessions, %d key events, %d failed (seed %d)' % (sessions, events,
                                                                          failures, seed))
    if args.keep or failures:
        print('ui_keys: work directory %s' % d)
    else:
        shutil.rmtree(d, ignore_errors=True)
    return 1 if failures else 0


if __name__ == '__main__':
    sys.exit(main())
