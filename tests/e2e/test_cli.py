"""End-to-end tests of the cellbox executable: `run`, `repl` through a pipe and a real pty."""
import json
import os
import pty
import re
import select
import shutil
import signal
import subprocess
import tempfile
import time
import unittest

BIN = os.environ.get('CELLBOX_BIN', 'cellbox')
PYTHON = os.environ.get('CELLBOX_TEST_PYTHON', '/usr/bin/python3')


def fd_links(pid):
    """What process `pid`'s descriptors point at: those still open when read, since it may
    close one between the listing and the read (a connection it has just ended)."""
    fds = '/proc/%d/fd' % pid
    links = []
    for f in os.listdir(fds):
        try:
            links.append(os.readlink(os.path.join(fds, f)))
        except FileNotFoundError:
            pass
    return links


def clean_env(tmp):
    env = {k: v for k, v in os.environ.items() if not k.startswith('CELLBOX_')}
    env.update(XDG_CONFIG_HOME=os.path.join(tmp, 'config'),
               XDG_STATE_HOME=os.path.join(tmp, 'state'),
               CELLBOX_RUNTIME_DIR=os.path.join(tmp, 'run'),
               CELLBOX_PYTHON=PYTHON, TERM='xterm')
    env.pop('NO_COLOR', None)
    return env


class Base(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix='cellbox-e2e-')
        self.env = clean_env(self.tmp)

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def cellbox(self, *args, stdin=None, timeout=120):
        return subprocess.run([BIN, *args], input=stdin, capture_output=True, text=True,
                              env=self.env, timeout=timeout)

    def assertNoChannelsLeft(self):
        run_dir = os.path.join(self.tmp, 'run')
        left = os.listdir(run_dir) if os.path.isdir(run_dir) else []
        self.assertEqual(left, [], 'channel directories left behind')


