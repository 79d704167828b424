"""Rich and long outputs in the full-screen UI (tmux, the real binary and kernel): a pandas
DataFrame's text/html drawn as a table, an HTML-only display as its text, hostile HTML (escapes
in cells, 10^5 nested tags, a 10 MB attribute) drawn bounded and safe; the whole of an output
past the UI's cap read back from the history store in the output pager (`:output`)."""
import json
import os
import subprocess
import time
import unittest

from test_tui import PYTHON, Base

RULE = '\u2500'


def have_pandas():
    return subprocess.run([PYTHON, '-c', 'import pandas'], capture_output=True).returncode == 0


class HtmlTest(Base):
    def test_notebook_output_as_table(self):
        # A saved notebook's outputs are drawn as the console draws them: its DataFrame too.
        out = {'output_type': 'execute_result', 'execution_count': 1, 'metadata': {},
               'data': {'text/plain': '   a\n0  1', 'text/html':
                        '<table><thead><tr><th></th><th>alpha</th></tr></thead>'
                        '<tbody><tr><th>0</th><td>1</td></tr></tbody></table>'}}
        path = os.path.join(self.tmp, 'frame.ipynb')
        with open(path, 'w') as f:
            json.dump({'cells': [{'cell_type': 'code', 'execution_count': 1, 'metadata': {},
                                  'outputs': [out], 'source': 'df'}],
                       'metadata': {}, 'nbformat': 4, 'nbformat_minor': 5}, f)
        ui = self.start(path)
        s = ui.wait_for('cell 1/1', 'alpha')
        self.assertIn(RULE + '  ' + RULE * 5, s)

    def test_dataframe_as_table(self):
        if not have_pandas():
            self.skipTest('pandas is not installed (scripts/bootstrap --tests)')
        ui = self.start()
        ui.run('import pandas as pd; pd.DataFrame({"name": ["alice & bob", "carol"], '
               '"score": [1.5, -22.25]})')
        s = ui.wait_for('Out[1]', 'alice & bob', 'carol')
        rows = s.splitlines()
        head = [i for i, r in enumerate(rows) if 'name' in r and 'score' in r and 'pd.' not in r]
        self.assertTrue(head, s)
        at = head[-1]
        self.assertIn(RULE * 11, rows[at + 1], s)            # the header rule, column wide
        self.assertRegex(rows[at + 2], r'0  alice & bob +1\.50$', s)
        self.assertRegex(rows[at + 3], r'1  carol +-22\.25$', s)
        self.assertNotIn('<table', s)
        self.assertNotIn('&amp;', s)
        # An HTML object: its text/plain is only its type, so its HTML is drawn as text.
        ui.run('from IPython.display import HTML; '
               'HTML("<h3>Report</h3><p>two &lt;b&gt; words</p><ul><li>one</li></ul>")')
        s = ui.wait_for('Out[2]', 'Report', 'two <b> words', '\u2022 one')
        self.assertNotIn('IPython.core.display.HTML object', s)
        # An object with a text repr of its own and HTML that is no table: its repr.
        ui.run('W = type("W", (), {"__repr__": lambda s: "the plain repr", "_repr_html_": '
               'lambda s: "<div>the <b>html</b> form</div>"}); W()')
        s = ui.wait_for('Out[3]: the plain repr')
        self.assertNotIn('the html form', s)

    def test_hostile_html(self):
        ui = self.start()
        title = ui.tmux('display', '-p', '#{pane_title}').strip()
        ui.run('from IPython.display import HTML, display; '
               'display(HTML("<table><tr><th>h\\x1b]0;HACKED\\x07</th><th>k</th></tr>" + '
               '"<tr><td>\\x1b[2J\\x1b[Hcell\\x1b[31m</td><td>&#27;]52;c;aGk=&#7;v</td></tr>"'
               ' * 150 + "</table>" + "<div><b>" * 100000 + "deep" + "</b></div>" * 100000 '
               '+ "<a title=\\"" + ">" * 10_000_000 + "\\">end</a>"))')
        s = ui.wait_for('... 50 more rows', 'deep', 'not read]', timeout=120)
        self.assertEqual(ui.tmux('display', '-p', '#{pane_title}').strip(), title)
        self.assertNotIn('HACKED', s)
        self.assertNotIn('end', s.split('deep')[1].split('not read')[0])
        self.assertIn('cell  v', s)
        self.assertIn('F1 help', s.splitlines()[29])    # the layout is intact
        self.assertNotIn('hacked', ui.tmux('list-buffers').lower())
        t0 = time.monotonic()
        ui.run('1 + 1')
        ui.wait_for('Out[2]: 2')
        self.assertLess(time.monotonic() - t0, 20)
        ui.quit()                           # under ASan: no report, no leak
        self.assertEqual(ui.exit_status(), 'exit=0')


