"""The docker client against a remote engine: a second dockerd in a mount namespace of its own
(scripts/test-engine, started here when it is not running) reached over TLS and over ssh, the
errors people meet (wrong CA, no client certificate, an unknown host key, no engine), docker
contexts, and hostile "engines" on loopback that answer garbage or nothing.

The client is tests/remote/remote_client.c on engine/docker*.c. Every case is skipped, with the
reason, when the machine cannot run the engine (not root, no dockerd, sshd, openssl, or no
kernel image in the local engine).

    python3 tests/remote/test_remote.py [TlsTest ...]
"""
import hashlib
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
CLIENT = os.environ.get('REMOTE_CLIENT', os.path.join(ROOT, 'build', 'tests', 'remote_client'))
ENGINE = os.environ.get('TEST_ENGINE', os.path.join(ROOT, 'scripts', 'test-engine'))
IMAGE = 'cellbox-python:p2'
# Variables of ours and docker's that must not leak in from the caller's environment.
OURS = ('DOCKER_HOST', 'DOCKER_TLS_VERIFY', 'DOCKER_TLS', 'DOCKER_CERT_PATH', 'DOCKER_CONTEXT',
        'DOCKER_CONFIG', 'CELLBOX_SSH_CONFIG', 'CELLBOX_DOCKER_HOST')


def skip_reason():
    if os.geteuid() != 0:
        return 'needs root (the test engine is a dockerd of its own)'
    for prog in ('dockerd', 'docker', 'openssl', 'unshare', 'ssh', 'ssh-keygen'):
        if not shutil.which(prog):
            return 'no %s on this machine' % prog
    if not os.access('/usr/sbin/sshd', os.X_OK):
        return 'no sshd (apt-get install openssh-server)'
    if not os.access(CLIENT, os.X_OK):
        return 'no %s (build it: ninja -C build)' % CLIENT
    p = subprocess.run(['docker', 'image', 'inspect', IMAGE], capture_output=True)
    if p.returncode != 0:
        return 'no %s in the local engine (scripts/build-image)' % IMAGE
    return None


_engine = {}


def engine():
    """The test engine's environment lines (KEY -> value), starting it when needed."""
    if not _engine:
        t0 = time.monotonic()
        p = subprocess.run([ENGINE, 'start'], capture_output=True, text=True, timeout=900)
        if p.returncode != 0:
            raise RuntimeError('test-engine start failed: %s' % p.stderr)
        print('# test-engine start took %.1f s' % (time.monotonic() - t0), file=sys.stderr)
        p = subprocess.run([ENGINE, 'env'], capture_output=True, text=True, check=True)
        for line in p.stdout.splitlines():
            k, _, v = line.partition('=')
            _engine[k] = v
    return _engine


def client(args, timeout=120, **env):
    """Run remote_client with only `env` of ours set: (exit code, output, seconds)."""
    e = {k: v for k, v in os.environ.items() if k not in OURS}
    e['DOCKER_CONFIG'] = e.get('REMOTE_EMPTY_CONFIG') or tempfile.mkdtemp(prefix='cbx-dcfg-')
    e.update({k: v for k, v in env.items() if v is not None})
    t0 = time.monotonic()
    p = subprocess.run([CLIENT] + args, env=e, capture_output=True, text=True,
                       stdin=subprocess.DEVNULL, timeout=timeout)
    out = p.stdout + p.stderr
    print('# %s -> %s' % (' '.join(args), out.strip()), file=sys.stderr)
    return p.returncode, out, time.monotonic() - t0


def tls_env(**over):
    e = engine()
    env = {'DOCKER_HOST': e['DOCKER_HOST'], 'DOCKER_TLS_VERIFY': '1',
           'DOCKER_CERT_PATH': e['DOCKER_CERT_PATH']}
    env.update(over)
    return env


def ssh_env(**over):
    e = engine()
    env = {'DOCKER_HOST': e['CELLBOX_TEST_SSH_HOST'], 'CELLBOX_SSH_CONFIG': e['CELLBOX_SSH_CONFIG']}
    env.update(over)
    return env