class RunTest(Base):
    def test_print(self):
        p = self.cellbox('run', '-c', 'print(6*7)')
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stdout, '42\n')
        self.assertNoChannelsLeft()

    def test_error_exit_1(self):
        p = self.cellbox('run', '-c', '1/0')
        self.assertEqual(p.returncode, 1)
        self.assertIn('ZeroDivisionError', p.stderr)
        self.assertIn('Traceback', p.stderr)
        self.assertNotIn('\x1b', p.stderr)   # not a terminal: no colours

    def test_file_and_stdin(self):
        path = os.path.join(self.tmp, 'cell.py')
        with open(path, 'w') as f:
            f.write('import sys\nprint("out")\nprint("err", file=sys.stderr)\n')
        p = self.cellbox('run', path)
        self.assertEqual((p.returncode, p.stdout, p.stderr), (0, 'out\n', 'err\n'))
        p = self.cellbox('run', '-', stdin='print("from stdin")\n')
        self.assertEqual((p.returncode, p.stdout), (0, 'from stdin\n'))

    def test_json_memory_is_bounded(self):
        # 256 MB of output: --json keeps --max-output of it and says so; --stdout gets all of
        # it; cellbox's memory does not grow with the output (it took 3 GB for 1 GB).
        out = os.path.join(self.tmp, 'stdout.txt')
        code = 'import sys\nfor i in range(256): sys.stdout.write("x" * (1 << 20))\n'
        # (under AddressSanitizer, what is freed waits in a quarantine of 256 MB: keep it small)
        env = dict(self.env, ASAN_OPTIONS=os.environ.get('ASAN_OPTIONS', '') +
                   ':quarantine_size_mb=4:thread_local_quarantine_size_kb=64')
        proc = subprocess.Popen([BIN, 'run', '--json', '--max-output', '1m', '--stdout', out,
                                 '-c', code], env=env, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE)
        peak_kb = [0]

        def watch():        # cellbox's own peak (VmHWM), not its kernel's
            while proc.poll() is None:
                try:
                    with open('/proc/%d/status' % proc.pid) as f:
                        for line in f:
                            if line.startswith('VmHWM:'):
                                peak_kb[0] = max(peak_kb[0], int(line.split()[1]))
                except OSError:
                    pass
                time.sleep(0.05)
        import threading
        t = threading.Thread(target=watch)
        t.start()
        text, err = proc.communicate(timeout=300)
        t.join()
        self.assertEqual(proc.returncode, 0, err)
        o = json.loads(text)
        self.assertEqual(len(o['stdout']), 1 << 20)
        self.assertTrue(o['truncated'])
        self.assertEqual(o['stdout_bytes'], 256 << 20)
        self.assertEqual(os.path.getsize(out), 256 << 20)
        self.assertGreater(peak_kb[0], 0)
        # (unbounded it would be past the 256 MB printed: before, 3 GB for 1.1 GB)
        self.assertLess(peak_kb[0], 64 << 10, 'cellbox took %d MB' % (peak_kb[0] >> 10))

    def test_bad_input(self):
        p = self.cellbox('run', os.path.join(self.tmp, 'missing.py'))
        self.assertEqual(p.returncode, 2)
        self.assertIn("cannot read '", p.stderr)
        self.assertIn('No such file or directory', p.stderr)
        empty = os.path.join(self.tmp, 'empty.py')
        open(empty, 'w').close()
        p = self.cellbox('run', empty)
        self.assertEqual(p.returncode, 2)
        self.assertIn('is empty: nothing to run', p.stderr)
        latin = os.path.join(self.tmp, 'latin1.py')
        with open(latin, 'wb') as f:
            f.write(b'print("caf\xe9")\n')
        p = self.cellbox('run', latin)
        self.assertEqual(p.returncode, 2)
        self.assertIn('not valid UTF-8 (byte 0xe9 at offset 10)', p.stderr)
        p = self.cellbox('run')
        self.assertEqual(p.returncode, 2)
        self.assertIn('nothing to run', p.stderr)
        p = self.cellbox('run', '--bogus', '-c', '1')
        self.assertEqual(p.returncode, 2)
        self.assertIn("unknown option '--bogus'", p.stderr)
        p = self.cellbox('run', '--timeout', 'soon', '-c', '1')
        self.assertEqual(p.returncode, 2)
        self.assertIn("not a number of seconds", p.stderr)

    def test_syntax_error(self):
        p = self.cellbox('run', '-c', 'def f(:\n  pass')
        self.assertEqual(p.returncode, 1)
        self.assertIn('SyntaxError', p.stderr)

    def test_json(self):
        code = ('import matplotlib.pyplot as plt\nprint("hello")\n'
                'plt.plot([1, 2, 3]); plt.show()\n1/0')
        p = self.cellbox('run', '--json', '-c', code)
        self.assertEqual(p.returncode, 1, p.stderr)
        out = json.loads(p.stdout)
        self.assertEqual(out['exit_code'], 1)
        self.assertEqual(out['stdout'], 'hello\n')
        self.assertEqual(out['status'], 'error')
        self.assertEqual(out['error']['ename'], 'ZeroDivisionError')
        self.assertEqual(len(out['plots']), 1)
        import base64
        png = base64.b64decode(out['plots'][0]['content_base64'])
        self.assertTrue(png.startswith(b'\x89PNG'))
        self.assertEqual(out['plots'][0]['format'], 'png')

    def test_plots_dir(self):
        d = os.path.join(self.tmp, 'plots')
        p = self.cellbox('run', '--plots', d, '-c',
                         'import matplotlib.pyplot as plt\n'
                         'for i in range(2):\n    plt.plot([i, 1]); plt.show()')
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(sorted(os.listdir(d)), ['plot-1.png', 'plot-2.png'])
        self.assertIn('[plot 2: ', p.stdout)
        self.assertIn('saved to ' + d + '/plot-2.png', p.stdout)

    def test_timeout_exit_3(self):
        p = self.cellbox('run', '--timeout', '0.5', '-c', 'while True: pass')
        self.assertEqual(p.returncode, 3, p.stderr)
        self.assertIn('timed out', p.stderr)

    def test_timeout_past_any_clock(self):
        # 1e300 s is a number of seconds, and as good as none: no cast of it may overflow
        # (the sanitized build's UBSan judges the timer it arms).
        p = self.cellbox('run', '--timeout', '1e300', '-c', 'print("in time")')
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stdout, 'in time\n')

    def test_kernel_death_exit_4(self):
        p = self.cellbox('run', '-c', 'import os; os._exit(7)')
        self.assertEqual(p.returncode, 4, p.stderr)
        self.assertIn('kernel died (exit code 7)', p.stderr)

    def test_no_kernel_exit_5(self):
        p = self.cellbox('run', '--python', '/nonexistent/python3', '-c', '1')
        self.assertEqual(p.returncode, 5)
        self.assertIn("cannot run '/nonexistent/python3'", p.stderr)

    def test_config_file_and_env(self):
        os.makedirs(os.path.join(self.tmp, 'config', 'cellbox'))
        with open(os.path.join(self.tmp, 'config', 'cellbox', 'config'), 'w') as f:
            f.write('timeout = 0.5\n')
        p = self.cellbox('run', '-c', 'while True: pass')
        self.assertEqual(p.returncode, 3)
        self.env['CELLBOX_TIMEOUT'] = 'x'
        p = self.cellbox('run', '-c', '1')
        self.assertEqual(p.returncode, 2)
        self.assertIn('CELLBOX_TIMEOUT', p.stderr)

    def channel_of_default_run(self, wrap=()):
        """The channel directory a run gets without a runtime directory set (its runner's
        argv[1]), the command run under `wrap` (a mount namespace, say)."""
        env = {k: v for k, v in self.env.items()
               if k not in ('CELLBOX_RUNTIME_DIR', 'XDG_RUNTIME_DIR')}
        p = subprocess.run([*wrap, BIN, 'run', '-c', 'import sys; print(sys.argv[1])'],
                           capture_output=True, text=True, env=env, timeout=120)
        self.assertEqual(p.returncode, 0, p.stderr)
        return p.stdout.strip()

    def test_runtime_dir_prefers_a_tmpfs(self):
        # Without XDG_RUNTIME_DIR the channel goes to /dev/shm (a tmpfs), not the disk's /tmp.
        st = os.statvfs('/dev/shm') if os.path.isdir('/dev/shm') else None
        fs = subprocess.run(['stat', '-f', '-c', '%T', '/dev/shm'], capture_output=True,
                            text=True).stdout.strip() if st else ''
        if fs != 'tmpfs' or st.f_blocks * st.f_frsize < 1 << 30:
            raise unittest.SkipTest('/dev/shm is not a tmpfs of 1 GiB or more here')
        chan = self.channel_of_default_run()
        self.assertTrue(chan.startswith('/dev/shm/cellbox-%d/' % os.getuid()), chan)
        root = os.path.dirname(chan)
        self.assertEqual(os.stat(root).st_mode & 0o777, 0o700)
        self.assertEqual(os.stat(root).st_uid, os.getuid())

    def test_gc_sweeps_the_old_tmp_place(self):
        # Channels were kept in /tmp/cellbox-UID before /dev/shm was preferred: `gc` without a
        # runtime directory set sweeps a dead process's channel there too.
        old = '/tmp/cellbox-%d' % os.getuid()
        p = subprocess.Popen([BIN, 'repl'], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             stderr=subprocess.DEVNULL, text=True,
                             env=dict(self.env, CELLBOX_RUNTIME_DIR=old))
        p.stdin.write('print("up")\n')
        p.stdin.flush()
        self.assertEqual(p.stdout.readline().strip(), 'up')
        mine = [n for n in os.listdir(old) if n.startswith('%d-' % p.pid)]
        self.assertEqual(len(mine), 1, os.listdir(old))
        p.kill()                                      # the front end dies: its channel stays
        p.wait()
        p.stdin.close()
        p.stdout.close()
        self.assertTrue(os.path.isdir(os.path.join(old, mine[0])))
        env = {k: v for k, v in self.env.items()
               if k not in ('CELLBOX_RUNTIME_DIR', 'XDG_RUNTIME_DIR')}
        g = subprocess.run([BIN, 'gc'], capture_output=True, text=True, env=env, timeout=120)
        self.assertEqual(g.returncode, 0, g.stderr)
        self.assertIn('removed channel %s/%s of process %d' % (old, mine[0], p.pid), g.stdout)
        self.assertFalse(os.path.exists(os.path.join(old, mine[0])))

    def test_runtime_dir_small_shm_is_not_used(self):
        # A container's 64 MB /dev/shm would fill before a kernel's quota: /tmp instead.
        if os.geteuid() != 0 or not shutil.which('unshare'):
            raise unittest.SkipTest('needs root and unshare for a mount namespace')
        wrap = ['unshare', '-m', '--propagation', 'private', 'sh', '-c',
                'mount -t tmpfs -o size=64m tmpfs /dev/shm && exec "$@"', 'sh']
        chan = self.channel_of_default_run(wrap)
        self.assertTrue(chan.startswith('/tmp/cellbox-%d/' % os.getuid()), chan)

    def libraries_loaded(self, *args):
        """The shared libraries the cellbox process itself loaded running `args` (the
        dynamic loader's own account, LD_DEBUG=libs, of that pid only)."""
        logs = os.path.join(self.tmp, 'ld')
        os.makedirs(logs, exist_ok=True)
        env = dict(self.env, LD_DEBUG='libs', LD_DEBUG_OUTPUT=os.path.join(logs, 'ld'))
        p = subprocess.Popen([BIN, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True, env=env)
        out, err = p.communicate(timeout=120)
        self.assertEqual(p.returncode, 0, err)
        with open(os.path.join(logs, 'ld.%d' % p.pid)) as f:
            return out, re.findall(r'calling init: (\S+)', f.read())

    def test_one_shots_do_not_load_libcurl(self):
        # libcurl and its thirty libraries are loaded only by what talks to a container
        # engine, libzmq and its own only by `cellbox kernel`; --version, config and a local
        # run never do (they were most of each start).
        for args in (['--version'], ['config'], ['run', '--backend', 'local', '-c', 'pass']):
            out, libs = self.libraries_loaded(*args)
            self.assertTrue(any('libc.so' in lib for lib in libs), libs)  # the account works
            self.assertEqual([lib for lib in libs if 'libcurl' in lib or 'libssl' in lib
                              or 'libgssapi' in lib or 'libzmq' in lib], [], args)
        self.assertTrue(out == '', out)

    def test_sigint_interrupts(self):
        proc = subprocess.Popen([BIN, 'run', '-c', 'import time\nprint("go", flush=True)\n'
                                 'time.sleep(60)'], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, env=self.env)
        self.assertEqual(proc.stdout.readline(), 'go\n')
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=30)
        self.assertEqual(proc.returncode, 130)
        self.assertIn('KeyboardInterrupt', err)


