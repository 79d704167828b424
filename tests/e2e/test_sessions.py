"""Named sessions (issue 27): a session that outlives its front end. Started with --name, left
by killing its terminal, by killing the REPL or by :detach; listed by `cellbox ls`, joined again
by `cellbox attach` (its cells printed, including what ran meanwhile), joined by two front ends
at once, watched read-only, ended by `cellbox kill` and by its idle limit. Run as
test_sessions.NAME (unittest)."""
import json
import os
import pty
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_cli import BIN, Pty, clean_env, fd_links  # noqa: E402
from test_tui import Tui  # noqa: E402


class Term(Pty):
    """A cellbox command on a real pseudo-terminal (test_cli's Pty with any arguments), whose
    terminal can go away under it."""

    def __init__(self, env, *args):
        self.pid, self.fd = pty.fork()
        if self.pid == 0:
            os.execve(BIN, [BIN, *args], env)
        self.buf = b''

    def hang_up(self):
        """The terminal goes away: its master side closes (the REPL gets SIGHUP)."""
        os.close(self.fd)
        self.fd = -1
        self.wait()

    def wait(self, timeout=30):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                self.pid = 0
                return status
            time.sleep(0.05)
        raise AssertionError('the front end did not leave')

    def close(self):
        if self.pid:
            super().close()
            self.pid = 0
            self.fd = -1
        elif self.fd >= 0:
            os.close(self.fd)
            self.fd = -1


def alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with open('/proc/%d/stat' % pid) as f:
        return f.read().split(') ')[-1].split()[0] != 'Z'


class Base(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix='cellbox-sessions-')
        self.env = clean_env(self.tmp)
        self.terms = []
        self.uis = []

    def tearDown(self):
        for t in self.terms:
            t.close()
        for ui in self.uis:
            ui.close()
        # Every host this test started goes, whatever the test did.
        for name in self.names():
            self.cellbox('kill', name, timeout=60)
        self.reap_front_ends()
        shutil.rmtree(self.tmp, ignore_errors=True)

    def reap_front_ends(self, grace=5):
        """The UIs tmux left when its server went (they got SIGHUP): gone within `grace`
        seconds, else killed. Under ASan their leak check at exit was seen to hang, spinning,
        for good (its tracer waiting on a thread that never stopped): never left running."""
        mine = ('CELLBOX_RUNTIME_DIR=%s' % os.path.join(self.tmp, 'run')).encode()
        deadline = time.monotonic() + grace
        while True:
            left = []
            for p in os.listdir('/proc'):
                try:
                    with open('/proc/%s/environ' % p, 'rb') as f:
                        if p.isdigit() and mine in f.read().split(b'\0') and alive(int(p)):
                            left.append(int(p))
                except OSError:
                    pass
            left = [p for p in left if p != os.getpid()]
            if not left or time.monotonic() > deadline:
                break
            time.sleep(0.1)
        for p in left:
            try:
                os.kill(p, signal.SIGKILL)
            except ProcessLookupError:
                pass

    def names(self):
        top = os.path.join(self.tmp, 'run', 'sessions')
        return sorted(os.listdir(top)) if os.path.isdir(top) else []

    def cellbox(self, *args, stdin=None, timeout=120):
        return subprocess.run([BIN, *args], input=stdin, capture_output=True, text=True,
                              env=self.env, timeout=timeout)

    def term(self, *args):
        t = Term(self.env, *args)
        self.terms.append(t)
        return t

    def ui(self, *args, tag):
        if not shutil.which('tmux'):
            self.skipTest('tmux is not installed (scripts/bootstrap --tests)')
        ui = Tui(self.tmp, tag, args)
        self.uis.append(ui)
        ui.wait_for('local \u2502')            # the kernel is up
        return ui

    def ls(self):
        """`cellbox ls` as {name: row}, the row's columns by their headers."""
        r = self.cellbox('ls')
        self.assertEqual(r.returncode, 0, r.stderr)
        lines = r.stdout.splitlines()
        if not lines:
            return {}
        out = {}
        for line in lines[1:]:
            cols = line.split(None, 8)
            out[cols[0]] = dict(zip(['name', 'backend', 'kernel', 'state', 'idle', 'attached',
                                     'ttl', 'memory', 'running'], cols + [''] * (9 - len(cols))))
        return out

    def wait_ls(self, name, pred, timeout=30):
        deadline = time.monotonic() + timeout
        while True:
            rows = self.ls()
            if pred(rows.get(name)):
                return rows.get(name)
            if time.monotonic() > deadline:
                self.fail('cellbox ls never showed what was awaited for %s: %r' % (name, rows))
            time.sleep(0.2)

    def process_with(self, word):
        """The oldest process whose command line names `word`."""
        found = []
        for p in os.listdir('/proc'):
            if p.isdigit():
                try:
                    with open('/proc/%s/cmdline' % p, 'rb') as f:
                        if word.encode() in f.read():
                            found.append(int(p))
                except OSError:
                    pass
        self.assertTrue(found, 'no process names %s' % word)
        return min(found)

    def host_pid(self, name):
        """The pid of the session's host, from the socket's peer (ss would do the same)."""
        import socket
        import struct
        s = socket.socket(socket.AF_UNIX)
        s.connect(os.path.join(self.tmp, 'run', 'sessions', name, 'sock'))
        cred = s.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize('3i'))
        s.close()
        return struct.unpack('3i', cred)[0]


