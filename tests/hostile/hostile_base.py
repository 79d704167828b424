"""What the hostile cases share: settings, the attacking cell's prelude, the helpers that
look from the host, and Base (a temporary home for one case). See test_hostile.py."""
import base64
import glob
import json
import os
import shutil
import socket
import stat
import subprocess
import tempfile
import unittest

BIN = os.environ.get('CELLBOX_BIN', 'cellbox')
PYTHON = os.environ.get('CELLBOX_TEST_PYTHON', '/usr/bin/python3')
RUNTIME = os.environ.get('CELLBOX_TEST_RUNTIME', '')
# 'stream': the container's channel over the engine's attach stream (the relay), not shared.
CHANNEL = os.environ.get('CELLBOX_TEST_CHANNEL', '')
SKIP = 77

# What every attacking cell starts with: where its channel is, what it may write there, and
# the names the host would use next if ids could be guessed (as they could: 0000000001, ...).
PRELUDE = r'''
import os, sys, json, glob, stat, threading, time
import _cellbox_runner as R
CH = sys.argv[1]
def writable_dirs():
    out = []
    for root, dirs, files in os.walk(CH):
        if os.access(root, os.W_OK):
            out.append(root)
    return out
def next_ids(n=20):
    cur = R._S.req_id
    seq = int(cur[:10])
    rest = cur[10:]
    ids = []
    for k in range(1, n + 1):
        ids.append('%010d' % (seq + k))
        ids.append('%010d%s' % (seq + k, rest))
    return ids
def plant(path, how, target=None):
    try:
        if os.path.lexists(path):
            os.unlink(path)
    except OSError:
        pass
    try:
        if how == 'symlink':
            os.symlink(target, path)
        elif how == 'fifo':
            os.mkfifo(path)
        elif how == 'link':
            os.link(target, path)
        return True
    except OSError:
        return False
'''


def docker_get(path):
    """The JSON answer of dockerd's Engine API to GET `path`, through DOCKER_HOST's socket."""
    host = os.environ.get('DOCKER_HOST', 'unix:///var/run/docker.sock')[len('unix://'):]
    s = socket.socket(socket.AF_UNIX)
    s.settimeout(10)
    s.connect(host)
    s.sendall(('GET %s HTTP/1.0\r\nHost: docker\r\n\r\n' % path).encode())
    data = b''
    while True:
        chunk = s.recv(65536)
        if not chunk:
            break
        data += chunk
    s.close()
    return json.loads(data.split(b'\r\n\r\n', 1)[1])


def docker_skip_reason():
    """Why the docker cases cannot run here, or None."""
    host = os.environ.get('DOCKER_HOST', 'unix:///var/run/docker.sock')
    if not host.startswith('unix://'):
        return 'only a unix DOCKER_HOST is supported here'
    try:
        info = docker_get('/info')
    except (OSError, ValueError, IndexError) as e:
        return 'no docker daemon at %s (%s)' % (host, e)
    if RUNTIME and RUNTIME not in (info.get('Runtimes') or {}):
        return 'dockerd has no runtime %r (configure it in /etc/docker/daemon.json)' % RUNTIME
    p = subprocess.run([BIN, 'run', '--backend', 'docker', '--help'], capture_output=True,
                       text=True)
    image = os.environ.get('CELLBOX_IMAGE') or ''
    if not image:
        for line in p.stdout.splitlines():
            if '--image' in line and 'default ' in line:
                image = line.split('default ', 1)[1].split(',')[0].rstrip(')').strip()
    try:
        s = socket.socket(socket.AF_UNIX)
        s.connect(host[len('unix://'):])
        s.sendall(('GET /images/%s/json HTTP/1.0\r\nHost: docker\r\n\r\n' % image).encode())
        head = s.recv(64)
        s.close()
    except OSError as e:
        return 'cannot ask dockerd about the image: %s' % e
    if b' 200 ' not in head:
        return 'no image %s (scripts/build-image builds it)' % image
    return None


def tree_bytes(path):
    """Bytes of disk the files below `path` take (st_blocks), across mounts, never following."""
    total = 0
    for root, dirs, files in os.walk(path):
        for name in dirs + files:
            try:
                total += os.lstat(os.path.join(root, name)).st_blocks * 512
            except OSError:
                pass
    return total


def files_containing(top, needle):
    """Files below `top` whose bytes contain `needle`."""
    hits = []
    for root, dirs, files in os.walk(top):
        for name in files:
            p = os.path.join(root, name)
            try:
                st = os.lstat(p)
                if not stat.S_ISREG(st.st_mode):
                    continue
                with open(p, 'rb') as f:
                    if needle in f.read():
                        hits.append(p)
            except OSError:
                pass
    return hits


