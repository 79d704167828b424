"""The variables pane (the side pane's third tab, `:vars`) in a real terminal (tmux): the user's
names with type, shape and size after each cell, a deleted one gone, escapes in names, types
and values shown as nothing, the value in the pager, the policy's refusal said, R's names."""
import os
import time
import unittest

from test_tui import Base, Tui

RSCRIPT = os.environ.get('CELLBOX_TEST_RSCRIPT', '/usr/bin/Rscript')
SIDE_AT = 57        # the variables tab's first column on a 100-column screen (44 wide)


def have_numpy_pandas():
    import subprocess
    from test_tui import PYTHON
    return subprocess.run([PYTHON, '-c', 'import numpy, pandas'],
                          capture_output=True).returncode == 0


class VarsTest(Base):
    def side(self, ui, escapes=False):
        """The side pane's text: each row right of the border."""
        return '\n'.join(l[SIDE_AT:] for l in ui.screen(escapes).splitlines())

    def wait_side(self, ui, *texts, gone=(), timeout=60):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            s = self.side(ui)
            if all(t in s for t in texts) and not any(g in s for g in gone):
                return s
            time.sleep(0.05)
        raise AssertionError('%r (and not %r) not in the side pane:\n%s'
                             % (texts, gone, ui.screen()))

    def test_python_names_types_shapes(self):
        if not have_numpy_pandas():
            self.skipTest('numpy and pandas are not installed (scripts/bootstrap --tests)')
        ui = self.start()
        ui.run('import numpy as np, pandas as pd')
        ui.wait_for('In [1]')
        ui.command('vars')
        self.wait_side(ui, '0 names', 'Vars')     # modules are not listed, nor In, Out, _
        ui.run('n = 42; xs = [1, 2, 3]; arr = np.zeros((2, 3)); '
               'df = pd.DataFrame({"a": [1, 2, 3], "b": [4, 5, 6]}); _hidden = 1')
        s = self.wait_side(ui, '4 names', 'arr', 'df', 'xs')
        rows = {l.split()[0]: l.split() for l in s.splitlines() if l.split()
                and l.split()[0] in ('arr', 'df', 'n', 'xs')}
        self.assertEqual(rows['arr'][:4], ['arr', 'ndarray', '(2,', '3)'], s)
        self.assertEqual(rows['arr'][-2:], ['48', 'B'], s)        # .nbytes: 6 float64
        self.assertEqual(rows['df'][:4], ['df', 'DataFrame', '(3,', '2)'], s)
        self.assertEqual(rows['xs'][:4], ['xs', 'list', 'len', '3'], s)
        self.assertEqual(rows['n'][:2], ['n', 'int'], s)
        self.assertNotIn('_hidden', s)
        self.assertNotIn('np ', s)
        # Typing the cell gave the keys back to the editor; :vars gives them to the list
        # again: Down selects, the details follow.
        ui.command('vars')
        ui.keys('Down')
        self.wait_side(ui, 'type  DataFrame', 'shape (3, 2)')
        # A deleted variable goes at the next listing; a new one comes.
        ui.keys('Escape')
        time.sleep(0.3)     # a key in the same read as Esc would be Alt-<key> (Alt-D deletes)
        ui.run('del xs; ys = "text"')
        s = self.wait_side(ui, 'ys', 'str', 'len 4', gone=('xs ',))
        self.assertIn('4 names', s)
        # Hidden (F3), the pane is not listed again; shown, it is.
        ui.keys('F3')
        ui.wait_gone('4 names')
        ui.run('zz = 1')
        ui.wait_for('In [4]: zz = 1')
        ui.keys('F3')
        self.wait_side(ui, '5 names', 'zz')
        # The listings left nothing in the namespace and took no execution count.
        ui.run('[k for k in globals() if "cellbox" in k]')
        ui.wait_for('Out[5]: []')

    def test_value_in_pager(self):
        ui = self.start()
        ui.run('big = list(range(100000)); word = "hello"')
        ui.command('vars')
        self.wait_side(ui, '2 names', 'word')
        ui.keys('Down')
        ui.keys('Enter')                      # the selected one, word
        ui.wait_for("'hello'", 'q or Esc closes')
        ui.keys('q')
        ui.wait_gone("'hello'")
        ui.command('vars big')                # by name; reprlib cuts the list at 1000
        s = ui.wait_for('q or Esc closes', '[0, 1, 2, 3')
        self.assertNotIn('99999', s)
        ui.keys('q')
        ui.command('vars nothere')
        ui.wait_for("no variable 'nothere'")

    def test_hostile_names_types_values(self):
        ui = self.start()
        # A class whose name and repr hold OSC (a title), CSI and C1 (U+009B); a name too.
        ui.run('class E: __repr__ = lambda self: "R\\x1b]2;PWNED\\x07\\x1b[2J\\u009b31mZ"')
        ui.wait_for('In [1]')
        ui.run('E.__name__ = "Evil\\x1b]2;PWNED\\x07\\u009bX"; e = E(); '
               'globals()["\\x1b]2;PWNED\\x07bad"] = 1')
        ui.wait_for('In [2]')
        ui.command('vars')
        s = self.wait_side(ui, '3 names', 'EvilX')
        self.assertNotIn('PWNED', s)
        self.assertIn('bad', s)
        raw = ui.screen(escapes=True)
        self.assertNotIn('\x1b]', raw)
        self.assertNotIn('PWNED', ui.tmux('display', '-p', '#{pane_title}'))
        for _ in range(2):                   # bad, then e
            ui.keys('Down')
        self.wait_side(ui, 'name  e')
        ui.keys('Enter')
        ui.wait_for('R31mZ', 'q or Esc closes')
        # curses paints the pager in pieces, top down: until its last row is painted, the
        # cell's source (which spells PWNED) shows below it. The editor's prompt gone is
        # the pager painted to its end.
        s = ui.wait_gone('In  >>')
        self.assertIn('R31mZ', s)
        self.assertNotIn('PWNED', s)
        self.assertNotIn('\x1b]', ui.screen(escapes=True))
        self.assertNotIn('PWNED', ui.tmux('display', '-p', '#{pane_title}'))
        ui.keys('q')
        # The hostile name is asked for by its own spelling: its value comes.
        ui.keys('Up')
        ui.keys('Up')
        self.wait_side(ui, 'name  bad')
        ui.keys('Enter')
        s = ui.wait_for('q or Esc closes')
        self.assertNotIn('KeyError', s)

    def test_policy_sees_the_listing(self):
        # production lets the listing through (no exec, no os); strict refuses `import sys`:
        # the pane says so instead of breaking, and the kernel goes on.
        ui = self.start('tui', '--policy', 'production')
        ui.run('a = 1')
        ui.command('vars')
        self.wait_side(ui, '1 name', 'int')
        ui.close()
        self.ui = ui = Tui(self.tmp, 'strict', ['tui', '--policy', 'strict'])
        ui.run('a = 1')
        ui.command('vars')
        self.wait_side(ui, 'no listing', 'blocked')
        ui.keys('Escape')
        time.sleep(0.3)
        ui.run('a + 1')
        ui.wait_for('Out[2]: 2')

    def test_r_names(self):
        if not os.path.exists(RSCRIPT):
            self.skipTest('R is not installed (scripts/bootstrap --tests)')
        ui = self.start('tui', '--kernel', 'r', env_extra={'CELLBOX_RSCRIPT': RSCRIPT})
        ui.run('x <- 1:10; m <- matrix(1:6, 2); d <- data.frame(a = 1:3); .h <- 1')
        ui.command('vars')
        s = self.wait_side(ui, '3 names', 'integer', 'matrix')
        # A name and a class holding OSC (a title) and C1: shown without them.
        ui.run('assign("\\u001b]2;PWNED\\u0007evil", structure(1, class = "K\\u001b]2;PWNED\\u0007\\u009bX"))')
        s = self.wait_side(ui, '4 names', 'evil', 'KX')
        self.assertNotIn('PWNED', s)
        self.assertNotIn('\x1b]', ui.screen(escapes=True))
        self.assertNotIn('PWNED', ui.tmux('display', '-p', '#{pane_title}'))
        ui.run('rm(list = ls(pattern = "evil"))')
        s = self.wait_side(ui, '3 names', gone=('evil',))
        rows = {l.split()[0]: l.split() for l in s.splitlines() if l.split()
                and l.split()[0] in ('d', 'm', 'x')}
        self.assertEqual(rows['x'][:4], ['x', 'integer', 'len', '10'], s)
        self.assertEqual(rows['m'][:4], ['m', 'matrix', '(2,', '3)'], s)
        self.assertEqual(rows['d'][:4], ['d', 'data.frame', '(3,', '1)'], s)
        self.assertNotIn('.h', s)
        ui.command('vars m')                 # print(m) in the pager
        ui.wait_for('[1,]', '[,3]', 'q or Esc closes')
        ui.keys('q')
        ui.keys('Escape')
        time.sleep(0.3)
        ui.run('rm(x)')
        self.wait_side(ui, '2 names', gone=('integer',))


if __name__ == '__main__':
    unittest.main()
