"""End-to-end tests of the history store and `cellbox replay` (the golden cases are in
tests/golden/). Real processes, the real runner and IPython, a real pty for the progress bar."""
import glob
import json
import os
import pty
import select
import signal
import subprocess
import time
import unittest

import nbformat

from test_cli import Base, PYTHON


def history_files(tmp):
    return sorted(glob.glob(os.path.join(tmp, 'state', 'cellbox', 'sessions', '*',
                                         'history.jsonl')))


def kill_runner(tmp):
    """Stop the kernel a killed cellbox left behind (its pid is in the channel's host note)."""
    for note in glob.glob(os.path.join(tmp, 'run', '*', 'pid')):
        try:
            with open(note) as f:
                os.killpg(int(f.read()), signal.SIGKILL)
        except (OSError, ValueError):
            pass


class HistoryTest(Base):
    def test_run_is_recorded(self):
        for code in ('print(6 * 7)', 'x = 1\n1 / 0'):
            self.cellbox('run', '-c', code)
        p = self.cellbox('history', 'list')
        self.assertEqual(p.returncode, 0, p.stderr)
        lines = p.stdout.splitlines()
        self.assertEqual(len(lines), 2, p.stdout)
        self.assertIn('ok', lines[0])
        self.assertIn('print(6 * 7)', lines[0])
        self.assertIn('error', lines[1])
        self.assertIn('x = 1 ...', lines[1])
        p = self.cellbox('history', 'show', '1')
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn('print(6 * 7)\n42\n', p.stdout)
        p = self.cellbox('history', 'show', '2')
        self.assertIn('ZeroDivisionError: division by zero', p.stdout)
        p = self.cellbox('history', 'show', '9')
        self.assertEqual(p.returncode, 2)
        self.assertIn('no cell 9 (there are 2)', p.stderr)
        entry = json.loads(open(history_files(self.tmp)[1]).readline())
        self.assertEqual(entry['status'], 'error')
        self.assertEqual(entry['execution_count'], 1)
        self.assertEqual(entry['outputs'][0]['output_type'], 'error')
        self.assertGreater(entry['time'], 1.7e9)

    def test_replay_is_recorded(self):
        src = os.path.join(self.tmp, 'c.py')
        with open(src, 'w') as f:
            f.write('# %%\nprint("replayed")\n# %% [markdown]\n# text\n# %%\n2 + 2\n')
        p = self.cellbox('replay', src)
        self.assertEqual(p.returncode, 0, p.stderr)
        p = self.cellbox('history', 'list')
        self.assertEqual(len(p.stdout.splitlines()), 2, p.stdout)
        p = self.cellbox('history', 'show', '2')
        self.assertIn('2 + 2\n4\n', p.stdout)

    def test_search(self):
        for code in ('alpha = 1', 'beta = 2', 'alphabet = 3'):
            self.cellbox('run', '-c', code)
        p = self.cellbox('history', 'search', r'^alpha\w*\s=')
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(len(p.stdout.splitlines()), 2)
        self.assertNotIn('beta', p.stdout)
        p = self.cellbox('history', 'search', 'gamma')
        self.assertEqual((p.returncode, p.stdout), (1, ''))
        p = self.cellbox('history', 'search', '(unclosed')
        self.assertEqual(p.returncode, 2)
        self.assertIn('bad regular expression', p.stderr)

    def test_repl_export_and_replay_session(self):
        cells = ('x = 21\n'
                 'print(x * 2)\n'
                 'import matplotlib.pyplot as plt\n'
                 'plt.plot([1, 2]); plt.show()\n'
                 ':export %s/s.ipynb\n'
                 ':export %s/s.py\n' % (self.tmp, self.tmp))
        p = self.cellbox('repl', stdin=cells)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn('exported the session to', p.stdout)
        nb = nbformat.read(os.path.join(self.tmp, 's.ipynb'), as_version=4)
        nbformat.validate(nb)
        self.assertEqual([c.source for c in nb.cells],
                         ['x = 21', 'print(x * 2)', 'import matplotlib.pyplot as plt',
                          'plt.plot([1, 2]); plt.show()'])
        self.assertEqual(nb.cells[1].outputs[0].text, '42\n')
        self.assertTrue(nb.cells[3].outputs[0].data['image/png'].startswith('iVBOR'))
        with open(os.path.join(self.tmp, 's.py')) as f:
            self.assertEqual(f.read().count('# %%'), 4)
        # `history export` writes the newest session; replay takes it back, or the session id.
        p = self.cellbox('history', 'export', os.path.join(self.tmp, 'h.py'))
        self.assertEqual(p.returncode, 0, p.stderr)
        p = self.cellbox('replay', os.path.join(self.tmp, 'h.py'))
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn('42\n', p.stdout)
        session = os.path.basename(os.path.dirname(history_files(self.tmp)[0]))
        p = self.cellbox('replay', session)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn('In [2]: print(x * 2)\n42\n', p.stdout)

    def test_kill9_mid_cell(self):
        env = dict(self.env)
        proc = subprocess.Popen(['cellbox' if False else os.environ.get('CELLBOX_BIN', 'cellbox'),
                                 'repl'], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, env=env)
        try:
            proc.stdin.write(b'a = 1\nprint("first")\nimport time; time.sleep(60)\n')
            proc.stdin.flush()
            deadline = time.time() + 60
            while time.time() < deadline:
                files = history_files(self.tmp)
                if files and open(files[0], 'rb').read().count(b'\n') >= 2:
                    break
                time.sleep(0.05)
            time.sleep(0.3)     # the third cell is running now
            proc.kill()         # SIGKILL: no cleanup at all
            proc.wait(10)
        finally:
            kill_runner(self.tmp)
            proc.stdout.close()
            proc.stderr.close()
            proc.stdin.close()
        p = self.cellbox('history', 'list')
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(len(p.stdout.splitlines()), 2, p.stdout)
        self.assertIn('print("first")', p.stdout)
        self.assertNotIn('sleep', p.stdout)

    def test_torn_line_is_skipped(self):
        # Simulated fault: a single write() cannot be torn by a kill, but a full disk or a
        # power cut can leave half a line; the reader must skip it.
        self.cellbox('run', '-c', 'print("kept")')
        path = history_files(self.tmp)[0]
        with open(path, 'a') as f:
            f.write('{"session": "x", "code": "lost", "outp')
        p = self.cellbox('history', 'list')
        self.assertEqual(p.returncode, 0)
        self.assertIn('print("kept")', p.stdout)
        self.assertIn('incomplete last line skipped', p.stderr)
        # New cells are still appended after it and read back.
        with open(path, 'a') as f:
            f.write('\n')
        self.cellbox('run', '-c', 'print("later")')
        p = self.cellbox('history', 'list')
        self.assertIn('print("later")', p.stdout)
        self.assertIn('corrupt line skipped', p.stderr)

    def age_prune_stamp(self):
        """Make the last prune a minute and more ago: the next session prunes again (it is
        done at most once a minute)."""
        stamp = os.path.join(self.tmp, 'state', 'cellbox', 'history-pruned')
        if os.path.exists(stamp):
            ago = time.time() - 120
            os.utime(stamp, (ago, ago))

    def test_prune(self):
        self.env['CELLBOX_HISTORY_SIZE'] = '2'
        for i in range(5):
            self.age_prune_stamp()
            self.cellbox('run', '-c', 'n = %d' % i)
        p = self.cellbox('history', 'list')
        lines = p.stdout.splitlines()
        self.assertLessEqual(len(lines), 3, p.stdout)   # the limit, plus the newest session
        self.assertIn('n = 4', lines[-1])
        self.assertNotIn('n = 0', p.stdout)
        self.env['CELLBOX_HISTORY_SIZE'] = '0'
        self.cellbox('run', '-c', 'n = 99')
        self.assertNotIn('n = 99', self.cellbox('history', 'list').stdout)

    def test_prune_by_age(self):
        self.cellbox('run', '-c', 'old = 1')
        old = history_files(self.tmp)[0]
        ten_days_ago = time.time() - 10 * 86400
        os.utime(old, (ten_days_ago, ten_days_ago))
        self.env['CELLBOX_HISTORY_DAYS'] = '30'
        self.age_prune_stamp()
        self.cellbox('run', '-c', 'mid = 1')
        self.assertTrue(os.path.exists(old))
        self.env['CELLBOX_HISTORY_DAYS'] = '1'
        self.cellbox('run', '-c', 'new = 1')
        self.assertTrue(os.path.exists(old))        # pruned a moment ago: not again yet
        self.age_prune_stamp()
        self.cellbox('run', '-c', 'newer = 1')
        self.assertFalse(os.path.exists(old))
        p = self.cellbox('history', 'list')
        self.assertEqual(len(p.stdout.splitlines()), 3, p.stdout)