class DetachTest(Base):
    def test_terminal_killed_cell_runs_on(self):
        t = self.term('repl', '--name', 'train')
        t.expect(r"session 'train'")
        t.expect(r'In \[.*1.*\]:')
        t.send('x = 41\r')
        t.expect(r'In \[.*2.*\]:')
        t.send('import time\r')
        t.expect(r'In \[.*3.*\]:')
        t.send('for i in range(8): print("step", i, flush=True); time.sleep(0.5)\r\r')
        t.expect(r'step 1')
        t.hang_up()             # the terminal goes away in the middle of the cell
        row = self.ls()['train']
        self.assertEqual(row['state'], 'busy', row)
        self.assertIn('for i in range(8)', row['running'])
        self.assertEqual(row['attached'], '0', row)
        self.wait_ls('train', lambda r: r and r['state'] == 'idle')
        r = self.cellbox('attach', 'train', stdin='print(x + 1)\n')
        self.assertEqual(r.returncode, 0, r.stderr)
        # Every step, those printed while nobody was attached too, then the state intact.
        self.assertEqual(re.findall(r'step (\d)', r.stdout), [str(i) for i in range(8)],
                         r.stdout)
        self.assertIn('[earlier] In [*]: x = 41', r.stdout)
        self.assertTrue(r.stdout.rstrip().endswith('42'), r.stdout)
        self.assertIn("detached from session 'train'", r.stderr)

    def test_killed_front_end_and_timeout_while_detached(self):
        # The cell's timeout is the session's business: enforced with nobody attached.
        t = self.term('repl', '--name', 'slow', '--timeout', '2')
        t.expect(r'In \[.*1.*\]:')
        t.send('import time; time.sleep(60)\r')
        time.sleep(0.5)
        t.close()               # SIGKILL: the front end cannot say anything
        self.wait_ls('slow', lambda r: r and r['state'] == 'idle', timeout=30)
        r = self.cellbox('attach', 'slow', stdin='print("after")\n')
        self.assertIn('time.sleep(60)', r.stdout)
        self.assertRegex(r.stdout + r.stderr, r'KeyboardInterrupt|[Tt]imeout')
        self.assertIn('after', r.stdout)

    def test_detach_command(self):
        t = self.term('repl', '--name', 'd1')
        t.expect(r'In \[.*1.*\]:')
        t.send('v = "kept"\r')
        t.expect(r'In \[.*2.*\]:')
        t.send(':detach\r')
        t.expect(r"detached from session 'd1': it runs on")
        t.wait()
        r = self.cellbox('repl', '--attach', 'd1', stdin='print(v)\n')
        self.assertIn('kept', r.stdout)

    def test_unnamed_session_detaches_under_a_new_name(self):
        # (the cases of test_sessions_detach.py; here: from a pipe, the cells after it unread)
        r = self.cellbox('repl', stdin='x = 1\n:detach\nprint("after", x)\n')
        name = re.search(r"detached from session '(s-[a-z]{6})'", r.stderr).group(1)
        self.assertNotIn('after', r.stdout)
        self.assertEqual(self.names(), [name])
        r = self.cellbox('attach', name, stdin='print("x is", x)\n')
        self.assertIn('x is 1', r.stdout)


