"""cellbox fork of named sessions (issue 27, item 4), in the REPL, the UI and the command: the
new session's kernel a copy of the live kernel process, independent from then on (the sessions'
harness is test_sessions.Base). Run as test_sessions_fork.ForkTest (unittest)."""
import json
import os
import re
import shutil
import subprocess
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_sessions import Base, alive  # noqa: E402
from test_tui import Tui  # noqa: E402


class ForkTest(Base):
    """cellbox fork (issue 27, item 4): the new session's kernel is a copy of the live kernel
    process, state a re-run could not make included, and independent from then on."""

    STATE = ('import os, random\nr = random.random()\nn = 0\n'
             'for i in range(7): n += 1\n')
    SHOW = 'print("STATE r=%r n=%d" % (r, n))\n'

    def run_in(self, name, code, *opts, check=True):
        """Run `code` in session `name`: what it printed (after the earlier cells' outputs,
        which an attach shows first)."""
        r = self.cellbox('repl', '--attach', name, *opts, stdin=code)
        if check:
            self.assertEqual(r.returncode, 0, r.stderr)
        return r.stdout + r.stderr

    def state(self, name):
        out = self.run_in(name, self.SHOW)
        m = re.findall(r'STATE r=(\S+) n=(\d+)', out)
        self.assertTrue(m, out)
        return m[-1][0], int(m[-1][1])

    def mine(self):
        """The processes of this test's sessions (hosts, inits, kernels), by their env."""
        key = ('CELLBOX_RUNTIME_DIR=%s' % os.path.join(self.tmp, 'run')).encode()
        found = []
        for p in os.listdir('/proc'):
            try:
                with open('/proc/%s/environ' % p, 'rb') as f:
                    if p.isdigit() and int(p) != os.getpid() and \
                            key in f.read().split(b'\0') and alive(int(p)):
                        found.append(int(p))
            except OSError:
                pass
        return found

    def start(self, name):
        r = self.cellbox('repl', '--name', name, stdin=self.STATE + self.SHOW)
        self.assertEqual(r.returncode, 0, r.stderr)
        m = re.search(r'STATE r=(\S+) n=(\d+)', r.stdout)
        self.assertTrue(m, r.stdout)
        return m.group(1), int(m.group(2))

    def fork(self, *args):
        t0 = time.monotonic()
        r = self.cellbox('fork', *args)
        self.assertEqual(r.returncode, 0, r.stderr)
        return r, time.monotonic() - t0

    def test_state_copied_and_independent(self):
        before = self.start('orig')
        self.assertEqual(before[1], 7)
        r, took = self.fork('orig', 'copy')
        self.assertIn("forked session 'orig' into 'copy'", r.stdout)
        # A random number drawn before the fork: only a copy of the process has it.
        self.assertEqual(self.state('copy'), before)
        self.assertEqual(sorted(self.ls()), ['copy', 'orig'])
        pids = {n: re.findall(r'PID (\d+)', self.run_in(n, 'print("PID", os.getpid())\n'))[-1]
                for n in ('orig', 'copy')}
        self.assertNotEqual(pids['orig'], pids['copy'])
        # Changes after the fork cross neither way.
        self.run_in('copy', 'n += 100\nonly_copy = 1\n')
        self.run_in('orig', 'n += 1000\nonly_orig = 1\n')
        self.assertEqual(self.state('copy'), (before[0], 107))
        self.assertEqual(self.state('orig'), (before[0], 1007))
        # Each records its own cells in the history, as a session of its own.
        r = self.cellbox('history', 'list')
        self.assertEqual(r.returncode, 0, r.stderr)
        ids = {c: re.search(r'^\s*\d+\s+(\S+).*%s' % c, r.stdout, re.M) for c in
               ('only_copy', 'only_orig')}
        self.assertTrue(all(ids.values()), r.stdout)
        self.assertNotEqual(ids['only_copy'].group(1), ids['only_orig'].group(1))
        out = self.run_in('copy', 'print("SEES", "only_orig" in dir())\n')
        self.assertEqual(re.findall(r'SEES (\w+)', out)[-1], 'False')
        out = self.run_in('orig', 'print("SEES", "only_copy" in dir())\n')
        self.assertEqual(re.findall(r'SEES (\w+)', out)[-1], 'False')
        # Its output is its own: a print in the copy reaches the copy's front end only.
        out = self.run_in('copy', 'import subprocess; subprocess.run(["echo", "from-child"])\n')
        self.assertIn('from-child', out)

    def test_generated_name_and_errors(self):
        self.start('src')
        r = self.cellbox('fork', 'src')
        self.assertEqual(r.returncode, 0, r.stderr)
        made = re.search(r"into '([^']+)'", r.stdout).group(1)
        self.assertIn(made, self.ls())
        r = self.cellbox('fork', 'nosuch', 'x')
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("no session named 'nosuch'", r.stderr)
        r = self.cellbox('fork', 'src', made)       # a name taken
        self.assertNotEqual(r.returncode, 0)
        self.assertIn('is running', r.stderr)
        self.assertEqual(sorted(self.ls()), sorted(['src', made]))
        r = self.cellbox('fork', 'src', '.bad')
        self.assertNotEqual(r.returncode, 0)

    def test_read_only_front_end_cannot_fork(self):
        import socket
        self.start('ro')
        s = socket.socket(socket.AF_UNIX)
        s.connect(os.path.join(self.tmp, 'run', 'sessions', 'ro', 'sock'))
        f = s.makefile('rwb')
        for msg in ({'t': 'hello', 'read_only': True, 'req': 1},
                    {'t': 'fork', 'name': 'stolen', 'req': 2}):
            f.write((json.dumps(msg) + '\n').encode())
        f.flush()
        reply = None
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            m = json.loads(f.readline())
            if m.get('t') == 'reply' and m.get('req') == 2:
                reply = m
                break
        s.close()
        self.assertIsNotNone(reply)
        self.assertFalse(reply['ok'], reply)
        self.assertIn('read-only', reply['error'])
        self.assertEqual(sorted(self.ls()), ['ro'])

    def test_kill_original_leaves_fork_running(self):
        before = self.start('a')
        self.fork('a', 'b')
        self.fork('b', 'c')                     # a fork of a fork
        r = self.cellbox('kill', 'a')
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(sorted(self.ls()), ['b', 'c'])
        self.assertEqual(self.state('b'), before)
        r = self.cellbox('kill', 'b')
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(sorted(self.ls()), ['c'])
        self.assertEqual(self.state('c'), before)
        self.run_in('c', 'n += 1\n')
        self.assertEqual(self.state('c'), (before[0], 8))
        # The last fork gone, nothing of the three sessions is left running.
        r = self.cellbox('kill', 'c')
        self.assertEqual(r.returncode, 0, r.stderr)
        deadline = time.monotonic() + 10
        while self.mine() and time.monotonic() < deadline:
            time.sleep(0.1)
        self.assertEqual(self.mine(), [])
        self.assertEqual(os.listdir(os.path.join(self.tmp, 'run')), ['sessions'])

    def test_original_lingers_quietly_for_its_forks(self):
        # Two forks of one session; it is killed, then one fork: its host waits for the other
        # without spinning (the ended fork's pidfd stays readable), and goes after it.
        before = self.start('a')
        host = self.host_pid('a')
        self.fork('a', 'b')
        self.fork('a', 'c')
        self.assertEqual(self.cellbox('kill', 'a').returncode, 0)
        self.assertEqual(self.cellbox('kill', 'b').returncode, 0)
        self.assertTrue(alive(host), 'the host left while a fork lived')

        def cpu():
            with open('/proc/%d/stat' % host) as f:
                fields = f.read().rsplit(')', 1)[1].split()
            return (int(fields[11]) + int(fields[12])) / os.sysconf('SC_CLK_TCK')
        t0 = cpu()
        time.sleep(2)
        self.assertLess(cpu() - t0, 0.5, 'the lingering host spins')
        self.assertEqual(self.state('c'), before)
        self.assertEqual(self.cellbox('kill', 'c').returncode, 0)
        deadline = time.monotonic() + 10
        while alive(host) and time.monotonic() < deadline:
            time.sleep(0.1)
        self.assertFalse(alive(host), 'the host outlived its last fork')

    def test_kill_fork_leaves_original(self):
        before = self.start('a')
        self.fork('a', 'b')
        r = self.cellbox('kill', 'b')
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(sorted(self.ls()), ['a'])
        self.assertEqual(self.state('a'), before)

    def test_fork_timeout_and_interrupt(self):
        before = self.start('a')
        self.fork('a', 'b')
        t0 = time.monotonic()
        out = self.run_in('b', 'import time\ntime.sleep(60)\n' + self.SHOW, '--timeout', '1',
                          check=False)
        self.assertLess(time.monotonic() - t0, 30)
        self.assertRegex(out, r'KeyboardInterrupt|[Tt]imeout')
        self.assertIn('STATE r=%s n=7' % before[0], out)
        # An interrupt goes to the copy alone: the original's cell runs on.
        t = self.term('repl', '--attach', 'a')
        t.expect(r'In \[.*\]:')
        t.send('import time\r')
        t.expect(r'In \[.*\]:')
        t.send('for i in range(6): print("tick", i, flush=True); time.sleep(0.5)\r\r')
        t.expect(r'tick 0\r\n')
        u = self.term('repl', '--attach', 'b')
        u.expect(r'In \[.*\]:')
        u.send('time.sleep(60)\r')
        time.sleep(0.5)
        u.send('\x03')
        u.expect(r'KeyboardInterrupt')
        t.expect(r'tick 5\r\n')

    def test_repl_fork_command(self):
        r = self.cellbox('repl', '--name', 'rp',
                         stdin='import random\nr = random.random()\nprint("R", r)\n'
                               ':fork rq\n:fork\n:fork bad/name\n')
        self.assertEqual(r.returncode, 0, r.stderr)
        r0 = re.search(r'R (\S+)', r.stdout).group(1)
        self.assertIn("forked session 'rp' into 'rq': a copy of its kernel process", r.stderr)
        made = re.search(r"forked session 'rp' into '(s-[a-z]+)'", r.stderr).group(1)
        self.assertIn(':fork [NAME]: NAME is', r.stderr)
        self.assertEqual(sorted(self.ls()), sorted(['rp', 'rq', made]))
        for name in ('rq', made):
            out = self.run_in(name, 'print("R", r)\n')
            self.assertEqual(re.findall(r'R (\S+)', out)[-1], r0)
        # Watching read-only, or a session without a name: no fork.
        r = self.cellbox('attach', '--read-only', 'rp', stdin=':fork rz\n')
        self.assertIn('read-only', r.stderr)
        r = self.cellbox('repl', stdin=':fork rz\n')
        self.assertIn('this session has no name', r.stderr)
        self.assertNotIn('rz', self.ls())

    def test_ui_fork_command(self):
        a = self.ui('--name', 'uf', tag='ufa')
        a.run('import random; r = random.random(); print("R", r)')
        a.wait_for('In [1]: import random')
        a.command('fork uf2')
        a.wait_for("forked session 'uf' into 'uf2': a copy of its kernel process")
        r0 = re.search(r'R (0\.\d+)', a.screen()).group(1)
        out = self.run_in('uf2', 'print("R", r)\n')
        self.assertEqual(re.findall(r'R (\S+)', out)[-1], r0)
        a.command('fork uf2')
        a.wait_for('no fork: ')


