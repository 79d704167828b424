"""--libraries on the docker backend, offline: a wheel the test makes of a tiny package of its
own, installed through --wheelhouse into a derived image that is committed once and reused
(also by a pool), the errors for a bad name and a missing package, and `gc --images`.

    tests/docker/test_libraries.py [CASE]

Needs dockerd and the kernel image (scripts/build-image); skipped with the reason otherwise."""
import http.client
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import unittest
import urllib.parse

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'e2e'))
from test_cli import BIN, clean_env  # noqa: E402
from wheel import make_wheel  # noqa: E402

SOCKET = '/var/run/docker.sock'
# The kernel image of this build's protocol (scripts/build-image reads the same line).
with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', 'kernels',
                       'python', 'runner', '__init__.py'), encoding='utf-8') as _f:
    IMAGE = 'cellbox-python:p' + re.search(r'^PROTOCOL = (\d+)', _f.read(), re.M).group(1)


class Unix(http.client.HTTPConnection):
    def __init__(self):
        super().__init__('localhost', timeout=60)

    def connect(self):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.connect(SOCKET)


def api(method, path):
    c = Unix()
    c.request(method, path)
    r = c.getresponse()
    body = r.read()
    c.close()
    return r.status, json.loads(body) if body[:1] in (b'[', b'{') else body


def derived_images(name):
    """The derived images whose library set is `name`."""
    q = urllib.parse.quote(json.dumps({'label': ['org.cellbox.libraries=' + name]}))
    status, images = api('GET', '/images/json?filters=' + q)
    return images if status == 200 else []


def remove_images(name):
    for img in derived_images(name):
        api('DELETE', '/images/%s?force=1' % img['Id'])


