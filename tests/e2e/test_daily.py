"""The daily-use defects found by trying cellbox as a new user would, one test each: pastes,
%load, whole-cell REPL history, cell magics, multi-line values, exit/quit, ':' commands, the
kernel's width, plot lines, `cellbox config`, the pager, replay's numbering, the screen left
after quitting, the man page. Run as test_daily.NAME (unittest)."""
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_cli import BIN, Pty, clean_env  # noqa: E402
from test_tui import Tui  # noqa: E402

BLOCK = ('class Point:\n'
         '    def __init__(self, x, y):\n'
         '        self.x = x\n'
         '        self.y = y\n'
         '\n'
         '    def norm(self):\n'
         '        return (self.x ** 2 + self.y ** 2) ** 0.5\n'
         '\n'
         '\n'
         'def total(points):\n'
         '    s = 0\n'
         '    for p in points:\n'
         '        if p.x > 0:\n'
         '            s += p.norm()\n'
         '\n'
         '        else:\n'
         '            s -= 1\n'
         '    return s\n'
         '\n'
         'print("total", total([Point(3, 4), Point(-1, 0)]))\n')


class Base(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix='cellbox-daily-')
        self.env = clean_env(self.tmp)
        self.uis = []

    def tearDown(self):
        for ui in self.uis:
            ui.close()
        shutil.rmtree(self.tmp, ignore_errors=True)

    def cellbox(self, *args, stdin=None, timeout=120):
        return subprocess.run([BIN, *args], input=stdin, capture_output=True, text=True,
                              env=self.env, timeout=timeout)

    def write(self, name, text):
        path = os.path.join(self.tmp, name)
        with open(path, 'w') as f:
            f.write(text)
        return path

    def tui(self, *args, name=None, **kw):
        if not shutil.which('tmux'):
            self.skipTest('tmux is not installed (scripts/bootstrap --tests)')
        ui = Tui(self.tmp, name or self.id().rsplit('.', 1)[-1], args, **kw)
        self.uis.append(ui)
        ui.wait_for('local \u2502')            # the kernel is up
        return ui


class ReplTest(Base):
    def test_plain_paste_is_one_cell(self):
        self.assertEqual(BLOCK.count('\n'), 20)
        t = Pty(self.env)
        try:
            t.expect(r'In \[.*1.*\]:')
            t.send(BLOCK.replace('\n', '\r'))   # one write, as a terminal pastes
            t.expect(r'total 4\.0\r\n')
            t.expect(r'In \[.*2.*\]:')           # one cell ran, not several broken ones
            self.assertNotIn(b'Error', t.buf)
            t.send('Point(1, 0).norm()\r')
            t.expect(r'Out\[2\]:.* 1\.0')
        finally:
            t.close()

    def test_history_recalls_whole_cells_after_a_restart(self):
        t = Pty(self.env)
        try:
            t.expect(r'In \[.*1.*\]:')
            t.send('for i in range(2):\r')
            t.expect(r'\.\.\.: ')
            t.send('print("row", i + 10)\r\r')
            t.expect(r'row 11\r\n')
            t.expect(r'In \[')
            t.send('\x04')
            self.assertEqual(t.wait(), 0)
        finally:
            t.close()
        t = Pty(self.env)
        try:
            t.expect(r'In \[.*1.*\]:')
            t.send('\x1b[A')                    # Up: the whole cell, both lines
            t.expect(r'print\("row", i \+ 10\)')
            t.send('\r')
            t.expect(r'row 10\r\nrow 11\r\n')
        finally:
            t.close()

    def test_load_puts_the_file_in_the_prompt(self):
        path = self.write('snippet.py', 'a = 20\nprint("loaded", a + 22)\n')
        t = Pty(self.env)
        try:
            t.expect(r'In \[.*1.*\]:')
            t.send('%load ' + path + '\r')
            t.expect(r'# %load ' + re.escape(path))
            t.expect(r'print\("loaded", a \+ 22\)')
            t.send('\r')
            t.expect(r'loaded 42\r\n')
        finally:
            t.close()

    def test_exit_and_quit_end_it(self):
        t = Pty(self.env)
        try:
            t.expect(r'In \[.*1.*\]:')
            t.send('exit\r')
            self.assertEqual(t.wait(), 0)
        finally:
            t.close()
        p = self.cellbox('repl', stdin='print("one")\nquit()\nprint("two")\n')
        self.assertEqual((p.returncode, p.stdout), (0, 'one\n'), p.stderr)


