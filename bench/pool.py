#!/usr/bin/python3
"""Pooled mode against cold starts on the same backend, in one run.

Usage: bench/pool.py [--build build] [-n 20] [--sustained 40] [--backend local|docker]

  ready      session_open() until the kernel can serve (bench_pool, the engine API)
  run pass   `cellbox run [--pool] -c pass`, process start to exit, one warm kernel each
  sustained  --sustained back-to-back runs (`pass`, a small numpy cell) against a pool at its
             default size (min 1, max 4; numpy pre-imported for the numpy cell), the pool never
             waited for: once its ready kernels are used up each run takes the next one the
             daemon makes. Alone, then with 4 clients at once; beside the same runs cold.
"""
import argparse
import concurrent.futures
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time


def scratch(prefix):
    """A runtime directory where a session puts its channels by default (/dev/shm when it is a
    tmpfs, docs/configuration.md), and a state directory (the history) on the disk, as
    ~/.local/state is: both the bench's own, removed after."""
    shm = '/dev/shm'
    on_tmpfs = False
    try:
        with open('/proc/self/mounts') as f:
            on_tmpfs = any(l.split()[1:3] == [shm, 'tmpfs'] for l in f)
    except OSError:
        pass
    run = tempfile.mkdtemp(prefix=prefix, dir=shm if on_tmpfs and os.access(shm, os.W_OK)
                           else None)
    state = tempfile.mkdtemp(prefix=prefix + 'state-')
    return run, state


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--build', default=os.path.join(here, '..', 'build'))
    ap.add_argument('-n', type=int, default=20)
    ap.add_argument('--backend', default='local', choices=['local', 'docker', 'podman'],
                    help='where the kernels run, pooled and cold alike (docker: dockerd and '
                    'the image of scripts/build-image)')
    ap.add_argument('--sustained', type=int, default=40, metavar='N',
                    help='runs of each sustained row (0: leave them out)')
    args = ap.parse_args()
    cellbox = os.path.join(args.build, 'tui', 'cellbox')
    tmp, state = scratch('cellbox-bench-pool-')
    env = dict(os.environ, CELLBOX_RUNTIME_DIR=tmp, CELLBOX_PYTHON=sys.executable,
               CELLBOX_BACKEND=args.backend, XDG_STATE_HOME=state)
    pool_dir = os.path.join(tmp, 'pool', 'default')
    daemon = subprocess.Popen([cellbox, 'pool', 'serve', '--min', '2', '--max', '4'], env=env,
                              stderr=subprocess.DEVNULL)
    try:
        while len(json.loads(subprocess.run([cellbox, 'pool', 'status', '--json'], env=env,
                                            capture_output=True, text=True).stdout
                             or '{"ready": []}')['ready']) < 2:
            time.sleep(0.05)
        out = subprocess.run([os.path.join(args.build, 'bench', 'bench_pool'), pool_dir,
                              str(args.n), sys.executable, args.backend], env=env, check=True,
                             capture_output=True, text=True).stdout
        ready = {r['case']: r for r in map(json.loads, out.splitlines())}
        runs = {}
        for case, extra in [('cold', []), ('pooled', ['--pool', '--pool-strategy', 'fail-fast'])]:
            times = []
            for _ in range(args.n):
                while extra and not os.listdir(os.path.join(pool_dir, 'ready')):
                    time.sleep(0.01)     # the refill is not what we time
                t0 = time.monotonic()
                p = subprocess.run([cellbox, 'run', *extra, '-c', 'pass'], env=env,
                                   capture_output=True, text=True)
                times.append((time.monotonic() - t0) * 1e3)
                if p.returncode or 'note:' in p.stderr:
                    raise SystemExit('%s run failed: %s' % (case, p.stderr))
            times.sort()
            runs[case] = (statistics.median(times), times[len(times) * 9 // 10])
    finally:
        daemon.terminate()
        daemon.wait()
        shutil.rmtree(tmp, ignore_errors=True)
        shutil.rmtree(state, ignore_errors=True)
    rows = sustained(cellbox, args) if args.sustained > 0 else []
    print('%s backend, median (p90) in ms over %d; channels in %s, history in %s'
          % (args.backend, args.n, os.path.dirname(tmp), os.path.dirname(state)))
    print('%-22s %20s %20s %8s' % ('', 'cold start', 'from the pool', 'ratio'))
    print('%-22s %12.2f (%6.2f) %12.2f (%6.2f) %7.1fx' % (
        'session ready', ready['cold']['median_ms'], ready['cold']['p90_ms'],
        ready['pooled']['median_ms'], ready['pooled']['p90_ms'],
        ready['cold']['median_ms'] / ready['pooled']['median_ms']))
    print('%-22s %12.2f (%6.2f) %12.2f (%6.2f) %7.1fx' % (
        'cellbox run -c pass', runs['cold'][0], runs['cold'][1], runs['pooled'][0],
        runs['pooled'][1], runs['cold'][0] / runs['pooled'][0]))
    if rows:
        print()
        print('sustained, %d runs each: median (p90) in ms, runs a second; pool at its default '
              'size' % args.sustained)
        print('%-26s %24s %24s %8s %8s' % ('', 'cold start', 'from the pool', 'median',
                                           'per s'))
        for name, cold, pooled in rows:
            print('%-26s %9.1f (%6.1f) %5.1f/s %9.1f (%6.1f) %5.1f/s %7.1fx %7.1fx' % (
                name, cold[0], cold[1], cold[2], pooled[0], pooled[1], pooled[2],
                cold[0] / pooled[0], pooled[2] / cold[2]))


SUSTAINED_CELLS = [('pass', 'pass', ''),
                   ('numpy', 'import numpy as np; int(np.arange(1000).sum())', 'numpy')]


def timed_runs(cellbox, env, extra, code, n, clients):
    """n runs of `cellbox run EXTRA -c CODE`, by `clients` at once: (median, p90, runs/s)."""
    def one(_):
        t0 = time.monotonic()
        p = subprocess.run([cellbox, 'run', *extra, '-c', code], env=env, capture_output=True,
                           text=True)
        if p.returncode or 'note:' in p.stderr:
            raise SystemExit('run %s failed: %s' % (' '.join(extra), p.stderr))
        return (time.monotonic() - t0) * 1e3
    t0 = time.monotonic()
    with concurrent.futures.ThreadPoolExecutor(clients) as ex:
        times = sorted(ex.map(one, range(n)))
    wall = time.monotonic() - t0
    return statistics.median(times), times[len(times) * 9 // 10], n / wall


def sustained(cellbox, args):
    """The sustained rows: (name, cold, pooled), each (median ms, p90 ms, runs a second)."""
    rows = []
    for name, code, preimport in SUSTAINED_CELLS:
        tmp, state = scratch('cellbox-bench-sustained-')
        env = dict(os.environ, CELLBOX_RUNTIME_DIR=tmp, CELLBOX_PYTHON=sys.executable,
                   CELLBOX_BACKEND=args.backend, XDG_STATE_HOME=state)
        daemon = subprocess.Popen([cellbox, 'pool', 'serve'] +
                                  (['--preimport', preimport] if preimport else []),
                                  env=env, stderr=subprocess.DEVNULL)
        try:
            while len(json.loads(subprocess.run([cellbox, 'pool', 'status', '--json'],
                                                env=env, capture_output=True,
                                                text=True).stdout
                                 or '{"ready": []}')['ready']) < 1:
                time.sleep(0.05)
            for clients in (1, 4):
                label = '%s, %d client%s' % (name, clients, 's' if clients > 1 else '')
                cold = timed_runs(cellbox, env, [], code, args.sustained, clients)
                pooled = timed_runs(cellbox, env, ['--pool'], code, args.sustained, clients)
                rows.append((label, cold, pooled))
        finally:
            daemon.terminate()
            daemon.wait()
            shutil.rmtree(tmp, ignore_errors=True)
            shutil.rmtree(state, ignore_errors=True)
    return rows


if __name__ == '__main__':
    main()
