#!/usr/bin/python3
"""The channel over a stream, and remote engines, side by side in one run.

Usage: bench/remote.py [-n 200] [--jobs-notebooks 40] [--skip-jobs | --only-jobs]   (root)

1. Warm round trips (bench_stream: `pass`, a cell showing a 100 KB PNG, and the stream's own
   ping) in one container session each: on this machine's engine through its unix socket with
   the shared channel and with the stream, under runc and under gVisor (runsc); on the remote
   test engine (scripts/test-engine) over TLS and over ssh, where the stream is the only way.
   Beside them the anchor, llm-sandbox's per-cell protocol (bench_docker --anchor: put_archive
   of the command, `exec test -f` every 100 ms, get_archive, `exec rm`), on the local engine and
   on the TLS engine; the ratio is the anchor's median over cellbox's.
2. `cellbox replay --jobs 4 --pool` of --jobs-notebooks small notebooks from a pool of 4 kernels
   on one test engine and on two (--engine twice; --cpus 0.5 so that one engine holds all 4):
   the median wall time of 3 runs each and the ratio. Both engines run on this machine's cores,
   so what bounds the ratio is said with the load average.
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

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
ENGINE = os.path.join(ROOT, 'scripts', 'test-engine')
STATE = '/var/lib/cellbox-test-engine'
OURS = ('DOCKER_HOST', 'DOCKER_TLS_VERIFY', 'DOCKER_TLS', 'DOCKER_CERT_PATH', 'DOCKER_CONTEXT',
        'CELLBOX_SSH_CONFIG', 'CELLBOX_DOCKER_HOST')


def engine_env(name, certs_of=None):
    if certs_of:
        certs = os.path.join(STATE, name, 'certs')
        if not os.path.exists(os.path.join(certs, 'client', 'cert.pem')):
            os.makedirs(os.path.join(STATE, name), mode=0o700, exist_ok=True)
            shutil.rmtree(certs, ignore_errors=True)
            shutil.copytree(os.path.join(STATE, certs_of, 'certs'), certs)
    subprocess.run([ENGINE, 'start', name], check=True, capture_output=True, timeout=900)
    p = subprocess.run([ENGINE, 'env', name], check=True, capture_output=True, text=True)
    return dict(line.partition('=')[::2] for line in p.stdout.splitlines())


def clean_env(**extra):
    env = {k: v for k, v in os.environ.items() if k not in OURS and not k.startswith('CELLBOX_')}
    env.update(extra)
    return env


def stream_cases(bin_dir, n, env):
    p = subprocess.run([os.path.join(bin_dir, 'bench_stream'), str(n)], env=env,
                       capture_output=True, text=True, timeout=1800)
    if p.returncode:
        return None, p.stderr.strip()[-300:]
    return {r['case']: r for r in map(json.loads, p.stdout.splitlines())}, None


def anchor(bin_dir, n, env):
    p = subprocess.run([os.path.join(bin_dir, 'bench_docker'), '--anchor', str(n)], env=env,
                       capture_output=True, text=True, timeout=1800)
    return json.loads(p.stdout)['anchor_median_ms'] if p.returncode == 0 else None


def round_trips(args, bin_dir):
    a = engine_env('remote')
    tls = dict(DOCKER_HOST=a['DOCKER_HOST'], DOCKER_TLS_VERIFY='1',
               DOCKER_CERT_PATH=a['DOCKER_CERT_PATH'])
    ssh = dict(CELLBOX_BENCH_HOST=a['CELLBOX_TEST_SSH_HOST'],
               CELLBOX_SSH_CONFIG=a['CELLBOX_SSH_CONFIG'])
    rows = [
        ('local engine, shared channel, runc', dict(CELLBOX_BENCH_CHANNEL='shared')),
        ('local engine, stream, runc', dict(CELLBOX_BENCH_CHANNEL='stream')),
        ('local engine, shared channel, runsc', dict(CELLBOX_BENCH_CHANNEL='shared',
                                                     CELLBOX_BENCH_RUNTIME='runsc')),
        ('local engine, stream, runsc', dict(CELLBOX_BENCH_CHANNEL='stream',
                                             CELLBOX_BENCH_RUNTIME='runsc')),
        ('test engine over TLS, stream, runc', tls),
        ('test engine over ssh, stream, runc', ssh),
    ]
    load0 = os.getloadavg()
    anchors = {'local': anchor(bin_dir, args.anchor_n, clean_env()),
               'tls': anchor(bin_dir, args.anchor_n, clean_env(**tls))}
    print('warm round trips, median (p90) in ms of %d; ping = the stream thread\'s last '
          'round trip to the relay, at rest' % args.n)
    print('  %-38s %18s %22s %8s' % ('', 'pass', 'plot 100 KB', 'ping'))
    for label, extra in rows:
        r, err = stream_cases(bin_dir, args.n, clean_env(**extra))
        if not r:
            print('  %-38s not measured: %s' % (label, err))
            continue
        print('  %-38s %9.3f (%6.3f) %13.3f (%6.3f) %8s' % (
            label, r['pass']['median_ms'], r['pass']['p90_ms'], r['plot 100 KB']['median_ms'],
            r['plot 100 KB']['p90_ms'],
            '%.3f' % r['ping']['median_ms'] if r['ping']['median_ms'] >= 0 else '-'))
        if 'TLS' in label:
            tls_pass = r['pass']['median_ms']
    for where, ms in anchors.items():
        if ms is None:
            print('  anchor (llm-sandbox protocol) on the %s engine: not measured' % where)
        else:
            print('  anchor (llm-sandbox protocol) on the %s engine: %.3f ms' % (where, ms))
    if anchors['tls'] and 'tls_pass' in locals():
        print('  ratio on the TLS engine: the anchor / cellbox = %.0fx' % (anchors['tls'] / tls_pass))
    print('  load average before: %.2f %.2f %.2f, after: %.2f %.2f %.2f'
          % (load0 + os.getloadavg()))


def jobs(args, bin_path):
    from replay import make_small
    a = engine_env('remote')
    b = engine_env('remote2', certs_of='remote')
    tmp = tempfile.mkdtemp(prefix='cellbox-bench-remote-')
    nbs = []
    for k in range(args.jobs_notebooks):
        nbs.append(os.path.join(tmp, 'nb', 'nb%02d.ipynb' % k))
        os.makedirs(os.path.dirname(nbs[-1]), exist_ok=True)
        make_small(nbs[-1], k)
    walls = {}
    load0 = os.getloadavg()
    for label, engines in (('one engine', [a['DOCKER_HOST']]),
                           ('two engines', [a['DOCKER_HOST'], b['DOCKER_HOST']])):
        env = clean_env(XDG_CONFIG_HOME=os.path.join(tmp, 'config'),
                        XDG_STATE_HOME=os.path.join(tmp, 'state'),
                        CELLBOX_RUNTIME_DIR=os.path.join(tmp, 'run-' + label[:3]),
                        CELLBOX_BACKEND='docker', DOCKER_TLS_VERIFY='1',
                        DOCKER_CERT_PATH=a['DOCKER_CERT_PATH'],
                        DOCKER_CONFIG=os.path.join(tmp, 'docker'))
        flags = []
        for e in engines:
            flags += ['--engine', e]
        subprocess.run([bin_path, 'pool', 'serve', *flags, '--min', '4', '--max', '4',
                        '--cpus', '0.5', '--detach'], env=env, check=True, capture_output=True,
                       timeout=300)
        ready = os.path.join(tmp, 'run-' + label[:3], 'pool', 'default', 'ready')
        try:
            walls[label] = []
            for run in range(3):
                deadline = time.monotonic() + 300
                while not (os.path.isdir(ready) and len(os.listdir(ready)) >= 4):
                    if time.monotonic() > deadline:
                        sys.exit('bench: the pool on %s did not fill' % label)
                    time.sleep(0.05)
                t0 = time.monotonic()
                p = subprocess.run([bin_path, 'replay', '-j', '4', '--pool', '--pool-timeout',
                                    '300', '-o', os.path.join(tmp, 'out'), *nbs], env=env,
                                   capture_output=True, text=True)
                if p.returncode:
                    bad = [l for l in p.stderr.splitlines() if ' ok ' not in l]
                    sys.exit('bench: replay failed (%d):\n%s' % (p.returncode,
                                                               '\n'.join(bad[-40:])))
                walls[label].append(time.monotonic() - t0)
        finally:
            subprocess.run([bin_path, 'pool', 'stop'], env=env, capture_output=True, timeout=300)
    shutil.rmtree(tmp, ignore_errors=True)
    one = statistics.median(walls['one engine'])
    print('replay --jobs 4 --pool of %d small notebooks, a pool of 4 (--cpus 0.5), median of 3'
          % args.jobs_notebooks)
    for label in walls:
        m = statistics.median(walls[label])
        print('  %-12s %8.2f s %8.1f notebooks/s %6.2fx' % (label, m, args.jobs_notebooks / m,
                                                            one / m))
    print('  both engines run on this machine\'s %d CPUs; load average before: %.2f %.2f %.2f, '
          'after: %.2f %.2f %.2f' % ((os.cpu_count(),) + load0 + os.getloadavg()))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('-n', type=int, default=200)
    ap.add_argument('--anchor-n', type=int, default=20)
    ap.add_argument('--jobs-notebooks', type=int, default=40)
    ap.add_argument('--skip-jobs', action='store_true')
    ap.add_argument('--only-jobs', action='store_true')
    ap.add_argument('--build', default=os.path.join(ROOT, 'build'))
    args = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit('bench/remote.py: needs root (the test engines are dockerds of their own)')
    if not args.only_jobs:
        round_trips(args, os.path.join(args.build, 'bench'))
    if not args.skip_jobs:
        jobs(args, os.path.join(args.build, 'tui', 'cellbox'))


if __name__ == '__main__':
    main()
