#!/usr/bin/python3
"""Replay of a 30-cell notebook: nbclient cold, cellbox cold, and cellbox from a warm pool;
then many small notebooks with replay --jobs 1, 2 and 4.

Usage: bench/replay.py [--bin build/tui/cellbox] [--runs N] [--cells 30]
                       [--notebooks 40] [--jobs-runs 3] [--only-jobs]

The notebook is generated: arithmetic cells and two matplotlib plots, written by nbformat.
Each side is a fresh process per run, as a user or CI would start it:
  nbclient: python3 -c 'read; NotebookClient(nb, kernel_name="python3").execute(); write'
  cellbox:  cellbox replay NB -o OUT --json
  pooled:   cellbox replay --pool NB -o OUT --json, with `cellbox pool serve --preimport
            matplotlib.pyplot` keeping kernels warm (the refill between runs is not timed)
Printed: the median wall time of each, the ratio, nbclient's kernel start, and cellbox's
per-cell overhead = a cell's wall time seen by cellbox - the kernel's own run time of it
(replay --json: cells[].wall, cells[].duration), median over all cells of all runs; and
the mean, which includes the PNG encoding of the two plots.

Side by side after it: `cellbox replay --jobs N NB1 ... NB40 -o DIR` of --notebooks small
generated notebooks (6 cells each: arithmetic, a print, a list comprehension), N = 1, 2 and 4
on the local backend (a fresh kernel per notebook), and N = 4 with --pool (a daemon of --max
4 kept warm; the refill runs beside the jobs); the median wall time of --jobs-runs runs each,
the notebooks per second, the ratio to --jobs 1, and the load average before and after (the
machine may be shared).
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

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'tests',
                                'conformance'))
import compare  # noqa: E402  (the conformance suite's comparer)

NBCLIENT = r'''
import sys, time
t0 = time.monotonic()
import nbformat
from nbclient import NotebookClient
nb = nbformat.read(sys.argv[1], as_version=4)
client = NotebookClient(nb, kernel_name='python3', timeout=600)
with client.setup_kernel():
    t1 = time.monotonic()
    for i, cell in enumerate(nb.cells):
        client.execute_cell(cell, i)
nbformat.write(nb, sys.argv[2])
print('%f' % (t1 - t0))
'''


def make_notebook(path, cells):
    nb = new_notebook(metadata={'kernelspec': {'name': 'python3', 'display_name': 'Python 3',
                                               'language': 'python'}})
    nb.cells.append(new_markdown_cell('# Generated benchmark notebook'))
    plots = {cells // 3, 2 * cells // 3}
    for i in range(cells):
        if i == 0:
            nb.cells.append(new_code_cell('import math\ntotal = 0'))
        elif i in plots:
            nb.cells.append(new_code_cell(
                'import matplotlib.pyplot as plt\n'
                'plt.plot([math.sin(x / 10) for x in range(100)])\nplt.title("plot %d")\n'
                'plt.show()' % i))
        elif i % 3 == 0:
            nb.cells.append(new_code_cell('print(sum(k * k for k in range(%d)))' % (i * 100)))
        else:
            nb.cells.append(new_code_cell('total += %d * %d\ntotal' % (i, i + 1)))
    nbformat.write(nb, path)


def make_small(path, k):
    nb = new_notebook(metadata={'kernelspec': {'name': 'python3', 'display_name': 'Python 3',
                                               'language': 'python'}})
    nb.cells.append(new_code_cell('n = %d' % k))
    nb.cells.append(new_code_cell('squares = [i * i for i in range(n * 100)]'))
    nb.cells.append(new_code_cell('print(sum(squares))'))
    nb.cells.append(new_code_cell('total = 0\nfor s in squares[:50]:\n    total += s\ntotal'))
    nb.cells.append(new_code_cell('"notebook %d" % n'))
    nb.cells.append(new_code_cell('len(squares)'))
    nbformat.write(nb, path)


def bench_jobs(args, tmp, env):
    """replay --jobs 1, 2, 4 (and 4 from a pool) of many small notebooks, side by side."""
    nbs = []
    for k in range(args.notebooks):
        nbs.append(os.path.join(tmp, 'small', 'nb%02d.ipynb' % k))
        os.makedirs(os.path.dirname(nbs[-1]), exist_ok=True)
        make_small(nbs[-1], k)
    sides = [('--jobs 1', ['-j', '1']), ('--jobs 2', ['-j', '2']), ('--jobs 4', ['-j', '4']),
             ('--jobs 4 --pool', ['-j', '4', '--pool'])]
    walls = {name: [] for name, _ in sides}
    load0 = os.getloadavg()
    ready = os.path.join(tmp, 'run', 'pool', 'default', 'ready')
    daemon = subprocess.Popen([args.bin, 'pool', 'serve', '--min', '4', '--max', '4'], env=env,
                              stderr=subprocess.DEVNULL)
    try:
        for run in range(args.jobs_runs):
            for name, flags in (sides if run % 2 == 0 else sides[::-1]):
                if '--pool' in flags:
                    while not (os.path.isdir(ready) and len(os.listdir(ready)) >= 4):
                        if daemon.poll() is not None:
                            sys.exit('bench: the pool daemon exited (%d)' % daemon.returncode)
                        time.sleep(0.05)
                wall, _ = timed([args.bin, 'replay', *flags, '-o', os.path.join(tmp, 'jobs-out'),
                                 *nbs], env)
                walls[name].append(wall)
    finally:
        daemon.terminate()
        daemon.wait()
    load1 = os.getloadavg()
    base = statistics.median(walls['--jobs 1'])
    print('replay of %d small notebooks (6 cells each), median of %d runs, %d CPUs'
          % (args.notebooks, args.jobs_runs, os.cpu_count()))
    print('  %-20s %9s %14s %8s' % ('', 'wall', 'notebooks/s', 'speedup'))
    for name, _ in sides:
        m = statistics.median(walls[name])
        print('  %-20s %8.2fs %14.1f %7.2fx' % (name, m, args.notebooks / m, base / m))
    print('  load average (1, 5, 15 min) before: %.2f %.2f %.2f, after: %.2f %.2f %.2f'
          % (load0 + load1))


def timed(cmd, env):
    t0 = time.monotonic()
    p = subprocess.run(cmd, capture_output=True, text=True, env=env)
    wall = time.monotonic() - t0
    if p.returncode:
        sys.exit('bench: %s failed (%d):\n%s' % (cmd[0], p.returncode, p.stderr[-2000:]))
    return wall, p.stdout


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--bin', default=os.path.join(here, '..', 'build', 'tui', 'cellbox'))
    ap.add_argument('--runs', type=int, default=5)
    ap.add_argument('--cells', type=int, default=30)
    ap.add_argument('--notebooks', type=int, default=40)
    ap.add_argument('--jobs-runs', type=int, default=3)
    ap.add_argument('--only-jobs', action='store_true', help='only the --jobs side by side')
    args = ap.parse_args()

    tmp = tempfile.mkdtemp(prefix='cellbox-bench-replay-')
    try:
        nb_path = os.path.join(tmp, 'bench.ipynb')
        make_notebook(nb_path, args.cells)
        env = dict(os.environ, XDG_STATE_HOME=os.path.join(tmp, 'state'),
                   CELLBOX_RUNTIME_DIR=os.path.join(tmp, 'run'),
                   PYDEVD_DISABLE_FILE_VALIDATION='1')
        if args.only_jobs:
            bench_jobs(args, tmp, env)
            return
        nbc, nbc_start, cb, cb_start, overhead, mean_overhead = [], [], [], [], [], []
        pooled, pooled_start = [], []
        pool_dir = os.path.join(tmp, 'run', 'pool', 'default', 'ready')
        daemon = subprocess.Popen([args.bin, 'pool', 'serve', '--min', '2', '--max', '2',
                                   '--preimport', 'matplotlib.pyplot'], env=env,
                                  stderr=subprocess.DEVNULL)

        def pool_ready():
            while not (os.path.isdir(pool_dir) and len(os.listdir(pool_dir)) >= 1):
                if daemon.poll() is not None:
                    sys.exit('bench: the pool daemon exited (%d)' % daemon.returncode)
                time.sleep(0.02)
        try:
            for run in range(args.runs):
                # Alternate the order so neither side always runs on a warmer page cache.
                for side in ((0, 1, 2) if run % 2 == 0 else (2, 1, 0)):
                    if side == 0:
                        wall, out = timed([sys.executable, '-c', NBCLIENT, nb_path,
                                           os.path.join(tmp, 'nbclient.ipynb')], env)
                        nbc.append(wall)
                        nbc_start.append(float(out.strip().splitlines()[-1]))
                    elif side == 1:
                        wall, out = timed([args.bin, 'replay', nb_path, '-o',
                                           os.path.join(tmp, 'cellbox.ipynb'), '--json'], env)
                        r = json.loads(out)
                        cb.append(wall)
                        cb_start.append(r['startup_seconds'])
                        mean_overhead.append((r['cells_wall_seconds'] - r['cells_kernel_seconds'])
                                             / r['cells_run'])
                        overhead.extend(c['wall'] - c['duration'] for c in r['cells'])
                    else:
                        pool_ready()
                        wall, out = timed([args.bin, 'replay', '--pool', '--pool-strategy',
                                           'fail-fast', nb_path, '-o',
                                           os.path.join(tmp, 'pooled.ipynb'), '--json'], env)
                        pooled.append(wall)
                        pooled_start.append(json.loads(out)['startup_seconds'])
        finally:
            daemon.terminate()
            daemon.wait()
        m_nbc, m_cb, m_pool = (statistics.median(nbc), statistics.median(cb),
                               statistics.median(pooled))
        print('replay of a %d-cell notebook (2 plots), median of %d runs'
              % (args.cells, args.runs))
        print('  %-34s %9s %12s' % ('', 'wall', 'kernel start'))
        print('  %-34s %8.3fs %11.3fs' % ('nbclient %s, cold' % __import__('nbclient').__version__,
                                          m_nbc, statistics.median(nbc_start)))
        print('  %-34s %8.3fs %11.3fs' % ('cellbox replay, cold', m_cb,
                                          statistics.median(cb_start)))
        print('  %-34s %8.3fs %11.3fs' % ('cellbox replay, warm pool', m_pool,
                                          statistics.median(pooled_start)))
        print('  ratio cellbox cold / nbclient: %.2f (target <= 0.50)' % (m_cb / m_nbc))
        print('  ratio cellbox pooled / nbclient: %.2f (target <= 0.20)' % (m_pool / m_nbc))
        print('  cellbox per-cell overhead (cell wall - kernel run time): %.3f ms median of'
              ' %d cells (target < 1 ms)' % (statistics.median(overhead) * 1e3, len(overhead)))
        print('    mean %.3f ms: includes saving the 2 plots as PNG after each of those cells,'
              ' which the kernel does not count in its run time'
              % (statistics.median(mean_overhead) * 1e3))
        # All three wrote a notebook: the same outputs, as the conformance suite compares them.
        ref = json.load(open(os.path.join(tmp, 'nbclient.ipynb'), encoding='utf-8'))
        for name in ('cellbox.ipynb', 'pooled.ipynb'):
            diffs = compare.compare(ref, json.load(open(os.path.join(tmp, name),
                                                        encoding='utf-8')))
            print('  outputs of %s against nbclient\'s: %s' % (name, 'the same' if not diffs
                                                              else '%d differences:\n    %s'
                                                              % (len(diffs),
                                                                 '\n    '.join(diffs))))
        bench_jobs(args, tmp, env)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == '__main__':
    main()
