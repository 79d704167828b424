"""Egress by allow-list (--network allow:..., docs/egress.md) on the docker backend, against
HTTP servers this test starts in two network namespaces of its own (veth pairs, 10.203.N.0/30
and 10.203.N.4/30), never an outside address: a cell reaches a listed server and is refused
the other with an error that names it; CIDRs and ports; names resolved by the host (a hosts
file bind-mounted over /etc/hosts in a mount namespace of cellbox's own, the machine's file
untouched); hostile cells that flood the proxy's socket, send bad request lines and a huge
head, after which a listed server is still reached.

    tests/docker/test_egress.py [CASE]

CELLBOX_RUNTIME picks the OCI runtime ("" = the engine's default, runc; runsc-egress: gVisor
with --host-uds=open). Needs root (namespaces), dockerd with that runtime and the kernel image;
skipped with the reason otherwise."""
import os
import shutil
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'e2e'))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_cli import BIN, clean_env  # noqa: E402
from test_libraries import IMAGE, SOCKET, api  # noqa: E402

RUNTIME = os.environ.get('CELLBOX_RUNTIME', '')


def subnet():
    """This run's N, for its subnets 10.203.N.0/30 and 10.203.N.4/30: the first of 20..219
    whose lock no other run holds (held while this process lives), so that runs side by side
    never share one."""
    import fcntl
    for n in range(20, 220):
        f = open(os.path.join(tempfile.gettempdir(), 'cellbox-egress-net-%d.lock' % n), 'a')
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            f.close()
            continue
        subnet.held = f
        return n
    raise RuntimeError('no free 10.203.N subnet for this run')


N = subnet()
A, B = '10.203.%d.2' % N, '10.203.%d.6' % N

SERVER = r'''
import http.server, sys
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = (sys.argv[2] + " " + self.path + "\n").encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *a):
        pass
http.server.ThreadingHTTPServer((sys.argv[1], 8000), H).serve_forever()
'''


def sh(*args):
    subprocess.run(args, check=True, capture_output=True)


class Net:
    """Two namespaces, each with a server on :8000 that answers its name and the path."""

    def __init__(self):
        self.names, self.servers = [], []
        for i, (who, addr) in enumerate((('server-a', A), ('server-b', B))):
            ns, host_if, ns_if = 'cbeg%d%s' % (os.getpid(), 'ab'[i]), 'cbh%d%s' % (
                os.getpid(), 'ab'[i]), 'cbn%d%s' % (os.getpid(), 'ab'[i])
            base = 4 * i
            sh('ip', 'netns', 'add', ns)
            self.names.append(ns)
            sh('ip', 'link', 'add', host_if, 'type', 'veth', 'peer', 'name', ns_if)
            sh('ip', 'link', 'set', ns_if, 'netns', ns)
            sh('ip', 'addr', 'add', '10.203.%d.%d/30' % (N, base + 1), 'dev', host_if)
            sh('ip', 'link', 'set', host_if, 'up')
            sh('ip', 'netns', 'exec', ns, 'ip', 'addr', 'add', '%s/30' % addr, 'dev', ns_if)
            sh('ip', 'netns', 'exec', ns, 'ip', 'link', 'set', ns_if, 'up')
            sh('ip', 'netns', 'exec', ns, 'ip', 'link', 'set', 'lo', 'up')
            self.servers.append(subprocess.Popen(
                ['ip', 'netns', 'exec', ns, '/usr/bin/python3', '-c', SERVER, addr, who]))
        for addr in (A, B):
            self.wait(addr)

    @staticmethod
    def wait(addr, port=8000):
        import socket
        deadline = time.monotonic() + 10
        while True:
            try:
                socket.create_connection((addr, port), timeout=1).close()
                return
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)

    def close(self):
        for p in self.servers:
            p.kill()
            p.wait()
        for ns in self.names:       # its end of the veth pair goes with it, and so the host's
            subprocess.run(['ip', 'netns', 'del', ns], capture_output=True)


# What a cell prints of a URL: its body, or the error's type and words.
FETCH = r'''
import http.client, urllib.request
def fetch(url):
    try:
        return urllib.request.urlopen(url, timeout=15).read().decode().strip()
    except Exception as e:
        return "%s: %s" % (type(e).__name__, e)
def tunnel(host, port):
    import os, urllib.parse
    proxy = urllib.parse.urlsplit(os.environ["http_proxy"])
    c = http.client.HTTPConnection(proxy.hostname, proxy.port, timeout=15)
    c.set_tunnel(host, port)
    try:
        c.request("GET", "/tunnel")
        return c.getresponse().read().decode().strip()
    except Exception as e:
        return "%s: %s" % (type(e).__name__, e)
'''