def ssh_children(config):
    """Processes (pid, state) whose command line names the ssh config `config`."""
    found = []
    for pid in os.listdir('/proc'):
        if not pid.isdigit():
            continue
        try:
            with open('/proc/%s/cmdline' % pid, 'rb') as f:
                cmd = f.read().split(b'\0')
            with open('/proc/%s/stat' % pid) as f:
                state = f.read().rsplit(')', 1)[1].split()[0]
        except OSError:
            continue
        if cmd and os.path.basename(cmd[0]) == b'ssh' and config.encode() in cmd:
            found.append((int(pid), state))
    return found


class Base(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        why = skip_reason()
        if why:
            raise unittest.SkipTest(why)


class TlsTest(Base):
    def test_ping(self):
        rc, out, _ = client(['ping'], **tls_env())
        self.assertEqual(rc, 0, out)
        self.assertIn('api 1.', out)
        self.assertIn(engine()['DOCKER_HOST'], out)

    def test_attach_and_wait(self):
        """A raw attach (stdin) and a raw wait, both through the TLS pump."""
        rc, out, _ = client(['attach', IMAGE], **tls_env())
        self.assertEqual(rc, 0, out)
        self.assertIn('exit 7', out)

    def test_engine_is_remote(self):
        """The engine cannot see the client's files: a bind mount of one fails there."""
        with tempfile.TemporaryDirectory(prefix='cbx-client-') as d:
            rc, out, _ = client(['bind', d, IMAGE], **tls_env())
        self.assertEqual(rc, 0, out)
        self.assertIn('refused', out)
        self.assertIn('does not exist', out)

    def test_pump_latency(self):
        """A raw round trip through the pump, beside the same TLS connection without it."""
        rc, out, _ = client(['bench', '300'], **tls_env())
        self.assertEqual(rc, 0, out)
        pump = int(out.split()[1])
        rc, out, _ = client(['bench-direct', '300'], **tls_env())
        self.assertEqual(rc, 0, out)
        direct = int(out.split()[1])
        print('# GET /_ping round trip, median: pump %d us, direct TLS %d us' % (pump, direct),
              file=sys.stderr)
        self.assertLess(pump, 2000)


class SshTest(Base):
    def test_ping(self):
        rc, out, _ = client(['ping'], **ssh_env())
        self.assertEqual(rc, 0, out)
        self.assertIn('api 1.', out)
        self.assertIn('host ssh://', out)

    def test_attach_and_wait(self):
        rc, out, _ = client(['attach', IMAGE], **ssh_env())
        self.assertEqual(rc, 0, out)
        self.assertIn('exit 7', out)

    def test_no_children_left(self):
        """Every ssh child is reaped and gone when the client has released the engine."""
        cfg = engine()['CELLBOX_SSH_CONFIG']
        before = {p for p, _ in ssh_children(cfg)}
        rc, out, _ = client(['attach', IMAGE], **ssh_env())
        self.assertEqual(rc, 0, out)
        self.assertIn('children: none', out)
        left = [(p, s) for p, s in ssh_children(cfg) if p not in before]
        self.assertEqual(left, [])


class ErrorsTest(Base):
    def test_wrong_ca(self):
        rc, out, _ = client(['ping'], **tls_env(DOCKER_CERT_PATH=engine()['CELLBOX_TEST_WRONG_CA']))
        self.assertEqual(rc, 1, out)
        self.assertIn('TLS verification failed', out)
        self.assertIn('not signed by the CA', out)
        self.assertIn(engine()['DOCKER_HOST'], out)

    def test_no_client_certificate(self):
        rc, out, _ = client(['ping'],
                            **tls_env(DOCKER_CERT_PATH=engine()['CELLBOX_TEST_NO_CLIENT']))
        self.assertEqual(rc, 1, out)
        self.assertIn('wants a client certificate and there is none', out)

    def test_missing_ca_file(self):
        with tempfile.TemporaryDirectory() as d:
            rc, out, _ = client(['ping'], **tls_env(DOCKER_CERT_PATH=d))
        self.assertEqual(rc, 1, out)
        self.assertIn('no CA certificate %s/ca.pem' % d, out)

    def test_plain_http_to_tls(self):
        rc, out, _ = client(['ping'], **tls_env(DOCKER_TLS_VERIFY=None))
        self.assertEqual(rc, 1, out)
        self.assertIn('speaks TLS', out)

    def test_refused(self):
        s = socket.socket()
        s.bind(('127.0.0.1', 0))
        port = s.getsockname()[1]
        s.close()
        rc, out, _ = client(['ping'], DOCKER_HOST='tcp://127.0.0.1:%d' % port)
        self.assertEqual(rc, 1, out)
        self.assertIn('no docker engine answers at tcp://127.0.0.1:%d' % port, out)

    def test_unknown_host_key(self):
        """BatchMode: no question, an answer within seconds naming the host key."""
        rc, out, secs = client(['ping'], timeout=60, **ssh_env(
            CELLBOX_SSH_CONFIG=engine()['CELLBOX_TEST_SSH_UNKNOWN_CONFIG']))
        self.assertEqual(rc, 1, out)
        self.assertIn('ssh to %s failed' % engine()['CELLBOX_TEST_SSH_HOST'], out)
        self.assertIn('host key', out)
        self.assertLess(secs, 30)

    def test_unsupported_scheme(self):
        rc, out, _ = client(['ping'], DOCKER_HOST='npipe:////./pipe/docker_engine')
        self.assertEqual(rc, 1, out)
        self.assertIn("unsupported docker host 'npipe:", out)


def make_context(config_dir, name, host, tls_from=None, skip_verify=False, current=True):
    """A docker context as `docker context create` writes it, in `config_dir`."""
    digest = hashlib.sha256(name.encode()).hexdigest()
    meta = os.path.join(config_dir, 'contexts', 'meta', digest)
    os.makedirs(meta)
    with open(os.path.join(meta, 'meta.json'), 'w') as f:
        json.dump({'Name': name, 'Metadata': {},
                   'Endpoints': {'docker': {'Host': host, 'SkipTLSVerify': skip_verify}}}, f)
    if tls_from:
        tls = os.path.join(config_dir, 'contexts', 'tls', digest, 'docker')
        os.makedirs(tls)
        for pem in ('ca.pem', 'cert.pem', 'key.pem'):
            shutil.copy(os.path.join(tls_from, pem), tls)
    if current:
        with open(os.path.join(config_dir, 'config.json'), 'w') as f:
            json.dump({'auths': {}, 'currentContext': name}, f)


class ContextTest(Base):
    def test_current_context_tls(self):
        with tempfile.TemporaryDirectory() as cfg:
            make_context(cfg, 'cbx-remote', engine()['DOCKER_HOST'],
                         tls_from=engine()['DOCKER_CERT_PATH'])
            rc, out, _ = client(['ping'], DOCKER_CONFIG=cfg)
        self.assertEqual(rc, 0, out)
        self.assertIn('host %s' % engine()['DOCKER_HOST'], out)

    def test_docker_context_env_ssh(self):
        with tempfile.TemporaryDirectory() as cfg:
            make_context(cfg, 'cbx-ssh', engine()['CELLBOX_TEST_SSH_HOST'], current=False)
            rc, out, _ = client(['ping'], DOCKER_CONFIG=cfg, DOCKER_CONTEXT='cbx-ssh',
                                CELLBOX_SSH_CONFIG=engine()['CELLBOX_SSH_CONFIG'])
        self.assertEqual(rc, 0, out)
        self.assertIn('host ssh://', out)

    def test_docker_host_wins_over_context(self):
        with tempfile.TemporaryDirectory() as cfg:
            make_context(cfg, 'cbx-remote', 'tcp://127.0.0.1:1')
            rc, out, _ = client(['ping'], DOCKER_CONFIG=cfg, **tls_env())
        self.assertEqual(rc, 0, out)

    def test_missing_context(self):
        with tempfile.TemporaryDirectory() as cfg:
            rc, out, _ = client(['ping'], DOCKER_CONFIG=cfg, DOCKER_CONTEXT='nothere')
        self.assertEqual(rc, 1, out)
        self.assertIn("docker context 'nothere' not found", out)

    def test_context_without_ca_is_not_verified_against_it(self):
        """A context whose TLS files are another CA's: the engine's certificate is refused."""
        e = engine()
        with tempfile.TemporaryDirectory() as cfg:
            make_context(cfg, 'cbx-wrong', e['DOCKER_HOST'], tls_from=e['CELLBOX_TEST_WRONG_CA'])
            rc, out, _ = client(['ping'], DOCKER_CONFIG=cfg)
        self.assertEqual(rc, 1, out)
        self.assertIn('TLS verification failed', out)


class Hostile(threading.Thread):
    """A loopback "engine" that answers each connection with `reply` (None: nothing, ever)."""

    def __init__(self, reply):
        super().__init__(daemon=True)
        self.reply = reply
        self.sock = socket.socket()
        self.sock.bind(('127.0.0.1', 0))
        self.sock.listen(8)
        self.port = self.sock.getsockname()[1]
        self.conns = []

    def run(self):
        while True:
            try:
                c, _ = self.sock.accept()
            except OSError:
                return
            self.conns.append(c)
            if self.reply is not None:
                try:
                    c.sendall(self.reply)
                except OSError:
                    pass

    def close(self):
        self.sock.close()
        for c in self.conns:
            c.close()


class HostileTest(unittest.TestCase):
    """No engine needed: the client must give up within its ping timeout (15 s), never hang."""

    def check(self, reply, tls):
        h = Hostile(reply)
        h.start()
        env = {'DOCKER_HOST': 'tcp://127.0.0.1:%d' % h.port}
        d = tempfile.mkdtemp()
        if tls:
            # Any CA will do: the server never gets as far as showing a certificate.
            subprocess.run(['openssl', 'req', '-x509', '-newkey', 'ec', '-pkeyopt',
                            'ec_paramgen_curve:prime256v1', '-nodes', '-subj', '/CN=x',
                            '-keyout', os.path.join(d, 'k.pem'), '-out',
                            os.path.join(d, 'ca.pem')], capture_output=True, check=True)
            env.update(DOCKER_TLS_VERIFY='1', DOCKER_CERT_PATH=d)
        try:
            rc, out, secs = client(['ping'], timeout=60, **env)
        finally:
            h.close()
            shutil.rmtree(d)
        self.assertEqual(rc, 1, out)
        self.assertIn('tcp://127.0.0.1:%d' % h.port, out)
        self.assertLess(secs, 25)
        return out

    @classmethod
    def setUpClass(cls):
        if not os.access(CLIENT, os.X_OK):
            raise unittest.SkipTest('no %s (build it: ninja -C build)' % CLIENT)

    def test_never_answers(self):
        self.check(None, tls=False)

    def test_never_answers_tls(self):
        self.check(None, tls=True)

    def test_garbage_head(self):
        self.check(b'\x00\xffNOT HTTP AT ALL\r\n' * 100 + b'\r\n\r\n', tls=False)

    def test_garbage_tls(self):
        self.check(b'HTTP/1.1 200 OK\r\nContent-Length: 99999999\r\n\r\n' + b'A' * 5000,
                   tls=True)

    def test_endless_head(self):
        """A head that never ends: headers forever."""
        self.check(b'HTTP/1.1 200 OK\r\n' + b'X-A: b\r\n' * 200000, tls=False)


class RemoteTest(Base):
    """The fixture itself: start is idempotent and fast, stop leaves nothing behind."""

    def test_start_twice_stop_start(self):
        engine()
        t0 = time.monotonic()
        subprocess.run([ENGINE, 'start'], check=True, capture_output=True, timeout=120)
        warm = time.monotonic() - t0
        print('# a second start (running): %.2f s' % warm, file=sys.stderr)
        self.assertLess(warm, 5)
        state = os.path.dirname(engine()['DOCKER_CERT_PATH'].rstrip('/'))  # .../NAME/certs
        state = os.path.dirname(state)
        with open(os.path.join(state, 'mntns')) as f:
            ns = f.read().strip()
        with open(os.path.join(state, 'dockerd.pid')) as f:
            pin = os.open('/proc/%s/ns/mnt' % f.read().strip(), os.O_RDONLY)
        try:
            # Held open, the namespace keeps its number: no namespace made meanwhile (another
            # engine's container) can have it and pass for one of its processes.
            self.assertEqual(_readlink('/proc/self/fd/%d' % pin), ns)
            subprocess.run([ENGINE, 'stop'], check=True, capture_output=True, timeout=120)
            alive = [p for p in os.listdir('/proc') if p.isdigit() and
                     os.path.exists('/proc/%s/ns/mnt' % p) and
                     _readlink('/proc/%s/ns/mnt' % p) == ns]
        finally:
            os.close(pin)
        self.assertEqual([(p, _describe(p)) for p in alive], [])
        with open('/proc/self/mounts') as f:
            self.assertNotIn(state, f.read())
        t0 = time.monotonic()
        subprocess.run([ENGINE, 'start'], check=True, capture_output=True, timeout=300)
        print('# start after stop (image kept on disk): %.2f s' % (time.monotonic() - t0),
              file=sys.stderr)
        rc, out, _ = client(['ping'], **tls_env())
        self.assertEqual(rc, 0, out)


class StopTest(unittest.TestCase):
    """`test-engine stop` of a stale state kills nothing (no engine needed)."""

    def test_stale_state_kills_nothing(self):
        """The state of an engine whose processes are gone (a reboot, a crash) names a
        namespace number that another namespace may have now, and pids other processes may
        have: stop leaves that namespace's processes alone (before: SIGKILL to each of them,
        as a container starting on the other engine met when its namespace got the number of
        one just stopped)."""
        if os.geteuid() != 0:
            self.skipTest('needs root (unshare -m)')
        root = tempfile.mkdtemp(prefix='cellbox-stop-')
        other = subprocess.Popen(['unshare', '-m', 'sleep', '60'])
        try:
            ns = None
            for _ in range(100):
                ns = _readlink('/proc/%d/ns/mnt' % other.pid)
                if ns and ns != _readlink('/proc/self/ns/mnt'):
                    break
                time.sleep(0.02)
            gone = subprocess.Popen(['true'])
            gone.wait()
            state = os.path.join(root, 'stale')
            os.makedirs(state)
            for name, text in (('mntns', ns), ('dockerd.pid', gone.pid),
                               ('sshd.pid', gone.pid)):
                with open(os.path.join(state, name), 'w') as f:
                    f.write('%s\n' % text)
            p = subprocess.run([ENGINE, 'stop', 'stale'], capture_output=True, text=True,
                               timeout=60, env=dict(os.environ, CELLBOX_TEST_ENGINE_ROOT=root))
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertIsNone(other.poll(), 'stop killed a process of another namespace')
            self.assertFalse(os.path.exists(os.path.join(state, 'mntns')))
        finally:
            other.kill()
            other.wait()
            shutil.rmtree(root, ignore_errors=True)


def _describe(pid):
    """What process `pid` is (its command line and state), for a failure's message."""
    try:
        with open('/proc/%s/cmdline' % pid, 'rb') as f:
            cmd = f.read().replace(b'\0', b' ').decode(errors='replace').strip()
        with open('/proc/%s/stat' % pid) as f:
            state = f.read().rsplit(')', 1)[1].split()[:2]      # state, parent
        return '%s (state %s, parent %s)' % (cmd, state[0], state[1])
    except OSError:
        return '(gone)'


def _readlink(p):
    try:
        return os.readlink(p)
    except OSError:
        return None


SKIP = 77    # meson's "skipped"


if __name__ == '__main__':
    # A class whose needs are missing reports the whole case skipped (exit 77) with the
    # reason, never passed; HostileTest needs only the client, StopTest only the script.
    names = sys.argv[1:]
    why = None
    if not os.access(CLIENT, os.X_OK):
        why = 'no %s (build it: ninja -C build)' % CLIENT
    elif names and all(n.split('.')[0] not in ('HostileTest', 'StopTest') for n in names):
        why = skip_reason()
    if why:
        print('SKIP: ' + why)
        sys.exit(SKIP)
    unittest.main(verbosity=2)
