"""The hostile cases about the local backend (no container): its runtime directory, its
children, a kernel that never answers. Run through test_hostile.py CASE."""
import os
import pwd
import re
import shutil
import signal
import subprocess
import time
import unittest

from hostile_base import Base, BIN, PYTHON


class Local(Base):
    """What is about the local backend (no container): its runtime directory, its children."""
    backend = 'local'

    def test_requests_answered(self):
        """A kernel that never answers the host's own requests (the REPL asks is_complete
        before each cell): interrupted, then killed and restarted after 30 s, and the session
        goes on (before: the REPL waited for ever)."""
        cell = self.attack(r'''
R._HANDLERS['is_complete'] = lambda req: time.sleep(3600)
print('deaf')
''')
        t0 = time.monotonic()
        p = self.repl(cell, 'print("after")', timeout=120)
        self.assertIn('deaf', p.stdout, p.stderr)
        self.assertIn('did not answer within 30 s', p.stderr)
        self.assertIn('it was killed and restarted', p.stderr)
        self.assertIn('after', p.stdout, p.stderr)
        self.assertLess(time.monotonic() - t0, 110)

    def test_input_answers_bounded(self):
        """A kernel that asks for input thousands of times, to a front end that answers at
        once (a REPL whose stdin ended): the host keeps one answer file of a request's, not
        one an input (before: one file each, never removed until the cell ended; a REPL whose
        terminal hung up filled /dev/shm's inodes that way)."""
        cell = self.attack(r'''
most = 0
for i in range(3000):
    try:
        input()
    except BaseException:
        pass
    if i % 50 == 49:
        most = max(most, sum(n.endswith('.input') for n in os.listdir(R._S.cmd_dir)))
print('answers kept at most: %d' % most)
''')
        p = self.repl(cell, timeout=300)
        m = re.search(r'answers kept at most: (\d+)', p.stdout)
        self.assertTrue(m, (p.stdout[-500:], p.stderr[-500:]))
        self.assertLessEqual(int(m.group(1)), 2, 'answer files kept on the host')

    def test_children_die_with_the_kernel(self):
        """A kernel's children in a session of their own die with it (close, kill -9)."""
        code = ("import subprocess\n"
                "p = subprocess.Popen(['setsid', 'sleep', '%s'])\n"
                "print('child started')\n")
        for sig in (None, signal.SIGKILL):
            marker = '%d.%06d' % (1000 + (sig or 0), os.getpid() % 1000000)
            if sig is None:
                p = self.cellbox('run', '-c', code % marker)
                self.assertIn('child started', p.stdout, p.stderr)
            else:
                proc = subprocess.Popen([BIN, 'repl'], stdin=subprocess.PIPE,
                                        stdout=subprocess.PIPE, env=self.env)
                proc.stdin.write(('exec(%r)\n\n' % (code % marker)).encode())
                proc.stdin.flush()
                seen = b''
                while b'child started' not in seen:
                    chunk = os.read(proc.stdout.fileno(), 4096)
                    if not chunk:
                        break
                    seen += chunk
                self.assertIn(b'child started', seen)
                t0 = time.monotonic()
                while not sleepers(marker) and time.monotonic() - t0 < 10:
                    time.sleep(0.02)     # (setsid execs sleep after Popen returned)
                self.assertTrue(sleepers(marker))
                proc.kill()
                proc.wait()
                g = self.cellbox('gc')
                self.assertEqual(g.returncode, 0, g.stderr)
                self.assertEqual(os.listdir(self.run_dir), [], 'gc left the channel')
            t0 = time.monotonic()
            while sleepers(marker) and time.monotonic() - t0 < 10:
                time.sleep(0.05)
            self.assertEqual(sleepers(marker), [], 'the setsid child outlived its kernel')

    def test_runtime_dir_of_another_user(self):
        """/dev/shm/cellbox-UID and /tmp/cellbox-UID (the defaults without XDG_RUNTIME_DIR)
        made first by another local user: refused, never used (before: the other user's
        runner ran as the victim)."""
        if os.geteuid() != 0:
            raise unittest.SkipTest('makes two local users: needs root')
        victim = ensure_user('cellbox-victim')
        attacker = ensure_user('cellbox-attacker')
        roots = ['/tmp/cellbox-%d' % victim.pw_uid]
        if os.path.isdir('/dev/shm'):
            roots.append('/dev/shm/cellbox-%d' % victim.pw_uid)
        for root in roots:
            shutil.rmtree(root, ignore_errors=True)
        home = os.path.join(self.tmp, 'victim-home')
        os.makedirs(home)
        os.chown(home, victim.pw_uid, victim.pw_gid)
        marker = os.path.join(self.tmp, 'pwned')
        evil = os.path.join(self.tmp, 'evil')
        os.makedirs(evil)
        os.chmod(evil, 0o777)
        with open(os.path.join(self.tmp, 'evil-runner.py'), 'w') as f:
            f.write('import os\nopen(%r, "w").write("ran as uid %%d" %% os.getuid())\n' % marker)
        os.chmod(self.tmp, 0o777)
        os.chmod(os.path.join(self.tmp, 'evil-runner.py'), 0o644)
        # The other user makes the directory first, and swaps every new channel in it for a
        # directory of theirs whose runner.zip is theirs.
        thieves = [subprocess.Popen(
            ['setpriv', '--reuid', str(attacker.pw_uid), '--regid', str(attacker.pw_gid),
             '--clear-groups', PYTHON, '-c', THIEF, root, evil,
             os.path.join(self.tmp, 'evil-runner.py')],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE) for root in roots]
        try:
            for root in roots:
                t0 = time.monotonic()
                while not os.path.isdir(root) and time.monotonic() - t0 < 10:
                    time.sleep(0.01)
                self.assertEqual(os.stat(root).st_uid, attacker.pw_uid)
            env = {k: v for k, v in self.env.items()
                   if k not in ('CELLBOX_RUNTIME_DIR', 'XDG_RUNTIME_DIR')}
            env.update(HOME=home, XDG_STATE_HOME=os.path.join(home, 'state'),
                       XDG_CONFIG_HOME=os.path.join(home, 'config'))
            refused = 0
            for _ in range(20):
                p = subprocess.run(['setpriv', '--reuid', str(victim.pw_uid), '--regid',
                                    str(victim.pw_gid), '--clear-groups', BIN, 'run', '-c',
                                    'print(1)'], capture_output=True, text=True, env=env,
                                   timeout=60)
                if os.path.exists(marker):
                    with open(marker) as f:
                        self.fail("the other user's code ran: " + f.read())
                if p.returncode == 5 and 'belongs to uid %d' % attacker.pw_uid in p.stderr:
                    refused += 1
            self.assertEqual(refused, 20, p.stderr + p.stdout)
            self.assertIn("refusing to use it", p.stderr)
        finally:
            for thief in thieves:
                thief.kill()
                thief.wait()
            for root in roots:
                shutil.rmtree(root, ignore_errors=True)