class OutputPagerTest(Base):
    def test_whole_output_from_history(self):
        ui = self.start()
        # 2 MB of lines, an escape among them: the pane keeps 256 KiB, the history all of it
        ui.run('for i in range(40000): print("line %06d " % i + "x" * 40 + '
               '("\\x1b]0;HACKED\\x07\\x1b[2J" if i == 39990 else ""))')
        s = ui.wait_for('[output truncated:', 'F9 or :output shows it all', timeout=120)
        self.assertNotIn('line 039999', s)
        title = ui.tmux('display', '-p', '#{pane_title}').strip()
        ui.keys('F9')
        s = ui.wait_for('output of In [1] (history)', 'rows 1-27/40000', 'line 000026')
        ui.keys('End')
        s = ui.wait_for('rows 39974-40000/40000', 'line 039999')
        self.assertIn('line 039990 ' + 'x' * 40, s)     # the escapes went, the text stayed
        self.assertEqual(ui.tmux('display', '-p', '#{pane_title}').strip(), title)
        ui.keys('PPage')
        ui.wait_for('rows 39947-39973/40000', 'line 039946')
        ui.keys('/')                        # find: the row of the hit on top
        ui.type('line 012345')
        ui.wait_for('/line 012345')
        ui.keys('Enter')
        s = ui.wait_for('rows 12346-12372/40000')
        self.assertTrue(s.splitlines()[1].startswith(' line 012345 '), s)
        ui.keys('/')
        ui.type('no such line')
        ui.keys('Enter')
        ui.wait_for('not found', 'rows 12346-12372/40000')
        ui.keys('q')
        ui.wait_gone('(history)')
        # :output N: a cell that was not cut, by its number
        ui.run('print("short one")')
        ui.wait_for('In [2]: print(', 'short one')
        deadline = time.monotonic() + 30
        while True:             # its output shows before its end is recorded: until then
            ui.command('output 2')      # the command says it is still running
            try:
                ui.wait_for('output of In [2] (history)', 'rows 1-1/1', ' short one',
                            timeout=2)
                break
            except AssertionError:
                if time.monotonic() > deadline or 'still running' not in ui.screen():
                    raise
        ui.keys('q')
        ui.wait_gone('(history)')
        ui.command('output 7')
        ui.wait_for('no cell In [7] in the output pane')
        # past the history's own cap (4 MiB): what it kept, and its note, no more
        ui.run('import sys; [sys.stdout.write("y" * 999 + "\\n") for _ in range(6000)]; None')
        ui.wait_for('F9 or :output shows it all', 'In [4] \u00b7 Enter runs', timeout=120)
        ui.keys('F9')
        ui.wait_for('output of In [3] (history)')
        ui.keys('End')
        s = ui.wait_for('output truncated: more than 4194304 bytes')
        # 4194304 bytes kept: 4194 lines of 1000 in 11 rows of 98 columns, 304 bytes in 4,
        # the history's note in 1
        self.assertIn('rows 46113-46139/46139', s)
        ui.quit()                           # the pager open: freed at the exit (ASan)
        self.assertEqual(ui.exit_status(), 'exit=0')

    def test_without_history(self):
        ui = self.start(env_extra={'CELLBOX_HISTORY_SIZE': '0'})
        ui.run('print("z" * 300000)')
        ui.wait_for('[output truncated:', timeout=120)
        self.assertNotIn('F9 or :output', ui.screen())
        ui.keys('F9')
        ui.wait_for('no history is recorded')


if __name__ == '__main__':
    unittest.main()