class ShareTest(Base):
    def test_two_front_ends_see_each_other(self):
        a = self.term('repl', '--name', 'pair')
        a.expect(r'In \[.*1.*\]:')
        a.send('shared = 1\r')
        a.expect(r'In \[.*2.*\]:')
        b = self.term('attach', '--repl', 'pair')
        b.expect(r'\[earlier\] In \[\*\]: shared = 1')
        b.expect(r'In \[.*2.*\]:')          # its prompts go on from the session's count
        a.send('print("from A", shared)\r')
        a.expect(r'from A 1')
        b.expect(r'\[another front end\] In \[\*\]: print\("from A", shared\)')
        b.expect(r'from A 1')
        b.send('shared = 2; print("from B")\r')
        b.expect(r'from B')
        a.expect(r'\[another front end\] In \[\*\]: shared = 2')
        a.expect(r'from B')
        a.send('print("now", shared)\r')
        a.expect(r'now 2')
        # A line printed in two parts, apart in time, reaches the other whole: its prompt,
        # drawn again after each part, does not erase the first.
        a.send('import sys, time; sys.stdout.write("part"); sys.stdout.flush(); '
               'time.sleep(0.5); print("ial")\r')
        a.expect(r'partial')
        b.expect(r'\[another front end\] In \[\*\]: import sys')
        b.expect(r'\rpartial\r\n')
        self.assertEqual(self.ls()['pair']['attached'], '2')

    def test_read_only_cannot_run(self):
        a = self.term('repl', '--name', 'watched')
        a.expect(r'In \[.*1.*\]:')
        a.send('secret = 7\r')
        a.expect(r'In \[.*2.*\]:')
        r = self.cellbox('attach', '--read-only', 'watched', stdin='secret = 8\nprint(1)\n')
        self.assertIn('[earlier] In [*]: secret = 7', r.stdout)
        self.assertIn('read-only', r.stderr)
        self.assertNotIn('1\n', r.stdout.split('secret = 7', 1)[1])
        a.send('print("secret is", secret)\r')
        a.expect(r'secret is 7')            # the watcher changed nothing