class LibrariesTest(unittest.TestCase):
    def setUp(self):
        if not os.path.exists(SOCKET):
            self.skipTest('no docker daemon at ' + SOCKET)
        try:
            status, _ = api('GET', '/images/%s/json' % IMAGE)
        except OSError as e:
            self.skipTest('docker does not answer: %s' % e)
        if status != 200:
            self.skipTest('no kernel image %s (scripts/build-image)' % IMAGE)
        self.tmp = tempfile.mkdtemp(prefix='cellbox-libs-')
        os.chmod(self.tmp, 0o755)
        self.env = clean_env(self.tmp)
        self.env['XDG_CACHE_HOME'] = os.path.join(self.tmp, 'cache')
        # A package of this run's own: no other run (or helper) shares its image.
        self.name = 'cbtest%dx%s' % (os.getpid(), self.id().rsplit('_', 1)[-1])
        self.wheels = os.path.join(self.tmp, 'wheels')
        make_wheel(self.wheels, self.name, '1.0', 42)
        for root, dirs, files in os.walk(self.tmp):
            for d in dirs:
                os.chmod(os.path.join(root, d), 0o755)
            for f in files:
                os.chmod(os.path.join(root, f), 0o644)
        self.daemon = None

    def tearDown(self):
        if getattr(self, 'daemon', None) and self.daemon.poll() is None:
            self.daemon.send_signal(signal.SIGTERM)
            self.daemon.wait(timeout=60)
        if hasattr(self, 'name'):
            remove_images(self.name)
            shutil.rmtree(self.tmp, ignore_errors=True)

    def cellbox(self, *args, stdin=None, timeout=300):
        t0 = time.monotonic()
        p = subprocess.run([BIN, *args], input=stdin, capture_output=True, text=True,
                           env=self.env, timeout=timeout)
        p.seconds = time.monotonic() - t0
        return p

    def run_docker(self, code, *extra):
        return self.cellbox('run', '--backend', 'docker', '--libraries', self.name,
                            '--wheelhouse', self.wheels, *extra, '-c', code)

    def test_offline_install_then_cached(self):
        code = 'import %s, numpy, sys\nprint(%s.VALUE, sys.prefix)' % (self.name, self.name)
        first = self.run_docker(code)
        self.assertEqual(first.returncode, 0, first.stderr)
        self.assertEqual(first.stdout, '42 /opt/cellbox/venv\n')    # numpy: the image's own
        self.assertIn('installing %s into %s (once' % (self.name, IMAGE), first.stderr)
        images = derived_images(self.name)
        self.assertEqual(len(images), 1)
        labels = images[0]['Labels']
        self.assertEqual(labels['org.cellbox.base-image'], IMAGE)
        self.assertTrue(labels['org.cellbox.base'].startswith('sha256:'))
        second = self.run_docker(code)
        self.assertEqual((second.returncode, second.stdout), (0, first.stdout), second.stderr)
        self.assertNotIn('installing', second.stderr)
        self.assertEqual([i['Id'] for i in derived_images(self.name)], [images[0]['Id']])
        # Without the wheelhouse (and no network) the cached image is all it needs.
        third = self.cellbox('run', '--backend', 'docker', '--libraries', self.name, '-c',
                             'import %s; print("cached")' % self.name)
        self.assertEqual((third.returncode, third.stdout), (0, 'cached\n'), third.stderr)
        print('\nfirst session (install + commit): %.2f s; second (cached image): %.2f s; '
              'third: %.2f s' % (first.seconds, second.seconds, third.seconds), file=sys.stderr)

    def test_errors(self):
        started = int(time.time()) - 1
        p = self.cellbox('run', '--backend', 'docker', '--libraries', 'numpy; rm -rf /', '-c',
                         'pass')
        self.assertEqual(p.returncode, 2)
        self.assertIn("libraries: 'numpy; rm -rf /' is not a package requirement", p.stderr)
        missing = 'nosuch%d' % os.getpid()
        p = self.cellbox('run', '--backend', 'docker', '--libraries', missing, '--wheelhouse',
                         self.wheels, '-c', 'pass')
        self.assertEqual(p.returncode, 5, p.stderr)
        self.assertIn('cannot install %s into %s (pip exited with 1):' % (missing, IMAGE),
                      p.stderr)
        self.assertIn('ERROR: No matching distribution found for ' + missing, p.stderr)
        self.assertEqual(derived_images(missing), [])                 # nothing was kept
        p = self.cellbox('run', '--backend', 'docker', '--libraries', self.name, '-c', 'pass')
        self.assertEqual(p.returncode, 5, p.stderr)
        self.assertIn('needs the network or a wheelhouse, and this sandbox has no network',
                      p.stderr)
        status, containers = api('GET', '/containers/json?all=1&filters=' + urllib.parse.quote(
            json.dumps({'ancestor': [IMAGE], 'status': ['exited']})))
        # Only this test's: other programs on the machine (a benchmark's anchor) may have
        # left exited containers of the image behind.
        self.assertEqual([c for c in containers if 'python3 -c' in c.get('Command', '')
                          and c.get('Created', 0) >= started], [],
                         'setup containers left behind')

    def test_gc_images_keeps_used_ones(self):
        p = self.run_docker('pass')
        self.assertEqual(p.returncode, 0, p.stderr)
        tag = derived_images(self.name)[0]['RepoTags'][0]
        holder = subprocess.Popen([BIN, 'repl', '--backend', 'docker', '--libraries', self.name],
                                  env=self.env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True)
        try:
            holder.stdin.write('import %s; print("held", %s.VALUE)\n' % (self.name, self.name))
            holder.stdin.flush()
            self.assertEqual(holder.stdout.readline(), 'held 42\n')
            p = self.cellbox('gc', '--images')
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertIn('kept image %s: 1 container uses it' % tag, p.stdout)
        finally:
            holder.communicate(timeout=60)
        p = self.cellbox('gc', '--images')
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn('removed image %s (%s)' % (tag, self.name), p.stdout)
        self.assertEqual(derived_images(self.name), [])

    def test_wheelhouse_is_the_key(self):
        # Issue 24, class 8: wheelhouse A's wheel carries a .pth file; wheelhouse B has a clean
        # wheel of the same name and version. B's session must not get A's image.
        poisoned = os.path.join(self.tmp, 'wheels-a')
        make_wheel(poisoned, self.name, '1.0', 42, extra={
            self.name + '_hook.pth': b'import sys; sys.cellbox_poisoned = "from wheelhouse A"\n'})
        for f in os.listdir(poisoned):
            os.chmod(os.path.join(poisoned, f), 0o644)
        os.chmod(poisoned, 0o755)
        code = 'import sys\nprint(getattr(sys, "cellbox_poisoned", "clean"))'
        a = self.cellbox('run', '--backend', 'docker', '--libraries', self.name, '--wheelhouse',
                         poisoned, '-c', code)
        self.assertEqual((a.returncode, a.stdout), (0, 'from wheelhouse A\n'), a.stderr)
        b = self.run_docker(code)               # self.wheels: the clean wheel
        self.assertEqual((b.returncode, b.stdout), (0, 'clean\n'), b.stderr)
        self.assertIn('installing %s' % self.name, b.stderr)
        images = derived_images(self.name)
        self.assertEqual(len(images), 2)
        digests = sorted(i['Labels']['org.cellbox.wheels'] for i in images)
        self.assertTrue(all(re.fullmatch('[0-9a-f]{64}', d) for d in digests), digests)
        self.assertNotEqual(digests[0], digests[1])
        # The copies the installs read are gone.
        self.assertEqual(os.listdir(os.path.join(self.tmp, 'cache', 'cellbox', 'wheels')), [])
        # Each is reused for its own wheels.
        again = self.run_docker(code)
        self.assertEqual((again.returncode, again.stdout), (0, 'clean\n'), again.stderr)
        self.assertNotIn('installing', again.stderr)
        # A wheel put in place of the clean one (same name) is a new key, not the old image.
        make_wheel(self.wheels, self.name, '1.0', 43)
        os.chmod(os.path.join(self.wheels, '%s-1.0-py3-none-any.whl' % self.name), 0o644)
        p = self.run_docker('import %s; print(%s.VALUE)' % (self.name, self.name))
        self.assertEqual((p.returncode, p.stdout), (0, '43\n'), p.stderr)
        # A link in the wheelhouse is not followed.
        os.symlink('/etc/passwd', os.path.join(self.wheels, 'zz-0-py3-none-any.whl'))
        p = self.run_docker('pass')
        self.assertEqual(p.returncode, 5, p.stderr)
        self.assertIn("the wheel 'zz-0-py3-none-any.whl' is not a regular file", p.stderr)

    def test_images_are_each_users_own(self):
        # Another uid (setpriv, with the docker group) does not get root's image of the set
        # unless both say libraries-shared.
        if os.getuid() != 0 or not shutil.which('setpriv'):
            self.skipTest('needs root and setpriv to run cellbox as another user')
        gid = os.stat(SOCKET).st_gid
        other = dict(self.env)
        home = os.path.join(self.tmp, 'other')
        for d in ('config', 'state', 'run', 'cache'):
            os.makedirs(os.path.join(home, d), mode=0o700)
            os.chmod(os.path.join(home, d), 0o700)
            os.chown(os.path.join(home, d), 4242, 4242)
        other.update(XDG_CONFIG_HOME=os.path.join(home, 'config'),
                     XDG_STATE_HOME=os.path.join(home, 'state'),
                     CELLBOX_RUNTIME_DIR=os.path.join(home, 'run'),
                     XDG_CACHE_HOME=os.path.join(home, 'cache'), HOME=home)

        def as_other(*args):
            return subprocess.run(['setpriv', '--reuid=4242', '--regid=4242',
                                   '--groups=%d' % gid, BIN, *args], capture_output=True,
                                  text=True, env=other, timeout=300)

        code = 'import %s; print(%s.VALUE)' % (self.name, self.name)
        mine = self.run_docker(code)
        self.assertEqual((mine.returncode, mine.stdout), (0, '42\n'), mine.stderr)
        theirs = as_other('run', '--backend', 'docker', '--libraries', self.name,
                          '--wheelhouse', self.wheels, '-c', code)
        self.assertEqual((theirs.returncode, theirs.stdout), (0, '42\n'), theirs.stderr)
        self.assertIn('installing %s' % self.name, theirs.stderr)   # not root's image
        self.assertEqual(sorted(i['Labels']['org.cellbox.owner']
                                for i in derived_images(self.name)), ['uid:0', 'uid:4242'])
        # Both choosing the shared cache: the second reuses the first's.
        mine = self.run_docker(code, '--libraries-shared')
        self.assertIn('installing %s' % self.name, mine.stderr)
        theirs = as_other('run', '--backend', 'docker', '--libraries', self.name,
                          '--libraries-shared', '--wheelhouse', self.wheels, '-c', code)
        self.assertEqual((theirs.returncode, theirs.stdout), (0, '42\n'), theirs.stderr)
        self.assertNotIn('installing', theirs.stderr)

    def test_pool_starts_from_the_image(self):
        self.daemon = subprocess.Popen([BIN, 'pool', 'serve', '--backend', 'docker', '--min', '1',
                                        '--max', '2', '--libraries', self.name, '--wheelhouse',
                                        self.wheels], env=self.env, stdout=subprocess.DEVNULL,
                                       stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline:
            st = self.cellbox('pool', 'status', '--json')
            if st.returncode == 0 and [k for k in json.loads(st.stdout).get('ready', [])
                                       if k['alive']]:
                break
            time.sleep(0.1)
        else:
            self.fail('the pool did not start')
        p = self.cellbox('run', '--pool', '--backend', 'docker', '--libraries', self.name, '-c',
                         'import %s; print(%s.VALUE)' % (self.name, self.name))
        self.assertEqual((p.returncode, p.stdout), (0, '42\n'), p.stderr)
        self.assertNotIn('note:', p.stderr)                 # a pooled kernel, not a fresh one
        self.assertNotIn('installing', p.stderr)            # the pool's daemon installed it
        # A client that asks for another set is told the pool does not have it.
        other = 'other%d' % os.getpid()
        make_wheel(self.wheels, other, '1.0', 1)
        os.chmod(os.path.join(self.wheels, '%s-1.0-py3-none-any.whl' % other), 0o644)
        try:
            p = self.cellbox('run', '--pool', '--backend', 'docker', '--libraries', other,
                             '--wheelhouse', self.wheels, '-c', 'pass')
            self.assertEqual(p.returncode, 5, p.stderr)
            self.assertIn("the pooled kernel has the libraries '%s'" % self.name, p.stderr)
        finally:
            remove_images(other)


if __name__ == '__main__':
    if len(sys.argv) == 2 and not sys.argv[1].startswith('-'):
        sys.argv[1] = 'LibrariesTest.test_' + sys.argv[1]
    unittest.main(verbosity=2)
