#!/usr/bin/python3
"""Notebook mode with a 1,000-cell notebook, next to nbformat's read of the same file.

Usage: bench/notebook.py [--bin build/tui/cellbox] [--cells 1000] [--runs 5]

The notebook is made with nbformat: 1,000 cells, every tenth markdown, the code cells with
outputs as Jupyter leaves them (a stream, an execute_result of several lines), no plots. Then:
  - cellbox, opened on it on a 100x30 pty: from the fork to the first frame's text read from
    the pty (median of --runs); then in a tmux window the UI's own clock from its start to that
    frame being written (`:stats`);
  - scrolling through it one row a frame, the UI's own clock (`:redraw 400 scroll`);
  - the front end's resident memory with it open, after the scroll;
  - the reference: nbformat.read() of the same file in process (median of --runs), and a
    whole `python3 -c 'import nbformat; nbformat.read(...)'`, and `jupyter nbconvert --to
    notebook --stdout` when it is installed (jupyter-nbconvert; scripts/bootstrap --bench).
Needs tmux and python3-nbformat.
"""
import argparse
import fcntl
import os
import pty
import re
import select
import signal
import struct
import termios
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output

import tmux_term
from tmux_term import rss_kb


def make(path, n):
    cells = []
    for i in range(n):
        if i % 10 == 0:
            cells.append(new_markdown_cell('## Part %d\n\nSome *text* about `step %d`, with '
                                           'a [link](https://example.org/%d).' % (i, i, i)))
            continue
        cells.append(new_code_cell(
            'values_%d = [k * %d for k in range(8)]\nprint(sum(values_%d))\nvalues_%d' %
            (i, i, i, i), execution_count=i, outputs=[
                new_output('stream', name='stdout', text='%d\n' % (28 * i)),
                new_output('execute_result', execution_count=i, data={'text/plain': '\n'.join(
                    '[%s]' % ', '.join(str(k * i) for k in range(j, j + 4))
                    for j in (0, 4))})]))
    nb = new_notebook(cells=cells, metadata={'kernelspec': {'name': 'python3',
                                                            'display_name': 'Python 3'}})
    nbformat.write(nb, path)


class Term(tmux_term.Term):
    def __init__(self, name, env):
        super().__init__('bench-nb-%d-%s' % (os.getpid(), name), env)

    def serve(self):
        """A tmux server with a window of the size, so that runs do not pay for its start."""
        self.tmux('-f', '/dev/null', 'new-session', '-d', '-x', '100', '-y', '30', 'sleep 3600')

    def start(self, cmd):
        t0 = time.monotonic()
        self.tmux('respawn-pane', '-k', 'exec ' + cmd)
        return t0

    def command(self, line):
        self.tmux('send-keys', 'C-o')
        self.tmux('send-keys', '-l', line)
        self.tmux('send-keys', 'Enter')


def first_frame_ms(argv, env, marks):
    """Fork `argv` on a 100x30 pty; ms until every one of `marks` has been written to it."""
    t0 = time.monotonic()
    pid, fd = pty.fork()
    if pid == 0:
        fcntl.ioctl(0, termios.TIOCSWINSZ, struct.pack('HHHH', 30, 100, 0, 0))
        os.execve(argv[0], argv, env)
    buf = b''
    try:
        while not all(m in buf for m in marks):
            r, _, _ = select.select([fd], [], [], 30)
            if not r:
                raise SystemExit('bench: no first frame on the pty: %r' % buf[-500:])
            buf += os.read(fd, 65536)
        return (time.monotonic() - t0) * 1e3
    finally:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        os.close(fd)


