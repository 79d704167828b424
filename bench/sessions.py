#!/usr/bin/python3
"""Named sessions beside a cold start, in one run (local backend).

Usage: bench/sessions.py [--bin build/tui/cellbox] [-n RUNS]

Rows, taking turns RUNS times each (so the machine's load falls on all alike); the figure is
the median wall time of the whole command:
  cold      `cellbox repl` with one cell piped in (`print(1)`): a kernel started, the cell,
            the kernel ended: what a front end without a named session pays.
  attach    `cellbox attach --repl NAME` with the same cell, to a running named session that
            has run 20 cells: the connection, the earlier cells sent and printed, the cell,
            the detach.
  first     the same attach up to its first byte of output (the first of the earlier cells
            printed): attach to first frame.
  start     `cellbox repl --name NEW` with the cell: the host forked and the kernel started,
            the cell, the detach (the session then killed, unmeasured).
  checkpoint  `cellbox checkpoint NAME FILE` of the session of 20 cells (a re-run checkpoint:
            its cells, no memory image).
  restore   `cellbox restore --name NEW FILE`: a host, a fresh kernel, the 20 cells run again.
  fork      `cellbox fork NAME NEW` of the session of 20 cells: its kernel process copied into
            a new session (channel, copy, new host), the fork then killed, unmeasured.
  fork+cell the same fork, then `cellbox attach --repl NEW` with the cell: a second kernel
            with the state, ready to use, against a cold start's.
  detach    `cellbox repl` (unnamed) with the cell, then `:detach`: the kernel started, the
            cell, its kernel handed to a new host under a generated name, the front end gone
            (the session then killed, unmeasured); against cold, which ends its kernel.
"""
import argparse
import os
import re
import shutil
import statistics
import subprocess
import tempfile
import time


def timed(argv, env, stdin):
    t = time.perf_counter()
    p = subprocess.Popen(argv, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL)
    p.stdin.write(stdin)
    p.stdin.close()
    first = p.stdout.read(1)
    t_first = time.perf_counter()
    rest = p.stdout.read()
    if p.wait() != 0 or not (first + rest).strip():
        raise SystemExit('%s: exit status %d' % (' '.join(argv), p.returncode))
    return (time.perf_counter() - t) * 1e3, (t_first - t) * 1e3


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--bin', default=os.path.join(here, '..', 'build', 'tui', 'cellbox'))
    ap.add_argument('-n', type=int, default=20, help='runs of each row (default 20)')
    args = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix='cellbox-bench-sessions-')
    env = {k: v for k, v in os.environ.items() if not k.startswith('CELLBOX_')}
    env.update(CELLBOX_RUNTIME_DIR=os.path.join(tmp, 'run'),
               XDG_STATE_HOME=os.path.join(tmp, 'state'),
               XDG_CONFIG_HOME=os.path.join(tmp, 'config'))
    cb = os.path.abspath(args.bin)
    cell = b'print(1)\n'
    times = {'cold': [], 'attach': [], 'first': [], 'start': [], 'checkpoint': [],
             'restore': [], 'fork': [], 'fork+cell': [], 'detach': []}
    ck = os.path.join(tmp, 'bench.ckpt')
    try:
        warm = ''.join('x%d = %d\n' % (i, i) for i in range(20)).encode()
        subprocess.run([cb, 'repl', '--name', 'bench'], input=warm, env=env, check=True,
                       capture_output=True)
        for i in range(args.n):
            ms, _ = timed([cb, 'repl'], env, cell)
            times['cold'].append(ms)
            ms, first = timed([cb, 'attach', '--repl', 'bench'], env, cell)
            times['attach'].append(ms)
            times['first'].append(first)
            ms, _ = timed([cb, 'repl', '--name', 'new%d' % i], env, cell)
            times['start'].append(ms)
            subprocess.run([cb, 'kill', 'new%d' % i], env=env, check=True)
            t = time.perf_counter()
            subprocess.run([cb, 'checkpoint', 'bench', ck], env=env, check=True,
                           capture_output=True)
            times['checkpoint'].append((time.perf_counter() - t) * 1e3)
            t = time.perf_counter()
            subprocess.run([cb, 'restore', '--name', 'back%d' % i, ck], env=env, check=True,
                           capture_output=True)
            times['restore'].append((time.perf_counter() - t) * 1e3)
            subprocess.run([cb, 'kill', 'back%d' % i], env=env, check=True)
            t = time.perf_counter()
            subprocess.run([cb, 'fork', 'bench', 'fork%d' % i], env=env, check=True,
                           capture_output=True)
            times['fork'].append((time.perf_counter() - t) * 1e3)
            ms, _ = timed([cb, 'attach', '--repl', 'fork%d' % i], env, cell)
            times['fork+cell'].append(times['fork'][-1] + ms)
            subprocess.run([cb, 'kill', 'fork%d' % i], env=env, check=True)
            t = time.perf_counter()
            p = subprocess.run([cb, 'repl'], input=cell + b':detach\n', env=env,
                               capture_output=True)
            times['detach'].append((time.perf_counter() - t) * 1e3)
            name = re.search(rb"detached from session '([a-z0-9-]+)'", p.stdout + p.stderr)
            if p.returncode != 0 or not name:
                raise SystemExit('repl :detach: exit status %d: %s'
                                 % (p.returncode, (p.stdout + p.stderr).decode()[-300:]))
            subprocess.run([cb, 'kill', name.group(1).decode()], env=env, check=True)
    finally:
        for name in os.listdir(os.path.join(tmp, 'run', 'sessions')):
            subprocess.run([cb, 'kill', name], env=env)
        shutil.rmtree(tmp, ignore_errors=True)
    med = {k: statistics.median(v) for k, v in times.items()}
    print('named sessions, local backend, %d runs each, medians (%s, %d cores)'
          % (args.n, time.strftime('%Y-%m-%d'), os.cpu_count()))
    print('  %-64s %10s %8s' % ('', 'ms', '/ cold'))
    rows = [('cold: cellbox repl, one cell, kernel started and ended', 'cold'),
            ('start: cellbox repl --name NEW, one cell, detach', 'start'),
            ('attach: cellbox attach --repl NAME (20 cells before), one cell', 'attach'),
            ('attach to first frame (its first byte of output)', 'first'),
            ('checkpoint NAME FILE (20 cells; a re-run, no memory image)', 'checkpoint'),
            ('restore --name NEW FILE (fresh kernel, 20 cells re-run)', 'restore'),
            ('fork NAME NEW (the kernel process copied, a new host)', 'fork'),
            ('fork, then attach --repl NEW, one cell', 'fork+cell'),
            ('repl (unnamed), one cell, :detach (the kernel handed over)', 'detach')]
    for title, key in rows:
        print('  %-64s %10.1f %7.2fx' % (title, med[key], med[key] / med['cold']))


if __name__ == '__main__':
    main()
