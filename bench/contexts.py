#!/usr/bin/python3
"""Contexts (MCP context_create) beside a cold session, in one run.

Usage: bench/contexts.py [--build build] [-n RUNS] [--backend local|docker] [--runtime runsc]

On docker a context is a kernel started by an exec in the session's container (its image
holds R too); the session's own start is a container's.

Rows, taking turns RUNS times each through one `cellbox mcp` on pipes (raw JSON-RPC), the
median wall time of the tool call as the client sees it:
  session_open         a new session: a sandbox and its kernel started (the cold start)
  context_create       another Python kernel in that session's sandbox
  context_create r     an R kernel there
  session_run pass     a warm cell in the session's own kernel, then in a context
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))


class Server:
    """`cellbox mcp` on pipes, called one tool at a time."""

    def __init__(self, cellbox, env):
        self.p = subprocess.Popen([cellbox, 'mcp'], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env)
        self.n = 0
        self.rpc('initialize', {'protocolVersion': '2025-11-25', 'capabilities': {}})

    def rpc(self, method, params):
        self.n += 1
        self.p.stdin.write((json.dumps({'jsonrpc': '2.0', 'id': self.n, 'method': method,
                                        'params': params}) + '\n').encode())
        self.p.stdin.flush()
        while True:
            m = json.loads(self.p.stdout.readline())
            if m.get('id') == self.n:
                return m

    def call(self, tool, **args):
        """(ms, structured result) of one tool call; a failure stops the bench."""
        t0 = time.perf_counter()
        r = self.rpc('tools/call', {'name': tool, 'arguments': args})
        ms = (time.perf_counter() - t0) * 1e3
        if 'result' not in r or r['result'].get('isError'):
            raise SystemExit('%s: %s' % (tool, json.dumps(r)[:400]))
        return ms, r['result'].get('structuredContent', {})

    def close(self):
        self.p.stdin.close()
        self.p.wait(timeout=60)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--build', default=os.path.join(HERE, '..', 'build'))
    ap.add_argument('-n', type=int, default=5)
    ap.add_argument('--backend', default='local')
    ap.add_argument('--runtime', help='the container runtime (docker: runsc for gVisor)')
    args = ap.parse_args()
    cellbox = os.path.abspath(os.path.join(args.build, 'tui', 'cellbox'))
    tmp = tempfile.mkdtemp(prefix='cellbox-bench-contexts-')
    env = {k: v for k, v in os.environ.items() if not k.startswith('CELLBOX_')}
    env.update(CELLBOX_RUNTIME_DIR=os.path.join(tmp, 'run'), XDG_STATE_HOME=tmp,
               XDG_CONFIG_HOME=tmp, CELLBOX_BACKEND=args.backend)
    if args.runtime:
        env['CELLBOX_RUNTIME'] = args.runtime
    times = {'open': [], 'ctx': [], 'ctx_r': [], 'run_main': [], 'run_ctx': []}
    srv = Server(cellbox, env)
    try:
        for _ in range(args.n):
            ms, o = srv.call('session_open')
            times['open'].append(ms)
            h = o['handle']
            ms, c = srv.call('context_create', handle=h, language='python')
            times['ctx'].append(ms)
            ms, r = srv.call('context_create', handle=h, language='r')
            times['ctx_r'].append(ms)
            for _ in range(5):
                times['run_main'].append(srv.call('session_run', handle=h, code='pass')[0])
                times['run_ctx'].append(srv.call('session_run', handle=h, code='pass',
                                                 context=c['context'])[0])
            srv.call('session_close', handle=h)
    finally:
        srv.close()
        shutil.rmtree(tmp, ignore_errors=True)
    med = {k: statistics.median(v) for k, v in times.items()}
    print('contexts, %s backend%s, %d runs each, medians (%s, %d cores, load %.1f)'
          % (args.backend, ' (%s)' % args.runtime if args.runtime else '', args.n,
             time.strftime('%Y-%m-%d'), os.cpu_count(), os.getloadavg()[0]))
    print('  %-52s %10s %8s' % ('', 'ms', '/ open'))
    for title, key in (('session_open: a sandbox and its kernel (cold)', 'open'),
                       ('context_create python: a kernel in that sandbox', 'ctx'),
                       ('context_create r', 'ctx_r'),
                       ('session_run pass, the session\'s own kernel', 'run_main'),
                       ('session_run pass, in the context', 'run_ctx')):
        print('  %-52s %10.2f %7.2fx' % (title, med[key], med[key] / med['open']))


if __name__ == '__main__':
    main()
