"""`cellbox mcp` on raw JSON-RPC: both revisions' discovery, framing, errors, limits, the
tools' edges, a hostile kernel's plots and files, and what happens when the client goes.

CELLBOX_TEST_BACKEND=docker runs the cases that open sandboxes on docker (the suite's
docker cases); without a daemon or the image they report themselves skipped. The server on
pipes and the cases' base are mcp_base.py.
"""
import base64
import json
import os
import signal
import subprocess
import time
import unittest

from test_pool import gone, wait_for
from mcp_base import BACKEND, META, MODERN, Base, text


class ProtocolTest(Base):
    def test_legacy_handshake(self):
        s = self.server()
        r = s.initialize()['result']
        self.assertEqual(r['protocolVersion'], '2025-11-25')
        self.assertEqual(r['serverInfo']['name'], 'cellbox')
        self.assertIn('tools', r['capabilities'])
        self.assertIn('session_open', r['instructions'])
        for offered, settled in [('2025-06-18', '2025-06-18'), ('2024-11-05', '2024-11-05'),
                                 ('1999-01-01', '2025-11-25'), (MODERN, '2025-11-25')]:
            r = s.request('initialize', {'protocolVersion': offered, 'capabilities': {}})
            self.assertEqual(r['result']['protocolVersion'], settled, offered)
        self.assertEqual(s.request('initialize', {})['error']['code'], -32602)
        self.assertEqual(s.request('ping')['result'], {})
        tools = s.request('tools/list')['result']
        self.assertNotIn('resultType', tools)        # a 2025 answer is shaped as 2025's
        self.assertNotIn('ttlMs', tools)
        self.assertEqual(len(tools['tools']), 15)

    def test_modern_discovery(self):
        s = self.server()
        r = s.request('server/discover', {'_meta': META})['result']
        self.assertEqual(r['supportedVersions'], [MODERN])
        self.assertEqual(r['resultType'], 'complete')
        self.assertIsInstance(r['ttlMs'], int)
        self.assertIn(r['cacheScope'], ('public', 'private'))
        self.assertEqual(r['_meta']['io.modelcontextprotocol/serverInfo']['name'], 'cellbox')
        self.assertIn('resources', r['capabilities'])
        t = s.request('tools/list', {'_meta': META})['result']
        self.assertEqual((t['resultType'], t['cacheScope']), ('complete', 'private'))
        self.assertGreater(t['ttlMs'], 0)
        res = s.request('resources/list', {'_meta': META})['result']
        self.assertEqual((res['resources'], res['ttlMs']), ([], 0))
        call = s.call('session_list', modern=True)
        self.assertEqual(call['resultType'], 'complete')
        # the same server answers a 2025 request in 2025's shape, right after
        self.assertNotIn('resultType', s.request('tools/list')['result'])

    def test_unsupported_version(self):
        s = self.server()
        r = s.request('tools/list', {'_meta': {'io.modelcontextprotocol/protocolVersion':
                                               '2099-01-01'}}, rid='v')
        self.assertEqual(r['id'], 'v')
        self.assertEqual(r['error']['code'], -32022)
        self.assertEqual(r['error']['data'], {'supported': [MODERN], 'requested': '2099-01-01'})
        r = s.request('ping', {'_meta': {'io.modelcontextprotocol/protocolVersion': 7}})
        self.assertEqual(r['error']['code'], -32602)
        # discovery belongs to 2026-07-28; initialize does not
        self.assertEqual(s.request('server/discover')['error']['code'], -32602)
        r = s.request('initialize', {'protocolVersion': '2025-11-25', '_meta': META})
        self.assertEqual(r['error']['code'], -32601)

    def test_malformed_lines(self):
        s = self.server()
        cases = [
            (b'not json\n', -32700),
            (b'{"jsonrpc":"2.0","id":1\n', -32700),
            (b'{"jsonrpc":"2.0","id":1,"method":"ping"} trailing\n', -32700),
            (b'{"jsonrpc":"2.0","id":1,"method":"\xff\xfe"}\n', -32700),
            (b'[{"jsonrpc":"2.0","id":1,"method":"ping"}]\n', -32600),
            (b'42\n', -32600),
            (b'{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}\n', -32600),
            (b'{"jsonrpc":"2.0","id":null,"method":"ping"}\n', -32600),
            (b'{"jsonrpc":"2.0","id":1.5,"method":"ping"}\n', -32600),
            (b'{"jsonrpc":"2.0","id":2}\n', -32600),
            (b'{"jsonrpc":"2.0","id":3,"method":7}\n', -32600),
            (b'[' * 5000 + b'\n', -32700),
        ]
        for line, code in cases:
            s.write(line)
            m = s.recv(timeout=30)
            self.assertEqual(m['error']['code'], code, line[:80])
            self.assertEqual(m['jsonrpc'], '2.0')
            self.assertIsInstance(m['error']['message'], str)
        s.write(b'{"id":4,"method":"ping"}\n')       # no "jsonrpc": answered by its id
        m = s.recv()
        self.assertEqual((m['id'], m['error']['code']), (4, -32600))
        s.write(b'\n   \n\r\n')                      # blank lines: nothing
        s.write(b'{"jsonrpc":"2.0","id":"after","method":"ping"}\r\n')
        self.assertEqual(s.recv(), {'jsonrpc': '2.0', 'id': 'after', 'result': {}})
        self.assertIsNone(s.p.poll())

    def test_unknown_method_and_bad_params(self):
        s = self.server()
        r = s.request('tools/frobnicate', rid='u')
        self.assertEqual((r['id'], r['error']['code']), ('u', -32601))
        self.assertIn('tools/frobnicate', r['error']['message'])
        bad = [
            ('tools/list', [1, 2]),
            ('tools/call', {}),
            ('tools/call', {'name': 'nope'}),
            ('tools/call', {'name': 'execute_code', 'arguments': [1]}),
            ('resources/read', {}),
            ('tools/list', {'_meta': 5}),
        ]
        for method, params in bad:
            r = s.request(method, params)
            self.assertEqual(r['error']['code'], -32602, (method, params, r))
        r = s.request('resources/read', {'uri': 'cellbox://sessions/s-00/plots/1.png'})
        self.assertEqual(r['error']['code'], -32602)
        self.assertEqual(r['error']['data'], {'uri': 'cellbox://sessions/s-00/plots/1.png'})

    def test_tool_argument_errors(self):
        s = self.server()
        for args, want in [({}, "'code' is required"),
                           ({'code': 'pass', 'timeout': 'x'}, "'timeout' must be a number"),
                           ({'code': 'pass', 'timeout': -1}, "'timeout' must be at least 0"),
                           ({'code': 7}, "'code' must be a string"),
                           ({'code': 'pass', 'colour': 1}, "unknown argument 'colour'"),
                           ({'code': 'pass', 'libraries': ['numpy', 3]},
                            "'libraries[1]' must be a string"),
                           ({'code': 'pass', 'libraries': ['--index-url=x']},
                            'not a package name'),
                           ({'code': 'pass', 'language': 'cobol'},
                            'there is no such kernel (there are: python, r)')]:
            r = s.call('execute_code', args)
            self.assertTrue(r['isError'], args)
            self.assertIn(want, text(r))
            self.assertNotIn('structuredContent', r)
        r = s.call('session_run', {'handle': 's-0000000000000000', 'code': 'pass'})
        self.assertTrue(r['isError'])
        self.assertIn('no session', text(r))

    def test_notification_without_id(self):
        s = self.server()
        for method in ('tools/list', 'notifications/initialized', 'nope/nothing',
                       'notifications/cancelled', 'ping'):
            s.send({'jsonrpc': '2.0', 'method': method, 'params': {}})
        s.send({'jsonrpc': '2.0', 'method': 'notifications/cancelled',
                'params': {'requestId': 99}})
        s.write(b'{"jsonrpc":"2.0","method":"tools/call","params":{"name":"execute_code",'
                b'"arguments":{}}}\n')
        self.assertTrue(s.nothing_for(1.0))
        self.assertEqual(s.request('ping', rid=7), {'jsonrpc': '2.0', 'id': 7, 'result': {}})

    def test_huge_message_refused(self):
        s = self.server()
        big = 'x' * (100 << 20)
        # the id first, as most clients write it; then last, as the official SDK does
        s.write('{"jsonrpc":"2.0","id":"big","method":"tools/call","params":{"name":'
                '"execute_code","arguments":{"code":"%s"}}}\n' % big)
        m = s.recv(timeout=120)
        self.assertEqual(m['id'], 'big')
        self.assertEqual(m['error']['code'], -32600)
        self.assertIn('too large', m['error']['message'])
        self.assertIn(str(64 << 20), m['error']['message'])
        s.write('{"method":"tools/call","params":{"name":"execute_code","arguments":'
                '{"code":"%s","x":[{"id":1},"\\"id\\""]}},"jsonrpc":"2.0","id":1234}\n' % big)
        m = s.recv(timeout=120)
        self.assertEqual((m['id'], m['error']['code']), (1234, -32600))
        s.write('{"jsonrpc":"2.0","method":"notifications/x","params":{"p":"%s"}}\n' % big)
        self.assertEqual(s.request('ping', rid='alive')['result'], {})   # nothing in between
        self.assertIn('refused a message', s.stderr())
        # the limit is a setting; past it the message is never kept, whatever its size
        s2 = self.server('--mcp-max-message', '1m')
        s2.write('{"jsonrpc":"2.0","id":5,"method":"ping","params":{"p":"%s"}}\n' % big)
        self.assertEqual(s2.recv(timeout=120)['error']['code'], -32600)
        with open('/proc/%d/status' % s2.p.pid) as f:
            hwm = [int(l.split()[1]) for l in f if l.startswith('VmHWM')][0]
        self.assertLess(hwm, 80 << 10, 'peak memory %d kB for a 100 MB message' % hwm)

    def test_stdout_is_protocol_only(self):
        s = self.server()
        s.initialize()
        h = self.open(s)
        r = self.run_cell(s, h, 'import os, sys\nos.write(1, b"fd1\\n"); print("printed")\n'
                          'sys.__stdout__.write("dunder\\n"); sys.__stdout__.flush()')
        self.assertIn('printed', r['structuredContent']['stdout'])
        s.close()
        for line in s.q.queue:
            if line is not None:
                json.loads(line)                      # every line the server wrote is JSON


