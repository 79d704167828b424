#!/usr/bin/python3
"""Pooled mode against cold starts on the same backend, in one run.

Usage: bench/pool.py [--build build] [-n 20] [--backend local|docker]

  ready     session_open() until the kernel can serve (bench_pool, the engine API)
  run pass  `cellbox run [--pool] -c pass`, process start to exit
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--build', default=os.path.join(here, '..', 'build'))
    ap.add_argument('-n', type=int, default=20)
    ap.add_argument('--backend', default='local', choices=['local', 'docker', 'podman'],
                    help='where the kernels run, pooled and cold alike (docker: dockerd and '
                    'the image of scripts/build-image)')
    args = ap.parse_args()
    cellbox = os.path.join(args.build, 'tui', 'cellbox')
    tmp = tempfile.mkdtemp(prefix='cellbox-bench-pool-')
    env = dict(os.environ, CELLBOX_RUNTIME_DIR=tmp, CELLBOX_PYTHON=sys.executable,
               CELLBOX_BACKEND=args.backend)
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
    print('%s backend, median (p90) in ms over %d' % (args.backend, args.n))
    print('%-22s %20s %20s %8s' % ('', 'cold start', 'from the pool', 'ratio'))
    print('%-22s %12.2f (%6.2f) %12.2f (%6.2f) %7.1fx' % (
        'session ready', ready['cold']['median_ms'], ready['cold']['p90_ms'],
        ready['pooled']['median_ms'], ready['pooled']['p90_ms'],
        ready['cold']['median_ms'] / ready['pooled']['median_ms']))
    print('%-22s %12.2f (%6.2f) %12.2f (%6.2f) %7.1fx' % (
        'cellbox run -c pass', runs['cold'][0], runs['cold'][1], runs['pooled'][0],
        runs['pooled'][1], runs['cold'][0] / runs['pooled'][0]))


if __name__ == '__main__':
    main()