class LifeTest(Base):
    def test_kill_ends_kernel_and_host(self):
        # The kernel has a pid namespace of its own: found by its channel, in its argv.
        r = self.cellbox('repl', '--name', 'k1', stdin='import sys; print("chan", sys.argv[1])\n')
        chan = re.search(r'chan (\S+)', r.stdout).group(1)
        kernel = self.process_with(chan)
        host = self.host_pid('k1')
        self.assertTrue(alive(kernel) and alive(host))
        r = self.cellbox('kill', 'k1')
        self.assertEqual(r.returncode, 0, r.stderr)
        deadline = time.monotonic() + 10
        while (alive(kernel) or alive(host)) and time.monotonic() < deadline:
            time.sleep(0.1)
        self.assertFalse(alive(kernel), 'the kernel outlived cellbox kill')
        self.assertFalse(alive(host), 'the host outlived cellbox kill')
        self.assertEqual(self.names(), [])
        self.assertEqual(self.ls(), {})

    def test_directory_removed_ends_the_host(self):
        # Its directory removed (the runtime directory at logout, a test's tree), a session
        # can be reached by nobody: its host ends it, kernel and all, within seconds (it
        # looks every 5 s). Another directory put in its place is not the host's to remove.
        kernels = {}
        for name in ('rm1', 'rm2'):
            r = self.cellbox('repl', '--name', name,
                             stdin='import sys; print("chan", sys.argv[1])\n')
            kernels[name] = self.process_with(re.search(r'chan (\S+)', r.stdout).group(1))
        hosts = {name: self.host_pid(name) for name in kernels}
        top = os.path.join(self.tmp, 'run', 'sessions')
        shutil.rmtree(os.path.join(top, 'rm1'))
        os.rename(os.path.join(top, 'rm2'), os.path.join(self.tmp, 'rm2-moved'))
        os.mkdir(os.path.join(top, 'rm2'), 0o700)
        with open(os.path.join(top, 'rm2', 'mine'), 'w') as f:
            f.write('not the host\'s')
        deadline = time.monotonic() + 30
        pids = list(hosts.values()) + list(kernels.values())
        while any(alive(p) for p in pids) and time.monotonic() < deadline:
            time.sleep(0.2)
        for name in kernels:
            self.assertFalse(alive(hosts[name]), 'the host of %s outlived its directory' % name)
            self.assertFalse(alive(kernels[name]), 'the kernel of %s outlived it' % name)
        self.assertTrue(os.path.exists(os.path.join(top, 'rm2', 'mine')))
        with open(os.path.join(self.tmp, 'rm2-moved', 'host.log')) as f:
            self.assertIn("session 'rm2': its directory", f.read())
        shutil.rmtree(os.path.join(top, 'rm2'))

    def test_names(self):
        r = self.cellbox('repl', '--name', 'one', stdin='')
        self.assertEqual(r.returncode, 0, r.stderr)
        r = self.cellbox('repl', '--name', 'one', stdin='')
        self.assertEqual(r.returncode, 5)
        self.assertIn("a session named 'one' is running", r.stderr)
        for bad in ['../x', '.hidden', 'a/b', '', 'x' * 65]:
            r = self.cellbox('repl', '--name', bad, stdin='')
            self.assertEqual(r.returncode, 5, bad)
            self.assertIn('cannot name a session', r.stderr)
        # Without a name: the one running; with two, an error names both.
        r = self.cellbox('attach', stdin='print("only")\n')
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn('only', r.stdout)
        self.cellbox('repl', '--name', 'two', stdin='')
        r = self.cellbox('attach', stdin='print(1)\n')
        self.assertEqual(r.returncode, 2)
        self.assertIn('which one? one, two', r.stderr)
        self.cellbox('kill', 'two')
        r = self.cellbox('attach', 'nope')
        self.assertEqual(r.returncode, 5)
        self.assertIn("no session named 'nope'", r.stderr)
        r = self.cellbox('kill', 'nope')
        self.assertNotEqual(r.returncode, 0)
        self.assertEqual(self.names(), ['one'])

    def test_gc_removes_what_a_dead_host_left(self):
        r = self.cellbox('repl', '--name', 'doomed', stdin='x = 1\n')
        self.assertEqual(r.returncode, 0, r.stderr)
        self.cellbox('repl', '--name', 'kept', stdin='y = 1\n')
        host = self.host_pid('doomed')
        os.kill(host, signal.SIGKILL)       # the host dies without tidying up
        deadline = time.monotonic() + 10
        while alive(host) and time.monotonic() < deadline:
            time.sleep(0.05)
        self.assertEqual(self.ls()['doomed']['state'], 'gone')
        r = self.cellbox('gc')
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn('session doomed (its host was gone)', r.stdout)
        self.assertIn('1 named session\n', r.stdout)
        self.assertEqual(self.names(), ['kept'])
        self.assertEqual(self.ls()['kept']['state'], 'idle')

    def test_ls_shows_the_kernels_memory(self):
        # MEMORY: what the kernel holds now, measured on the host's side; it follows the cells.
        def mib(row):
            m = re.fullmatch(r'([0-9.]+)(KiB|MiB|GiB)', row['memory'])
            self.assertTrue(m, row)
            return float(m.group(1)) * {'KiB': 1 / 1024, 'MiB': 1, 'GiB': 1024}[m.group(2)]
        r = self.cellbox('repl', '--name', 'heavy', stdin='b = bytearray(300 * 2**20)\n')
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertGreaterEqual(mib(self.ls()['heavy']), 300)
        self.cellbox('attach', 'heavy', stdin='del b\nimport gc; gc.collect()\n')
        self.assertLess(mib(self.ls()['heavy']), 200)

    def test_idle_limit(self):
        r = self.cellbox('repl', '--name', 'brief', '--ttl', '2', stdin='x = 1\n')
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(self.ls()['brief']['ttl'], '2s')
        host = self.host_pid('brief')
        deadline = time.monotonic() + 30
        while alive(host) and time.monotonic() < deadline:
            time.sleep(0.2)
        self.assertFalse(alive(host), 'the idle limit did not end the session')
        self.assertEqual(self.names(), [])


