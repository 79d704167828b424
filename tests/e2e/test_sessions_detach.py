"""`:detach` of an unnamed session (issue 27): the session is given a generated name and its
running kernel is handed to that named session's host, variables and all; the front end
leaves saying the name; `cellbox ls`, `cellbox attach` and `cellbox kill` then work on it as on
any named session, an attach showing the cells run before the detach (the UI's and the REPL's
session keeps them for the host it hands over to). In the UI (under tmux) and the REPL, on the local backend (whose kernel's
init drops its PR_SET_PDEATHSIG when its parent asks, and only then) and on docker. Run as
test_sessions_detach.NAME (unittest)."""
import json
import os
import re
import signal
import subprocess
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_cli import BIN  # noqa: E402
from test_sessions import Base, alive  # noqa: E402
from test_tui import Tui  # noqa: E402

GIVEN = r"detached from session '(s-[a-z]{6})'"


class Detach(Base):
    backend = 'local'

    def setUp(self):
        super().setUp()
        self.env['CELLBOX_BACKEND'] = self.backend
        if os.environ.get('CELLBOX_TEST_CHANNEL'):     # docker's channel over its stream
            self.env['CELLBOX_CHANNEL'] = os.environ['CELLBOX_TEST_CHANNEL']

    def ours(self):
        """The live processes started for this test (its runtime directory in their
        environment): front ends, hosts, local kernels; not tmux's, its shell's nor sleep's."""
        mine = ('CELLBOX_RUNTIME_DIR=%s' % os.path.join(self.tmp, 'run')).encode()
        found = []
        for p in os.listdir('/proc'):
            try:
                with open('/proc/%s/environ' % p, 'rb') as f:
                    env = f.read().split(b'\0')
                with open('/proc/%s/comm' % p) as f:
                    comm = f.read().strip()
                if mine in env and comm not in ('sh', 'sleep', 'tmux', 'tmux: server') and \
                        alive(int(p)):
                    found.append((int(p), comm))
            except (OSError, ValueError):
                pass
        return [f for f in found if f[0] != os.getpid()]

    def gone(self, timeout=20):
        deadline = time.monotonic() + timeout
        while self.ours() and time.monotonic() < deadline:
            time.sleep(0.1)
        return self.ours()

    def containers(self):
        """The containers (running or not) whose channel is this test's."""
        if self.backend != 'docker':
            return []
        from test_pool_docker import engine
        status, cs = engine('/containers/json?all=1')
        self.assertEqual(status, 200)
        return [c['Id'] for c in cs
                if c.get('Labels', {}).get('org.cellbox.channel', '').startswith(self.tmp)]

    def check_named(self, name):
        """The detached session is listed, has x, and `cellbox kill` ends it all."""
        if self.backend == 'docker':
            self.assertEqual(len(self.containers()), 1)    # the one, handed over
            # Another process's first container sweeps the engine for containers of dead
            # cellbox processes (its giver is one): the handed-over one is kept.
            r = self.cellbox('run', '-c', 'print(6 * 7)')
            self.assertEqual((r.returncode, r.stdout.strip()), (0, '42'), r.stderr)
            self.assertEqual(len(self.containers()), 1)
        # `cellbox gc` takes the giver for gone but leaves what it handed over alone. (Not
        # on docker here: its gc sweeps every dead process's containers on the engine, the
        # suites' beside this one too.)
        if self.backend == 'local':
            r = self.cellbox('gc')
            self.assertIn('0 channels', r.stdout)
        row = self.ls()[name]
        self.assertEqual((row['backend'], row['state'], row['attached']),
                         (self.backend, 'idle', '0'), row)
        self.check_past_ui(name)
        r = self.cellbox('repl', '--attach', name, stdin='print(x + 1)\n')
        self.assertEqual(r.returncode, 0, r.stderr)
        # The cells before the detach, their output too, printed as past ones; then live.
        self.assertIn('[earlier] In [*]: print("before-1")', r.stdout)
        self.assertRegex(r.stdout, r'(?m)^before-1$')
        self.assertIn('[earlier] In [*]: x = 41', r.stdout)
        self.assertTrue(r.stdout.rstrip().endswith('42'), r.stdout)
        r = self.cellbox('attach', name, stdin='x += 100\nprint("x is", x)\n')
        self.assertIn('x is 141', r.stdout)
        # The host signals the kernel it adopted: an attached front end's Ctrl-C interrupts.
        a = subprocess.Popen([BIN, 'attach', name], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             env=self.env)
        a.stdin.write('import time\ntry:\n    print("sleeping", flush=True); time.sleep(60)\n'
                      'except KeyboardInterrupt:\n    print("interrupted")\n\n')
        a.stdin.flush()
        seen = []                                   # (the cells before, printed first)
        while not seen or seen[-1].strip() != 'sleeping':
            seen.append(a.stdout.readline())
            self.assertTrue(seen[-1], ''.join(seen))
        a.send_signal(signal.SIGINT)
        out, err = a.communicate(timeout=30)
        self.assertIn('interrupted', out, err)
        # The host has the cells since the kernel started, those before the detach too.
        ck = os.path.join(self.tmp, 'ck.json')
        r = self.cellbox('checkpoint', name, ck)
        self.assertEqual(r.returncode, 0, r.stderr)
        with open(ck) as f:
            cells = [c['code'].strip() for c in json.load(f)['cells']]
        self.assertEqual(cells[:3], ['print("before-1")', 'x = 41', 'print("live", x + 1)'])
        r = self.cellbox('kill', name)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertNotIn(name, self.ls())
        self.assertEqual(self.gone(), [], 'the kernel or host outlived cellbox kill')
        self.assertEqual(self.containers(), [])

    def check_past_ui(self, name):
        """The UI attached under tmux shows the cells run before the detach and what they
        printed as its past cells, then runs live ones; it leaves the session running."""
        ui = Tui(self.tmp, 'a-' + self.backend, ('attach', name), env_extra=self.ui_env())
        self.uis.append(ui)
        screen = ui.wait_for('In [1]: print("before-1")', 'In [2]: x = 41')
        self.assertRegex(screen, r'(?m)^ *before-1 *$')         # its output, not its code
        ui.run('print("live", x + 1)')
        ui.wait_for('live 42')
        ui.quit()
        self.assertEqual(ui.exit_status(), 'exit=0')
        self.wait_ls(name, lambda r: r and r['attached'] == '0')

    def ui_env(self):
        return {k: v for k, v in self.env.items() if k in ('CELLBOX_BACKEND', 'CELLBOX_CHANNEL')}

    def repl_detach(self):
        t = self.term('repl')
        t.expect(r'In \[.*1.*\]:')
        t.send('print("before-1")\r')
        t.expect(r'In \[.*2.*\]:')
        t.send('x = 41\r')
        t.expect(r'In \[.*3.*\]:')
        t.send(':detach\r')
        name = t.expect(GIVEN).group(1).decode()
        t.expect(r'cellbox attach ' + name)
        self.assertEqual(t.wait(), 0)           # the REPL left, status 0
        return name

    def ui_detach(self):
        ui = Tui(self.tmp, 'd-' + self.backend, (), env_extra=self.ui_env())
        self.uis.append(ui)
        deadline = time.monotonic() + 60             # the kernel is up (a stream's shows
        while not re.search(r'idle +%s[ 0-9.ms]* \u2502' % self.backend, ui.screen()):
            self.assertLess(time.monotonic(), deadline, ui.screen())     # its latency)
            time.sleep(0.05)
        ui.run('print("before-1")')
        ui.wait_for('In [1]: print("before-1")')
        ui.run('x = 41')
        ui.wait_for('In [2]: x = 41')
        ui.command('detach')
        self.assertEqual(ui.exit_status(), 'exit=0')    # the UI left
        return re.search(GIVEN, ui.wait_for('cellbox attach s-')).group(1)


