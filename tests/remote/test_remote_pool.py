"""A pool over two engines: `cellbox pool serve --engine A --engine B` with A and B two test
engines of scripts/test-engine (each a dockerd in a mount namespace of its own, reached over
TLS on loopback; B made with A's certificates, so one client certificate reaches both).

The pool places its kernels on both, serves leases from both, takes B out when B stops (its
kernels die with it; new ones go to A) and back in when B answers again.

    python3 tests/remote/test_remote_pool.py
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_remote import ENGINE, OURS, engine, skip_reason  # noqa: E402

BIN = os.environ.get('CELLBOX_BIN', os.path.join(os.path.dirname(__file__), '..', '..', 'build',
                                                 'tui', 'cellbox'))
STATE = os.environ.get('CELLBOX_TEST_ENGINE_ROOT', '/var/lib/cellbox-test-engine')
B = 'remote2'
HOSTNAME = 'import socket, time; print("host", socket.gethostname(), flush=True); time.sleep(%s)'


def engine_b():
    """The second engine's environment, started (with the first's certificates) if needed."""
    a = engine()
    certs = os.path.join(STATE, B, 'certs')
    if not os.path.exists(os.path.join(certs, 'client', 'cert.pem')):
        os.makedirs(os.path.join(STATE, B), mode=0o700, exist_ok=True)
        shutil.rmtree(certs, ignore_errors=True)
        shutil.copytree(os.path.dirname(a['DOCKER_CERT_PATH'].rstrip('/')), certs)
    t0 = time.monotonic()
    subprocess.run([ENGINE, 'start', B], check=True, capture_output=True, timeout=900)
    print('# test-engine start %s took %.1f s' % (B, time.monotonic() - t0), file=sys.stderr)
    p = subprocess.run([ENGINE, 'env', B], capture_output=True, text=True, check=True)
    return dict(line.partition('=')[::2] for line in p.stdout.splitlines())


def containers(env, host):
    """The ids of the running containers of engine `host`."""
    p = subprocess.run(['docker', '-H', host, '--tlsverify', 'ps', '-q', '--no-trunc'],
                       capture_output=True, text=True, timeout=60, env=env)
    return set(p.stdout.split()) if p.returncode == 0 else set()


class TwoEngines(unittest.TestCase):
    def setUp(self):
        why = skip_reason()
        if why:
            self.skipTest(why)
        a = engine()
        b = engine_b()
        self.a, self.b = a['DOCKER_HOST'], b['DOCKER_HOST']
        self.tmp = tempfile.mkdtemp(prefix='cellbox-rpool-')
        env = {k: v for k, v in os.environ.items()
               if k not in OURS and not k.startswith('CELLBOX_')}
        env.update(XDG_CONFIG_HOME=os.path.join(self.tmp, 'config'),
                   XDG_STATE_HOME=os.path.join(self.tmp, 'state'), TERM='dumb',
                   CELLBOX_RUNTIME_DIR=os.path.join(self.tmp, 'run'), CELLBOX_BACKEND='docker',
                   DOCKER_CONFIG=os.path.join(self.tmp, 'docker'),
                   DOCKER_TLS_VERIFY='1', DOCKER_CERT_PATH=a['DOCKER_CERT_PATH'])
        self.env = env

    def tearDown(self):
        if hasattr(self, 'env'):
            self.cellbox('pool', 'stop', timeout=120)
            subprocess.run([ENGINE, 'start', B], capture_output=True, timeout=900)
            shutil.rmtree(self.tmp, ignore_errors=True)

    def cellbox(self, *args, timeout=180):
        return subprocess.run([BIN, *args], env=self.env, capture_output=True, text=True,
                              timeout=timeout)

    def status(self):
        p = self.cellbox('pool', 'status', '--json')
        return json.loads(p.stdout) if p.stdout.strip() else {}

    def wait_for(self, what, cond, timeout=180):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            st = self.status()
            if cond(st):
                return st
            time.sleep(0.5)
        self.fail('%s: not within %d s: %s\n%s' % (what, timeout, json.dumps(self.status()),
                                                   self.log()))

    def log(self):
        p = os.path.join(self.tmp, 'run', 'pool', 'default', 'daemon.log')
        try:
            with open(p) as f:
                return f.read()[-4000:]
        except OSError:
            return '(no daemon.log at %s)' % p

    def engines(self, st):
        return {e['host']: e for e in st.get('daemon', {}).get('engines', [])}

    def lease_hosts(self, n, hold):
        """Run n pooled cells at once, each holding its kernel `hold` s: their host names."""
        ps = [subprocess.Popen([BIN, 'run', '--pool', '--pool-timeout', '120', '-c',
                                HOSTNAME % hold], env=self.env, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True) for _ in range(n)]
        hosts = []
        for p in ps:
            out, err = p.communicate(timeout=300)
            self.assertEqual(p.returncode, 0, err + self.log())
            hosts += [line.split()[1] for line in out.splitlines() if line.startswith('host ')]
        return hosts

    def test_two_engines(self):
        p = self.cellbox('pool', 'serve', '--engine', self.a, '--engine', self.b, '--min', '2',
                         '--max', '4', '--health-interval', '2', '--detach', timeout=300)
        self.assertEqual(p.returncode, 0, p.stderr)
        st = self.wait_for('two ready kernels and both engines in',
                           lambda s: len(s.get('ready', [])) >= 2 and
                           all(e['up'] for e in self.engines(s).values()) and
                           len(self.engines(s)) == 2)
        human = self.cellbox('pool', 'status').stdout
        self.assertIn('engine %s: in' % self.a, human)
        # Placed on both: two ready kernels, one on each (each has room for as many).
        ids_a, ids_b = containers(self.env, self.a), containers(self.env, self.b)
        ready = {k['container'] for k in st['ready']}
        self.assertTrue(ready & ids_a and ready & ids_b, (ready, ids_a, ids_b, self.log()))
        # Leases from both: four at once, as many as max.
        hosts = self.lease_hosts(4, 4)
        self.assertEqual(len(hosts), 4)
        on_a = [h for h in hosts if any(c.startswith(h) for c in containers(self.env, self.a)
                                        | ids_a)]
        self.assertTrue(0 < len(on_a) < 4, (hosts, on_a, self.log()))

        # B stops: its kernels die with it; the pool takes it out and serves from A.
        subprocess.run([ENGINE, 'stop', B], check=True, capture_output=True, timeout=300)
        # (B runs nothing now: every cell that runs, runs on A)
        for i in range(3):
            p = self.cellbox('run', '--pool', '--pool-timeout', '120', '-c', HOSTNAME % 0,
                             timeout=300)
            self.assertEqual(p.returncode, 0, p.stderr + self.log())
            self.assertIn('host ', p.stdout)
        self.wait_for('B taken out', lambda s: not self.engines(s)[self.b]['up'])
        # B answers again: the pool takes it back in.
        subprocess.run([ENGINE, 'start', B], check=True, capture_output=True, timeout=900)
        self.wait_for('B back in', lambda s: self.engines(s)[self.b]['up'], timeout=150)


if __name__ == '__main__':
    unittest.main()