class HostileTest(Base):
    def test_output_kept_for_attaching_is_capped_and_sanitised(self):
        # A cell (an agent's, a kernel's) prints 20 MB and a terminal title change: a front
        # end that attaches later gets 8 MiB of it and a note, no escape, and a working session.
        code = ('import sys; sys.stdout.write("\\x1b]0;pwned\\x07" + "A" * 20_000_000); '
                'print("\\nend")\n')
        r = self.cellbox('repl', '--name', 'big', stdin=code)
        self.assertEqual(r.returncode, 0, r.stderr[-500:])
        self.assertIn('end', r.stdout[-10:])
        r = self.cellbox('attach', 'big', stdin='print("alive")\n')
        self.assertEqual(r.returncode, 0, r.stderr[-500:])
        self.assertNotIn('\x1b]0;', r.stdout)
        self.assertIn('is not kept for front ends that attach later', r.stdout + r.stderr)
        self.assertLess(r.stdout.count('A'), 9 << 20)
        self.assertGreater(r.stdout.count('A'), 4 << 20)
        self.assertTrue(r.stdout.rstrip().endswith('alive'), r.stdout[-200:])


class CheckpointTest(Base):
    def test_rerun_restore_after_kill(self):
        r = self.cellbox('repl', '--name', 'c1',
                         stdin='x = 41\nimport math\ny = math.sqrt(16)\n1/0\n')
        ck = os.path.join(self.tmp, 'c1.json')
        r = self.cellbox('checkpoint', 'c1', ck)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn('4 cells to re-run', r.stdout)
        self.assertIn('not a memory image', r.stdout)
        self.assertEqual(os.stat(ck).st_mode & 0o777, 0o600)
        self.cellbox('kill', 'c1')
        r = self.cellbox('restore', ck)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("restored session 'c1' by re-running 4 cells in a fresh kernel "
                      "(not a memory restore), 1 of them raised", r.stdout)
        r = self.cellbox('attach', 'c1', stdin='print(x + 1, y)\n')
        self.assertTrue(r.stdout.rstrip().endswith('42 4.0'), r.stdout)
        # Under another name beside the first.
        r = self.cellbox('restore', '--name', 'c2', ck)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(sorted(self.ls()), ['c1', 'c2'])

    def test_idle_limit_checkpoints_first(self):
        # --ttl-checkpoint: the idle limit writes the cells to the file, then ends the
        # session; the file restores it (relative to where the front end ran).
        ck = os.path.join(self.tmp, 'idle.json')
        r = subprocess.run([BIN, 'repl', '--name', 'sleepy', '--ttl', '2', '--ttl-checkpoint',
                            'idle.json'], input='x = 41\nimport math\n', capture_output=True,
                           text=True, env=self.env, cwd=self.tmp, timeout=120)
        self.assertEqual(r.returncode, 0, r.stderr)
        host = self.host_pid('sleepy')
        deadline = time.monotonic() + 30
        while alive(host) and time.monotonic() < deadline:
            time.sleep(0.2)
        self.assertFalse(alive(host), 'the idle limit did not end the session')
        with open(ck) as f:
            saved = json.load(f)
        self.assertEqual([c['code'] for c in saved['cells']], ['x = 41\n', 'import math\n'])
        self.assertEqual((saved['name'], saved['kind']), ('sleepy', 'rerun'))
        self.assertEqual(os.stat(ck).st_mode & 0o777, 0o600)
        r = self.cellbox('restore', ck)
        self.assertEqual(r.returncode, 0, r.stderr)
        r = self.cellbox('attach', 'sleepy', stdin='print(x + 1, math.pi > 3)\n')
        self.assertTrue(r.stdout.rstrip().endswith('42 True'), r.stdout)

    def test_idle_checkpoint_that_cannot_be_written_keeps_the_session(self):
        # Nothing lost: a checkpoint file that cannot be written keeps the session (its
        # host's log says why), and it is tried again.
        ck = os.path.join(self.tmp, 'no-such-dir', 'idle.json')
        r = self.cellbox('repl', '--name', 'kept', '--ttl', '1', '--ttl-checkpoint', ck,
                         stdin='x = 5\n')
        self.assertEqual(r.returncode, 0, r.stderr)
        log = os.path.join(self.tmp, 'run', 'sessions', 'kept', 'host.log')
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            with open(log) as f:
                if f.read().count('is kept: no checkpoint to') >= 2:
                    break
            time.sleep(0.2)
        with open(log) as f:
            self.assertGreaterEqual(f.read().count('is kept: no checkpoint to %s' % ck), 2)
        r = self.cellbox('attach', 'kept', stdin='print(x * 2)\n')
        self.assertTrue(r.stdout.rstrip().endswith('10'), r.stdout)
        # Given without --ttl it is refused before anything starts.
        r = self.cellbox('repl', '--name', 'nottl', '--ttl-checkpoint', ck, stdin='1\n')
        self.assertEqual(r.returncode, 2)
        self.assertIn('give --ttl too', r.stderr)
        self.assertNotIn('nottl', self.names())

    def test_restart_starts_the_list_again(self):
        code = 'a = 1\nimport os; os._exit(1)\nb = 2\n'
        self.cellbox('repl', '--name', 'c3', stdin=code)
        ck = os.path.join(self.tmp, 'c3.json')
        r = self.cellbox('checkpoint', 'c3', ck)
        self.assertIn('1 cell to re-run', r.stdout)
        self.cellbox('kill', 'c3')
        self.cellbox('restore', ck)
        r = self.cellbox('attach', 'c3', stdin='print(b)\nprint(a)\n')
        self.assertIn('2', r.stdout)
        self.assertIn("NameError", r.stdout + r.stderr)

    def test_hostile_checkpoint_files(self):
        good = {'cellbox_checkpoint': 1, 'kind': 'rerun', 'name': 'h', 'kernel': 'python',
                'cells': [{'code': 'x = 1'}]}
        cases = {
            'not json': b'{"cellbox_checkpoint": 1, "cells": [',
            'no marker': json.dumps({'cells': []}).encode(),
            'memory kind': json.dumps(dict(good, kind='memory')).encode(),
            'new version': json.dumps(dict(good, cellbox_checkpoint=2)).encode(),
            'cells not a list': json.dumps(dict(good, cells={'code': 'x'})).encode(),
            'code not text': json.dumps(dict(good, cells=[{'code': 5}])).encode(),
            'too many cells': json.dumps(dict(good, cells=[{'code': 'x'}] * 10001)).encode(),
            'bad utf-8': json.dumps(good).encode().replace(b'x = 1', b'x = \xff'),
        }
        for what, data in cases.items():
            path = os.path.join(self.tmp, 'bad.json')
            with open(path, 'wb') as f:
                f.write(data)
            r = self.cellbox('restore', path)
            self.assertEqual(r.returncode, 2, what)
            self.assertTrue(r.stderr.strip(), what)
        # A FIFO is never waited on; a directory, a missing file: clear errors.
        fifo = os.path.join(self.tmp, 'fifo')
        os.mkfifo(fifo)
        r = self.cellbox('restore', fifo, timeout=20)
        self.assertEqual(r.returncode, 2)
        self.assertIn('not a regular file', r.stderr)
        r = self.cellbox('restore', self.tmp)
        self.assertEqual(r.returncode, 2)
        # A bad name in the file is not used: the session gets a name of its own.
        path = os.path.join(self.tmp, 'badname.json')
        with open(path, 'w') as f:
            json.dump(dict(good, name='../../etc'), f)
        r = self.cellbox('restore', path)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertRegex(r.stdout, r"restored session 's-[a-z]{6}'")
        self.assertEqual(len(self.names()), 1)