class TuiTest(Base):
    def test_load_in_the_editor(self):
        path = self.write('snippet.py', 'b = 40\nprint("from the file", b + 2)\n')
        ui = self.tui()
        ui.run('%load ' + path)
        ui.wait_for('In  >>: # %load ' + path)
        s = ui.wait_for('   ...: print("from the file", b + 2)')
        ui.keys('M-Enter')
        ui.wait_for('from the file 42')
        del s

    def test_hostile_next_input(self):
        # What the kernel asks for the editor is text: no escapes reach the terminal, and
        # its size is capped.
        ui = self.tui()
        title = ui.tmux('display', '-p', '#{pane_title}').strip()
        ui.run('get_ipython().set_next_input("\\x1b]0;HACKED\\x07\\x1b[2J\\x1b[H" + "y" * 3_000_000)')
        s = ui.wait_for('yyyyyyyy')
        self.assertEqual(ui.tmux('display', '-p', '#{pane_title}').strip(), title)
        self.assertIn('In [1]: get_ipython()', s)        # nothing was cleared
        ui.keys('C-a')                                   # the start of the editor's line
        s = ui.wait_for('In  >>: yyyy')                  # the escapes dropped, whole
        self.assertNotIn('HACKED', s.split('In  >>:', 1)[1])
        ui.keys('C-c')                                   # clears the editor
        ui.wait_gone('yyyyyyyy')
        ui.run('1 + 1')
        ui.wait_for('Out[2]: 2')

    def test_cell_magic_runs_after_one_blank_line(self):
        ui = self.tui()
        ui.run('%%bash')
        ui.wait_for('   ...:')
        ui.run('echo from-bash')
        ui.keys('Enter')                        # one blank line
        ui.wait_for('\nfrom-bash')
        ui.wait_for('In [1]: %%bash')           # its count shows once done, after the output

    def test_multi_line_value_starts_on_the_next_line(self):
        ui = self.tui()
        ui.run('import numpy as np')
        ui.wait_for('In [1]: import numpy as np')
        ui.run('np.eye(3)')
        s = ui.wait_for('Out[2]:')
        lines = s.split('\n')
        k = next(i for i, l in enumerate(lines) if l.startswith('Out[2]:'))
        self.assertEqual(lines[k].strip(), 'Out[2]:')
        self.assertTrue(lines[k + 1].startswith('array([[1., 0., 0.],'), lines[k + 1])
        ui.run('6 * 7')                          # one line stays beside it
        ui.wait_for('Out[3]: 42')

    def test_exit_and_quit_end_the_ui(self):
        ui = self.tui(name='exit')
        ui.run('exit')
        self.assertEqual(ui.exit_status(), 'exit=0')
        ui = self.tui(name='quit')
        ui.run('quit()')
        self.assertEqual(ui.exit_status(), 'exit=0')

    def test_colon_line_is_a_command(self):
        ui = self.tui()
        ui.run(':theme light')
        s = ui.wait_for(' theme light')
        self.assertNotIn('SyntaxError', s)
        self.assertNotIn('In [1]:', s)           # nothing went to the kernel
        ui.keys('C-l')                           # the message goes: the status names it
        ui.wait_for('\u2502 light \u2502')

    def test_kernel_knows_the_width(self):
        ui = self.tui()
        ui.run("import os; os.environ['COLUMNS']")
        ui.wait_for("Out[1]: '100'")
        ui.tmux('resize-window', '-x', '80', '-y', '30')
        ui.wait_for('F1 help')
        time.sleep(0.3)
        ui.run("os.environ['COLUMNS']")
        ui.wait_for("Out[2]: '80'")
        ui.run('import pandas as pd; pd.get_option("display.width")')
        ui.wait_for('Out[3]: 80')

    def test_pager_covers_the_screen(self):
        ui = self.tui()
        ui.run('for i in range(60): print("@" * 99)')   # (the help names Ctrl-X)
        ui.wait_for('@' * 99)
        ui.keys('F1')
        s = ui.wait_for('cellbox help')
        deadline = time.monotonic() + 30                # the frame written to its last row
        while not s.split('\n')[28].startswith('\u2500' * 50) and time.monotonic() < deadline:
            time.sleep(0.1)
            s = ui.screen()
        rows = s.split('\n')
        self.assertNotIn('@', ''.join(rows[:29]), 'no strip of the output beside the pager')
        self.assertTrue(rows[0].startswith('\u2500\u2500'), rows[0])
        self.assertTrue(rows[28].startswith('\u2500' * 50), rows[28])   # its own border
        self.assertIn('F1 help', rows[29])                              # the status line
        ui.keys('q')
        ui.wait_for('@' * 99)

    def test_quitting_leaves_no_start_message(self):
        ui = self.tui()
        ui.keys('C-q')
        self.assertEqual(ui.exit_status(), 'exit=0')
        self.assertNotIn('starting the kernel', ui.screen())


