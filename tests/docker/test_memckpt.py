"""Memory checkpoints under gVisor (engine/named_memckpt.c, engine/memckpt.h): a named session
under --runtime runsc is checkpointed with its memory, its dockerd restarted, and restored
with its variables (a random number a re-run could not make again); hostile checkpoint files
are refused with nothing written to the engine's data root.

The engine's checkpoint API needs dockerd --experimental, and the shared dockerd is not
started so, so the test starts its own: its data root, exec root, pid file and socket in the
test's temporary directory, its containerd namespace its own, no bridge or iptables, the
runsc runtime; the kernel image is copied into it from the shared engine (docker save | load,
45-60 s here, paid by each case meson runs). Skipped (exit 77, which meson counts as skipped,
not passed) with the reason without root, dockerd, runsc, docker or the image.

    tests/docker/test_memckpt.py [CASE]"""
import hashlib
import hmac
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest

CELLBOX = os.environ.get('CELLBOX_BIN', '')
IMAGE = 'cellbox-python:p2'
MAGIC = b'cellbox-memory-checkpoint 1\n'


class Engine:
    """A dockerd of the test's own, with the checkpoint API."""

    def __init__(self, top):
        self.top = top
        self.sock = os.path.join(top, 'docker.sock')
        self.root = os.path.join(top, 'data')
        self.config = os.path.join(top, 'daemon.json')
        with open(self.config, 'w') as f:
            json.dump({'experimental': True, 'runtimes': {'runsc': {
                'path': shutil.which('runsc'),
                'runtimeArgs': ['--platform=ptrace', '--network=none']}}}, f)
        self.proc = None

    def start(self):
        with open(os.path.join(self.top, 'dockerd.log'), 'ab') as log:
            self.proc = self.spawn(log)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if self.docker('version').returncode == 0:
                return
            time.sleep(0.1)
        raise RuntimeError('the test dockerd did not start')

    def spawn(self, log):
        return subprocess.Popen(
            ['dockerd', '--config-file', self.config, '--data-root', self.root,
             '--exec-root', os.path.join(self.top, 'exec'),
             '--pidfile', os.path.join(self.top, 'dockerd.pid'),
             '-H', 'unix://' + self.sock, '--bridge=none', '--iptables=false',
             '--ip-masq=false', '--containerd-namespace', 'cellbox-memckpt-test',
             '--containerd-plugins-namespace', 'cellbox-memckpt-test-plugins'],
            stdout=log, stderr=log, start_new_session=True)

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        self.proc = None

    def end_shims(self):
        """The containerd shims of this engine: a container started from a checkpoint leaves
        its shim behind when removed (runsc 0.0~20221219), and it outlives dockerd."""
        shims = subprocess.run(['pgrep', '-f', '--', '-address %s/' % self.top],
                               capture_output=True, text=True).stdout.split()
        for pid in shims:
            try:
                os.kill(int(pid), signal.SIGTERM)
            except ProcessLookupError:
                pass

    def docker(self, *args, **kw):
        return subprocess.run(['docker', '-H', 'unix://' + self.sock] + list(args),
                              capture_output=True, **kw)


def missing():
    if os.geteuid() != 0:
        return 'not root (the engine\'s data root must be ours to write)'
    for prog in ('dockerd', 'runsc', 'docker'):
        if not shutil.which(prog):
            return 'no %s' % prog
    if not CELLBOX:
        return 'CELLBOX_BIN not set'
    p = subprocess.run(['docker', 'image', 'inspect', IMAGE], capture_output=True)
    if p.returncode != 0:
        return 'no image %s in the local engine (scripts/build-image)' % IMAGE
    return None


