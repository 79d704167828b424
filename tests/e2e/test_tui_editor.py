"""The editor of an IPython user in the full-screen UI, driven in tmux as a user types: undo and
redo, word motions and deletes, a selection with cut, copy and paste (and OSC 52 into tmux's
buffer), Esc and the next key in one read, and the small defects met on the way (the plot viewer
after `s`, Ctrl-R in a notebook, Ctrl-Q with a cell running)."""
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


class EditorBase(Base):
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


class EditorTest(EditorBase):
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
        ui.keys('C-M-_')                        # and Ctrl-Alt-_ (Emacs's C-M-_: ESC ^_)
        self.expect(ui, 'x = 34')
        ui.keys('C-_')
        self.expect(ui, 'x =')
        ui.keys('C-z')
        ui.keys('C-z')
        self.expect(ui, '')
        ui.keys('C-z')
        ui.wait_for('nothing to undo')
        ui.keys('C-y')                          # and Ctrl-Y
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
        ui.keys('C-S-z')
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
        ui.wait_for('Ctrl-Z/Ctrl-Y', 'Alt-B / Alt-F', 'Ctrl-W / Alt-D')

    def test_select_cut_paste_undo(self):
        ui = self.start()
        ui.type('total = 10')
        self.expect(ui, 'total = 10')
        ui.keys('C-a', 'C-S-Right')             # a word selected
        ui.keys('C-x')
        ui.wait_for('cut 5 characters')
        self.expect(ui, ' = 10')
        ui.keys('C-z')                          # the cut is one step
        self.expect(ui, 'total = 10')
        ui.keys('C-S-z')
        self.expect(ui, ' = 10')
        ui.type('x')
        ui.keys('End')
        ui.type('; y = "')
        ui.keys('C-v')                          # pasted elsewhere
        ui.type('"')
        self.expect(ui, 'x = 10; y = "total"')
        # Typing replaces a selection, as one step with what is typed after it.
        ui.keys('Left', 'S-Left', 'S-Left', 'S-Left', 'S-Left', 'S-Left')
        ui.type('sum')
        self.expect(ui, 'x = 10; y = "sum"')
        ui.keys('C-z')
        self.expect(ui, 'x = 10; y = "total"')
        ui.keys('End', 'Enter')
        ui.wait_for('In [1]: x = 10; y = "total"')
        ui.run('y, x')
        ui.wait_for("Out[2]: ('total', 10)")

    def test_select_lines_and_kills_paste(self):
        ui = self.start()
        ui.type('a = 1')
        ui.keys('C-j')
        ui.type('b = 2')
        ui.wait_for('   ...: b = 2')
        ui.keys('S-Up')                         # from the end of line 2 to the end of line 1
        ui.keys('BSpace')
        ui.wait_gone('   ...: b = 2')
        self.expect(ui, 'a = 1')
        ui.keys('C-z')
        ui.wait_for('   ...: b = 2')
        ui.keys('S-Up', 'S-Home', 'Delete')     # Shift-Home: the whole first line, and the newline
        ui.wait_gone('a = 1')
        ui.keys('C-z', 'Escape')                # Esc drops the selection
        ui.wait_for('   ...: b = 2')
        ui.keys('M-w')
        ui.wait_for('nothing selected')
        # Ctrl-K, Ctrl-U and Ctrl-W fill the clipboard Ctrl-V pastes, as readline's kills.
        ui.keys('Down', 'End', 'C-u')           # 'b = 2' killed
        ui.keys('Up', 'End')
        ui.type(' + ')
        ui.keys('C-v')
        self.expect(ui, 'a = 1 + b = 2')
        ui.keys('C-w')                          # '2' killed, Ctrl-W without a selection
        ui.keys('C-a', 'C-v')
        self.expect(ui, '2a = 1 + b =')
        # F1 lists the keys: rows of the key table.
        ui.keys('F1')
        ui.wait_for('Shift-arrows', 'Alt-W/Ctrl-X/Ctrl-V')

    def test_copy_lands_in_tmux_buffer(self):
        ui = self.start()
        ui.tmux('set', '-s', 'set-clipboard', 'on')
        ui.tmux('delete-buffer')
        ui.type('print("ok")  # copied \u00e9')
        self.expect(ui, 'print("ok")  # copied \u00e9')
        ui.keys('S-Home')
        ui.keys('M-w')                          # ESC w in one read: Alt-W
        ui.wait_for('copied 23 characters (to the terminal')
        deadline = time.monotonic() + 10
        want = 'print("ok")  # copied \u00e9'
        while ui.tmux('show-buffer') != want and time.monotonic() < deadline:
            time.sleep(0.05)
        self.assertEqual(ui.tmux('show-buffer'), 'print("ok")  # copied \u00e9')
        self.expect(ui, 'print("ok")  # copied \u00e9')    # a copy leaves the text
        ui.keys('End', 'Enter')
        ui.wait_for('In [1]: print("ok")')

    def test_copy_with_osc52_off(self):
        ui = self.start('--osc52', 'off')       # the copy stays the editor's
        ui.tmux('set', '-s', 'set-clipboard', 'on')
        ui.tmux('set-buffer', 'before')
        ui.type('not sent')
        ui.keys('S-Home', 'M-w')
        ui.wait_for('copied 8 characters')
        ui.keys('C-e', 'C-v')
        self.expect(ui, 'not sentnot sent')
        time.sleep(0.5)
        self.assertEqual(ui.tmux('show-buffer'), 'before')

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