class UiTest(Base):
    def test_terminal_killed_then_attach(self):
        a = self.ui('--name', 'u1', tag='u1a')
        a.run('x = 3')
        a.wait_for('In [1]: x = 3')
        a.run('import time')
        a.run('for i in range(6): print("tick", i, flush=True); time.sleep(0.5)')
        a.keys('Enter')
        a.wait_for('tick 1')
        # The host holds nothing of the front end's: no terminal, no spare descriptor of it.
        held = fd_links(self.host_pid('u1'))
        self.assertFalse([h for h in held if h.startswith('/dev/pts') or h == '/dev/tty'],
                         held)
        a.close()               # the terminal (the whole tmux) goes away mid-cell
        row = self.ls()['u1']
        self.assertEqual(row['state'], 'busy', row)
        self.assertIn('for i in range(6)', row['running'])
        b = self.ui('attach', 'u1', tag='u1b')
        b.wait_for('In [1]: x = 3', 'tick 5')      # what ran while nobody watched too
        b.run('print(x * 14)')
        b.wait_for('42')

    def test_two_uis_live_and_read_only(self):
        a = self.ui('--name', 'u2', tag='u2a')
        b = self.ui('attach', 'u2', tag='u2b')
        a.run('print("A says hi")')
        b.wait_for('print("A says hi")', 'A says hi')
        b.run('w = 5; print("B set w")')
        a.wait_for('w = 5; print("B set w")', 'B set w')
        a.run('print("w is", w)')
        a.wait_for('w is 5')
        c = self.ui('attach', '--read-only', 'u2', tag='u2c')
        c.wait_for('w is 5', 'u2 (read-only): local')
        a.wait_for('u2: local \u2502')      # the status line names the session
        c.run('w = 6')
        c.wait_for('read-only')
        a.run('print("still", w)')
        a.wait_for('still 5')
        self.assertEqual(self.ls()['u2']['attached'], '3')

    def test_detach_command_and_quit_leave_it_running(self):
        a = self.ui('--name', 'u3', tag='u3a')
        a.run('kept = "yes"')
        a.wait_for("In [1]: kept")
        a.command('detach')
        self.assertEqual(a.exit_status(), 'exit=0')
        self.assertEqual(self.ls()['u3']['state'], 'idle')
        r = self.cellbox('attach', 'u3', stdin='print(kept)\n')
        self.assertIn('yes', r.stdout)
        # F12 is :detach's key.
        b = self.ui('attach', 'u3', tag='u3b')
        b.wait_for('In [1]: kept')
        b.keys('F12')
        self.assertEqual(b.exit_status(), 'exit=0')
        self.assertEqual(self.ls()['u3']['attached'], '0')
        # A session killed under an attached UI says so there.
        c = self.ui('attach', 'u3', tag='u3c')
        c.wait_for('In [1]: kept')
        self.cellbox('kill', 'u3')
        c.wait_for('the session was ended')
        # An unnamed session is given a name (test_sessions_detach.py has the rest).
        u = self.ui(tag='plain')
        u.command('detach')
        self.assertEqual(u.exit_status(), 'exit=0')
        self.assertEqual(len(self.names()), 1)


