"""`cellbox replay --jobs N FILE...` end to end: the real binary, the local backend, real IPython
kernels, a real pool daemon and a real pty for the progress bar."""
import json
import os
import pty
import re
import select
import signal
import subprocess
import time
import unittest

from test_cli import BIN, Base
from test_pool import wait_for


def kernel_pids(tmp):
    """Processes still running out of the test's runtime directory (kernels, their inits)."""
    run = os.path.join(tmp, 'run')
    pids = []
    for pid in os.listdir('/proc'):
        if not pid.isdigit():
            continue
        try:
            with open('/proc/%s/cmdline' % pid, 'rb') as f:
                cmd = f.read()
            with open('/proc/%s/stat' % pid) as f:
                if f.read().rsplit(')', 1)[1].split()[0] == 'Z':
                    continue
        except OSError:
            continue
        if run.encode() in cmd:
            pids.append(int(pid))
    return pids


def table(stderr):
    """The summary table's rows: file -> (cells, status, exit)."""
    rows = {}
    head = stderr.index('  cells  status')
    for line in stderr[head:].splitlines()[1:]:
        cells, status, rest = line[:7].strip(), line[9:20].strip(), line[20:].split()
        rows[rest[2]] = (cells, status, rest[0])
    return rows


class ReplayJobsTest(Base):
    def write(self, name, text):
        path = os.path.join(self.tmp, name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, 'w') as f:
            f.write(text)
        return path

    def files(self):
        """Six files: four that pass, one that fails in its second cell, one missing."""
        paths = []
        for i in range(4):
            paths.append(self.write('ok%d.py' % i, '# %%%%\nx = %d\nprint("file", x)\n'
                                    '# %%%%\nx * 7\n' % i))
        paths.insert(2, self.write('bad.py', '# %%\nprint("before")\n# %%\n1 / 0\n'
                                   '# %%\nprint("never")\n'))
        paths.insert(4, os.path.join(self.tmp, 'missing.py'))
        return paths

    def test_table_worst_exit_and_outputs_as_sequential(self):
        paths = self.files()
        out = os.path.join(self.tmp, 'out')
        p = self.cellbox('replay', '--jobs', '3', '--no-timing', '-o', out, *paths)
        self.assertEqual(p.returncode, 2, p.stderr)     # the missing file's: worse than 1
        rows = table(p.stderr)
        self.assertEqual(rows, {
            paths[0]: ('2', 'ok', '0'), paths[1]: ('2', 'ok', '0'),
            paths[2]: ('2', 'failed', '1'), paths[3]: ('2', 'ok', '0'),
            paths[4]: ('0', 'error', '2'), paths[5]: ('2', 'ok', '0')}, p.stderr)
        self.assertIn('6 files', p.stderr)
        self.assertIn("cannot read '%s': No such file or directory" % paths[4], p.stderr)
        # Each file's stdout whole, in argument order: what replays one by one print.
        seq_out, seq_err = '', []
        for path in paths:
            name = os.path.splitext(os.path.basename(path))[0]
            q = self.cellbox('replay', '--no-timing', '-o',
                             os.path.join(self.tmp, name + '.ipynb'), path)
            seq_out += q.stdout
            seq_err.append(re.sub(r' in [\d.]+ s\n', '\n', q.stderr))
            if os.path.exists(path):
                # The same notebook but for the cell ids a percent file's cells get at random.
                with open(os.path.join(out, name + '.ipynb')) as a, \
                        open(os.path.join(self.tmp, name + '.ipynb')) as b:
                    same = [re.sub(r'"id": "[0-9a-f]+"', '"id"', f.read()) for f in (a, b)]
                self.assertEqual(same[0], same[1], name)
        self.assertEqual(p.stdout, seq_out)
        # stderr: "==> FILE <==" then that file's own messages, file after file.
        blocks = re.split(r'^==> .* <==\n', p.stderr.split('replay: 6 files')[0], flags=re.M)
        self.assertEqual([re.sub(r' in [\d.]+ s\n', '\n', b) for b in blocks[1:]], seq_err)
        self.assertNoChannelsLeft()

    def test_jobs_run_side_by_side_and_jobs_1_one_after_another(self):
        # Each cell notes when it ran: with --jobs 3 the files overlap, with 1 they do not.
        paths = [self.write('t%d.py' % i, '# %%\nimport time\nt0 = time.time()\n'
                            'time.sleep(0.6)\nprint(t0, time.time())\n') for i in range(3)]

        def spans(stdout):
            return sorted(tuple(map(float, m)) for m in
                          re.findall(r'^([\d.]+) ([\d.]+)$', stdout, re.M))
        p = self.cellbox('replay', '-j', '3', *paths)
        self.assertEqual(p.returncode, 0, p.stderr)
        s = spans(p.stdout)
        self.assertEqual(len(s), 3, p.stdout)
        self.assertLess(s[1][0], s[0][1])       # the second started before the first ended
        p = self.cellbox('replay', '--jobs', '1', *paths)
        self.assertEqual(p.returncode, 0, p.stderr)
        s = spans(p.stdout)
        self.assertTrue(all(s[k + 1][0] >= s[k][1] for k in range(2)), s)

    def test_one_file_is_as_before(self):
        # --jobs with one file: the replay of old, byte for byte (no table, no header).
        path = self.write('one.py', '# %%\nprint("one")\n# %%\n6 * 7\n# %%\n1 / 0\n')
        old = self.cellbox('replay', path)
        new = self.cellbox('replay', '--jobs', '4', path)
        self.assertEqual((new.returncode, new.stdout), (old.returncode, old.stdout))
        strip = lambda s: re.sub(r' in [\d.]+ s\n', '\n', s)    # noqa: E731
        self.assertEqual(strip(new.stderr), strip(old.stderr))
        self.assertRegex(new.stderr, r'\Acellbox: In \[3\] \(1 / 0, cell 3 of the file\) raised '
                         r'an exception\nreplay: 3 cells run, 1 failed, 0 skipped in [\d.]+ s\n\Z')
        self.assertTrue(new.stdout.startswith('In [1]: print("one")\none\nIn [2]: 6 * 7\n'
                                              'Out[2]: 42\nIn [3]: 1 / 0\n'), new.stdout)

    def test_sigterm_leaves_no_kernel(self):
        paths = [self.write('s%d.py' % i, '# %%\nimport time\ntime.sleep(60)\n')
                 for i in range(3)]
        proc = subprocess.Popen([BIN, 'replay', '-j', '2', *paths], env=self.env,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            # Two kernels (with their inits) running the sleeps.
            wait_for(lambda: len(kernel_pids(self.tmp)) >= 2, timeout=60, what='two kernels')
            time.sleep(0.5)
            proc.send_signal(signal.SIGTERM)
            out, err = proc.communicate(timeout=30)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.communicate()
        self.assertEqual(proc.returncode, 128 + signal.SIGTERM, err)
        self.assertEqual(kernel_pids(self.tmp), [])
        self.assertNoChannelsLeft()
        rows = table(err)
        self.assertEqual([rows[p][1] for p in paths], ['stopped', 'stopped', 'not run'], err)

    def test_kill9_of_cellbox_stops_its_files(self):
        # Its file processes get SIGTERM when it dies (PR_SET_PDEATHSIG), close their
        # sessions and take their kernels with them.
        paths = [self.write('k%d.py' % i, '# %%\nimport time\ntime.sleep(60)\n')
                 for i in range(2)]
        proc = subprocess.Popen([BIN, 'replay', '-j', '2', *paths], env=self.env,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            wait_for(lambda: len(kernel_pids(self.tmp)) >= 2, timeout=60, what='two kernels')
        finally:
            proc.kill()
            proc.wait()
        wait_for(lambda: not kernel_pids(self.tmp), timeout=30, what='the kernels to end')
        wait_for(lambda: not os.listdir(os.path.join(self.tmp, 'run')), timeout=30,
                 what='the channels to go')

    def test_ctrl_c_interrupts_every_file(self):
        # SIGINT (a terminal's Ctrl-C reaches cellbox alone: its files have groups of their
        # own) interrupts the running cell of each file; the third file never starts.
        marks = os.path.join(self.tmp, 'marks')
        os.mkdir(marks)
        paths = [self.write('c%d.py' % i, '# %%%%\nimport time\nopen(%r, "w").close()\n'
                            'time.sleep(60)\n# %%%%\nprint("after")\n'
                            % os.path.join(marks, str(i))) for i in range(3)]
        proc = subprocess.Popen([BIN, 'replay', '-j', '2', *paths], env=self.env,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            # Both cells running (each left its mark), then Ctrl-C.
            wait_for(lambda: len(os.listdir(marks)) >= 2, timeout=60, what='two cells')
            time.sleep(0.3)
            proc.send_signal(signal.SIGINT)
            out, err = proc.communicate(timeout=30)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.communicate()
        self.assertEqual(proc.returncode, 130, err)
        self.assertEqual(out.count('KeyboardInterrupt'), 4, out)    # 2 files, a traceback each
        self.assertNotIn('after', out)
        rows = table(err)
        self.assertEqual([rows[p][1] for p in paths], ['interrupted', 'interrupted', 'not run'],
                         err)
        self.assertEqual(kernel_pids(self.tmp), [])
        self.assertNoChannelsLeft()

    def test_jobs_lease_from_the_pool(self):
        daemon = subprocess.Popen([BIN, 'pool', 'serve', '--min', '2', '--max', '3'],
                                  env=self.env, stdout=subprocess.DEVNULL,
                                  stderr=subprocess.DEVNULL)
        try:
            kernels = os.path.join(self.tmp, 'run', 'pool', 'default', 'kernels')
            ready = os.path.join(self.tmp, 'run', 'pool', 'default', 'ready')
            wait_for(lambda: os.path.isdir(ready) and len(os.listdir(ready)) >= 2,
                     timeout=60, what='warm kernels')
            # Each file prints the channel its kernel was started with.
            paths = [self.write('p%d.py' % i, '# %%\nimport sys\nprint("CHANNEL", sys.argv[1])\n')
                     for i in range(4)]
            p = self.cellbox('replay', '--pool', '-j', '2', *paths)
            self.assertEqual(p.returncode, 0, p.stderr)
            channels = re.findall(r'^CHANNEL (\S+)$', p.stdout, re.M)
            self.assertEqual(len(channels), 4, p.stdout)
            for c in channels:
                self.assertEqual(os.path.dirname(c), kernels, p.stdout)
            self.assertEqual(len(set(channels)), 4)     # a kernel never serves twice
            self.assertNotIn('note:', p.stderr)         # no fall back to a fresh kernel
        finally:
            daemon.send_signal(signal.SIGTERM)
            daemon.wait(30)

    def test_hostile_output_and_names(self):
        # What the kernel prints (escapes, a title and clipboard request, bytes not UTF-8) and
        # a file name another user could have made reach the terminal sanitised, as one
        # replay prints them.
        code = ('# %%\nimport sys\nsys.stdout.write("\\x1b]52;c;aGk=\\x07\\x1b[2J\\x1b]0;t\\x07red")\n'
                'sys.stdout.flush()\nsys.stdout.buffer.write(b"\\xff\\xfe\\n")\n')
        paths = [self.write('evil\x1b[31m\x1b]0;x\x07.py', code), self.write('plain.py', code)]
        p = subprocess.run([BIN, 'replay', '-j', '2', *paths], capture_output=True,
                           env=self.env, timeout=120)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertNotIn(b'\x1b', p.stdout)
        self.assertNotIn(b'\x1b', p.stderr)
        self.assertNotIn(b'\x07', p.stdout + p.stderr)
        self.assertIn(b'red', p.stdout)
        one = subprocess.run([BIN, 'replay', paths[1]], capture_output=True, env=self.env,
                             timeout=120)
        self.assertEqual(p.stdout, one.stdout * 2)

    def test_json_reports_one_after_another(self):
        # --json: each file's report (one JSON document per file that ran), in argument order.
        paths = self.files()
        p = self.cellbox('replay', '-j', '3', '--json', '--keep-going', *paths)
        self.assertEqual(p.returncode, 2, p.stderr)
        reports, i, dec = [], 0, json.JSONDecoder()
        while p.stdout[i:].strip():
            while p.stdout[i].isspace():
                i += 1
            r, i = dec.raw_decode(p.stdout, i)
            reports.append(r)
        self.assertEqual([r['file'] for r in reports], paths[:4] + paths[5:])
        self.assertEqual([r['exit_code'] for r in reports], [0, 0, 1, 0, 0])
        self.assertEqual(reports[2]['cells_failed'], 1)
        self.assertIn('cells  status', p.stderr)

    def test_each_file_its_own_kernel_language(self):
        # A .R file on the R kernel beside a .py file on IPython, as each replays alone.
        if not os.path.exists(os.environ.get('CELLBOX_TEST_RSCRIPT', '/usr/bin/Rscript')):
            self.skipTest('no Rscript (Debian: apt-get install r-base-core r-cran-jsonlite)')
        r = self.write('r.R', '# %%\nx <- 6 * 7\ncat("R says", x, "\\n")\n')
        py = self.write('p.py', '# %%\nimport sys\nprint("Python", sys.version_info[0])\n')
        p = self.cellbox('replay', '-j', '2', r, py)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn('R says 42', p.stdout)
        self.assertIn('Python 3', p.stdout)

    def test_name_clash_runs_nothing(self):
        a = self.write('a/x.py', '# %%\nprint(1)\n')
        b = self.write('b/x.py', '# %%\nprint(2)\n')
        p = self.cellbox('replay', '-j', '2', '-o', os.path.join(self.tmp, 'out'), a, b)
        self.assertEqual(p.returncode, 2)
        self.assertIn("would both write 'x' in -o", p.stderr)
        self.assertEqual(p.stdout, '')
        self.assertFalse(os.path.exists(os.path.join(self.tmp, 'out')))
        # An option every file would refuse is refused once, before any runs.
        p = self.cellbox('replay', '-j', '2', '--check-ignore', '(', a, b)
        self.assertEqual(p.returncode, 2)
        self.assertEqual(p.stderr.count('--check-ignore'), 1, p.stderr)
        self.assertNotIn('==>', p.stderr)

    def test_progress_on_a_terminal(self):
        paths = [self.write('g%d.py' % i, '# %%\nimport time; time.sleep(0.5)\n')
                 for i in range(3)]
        p = self.cellbox('replay', '-j', '2', *paths)
        self.assertNotIn('\x1b', p.stderr)      # not a terminal: no bar
        master, slave = pty.openpty()
        proc = subprocess.Popen([BIN, 'replay', '-j', '2', *paths], env=self.env,
                                stdout=subprocess.PIPE, stderr=slave)
        os.close(slave)
        seen = b''
        while True:
            r, _, _ = select.select([master], [], [], 60)
            try:
                chunk = os.read(master, 4096) if r else b''
            except OSError:
                chunk = b''
            if not chunk:
                break
            seen += chunk
        proc.communicate(timeout=30)
        os.close(master)
        self.assertEqual(proc.returncode, 0)
        self.assertIn(b'0/3 files, 2 running', seen)
        self.assertIn(b'\r\x1b[K', seen)
        self.assertIn(b'3 ok', seen)


class DockerJobsTest(Base):
    """The docker backend: SIGTERM removes every file's container. Skipped without dockerd or
    without the kernel image."""
    def setUp(self):
        from test_pool_docker import skip_reason
        why = skip_reason()
        if why:
            self.skipTest(why)
        super().setUp()
        self.env['CELLBOX_BACKEND'] = 'docker'

    def containers(self):
        """Containers (running or not) whose channel is under this test's directory."""
        from test_pool_docker import engine
        status, cs = engine('/containers/json?all=1')
        self.assertEqual(status, 200)
        return [c['Id'] for c in cs
                if c.get('Labels', {}).get('org.cellbox.channel', '').startswith(self.tmp)]

    def test_sigterm_removes_containers(self):
        paths = []
        for i in range(3):
            paths.append(os.path.join(self.tmp, 'd%d.py' % i))
            with open(paths[-1], 'w') as f:
                f.write('# %%\nimport time\ntime.sleep(60)\n')
        proc = subprocess.Popen([BIN, 'replay', '-j', '2', *paths], env=self.env,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            wait_for(lambda: len(self.containers()) >= 2, timeout=60, what='two containers')
            time.sleep(1)
            proc.send_signal(signal.SIGTERM)
            out, err = proc.communicate(timeout=60)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.communicate()
        self.assertEqual(proc.returncode, 128 + signal.SIGTERM, err)
        self.assertEqual(self.containers(), [])
        self.assertNoChannelsLeft()
        self.assertIn('2 stopped, 1 not run', err)


if __name__ == '__main__':
    unittest.main()
