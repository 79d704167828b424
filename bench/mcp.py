#!/usr/bin/python3
"""`cellbox mcp` end to end from its clients, beside llm-sandbox's protocol, in one run.

Usage: bench/mcp.py [--build build] [-n 30] [--no-docker]

  warm session_run of `pass`, docker: the official SDK clients (v1 speaks 2025-11-25, v2
      2026-07-28) and a raw JSON-RPC client on pipes, against the re-creation of
      llm-sandbox's per-cell calls on the same engine and image (build/bench/bench_docker
      --anchor: put_archive, exec test -f every 100 ms, get_archive, exec rm)
  the same on the local backend, for the server's own cost
  execute_code of `pass` (SDK v1) from a warm pool (`cellbox pool serve`) against a cold
      sandbox, local and docker; each call on an idle server, the pool refilled first

Needs tests/mcp/node_modules (npm ci there) and, for docker, dockerd and the kernel image.
"""
import argparse
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def stats(ms):
    ms = sorted(ms)
    return statistics.median(ms), ms[min(len(ms) - 1, len(ms) * 9 // 10)]


def raw_session(cellbox, env, n):
    """Warm session_run of `pass` through a bare JSON-RPC client on pipes (ms each)."""
    p = subprocess.Popen([cellbox, 'mcp'], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL, env=env)

    def rpc(i, method, params):
        p.stdin.write((json.dumps({'jsonrpc': '2.0', 'id': i, 'method': method,
                                   'params': params}) + '\n').encode())
        p.stdin.flush()
        while True:
            m = json.loads(p.stdout.readline())
            if m.get('id') == i:
                return m

    rpc(0, 'initialize', {'protocolVersion': '2025-11-25', 'capabilities': {}})
    h = rpc(1, 'tools/call', {'name': 'session_open', 'arguments': {}})
    handle = h['result']['structuredContent']['handle']
    ms = []
    for i in range(-5, n):
        t0 = time.perf_counter()
        r = rpc(i + 10, 'tools/call', {'name': 'session_run',
                                       'arguments': {'handle': handle, 'code': 'pass'}})
        t = (time.perf_counter() - t0) * 1e3
        assert r['result']['structuredContent']['exit_code'] == 0, r
        if i >= 0:
            ms.append(t)
    p.stdin.close()
    p.wait(timeout=60)
    return ms


def sdk(env, which, mode, n, pool_dir=None):
    args = ['node', os.path.join(HERE, 'mcp_client.mjs'), which, mode, str(n)]
    if pool_dir:
        args.append(pool_dir)
    out = subprocess.run(args, env=env, check=True, stdout=subprocess.PIPE, text=True).stdout
    return json.loads(out.splitlines()[-1])['ms']


def pool_up(cellbox, env, backend):
    """Start `cellbox pool serve` and wait for two warm kernels; returns (daemon, pool dir)."""
    d = subprocess.Popen([cellbox, 'pool', 'serve', '--min', '2', '--max', '4',
                          '--backend', backend], env=env, stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL)
    pool_dir = os.path.join(env['CELLBOX_RUNTIME_DIR'], 'pool', 'default')
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        ready = os.path.join(pool_dir, 'ready')
        if os.path.isdir(ready) and len(os.listdir(ready)) >= 2:
            return d, pool_dir
        time.sleep(0.05)
    d.kill()
    raise SystemExit('the pool did not warm up')


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--build', default=os.path.join(HERE, '..', 'build'))
    ap.add_argument('-n', type=int, default=30)
    ap.add_argument('--no-docker', action='store_true')
    args = ap.parse_args()
    cellbox = os.path.abspath(os.path.join(args.build, 'tui', 'cellbox'))
    tmp = tempfile.mkdtemp(prefix='cellbox-bench-mcp-')
    env = dict(os.environ, CELLBOX_BIN=cellbox, CELLBOX_RUNTIME_DIR=os.path.join(tmp, 'run'),
               XDG_STATE_HOME=tmp, XDG_CONFIG_HOME=tmp, CELLBOX_PYTHON=sys.executable)
    backends = ['local'] + ([] if args.no_docker else ['docker'])
    rows, anchor = [], None
    try:
        for be in backends:
            e = dict(env, CELLBOX_BACKEND=be)
            rows.append(('session_run pass, %s, SDK v1 (2025-11-25)' % be, sdk(e, 'v1', 'session', args.n)))
            rows.append(('session_run pass, %s, SDK v2 (2026-07-28)' % be, sdk(e, 'v2', 'session', args.n)))
            rows.append(('session_run pass, %s, raw JSON-RPC' % be, raw_session(cellbox, e, args.n)))
        if 'docker' in backends:
            out = subprocess.run([os.path.join(args.build, 'bench', 'bench_docker'), '--anchor',
                                  str(args.n)], check=True, stdout=subprocess.PIPE, text=True).stdout
            anchor = json.loads(out)['anchor_median_ms']
        execs = []
        for be in backends:
            e = dict(env, CELLBOX_BACKEND=be)
            cold = sdk(e, 'v1', 'execute', max(5, args.n // 3))
            daemon, pool_dir = pool_up(cellbox, e, be)
            try:
                warm = sdk(e, 'v1', 'execute', max(5, args.n // 3), pool_dir)
            finally:
                daemon.send_signal(signal.SIGTERM)
                daemon.wait(timeout=120)
            execs.append((be, cold, warm))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    print('cellbox mcp, end to end from the client, median (p90) in ms')
    for name, ms in rows:
        med, p90 = stats(ms)
        ratio = '  llm-sandbox protocol / this: %.0fx' % (anchor / med) if anchor and 'docker' in name else ''
        print('  %-44s %9.3f (%8.3f) over %d%s' % (name, med, p90, len(ms), ratio))
    if anchor:
        print('  %-44s %9.3f              over %d' % ('llm-sandbox protocol re-created, docker',
                                                      anchor, args.n))
    print('execute_code of pass (SDK v1), median (p90) in ms')
    for be, cold, warm in execs:
        c, w = stats(cold), stats(warm)
        print('  %-8s cold %9.2f (%8.2f)   from the pool %8.2f (%8.2f)   %.1fx' % (
            be, c[0], c[1], w[0], w[1], c[0] / w[0]))


if __name__ == '__main__':
    main()