class ForkRerunTest(ForkTest):
    """A container's kernel that cannot be memory-checkpointed here (runc: no CRIU on this
    machine's kernel) is forked by re-running its cells in a fresh kernel of a new container,
    said so wherever the fork is reported, never as a memory copy."""

    def setUp(self):
        super().setUp()
        if subprocess.run(['docker', 'image', 'inspect', 'cellbox-python:p2'],
                          capture_output=True).returncode:
            self.skipTest('no docker engine or no image cellbox-python:p2')

    def start(self, name):
        r = self.cellbox('repl', '--backend', 'docker', '--runtime', 'runc', '--name', name,
                         stdin=self.STATE + self.SHOW, timeout=300)
        self.assertEqual(r.returncode, 0, r.stderr)
        m = re.search(r'STATE r=(\S+) n=(\d+)', r.stdout)
        self.assertTrue(m, r.stdout)
        return m.group(1), int(m.group(2))

    RERUN = r"by re-running (\d+) cells?: not a memory copy"

    def test_state_copied_and_independent(self):
        before = self.start('dk')
        r, took = self.fork('dk', 'dk2')
        self.assertIn("forked session 'dk' into 'dk2' by re-running", r.stdout)
        self.assertRegex(r.stdout, self.RERUN)
        self.assertNotIn('through a memory checkpoint', r.stdout)
        self.assertIn('no memory checkpoint: ', r.stdout)
        print('# fork by re-running: %.2f s' % took, file=sys.stderr)
        # A re-run: the deterministic state equal, the random number drawn again.
        after = self.state('dk2')
        self.assertEqual(after[1], before[1])
        self.assertNotEqual(after[0], before[0])
        ls = self.cellbox('ls').stdout
        self.assertRegex(ls, r'dk2\s+docker\s+python\s+idle')
        self.assertRegex(ls, r'dk\s+docker\s+python\s+idle')
        # Changes after the fork cross neither way.
        self.run_in('dk2', 'n += 100\n')
        self.run_in('dk', 'n += 1000\n')
        self.assertEqual(self.state('dk2'), (after[0], 107))
        self.assertEqual(self.state('dk'), (before[0], 1007))
        self.assertEqual([f for f in os.listdir(os.path.join(self.tmp, 'run'))
                          if f.startswith('.fork-')], [])

    def test_repl_fork_command(self):
        before = self.start('dr')
        r = self.cellbox('repl', '--attach', 'dr', stdin=':fork dr2\n', timeout=300)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("forked session 'dr' into 'dr2' by re-running", r.stderr)
        self.assertRegex(r.stderr, self.RERUN)
        after = self.state('dr2')
        self.assertEqual(after[1], before[1])
        self.assertNotEqual(after[0], before[0])

    def test_ui_fork_command(self):
        before = self.start('du')
        if not shutil.which('tmux'):
            self.skipTest('tmux is not installed (scripts/bootstrap --tests)')
        a = Tui(self.tmp, 'dua', ('attach', 'du'), size=(200, 30))
        self.uis.append(a)
        a.wait_for('docker \u2502')
        a.command('fork du2')
        a.wait_for("forked session 'du' into 'du2' by re-running", timeout=300)
        self.assertRegex(a.screen(), self.RERUN)
        after = self.state('du2')
        self.assertEqual(after[1], before[1])
        self.assertNotEqual(after[0], before[0])

    # The local cases that have no container counterpart are not run again here.
    test_generated_name_and_errors = test_read_only_front_end_cannot_fork = None
    test_kill_original_leaves_fork_running = test_original_lingers_quietly_for_its_forks = None
    test_kill_fork_leaves_original = test_fork_timeout_and_interrupt = None


if __name__ == '__main__':
    unittest.main()