THIEF = r'''
import ctypes, os, struct, sys, time
root, evil, runner = sys.argv[1:4]
data = open(runner).read()
os.mkdir(root, 0o777)
os.chmod(root, 0o777)
libc = ctypes.CDLL(None, use_errno=True)
fd = libc.inotify_init1(0)
libc.inotify_add_watch(fd, root.encode(), 0x100)          # IN_CREATE
n = 0
while True:
    buf = os.read(fd, 65536)
    off = 0
    while off < len(buf):
        wd, mask, cookie, ln = struct.unpack_from('iIII', buf, off)
        name = buf[off + 16:off + 16 + ln].rstrip(b'\0').decode()
        off += 16 + ln
        if not name or name.startswith('.'):
            continue
        n += 1
        mine = os.path.join(evil, 'c%d' % n)
        os.mkdir(mine)
        os.chmod(mine, 0o777)         # the victim makes its directories in it, as ever
        try:
            os.rename(os.path.join(root, name), os.path.join(root, '.stolen%d' % n))
            os.symlink(mine, os.path.join(root, name))
        except OSError:
            continue
        # Keep our runner.zip there, whatever the victim writes in its place, for a while.
        t_end = time.monotonic() + 3
        while time.monotonic() < t_end:
            for rel in ('runner.zip', 'host/runner.zip'):
                p = os.path.join(mine, rel)
                try:
                    with open(p + '.x', 'w') as f:
                        f.write(data)
                    os.replace(p + '.x', p)
                except OSError:
                    pass
            time.sleep(0.0002)
'''


def ensure_user(name):
    try:
        return pwd.getpwnam(name)
    except KeyError:
        subprocess.run(['useradd', '--system', '--no-create-home', '--shell', '/bin/false',
                        name], check=True)
        return pwd.getpwnam(name)


def sleepers(marker):
    """Pids of `sleep MARKER` processes."""
    pids = []
    for d in os.listdir('/proc'):
        if d.isdigit():
            try:
                with open('/proc/%s/cmdline' % d, 'rb') as f:
                    if f.read().split(b'\0')[:2] == [b'sleep', marker.encode()]:
                        pids.append(int(d))
            except OSError:
                pass
    return pids