class ReplayTest(Base):
    def write(self, name, text):
        path = os.path.join(self.tmp, name)
        with open(path, 'w') as f:
            f.write(text)
        return path

    def test_refuses_fifo_and_device(self):
        # Not regular files: refused at once, never waited on (a FIFO blocked forever).
        fifo = os.path.join(self.tmp, 'cells.py')
        os.mkfifo(fifo)
        for path, kind in ((fifo, 'a FIFO'), ('/dev/zero', 'a device')):
            p = self.cellbox('replay', path, timeout=30)
            self.assertEqual(p.returncode, 2, p.stderr)
            self.assertIn("cannot read '%s': it is %s, not a regular file" % (path, kind),
                          p.stderr)

    def test_output_then_check(self):
        src = self.write('c.py', '# %%\nprint("a")\n\n# %%\n[1, 2]\n\n# %%\n'
                         'import matplotlib.pyplot as plt\nplt.plot([1]); plt.show()\n')
        out = os.path.join(self.tmp, 'out.ipynb')
        p = self.cellbox('replay', src, '-o', out)
        self.assertEqual(p.returncode, 0, p.stderr)
        # The plot line names a file that outlives the session (next to the history).
        import re
        m = re.search(r'\[plot 1: \d+x\d+ PNG, saved to (\S+)\]', p.stdout)
        self.assertTrue(m, p.stdout)
        with open(m.group(1), 'rb') as f:
            self.assertEqual(f.read(4), b'\x89PNG')
        nb = nbformat.read(out, as_version=4)
        nbformat.validate(nb)
        self.assertEqual([c.execution_count for c in nb.cells], [1, 2, 3])
        p = self.cellbox('replay', '--check', out)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertIn('outputs match', p.stderr)
        # A different image size is a difference.
        self.write('c.py', '')
        nb.cells[2].source = ('import matplotlib.pyplot as plt\n'
                              'plt.figure(figsize=(2, 2)); plt.plot([1]); plt.show()')
        nbformat.write(nb, out)
        p = self.cellbox('replay', '--check', out)
        self.assertEqual(p.returncode, 6, p.stdout)
        was = re.search(r'^- \[image/png (\d+)x(\d+)\]$', p.stdout, re.M)
        now = re.search(r'^\+ \[image/png (\d+)x(\d+)\]$', p.stdout, re.M)
        self.assertTrue(was and now, p.stdout)
        self.assertGreater(int(was.group(1)), int(now.group(1)) + 100)  # 6.4 against 2 inches

    def test_json(self):
        src = self.write('c.py', '# %%\nprint("a")\n# %%\nx\n')
        p = self.cellbox('replay', '--json', '--keep-going', src)
        self.assertEqual(p.returncode, 1)
        r = json.loads(p.stdout)
        self.assertEqual((r['cells_run'], r['cells_failed'], r['exit_code']), (2, 1, 1))
        self.assertEqual(r['cells'][0]['outputs'][0]['text'], 'a\n')
        self.assertEqual(r['cells'][1]['outputs'][0]['ename'], 'NameError')

    def test_kernel_dies(self):
        src = self.write('c.py', '# %%\nimport os\nos._exit(3)\n# %%\nprint("after")\n')
        p = self.cellbox('replay', src)
        self.assertEqual(p.returncode, 4, p.stderr)
        self.assertIn('In [1] (import os, cell 1 of the file): the kernel died', p.stderr)
        self.assertNotIn('after\n', p.stdout)
        p = self.cellbox('replay', '--keep-going', src)
        self.assertEqual(p.returncode, 4, p.stderr)
        self.assertIn('after\n', p.stdout)     # a fresh kernel ran the rest
        self.assertNoChannelsLeft()

    def test_usage(self):
        p = self.cellbox('replay')
        self.assertEqual(p.returncode, 2)
        p = self.cellbox('replay', os.path.join(self.tmp, 'nope.ipynb'))
        self.assertEqual(p.returncode, 2)
        self.assertIn('No such file or directory', p.stderr)
        p = self.cellbox('replay', '--bogus', 'x.py')
        self.assertEqual(p.returncode, 2)

    def test_progress_bar_only_on_a_terminal(self):
        src = self.write('c.py', '# %%\nimport time; time.sleep(0.3)\n# %%\nprint("b")\n')
        p = self.cellbox('replay', src)
        self.assertNotIn('\x1b', p.stderr)
        self.assertNotIn('[####', p.stderr)
        # stderr on a pty, stdout to a pipe.
        master, slave = pty.openpty()
        proc = subprocess.Popen([os.environ.get('CELLBOX_BIN', 'cellbox'), 'replay', src],
                                stdout=subprocess.PIPE, stderr=slave, env=self.env)
        os.close(slave)
        seen = b''
        deadline = time.time() + 120
        while time.time() < deadline:
            r, _, _ = select.select([master], [], [], 1)
            if r:
                try:
                    chunk = os.read(master, 4096)
                except OSError:
                    break
                if not chunk:
                    break
                seen += chunk
            elif proc.poll() is not None:
                break
        out = proc.stdout.read()
        proc.wait(30)
        proc.stdout.close()
        os.close(master)
        self.assertEqual(proc.returncode, 0)
        self.assertIn(b'0/2', seen)
        self.assertIn(b'cell 1: import time', seen)
        self.assertIn(b'\r\x1b[K', seen)
        self.assertIn(b'b\n', out)
        self.assertNotIn(b'\x1b', out)


if __name__ == '__main__':
    unittest.main()
