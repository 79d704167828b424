"""`:context` in a real terminal (tmux): another kernel in the session's sandbox, the status
line naming the current one, a file shared and a variable not, Python and R side by side,
switching back, removing one, plots numbered in one series, and what is refused (an unknown
kernel or name, the cap)."""
import glob
import os
import re
import struct
import time
import unittest

from test_tui import Base

RSCRIPT = os.environ.get('CELLBOX_TEST_RSCRIPT', '/usr/bin/Rscript')


class ContextTest(Base):
    def test_share_a_file_not_a_variable(self):
        ui = self.start()
        ui.run('x = 41; open("shared.txt", "w").write("from main")')
        ui.wait_for('Out[1]: 9')
        ui.command('context new')
        ui.wait_for('context python-1: a new python kernel')
        ui.run('print(open("shared.txt").read()); x')
        ui.wait_for('from main', "NameError: name 'x' is not defined", 'python-1: local')
        ui.run('x = 2')
        ui.command('context')
        ui.wait_for('contexts: main python-1*')
        ui.command('context main')
        ui.wait_gone('python-1: local')
        ui.run('x + 1')
        ui.wait_for('Out[2]: 42')
        ui.command('context python-1')
        ui.wait_for('idle  context python-1')
        ui.run('x * 10')
        ui.wait_for('Out[3]: 20', 'python-1: local')
        # a host takes one kernel: no :detach of a session with contexts (nor from one)
        ui.command('detach')
        ui.wait_for('the session has contexts (:context): remove them first')
        # refused: a kernel there is not, a name there is not, main removed
        ui.command('context new julia')
        ui.wait_for("'julia' is not a kernel")
        ui.command('context nosuch')
        ui.wait_for("no context 'nosuch'")
        ui.command('context rm main')
        ui.wait_for("main is the session's own kernel")
        # removing the current one goes back to main
        ui.command('context rm python-1')
        ui.wait_for('context python-1 removed')
        ui.run('x')
        ui.wait_for('Out[3]: 41')
        ui.wait_gone('python-1: local')
        ui.command('context')
        ui.wait_for('contexts: main* (')
        ui.quit()
        self.assertEqual(ui.exit_status(), 'exit=0')

    def test_plots_numbered_across_contexts(self):
        # Each kernel counts its plots from 1: the UI numbers them in one series, and
        # :save-plot N copies plot N from the channel of the context that made it.
        cell = ('import matplotlib.pyplot as plt; '
                'from matplotlib_inline.backend_inline import set_matplotlib_formats; '
                'set_matplotlib_formats("png", bbox_inches=None); '
                'plt.figure(figsize=(%d, %d), dpi=50); plt.plot([1, 2]); plt.show()')
        ui = self.start()
        ui.run(cell % (4, 3))
        ui.wait_for('[plot 1: 200x150 PNG]', timeout=120)
        ui.command('context new')
        ui.wait_for('context python-1: a new python kernel')
        ui.run(cell % (2, 2))
        ui.wait_for('[plot 2: 100x100 PNG]', 'python-1: local', timeout=120)
        for n, size in ((1, (200, 150)), (2, (100, 100))):
            dest = os.path.join(self.tmp, 'saved%d.png' % n)
            ui.command('save-plot %d %s' % (n, dest))
            ui.wait_for('plot %d saved to' % n)
            with open(dest, 'rb') as f:
                head = f.read(24)
            self.assertEqual(struct.unpack('>II', head[16:24]), size, 'plot %d' % n)
        ui.quit()
        self.assertEqual(ui.exit_status(), 'exit=0')
        # The history keeps both: the context's plot 1 is not written over main's.
        kept = []
        for path in glob.glob(os.path.join(self.tmp, 'state', 'cellbox', 'sessions', '*',
                                           'plots', '*.png')):
            with open(path, 'rb') as f:
                kept.append(struct.unpack('>II', f.read(24)[16:24]))
        self.assertEqual(sorted(kept), [(100, 100), (200, 150)])

    @unittest.skipUnless(os.access(RSCRIPT, os.X_OK), 'R is not installed')
    def test_python_and_r_side_by_side(self):
        ui = self.start(env_extra={'CELLBOX_RSCRIPT': RSCRIPT})
        ui.command('context new r')
        ui.wait_for('context r-1: a new r kernel')
        ui.run('writeLines("written by R", "from_r.txt"); y <- 6 * 7; y')
        ui.wait_for('[1] 42', 'r-1: local')
        ui.command('context main')
        ui.wait_gone('r-1: local')
        ui.run('open("from_r.txt").read().strip()')
        ui.wait_for("'written by R'")
        # the editor highlights the current context's language: R's keyword in R only
        ui.command('context r-1')
        ui.wait_for('idle  context r-1')
        ui.type('function')
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            rows = [l for l in ui.screen(True).splitlines() if 'In  >>' in l and 'function' in l]
            if rows:
                break
            time.sleep(0.05)
        sgr = re.findall(r'((?:\x1b\[[0-9;]*m)+)function', rows[-1])
        self.assertTrue(sgr and re.search(r'\[(38;[0-9;]+|3[0-7]|9[0-7])m$', sgr[-1]), rows)

    def test_cap(self):
        ui = self.start()
        for i in range(1, 9):
            ui.command('context new')
            ui.wait_for('context python-%d: a new' % i, timeout=120)
        ui.command('context new')
        ui.wait_for('too many contexts: 8 are open')
        ui.command('context rm python-3')
        ui.wait_for('context python-3 removed')
        ui.command('context new')
        ui.wait_for('context python-9: a new', timeout=120)
        ui.quit()           # the eight contexts close with the session
        self.assertEqual(ui.exit_status(), 'exit=0')
        self.assertEqual(os.listdir(os.path.join(self.tmp, 'run')), [],
                         'a context left its channel')


if __name__ == '__main__':
    unittest.main()