class WallTest(Base):
    def test_sessions_dir_not_ours_is_refused(self):
        run = os.path.join(self.tmp, 'run')
        os.makedirs(run, mode=0o700)
        elsewhere = os.path.join(self.tmp, 'elsewhere')
        os.makedirs(elsewhere, mode=0o700)
        os.symlink(elsewhere, os.path.join(run, 'sessions'))
        r = self.cellbox('repl', '--name', 'x', stdin='print(1)\n')
        self.assertEqual(r.returncode, 5)
        self.assertIn('sessions', r.stderr)
        self.assertEqual(os.listdir(elsewhere), [])
        os.unlink(os.path.join(run, 'sessions'))
        os.makedirs(os.path.join(run, 'sessions'), mode=0o755)
        os.chmod(os.path.join(run, 'sessions'), 0o755)
        r = self.cellbox('repl', '--name', 'x', stdin='print(1)\n')
        self.assertEqual(r.returncode, 5)
        self.assertIn('sessions', r.stderr)

    def test_socket_planted_in_place_is_not_trusted(self):
        # A session directory whose sock is a plain file (or gone): the host is gone.
        top = os.path.join(self.tmp, 'run', 'sessions', 'ghost')
        os.makedirs(top, mode=0o700)
        os.chmod(os.path.join(self.tmp, 'run'), 0o700)
        os.chmod(os.path.join(self.tmp, 'run', 'sessions'), 0o700)
        with open(os.path.join(top, 'sock'), 'w') as f:
            f.write('not a socket')
        self.assertEqual(self.ls()['ghost']['state'], 'gone')
        r = self.cellbox('attach', 'ghost')
        self.assertEqual(r.returncode, 5)
        self.assertIn('host is gone', r.stderr)
        # Starting a session of that name takes the place over.
        r = self.cellbox('repl', '--name', 'ghost', stdin='print(2)\n')
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(self.ls()['ghost']['state'], 'idle')


if __name__ == '__main__':
    unittest.main()
