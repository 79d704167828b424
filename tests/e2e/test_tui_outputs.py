"""Rich outputs in the full-screen UI (tmux, the real binary and kernel): a pandas DataFrame's
text/html drawn as a table, an HTML-only display as its text, hostile HTML (escapes in cells,
10^5 nested tags, a 10 MB attribute) drawn bounded and safe."""
import subprocess
import time
import unittest

from test_tui import PYTHON, Base

RULE = '\u2500'


def have_pandas():
    return subprocess.run([PYTHON, '-c', 'import pandas'], capture_output=True).returncode == 0


class HtmlTest(Base):
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


if __name__ == '__main__':
    unittest.main()
