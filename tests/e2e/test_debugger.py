"""The debugger in the terminal: `%debug` after an exception, `breakpoint()` in a cell and
`%pdb on`, in the REPL on a real pty and in the full-screen UI and notebook mode under tmux.

The debugger's prompt ("ipdb> ", "(Pdb) ") reaches the front end as an input request; Ctrl-C
there ends the cell as interrupted and leaves the debugger (pdb alone would ask again, and the
host would kill the kernel when the interrupt was ignored), `q` quits it; the kernel and its
variables stay.
"""
import os
import unittest

from test_cli import Base as CliBase, Pty
from test_tui import Base as TuiBase
from test_tui_defects import code_cell, notebook

# One line each: the REPL's continuation lines are not what these tests are about.
DEF_G = 'def g(): x = 7; 1/0\r'
DEF_F = 'def f(): x = 42; breakpoint(); y = x + 1; return y\r'


class ReplDebugTest(CliBase):
    def start(self):
        t = Pty(self.env)
        self.addCleanup(t.close)
        t.expect(r'In \[.*1.*\]:')
        t.send('kept = "st" + "ill"\r')
        t.expect(r'In \[.*2.*\]:')
        return t

    def prompt(self, t):
        t.expect(r'In \[')

    def test_debug_after_exception(self):
        t = self.start()
        t.send(DEF_G)
        t.send('\r')
        self.prompt(t)
        t.send('g()\r')
        t.expect(r'ZeroDivisionError')
        self.prompt(t)
        t.send('%debug\r')
        t.expect(r'ipdb> ')
        t.send('p x * 6\r')                 # a local of the frame that raised
        t.expect(r'[\r\n]42\r\n')
        t.expect(r'ipdb> ')
        t.send('q\r')
        self.prompt(t)
        t.send('kept.upper()\r')
        t.expect(r"Out\[\d+\]:.*'STILL'")
        # Ctrl-C at ipdb's prompt: the cell ends interrupted, the kernel and its variables stay
        t.send('%debug\r')
        t.expect(r'ipdb> ')
        t.send('\x03')
        t.expect(r'KeyboardInterrupt')
        self.prompt(t)
        t.send('kept * 2\r')
        t.expect(r"Out\[\d+\]:.*'stillstill'")
        # %pdb on: the next exception opens the debugger by itself
        t.send('%pdb on\r')
        t.expect(r'Automatic pdb calling has been turned ON')
        t.send('g()\r')
        t.expect(r'ipdb> ')
        t.send('p x + 1\r')
        t.expect(r'[\r\n]8\r\n')
        t.expect(r'ipdb> ')
        t.send('q\r')
        self.prompt(t)
        t.send('\x04')
        self.assertEqual(t.wait(), 0)

    def test_breakpoint_step_continue_interrupt(self):
        t = self.start()
        t.send(DEF_F)
        t.send('\r')
        self.prompt(t)
        t.send('f()\r')
        t.expect(r'\(Pdb\) ')
        t.send('p x\r')
        t.expect(r'[\r\n]42\r\n')
        t.expect(r'\(Pdb\) ')
        t.send('n\r')
        t.expect(r'\(Pdb\) ')
        t.send('c\r')
        t.expect(r'Out\[\d+\]:.* 43')
        self.prompt(t)
        # Ctrl-C at the prompt: the cell ends interrupted, the kernel and its variables stay.
        t.send('f()\r')
        t.expect(r'\(Pdb\) ')
        t.send('\x03')
        t.expect(r'KeyboardInterrupt')
        self.prompt(t)
        t.send('kept.upper()\r')
        t.expect(r"Out\[\d+\]:.*'STILL'")
        self.prompt(t)
        t.send('\x04')
        self.assertEqual(t.wait(), 0)

    def test_ctrl_c_at_input(self):
        # input()'s prompt too: Ctrl-C interrupts the cell at once (it waited for a line before)
        t = self.start()
        t.send('name = input("wh" + "o? ")\r')
        t.expect(r'who\? ')
        t.send('\x03')
        t.expect(r'KeyboardInterrupt')
        self.prompt(t)
        t.send('kept.upper()\r')
        t.expect(r"Out\[\d+\]:.*'STILL'")
        self.prompt(t)
        t.send('\x04')
        self.assertEqual(t.wait(), 0)


class TuiDebugTest(TuiBase):
    def test_debugger_in_the_ui(self):
        ui = self.start()
        ui.run('kept = "st" + "ill"')
        ui.wait_for('In [1]: kept = ')
        ui.run('def g(): x = 7; 1/0')
        ui.keys('Enter')
        ui.run('g()')
        ui.wait_for('ZeroDivisionError')
        ui.run('%debug')
        ui.wait_for('input: ipdb>')
        ui.type('p x * 6')
        ui.keys('Enter')
        ui.wait_for('ipdb> p x * 6', '\n42\n')
        ui.wait_for('input: ipdb>')
        ui.type('q')
        ui.keys('Enter')
        ui.wait_gone('input: ipdb>')
        ui.run('def f(): x = 42; breakpoint(); y = x + 1; return y')
        ui.keys('Enter')
        ui.run('f()')
        ui.wait_for('input: (Pdb)')
        ui.type('p x')
        ui.keys('Enter')
        ui.wait_for('(Pdb) p x')
        ui.wait_for('input: (Pdb)')
        ui.type('c')
        ui.keys('Enter')
        ui.wait_for('Out[6]: 43')
        # Ctrl-C in the input overlay: the cell ends interrupted, the kernel stays
        ui.run('f()')
        ui.wait_for('input: (Pdb)')
        ui.keys('C-c')
        ui.wait_for('[interrupted]')
        ui.wait_gone('input: (Pdb)')
        ui.run('kept.upper()')
        s = ui.wait_for("'STILL'")
        self.assertNotIn('restarted', s)

    def test_debugger_in_a_notebook(self):
        path = os.path.join(self.tmp, 'dbg.ipynb')
        notebook(path, [code_cell('kept = 5'),
                        code_cell('def f():\n    x = 42\n    breakpoint()\n    return x + 1\n'
                                  'f()'),
                        code_cell('kept * 2')])
        ui = self.start(path)
        ui.wait_for('dbg.ipynb')
        ui.keys('F5')
        ui.wait_for('In [1]: kept = 5')
        ui.keys('F5')
        ui.wait_for('input: (Pdb)')
        ui.type('p x')
        ui.keys('Enter')
        ui.wait_for('(Pdb) p x\n  42\n')            # (a notebook's outputs are indented)
        ui.wait_for('input: (Pdb)')
        ui.type('c')
        ui.keys('Enter')
        ui.wait_for('Out[2]: 43')
        ui.wait_gone('input: (Pdb)')
        # again, and Ctrl-C at the prompt: interrupted; the next cell runs in the same kernel
        ui.keys('Up')
        ui.keys('F5')
        ui.wait_for('input: (Pdb)')
        ui.keys('C-c')
        ui.wait_gone('input: (Pdb)')
        ui.wait_for('KeyboardInterrupt')
        ui.keys('F5')
        s = ui.wait_for('Out[4]: 10')
        self.assertNotIn('restarted', s)

if __name__ == '__main__':
    unittest.main()