class EgressTest(unittest.TestCase):
    net = None

    @classmethod
    def setUpClass(cls):
        if os.geteuid() != 0 or not shutil.which('ip') or not shutil.which('unshare'):
            raise unittest.SkipTest('needs root, ip and unshare (network namespaces)')
        if not os.path.exists(SOCKET):
            raise unittest.SkipTest('no docker daemon at ' + SOCKET)
        try:
            status, _ = api('GET', '/images/%s/json' % IMAGE)
            _, info = api('GET', '/info')
        except OSError as e:
            raise unittest.SkipTest('docker does not answer: %s' % e)
        if status != 200:
            raise unittest.SkipTest('no kernel image %s (scripts/build-image)' % IMAGE)
        if RUNTIME and RUNTIME not in info.get('Runtimes', {}):
            raise unittest.SkipTest('dockerd has no runtime %s (.ci/run adds it)' % RUNTIME)
        cls.net = Net()

    @classmethod
    def tearDownClass(cls):
        if cls.net:
            cls.net.close()

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix='cbeg-')
        os.chmod(self.tmp, 0o755)
        self.env = clean_env(self.tmp)

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def run_cell(self, network, code, hosts=None, runtime=RUNTIME):
        args = [BIN, 'run', '--backend', 'docker', '--network', network]
        if runtime:
            args += ['--runtime', runtime]
        if hosts is not None:
            path = os.path.join(self.tmp, 'hosts')
            with open(path, 'w') as f:
                f.write(hosts)
            args += ['--egress-hosts', path]
        args += ['-c', FETCH + code]
        t0 = time.monotonic()
        p = subprocess.run(args, capture_output=True, text=True, env=self.env, timeout=240)
        p.seconds = time.monotonic() - t0
        return p

    def leftovers(self):
        """Processes of this test's cellbox (its environment names self.tmp): the proxy too."""
        pids = []
        for pid in filter(str.isdigit, os.listdir('/proc')):
            try:
                with open('/proc/%s/environ' % pid, 'rb') as f:
                    if self.tmp.encode() in f.read():
                        pids.append(int(pid))
            except OSError:
                pass
        return pids

    def assert_none_left(self):
        # A moment for what ends just after (lastclose.h: a grandchild's last close).
        deadline = time.monotonic() + 10
        while self.leftovers() and time.monotonic() < deadline:
            time.sleep(0.1)
        self.assertEqual(self.leftovers(), [])

    def lines(self, p):
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        for bad in ('Sanitizer', 'runtime error:'):     # the proxy's, in an ASan build
            self.assertNotIn(bad, p.stderr)
        return p.stdout.splitlines()

    def test_allowed_and_refused(self):
        p = self.run_cell('allow:%s:8000' % A, '\n'.join([
            'print(fetch("http://%s:8000/one"))' % A,
            'print(fetch("http://%s:8000/two"))' % B,
            'print(tunnel("%s", 8000))' % A,
            'print(tunnel("%s", 8000))' % B,
            'import socket',
            'try:',
            '    socket.create_connection(("%s", 8000), timeout=5); print("direct: reached")' % A,
            'except OSError as e:',
            '    print("direct: refused")',
        ]))
        out = self.lines(p)
        self.assertEqual(out[0], 'server-a /one')
        self.assertEqual(out[1], "HTTPError: HTTP Error 403: cellbox egress: %s:8000 is not "
                         "on the sandbox's allow-list" % B)
        self.assertEqual(out[2], 'server-a /tunnel')
        self.assertIn("Tunnel connection failed: 403 cellbox egress: %s:8000 is not on the "
                      "sandbox's allow-list" % B, out[3])
        self.assertEqual(out[4], 'direct: refused')     # no network but through the proxy
        self.assert_none_left()                         # the proxy ended with the run

    def test_cidr_and_port(self):
        p = self.run_cell('allow:10.203.%d.0/30,%s:9999' % (N, B), '\n'.join([
            'print(fetch("http://%s:8000/cidr"))' % A,
            'print(fetch("http://%s:8000/port"))' % B,
            'print(fetch("http://%s:9/closed"))' % A,
        ]))
        out = self.lines(p)
        self.assertEqual(out[0], 'server-a /cidr')
        self.assertIn('403: cellbox egress: %s:8000 is not on' % B, out[1])
        self.assertIn('502: cellbox egress: cannot connect to %s:9: Connection refused' % A,
                      out[2])

    def test_names_resolved_by_the_host(self):
        # Names from the operator's hosts file (--egress-hosts), then the host's resolver
        # (localhost, from the machine's /etc/hosts: a server of this test on its loopback).
        local = subprocess.Popen(['/usr/bin/python3', '-c',
                                  SERVER.replace('8000', 'int(sys.argv[3])'),
                                  '127.0.0.1', 'server-local', str(8000 + N)])
        try:
            Net.wait('127.0.0.1', 8000 + N)
            hosts = ("# the operator's names\n%s svc-a.cellbox.test  alias-a # a comment\n"
                     'not-an-address svc-b.cellbox.test\n%s svc-b.cellbox.test\n' % (A, B))
            p = self.run_cell('allow:svc-a.cellbox.test:8000,alias-a,'
                              'localhost:%d' % (8000 + N), '\n'.join([
                                  'print(fetch("http://svc-a.cellbox.test:8000/name"))',
                                  'print(tunnel("SVC-A.cellbox.test.", 8000))',
                                  'print(fetch("http://alias-a:8000/alias"))',
                                  'print(fetch("http://svc-b.cellbox.test:8000/name"))',
                                  'print(fetch("http://%s:8000/literal"))' % A,
                                  'print(fetch("http://localhost:%d/resolver"))' % (8000 + N),
                              ]), hosts=hosts)
        finally:
            local.kill()
            local.wait()
        out = self.lines(p)
        self.assertEqual(out[0], 'server-a /name')
        self.assertEqual(out[1], 'server-a /tunnel')
        self.assertEqual(out[2], 'server-a /alias')
        self.assertIn('403: cellbox egress: svc-b.cellbox.test:8000 is not on', out[3])
        self.assertIn('403: cellbox egress: %s:8000 is not on' % A, out[4])
        self.assertEqual(out[5], 'server-local /resolver')

    def test_hostile_cell(self):
        code = r'''
import socket, sys, time
path = sys.modules["_cellbox_runner"]._S.channel + "/host/egress.sock"
def ask(data, wait=10):
    s = socket.socket(socket.AF_UNIX)
    s.settimeout(wait)
    s.connect(path)
    try:
        s.sendall(data)
    except OSError:
        pass
    got = b""
    try:
        while b"\r\n" not in got:
            b = s.recv(4096)
            if not b:
                break
            got += b
    except OSError as e:
        got += repr(e).encode()
    s.close()
    return got.split(b"\r\n")[0].decode("ascii", "replace")
print("bad:", ask(b"CONNECT nohost HTTP/1.1\r\n\r\n"))
print("garbage:", ask(b"\x00\xff\xfe junk\r\n\r\n"))
print("https-url:", ask(b"GET https://%(a)s/ HTTP/1.1\r\n\r\n"))
print("userinfo:", ask(b"GET http://%(a)s:8000@%(b)s:8000/ HTTP/1.1\r\n\r\n"))
t0 = time.monotonic()
print("huge:", ask(b"GET http://%(a)s:8000/ HTTP/1.1\r\nX: " + b"a" * 200000 + b"\r\n\r\n"))
print("huge-secs:", round(time.monotonic() - t0))
slow = socket.socket(socket.AF_UNIX)
slow.connect(path)
slow.sendall(b"GET http://%(a)s:8000/slow HTTP/1.1\r\n")    # and never the rest
print("beside-slow:", fetch("http://%(a)s:8000/beside"))
slow.settimeout(20)
t0 = time.monotonic()
print("slow:", slow.recv(200).split(b"\r\n")[0].decode())
print("slow-secs:", round(time.monotonic() - t0))
slow.close()
time.sleep(0.2)
flood = []
for i in range(200):
    s = socket.socket(socket.AF_UNIX)
    s.connect(path)
    flood.append(s)
busy, waiting, deadline = 0, list(flood), time.monotonic() + 10
for s in flood:
    s.setblocking(False)
while busy < 200 - 64 and time.monotonic() < deadline:     # a loaded machine may be slow
    time.sleep(0.05)
    for s in list(waiting):
        try:
            busy += s.recv(100).startswith(b"HTTP/1.1 503")
            waiting.remove(s)
        except BlockingIOError:
            pass
time.sleep(0.3)                                             # and no more than that
for s in waiting:
    try:
        busy += s.recv(100).startswith(b"HTTP/1.1 503")
    except BlockingIOError:
        pass
print("flood-busy:", busy)
print("during:", fetch("http://%(a)s:8000/during"))
for s in flood:
    s.close()
time.sleep(0.5)
print("after:", fetch("http://%(a)s:8000/after"))
''' % {'a': A, 'b': B}
        p = self.run_cell('allow:%s:8000' % A, code)
        out = dict(line.split(': ', 1) for line in self.lines(p) if ': ' in line)
        self.assertEqual(out['bad'], 'HTTP/1.1 400 cellbox egress: CONNECT needs host:port')
        self.assertEqual(out['garbage'], 'HTTP/1.1 400 cellbox egress: not an HTTP request line')
        self.assertIn('400 cellbox egress: the proxy serves CONNECT and http:// URLs',
                      out['https-url'])
        self.assertIn('400 cellbox egress: a bad host in the URL', out['userinfo'])
        self.assertEqual(out['huge'], 'HTTP/1.1 431 cellbox egress: the request head is over '
                         '8192 bytes')
        self.assertLessEqual(int(out['huge-secs']), 3)
        self.assertEqual(out['beside-slow'], 'server-a /beside')    # one slow head stops none
        self.assertEqual(out['slow'], 'HTTP/1.1 408 cellbox egress: no request head within 10 s')
        self.assertLessEqual(int(out['slow-secs']), 12)
        self.assertEqual(int(out['flood-busy']), 200 - 64)     # the cap, the rest answered
        self.assertIn('503', out['during'])                     # this sandbox's own flood
        self.assertEqual(out['after'], 'server-a /after')

    def test_named_session(self):
        # The proxy lives in the session's host process: a front end that attaches later
        # reaches the server through it, and `cellbox kill` leaves nothing behind.
        code = 'print(fetch("http://%s:8000/%%s"))\n' % A
        name = 'egress%d' % os.getpid()
        args = [BIN, 'repl', '--name', name, '--backend', 'docker', '--network',
                'allow:%s:8000' % A] + (['--runtime', RUNTIME] if RUNTIME else [])
        try:
            first = subprocess.run(args, input=FETCH + code % 'first', capture_output=True,
                                   text=True, env=self.env, timeout=120)
            again = subprocess.run([BIN, 'repl', '--attach', name],
                                   input=code % 'again' + 'print(fetch("http://%s:8000/"))\n' % B,
                                   capture_output=True, text=True, env=self.env, timeout=120)
        finally:
            subprocess.run([BIN, 'kill', name], capture_output=True, env=self.env, timeout=60)
        self.assertIn('server-a /first', first.stdout, first.stderr)
        self.assertIn('server-a /again', again.stdout, again.stderr)
        self.assertIn("403: cellbox egress: %s:8000 is not on the sandbox's allow-list" % B,
                      again.stdout)
        self.assert_none_left()

    def test_pool_says_it_does_not(self):
        # A pooled container is handed to another process than the one that started its
        # proxy: the daemon refuses the list rather than hand out kernels with no way out.
        p = subprocess.run([BIN, 'pool', 'serve', '--backend', 'docker', '--network',
                            'allow:%s:8000' % A], capture_output=True, text=True,
                           env=self.env, timeout=60)
        self.assertNotEqual(p.returncode, 0)
        self.assertIn('a pool does not serve a network allow-list', p.stderr)

    @unittest.skipUnless(RUNTIME.startswith('runsc'), 'gVisor only')
    def test_runsc_without_host_uds_says_why(self):
        p = self.run_cell('allow:%s:8000' % A, 'print(fetch("http://%s:8000/x"))' % A,
                          runtime='runsc')
        out = self.lines(p)
        self.assertIn("502: cellbox egress: cannot reach the host's proxy: Operation not "
                      "permitted (gVisor: the runtime needs --host-uds=open", out[0])


if __name__ == '__main__':
    if len(sys.argv) == 2 and not sys.argv[1].startswith('-'):
        sys.argv[1] = 'EgressTest.test_' + sys.argv[1]
    unittest.main(verbosity=2)
