#!/usr/bin/python3
"""Where a one-shot's CPU goes, cold and pooled, by part: what bounds sustained throughput.

Usage: bench/pool_cost.py [--build build] [--backend docker|local] [-n 24] [--clients 1,4]

Each row is N back-to-back `cellbox run -c pass` (cold, then `--pool` against a pool at its
default size, min 1 and max 4), by C clients at once. Beside the wall time it counts the CPU
each part of the machine spent, from cgroup CPU accounting (so work elsewhere on the machine
does not enter the counts, only the wall times):

  cellbox   the clients, the pool daemon and, on the local backend, the kernels (this bench
            moves itself into a group of its own: everything it starts is counted there)
  engine    dockerd, containerd and what they start (shims, runc): moved into a group of
            their own for the run and moved back after (docker backend; needs root)
  sandbox   the containers' own processes (the engine's cgroup parent of its containers)

The engine and sandbox counts take in whatever else uses the engine meanwhile: run it on an
engine nobody else is using (the `docker run true` row's sandbox column, a few ms a run when
nothing else runs, shows it).

A pooled row is counted until the pool has settled (its ready count still for 1.5 s), and its
CPU is shared among the kernels the pool made meanwhile (one a run and those made ahead): a
pooled run's cost is the kernel that replaced the one it used. `bound` is what the CPU alone allows:
cores x 1000 / (CPU ms a run). Minor page faults a run: the local backend's kernels as their
pool daemon and the cold clients reaped them (their children's counts).
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from pool import scratch, timed_runs  # noqa: E402


class Groups:
    """CPU accounting groups: cgroup v1's cpuacct or v2's cpu.stat."""

    def __init__(self):
        v1 = '/sys/fs/cgroup/cpuacct'
        self.v2 = not os.path.isdir(v1)
        self.root = '/sys/fs/cgroup' if self.v2 else v1
        self.made = []
        self.moved = []             # (pid, the group it came from)

    def usage_ms(self, group):
        path = os.path.join(self.root, group)
        try:
            if self.v2:
                with open(os.path.join(path, 'cpu.stat')) as f:
                    for line in f:
                        if line.startswith('usage_usec '):
                            return int(line.split()[1]) / 1e3
                return 0.0
            with open(os.path.join(path, 'cpuacct.usage')) as f:
                return int(f.read()) / 1e6
        except OSError:
            return 0.0

    def make(self, name):
        path = os.path.join(self.root, name)
        os.makedirs(path, exist_ok=True)
        self.made.append(path)
        return name

    def group_of(self, pid):
        with open('/proc/%d/cgroup' % pid) as f:
            for line in f:
                n, ctrl, path = line.rstrip('\n').split(':', 2)
                if (self.v2 and n == '0') or (not self.v2 and 'cpuacct' in ctrl.split(',')):
                    return path.lstrip('/')
        return ''

    def move(self, pid, group):
        self.moved.append((pid, self.group_of(pid)))
        with open(os.path.join(self.root, group, 'cgroup.procs'), 'w') as f:
            f.write(str(pid))

    def restore(self):
        for pid, group in reversed(self.moved):
            try:
                with open(os.path.join(self.root, group, 'cgroup.procs'), 'w') as f:
                    f.write(str(pid))
            except OSError:
                pass
        for path in reversed(self.made):
            for _ in range(50):
                try:
                    os.rmdir(path)
                    break
                except OSError:
                    time.sleep(0.1)     # its last processes are still leaving


def pids_of(name):
    p = subprocess.run(['pgrep', '-x', name], capture_output=True, text=True)
    return [int(x) for x in p.stdout.split()]


def children_faults(pid):
    """Minor faults of the reaped children of `pid` (/proc/PID/stat's cminflt)."""
    try:
        with open('/proc/%d/stat' % pid) as f:
            return int(f.read().rsplit(')', 1)[1].split()[8])
    except (OSError, IndexError, ValueError):
        return 0


def ready_count(cellbox, env):
    out = subprocess.run([cellbox, 'pool', 'status', '--json'], env=env, capture_output=True,
                         text=True).stdout
    try:
        return len(json.loads(out or '{}').get('ready', []))
    except ValueError:
        return 0


def settle(cellbox, env, quiet=1.5, limit=120):
    """Wait until the pool's ready count has not changed for `quiet` seconds: what it was
    making is made. That count."""
    t_end = time.monotonic() + limit
    last, since = -1, time.monotonic()
    while time.monotonic() < t_end:
        n = ready_count(cellbox, env)
        if n != last:
            last, since = n, time.monotonic()
        elif n >= 1 and time.monotonic() - since >= quiet:
            break
        time.sleep(0.05)
    return last


def measure(groups, parts, fn):
    """Run fn(); the CPU ms of each part while it ran and the wall seconds."""
    before = {k: groups.usage_ms(g) for k, g in parts.items()}
    t0 = time.monotonic()
    result = fn()
    wall = time.monotonic() - t0
    return {k: groups.usage_ms(g) - before[k] for k, g in parts.items()}, wall, result


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--build', default=os.path.join(here, '..', 'build'))
    ap.add_argument('--backend', default='docker', choices=['docker', 'local'])
    ap.add_argument('-n', type=int, default=24, help='runs of each row')
    ap.add_argument('--clients', default='1,4', help='clients at once, a list')
    ap.add_argument('--floor-image', default='cellbox-python:p2', metavar='IMAGE',
                    help='docker: a row of `docker run --rm IMAGE true` (the engine\'s floor); '
                    '"" to leave it out')
    args = ap.parse_args()
    cellbox = os.path.join(args.build, 'tui', 'cellbox')
    cores = os.cpu_count() or 1
    groups = Groups()
    tag = 'cellbox-bench-cost-%d' % os.getpid()
    parts = {'cellbox': groups.make(tag + '-cellbox')}
    tmp, state = scratch('cellbox-bench-cost-')
    env = dict(os.environ, CELLBOX_RUNTIME_DIR=tmp, CELLBOX_PYTHON=sys.executable,
               CELLBOX_BACKEND=args.backend, XDG_STATE_HOME=state)
    daemon = None
    rows = []
    try:
        groups.move(os.getpid(), parts['cellbox'])
        if args.backend == 'docker':
            parts['engine'] = groups.make(tag + '-engine')
            for name in ('dockerd', 'containerd'):
                for pid in pids_of(name):
                    groups.move(pid, parts['engine'])
            parts['sandbox'] = 'docker'         # dockerd's cgroup parent (cgroupfs driver)
        if args.backend == 'docker' and args.floor_image:
            # the floor of any design that makes a container a run: the engine's own work
            def floor():
                t0 = time.monotonic()
                for _ in range(args.n):
                    subprocess.run(['docker', 'run', '--rm', '--network', 'none',
                                    args.floor_image, 'true'], check=True,
                                   stdout=subprocess.DEVNULL)
                wall = time.monotonic() - t0
                return wall * 1e3 / args.n, 0, args.n / wall
            cpu, wall, times = measure(groups, parts, floor)
            rows.append(('docker run true', 1, cpu, wall, times, 0))
        for clients in [int(c) for c in args.clients.split(',')]:
            f0 = children_faults(os.getpid())
            cpu, wall, times = measure(groups, parts, lambda: timed_runs(
                cellbox, env, [], 'pass', args.n, clients))
            rows.append(('cold', clients, cpu, wall, times, children_faults(os.getpid()) - f0))
            daemon = subprocess.Popen([cellbox, 'pool', 'serve'], env=env,
                                      stderr=subprocess.DEVNULL)
            while ready_count(cellbox, env) < 1:
                time.sleep(0.05)
            time.sleep(1.0)                     # its first kernel's warming, settled

            ready0 = ready_count(cellbox, env)

            def pooled():
                r = timed_runs(cellbox, env, ['--pool'], 'pass', args.n, clients)
                return r, settle(cellbox, env)
            f0 = children_faults(daemon.pid) + children_faults(os.getpid())
            cpu, wall, (times, ready1) = measure(groups, parts, pooled)
            faults = children_faults(daemon.pid) + children_faults(os.getpid()) - f0
            # the kernels it made: one for each run, and those it made ahead beyond that
            made = max(1, args.n + ready1 - ready0)
            rows.append(('pooled', clients, {k: v * args.n / made for k, v in cpu.items()},
                         wall, times, faults * args.n // made))
            daemon.terminate()
            daemon.wait()
            daemon = None
    finally:
        if daemon:
            daemon.terminate()
            daemon.wait()
        groups.restore()
        shutil.rmtree(tmp, ignore_errors=True)
        shutil.rmtree(state, ignore_errors=True)

    names = list(parts)
    print('%s backend, %d runs a row, %d cores; CPU ms a run by part (cgroup accounting); '
          'load before: %s' % (args.backend, args.n, cores, open('/proc/loadavg').read().split()[0]))
    print('%-16s %9s %7s' % ('', 'median', 'runs/s') +
          ''.join('%9s' % n for n in names) + '%9s %9s %8s' % ('total', 'bound/s', 'faults'))
    for case, clients, cpu, _, (median, _, rate), faults in rows:
        total = sum(cpu.values())
        print('%-16s %6.0f ms %7.1f' % ('%s, %d' % (case, clients), median, rate) +
              ''.join('%9.0f' % (cpu[n] / args.n) for n in names) +
              '%9.0f %9.1f %8d' % (total / args.n, cores * 1000.0 / (total / args.n),
                                   faults // args.n))
    print('(median and runs/s: the runs as their clients timed them (the docker run row: its '
          'mean); bound/s: what the CPU alone allows)')


if __name__ == '__main__':
    main()