class MemoryCheckpointTest(unittest.TestCase):
    top = engine = None

    @classmethod
    def setUpClass(cls):
        cls.top = tempfile.mkdtemp(prefix='cellbox-memckpt-')
        cls.engine = Engine(cls.top)
        cls.engine.start()
        t0 = time.monotonic()
        save = subprocess.Popen(['docker', 'save', IMAGE], stdout=subprocess.PIPE)
        load = cls.engine.docker('load', stdin=save.stdout)
        save.stdout.close()
        save.wait()
        if load.returncode != 0:
            raise RuntimeError('cannot load the image: %s' % load.stderr.decode())
        print('# image loaded into the test engine in %.1f s' % (time.monotonic() - t0),
              file=sys.stderr)

    @classmethod
    def tearDownClass(cls):
        if cls.engine:
            ids = cls.engine.docker('ps', '-aq').stdout.decode().split()
            if ids:
                cls.engine.docker('rm', '-f', *ids)
            cls.engine.stop()
            cls.engine.end_shims()
        if cls.top:
            subprocess.run(['umount', '-R', os.path.join(cls.top, 'exec')],
                           capture_output=True)
            shutil.rmtree(cls.top, ignore_errors=True)

    def setUp(self):
        self.home = tempfile.mkdtemp(prefix='case-', dir=self.top)
        self.env = dict(os.environ, DOCKER_HOST='unix://' + self.engine.sock,
                        XDG_RUNTIME_DIR=os.path.join(self.home, 'run'),
                        XDG_STATE_HOME=os.path.join(self.home, 'state'), NO_COLOR='1')
        os.makedirs(self.env['XDG_RUNTIME_DIR'], mode=0o700)

    def cellbox(self, *args, stdin=None, timeout=120):
        return subprocess.run([CELLBOX] + list(args), input=stdin, capture_output=True,
                              text=True, env=self.env, timeout=timeout)

    def kill(self, name):
        self.cellbox('kill', name)

    def session(self, name, n):
        """Named gVisor session `name` with r, a random number a re-run could not draw again,
        and n; r, as it printed it."""
        p = self.cellbox('repl', '--backend', 'docker', '--runtime', 'runsc', '--name', name,
                         stdin='import random; r = random.random(); n = %d\nprint(r, n)\n' % n)
        self.assertEqual(p.returncode, 0, p.stderr)
        r, printed = p.stdout.split()[:2]
        self.assertEqual(printed, str(n))
        return r

    def test_fork_through_the_checkpoint(self):
        # cellbox fork of a gVisor session: its memory checkpointed, the original and the
        # copy made from it; both have what a re-run could not make, and go their own ways.
        r = self.session('orig', 41)
        try:
            p = self.cellbox('fork', 'orig', 'copy', timeout=300)
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertIn("forked session 'orig' into 'copy' through a memory checkpoint",
                          p.stdout)
            self.assertNotIn('re-run', p.stdout)
            p = self.cellbox('repl', '--attach', 'copy', stdin='n += 1\nprint(r, n)\n')
            self.assertEqual(p.stdout.split()[-2:], [r, '42'], p.stdout + p.stderr)
            p = self.cellbox('repl', '--attach', 'orig', stdin='print(r, n)\n')
            self.assertEqual(p.stdout.split()[-2:], [r, '41'], p.stdout + p.stderr)
            ls = self.cellbox('ls').stdout
            self.assertRegex(ls, r'orig\s+docker\s+python\s+idle')
            self.assertRegex(ls, r'copy\s+docker\s+python\s+idle')
            self.assertEqual([f for f in os.listdir(self.env['XDG_RUNTIME_DIR'] + '/cellbox')
                              if f.endswith('.ckpt')], [])
            # orig's kernel is now itself made from a checkpoint: forked again all the same.
            p = self.cellbox('fork', 'orig', 'again', timeout=300)
            self.assertEqual(p.returncode, 0, p.stderr)
            p = self.cellbox('repl', '--attach', 'again', stdin='print(r, n)\n')
            self.assertEqual(p.stdout.split()[-2:], [r, '41'], p.stdout + p.stderr)
            p = self.cellbox('repl', '--attach', 'orig', stdin='print(r, n)\n')
            self.assertEqual(p.stdout.split()[-2:], [r, '41'], p.stdout + p.stderr)
        finally:
            self.kill('orig')
            self.kill('copy')
            self.kill('again')

    def test_checkpoint_of_a_restored_kernel(self):
        # A restored kernel still sees its first container's paths; its own checkpoint is
        # made with those, and so restores (gVisor finds each mount again by that path).
        r = self.session('g0', 1)
        names = ['g0']
        try:
            for gen in (1, 2, 3):
                ckpt = os.path.join(self.home, 'g%d.ckpt' % gen)
                p = self.cellbox('checkpoint', '--memory', names[-1], ckpt, timeout=300)
                self.assertEqual(p.returncode, 0, p.stderr)
                self.kill(names[-1])
                names.append('g%d' % gen)
                p = self.cellbox('restore', '--name', names[-1], ckpt, timeout=300)
                self.assertEqual(p.returncode, 0, 'generation %d: %s' % (gen, p.stderr))
                p = self.cellbox('repl', '--attach', names[-1], stdin='n += 1\nprint(r, n)\n')
                self.assertEqual(p.stdout.split()[-2:], [r, str(gen + 1)], p.stdout + p.stderr)
            # Its host has only the cells since the restore: a re-run checkpoint of it would
            # miss the rest, and is refused, the session untouched.
            cells = os.path.join(self.home, 'cells.ckpt')
            p = self.cellbox('checkpoint', names[-1], cells)
            self.assertNotEqual(p.returncode, 0, p.stdout)
            self.assertIn('itself restored from a memory checkpoint', p.stderr)
            self.assertFalse(os.path.exists(cells))
            p = self.cellbox('repl', '--attach', names[-1], stdin='print(r, n)\n')
            self.assertEqual(p.stdout.split()[-2:], [r, '4'], p.stdout + p.stderr)
        finally:
            for name in names:
                self.kill(name)

    def test_mcp_fork_through_the_checkpoint(self):
        # MCP session_fork of a gVisor session: the same memory checkpoint as cellbox fork
        # (named_setup_fork); the copy has the random number, and the server's handle on the
        # original is attached again to the session made again from the checkpoint.
        sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..',
                                        'e2e'))
        from mcp_base import Server, text
        s = Server(self.env, '--backend', 'docker', '--runtime', 'runsc', cwd=self.home)

        def run(handle, code):
            r = s.call('session_run', {'handle': handle, 'code': code}, timeout=300)
            self.assertFalse(r.get('isError'), text(r))
            return r['structuredContent']['stdout']
        try:
            r = s.call('session_open', {'name': 'mo'}, timeout=300)
            self.assertFalse(r.get('isError'), text(r))
            h = r['structuredContent']['handle']
            r0 = run(h, 'import random; r = random.random(); n = 41; print(r)').strip()
            f = s.call('session_fork', {'handle': h, 'name': 'mc'}, timeout=600)
            self.assertFalse(f.get('isError'), text(f))
            sc = f['structuredContent']
            self.assertEqual((sc['fork'], sc['forked_from']), ('memory', 'mo'))
            self.assertIn("forked session 'mo' into 'mc' through a memory checkpoint", text(f))
            self.assertNotIn('re-run', text(f))
            self.assertEqual(run(sc['handle'], 'n += 1; print(r, n)'), r0 + ' 42\n')
            self.assertEqual(run(h, 'print(r, n)'), r0 + ' 41\n')
            ls = self.cellbox('ls').stdout
            self.assertRegex(ls, r'mo\s+docker\s+python\s+idle')
            self.assertRegex(ls, r'mc\s+docker\s+python\s+idle')
        finally:
            s.close()
            for stream in (s.p.stdin, s.p.stdout, s.p.stderr):
                stream.close()
            self.kill('mo')
            self.kill('mc')

    def test_restore_after_restart(self):
        r = self.session('m', 41)
        ckpt = os.path.join(self.home, 'm.ckpt')
        t0 = time.monotonic()
        p = self.cellbox('checkpoint', '--memory', 'm', ckpt)
        took = time.monotonic() - t0
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("its kernel's memory", p.stdout)
        with open(ckpt, 'rb') as f:
            self.assertEqual(f.read(len(MAGIC)), MAGIC)
        print('# checkpoint --memory: %.2f s, %d bytes' % (took, os.path.getsize(ckpt)),
              file=sys.stderr)
        self.kill('m')
        self.engine.stop()
        self.engine.start()
        t0 = time.monotonic()
        p = self.cellbox('restore', '--name', 'back', ckpt)
        took = time.monotonic() - t0
        self.assertEqual(p.returncode, 0, p.stderr)
        print('# restore (after the engine restarted): %.2f s' % took, file=sys.stderr)
        try:
            p = self.cellbox('repl', '--attach', 'back', stdin='print(r, n + 1)\n')
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertEqual(p.stdout.split()[:2], [r, '42'])
            ls = self.cellbox('ls')
            self.assertRegex(ls.stdout, r'back\s+docker\s+python\s+idle')
        finally:
            self.kill('back')
        # The same file, signed, from another cellbox (its runner's digest): refused.
        with open(ckpt, 'rb') as f:
            data = f.read()
        head, rest = data[len(MAGIC):].split(b'\n', 1)
        meta = json.loads(rest[:int(head)])
        meta['runner_sha256'] = '0' * 64
        other = os.path.join(self.home, 'other.ckpt')
        with open(other, 'wb') as f:
            f.write(self.file(meta, rest[int(head):-65]))
        p = self.cellbox('restore', '--name', 'other', other)
        if p.returncode == 0:
            self.kill('other')
        self.assertNotEqual(p.returncode, 0)
        self.assertIn('made by another cellbox', p.stderr)

    def signed(self, body):
        """`body` signed with this case's key (made by a first restore attempt)."""
        with open(os.path.join(self.env['XDG_STATE_HOME'], 'cellbox', 'checkpoint.key'),
                  'rb') as f:
            key = f.read()
        return body + hmac.new(key, body, hashlib.sha256).hexdigest().encode() + b'\n'

    def file(self, meta, data=b'', magic=MAGIC, sign=True):
        text = meta if isinstance(meta, bytes) else json.dumps(meta).encode()
        body = magic + b'%d\n' % len(text) + text + data
        return self.signed(body) if sign else body + b'0' * 64 + b'\n'

    def test_hostile_refused(self):
        before = sorted(os.listdir(os.path.join(self.engine.root, 'containers')))
        # A first attempt makes the key; the file is not a checkpoint at all.
        junk = os.path.join(self.home, 'junk.ckpt')
        with open(junk, 'wb') as f:
            f.write(MAGIC + b'x\n')
        p = self.cellbox('restore', junk)
        self.assertNotEqual(p.returncode, 0)
        good = {'channel': '/tmp/x', 'ready': '{}', 'config': {}, 'host_config': {}}
        files = {
            'bad_name': self.file(dict(good, files=[{'name': '../x', 'size': 1}]), b'z'),
            'hidden_name': self.file(dict(good, files=[{'name': '.x', 'size': 1}]), b'z'),
            'slash_name': self.file(dict(good, files=[{'name': 'a/b', 'size': 1}]), b'z'),
            'oversized': self.file(dict(good, files=[{'name': 'f', 'size': 2 ** 31}]), b'z'),
            'long_meta': self.file(b'{' + b' ' * (2 << 20) + b'}'),
            'length': self.file(dict(good, files=[{'name': 'f', 'size': 1}]), b'zz'),
            'bad_json': self.file(b'{"files": ['),
            'version': self.file(dict(good, files=[]), magic=b'cellbox-memory-checkpoint 2\n'),
            'unsigned': self.file(dict(good, files=[{'name': 'f', 'size': 1}]), b'z',
                                  sign=False),
        }
        for what, data in files.items():
            path = os.path.join(self.home, what + '.ckpt')
            with open(path, 'wb') as f:
                f.write(data)
            p = self.cellbox('restore', '--name', 'h', path, timeout=60)
            if p.returncode == 0:
                self.kill('h')
            self.assertNotEqual(p.returncode, 0, what)
            self.assertRegex(p.stderr, r'not a memory checkpoint|not signed|not a checkpoint'
                             r'|version or kind', what)
        # A link to a FIFO: refused, not waited on.
        fifo = os.path.join(self.home, 'fifo')
        os.mkfifo(fifo)
        link = os.path.join(self.home, 'link.ckpt')
        os.symlink(fifo, link)
        p = self.cellbox('restore', '--name', 'h', link, timeout=30)
        self.assertNotEqual(p.returncode, 0)
        # Nothing reached the engine: no container made, no checkpoint written.
        self.assertEqual(sorted(os.listdir(os.path.join(self.engine.root, 'containers'))),
                         before)
        self.assertEqual(self.engine.docker('ps', '-aq').stdout.split(), [])


if __name__ == '__main__':
    WHY = missing()
    if WHY:
        print('SKIP: ' + WHY)
        sys.exit(77)
    if len(sys.argv) == 2 and not sys.argv[1].startswith('-'):
        sys.argv[1] = 'MemoryCheckpointTest.test_' + sys.argv[1]
    unittest.main(verbosity=2)
