#!/usr/bin/python3
"""Libraries: installing on every session (what llm-sandbox's libraries=[...] does) against
cellbox's cached image or venv, in one run.

Usage: bench/libraries.py [--build build] [-n 5] [--backend docker|local] [--wheels N]

A wheelhouse of N tiny wheels is made for the run (offline, as --wheelhouse is used). Each
session is `cellbox run --libraries ... -c 'import ...'`, process start to exit:

  no libraries   the same run without --libraries (the floor)
  every session  the install each time: the derived image (or venv) removed before each run
  cached         the image (or venv) the first run made, reused
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
import urllib.parse

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, '..', 'tests', 'e2e'))
sys.path.insert(0, os.path.join(HERE, '..', 'tests', 'docker'))
from wheel import make_wheel  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--build', default=os.path.join(HERE, '..', 'build'))
    ap.add_argument('-n', type=int, default=5)
    ap.add_argument('--backend', default='docker', choices=['docker', 'local'])
    ap.add_argument('--wheels', type=int, default=3)
    args = ap.parse_args()
    cellbox = os.path.join(args.build, 'tui', 'cellbox')
    tmp = tempfile.mkdtemp(prefix='cellbox-bench-libs-')
    os.chmod(tmp, 0o755)
    wheels = os.path.join(tmp, 'wheels')
    names = ['cbbench%dx%d' % (os.getpid(), i) for i in range(args.wheels)]
    for i, n in enumerate(names):
        make_wheel(wheels, n, '1.0', i)
    os.chmod(wheels, 0o755)
    for f in os.listdir(wheels):
        os.chmod(os.path.join(wheels, f), 0o644)
    env = dict(os.environ, CELLBOX_RUNTIME_DIR=os.path.join(tmp, 'run'),
               XDG_CACHE_HOME=os.path.join(tmp, 'cache'), CELLBOX_BACKEND=args.backend,
               CELLBOX_PYTHON=sys.executable, XDG_STATE_HOME=os.path.join(tmp, 'state'))
    code = 'import ' + ', '.join(names)
    libs = ['--libraries', ','.join(names), '--wheelhouse', wheels]

    def forget():
        if args.backend == 'local':
            shutil.rmtree(os.path.join(tmp, 'cache'), ignore_errors=True)
        else:
            from test_libraries import remove_images
            remove_images(','.join(sorted(names)))

    def session(extra, want_install):
        t0 = time.monotonic()
        p = subprocess.run([cellbox, 'run', *extra, '-c', code if extra else 'pass'], env=env,
                           capture_output=True, text=True)
        t = time.monotonic() - t0
        if p.returncode or (want_install is not None and
                            ('installing' in p.stderr) != want_install):
            raise SystemExit('run failed (%s): %s' % (' '.join(extra), p.stderr))
        return t

    try:
        results = {}
        results['no libraries'] = [session([], None) for _ in range(args.n)]
        every = []
        for _ in range(args.n):
            forget()
            every.append(session(libs, True))
        results['every session'] = every
        results['cached'] = [session(libs, False) for _ in range(args.n)]
    finally:
        forget()
        shutil.rmtree(tmp, ignore_errors=True)
    print('%s backend, %d wheels, %d sessions each (median, min-max):' % (
        args.backend, args.wheels, args.n))
    for case, ts in results.items():
        print('  %-14s %7.2f s  (%.2f-%.2f)' % (case, statistics.median(ts), min(ts), max(ts)))
    ratio = statistics.median(results['every session']) / statistics.median(results['cached'])
    print('  install every session / cached: %.1fx' % ratio)


if __name__ == '__main__':
    main()