class ToolsTest(Base):
    def test_session_run_timeout_interrupt_restart(self):
        s = self.server()
        h = self.open(s)
        r = self.run_cell(s, h, 'import time\ntime.sleep(30)', timeout=3)
        sc = r['structuredContent']
        self.assertEqual((sc['outcome'], sc['exit_code'], sc['reason']), ('timeout', 3, 'timeout'))
        self.assertIn('KeyboardInterrupt', sc['stderr'])
        # an interrupt from another call while a cell runs
        # an interrupt from another call while a cell runs (once it says it runs: a SIGINT
        # that comes before the cell starts is the kernel's to ignore)
        s.send({'jsonrpc': '2.0', 'id': 'long', 'method': 'tools/call', 'params': {
            'name': 'session_run', '_meta': {'progressToken': 1}, 'arguments': {
                'handle': h, 'code': 'y = 1\nimport time\nprint("started", flush=True)\n'
                                     'time.sleep(30)'}}})
        self.assertEqual(s.recv()['method'], 'notifications/progress')
        i = s.call('session_interrupt', {'handle': h})
        self.assertTrue(i['structuredContent']['interrupted'])
        long = s.answer('long')['result']['structuredContent']
        self.assertEqual((long['outcome'], long['exit_code']), ('interrupted', 130))
        self.assertEqual(s.call('session_interrupt', {'handle': h})['structuredContent'],
                         {'handle': h, 'interrupted': False})
        self.assertEqual(self.run_cell(s, h, 'y')['structuredContent']['stdout'], '1\n')
        r = s.call('session_restart', {'handle': h})
        self.assertEqual(r['structuredContent']['state'], 'idle')
        r = self.run_cell(s, h, 'y')
        self.assertEqual(r['structuredContent']['error']['ename'], 'NameError')

    def test_session_fork(self):
        # session_fork: a named session forked into a new named session, attached. Local: its
        # kernel process copied. Docker (runc: no memory checkpoint here): its cells re-run in
        # a fresh kernel, said so, the random number drawn again.
        s = self.server()
        h = self.open(s, name='mf')
        first = self.run_cell(s, h, 'import random\nr = random.random()\nk = 6 * 7\nprint(r)')
        r0 = first['structuredContent']['stdout']
        f = s.call('session_fork', {'handle': h, 'name': 'mf2'})
        try:
            self.assertFalse(f.get('isError'), text(f))
            sc = f['structuredContent']
            h2 = sc['handle']
            self.assertEqual((sc['name'], sc['forked_from']), ('mf2', 'mf'))
            self.assertNotEqual(h2, h)
            r2 = self.run_cell(s, h2, 'print(r)')['structuredContent']['stdout']
            self.assertEqual(self.run_cell(s, h2, 'print(k)')['structuredContent']['stdout'],
                             '42\n')
            if BACKEND == 'local':
                self.assertEqual(sc['fork'], 'process')
                self.assertIn('a copy of its kernel process', text(f))
                # the random value drawn before the fork: a copy of the process has it
                self.assertEqual(r2, r0)
            else:
                self.assertEqual((sc['fork'], sc['rerun_cells']), ('rerun', 1))
                self.assertIn("into 'mf2' by re-running 1 cell: not a memory copy", text(f))
                self.assertNotIn('through a memory checkpoint', text(f))
                # a re-run draws it again
                self.assertNotEqual(r2, r0)
            self.run_cell(s, h2, 'r = 0\nk = 1')
            self.assertEqual(self.run_cell(s, h, 'print(r)')['structuredContent']['stdout'],
                             r0)
            self.assertEqual(self.run_cell(s, h, 'print(k)')['structuredContent']['stdout'],
                             '42\n')
            g = s.call('session_fork', {'handle': h2})
            self.assertFalse(g.get('isError'), text(g))
            self.assertEqual(self.run_cell(s, g['structuredContent']['handle'], 'print(r, k)')
                             ['structuredContent']['stdout'], '0 1\n')
            s.call('session_close', {'handle': g['structuredContent']['handle'], 'end': True})
            taken = s.call('session_fork', {'handle': h, 'name': 'mf2'})
            self.assertTrue(taken.get('isError'), text(taken))
            u = self.open(s)
            no = s.call('session_fork', {'handle': u, 'name': 'mf3'})
            self.assertTrue(no.get('isError'))
            self.assertIn('has no name', text(no))
            s.call('session_close', {'handle': h2, 'end': True})
        finally:
            s.call('session_close', {'handle': h, 'end': True})

    def test_calls_on_one_session_run_in_order(self):
        s = self.server()
        h = self.open(s)
        for i in range(3):
            s.send({'jsonrpc': '2.0', 'id': i, 'method': 'tools/call', 'params': {
                'name': 'session_run', 'arguments': {'handle': h, 'code':
                                                     'import time; time.sleep(0.2); print(%d)' % i}}})
        got = [s.recv() for _ in range(3)]
        self.assertEqual([m['id'] for m in got], [0, 1, 2])
        self.assertEqual([m['result']['structuredContent']['stdout'] for m in got],
                         ['0\n', '1\n', '2\n'])
        # a queued call that is cancelled never runs and is never answered
        s.send({'jsonrpc': '2.0', 'id': 'a', 'method': 'tools/call', 'params': {
            'name': 'session_run', 'arguments': {'handle': h, 'code': 'import time; time.sleep(1)'}}})
        s.send({'jsonrpc': '2.0', 'id': 'b', 'method': 'tools/call', 'params': {
            'name': 'session_run', 'arguments': {'handle': h, 'code': 'ran_b = 1'}}})
        s.send({'jsonrpc': '2.0', 'method': 'notifications/cancelled',
                'params': {'requestId': 'b', 'reason': 'changed my mind'}})
        self.assertEqual(s.answer('a')['id'], 'a')
        self.assertTrue(s.nothing_for(0.5))
        r = self.run_cell(s, h, "'ran_b' in globals()")
        self.assertEqual(r['structuredContent']['stdout'], 'False\n')

    def test_output_cap_and_progress(self):
        s = self.server('--mcp-output-max', '100k')
        h = self.open(s)
        notes = []
        r = s.call('session_run', {'handle': h, 'code': 'print("\\x1b]0;title\\x07x" * 300000)'},
                   meta={'progressToken': 'tok'}, notes=notes)
        sc = r['structuredContent']
        self.assertEqual(len(sc['stdout']), 100 << 10)
        self.assertTrue(sc['truncated'])
        self.assertNotIn('\x1b', sc['stdout'])          # escape sequences are gone
        self.assertIn('output truncated', text(r))
        progress = [n['params'] for n in notes if n['method'] == 'notifications/progress']
        self.assertTrue(progress and all(p['progressToken'] == 'tok' for p in progress))
        # no token, no notifications
        notes = []
        s.call('session_run', {'handle': h, 'code': 'print(1)'}, notes=notes)
        self.assertEqual(notes, [])

    def test_files(self):
        s = self.server('--mcp-file-max', '64k')
        h = self.open(s)
        data = os.urandom(50000)
        r = s.call('file_put', {'handle': h, 'path': 'd/blob.bin',
                                'base64': base64.b64encode(data).decode()})
        self.assertEqual(r['structuredContent']['size'], 50000, text(r))
        self.assertEqual(self.run_cell(s, h, 'print(len(open("d/blob.bin","rb").read()))')
                         ['structuredContent']['stdout'], '50000\n')
        r = s.call('file_get', {'handle': h, 'path': 'd/blob.bin'})
        self.assertEqual(base64.b64decode(r['structuredContent']['base64']), data)
        self.assertIn('binary', text(r))
        self.run_cell(s, h, 'open("t.txt", "w").write("h\\u00e9llo\\n")')
        r = s.call('file_get', {'handle': h, 'path': 't.txt'})
        self.assertEqual(text(r), 'h\u00e9llo\n')
        self.assertEqual(r['structuredContent']['size'], 7)
        for tool, args, want in [
                ('file_get', {'path': 'missing.txt'}, 'FileNotFoundError'),
                ('file_get', {'path': '.'}, 'IsADirectoryError'),
                ('file_put', {'path': 'x', 'base64': '!!!!'}, 'not base64'),
                ('file_put', {'path': 'x', 'base64': base64.b64encode(b'a' * 70000).decode()},
                 'larger than'),
                ('file_put', {'path': 'd', 'base64': 'YQ=='}, 'is a directory'),
                ('file_get', {'path': ''}, 'path must be')]:
            args['handle'] = h
            r = s.call(tool, args)
            self.assertTrue(r.get('isError'), (tool, args, r))
            self.assertIn(want, text(r))
        self.run_cell(s, h, 'open("big", "wb").write(b"z" * 70000)')
        r = s.call('file_get', {'handle': h, 'path': 'big'})
        self.assertTrue(r['isError'])
        self.assertIn('larger than 65536', text(r))
        # nothing of the helpers is left in the user's namespace
        r = self.run_cell(s, h, 'sorted(k for k in globals() if not k.startswith("_") '
                          'and k not in ("In", "Out", "exit", "quit", "get_ipython"))')
        self.assertEqual(r['structuredContent']['stdout'], '[]\n')

    def test_plots_as_resources(self):
        s = self.server()
        h = self.open(s)
        r = self.run_cell(s, h, 'import matplotlib.pyplot as plt\nplt.plot([1,2])\nplt.show()\n'
                          'plt.plot([3,1])\nplt.show()')
        plots = r['structuredContent']['plots']
        self.assertEqual([p['uri'] for p in plots],
                         ['cellbox://sessions/%s/plots/%d.png' % (h, n) for n in (1, 2)])
        listed = s.request('resources/list')['result']['resources']
        self.assertEqual([x['uri'] for x in listed], [p['uri'] for p in plots])
        got = s.request('resources/read', {'uri': plots[1]['uri']})['result']['contents'][0]
        self.assertEqual(got['mimeType'], 'image/png')
        png = base64.b64decode(got['blob'])
        self.assertEqual(png[:8], b'\x89PNG\r\n\x1a\n')
        from PIL import Image
        import io
        self.assertEqual(Image.open(io.BytesIO(png)).size, (plots[1]['width'], plots[1]['height']))
        templ = s.request('resources/templates/list')['result']['resourceTemplates']
        self.assertEqual(templ[0]['uriTemplate'], 'cellbox://sessions/{handle}/plots/{n}.png')
        r = self.run_cell(s, h, 'plt.plot([0,0])\nplt.show()', clear_plots=True)
        self.assertEqual([p['index'] for p in r['structuredContent']['plots']], [1])
        self.assertEqual(len(s.request('resources/list')['result']['resources']), 1)
        for uri in ('cellbox://sessions/%s/plots/2.png' % h, 'cellbox://sessions/%s/plots/0.png' % h,
                    'cellbox://sessions/%s/plots/1.png.x' % h, 'cellbox://sessions/../plots/1.png',
                    'file:///etc/passwd'):
            self.assertEqual(s.request('resources/read', {'uri': uri})['error']['code'], -32602, uri)

    def test_operator_limits(self):
        s = self.server('--timeout', '5', '--mcp-max-sessions', '2')
        for args, want in [({'backend': 'podman'}, 'not allowed'),
                           ({'backend': 'nosuch'}, 'not allowed'),
                           ({'network': 'bridge'}, 'not allowed'),
                           ({'network': 'host'}, 'not allowed'),
                           ({'memory': '4g'}, 'above the server'),
                           ({'memory': 'lots'}, 'not a size'),
                           ({'timeout': 10}, 'above the server'),
                           ({'policy': 'nosuch'}, "no policy 'nosuch'"),
                           ({'policy': '/etc/passwd'}, 'a client names a policy')]:
            r = s.call('session_open', args)
            self.assertTrue(r.get('isError'), args)
            self.assertIn(want, text(r), args)
        r = s.call('execute_code', {'code': 'pass', 'timeout': 9})
        self.assertIn('above the server', text(r))
        h1 = self.open(s, network='none', memory='512m')
        self.open(s)
        r = s.call('session_open', {})
        self.assertIn('too many sessions', text(r))
        r = s.call('execute_code', {'code': 'pass'})
        self.assertIn('too many sessions', text(r))
        s.call('session_close', {'handle': h1})
        r = s.call('execute_code', {'code': 'import time; time.sleep(8)'})
        self.assertEqual(r['structuredContent']['outcome'], 'timeout')   # the server's 5 s
        self.assertEqual(len(s.call('session_list')['structuredContent']['sessions']), 1)

    def test_network_allow_list_narrowed(self):
        # The operator's allow-list (docs/egress.md): a client may ask for it, none, or a list
        # it covers; never a wider one. (The local kernel has no network of its own to limit:
        # what is checked here is what the server lets a client ask for.)
        s = self.server('--network', 'allow:a.test:443,10.203.0.0/16')
        for network in ('none', 'allow:a.test:443,10.203.0.0/16', 'allow:A.test.:443',
                        'allow:10.203.7.0/24:80,a.test:443'):
            s.call('session_close', {'handle': self.open(s, network=network)})
        for network, want in [('bridge', 'a client may only ask for none or a narrower '
                               'allow-list'),
                              ('allow:a.test', 'reaches past the server'),
                              ('allow:b.test:443', 'reaches past the server'),
                              ('allow:10.0.0.0/8', 'reaches past the server'),
                              ('allow:bad name', "'bad name' is not HOST[:PORT]")]:
            r = s.call('session_open', {'network': network})
            self.assertTrue(r.get('isError'), network)
            self.assertIn(want, text(r), network)

    def test_stdin_closed_mid_cell(self):
        s = self.server()
        h = self.open(s)
        who = self.run_cell(s, h, KERNEL_ID)['structuredContent']['stdout'].strip()
        s.send({'jsonrpc': '2.0', 'id': 'long', 'method': 'tools/call', 'params': {
            'name': 'session_run', '_meta': {'progressToken': 'p'}, 'arguments': {
                'handle': h, 'code': 'import time\nprint("started", flush=True)\ntime.sleep(60)'}}})
        self.assertEqual(s.recv()['method'], 'notifications/progress')
        self.assertTrue(kernel_alive(who))
        t0 = time.monotonic()
        self.assertEqual(s.close(timeout=30), 0)
        self.assertLess(time.monotonic() - t0, 20)
        wait_for(lambda: not kernel_alive(who), timeout=20, what='the kernel to go')
        run = os.path.join(self.tmp, 'run')
        self.assertEqual([d for d in os.listdir(run) if d != 'pool'] if os.path.isdir(run) else [],
                         [])

    def test_sigterm_closes_sessions(self):
        s = self.server()
        h = self.open(s)
        who = self.run_cell(s, h, KERNEL_ID)['structuredContent']['stdout'].strip()
        s.p.send_signal(signal.SIGTERM)
        self.assertEqual(s.p.wait(timeout=30), 0)
        self.assertIn('closing the sessions', s.stderr())
        wait_for(lambda: not kernel_alive(who), timeout=20, what='the kernel to go')