class ReplPipeTest(Base):
    def test_expression(self):
        p = self.cellbox('repl', stdin='x = 41\nx + 1\n')
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stdout, '42\n')

    def test_default_command_is_repl(self):
        p = self.cellbox(stdin='print("hi")\n')
        self.assertEqual((p.returncode, p.stdout), (0, 'hi\n'))

    def test_multiline_and_errors(self):
        cells = ('def f(n):\n    return n * 2\n\nf(21)\n'
                 'for i in range(3):\n    print(i)\n\n'
                 '1/0\n'
                 'print("after")\n')
        p = self.cellbox('repl', stdin=cells)
        self.assertEqual(p.returncode, 1)     # a cell failed
        self.assertEqual(p.stdout, '42\n0\n1\n2\nafter\n')
        self.assertIn('ZeroDivisionError', p.stderr)

    def test_blocks_wait_for_their_end(self):
        # The kernel is asked about the cell as typed: an indented block waits for its else:
        # (with the line's newline IPython took `if x:` / `    a = 1` as a whole cell).
        cells = ('x = 0\nif x:\n    a = 1\nelse:\n    a = 2\nprint("a is", a)\n'
                 'try:\n    1 / x\nexcept ZeroDivisionError:\n    print("caught")\n'
                 'for i in range(2):\n    print("i", i)\nprint("end")\n')
        p = self.cellbox('repl', stdin=cells)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stdout, 'a is 2\ncaught\ni 0\ni 1\nend\n')
        self.assertNotIn('SyntaxError', p.stderr)

    def test_input_from_pipe(self):
        p = self.cellbox('repl', stdin='name = input("who? ")\nAda\nname.upper()\n')
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("'ADA'", p.stdout)