def timed(cmd, env):
    t = time.monotonic()
    subprocess.run(cmd, env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.monotonic() - t


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--bin', default='build/tui/cellbox')
    ap.add_argument('--cells', type=int, default=1000)
    ap.add_argument('--runs', type=int, default=5)
    ap.add_argument('--python', default='/usr/bin/python3')
    args = ap.parse_args()
    if not shutil.which('tmux'):
        sys.exit('bench: tmux is missing (scripts/bootstrap --bench)')
    tmp = tempfile.mkdtemp(prefix='bench-nb-')
    path = os.path.join(tmp, 'big.ipynb')
    make(path, args.cells)
    env = {k: v for k, v in os.environ.items() if not k.startswith('CELLBOX_')}
    env.update(LANG='C.UTF-8', LC_ALL='C.UTF-8', XDG_CONFIG_HOME=tmp + '/config',
               XDG_STATE_HOME=tmp + '/state', CELLBOX_RUNTIME_DIR=tmp + '/run',
               CELLBOX_PYTHON=args.python, JUPYTER_RUNTIME_DIR=tmp + '/jrun',
               JUPYTER_DATA_DIR=tmp + '/jdata', JUPYTER_CONFIG_DIR=tmp + '/jconfig')
    env.pop('TMUX', None)
    first_row = 'Part 0'          # the first cell, a markdown heading, as drawn
    try:
        pty_env = dict(env, TERM='xterm-256color')
        opens = [first_frame_ms([os.path.abspath(args.bin), '--graphics', 'none', path],
                                pty_env, [b'Part', b'values_1'])
                 for _ in range(args.runs)]
        own = []
        t = Term('open', env)
        t.serve()
        for r in range(args.runs):
            t.start(os.path.abspath(args.bin) + ' --graphics none ' + path)
            t.wait(lambda s: first_row in s and 'values_1 = ' in s, 60, 0.002)
            t.wait(lambda s: 'local \u2502' in s, 120)        # the kernel is up
            t.command('stats')
            s = t.wait(lambda s: 'first frame' in s)
            own.append(float(re.search(r'first frame ([0-9.]+) ms', s).group(1)))
        t.command('redraw 400 scroll')
        s = t.wait(lambda s: 'scrolling frames' in s, 120)
        m = re.search(r'median ([0-9.]+) ms, p90 ([0-9.]+) ms, (\d+) rows', s)
        scroll_med, scroll_p90, rows = float(m.group(1)), float(m.group(2)), int(m.group(3))
        pid = int(t.tmux('display', '-p', '#{pane_pid}').strip())
        rss = rss_kb(pid) / 1024
        t.close()

        reads = []
        for _ in range(args.runs):
            t1 = time.monotonic()
            nbformat.read(path, as_version=4)
            reads.append((time.monotonic() - t1) * 1e3)
        py = [timed([args.python, '-c', 'import nbformat, sys; nbformat.read(sys.argv[1], 4)',
                     path], env) * 1e3 for _ in range(args.runs)]
        conv = None
        if shutil.which('jupyter-nbconvert'):
            conv = [timed(['jupyter-nbconvert', '--to', 'notebook', '--stdout', path], env) * 1e3
                    for _ in range(args.runs)]
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print('notebook mode, %d cells (every tenth markdown, outputs, no plots), 100x30 tmux '
          'window; medians of %d runs\n' % (args.cells, args.runs))
    print('  cellbox: fork to the first frame written on a pty        %8.1f ms  (target <= 100)'
          % statistics.median(opens))
    print('  cellbox: its own clock, UI start to the first frame     %8.1f ms'
          % statistics.median(own))
    print('  cellbox: scrolling one row a frame, %d frames        %8.3f ms median, %.3f p90  '
          '(target <= 5)' % (400, scroll_med, scroll_p90))
    print('  cellbox: front-end resident memory with it open       %8.2f MB  (target <= 15)'
          % rss)
    print('  reference: nbformat.read() of the file, in process   %8.1f ms'
          % statistics.median(reads))
    print('  reference: python3 -c "import nbformat; read"         %8.1f ms'
          % statistics.median(py))
    if conv:
        print('  reference: jupyter nbconvert --to notebook --stdout   %8.1f ms'
              % statistics.median(conv))
    else:
        print('  reference: jupyter nbconvert                          (not installed)')
    print('  ratio: nbformat.read() / cellbox to first frame: %.2fx; whole python process / '
          'cellbox: %.2fx' % (statistics.median(reads) / statistics.median(opens),
                              statistics.median(py) / statistics.median(opens)))


if __name__ == '__main__':
    main()
