#!/usr/bin/python3
"""Two cellbox binaries taking turns at one pooled run, against one pool: which is quicker.

Usage: bench/turns.py --before OLD/cellbox [--after build/tui/cellbox] [-n 15] [-- ARGS]

Each round runs `cellbox ARGS` (default: run --pool -c pass) with each binary, the order
swapped every round, and waits --gap seconds after each run so that the daemon has made the
next kernel (the pool never waited for). The pool is whatever the environment names
(CELLBOX_RUNTIME_DIR, CELLBOX_BACKEND, CELLBOX_RUNTIME): start its daemon first with either
binary. Prints the median and p90 wall time of each, process start to exit, and their ratio.
"""
import argparse
import os
import statistics
import subprocess
import sys
import time


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--before', required=True, help='the binary built before the change')
    ap.add_argument('--after', default=os.path.join(here, '..', 'build', 'tui', 'cellbox'))
    ap.add_argument('-n', type=int, default=15, help='runs of each binary')
    ap.add_argument('--gap', type=float, default=4.0, help='seconds after each run')
    ap.add_argument('args', nargs='*', default=['run', '--pool', '-c', 'pass'])
    a = ap.parse_args()
    bins = [('before', a.before), ('after', a.after)]
    took = {name: [] for name, _ in bins}
    with open('/proc/loadavg') as f:
        load = f.read().split()[0]
    for i in range(a.n):
        for name, path in (bins if i % 2 else bins[::-1]):
            t = time.monotonic()
            r = subprocess.run([path, *a.args], capture_output=True, text=True)
            took[name].append((time.monotonic() - t) * 1000)
            if r.returncode:
                sys.exit('%s failed: %s' % (name, r.stderr.strip()[-500:]))
            time.sleep(a.gap)
    with open('/proc/loadavg') as f:
        print('cellbox %s, %d each, taking turns (load %s to %s)' %
              (' '.join(a.args), a.n, load, f.read().split()[0]))
    for name, v in took.items():
        v.sort()
        print('  %-7s median %8.2f ms   p90 %8.2f ms' %
              (name, statistics.median(v), v[max(0, int(len(v) * 0.9) - 1)]))
    print('  ratio before / after: %.2f' %
          (statistics.median(took['before']) / statistics.median(took['after'])))


if __name__ == '__main__':
    main()
