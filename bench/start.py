#!/usr/bin/python3
"""Process start of cellbox one-shots beside python3 and jupyter, in one run.

Usage: bench/start.py [--bin build/tui/cellbox] [-n RUNS] [--run-n RUNS]

Each row is started RUNS times, the rows taking turns (so the machine's load falls on all
alike); the figure is the median wall time from posix_spawn() to the exit. The rows "as
linked before" start the same executable with libcurl (and the thirty libraries it needs)
loaded at start through LD_PRELOAD, which is what linking it did: the difference is what
loading libcurl only on first use (engine/curl_lazy.h) saves each process.
"""
import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time

CURL = 'libcurl.so.4'


def once(argv, env):
    t = time.perf_counter()
    pid = os.posix_spawn(argv[0], argv, env, file_actions=[
        (os.POSIX_SPAWN_OPEN, 1, os.devnull, os.O_WRONLY, 0),
        (os.POSIX_SPAWN_OPEN, 2, os.devnull, os.O_WRONLY, 0)])
    _, status = os.waitpid(pid, 0)
    dt = (time.perf_counter() - t) * 1e3
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit('%s: exit status %d' % (' '.join(argv), status))
    return dt


def measure(rows, n, env):
    times = {name: [] for name, _, _ in rows}
    for _ in range(2):                         # warm the page cache, unmeasured
        for _, argv, extra in rows:
            once(argv, dict(env, **extra))
    for _ in range(n):
        for name, argv, extra in rows:
            times[name].append(once(argv, dict(env, **extra)))
    return {name: statistics.median(t) for name, t in times.items()}


def show(title, rows, med, anchor):
    print(title)
    print('  %-44s %10s %10s' % ('', 'median ms', '/ anchor'))
    for name, _, _ in rows:
        print('  %-44s %10.2f %9.2fx' % (name, med[name], med[name] / med[anchor]))


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--bin', default=os.path.join(here, '..', 'build', 'tui', 'cellbox'))
    ap.add_argument('-n', type=int, default=200, help='runs of each quick row (default 200)')
    ap.add_argument('--run-n', type=int, default=10,
                    help="runs of each 'cellbox run -c pass' row (default 10)")
    args = ap.parse_args()
    cellbox = os.path.abspath(args.bin)
    python = sys.executable
    tmp = tempfile.mkdtemp(prefix='cellbox-bench-start-')
    env = {k: v for k, v in os.environ.items() if not k.startswith('CELLBOX_')}
    env.update(XDG_CONFIG_HOME=os.path.join(tmp, 'config'),
               XDG_STATE_HOME=os.path.join(tmp, 'state'),
               CELLBOX_RUNTIME_DIR=os.path.join(tmp, 'run'), CELLBOX_PYTHON=python)
    before = {'LD_PRELOAD': CURL}
    try:
        quick = [('/bin/true', ['/bin/true'], {}),
                 ('python3 -c pass (anchor)', [python, '-c', 'pass'], {})]
        quick += [('cellbox --version', [cellbox, '--version'], {}),
                  ('cellbox --version, as linked before', [cellbox, '--version'], before),
                  ('cellbox config', [cellbox, 'config'], {}),
                  ('cellbox config, as linked before', [cellbox, 'config'], before)]
        med = measure(quick, args.n, env)
        load = os.getloadavg()[0]
        show('process start, median of %d runs each (load average %.2f)' % (args.n, load),
             quick, med, 'python3 -c pass (anchor)')
        saved = med['cellbox --version, as linked before'] - med['cellbox --version']
        print('  libcurl on first use saves %.2f ms a process (%.1fx faster --version)'
              % (saved, med['cellbox --version, as linked before'] / med['cellbox --version']))
        code = [cellbox, 'run', '--backend', 'local', '-c', 'pass']
        runs = [('python3 -c pass (anchor)', [python, '-c', 'pass'], {}),
                ('python3 -c "import IPython.core.interactiveshell"',
                 [python, '-c', 'import IPython.core.interactiveshell'], {}),
                ("cellbox run -c pass (local, cold kernel)", code, {}),
                ("cellbox run -c pass, as linked before", code, before)]
        jupyter = shutil.which('jupyter')
        if jupyter:
            runs.append(('jupyter --version', [jupyter, '--version'], {}))
        med = measure(runs, args.run_n, env)
        print()
        show('one-shot run, median of %d runs each (load average %.2f)'
             % (args.run_n, os.getloadavg()[0]), runs, med, 'python3 -c pass (anchor)')
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == '__main__':
    main()