class CliTest(Base):
    def test_run_plot_line_names_a_file_that_stays(self):
        p = self.cellbox('run', '-c', 'import matplotlib.pyplot as plt\n'
                                      'plt.plot([1, 2]); plt.show()')
        self.assertEqual(p.returncode, 0, p.stderr)
        m = re.search(r'\[plot 1: \d+x\d+ PNG, saved to (\S+)\]', p.stdout)
        self.assertIsNotNone(m, p.stdout)
        self.assertTrue(os.path.isfile(m.group(1)), 'the plot is there after the run')
        with open(m.group(1), 'rb') as f:
            self.assertEqual(f.read(8), b'\x89PNG\r\n\x1a\n')

    def test_config_names_flags_that_exist(self):
        text = self.cellbox('config').stdout
        helps = ''
        for cmd in ('tui', 'repl', 'run', 'check', 'replay', 'history', 'config', 'gc',
                    'pool serve', 'pool status', 'pool stop'):
            p = self.cellbox(*cmd.split(), '--help')
            self.assertEqual(p.returncode, 0, cmd)
            helps += p.stdout
        for ref in re.findall(r"'cellbox ([a-z ]+?)(?: --[a-z-]+)?'", text):
            p = self.cellbox(*ref.split(), '--help')
            self.assertEqual(p.returncode, 0, "config names 'cellbox %s'" % ref)
        # The flags the commands define: the first word of their option lines.
        defined = set(re.findall(r'^ {2,4}(?:-\w, )?(--[a-z][a-z-]+)', helps, re.M))
        for flag in set(re.findall(r'(--[a-z][a-z-]+)', text)):
            self.assertIn(flag, defined, 'config names %s, which no command takes' % flag)
        self.assertIn('--pool-name', defined)

    def test_replay_numbers_cells_as_its_transcript(self):
        src = self.write('cells.py', '# %% [markdown]\n# Title\n# %%\nx = 1\n# %%\n1 / 0\n')
        p = self.cellbox('replay', src)
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertIn('In [2]: 1 / 0', p.stdout)
        self.assertIn('In [2] (1 / 0, cell 3 of the file) raised an exception', p.stderr)

    def test_man_page(self):
        p = self.cellbox('--man')
        self.assertEqual(p.returncode, 0, p.stderr)
        page = p.stdout
        self.assertTrue(page.startswith('.\\" The manual page of cellbox'))
        if not shutil.which('groff'):
            self.skipTest('groff is not installed')
        lint = subprocess.run(['groff', '-man', '-Tutf8', '-ww', '-z'], input=page,
                              capture_output=True, text=True)
        self.assertEqual(lint.stderr, '', 'groff warns about the page')
        text = subprocess.run(['groff', '-man', '-Tascii', '-P-cbou'], input=page,
                              capture_output=True, text=True).stdout
        text = re.sub(r'-\n\s*', '-', text)      # hyphenated words back together
        flat = ' '.join(text.split())
        for cmd in ('tui', 'repl', 'run', 'replay', 'history', 'pool serve', 'pool status',
                    'config', 'gc', 'version'):
            self.assertIn('cellbox ' + cmd, flat)
        config = self.cellbox('config').stdout
        for key in re.findall(r'^  ([a-z][a-z-]+) ', config, re.M):
            self.assertIn(key, flat)
        for cmd in ('run', 'replay', 'pool serve'):
            for flag in re.findall(r'^  (?:-\w, )?(--[a-z-]+)', self.cellbox(
                    *cmd.split(), '--help').stdout, re.M):
                self.assertIn(flag, flat, '%s %s' % (cmd, flag))
        for ui in ('Shift-Enter', 'run-all', 'restart-run-all', 'save-plot'):
            self.assertIn(ui, flat)


if __name__ == '__main__':
    unittest.main()
