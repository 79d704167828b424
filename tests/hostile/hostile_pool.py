"""The hostile cases about `cellbox pool`'s own commands (serve --detach, stop, status): a
runtime directory another local user made first, a pid or an entry name planted in a pool.
Run through test_hostile.py CASE."""
import os
import shutil
import subprocess
import time
import unittest

from hostile_base import Base, BIN, PYTHON
from hostile_local import ensure_user

# The attacker holds a flock on the pool's daemon.lock (so the pool looks served) until killed.
HOLD_LOCK = r'''
import fcntl, sys, time
f = open(sys.argv[1], 'a')
fcntl.flock(f, fcntl.LOCK_EX)
print('locked', flush=True)
time.sleep(3600)
'''

# An entry name that would retitle the victim's terminal and move its cursor, raw.
ESCAPED = '\x1b]0;pwned\x07\x1b[2Jk\x9b31m'


def alive(pid):
    try:
        with open('/proc/%d/stat' % pid) as f:
            return f.read().rsplit(')', 1)[1].split()[0] != 'Z'
    except OSError:
        return False


class LocalPool(Base):
    """`cellbox pool` serve --detach, stop and status against a hostile pool directory."""
    backend = 'local'

    def setUp(self):
        super().setUp()
        self.procs = []
        self.roots = []

    def tearDown(self):
        for p in self.procs:
            if p.poll() is None:
                p.kill()
            p.wait()
        for root in self.roots:
            shutil.rmtree(root, ignore_errors=True)
        super().tearDown()

    def users(self):
        if os.geteuid() != 0:
            raise unittest.SkipTest('makes two local users: needs root')
        return ensure_user('cellbox-pvictim'), ensure_user('cellbox-attacker')

    def as_user(self, user, *argv):
        return ['setpriv', '--reuid', str(user.pw_uid), '--regid', str(user.pw_gid),
                '--clear-groups', *argv]

    def forge_root(self, victim, attacker):
        """/dev/shm/cellbox-UID and /tmp/cellbox-UID of the victim made first by the attacker,
        each with a pool 'default' in it open to all; the pool directories."""
        pools = []
        for base in ('/dev/shm', '/tmp'):
            if not os.path.isdir(base):
                continue
            root = '%s/cellbox-%d' % (base, victim.pw_uid)
            shutil.rmtree(root, ignore_errors=True)
            self.roots.append(root)
            pool = os.path.join(root, 'pool', 'default')
            subprocess.run(self.as_user(attacker, 'sh', '-c',
                                        'umask 0; mkdir -p "$0"/ready "$0"/leased', pool),
                           check=True)
            self.assertEqual(os.stat(root).st_uid, attacker.pw_uid)
            pools.append(pool)
        return pools

    def victim_env(self, victim):
        home = os.path.join(self.tmp, 'victim-home')
        os.makedirs(home, exist_ok=True)
        os.chown(home, victim.pw_uid, victim.pw_gid)
        env = {k: v for k, v in self.env.items()
               if k not in ('CELLBOX_RUNTIME_DIR', 'XDG_RUNTIME_DIR')}
        env.update(HOME=home, XDG_STATE_HOME=os.path.join(home, 'state'),
                   XDG_CONFIG_HOME=os.path.join(home, 'config'))
        return env

    def as_attacker(self, attacker, code, *args):
        """A file the attacker writes (in a directory of theirs)."""
        subprocess.run(self.as_user(attacker, PYTHON, '-c', code, *args), check=True)

    def hold_lock(self, lock, user=None):
        p = subprocess.Popen((self.as_user(user) if user else []) + [PYTHON, '-c', HOLD_LOCK,
                                                                      lock],
                             stdout=subprocess.PIPE, text=True)
        self.procs.append(p)
        self.assertEqual(p.stdout.readline(), 'locked\n')
        return p

    def victim_sleep(self, victim):
        """A process of the victim's an attack would have `pool stop` kill."""
        p = subprocess.Popen(self.as_user(victim, 'sleep', '300'))
        self.procs.append(p)
        time.sleep(0.1)
        return p

    def test_pool_serve_detach_checks_runtime_dir(self):
        """`pool serve --detach` with XDG_RUNTIME_DIR unset and the runtime directory made
        first by another user: refused before any file is opened (before: it appended its log
        through the other user's link into a file of the victim's, and reported success on a
        forged daemon.json)."""
        victim, attacker = self.users()
        env = self.victim_env(victim)
        notes = os.path.join(env['HOME'], 'notes')
        with open(notes, 'w') as f:
            f.write('the victim file, as it was\n')
        os.chown(notes, victim.pw_uid, victim.pw_gid)
        os.chmod(notes, 0o600)
        for pool in self.forge_root(victim, attacker):
            self.as_attacker(attacker, 'import os, sys; os.symlink(sys.argv[2], sys.argv[1] + '
                             '"/daemon.log"); open(sys.argv[1] + "/daemon.json", "w").write('
                             '\'{"pid": 1, "backend": "local"}\')', pool, notes)
        p = subprocess.run(self.as_user(victim, BIN, 'pool', 'serve', '--detach'), env=env,
                           capture_output=True, text=True, timeout=60)
        time.sleep(0.5)                 # (a detached daemon would write meanwhile)
        with open(notes) as f:
            self.assertEqual(f.read(), 'the victim file, as it was\n',
                             'the daemon wrote through the other user\'s link')
        self.assertNotEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertNotIn('served by', p.stdout)
        self.assertIn('belongs to uid %d' % attacker.pw_uid, p.stderr)

    def test_pool_stop_trusts_no_pid_file(self):
        """`pool stop` signals only the process that holds the pool's lock, a process of ours,
        in a pool directory of ours: a pid planted in daemon.json kills nothing (before: it
        killed whatever pid the other user wrote, here a process of the victim's)."""
        victim, attacker = self.users()
        env = self.victim_env(victim)
        target = self.victim_sleep(victim)
        for pool in self.forge_root(victim, attacker):
            self.as_attacker(attacker, 'import sys; open(sys.argv[1] + "/daemon.json", "w")'
                             '.write(\'{"pid": %d}\')' % target.pid, pool)
            self.hold_lock(os.path.join(pool, 'daemon.lock'), attacker)
        p = subprocess.run(self.as_user(victim, BIN, 'pool', 'stop'), env=env,
                           capture_output=True, text=True, timeout=60)
        time.sleep(0.2)
        self.assertTrue(alive(target.pid), 'pool stop killed the victim\'s process: ' +
                        p.stdout + p.stderr)
        self.assertNotEqual(p.returncode, 0, p.stdout)
        self.assertIn('belongs to uid %d' % attacker.pw_uid, p.stderr)
        # In a pool of our own, daemon.json is only a description: a pid written there by
        # something of ours (a local kernel runs as us) is not signalled either, only the
        # holder of daemon.lock is.
        pool = os.path.join(self.run_dir, 'pool', 'default')
        os.makedirs(pool, mode=0o700)
        os.chmod(self.run_dir, 0o700)
        os.chmod(os.path.join(self.run_dir, 'pool'), 0o700)
        mine = subprocess.Popen(['sleep', '300'])
        self.procs.append(mine)
        with open(os.path.join(pool, 'daemon.json'), 'w') as f:
            f.write('{"pid": %d}' % mine.pid)
        holder = self.hold_lock(os.path.join(pool, 'daemon.lock'))
        p = self.cellbox('pool', 'stop', timeout=60)
        time.sleep(0.2)
        self.assertTrue(alive(mine.pid), 'pool stop signalled the pid of daemon.json: ' +
                        p.stdout + p.stderr)
        self.assertIn(str(holder.pid), p.stdout + p.stderr)

    def test_pool_status_sanitises_names(self):
        """`pool status` prints entry names through the terminal sanitiser, and refuses a
        runtime directory of another user's (before: it listed the other user's pool, escape
        sequences and all)."""
        victim, attacker = self.users()
        env = self.victim_env(victim)
        for pool in self.forge_root(victim, attacker):
            self.as_attacker(attacker, 'import sys; open(sys.argv[1] + "/ready/" + sys.argv[2],'
                             ' "w")', pool, ESCAPED)
        p = subprocess.run(self.as_user(victim, BIN, 'pool', 'status'), env=env,
                           capture_output=True, timeout=60)
        self.assertNotIn(b'\x1b', p.stdout + p.stderr)
        self.assertNotIn('\x9b'.encode(), p.stdout + p.stderr)
        self.assertNotEqual(p.returncode, 0, p.stdout)
        self.assertIn(b'belongs to uid %d' % attacker.pw_uid, p.stderr)
        # A name in a pool of our own (a local kernel runs as us and can write there).
        pool = os.path.join(self.run_dir, 'pool', 'default')
        os.makedirs(os.path.join(pool, 'ready'), mode=0o700)
        for d in (self.run_dir, os.path.join(self.run_dir, 'pool'), pool):
            os.chmod(d, 0o700)
        open(os.path.join(pool, 'ready', ESCAPED), 'w').close()
        p = subprocess.run([BIN, 'pool', 'status'], env=self.env, capture_output=True,
                           timeout=60)
        self.assertEqual(p.returncode, 5, p.stderr)        # no daemon runs: its leftovers shown
        self.assertIn(b'no pool daemon is running', p.stderr)
        self.assertNotIn(b'\x1b', p.stdout + p.stderr)
        self.assertNotIn('\x9b'.encode(), p.stdout + p.stderr)
        self.assertIn(b'ready    k', p.stdout)          # the name's text, shown