class ViTest(EditorBase):
    """editing-mode = vi: normal and insert modes in the cell editor, against the real UI."""
    def vi(self, keys):
        """Keys typed in normal mode, one send each (as a user types them)."""
        for k in keys:
            self.ui.type(k)

    def test_vi_console(self):
        ui = self.start('--editing-mode', 'vi')
        ui.tmux('set', '-s', 'set-clipboard', 'on')
        ui.wait_for('-- INSERT --')
        ui.type('x = 1 + 2')
        ui.keys('Escape')
        ui.wait_for('-- NORMAL --')
        self.vi('0cw')                          # cw: the word, then insert mode
        ui.wait_for('-- INSERT --')
        ui.type('total')
        ui.keys('Escape')
        self.expect(ui, 'total = 1 + 2')
        self.vi('$x')
        self.expect(ui, 'total = 1 +')
        self.vi('u')                            # undo
        self.expect(ui, 'total = 1 + 2')
        ui.keys('C-r')                          # Ctrl-R redoes in normal mode (not search)
        self.expect(ui, 'total = 1 +')
        self.vi('u')
        self.expect(ui, 'total = 1 + 2')
        self.vi('A')
        ui.type(' + 3')
        ui.keys('Escape')
        self.expect(ui, 'total = 1 + 2 + 3')
        self.vi('0wdw')                         # dw from '=': the word and its blank
        self.expect(ui, 'total 1 + 2 + 3')
        self.vi('u')
        self.expect(ui, 'total = 1 + 2 + 3')
        self.vi('o')
        ui.type('y = total * 2')
        ui.keys('Escape')
        ui.wait_for('   ...: y = total * 2')
        self.vi('yykp')                         # a line copied, put below the first
        deadline = time.monotonic() + 10        # y copies to the terminal's clipboard too
        while ui.tmux('show-buffer') != 'y = total * 2\n' and time.monotonic() < deadline:
            time.sleep(0.05)
        self.assertEqual(ui.tmux('show-buffer'), 'y = total * 2\n')
        ui.wait_for('In  >>: total = 1 + 2 + 3\n   ...: y = total * 2\n   ...: y = total * 2')
        self.vi('2dd')                          # a count: two lines go
        ui.wait_gone('   ...: y = total * 2\n   ...: y')
        self.vi('Gp')                           # the register holds them: back below
        ui.wait_for('   ...: y = total * 2\n   ...: y = total * 2')
        self.vi('ggjdd')
        self.vi('3w')                           # a count on a motion: on '*'
        self.vi('D')
        ui.wait_for('   ...: y = total\n')
        ui.type('a')
        ui.type('// 3')
        ui.keys('Escape')
        ui.wait_for('   ...: y = total // 3')
        ui.keys('Enter')                        # Enter in normal mode runs the cell
        ui.wait_for('In [1]: total = 1 + 2 + 3')
        ui.wait_for('-- INSERT --')             # a new cell starts in insert mode
        ui.run('y, total')
        ui.wait_for('Out[2]: (2, 6)')
        ui.keys('F1', 'NPage')                  # F1 lists vi's commands, a row each
        ui.wait_for("vi mode's normal mode", 'the first line (N gg: line N)')

    def test_vi_notebook_edit_mode(self):
        path = os.path.join(self.tmp, 'vi.ipynb')
        notebook(path, ['a = 1', 'b = 2'])
        ui = self.start(path, '--editing-mode', 'vi')
        ui.wait_for('local \u2502', 'command mode')
        ui.keys('Enter')
        ui.wait_for('\u2502 edit', '-- INSERT --')
        ui.keys('Escape')                       # insert -> normal, still in the cell
        ui.wait_for('\u2502 edit', '-- NORMAL --')
        self.vi('0xi')
        ui.type('c')
        ui.keys('Escape')
        ui.wait_for('c = 1')
        ui.keys('Escape')                       # normal -> command mode
        ui.wait_for('\u2502 command \u2502')
        ui.keys('C-s')
        ui.wait_for('saved 2 cells')
        self.assertEqual([source(c) for c in saved(path)], ['c = 1', 'b = 2'])
        ui.keys('j', 'Enter', 'Escape')         # command mode's keys are its own
        ui.wait_for('cell 2/2', '-- NORMAL --')
        self.vi('$')
        ui.keys('Enter')                        # runs the cell
        ui.wait_for('\u2502 command \u2502', '[1]')
        ui.keys('C-s')
        ui.wait_for('saved 2 cells')
        self.assertEqual(saved(path)[1]['execution_count'], 1)


if __name__ == '__main__':
    unittest.main()
