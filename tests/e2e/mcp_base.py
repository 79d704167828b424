"""The harness of test_mcp.py: `cellbox mcp` started on pipes (Server: framed JSON-RPC both
ways, a reader thread, bounded waits) and the test case base every class there shares.
"""
import json
import os
import queue
import shutil
import subprocess
import tempfile
import threading
import time
import unittest

from test_cli import BIN, clean_env


BACKEND = os.environ.get('CELLBOX_TEST_BACKEND', 'local')
MODERN = '2026-07-28'
META = {'io.modelcontextprotocol/protocolVersion': MODERN,
        'io.modelcontextprotocol/clientCapabilities': {}}


class Server:
    """One `cellbox mcp` process and a reader of its stdout."""

    def __init__(self, env, *args, cwd=None):
        self.p = subprocess.Popen([BIN, 'mcp', *args], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
                                  cwd=cwd)
        self.q = queue.Queue()
        self.err = []
        self.ids = 0
        threading.Thread(target=self._read, daemon=True).start()
        threading.Thread(target=self._read_err, daemon=True).start()

    def _read(self):
        for line in self.p.stdout:
            self.q.put(line)
        self.q.put(None)

    def _read_err(self):
        for line in self.p.stderr:
            self.err.append(line.decode('utf-8', 'replace'))

    def stderr(self):
        return ''.join(self.err)

    def write(self, data):
        self.p.stdin.write(data if isinstance(data, bytes) else data.encode())
        self.p.stdin.flush()

    def send(self, msg):
        self.write(json.dumps(msg) + '\n')

    def recv(self, timeout=60):
        """The next message (a dict), or None at end of output."""
        line = self.q.get(timeout=timeout)
        if line is None:
            return None
        assert line.endswith(b'\n'), line
        return json.loads(line)

    def nothing_for(self, seconds):
        try:
            line = self.q.get(timeout=seconds)
        except queue.Empty:
            return True
        self.q.put(line)
        return False

    def request(self, method, params=None, rid=None, notes=None, timeout=120):
        """Send a request and return its answer; notifications go to `notes`."""
        if rid is None:
            self.ids += 1
            rid = self.ids
        msg = {'jsonrpc': '2.0', 'id': rid, 'method': method}
        if params is not None:
            msg['params'] = params
        self.send(msg)
        return self.answer(rid, notes, timeout)

    def answer(self, rid, notes=None, timeout=120):
        deadline = time.monotonic() + timeout
        while True:
            m = self.recv(timeout=max(0.1, deadline - time.monotonic()))
            if m is None:
                raise AssertionError('the server closed stdout: ' + self.stderr())
            if 'id' in m and m.get('id') == rid and 'method' not in m:
                return m
            if notes is not None:
                notes.append(m)

    def initialize(self):
        r = self.request('initialize', {'protocolVersion': '2025-11-25', 'capabilities': {},
                                        'clientInfo': {'name': 't', 'version': '1'}})
        self.send({'jsonrpc': '2.0', 'method': 'notifications/initialized'})
        return r

    def call(self, name, args=None, modern=False, meta=None, **kw):
        params = {'name': name, 'arguments': args or {}}
        m = dict(META) if modern else {}
        m.update(meta or {})
        if m:
            params['_meta'] = m
        r = self.request('tools/call', params, **kw)
        assert 'result' in r, r
        return r['result']

    def close(self, timeout=30):
        if self.p.poll() is None:
            try:
                self.p.stdin.close()
            except OSError:
                pass
            try:
                self.p.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.p.kill()
                self.p.wait()
        return self.p.returncode


def text(result):
    return ''.join(c['text'] for c in result['content'] if c['type'] == 'text')


def docker_skip_reason():
    """Why the docker cases cannot run, or None."""
    if BACKEND == 'local':
        return None
    from test_pool_docker import skip_reason
    return skip_reason()


class Base(unittest.TestCase):
    def setUp(self):
        why = docker_skip_reason()
        if why:
            self.skipTest(why)
        self.tmp = tempfile.mkdtemp(prefix='cellbox-mcp-')
        self.env = clean_env(self.tmp)
        self.env['CELLBOX_BACKEND'] = BACKEND
        # A loaded machine (the sanitizer build beside the rest) can take seconds to format a
        # fresh kernel's first traceback: the grace is not what these tests are about.
        self.env['CELLBOX_INTERRUPT_GRACE'] = '15'
        self.servers = []

    def tearDown(self):
        for s in self.servers:
            s.close()
            for stream in (s.p.stdin, s.p.stdout, s.p.stderr):
                try:
                    stream.close()
                except OSError:
                    pass
        shutil.rmtree(self.tmp, ignore_errors=True)

    def server(self, *args, **env):
        e = dict(self.env, **env)
        s = Server(e, *args, cwd=self.tmp)     # a local kernel works where the server runs
        self.servers.append(s)
        return s

    def open(self, s, **args):
        r = s.call('session_open', args)
        self.assertFalse(r.get('isError'), text(r))
        return r['structuredContent']['handle']

    def run_cell(self, s, handle, code, **kw):
        args = {'handle': handle, 'code': code}
        args.update(kw)
        return s.call('session_run', args)