class Base(unittest.TestCase):
    """A temporary home for one case: settings, a secret and a victim file of the host's."""
    backend = 'docker'

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix='cellbox-hostile-')
        os.chmod(self.tmp, 0o755)      # the victim files below are the host's, readable by root
        self.run_dir = os.path.join(self.tmp, 'run')
        self.state = os.path.join(self.tmp, 'state')
        env = {k: v for k, v in os.environ.items()
               if not k.startswith('CELLBOX_') and not k.startswith('SANDBOX_')}
        env.update(XDG_CONFIG_HOME=os.path.join(self.tmp, 'config'), XDG_STATE_HOME=self.state,
                   CELLBOX_RUNTIME_DIR=self.run_dir, CELLBOX_PYTHON=PYTHON, TERM='dumb',
                   CELLBOX_BACKEND=self.backend)
        if RUNTIME:
            env['CELLBOX_RUNTIME'] = RUNTIME
        if CHANNEL:
            env['CELLBOX_CHANNEL'] = CHANNEL
        for k in ('CELLBOX_IMAGE', 'DOCKER_HOST'):
            if os.environ.get(k):
                env[k] = os.environ[k]
        self.env = env
        # A root-only secret and a root-owned file an attack would overwrite and give away.
        self.secret = ('SECRET-%s' % base64.b32encode(os.urandom(10)).decode()).encode()
        self.secret_path = os.path.join(self.tmp, 'secret')
        with open(self.secret_path, 'wb') as f:
            f.write(self.secret + b'\n')
        os.chmod(self.secret_path, 0o600)
        self.victim = os.path.join(self.tmp, 'victim')
        with open(self.victim, 'w') as f:
            f.write('the host file, as it was\n')
        os.chmod(self.victim, 0o644)
        self.victim_stat = os.stat(self.victim)

    def tearDown(self):
        subprocess.run([BIN, 'gc', '--backend', self.backend], env=self.env,
                       capture_output=True)
        shutil.rmtree(self.tmp, ignore_errors=True)

    # -- helpers

    def cellbox(self, *args, stdin=None, timeout=180, env=None, allow_hang=False):
        """Run cellbox; a hang is a failure of the wall (it must never wait on the kernel).
        With `allow_hang`, a hang gives None (the caller checks other things first)."""
        try:
            return subprocess.run([BIN, *args], input=stdin, capture_output=True, text=True,
                                  env=env or self.env, timeout=timeout)
        except subprocess.TimeoutExpired as e:
            if allow_hang:
                return None
            self.fail('cellbox %s hung past %d s (stdout %r, stderr %r)'
                      % (' '.join(args)[:80], timeout, (e.stdout or b'')[-400:],
                         (e.stderr or b'')[-400:]))

    def repl(self, *cells, args=(), timeout=180, env=None, allow_hang=False):
        """Cells through `cellbox repl` on a pipe, each one line (a longer one is exec'd)."""
        text = ''.join((c if '\n' not in c.strip() else 'exec(%r)' % c).strip() + '\n\n'
                       for c in cells)
        return self.cellbox('repl', *args, stdin=text, timeout=timeout, env=env,
                            allow_hang=allow_hang)

    def attack(self, body):
        return PRELUDE + body

    def assertVictimIntact(self):
        st = os.lstat(self.victim)
        self.assertTrue(stat.S_ISREG(st.st_mode), 'the victim was replaced')
        with open(self.victim) as f:
            self.assertEqual(f.read(), 'the host file, as it was\n', 'the victim was written')
        self.assertEqual((st.st_uid, st.st_gid), (0, 0), 'the victim was given away (chown)')
        self.assertEqual(st.st_mode, self.victim_stat.st_mode, 'the victim changed mode')
        with open(self.secret_path, 'rb') as f:
            self.assertEqual(f.read(), self.secret + b'\n')

    def assertNoLeak(self, *texts, dirs=()):
        for t in texts:
            if isinstance(t, str):
                t = t.encode()
            self.assertNotIn(self.secret, t, 'the secret leaked into the output')
        for d in (self.state,) + tuple(dirs):
            self.assertEqual(files_containing(d, self.secret), [],
                             'the secret leaked into files of the host')

    def history_cells(self):
        cells = []
        for path in glob.glob(os.path.join(self.state, 'cellbox', 'sessions', '*',
                                           'history.jsonl')):
            with open(path) as f:
                cells += [json.loads(line) for line in f if line.strip()]
        return cells