# A local kernel runs in a pid namespace of its own (it is pid 2 inside): its pid as this
# machine sees it is the host's note in the channel.
KERNEL_ID = ('import sys; print(open(sys.argv[1] + "/pid").read().strip())'
             if BACKEND == 'local' else
             'import socket; print(socket.gethostname())')


def kernel_alive(who):
    if BACKEND == 'local':
        return not gone(int(who))
    from test_pool_docker import engine
    status, info = engine('/containers/json?all=1')
    return any(c['Id'].startswith(who) for c in info or [])


class HostileTest(Base):
    """The kernel is hostile in a container: what it writes is never trusted."""

    def plot_then(self, s, h, after):
        """A cell that makes plot n and then does `after` to its file (p is its path). Local:
        the host's checked copy in <channel>/plots, once the host made it (the local kernel runs
        as the user and can reach it; what cellbox mcp reads is that copy). In a container the
        kernel cannot reach the host's copies: it plays the trick on its own file in
        <channel>/kernel/plots, which the host took (checked) when the event came, or refuses."""
        where = '' if BACKEND == 'local' else '/kernel'
        code = ('import sys, os, time, matplotlib.pyplot as plt\nplt.plot([1,2])\nplt.show()\n'
                'ch = sys.argv[1]; n = max(int(f[:-4]) for f in os.listdir(ch + "/kernel/plots") '
                'if f.endswith(".png")); p = "%s' + where + '/plots/%d.png" % (ch, n)\n'
                't0 = time.monotonic()\n'
                'while not os.path.exists(p) and time.monotonic() - t0 < 10: time.sleep(0.01)\n'
                + after.replace('ch + "/plots"', 'ch + "' + where + '/plots"')
                .replace('ch + "/elsewhere"', 'ch + "' + where + '/elsewhere"'))
        return self.run_cell(s, h, code)

    def test_plot_tricks_are_refused(self):
        secret = os.path.join(self.tmp, 'secret')
        with open(secret, 'wb') as f:
            f.write(b'\x89PNG\r\n\x1a\n' + b'TOP SECRET' * 10)
        s = self.server()
        h = self.open(s)
        tricks = {
            'symlink': 'os.unlink(p); os.symlink(%r, p)' % secret,
            'hard link': 'os.unlink(p); os.link(%r, p)' % secret,
            'fifo': 'os.unlink(p); os.mkfifo(p)',
            'directory': 'os.unlink(p); os.mkdir(p)',
            'plots dir symlink': ('import shutil; os.rename(ch + "/plots", ch + "/elsewhere"); '
                                  'os.symlink(ch + "/elsewhere", ch + "/plots")'),
        }
        for name, after in tricks.items():
            t0 = time.monotonic()
            r = self.plot_then(s, h, after)
            self.assertLess(time.monotonic() - t0, 20, name)      # a FIFO never blocks us
            if BACKEND == 'local':
                # (in a container the host may have taken the plot before the trick: its copy
                # is the true plot; the secret must appear nowhere either way)
                self.assertEqual([c for c in r['content'] if c['type'] == 'image'], [], name)
                self.assertIn('could not be read', text(r), name)
            for p in r['structuredContent']['plots']:
                res = s.request('resources/read', {'uri': p['uri']})
                if BACKEND == 'local':
                    self.assertEqual(res.get('error', {}).get('code'), -32602, name)
                self.assertNotIn('TOP SECRET', json.dumps(res))
                self.assertNotIn(base64.b64encode(b'TOP SECRET').decode()[:12], json.dumps(res))
            self.assertNotIn('TOP SECRET', json.dumps(r))
            self.assertNotIn(base64.b64encode(b'TOP SECRET').decode()[:12], json.dumps(r))
            if name == 'plots dir symlink':
                w = '' if BACKEND == 'local' else '/kernel'
                self.run_cell(s, h, 'os.unlink(ch + "%s/plots"); os.rename(ch + "%s/elsewhere", '
                              'ch + "%s/plots")' % (w, w, w))

    def test_plot_larger_than_the_cap(self):
        s = self.server('--mcp-file-max', '2k')
        h = self.open(s)
        r = self.run_cell(s, h, 'import matplotlib.pyplot as plt\nplt.plot([1,2])\nplt.show()')
        self.assertIn('over its cap of 2 KB', text(r))
        self.assertEqual([c for c in r['content'] if c['type'] == 'image'], [])

    def test_file_get_answers_are_checked(self):
        """file_get's helper leaves its copy in the kernel's part of the channel; a kernel that
        puts a link to a host secret, a FIFO, a hard link or more than the cap there instead
        is refused by the host's checks, quickly (a FIFO never blocks the server)."""
        secret = os.path.join(self.tmp, 'secret')
        with open(secret, 'w') as f:
            f.write('TOP SECRET')
        s = self.server('--mcp-file-max', '1k')
        h = self.open(s)
        self.run_cell(s, h, 'open("f", "w").write("ok")')
        evil = {
            'symlink': 'os.symlink(%r, p)' % secret,
            'fifo': 'os.mkfifo(p)',
            'hard link': '_open(p + "-mine", "w").write("x"); os.link(p + "-mine", p)',
            'too much': '_open(p, "wb").write(b"A" * 5000)',
        }
        for name, body in evil.items():
            # the helper opens its copy with the builtin open: the kernel plays its trick there
            self.run_cell(s, h, 'import builtins, os\n'
                          '_open = getattr(builtins, "_orig_open", builtins.open)\n'
                          'builtins._orig_open = _open\n'
                          'def _evil(p, mode="r", *a, **k):\n'
                          '    if isinstance(p, str) and "/out/copy-out-" in p:\n'
                          '        %s\n'
                          '        return _open(os.devnull, "wb")\n'
                          '    return _open(p, mode, *a, **k)\n'
                          'builtins.open = _evil' % body)
            t0 = time.monotonic()
            r = s.call('file_get', {'handle': h, 'path': 'f'})
            self.assertLess(time.monotonic() - t0, 20, name)
            self.assertTrue(r.get('isError'), (name, r))
            self.assertIn('was not a file of at most 1024 bytes', text(r), name)
            self.assertNotIn('TOP SECRET', json.dumps(r), name)
            self.assertNotIn(base64.b64encode(b'TOP SECRET').decode()[:12], json.dumps(r), name)
        self.run_cell(s, h, 'import builtins\nbuiltins.open = builtins._orig_open')
        self.assertEqual(text(s.call('file_get', {'handle': h, 'path': 'f'})), 'ok')


