#!/usr/bin/python3
"""Named sessions under gVisor, in one run: a cold start beside a memory checkpoint, its
restore and a fork through it (docs/sessions.md).

Usage: bench/sessions_memory.py [--build build] [-n 5]   (root; dockerd, runsc, the image)

The checkpoint API needs dockerd --experimental: like tests/docker/test_memckpt.py (whose
Engine it uses) the bench starts a dockerd of its own in a temporary directory and copies the
kernel image into it (a minute here), then times, median of N:

  cold      `cellbox repl --backend docker --runtime runsc --name S` running one cell
  checkpoint  `cellbox checkpoint --memory S FILE` (the kernel stops)
  restore     `cellbox restore --name T FILE` until T serves (its kernel from the image)
  fork        `cellbox fork S F` (checkpoint, S made again, F made)
"""
import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, '..', 'tests', 'docker'))
from test_memckpt import IMAGE, Engine  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--build', default=os.path.join(HERE, '..', 'build'))
    ap.add_argument('-n', type=int, default=5)
    args = ap.parse_args()
    cellbox = os.path.join(os.path.abspath(args.build), 'tui', 'cellbox')
    top = tempfile.mkdtemp(prefix='cellbox-bench-memory-')
    engine = Engine(top)
    env = dict(os.environ, DOCKER_HOST='unix://' + engine.sock,
               XDG_RUNTIME_DIR=os.path.join(top, 'run'), XDG_STATE_HOME=os.path.join(top, 'st'),
               NO_COLOR='1')
    os.makedirs(env['XDG_RUNTIME_DIR'], mode=0o700)

    def run(*a, stdin=None):
        t0 = time.monotonic()
        p = subprocess.run([cellbox, *a], input=stdin, capture_output=True, text=True, env=env,
                           timeout=300)
        if p.returncode:
            raise SystemExit('cellbox %s failed: %s' % (' '.join(a), p.stderr))
        return (time.monotonic() - t0) * 1e3

    rows = {'cold': [], 'checkpoint': [], 'restore': [], 'fork': []}
    try:
        engine.start()
        t0 = time.monotonic()
        save = subprocess.Popen(['docker', 'save', IMAGE], stdout=subprocess.PIPE)
        load = engine.docker('load', stdin=save.stdout)
        save.stdout.close()
        save.wait()
        if load.returncode:
            raise SystemExit('cannot load %s: %s' % (IMAGE, load.stderr.decode()))
        print('image loaded into the bench engine in %.1f s' % (time.monotonic() - t0),
              file=sys.stderr)
        for i in range(args.n):
            # the fork from a session of its own, cold-started as the checkpoint's was
            s, t, u, f = 's%d' % i, 't%d' % i, 'u%d' % i, 'f%d' % i
            ck = os.path.join(top, '%s.ckpt' % s)
            for name in (s, u):
                rows['cold'].append(run('repl', '--backend', 'docker', '--runtime', 'runsc',
                                        '--name', name,
                                        stdin='import random; r = random.random()\n'))
            rows['checkpoint'].append(run('checkpoint', '--memory', s, ck))
            rows['restore'].append(run('restore', '--name', t, ck))
            rows['fork'].append(run('fork', u, f))
            for name in (s, t, u, f):
                run('kill', name)
    finally:
        # every session's host goes (also those of a run that failed half-way), then the engine
        sessions = os.path.join(env['XDG_RUNTIME_DIR'], 'cellbox', 'sessions')
        for name in os.listdir(sessions) if os.path.isdir(sessions) else []:
            subprocess.run([cellbox, 'kill', name], env=env, capture_output=True, timeout=120)
        ids = engine.docker('ps', '-aq').stdout.decode().split()
        if ids:
            engine.docker('rm', '-f', *ids)
        engine.stop()
        engine.end_shims()
        subprocess.run(['umount', '-R', os.path.join(top, 'exec')], capture_output=True)
        shutil.rmtree(top, ignore_errors=True)
    cold = statistics.median(rows['cold'])
    print('named sessions under gVisor (runsc --platform=ptrace), median of %d, ms' % args.n)
    for name, label in (('cold', 'cold start, one cell'),
                        ('checkpoint', 'checkpoint --memory'),
                        ('restore', 'restore (its kernel from the image)'),
                        ('fork', 'fork (checkpoint, original and copy made)')):
        m = statistics.median(rows[name])
        print('%-44s %9.1f %8s' % (label, m, '' if name == 'cold' else '%.2fx cold' % (m / cold)))


if __name__ == '__main__':
    main()
