"""The editor of an IPython user in the full-screen UI, driven in tmux as a user types: undo and
redo, word motions and deletes, Esc and the next key in one read, and the small defects met on
the way (the plot viewer after `s`, Ctrl-R in a notebook, Ctrl-Q with a cell running)."""
import json
import os
import time
import unittest

from test_tui import Base

PROMPT = 'In  >>: '


def notebook(path, sources):
    cells = [{'cell_type': 'code', 'execution_count': None, 'metadata': {}, 'outputs': [],
              'source': s} for s in sources]
    with open(path, 'w') as f:
        json.dump({'cells': cells, 'metadata': {}, 'nbformat': 4, 'nbformat_minor': 5}, f)


def saved(path):
    with open(path) as f:
        return json.load(f)['cells']


def source(cell):
    s = cell['source']
    return ''.join(s) if isinstance(s, list) else s


class EditorTest(Base):
    def editor_line(self, ui):
        """The console editor's first line (capture-pane trims its trailing blanks)."""
        for row in ui.screen().split('\n'):
            if row.startswith(PROMPT.rstrip()):
                return row[len(PROMPT):].rstrip() if len(row) > len(PROMPT) else ''
        return None

    def expect(self, ui, text, timeout=10):
        """Wait until the editor holds `text`."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.editor_line(ui) == text:
                return
            time.sleep(0.05)
        self.fail('the editor holds %r, not %r:\n%s' % (self.editor_line(ui), text, ui.screen()))

    def nb_start(self, name, sources):
        path = os.path.join(self.tmp, name)
        notebook(path, sources)
        ui = self.start(path)
        ui.wait_for('local \u2502', 'command mode')    # the kernel runs
        return ui, path

    def test_undo_redo_console(self):
        ui = self.start()
        ui.type('x = 12')
        self.expect(ui, 'x = 12')
        ui.keys('C-w')                          # a step of its own
        self.expect(ui, 'x =')
        ui.type('34')
        self.expect(ui, 'x = 34')
        ui.keys('C-z')                          # the typed word goes at once
        self.expect(ui, 'x =')
        ui.keys('C-z')
        self.expect(ui, 'x = 12')
        ui.keys('C-S-z')                        # Ctrl-Shift-Z redoes (tmux sends CSI 90;6u)
        self.expect(ui, 'x =')
        ui.keys('C-y')
        self.expect(ui, 'x = 34')
        ui.keys('C-_')
        self.expect(ui, 'x =')
        ui.keys('C-z')
        ui.keys('C-z')
        self.expect(ui, '')
        ui.keys('C-z')
        ui.wait_for('nothing to undo')
        ui.keys('C-y')
        self.expect(ui, 'x = 12')
        ui.keys('Enter')
        ui.wait_for('In [1]: x = 12')
        # A new cell has a history of its own: nothing of the last one comes back.
        ui.keys('C-z')
        ui.wait_for('nothing to undo')
        self.expect(ui, '')
        ui.run('x')
        ui.wait_for('Out[2]: 12')

    def test_undo_in_notebook_edit_mode(self):
        ui, path = self.nb_start('undo.ipynb', ['a = 1', 'b = 2'])
        ui.keys('Enter')
        ui.wait_for('\u2502 edit')
        ui.type(' + 2')
        ui.wait_for('a = 1 + 2')
        ui.keys('C-j')
        ui.type('c = 3')
        ui.wait_for('c = 3')
        ui.keys('C-z')
        ui.keys('C-z')                          # the line typed, then the newline
        ui.keys('C-z')
        ui.wait_gone('a = 1 + 2')
        ui.keys('C-y')
        ui.wait_for('a = 1 + 2')
        ui.keys('Escape')
        ui.wait_for('\u2502 command \u2502')
        ui.keys('C-s')
        ui.wait_for('saved 2 cells')
        self.assertEqual([source(c) for c in saved(path)], ['a = 1 + 2', 'b = 2'])
        # Another cell: its own history, not the first one's.
        ui.keys('Down', 'Enter')
        ui.wait_for('\u2502 edit')
        ui.keys('C-z')
        ui.wait_for('nothing to undo')

    def test_word_motions_and_deletes(self):
        ui = self.start()
        ui.type('alpha beta gamma')
        self.expect(ui, 'alpha beta gamma')
        ui.keys('C-Left')
        ui.type('X')
        self.expect(ui, 'alpha beta Xgamma')
        ui.keys('M-b', 'M-b')                   # ESC b in one read: Alt-B, bound here
        ui.type('Y')
        self.expect(ui, 'alpha Ybeta Xgamma')
        ui.keys('C-Right')
        ui.type('Z')
        self.expect(ui, 'alpha YbetaZ Xgamma')
        ui.keys('Home', 'M-f', 'M-d')           # Alt-D: to the end of the next word
        self.expect(ui, 'alpha Xgamma')
        ui.keys('End', 'C-BSpace')              # Ctrl-Backspace: the word before
        self.expect(ui, 'alpha')                # and its blank (trimmed by the capture)
        ui.keys('BSpace')
        ui.type('.plot(x_1')
        ui.keys('M-BSpace')                     # Alt-Backspace: the word, not the '('
        self.expect(ui, 'alpha.plot(')
        ui.type('y')
        ui.keys('C-w')                          # Ctrl-W: back to the blank
        self.expect(ui, '')
        ui.keys('C-z')
        self.expect(ui, 'alpha.plot(y')
        ui.keys('C-a', 'M-f', 'C-k')            # Ctrl-K from the middle
        self.expect(ui, 'alpha')
        ui.keys('C-u')
        self.expect(ui, '')
        # F1 lists them: they are rows of the key table.
        ui.keys('F1')
        ui.wait_for('Ctrl-Z / Ctrl-Y', 'Alt-B / Alt-F', 'Ctrl-W / Alt-D')

    def test_esc_and_a_key_in_one_read(self):
        ui, path = self.nb_start('esc.ipynb', ['a = 1', 'b = 2'])
        ui.tmux('set', '-s', 'escape-time', '0')
        ui.keys('Enter')
        ui.wait_for('\u2502 edit')
        ui.type('A')
        ui.wait_for('a = 1A')
        ui.keys('Escape', 'j')                  # one send: ESC j in one read
        ui.wait_for('cell 2/2', '\u2502 command \u2502')
        ui.keys('d', 'd')                       # command mode's keys: the cell goes
        ui.wait_for('cell deleted')
        ui.keys('C-s')
        ui.wait_for('saved 1 cells')
        self.assertEqual([source(c) for c in saved(path)], ['a = 1A'])
        # Alt-Enter (ESC CR) is still Alt-Enter: run and insert a cell below.
        ui.keys('Enter')
        ui.wait_for('\u2502 edit')
        ui.keys('M-Enter')
        ui.wait_for('cell 2/2', '\u2502 edit')

    def test_plot_viewer_stays_after_save(self):
        ui = self.start()
        ui.run('import matplotlib.pyplot as plt; plt.plot([1, 3, 2]); plt.show()')
        ui.wait_for('[plot 1: ', timeout=120)
        ui.keys('F4')
        ui.wait_for('1 of 1')
        ui.keys('s')
        ui.wait_for(':save-plot 1')
        dest = os.path.join(self.tmp, 'saved.png')
        ui.type(dest)
        ui.keys('Enter')
        ui.wait_for('plot 1 saved to', '1 of 1')  # the viewer is still open
        with open(dest, 'rb') as f:
            self.assertEqual(f.read(8), b'\x89PNG\r\n\x1a\n')
        ui.keys('Escape')
        ui.wait_gone('1 of 1')

    def test_ctrl_r_searches_in_a_notebook(self):
        ui, path = self.nb_start('search.ipynb', ['print("ran " + "one")', 'y = 2'])
        ui.keys('F5')
        ui.wait_for('ran one', 'cell 2/2')
        ui.keys('C-r')                          # searches, as in the console; does not run
        ui.wait_for('(history search)')
        ui.type('ran')
        ui.wait_for("(history search)'ran': print(")
        ui.keys('Enter')
        ui.wait_for('\u2502 edit')
        ui.keys('Escape')
        ui.wait_for('\u2502 command \u2502')
        ui.keys('C-s')
        ui.wait_for('saved 2 cells')
        cells = saved(path)
        self.assertEqual([source(c) for c in cells], ['print("ran " + "one")'] * 2)
        self.assertEqual(cells[1]['outputs'], [])   # not run

    def test_ctrl_q_with_a_cell_running_asks(self):
        ui = self.start()
        ui.run('import time; time.sleep(30)')
        ui.wait_for('busy', 'import time')
        ui.keys('C-q')
        ui.wait_for('a cell is running: Ctrl-Q again quits')
        self.assertIsNone(ui.exit_status(timeout=1))
        ui.keys('C-q')
        self.assertEqual(ui.exit_status(), 'exit=0')

    def test_colon_q_bang_quits_at_once(self):
        ui = self.start()
        ui.run('import time; time.sleep(30)')
        ui.wait_for('busy', 'import time')
        ui.command('q!')
        self.assertEqual(ui.exit_status(), 'exit=0')


if __name__ == '__main__':
    unittest.main()