class SandboxTest(Base):
    """The security policy and the libraries a session gets, as --policy and --libraries
    give them to the other commands."""

    def blocked(self, r, module):
        """`r` is the tool error of a cell the policy refused, naming `module`."""
        self.assertTrue(r.get('isError'), text(r))
        sc = r['structuredContent']
        self.assertEqual((sc['outcome'], sc['exit_code'], sc['status']), ('blocked', 7, 'error'))
        self.assertEqual(sc['error']['ename'], 'SecurityViolation')
        self.assertIn('the cell was not run', sc['error']['traceback'][0])
        hits = [v for v in sc['error']['violations'] if v['blocking'] and module in v['code']]
        self.assertTrue(hits, sc['error']['violations'])
        self.assertEqual(hits[0]['kind'], 'module')
        self.assertIn("blocked by security policy", text(r))
        self.assertIn('[exit code 7', text(r))
        return sc

    def test_policy_a_client_names(self):
        s = self.server()
        h = self.open(s, policy='production')
        self.assertEqual(s.call('session_list')['structuredContent']['sessions'][0]['handle'], h)
        self.run_cell(s, h, 'x = 1')
        r = self.run_cell(s, h, 'x = 2\nimport subprocess\nsubprocess.run(["id"])')
        sc = self.blocked(r, 'subprocess')
        self.assertEqual(sc['stdout'], '')
        self.assertIn('subprocess', sc['stderr'])           # the verdict's lines, as printed
        self.assertEqual(self.run_cell(s, h, 'x')['structuredContent']['stdout'], '1\n')
        # An import of a name computed at run time is dynamic code, which production blocks.
        r = self.run_cell(s, h, 'm = "subpro" + "cess"\nimportlib = __import__("importlib")\n'
                          'importlib.import_module(m)')
        self.assertTrue(r.get('isError'), text(r))
        self.assertEqual([v['kind'] for v in r['structuredContent']['error']['violations']],
                         ['dynamic'])
        # A session without one is not checked; "none" says so.
        h2 = self.open(s, policy='none')
        r = self.run_cell(s, h2, 'import subprocess; print(subprocess.__name__)')
        self.assertEqual(r['structuredContent']['stdout'], 'subprocess\n', text(r))
        # The operator's own NAME.policy in the policies directory is a name too.
        d = os.path.join(self.env['XDG_CONFIG_HOME'], 'cellbox', 'policies')
        os.makedirs(d)
        with open(os.path.join(d, 'nosock.policy'), 'w') as f:
            f.write('description = no sockets\nthreshold = MEDIUM\nmodule socket HIGH Network\n')
        r = s.call('session_open', {'policy': 'nosock'})
        self.assertEqual(r['structuredContent']['policy'], 'nosock', text(r))
        h3 = r['structuredContent']['handle']
        self.blocked(self.run_cell(s, h3, 'import socket'), 'socket')
        # Dynamic code below its threshold runs, and the kernel's import hook refuses the
        # module: the kernel's own error, which cannot carry a verdict of the host's.
        r = self.run_cell(s, h3, 'm = "soc" + "ket"\n__import__(m)')
        sc = r['structuredContent']
        self.assertFalse(r.get('isError'), text(r))
        self.assertEqual((sc['outcome'], sc['exit_code'], sc['error']['ename']),
                         ('error', 1, 'SecurityViolation'))
        self.assertIn("import of 'socket' refused by the security policy 'nosock'",
                      sc['error']['evalue'])
        self.assertNotIn('violations', sc['error'])
        # Paths are the operator's: a client cannot have the server read a file.
        fifo = os.path.join(self.tmp, 'f.policy')
        os.mkfifo(fifo)
        for bad in (fifo, '../../etc/passwd', 'x.policy', os.path.join(d, 'nosock.policy')):
            t0 = time.monotonic()
            r = s.call('session_open', {'policy': bad})
            self.assertLess(time.monotonic() - t0, 10)      # a FIFO is never opened
            self.assertTrue(r.get('isError'), bad)
            self.assertIn('a client names a policy', text(r), bad)
        r = s.call('session_open', {'policy': 'no such'})
        self.assertIn('is not a policy name', text(r))

    def test_the_servers_policy(self):
        s = self.server('--policy', 'production')
        r = s.call('execute_code', {'code': 'import os\nos.system("id")'})
        sc = self.blocked(r, 'os')
        self.assertEqual(sc['stdout'], '')
        r = s.call('execute_code', {'code': 'print(6 * 7)'})
        self.assertFalse(r.get('isError'), text(r))
        self.assertEqual(r['structuredContent']['stdout'], '42\n')
        h = self.open(s)
        self.blocked(self.run_cell(s, h, 'import subprocess'), 'subprocess')
        self.assertEqual(s.call('session_open', {'policy': 'production'})['structuredContent']
                         ['policy'], 'production')
        for other in ('none', 'strict', 'development'):
            r = s.call('session_open', {'policy': other})
            self.assertTrue(r.get('isError'), other)
            self.assertIn("checks every cell against its policy 'production'", text(r), other)
        # A library the policy restricts is refused before anything is installed.
        r = s.call('execute_code', {'code': 'pass', 'libraries': ['subprocess']})
        self.assertTrue(r.get('isError'))
        self.assertIn("'subprocess' is the module subprocess, which the policy 'production' "
                      "restricts", text(r))

    def test_libraries(self):
        from test_cli import PYTHON
        from wheel import make_wheel
        if BACKEND != 'local':
            self.skipTest('the docker libraries are tested by the SDK client (hardened)')
        if subprocess.run([PYTHON, '-m', 'pip', '--version'], capture_output=True).returncode:
            self.skipTest(PYTHON + ' has no pip (scripts/bootstrap --tests)')
        wheels = os.path.join(self.tmp, 'wheels')
        make_wheel(wheels, 'cbtestmcp', '1.0', 7)
        make_wheel(wheels, 'cbtestmcptwo', '1.0', 8)
        self.env['XDG_CACHE_HOME'] = os.path.join(self.tmp, 'cache')
        s = self.server('--wheelhouse', wheels)
        code = 'import cbtestmcp, sys\nprint(cbtestmcp.VALUE, sys.prefix != sys.base_prefix)'
        r = s.call('execute_code', {'code': code, 'libraries': ['cbtestmcp']})
        self.assertFalse(r.get('isError'), text(r) + s.stderr())
        self.assertEqual(r['structuredContent']['stdout'], '7 True\n')
        self.assertIn('installing cbtestmcp', s.stderr())    # logs go to stderr
        venvs = os.listdir(os.path.join(self.tmp, 'cache', 'cellbox', 'venvs'))
        r = s.call('execute_code', {'code': code, 'libraries': ['cbtestmcp']})
        self.assertEqual(r['structuredContent']['stdout'], '7 True\n')
        self.assertEqual(os.listdir(os.path.join(self.tmp, 'cache', 'cellbox', 'venvs')), venvs)
        # Without them, the package is not there: each call gets what it asked for.
        r = s.call('execute_code', {'code': 'import cbtestmcp'})
        self.assertIn('ModuleNotFoundError', text(r))
        # An install that fails is the call's error, and the code does not run.
        ran = os.path.join(self.tmp, 'ran')
        r = s.call('execute_code', {'code': 'open(%r, "w")' % ran, 'libraries': ['nosuchmcp']})
        self.assertTrue(r.get('isError'))
        self.assertIn('cannot install nosuchmcp (pip exited with 1)', text(r))
        self.assertFalse(os.path.exists(ran))
        r = s.call('execute_code', {'code': 'pass', 'libraries': ['cbtestmcp[']})
        self.assertTrue(r.get('isError'))
        self.assertIn("'cbtestmcp[' is not a package requirement", text(r))
        # The server's libraries setting is every session's; a call's come on top.
        s2 = self.server('--libraries', 'cbtestmcp', '--wheelhouse', wheels)
        h = self.open(s2)
        r = self.run_cell(s2, h, 'import cbtestmcp; print(cbtestmcp.VALUE)')
        self.assertEqual(r['structuredContent']['stdout'], '7\n', text(r))
        r = s2.call('execute_code', {'code': 'import cbtestmcp, cbtestmcptwo\n'
                                     'print(cbtestmcp.VALUE + cbtestmcptwo.VALUE)',
                                     'libraries': ['cbtestmcptwo']})
        self.assertEqual(r['structuredContent']['stdout'], '15\n', text(r))


if __name__ == '__main__':
    unittest.main()
