#!/usr/bin/python3
"""Warm round trips through jupyter_client to ipykernel and to `cellbox kernel` (the local
backend), alternated in one run: the cost of cellbox's Jupyter wire protocol front against
the anchor it stands in for.

Usage: bench/kernel_roundtrip.py [--cellbox build/tui/cellbox] [--scale N] [--rounds N]
                                 [--starts N]

Needs `scripts/bootstrap --bench` (python3-jupyter-client, python3-ipykernel). A round trip
is: send a cell, wait until its whole output and its end have arrived (execute_reply on shell
and status idle on iopub), the same client code for both kernels (jupyter_anchor.py). The
cases run in rounds, each kernel in turn, so that a slower moment of the machine falls on
both alike. `start` is start_new_kernel() to a kernel that answered kernel_info, both
alternately.
"""
import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time

import jupyter_anchor

CASES = [  # name, code, n per round, warm-up, stdout bytes expected
    ('pass', 'pass', 100, 20, 0),
    ('print(1)', 'print(1)', 100, 20, 2),
    ('print 100 KB', "print('x' * 100000)", 10, 2, 100001),
]


def start(name):
    from jupyter_client.manager import start_new_kernel
    return start_new_kernel(kernel_name=name, startup_timeout=120)


def timed(kc, code, n, warm, expect, who):
    """Milliseconds of `n` round trips after `warm` untimed ones."""
    out = []
    for i in range(-warm, n):
        t = time.monotonic()
        got = jupyter_anchor.round_trip(kc, code)
        if got != expect:
            raise SystemExit('%s %r: got %d bytes, expected %d' % (who, code, got, expect))
        if i >= 0:
            out.append((time.monotonic() - t) * 1e3)
    return out


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--cellbox', default=os.path.join(here, '..', 'build', 'tui', 'cellbox'))
    ap.add_argument('--scale', type=int, default=1)
    ap.add_argument('--rounds', type=int, default=5)
    ap.add_argument('--starts', type=int, default=5)
    args = ap.parse_args()

    tmp = tempfile.mkdtemp(prefix='cellbox-bench-kernel-')
    try:
        prefix = os.path.join(tmp, 'prefix')
        subprocess.run([args.cellbox, 'kernel', 'install', '--prefix', prefix, '--name',
                        'cellbox-bench'], check=True, stdout=subprocess.DEVNULL)
        os.environ['JUPYTER_PATH'] = os.path.join(prefix, 'share', 'jupyter')
        os.environ['JUPYTER_RUNTIME_DIR'] = os.path.join(tmp, 'run')
        names = [('ipykernel', 'python3'), ('cellbox', 'cellbox-bench')]
        times = {(who, c[0]): [] for who, _ in names for c in CASES + [('start',)]}
        print('start to ready, %d each, alternately ...' % args.starts, file=sys.stderr,
              flush=True)
        for _ in range(args.starts):
            for who, name in names:
                t = time.monotonic()
                km, kc = start(name)
                times[(who, 'start')].append((time.monotonic() - t) * 1e3)
                kc.stop_channels()
                km.shutdown_kernel(now=True)
        kernels = [(who, start(name)) for who, name in names]
        for r in range(args.rounds):
            print('round %d of %d ...' % (r + 1, args.rounds), file=sys.stderr, flush=True)
            for who, (km, kc) in kernels:
                for name, code, n, warm, expect in CASES:
                    times[(who, name)] += timed(kc, code, n * args.scale,
                                                warm if r == 0 else 2, expect, who)
        for who, (km, kc) in kernels:
            kc.stop_channels()
            km.shutdown_kernel(now=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    import ipykernel
    print('Warm round trip through jupyter_client, local, median (p90) in ms; %d rounds, '
          'alternated; start = start_new_kernel to ready (%d each)' % (args.rounds, args.starts))
    print('%-14s %22s %22s %8s' % ('case', 'ipykernel ' + ipykernel.__version__,
                                   'cellbox kernel', 'ratio'))
    for name, *_ in CASES + [('start',)]:
        a = jupyter_anchor.summary(name, times[('ipykernel', name)])
        c = jupyter_anchor.summary(name, times[('cellbox', name)])
        print('%-14s %13.3f (%6.3f) %13.3f (%6.3f) %7.2fx' % (
            name, a['median_ms'], a['p90_ms'], c['median_ms'], c['p90_ms'],
            a['median_ms'] / c['median_ms']))


if __name__ == '__main__':
    main()
