"""The full-screen UI's defects of a day's use, each driven in tmux as a user met it: a key that
crashed the side pane, an R notebook run in Python, a selection off screen, a dead kernel that
lost the next cell."""
import base64
import json
import os
import subprocess
import unittest

from test_tui import BIN, PYTHON, Base, Tui

RSCRIPT = os.environ.get('CELLBOX_TEST_RSCRIPT', '/usr/bin/Rscript')


def notebook(path, cells, kernelspec=None):
    nb = {'cells': cells, 'metadata': {}, 'nbformat': 4, 'nbformat_minor': 5}
    if kernelspec:
        nb['metadata']['kernelspec'] = kernelspec
    with open(path, 'w') as f:
        json.dump(nb, f)


def code_cell(source, outputs=(), count=None):
    return {'cell_type': 'code', 'execution_count': count, 'metadata': {},
            'outputs': list(outputs), 'source': source}


class DefectTest(Base):
    def history_env(self):
        return Tui.environment(self.tmp)

    def test_side_pane_multi_line_history(self):
        # A recorded cell whose code ends in a newline, then F3: the side pane shows its first
        # line and an ellipsis (it wrote past its buffer and the UI aborted).
        one = os.path.join(self.tmp, 'one.py')
        with open(one, 'w') as f:
            f.write('print("hello world")\n')
        env = self.history_env()
        p = subprocess.run([BIN, 'run', one], env=env, cwd=self.tmp, capture_output=True,
                           text=True, timeout=120)
        self.assertEqual((p.returncode, p.stdout), (0, 'hello world\n'), p.stderr)
        # A 20-22 character cell piped into the REPL, recorded the same way.
        p = subprocess.run([BIN, 'repl'], input='x = "0123456789abc"\n', env=env,
                           cwd=self.tmp, capture_output=True, text=True, timeout=120)
        self.assertEqual(p.returncode, 0, p.stderr)
        ui = self.start()
        ui.keys('F3')
        ui.wait_for('History', 'x = "0123456789abc"')
        ui.run('1 + 1')
        ui.wait_for('Out[1]: 2')
        ui.command('quit')
        self.assertEqual(ui.exit_status(), 'exit=0')

    def test_r_notebook_runs_in_r(self):
        if not os.path.exists(RSCRIPT):
            self.skipTest('R is not installed (scripts/bootstrap --tests)')
        path = os.path.join(self.tmp, 'analysis.ipynb')
        notebook(path, [code_cell('x <- 41\nx + 1')],
                 {'name': 'ir', 'display_name': 'R', 'language': 'R'})
        ui = self.start(path, env_extra={'CELLBOX_RSCRIPT': RSCRIPT})
        ui.wait_for('analysis.ipynb', ' R ')     # the header names the kernel's language
        ui.keys('F5')
        s = ui.wait_for('[1] 42', 'In [1]: x <- 41')
        self.assertNotIn('SyntaxError', s)
        ui.keys('C-s')
        ui.wait_for('saved')
        with open(path) as f:
            saved = json.load(f)
        text = ''.join(''.join(o.get('text', '') or o.get('data', {}).get('text/plain', ''))
                       for o in saved['cells'][0]['outputs'])
        self.assertIn('[1] 42', text, saved)

    def test_percent_r_file_runs_in_r(self):
        if not os.path.exists(RSCRIPT):
            self.skipTest('R is not installed (scripts/bootstrap --tests)')
        path = os.path.join(self.tmp, 'analysis.R')
        with open(path, 'w') as f:
            f.write('# %%\ny <- 6 * 7\ny\n')
        ui = self.start(path, env_extra={'CELLBOX_RSCRIPT': RSCRIPT})
        ui.keys('F5')
        s = ui.wait_for('[1] 42')
        self.assertNotIn('SyntaxError', s)

    def plot_png(self):
        png = os.path.join(self.tmp, 'p.png')
        subprocess.run([PYTHON, '-c', 'import matplotlib; matplotlib.use("Agg"); '
                        'import matplotlib.pyplot as plt; plt.figure(figsize=(4, 3)); '
                        'plt.plot([1, 3, 2]); plt.savefig(%r, dpi=60)' % png],
                       check=True, timeout=120)
        with open(png, 'rb') as f:
            return base64.b64encode(f.read()).decode()

    def test_notebook_selection_stays_on_screen(self):
        # Cells with plots above the last: End shows the last cell, and so does running the
        # last one with Shift-Enter (its new cell) once the plots are drawn.
        png = self.plot_png()
        cells = []
        for i in range(16):
            out = {'output_type': 'display_data', 'metadata': {},
                   'data': {'image/png': png, 'text/plain': '<Figure>'}}
            cells.append(code_cell('plot_cell_%d = %d' % (i + 1, i + 1), [out], i + 1))
        cells.append(code_cell('last_cell_here = 17'))
        path = os.path.join(self.tmp, 'plots.ipynb')
        notebook(path, cells)
        ui = self.start(path, '--graphics', 'blocks', size=(100, 30))
        ui.wait_for('cell 1/17')
        ui.keys('End')
        s = ui.wait_for('cell 17/17')
        ui.wait_for('last_cell_here = 17')
        ui.keys('Home')
        ui.wait_for('cell 1/17', 'plot_cell_1 ')
        ui.keys('End')
        ui.wait_for('cell 17/17', 'last_cell_here = 17')
        ui.keys('S-Enter')              # run it; a new cell below, selected and in sight
        s = ui.wait_for('cell 18/18', 'In [1]: last_cell_here = 17')
        rows = s.splitlines()
        last = max(i for i, r in enumerate(rows) if 'last_cell_here' in r)
        self.assertTrue(any('In [ ]' in r for r in rows[last + 1:]), s)

    def test_markdown_display_rendered(self):
        ui = self.start()
        ui.run('from IPython.display import display, Markdown; '
               'display(Markdown("# Title\\n\\nsome **bold** and `code`"))')
        s = ui.wait_for('some bold and code')
        self.assertNotIn('Markdown object', s)
        line = [l for l in ui.screen(escapes=True).splitlines() if 'some' in l][-1]
        self.assertRegex(line, r'\x1b\[[0-9;]*1m[^\x1b]*bold')     # bold drawn bold
        ui.run('Markdown("*it*")')                              # as Out[n] too
        s = ui.wait_for('Out[2]: it')
        self.assertNotIn('Markdown object', s)

    def test_kernel_death_keeps_next_cell(self):
        ui = self.start()
        ui.run('import os; os._exit(1)')
        s = ui.wait_for('press F6', 'dead')
        ui.type('6 * 7')
        ui.keys('Enter')                # a new kernel first; the cell is not lost
        s = ui.wait_for('Out[1]: 42')
        self.assertEqual(s.count('press F6'), 1, s)


if __name__ == '__main__':
    unittest.main()