class LocalDetachTest(Detach):
    def test_repl_detach_hands_the_kernel_over(self):
        self.check_named(self.repl_detach())

    def test_ui_detach_hands_the_kernel_over(self):
        self.check_named(self.ui_detach())

    def test_ui_detach_refused_while_a_cell_runs(self):
        ui = Tui(self.tmp, 'busy', ())
        self.uis.append(ui)
        ui.wait_for('local \u2502')
        ui.run('import time; time.sleep(30)')
        ui.wait_for('In [*]')
        ui.command('detach')
        ui.wait_for('cannot detach: a cell is running')
        self.assertIsNone(ui.exit_status(timeout=1))
        self.assertEqual(self.names(), [])

    def test_kernel_cannot_let_itself_go(self):
        """The runner sends its init the let-go signal itself: refused (only a signal from
        outside its namespace counts), and the kernel still ends with its front end."""
        t = self.term('repl')
        t.expect(r'In \[.*1.*\]:')
        t.send('import os, signal, time; os.kill(1, signal.SIGRTMIN + 4); time.sleep(0.5)\r')
        t.expect(r'In \[.*2.*\]:')
        t.send('print("init:", open("/proc/1/comm").read().strip())\r')
        self.assertEqual(t.expect(r'init: (\S+)').group(1), b'cellbox')
        t.send('exit\r')
        self.assertEqual(t.wait(), 0)
        self.assertEqual(self.gone(), [], 'the kernel outlived its front end')


class DockerDetachTest(Detach):
    """Run as `test_sessions_detach.py DockerDetachTest` (meson does): without dockerd or the
    kernel image it exits 77, a skip meson counts as one."""
    backend = 'docker'

    def test_repl_detach_hands_the_container_over(self):
        self.check_named(self.repl_detach())

    def test_ui_detach_hands_the_container_over(self):
        self.check_named(self.ui_detach())


if __name__ == '__main__':
    if sys.argv[1:2] == ['DockerDetachTest']:
        from test_pool_docker import SKIP, skip_reason
        why = skip_reason()
        if why:
            print('SKIP: ' + why)
            sys.exit(SKIP)
    unittest.main(argv=[sys.argv[0], '-v'] + sys.argv[1:])
