#!/usr/bin/python3
"""Warm round trips: jupyter_client (ZMQ, ipykernel) and cellbox (file queue), in one run.

Usage: bench/roundtrip.py [--bin build/bench/bench_roundtrip] [--scale N] [--backend docker]

A round trip is: send a cell, wait until its whole output and its end have arrived
(jupyter: execute_reply on shell and status idle on iopub; cellbox: the done event).
The floor row is IPython's own InteractiveShell.run_cell() in this process, with the
history off as the runner has it: what a round trip costs beyond it is the protocol's.
The channel is where a session puts it (docs/configuration.md, runtime-dir): without
XDG_RUNTIME_DIR, /dev/shm/cellbox-UID (a tmpfs), as the output says.
"""
import argparse
import json
import os
import subprocess
import sys
import time

import jupyter_anchor


def jupyter_cases(scale):
    from jupyter_client.manager import start_new_kernel
    os.environ.setdefault('PYDEVD_DISABLE_FILE_VALIDATION', '1')   # quiet ipykernel's debugpy
    t0 = time.monotonic()
    km, kc = start_new_kernel(kernel_name='python3')
    start_ms = (time.monotonic() - t0) * 1e3
    results = [jupyter_anchor.summary('start', [start_ms])]

    results += jupyter_anchor.time_cases(kc, [
        ('pass', 'pass', 1000, 50, 0),
        ('print(1)', 'print(1)', 500, 50, 2),
        ('two prints', 'print(1); print(2)', 500, 50, 4),
        ('print 1 MB', "print('x' * (1 << 20))", 30, 3, (1 << 20) + 1)], scale, 'jupyter')
    kc.stop_channels()
    km.shutdown_kernel(now=True)
    return results


def floor_cases(scale):
    """IPython's run_cell() of each case in this process (no channel, no second process)."""
    import contextlib
    import io
    from traitlets.config import Config
    from IPython.core.interactiveshell import InteractiveShell
    cfg = Config()
    cfg.HistoryManager.enabled = False
    cfg.HistoryManager.hist_file = ':memory:'
    shell = InteractiveShell.instance(config=cfg)
    results = []
    for name, code, n, warm in [('pass', 'pass', 1000, 50), ('print(1)', 'print(1)', 500, 50),
                                ('two prints', 'print(1); print(2)', 500, 50)]:
        n *= scale
        times = []
        sink = io.StringIO()
        with contextlib.redirect_stdout(sink):
            for i in range(-warm, n):
                t = time.perf_counter()
                shell.run_cell(code, store_history=True)
                if i >= 0:
                    times.append((time.perf_counter() - t) * 1e3)
                sink.seek(0)
                sink.truncate()
        results.append(jupyter_anchor.summary(name, times))
    InteractiveShell.clear_instance()
    return results


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--bin', default=os.path.join(here, '..', 'build', 'bench', 'bench_roundtrip'))
    ap.add_argument('--scale', type=int, default=1)
    ap.add_argument('--keep', action='store_true',
                    help="cellbox's session keeps its cells as the UI's and the REPL's do "
                         "(for a :detach's host)")
    ap.add_argument('--backend', default='local',
                    help="cellbox's backend: local (default), docker or podman")
    args = ap.parse_args()

    print('jupyter_client ...', file=sys.stderr, flush=True)
    anchor = {r['case']: r for r in jupyter_cases(args.scale)}
    print('IPython run_cell in process ...', file=sys.stderr, flush=True)
    floor = {r['case']: r for r in floor_cases(args.scale)}
    print('cellbox ...', file=sys.stderr, flush=True)
    env = dict(os.environ)
    if args.backend != 'local':
        env['CELLBOX_BENCH_BACKEND'] = args.backend
    if args.keep:
        env['CELLBOX_BENCH_KEEP'] = '1'
    out = subprocess.run([args.bin, str(args.scale), sys.executable], check=True,
                         capture_output=True, text=True, env=env).stdout
    ours = {r['case']: r for r in map(json.loads, out.splitlines())}
    xdg = os.environ.get('XDG_RUNTIME_DIR')
    where = os.environ.get('CELLBOX_RUNTIME_DIR') or (
        xdg + '/cellbox' if xdg else
        'the default runtime dir (/dev/shm/cellbox-%d when it is a tmpfs)' % os.getuid())

    print('warm round trip, %s, median (p90) in ms; start = kernel start to ready'
          % args.backend)
    print('channel in %s; load average %.2f' % (where, os.getloadavg()[0]))
    print('%-12s %22s %22s %8s %22s' % ('case', 'jupyter_client', 'cellbox', 'ratio',
                                        'IPython run_cell'))
    for case in ['pass', 'print(1)', 'two prints', 'print 1 MB', 'start']:
        a, c = anchor[case], ours[case]
        f = floor.get(case)
        print('%-12s %13.3f (%6.3f) %13.3f (%6.3f) %7.1fx %s' % (
            case, a['median_ms'], a['p90_ms'], c['median_ms'], c['p90_ms'],
            a['median_ms'] / c['median_ms'],
            '%13.3f (%6.3f)' % (f['median_ms'], f['p90_ms']) if f else ''))


if __name__ == '__main__':
    main()
