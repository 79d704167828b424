#!/usr/bin/python3
"""Warm round trips of the R kernel: IRkernel through jupyter_client (ZMQ) and cellbox (file
queue), in one run, and kernel start to ready.

Usage: bench/roundtrip_r.py [--bin build/bench/bench_roundtrip] [--rscript /usr/bin/Rscript]
                            [--scale N] [--starts N]

Needs `scripts/bootstrap --bench` (r-cran-irkernel, python3-jupyter-client). A round trip is:
send a cell, wait until its whole output and its end have arrived (jupyter: execute_reply on
shell and status idle on iopub; cellbox: the done event).
"""
import argparse
import json
import os
import subprocess
import sys
import time

import jupyter_anchor

CASES = [  # name, code, n, warm-up, stdout bytes expected
    ('NULL', 'NULL', 500, 50, 0),
    ('cat(1)', "cat('1\\n')", 500, 50, 2),
    ('cat 1 MB', "cat(strrep('x', 2^20), '\\n', sep = '')", 30, 3, (1 << 20) + 1),
]


def irkernel_start():
    """Milliseconds from nothing to a kernel that answered kernel_info, and the kernel."""
    from jupyter_client.manager import start_new_kernel
    t0 = time.monotonic()
    km, kc = start_new_kernel(kernel_name='ir', startup_timeout=120)
    return (time.monotonic() - t0) * 1e3, km, kc


def cellbox_start(args):
    out = subprocess.run([args.bin, '0', args.rscript, 'r'], check=True, capture_output=True,
                         text=True).stdout
    return json.loads(out.splitlines()[0])['median_ms']


def starts(args):
    """Kernel start to ready, both alternately, `--starts` times each: (irkernel, cellbox)."""
    a, c = [], []
    for _ in range(args.starts):
        ms, km, kc = irkernel_start()
        a.append(ms)
        kc.stop_channels()
        km.shutdown_kernel(now=True)
        c.append(cellbox_start(args))
    return [jupyter_anchor.summary('start', v) for v in (a, c)]


def irkernel_cases(scale):
    _, km, kc = irkernel_start()
    results = jupyter_anchor.time_cases(kc, CASES, scale, 'IRkernel')
    kc.stop_channels()
    km.shutdown_kernel(now=True)
    return results


def irkernel_version():
    out = subprocess.run(['Rscript', '-e', 'cat(as.character(packageVersion("IRkernel")))'],
                         capture_output=True, text=True).stdout
    return out.strip() or '?'


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--bin', default=os.path.join(here, '..', 'build', 'bench', 'bench_roundtrip'))
    ap.add_argument('--rscript', default='/usr/bin/Rscript')
    ap.add_argument('--scale', type=int, default=1)
    ap.add_argument('--starts', type=int, default=5)
    args = ap.parse_args()

    print('IRkernel ...', file=sys.stderr, flush=True)
    anchor = {r['case']: r for r in irkernel_cases(args.scale)}
    print('cellbox ...', file=sys.stderr, flush=True)
    out = subprocess.run([args.bin, str(args.scale), args.rscript, 'r'], check=True,
                         capture_output=True, text=True).stdout
    ours = {r['case']: r for r in map(json.loads, out.splitlines())}
    print('start to ready, %d each, alternately ...' % args.starts, file=sys.stderr, flush=True)
    anchor['start'], ours['start'] = starts(args)

    print('R kernel, warm round trip, local, median (p90) in ms; start = kernel start to ready '
          '(median of %d)' % args.starts)
    print('%-12s %22s %22s %8s' % ('case', 'IRkernel ' + irkernel_version(), 'cellbox', 'ratio'))
    for case in [c[0] for c in CASES] + ['start']:
        a, c = anchor[case], ours[case]
        print('%-12s %13.3f (%6.3f) %13.3f (%6.3f) %7.1fx' % (
            case, a['median_ms'], a['p90_ms'], c['median_ms'], c['p90_ms'],
            a['median_ms'] / c['median_ms']))


if __name__ == '__main__':
    main()