class Pty:
    """The REPL on a real pseudo-terminal, read as a person would see it."""

    def __init__(self, env):
        self.pid, self.fd = pty.fork()
        if self.pid == 0:
            os.execve(BIN, [BIN, 'repl'], env)
        self.buf = b''

    def expect(self, pattern, timeout=60):
        deadline = time.monotonic() + timeout
        rx = re.compile(pattern.encode() if isinstance(pattern, str) else pattern)
        while True:
            m = rx.search(self.buf)
            if m:
                self.buf = self.buf[m.end():]
                return m
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError('timed out waiting for %r; screen so far: %r'
                                     % (pattern, self.buf[-2000:]))
            r, _, _ = select.select([self.fd], [], [], left)
            if r:
                try:
                    data = os.read(self.fd, 65536)
                except OSError:
                    data = b''
                if not data:
                    raise AssertionError('terminal closed waiting for %r: %r'
                                         % (pattern, self.buf[-2000:]))
                self.buf += data

    def send(self, text):
        os.write(self.fd, text.encode())

    def close(self):
        try:
            os.kill(self.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        try:
            os.waitpid(self.pid, 0)
        except ChildProcessError:
            pass
        os.close(self.fd)

    def wait(self, timeout=30):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                return os.waitstatus_to_exitcode(status)
            try:
                r, _, _ = select.select([self.fd], [], [], 0.05)
                if r:
                    self.buf += os.read(self.fd, 65536)
            except OSError:
                pass
        raise AssertionError('repl did not exit')


class ReplTtyTest(Base):
    def test_terminal_gone_at_input(self):
        # A cell that asks for input again and again; the terminal goes away (its other side
        # closed: a killed tmux pane, an ssh gone). The REPL leaves as on a hang-up and takes
        # its kernel and channel with it (before: it answered end of input for ever).
        t = Pty(self.env)
        t.expect(r'In \[')
        t.send('while True: input("q" + "? ")\r')
        t.expect(r'q\? ')
        os.close(t.fd)
        deadline = time.monotonic() + 60
        status = None
        while time.monotonic() < deadline:
            pid, st = os.waitpid(t.pid, os.WNOHANG)
            if pid:
                status = st
                break
            time.sleep(0.1)
        if status is None:
            os.kill(t.pid, signal.SIGKILL)
            os.waitpid(t.pid, 0)
            self.fail('the REPL went on after its terminal went away')
        self.assertNoChannelsLeft()

    def test_session(self):
        t = Pty(self.env)
        try:
            t.expect(r'IPython')
            t.expect(r'In \[.*1.*\]:')
            t.send('x = 41\r')
            t.expect(r'In \[.*2.*\]:')
            t.send('x + 1\r')
            t.expect(r'Out\[2\]:.* 42')
            # A multi-line cell: the kernel says when it is complete; indent is pre-filled.
            t.send('for i in range(2):\r')
            t.expect(r'\.\.\.: ')
            t.send('print("row", i * 10)\r\r')
            t.expect(r'row 0\r\nrow 10')
            # Tab completion from the kernel.
            t.send('import collec\t')
            t.expect(r'collections')
            t.send('\r')
            t.expect(r'In \[')
            # Ctrl-C at the prompt clears the line; the next line runs alone.
            # (Outputs are built by the cell so that the echo of the typed line cannot match.)
            t.send('this is not python')
            t.expect('python')
            t.send('\x03')
            t.expect(r'\^C')
            t.expect(r'In \[')
            t.send('print("cl" + "ean")\r')
            t.expect(r'clean\r\n')
            t.expect(r'In \[')
            # Ctrl-C interrupts a running cell; the session goes on.
            t.send('import time; print("slee" + "ping", flush=True); time.sleep(60)\r')
            t.expect(r'sleeping\r\n')
            t.send('\x03')
            t.expect(r'KeyboardInterrupt')
            t.expect(r'In \[')
            t.send('x\r')
            t.expect(r'Out\[\d+\]:.* 41')
            # Ctrl-D exits.
            t.expect(r'In \[')
            t.send('\x04')
            self.assertEqual(t.wait(), 0)
        finally:
            t.close()
        # The cells are recorded (Up recalls them in the next session: test_daily.py).
        p = self.cellbox('history', 'search', '^x = 41$')
        self.assertEqual(p.returncode, 0, p.stderr)


class HelpTest(Base):
    def test_help_and_version(self):
        p = self.cellbox('--help')
        self.assertEqual(p.returncode, 0)
        for word in ('repl', 'run', 'config', '--backend', '--timeout'):
            self.assertIn(word, p.stdout)
        p = self.cellbox('run', '--help')
        self.assertEqual(p.returncode, 0)
        self.assertIn('--json', p.stdout)
        self.assertIn('Exit codes', p.stdout)
        p = self.cellbox('--version')
        self.assertRegex(p.stdout, r'^cellbox \d+\.\d+\.\d+\n$')
        p = self.cellbox('frobnicate')
        self.assertEqual(p.returncode, 2)
        self.assertIn("unknown command 'frobnicate'", p.stderr)
        p = self.cellbox('config')
        self.assertEqual(p.returncode, 0)
        self.assertIn('CELLBOX_TIMEOUT', p.stdout)

    def test_help_lists_what_applies(self):
        # Each command's help lists only the flags it takes, from the settings table.
        cases = {
            ('history', '--help'): ([], ['--backend', '--image', '--timeout']),
            ('gc', '--help'): (['--backend', '--images'], ['--image', '--timeout', '--pool']),
            ('check', '--help'): (['--policy', '--json', '--list'], ['--backend', '--libraries']),
            ('tui', '--help'): (['--theme', '--graphics', '--image'], []),
            ('run', '--help'): (['--image', '--graphics', '--copy-in', '--json'], ['--theme']),
            ('replay', '--help'): (['--check', '--pool'], ['--theme', '--graphics']),
            ('pool', 'status', '--help'): (['--pool-name', '--json'], ['--image', '--timeout']),
            ('pool', 'serve', '--help'): (['--min', '--image'], ['--timeout', '--copy-in']),
        }
        for args, (present, absent) in cases.items():
            p = self.cellbox(*args)
            self.assertEqual(p.returncode, 0, args)
            for flag in present:
                self.assertIn(flag + ' ', p.stdout, args)
            for flag in absent:
                self.assertNotIn(flag + ' ', p.stdout, args)
        # The exit codes of --help are the reason table's, one a line.
        p = self.cellbox('run', '--help')
        self.assertIn('Exit codes:\n  0 ok\n  1 the code raised\n', p.stdout)
        self.assertIn('  4 the kernel died\n  5 the kernel could not start\n'
                      '  7 the security policy blocked the code (nothing ran)\n'
                      '  130 interrupted\n', p.stdout)

    def test_refused_and_ambiguous(self):
        p = self.cellbox('history', 'list', '--image', 'x')
        self.assertEqual(p.returncode, 2)
        self.assertIn("history list: unknown option '--image'", p.stderr)
        p = self.cellbox('gc', '--timeout', '3')
        self.assertEqual(p.returncode, 2)
        self.assertIn("unknown option '--timeout'", p.stderr)
        p = self.cellbox('rep')
        self.assertEqual(p.returncode, 2)
        self.assertIn("ambiguous command 'rep': repl, replay", p.stderr)
        p = self.cellbox('run', '--po', '-c', '1')
        self.assertEqual(p.returncode, 2)
        self.assertIn("ambiguous option '--po': --pool, --pool-name, --pool-strategy, "
                      "--pool-timeout", p.stderr)
        p = self.cellbox('run', '--json=yes', '-c', '1')
        self.assertEqual(p.returncode, 2)
        self.assertIn('--json takes no value', p.stderr)
        p = self.cellbox('run', '-c')
        self.assertEqual(p.returncode, 2)
        self.assertIn('--code needs a value (CODE)', p.stderr)
        p = self.cellbox('history', 'show')
        self.assertEqual(p.returncode, 2)
        self.assertIn('history show: too few arguments', p.stderr)
        p = self.cellbox('pool', 'frob')
        self.assertEqual(p.returncode, 2)
        self.assertIn("unknown subcommand 'frob'", p.stderr)

    def test_prefixes_and_forms(self):
        # A unique prefix names a command or an option; --flag=value and -cCODE work.
        p = self.cellbox('vers')
        self.assertRegex(p.stdout, r'^cellbox \d+\.\d+\.\d+\n$')
        p = self.cellbox('ru', '--js', '--timeout=5', '-cprint(6*7)')
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(json.loads(p.stdout)['stdout'], '42\n')
        p = self.cellbox('config', '--pool-strat', 'fail-fast', '--read-only=no', '--pool')
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertRegex(p.stdout, r'\n  pool-strategy +fail-fast ')
        self.assertRegex(p.stdout, r'\n  read-only +false ')
        self.assertRegex(p.stdout, r'\n  pool +true ')

    def test_copy_in_from_the_config(self):
        # --copy-in is a setting like any other: the config file may give it too.
        src = os.path.join(self.tmp, 'host.txt')
        with open(src, 'w') as f:
            f.write('from the config\n')
        os.makedirs(os.path.join(self.tmp, 'config', 'cellbox'))
        with open(os.path.join(self.tmp, 'config', 'cellbox', 'config'), 'w') as f:
            f.write('copy-in = %s:data.txt\n' % src)
        out = os.path.join(self.tmp, 'back.txt')
        # In the test's own directory: the kernel's working directory is ours.
        p = subprocess.run([BIN, 'run', '--copy-out', 'data.txt:' + out, '-c',
                            'print(open("data.txt").read(), end="")'], capture_output=True,
                           text=True, env=self.env, cwd=self.tmp, timeout=120)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stdout, 'from the config\n')
        with open(out) as f:
            self.assertEqual(f.read(), 'from the config\n')

    def test_unknown_backend(self):
        p = self.cellbox('run', '--backend', 'nope', '-c', '1')
        self.assertEqual(p.returncode, 5)
        self.assertIn("unknown backend 'nope'", p.stderr)


if __name__ == '__main__':
    unittest.main()
