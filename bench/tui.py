#!/usr/bin/python3
"""The full-screen UI after many cells: cellbox next to jupyter-console, in one run.

Usage: bench/tui.py [--bin build/tui/cellbox] [--cells 1000]

Both front ends run in the same tmux window (100x30) and get the same cells typed through
send-keys, one at a time, each waited for until its Out[n] is on the screen. Then:
  - resident memory (VmRSS) of the front-end process, and of its kernel beside it;
  - keystroke latency: a key sent until tmux shows it, median of 40 (tmux capture-pane polled);
  - resize redraw: the window resized until the new layout is on the screen, median of 10
    (cellbox only: jupyter-console is a line UI, a resize does not redraw it);
  - cellbox only: its own full-frame time (`redraw 200`: lay out all cells and repaint).
Needs tmux and Debian's python3-jupyter-console (scripts/bootstrap --bench).
"""
import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import tmux_term
from tmux_term import rss_kb


def children(pid):
    out = subprocess.run(['ps', '-o', 'pid=', '--ppid', str(pid)], capture_output=True,
                         text=True).stdout.split()
    pids = [int(p) for p in out]
    for p in list(pids):
        pids += children(p)
    return pids


class Term(tmux_term.Term):
    def __init__(self, name, cmd, env, ready):
        super().__init__('bench-tui-%d-%s' % (os.getpid(), name), env)
        self.tmux('-f', '/dev/null', 'new-session', '-d', '-x', '100', '-y', '30', 'exec ' + cmd)
        self.pid = int(self.tmux('display', '-p', '#{pane_pid}').strip())
        self.wait(lambda s: ready in s, 120)


def measure(term, cells, prompt, extra=None, full_screen=True):
    t0 = time.monotonic()
    for i in range(1, cells + 1):
        term.tmux('send-keys', '-l', '%d * 2' % i)
        term.tmux('send-keys', 'Enter')
        # The result, and the prompt for the next cell (typing ahead of jupyter-console's
        # prompt crashes its event loop: "cannot enter context").
        want, ready = 'Out[%d]: %d' % (i, i * 2), prompt % (i + 1)
        term.wait(lambda s: want in s and ready in s)
    cells_s = time.monotonic() - t0
    time.sleep(0.5)
    ui_kb = rss_kb(term.pid)
    kernel_kb = sum(rss_kb(p) for p in children(term.pid))
    lat = []
    for k in range(40):
        before = term.screen()
        t = time.monotonic()
        term.tmux('send-keys', '-l', 'abcdefghij'[k % 10])
        term.wait(lambda s: s != before, 10, 0.0005)
        lat.append((time.monotonic() - t) * 1e3)
    term.tmux('send-keys', 'C-u')
    resize = []
    for k in range(10 if full_screen else 0):
        before = term.screen()
        t = time.monotonic()
        term.tmux('resize-window', '-x', '80' if k % 2 == 0 else '100', '-y', '30')
        term.wait(lambda s: s != before and max(len(l) for l in s.split('\n')) <=
                  (80 if k % 2 == 0 else 100), 10, 0.0005)
        resize.append((time.monotonic() - t) * 1e3)
    r = {'ui_rss_mb': ui_kb / 1024, 'kernel_rss_mb': kernel_kb / 1024,
         'cells_s': cells_s, 'key_ms': statistics.median(lat),
         'resize_ms': statistics.median(resize) if resize else None}
    if extra:
        r.update(extra(term))
    return r


def cellbox_frame(term):
    term.tmux('send-keys', 'C-o')
    term.tmux('send-keys', '-l', 'redraw 200')
    term.tmux('send-keys', 'Enter')
    s = term.wait(lambda s: 'redraw: 200 full frames' in s, 120)
    m = re.search(r'median ([0-9.]+) ms', s)
    return {'frame_ms': float(m.group(1))}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--bin', default='build/tui/cellbox')
    ap.add_argument('--cells', type=int, default=1000)
    ap.add_argument('--python', default='/usr/bin/python3')
    args = ap.parse_args()
    if not shutil.which('tmux'):
        sys.exit('bench: tmux is missing (scripts/bootstrap --bench)')
    tmp = tempfile.mkdtemp(prefix='bench-tui-')
    env = {k: v for k, v in os.environ.items() if not k.startswith('CELLBOX_')}
    env.update(LANG='C.UTF-8', LC_ALL='C.UTF-8', XDG_CONFIG_HOME=tmp + '/config',
               CELLBOX_RUNTIME_DIR=tmp + '/run', CELLBOX_PYTHON=args.python,
               JUPYTER_RUNTIME_DIR=tmp + '/jrun', JUPYTER_DATA_DIR=tmp + '/jdata',
               IPYTHONDIR=tmp + '/ipython', PYDEVD_DISABLE_FILE_VALIDATION='1')
    env.pop('TMUX', None)
    results = {}
    try:
        t = Term('cellbox', os.path.abspath(args.bin) + ' tui', env, 'F1 help')
        try:
            results['cellbox'] = measure(t, args.cells, 'In [%d] ', cellbox_frame)
            print('cellbox:', results['cellbox'], flush=True)
        finally:
            t.close()
        t = Term('jupyter', args.python + ' -m jupyter_console', env, 'In [1]:')
        try:
            results['jupyter-console'] = measure(t, args.cells, 'In [%d]:', full_screen=False)
        finally:
            t.close()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    c, j = results['cellbox'], results['jupyter-console']
    print('TUI after %d executed cells, 100x30 tmux window (one run)\n' % args.cells)
    print('%-34s %14s %16s %8s' % ('', 'cellbox', 'jupyter-console', 'ratio'))
    rows = [('front-end resident memory (MB)', 'ui_rss_mb'),
            ('kernel resident memory (MB)', 'kernel_rss_mb'),
            ('typing the cells, each waited (s)', 'cells_s'),
            ('keystroke to screen, median (ms)', 'key_ms'),
            ('resize to redrawn, median (ms)', 'resize_ms')]
    for label, key in rows:
        if j[key] is None:      # jupyter-console is a line UI: a resize redraws nothing
            print('%-34s %14.2f %16s' % (label, c[key], 'n/a'))
            continue
        print('%-34s %14.2f %16.2f %7.2fx' % (label, c[key], j[key], j[key] / c[key]
                                               if c[key] else float('nan')))
    print('%-34s %14.3f %16s' % ('full frame, own timer (ms)', c['frame_ms'], 'n/a'))
    print('\ntarget: cellbox front end < 20 MB after 1,000 cells; ratio = jupyter / cellbox')


if __name__ == '__main__':
    main()
