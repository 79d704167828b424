"""Pooled mode end to end: `cellbox pool serve` and `--pool` clients, on the local backend."""
import fcntl
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
import unittest

from test_cli import BIN, clean_env, fd_links


# A cell that prints the name of its kernel's channel (what `pool status` calls it).
KERNEL_NAME = 'import os, sys; print(os.path.basename(sys.argv[1]))'


def gone(pid):
    """Whether process pid has exited (a zombie counts as gone)."""
    try:
        with open('/proc/%d/stat' % pid) as f:
            return f.read().rsplit(')', 1)[1].split()[0] == 'Z'
    except OSError:
        return True


def wait_for(pred, timeout=30, what='condition'):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        v = pred()
        if v:
            return v
        time.sleep(0.02)
    raise AssertionError('timed out waiting for ' + what)


class PoolTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix='cellbox-pool-')
        self.env = clean_env(self.tmp)
        self.daemon = None
        self.prefix = [BIN]         # what runs cellbox (as_unprivileged: as another user)

    def tearDown(self):
        if self.daemon and self.daemon.poll() is None:
            self.daemon.send_signal(signal.SIGTERM)
            try:
                self.daemon.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.daemon.kill()
        if self.daemon and self.daemon.stderr and not self.daemon.stderr.closed:
            self.daemon.stderr.close()
        shutil.rmtree(self.tmp, ignore_errors=True)

    def cellbox(self, *args, stdin=None, timeout=120):
        return subprocess.run([*self.prefix, *args], input=stdin, capture_output=True,
                              text=True, env=self.env, timeout=timeout, cwd=self.tmp)

    def start_daemon(self, *args):
        """`cellbox pool serve ARGS` started (the one before let go), not waited for."""
        if self.daemon:
            self.daemon.stderr.close()
        self.daemon = subprocess.Popen([*self.prefix, 'pool', 'serve', *args], env=self.env,
                                       cwd=self.tmp,
                                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                       text=True)
        return self.daemon

    def serve(self, *args, ready=None):
        self.start_daemon(*args)
        want = ready if ready is not None else 1

        def warm():
            if self.daemon.poll() is not None:      # it left: no use waiting
                raise AssertionError('the daemon ended (exit %s)' % self.daemon.returncode)
            st = self.status()
            return st.get('daemon_alive') and len(
                [k for k in st.get('ready', []) if k['alive']]) >= want
        # (generous: a container's start on a loaded machine, after a dead daemon's removal)
        try:
            wait_for(warm, timeout=120, what='warm kernels')
        except AssertionError as e:     # the pool's status, its log, the daemon's stderr
            st = self.status()
            self.daemon.kill()
            _, said = self.daemon.communicate(timeout=30)
            try:
                with open(os.path.join(self.tmp, 'run', 'pool', 'default', 'daemon.log')) as f:
                    log = f.read()[-4000:]
            except OSError as why:
                log = str(why)
            raise AssertionError('%s; status %s; daemon.log:\n%s\nthe daemon said:\n%s'
                                 % (e, json.dumps(st), log, said[-4000:])) from None
        return self.daemon

    def status(self):
        p = self.cellbox('pool', 'status', '--json')     # exit 5 without a daemon, JSON still
        return json.loads(p.stdout) if p.stdout.strip() else {}

    def hold_lease(self):
        """A REPL holding a pooled kernel until its stdin closes."""
        p = subprocess.Popen([BIN, 'repl', '--pool'], env=self.env, stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        p.stdin.write('print("held")\n')
        p.stdin.flush()
        self.assertEqual(p.stdout.readline(), 'held\n')
        return p

    def run_pid(self, *extra):
        """Run a cell on a pooled kernel; its stdout names the kernel (its channel's name).
        (Not its pid: a local kernel runs in a pid namespace of its own, so it is 2 inside.)"""
        p = self.cellbox('run', '--pool', *extra, '-c', KERNEL_NAME)
        return p

    def test_lease_never_reused(self):
        self.serve('--min', '1', '--max', '2')
        names = set()
        for _ in range(3):
            wait_for(lambda: self.status()['ready'], what='a ready kernel')
            ready_names = {k['name'] for k in self.status()['ready']}
            p = self.run_pid()
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertNotIn('note:', p.stderr)       # it was a pooled kernel
            name = p.stdout.strip()
            self.assertIn(name, ready_names)
            names.add(name)
        self.assertEqual(len(names), 3)               # a used kernel is never handed out again
        st = self.status()
        self.assertTrue(st['daemon_alive'])
        for k in st['ready']:
            self.assertNotIn(k['name'], names)
        # A released kernel's channel is removed (by its daemon, off the client's path), also
        # when the kernel died while leased (reaped by the daemon before its client let go).
        p = self.cellbox('run', '--pool', '-c', KERNEL_NAME + '; sys.stdout.flush(); os._exit(3)')
        self.assertNotEqual(p.returncode, 0)
        names.add(p.stdout.strip())
        kernels = os.path.join(self.tmp, 'run', 'pool', 'default', 'kernels')
        wait_for(lambda: not names & set(os.listdir(kernels)), timeout=10,
                 what='the used kernels\' channels to go')

    def test_contention_wait(self):
        self.serve('--min', '2', '--max', '2', ready=2)
        code = KERNEL_NAME + '; import time; time.sleep(0.3)'
        procs = [subprocess.Popen([BIN, 'run', '--pool', '--pool-strategy', 'wait', '-c', code],
                                  env=self.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                  text=True) for _ in range(6)]
        peak = 0
        while any(p.poll() is None for p in procs):
            st = self.status()
            if st:
                # By name: a lease taken between the two directory reads shows in both.
                alive = {k['name'] for k in st['ready'] + st['leased'] if k['alive']}
                peak = max(peak, len(alive))
            time.sleep(0.01)
        outs = [p.communicate() for p in procs]
        for p, (out, err) in zip(procs, outs):
            self.assertEqual(p.returncode, 0, err)
            self.assertNotIn('note:', err)
        names = [out.strip() for out, _ in outs]
        self.assertEqual(len(set(names)), 6)          # no kernel leased twice
        self.assertLessEqual(peak, 2)                 # nothing past the maximum

    def test_exhaustion_strategies(self):
        self.serve('--min', '1', '--max', '1')
        holder = self.hold_lease()
        try:
            wait_for(lambda: self.status()['leased'], what='the lease')
            p = self.run_pid('--pool-strategy', 'fail-fast')
            self.assertEqual(p.returncode, 5)
            self.assertIn('pool exhausted', p.stderr)
            p = self.run_pid('--pool-strategy', 'wait', '--pool-timeout', '0.5')
            self.assertEqual(p.returncode, 5)
            self.assertIn('no kernel became free within 0.5 s', p.stderr)
            p = self.run_pid('--pool-strategy', 'temporary')
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertIn('temporary kernel', p.stderr)
            st = self.status()
            self.assertEqual(len(st['ready']) + len(st['leased']), 1)   # the temporary one is not in it
        finally:
            holder.stdin.close()
            holder.wait(timeout=30)
        # Released: the daemon refills and a waiting client gets the new kernel.
        p = self.run_pid('--pool-strategy', 'wait', '--pool-timeout', '30')
        self.assertEqual(p.returncode, 0, p.stderr)

    def test_killed_client_is_reclaimed(self):
        self.serve('--min', '1', '--max', '1')
        holder = self.hold_lease()
        st = wait_for(lambda: self.status()['leased'], what='the lease')
        kernel_pid = st[0]['pid']
        holder.kill()
        holder.wait()
        wait_for(lambda: not self.status()['leased'], what='the lease to be reclaimed')
        wait_for(lambda: gone(kernel_pid), what='the kernel of the dead client to go')
        ready = wait_for(lambda: self.status()['ready'], what='a refill')
        self.assertNotEqual(ready[0]['pid'], kernel_pid)

    def test_killed_idle_kernel_is_replaced(self):
        self.serve('--min', '1', '--max', '2')
        old = self.status()['ready'][0]['pid']
        os.kill(old, signal.SIGKILL)
        wait_for(lambda: [k for k in self.status()['ready'] if k['pid'] != old and k['alive']],
                 what='a replacement kernel')
        self.assertEqual(self.run_pid().returncode, 0)

    def test_unresponsive_kernel_is_replaced(self):
        self.serve('--min', '1', '--max', '2', '--health-interval', '0.5')
        old = self.status()['ready'][0]['pid']
        os.killpg(old, signal.SIGSTOP)                # alive, but it no longer answers
        try:
            # Replaced: gone from the ready kernels and another there (a second kernel the
            # daemon starts meanwhile, up to --max, is not a replacement).
            def replaced():
                pids = [k['pid'] for k in self.status()['ready']]
                return old not in pids and pids
            wait_for(replaced, timeout=60, what='the health check to replace it')
        finally:
            try:
                os.killpg(old, signal.SIGCONT)
            except ProcessLookupError:
                pass
        self.assertIn('stopped answering', open(self.log_path()).read()
                      if os.path.exists(self.log_path()) else self.daemon_log())

    def log_path(self):
        return os.path.join(self.tmp, 'run', 'pool', 'default', 'daemon.log')

    def daemon_log(self):
        self.daemon.send_signal(signal.SIGTERM)
        _, err = self.daemon.communicate(timeout=30)
        return err

    def test_killed_daemon_restarts_clean(self):
        self.serve('--min', '2', '--max', '2', ready=2)
        kernels = [k['pid'] for k in self.status()['ready']]
        self.daemon.kill()
        self.daemon.wait()
        for pid in kernels:                           # its kernels die with it
            wait_for(lambda: gone(pid), what='kernel %d to die' % pid)
        p = self.run_pid()                            # no daemon: a fresh kernel, with a note
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn('no pool daemon serves', p.stderr)
        self.serve('--min', '1', '--max', '2')
        st = self.status()
        self.assertEqual(len(st['ready']), 1)         # the dead daemon's leftovers are gone
        self.assertEqual(len(os.listdir(os.path.join(self.tmp, 'run', 'pool', 'default',
                                                     'kernels'))), 1)
        self.assertEqual(self.run_pid().returncode, 0)

    def test_second_daemon_refused(self):
        self.serve('--min', '1', '--max', '1')
        p = self.cellbox('pool', 'serve', '--min', '1', timeout=30)
        self.assertEqual(p.returncode, 5)
        self.assertIn('already served', p.stderr)

    def test_client_looking_does_not_stop_a_daemon(self):
        # A client asking whether a daemon serves holds the daemon's lock shared for an
        # instant (longer when descheduled): a daemon starting then waits it out rather than
        # take it for another daemon (seen: a restarted daemon refused, 'already served').
        self.serve('--min', '1', '--max', '1')
        self.daemon.kill()
        self.daemon.wait()
        with open(os.path.join(self.tmp, 'run', 'pool', 'default', 'daemon.lock')) as f:
            fcntl.flock(f, fcntl.LOCK_SH)
            self.start_daemon('--min', '1')
            time.sleep(0.3)     # (the daemon has asked for the lock by now, and waits)
        if self.daemon.poll() is not None:
            self.fail('the daemon did not wait: %s' % self.daemon.stderr.read())
        wait_for(lambda: self.status().get('daemon_alive'), what='the daemon serving')

    def test_preimport_and_restart(self):
        self.serve('--min', '1', '--max', '2', '--preimport', 'colorsys, wave')
        p = self.cellbox('run', '--pool', '-c',
                         'import sys; print("colorsys" in sys.modules, "wave" in sys.modules)')
        self.assertEqual((p.returncode, p.stdout), (0, 'True True\n'), p.stderr)
        # A pooled cell that ignores the interrupt past its timeout: killed, kernel restarted.
        p = self.cellbox('run', '--pool', '--timeout', '0.5', '-c',
                         'import signal, time\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\n'
                         'time.sleep(30)', timeout=60)
        self.assertEqual(p.returncode, 3, p.stderr)

    def test_preimported_pyplot_keeps_plots(self):
        # The README's example: pyplot imported by the zygote before any kernel chose its
        # backend. The pooled kernel's figures are still captured (the inline backend).
        self.serve('--min', '1', '--max', '1', '--preimport', 'matplotlib.pyplot')
        p = self.cellbox('run', '--pool', '--json', '-c',
                         'import matplotlib.pyplot as plt; plt.plot([1, 2]); plt.show()\n'
                         'import matplotlib; print(matplotlib.get_backend())')
        self.assertEqual(p.returncode, 0, p.stderr)
        out = json.loads(p.stdout)
        self.assertEqual(len(out['plots']), 1, out)
        self.assertIn('inline', out['stdout'])

    def test_failed_preimport_is_logged(self):
        self.serve('--min', '1', '--max', '1', '--preimport', 'colorsys, no_such_module_here')
        p = self.cellbox('run', '--pool', '-c', 'import sys; print("colorsys" in sys.modules)')
        self.assertEqual((p.returncode, p.stdout), (0, 'True\n'), p.stderr)   # still offered
        log = self.daemon_log()
        self.assertIn("pre-import of 'colorsys, no_such_module_here' failed: "
                      "ModuleNotFoundError: No module named 'no_such_module_here'", log)

    def zygote_pid(self):
        try:
            with open(os.path.join(self.tmp, 'run', 'pool', 'default', 'zygote', 'pid')) as f:
                return int(f.read() or 0)
        except (OSError, ValueError):
            return 0

    def test_zygote_kernels(self):
        self.serve('--min', '1', '--max', '2', '--preimport', 'colorsys')
        zygote = wait_for(self.zygote_pid, what='the zygote')
        sock = os.readlink('/proc/%d/fd/3' % zygote)          # its end of the daemon's socket
        self.assertTrue(sock.startswith('socket:'), sock)
        cell = ('import os, random, sys\n'
                'fds = [os.readlink("/proc/self/fd/" + f) for f in os.listdir("/proc/self/fd")\n'
                '       if os.path.exists("/proc/self/fd/" + f)]\n'
                'print(os.getpid(), os.getppid(), "colorsys" in sys.modules, random.random(),\n'
                '      %r in fds, any(l.startswith("socket:") for l in fds))' % sock)
        draws = set()
        for _ in range(3):
            p = self.cellbox('run', '--pool', '-c', cell)
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertNotIn('note:', p.stderr)
            pid, ppid, pre, draw, has_sock, any_sock = p.stdout.split()
            # pid 2 under its init, the pool's pre-import, no descriptor of the zygote's
            self.assertEqual((pid, ppid, pre, has_sock, any_sock),
                             ('2', '1', 'True', 'False', 'False'), p.stdout)
            draws.add(draw)
        self.assertEqual(len(draws), 3)                       # each its own random state
        self.assertEqual(self.zygote_pid(), zygote)
        log = self.daemon_log()
        self.assertIn('zygote (pid %d) started with colorsys' % zygote, log)
        self.assertGreaterEqual(log.count('forked from the zygote'), 3, log)

    def as_unprivileged(self):
        """From now on cellbox runs as a user who is not root: nobody, when we are root."""
        if os.geteuid() != 0:
            return
        own = os.path.join(self.tmp, 'cellbox')     # the build may be where nobody can read
        shutil.copy2(BIN, own)
        for d, _, files in os.walk(self.tmp):
            for name in [d] + [os.path.join(d, f) for f in files]:
                os.chown(name, 65534, 65534)
        self.prefix = ['setpriv', '--reuid', '65534', '--regid', '65534', '--clear-groups', own]

    def test_zygote_kernels_unprivileged(self):
        # Not root: a kernel's init is cloned into a user namespace of its own, with the ids
        # mapped as the local backend maps a cold kernel's. The same facts either way.
        self.as_unprivileged()
        facts = ('import os\n'
                 'st = dict(l.split(":\\t", 1) for l in open("/proc/self/status").read().splitlines())\n'
                 'print(os.getuid(), os.getgid(), os.getpid(), os.getppid(), os.getgroups(),\n'
                 '      [st[k] for k in ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb",\n'
                 '                       "NoNewPrivs", "SigBlk", "SigIgn")],\n'
                 '      open("/proc/self/uid_map").read().split(),\n'
                 '      open("/proc/self/gid_map").read().split(), os.getcwd(), os.umask(0o22))')
        cold = self.cellbox('run', '-c', facts)
        self.assertEqual(cold.returncode, 0, cold.stderr)
        self.serve('--min', '1', '--max', '2')
        for _ in range(2):
            p = self.cellbox('run', '--pool', '-c', facts)
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertNotIn('note:', p.stderr)
            self.assertEqual(p.stdout, cold.stdout)
        self.assertNotEqual(cold.stdout.split()[0], '0', cold.stdout)     # not root inside
        self.assertGreaterEqual(self.daemon_log().count('forked from the zygote'), 2)

    def test_killed_zygote_is_replaced(self):
        self.serve('--min', '1', '--max', '2')
        zygote = wait_for(self.zygote_pid, what='the zygote')
        os.kill(zygote, signal.SIGKILL)
        wait_for(lambda: gone(zygote), what='the zygote to die')

        def replaced():
            p = self.run_pid()                                # kernels go on meanwhile
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertNotIn('note:', p.stderr)
            new = self.zygote_pid()
            return new if new not in (0, zygote) else None
        new = wait_for(replaced, what='a new zygote')
        for _ in range(2):
            self.assertEqual(self.run_pid().returncode, 0)
        log = self.daemon_log()
        self.assertIn('the zygote (pid %d) is gone' % zygote, log)
        self.assertIn('zygote (pid %d) started' % new, log)
        self.assertIn('forked from the zygote', log.split('zygote (pid %d) started' % new)[1])

    def test_spawns_overlap(self):
        self.serve('--min', '3', '--max', '3', ready=3)
        names = {self.run_pid().stdout.strip() for _ in range(4)}
        self.assertEqual(len(names), 4)
        wait_for(lambda: len(self.status()['ready']) == 3, what='the pool refilled')
        log = self.daemon_log()
        first_ready = log.index(' ready in ')
        # the kernels start side by side: the second and third before the first is ready
        self.assertGreaterEqual(log[:first_ready].count('starting kernel '), 3, log)
        self.assertIn('(3 in flight)', log)
        self.assertNotIn('(4 in flight)', log)

    def test_failing_kernel_backs_off(self):
        bad = os.path.join(self.tmp, 'python')
        with open(bad, 'w') as f:
            f.write('#!/bin/sh\nexit 3\n')
        os.chmod(bad, 0o755)
        self.daemon = subprocess.Popen([BIN, 'pool', 'serve', '--min', '2', '--max', '4'],
                                       env=dict(self.env, CELLBOX_PYTHON=bad),
                                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                       text=True)
        wait_for(lambda: self.status().get('daemon_alive'), what='the daemon')
        time.sleep(3)
        self.assertIsNone(self.daemon.poll())               # it goes on serving
        p = self.cellbox('run', '--pool', '--pool-strategy', 'fail-fast', '-c', '1')
        self.assertNotEqual(p.returncode, 0)
        self.assertIn('exhausted', p.stderr)
        log = self.daemon_log()
        fails = log.count('cannot start a kernel')
        # back-off 0.5, 1, 2 s: three rounds of min (2) kernels at most in 3 s
        self.assertGreaterEqual(fails, 2, log)
        self.assertLessEqual(fails, 8, log)
        self.assertIn('the kernel failed to start', log)
        self.assertNotIn('(5 in flight)', log)

    def test_bad_arguments(self):
        p = self.cellbox('pool', 'serve', '--min', '3', '--max', '2')
        self.assertEqual(p.returncode, 2)
        self.assertIn('--min <= --max', p.stderr)
        p = self.cellbox('run', '--pool', '--pool-strategy', 'sometimes', '-c', '1')
        self.assertEqual(p.returncode, 2)
        self.assertIn('is not one of wait|fail-fast|temporary', p.stderr)
        p = self.cellbox('pool', 'status')
        self.assertEqual(p.returncode, 5)
        self.assertIn('no pool daemon is running', p.stderr)


    def test_detach_and_stop(self):
        # --detach returns once the daemon serves (it says so on a pipe, not by a file);
        # `pool stop` ends the process holding the pool's lock, and waits for it.
        p = self.cellbox('pool', 'serve', '--detach', '--min', '1', '--max', '1', timeout=60)
        self.assertEqual(p.returncode, 0, p.stderr)
        pid = int(p.stdout.split('served by pid ')[1].split()[0])
        try:
            self.assertTrue(self.status()['daemon_alive'])
            self.assertEqual(self.status()['daemon']['pid'], pid)
            p = self.cellbox('pool', 'stop', timeout=60)
            self.assertEqual((p.returncode, p.stdout), (0, 'pool daemon %d stopped\n' % pid),
                             p.stderr)
            wait_for(lambda: gone(pid), timeout=5, what='the daemon to end')
            self.assertFalse(self.status()['daemon_alive'])
            p = self.cellbox('pool', 'stop')
            self.assertEqual(p.returncode, 2)
            self.assertIn('no pool daemon of ours is running', p.stderr)
            with open(self.log_path()) as f:
                self.assertIn('serving', f.read())
        finally:
            if not gone(pid):
                os.kill(pid, signal.SIGKILL)

    FDS = ('import json, os, sys\n'
           'def fds(p):\n'
           '    out = {}\n'
           '    for f in os.listdir("/proc/%s/fd" % p):\n'
           '        try:\n'
           '            out[int(f)] = os.readlink("/proc/%s/fd/%s" % (p, f))\n'
           '        except OSError:\n'
           '            pass\n'
           '    return out\n'
           'print(json.dumps([sys.argv[1], fds("self"), fds(1)]))\n')

    def assertOwnDescriptors(self, out, marker):
        """A kernel's descriptors (the cell's printout of FDS) are stdio and its own: its
        channel's files, its pipes, its inotify, /dev/null; its init (pid 1) has stdio only."""
        channel, mine, init = json.loads(out)
        for fd, what in list(mine.items()) + list(init.items()):
            self.assertNotEqual(what, marker, 'the caller\'s descriptor %s reached the kernel'
                                % fd)
        self.assertEqual(sorted(init), ['0', '1', '2'], init)
        for fd, what in mine.items():
            if int(fd) > 2:
                self.assertTrue(what.startswith((channel + '/', 'pipe:', 'anon_inode:'))
                                or what == '/dev/null', (fd, what, mine))

    def test_descriptors_not_inherited(self):
        # A descriptor the caller left open without close-on-exec reaches no kernel: not a
        # cold one of `run`, not one of the pool (its daemon has it), nor the zygote.
        marker = os.path.join(self.tmp, 'caller-secret')
        first = os.open(marker, os.O_WRONLY | os.O_CREAT, 0o600)
        fd = os.dup2(first, 42)         # (above the zygote's socket, which takes 3)
        os.close(first)
        try:
            p = subprocess.run([BIN, 'run', '-c', self.FDS], capture_output=True, text=True,
                               env=self.env, cwd=self.tmp, timeout=120, pass_fds=(fd,))
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertOwnDescriptors(p.stdout, marker)
            self.daemon = subprocess.Popen([BIN, 'pool', 'serve', '--min', '1', '--max', '2'],
                                           env=self.env, cwd=self.tmp, pass_fds=(fd,),
                                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                           text=True)
        finally:
            os.close(fd)
        wait_for(lambda: self.status().get('ready'), what='a warm kernel')
        zygote = wait_for(self.zygote_pid, what='the zygote')
        self.assertIn(marker, fd_links(self.daemon.pid))
        self.assertNotIn(marker, fd_links(zygote))
        for _ in range(2):
            p = self.cellbox('run', '--pool', '-c', self.FDS)
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertNotIn('note:', p.stderr)
            self.assertOwnDescriptors(p.stdout, marker)
        self.assertGreaterEqual(self.daemon_log().count('forked from the zygote'), 2)

    LAYOUT = ('import ctypes, json\n'
              'libc = ctypes.CDLL(None)\n'
              'libc.getauxval.restype = ctypes.c_ulong\n'
              'maps = {}\n'
              'for line in open("/proc/self/maps"):\n'
              '    f = line.split()\n'
              '    if len(f) >= 6:\n'
              '        maps.setdefault(f[5], f[0].split("-")[0])\n'
              'print(json.dumps({"hash": hash("cellbox"), "heap": maps.get("[heap]"),\n'
              '    "stack": maps.get("[stack]"),\n'
              '    "libc": ctypes.cast(libc.getpid, ctypes.c_void_p).value,\n'
              '    "at_random": ctypes.string_at(libc.getauxval(25), 16).hex()}))\n')

    def test_zygote_kernels_share_layout(self):
        # What docs/security.md says kernels forked from one zygote share, and cold kernels
        # do not: the string hash seed, where libc, the heap and the stack are (ASLR is drawn
        # at exec), and AT_RANDOM, glibc's seed of its stack canary and pointer guard.
        with open('/proc/sys/kernel/randomize_va_space') as f:
            if f.read().strip() == '0':
                raise unittest.SkipTest('address-space randomisation is off here')
        self.env.pop('PYTHONHASHSEED', None)
        cold = []
        for _ in range(2):
            p = self.cellbox('run', '-c', self.LAYOUT)
            self.assertEqual(p.returncode, 0, p.stderr)
            cold.append(json.loads(p.stdout))
        for key in cold[0]:
            self.assertNotEqual(cold[0][key], cold[1][key], key)
        self.serve('--min', '1', '--max', '2')
        zygote = wait_for(self.zygote_pid, what='the zygote')
        warm = []
        for _ in range(2):
            p = self.cellbox('run', '--pool', '-c', self.LAYOUT)
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertNotIn('note:', p.stderr)
            warm.append(json.loads(p.stdout))
        self.assertEqual(warm[0], warm[1])
        self.assertEqual(self.zygote_pid(), zygote)


if __name__ == '__main__':
    unittest.main()
