"""End-to-end tests of notebook mode in a real terminal (tmux, a server per test), the saved
files checked with Debian's nbformat. Run as test_notebook.NAME (unittest)."""
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_tui import Tui  # noqa: E402  (the tmux driver the UI's tests share)
from test_daily import BLOCK  # noqa: E402  (the block the paste tests paste)

try:
    import nbformat
    from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output
except ImportError:             # reported as a skip by each test
    nbformat = None


def make_notebook(path, cells):
    nb = new_notebook(metadata={'kernelspec': {'name': 'python3', 'display_name': 'Python 3',
                                               'language': 'python'}})
    nb.cells = cells
    nbformat.write(nb, path)


def four_cells(path):
    """A notebook as Jupyter leaves one: markdown, then three code cells that ran."""
    make_notebook(path, [
        new_markdown_cell('# Squares\n\nThe *first* few, with `range`.'),
        new_code_cell('n = 4', execution_count=1),
        new_code_cell('squares = [i * i for i in range(n)]\nprint(squares)', execution_count=2,
                      outputs=[new_output('stream', name='stdout', text='[0, 1, 4, 9]\n')]),
        new_code_cell('sum(squares)', execution_count=3, outputs=[
            new_output('execute_result', data={'text/plain': '14'}, execution_count=3)]),
    ])


class Base(unittest.TestCase):
    def setUp(self):
        if not shutil.which('tmux'):
            self.skipTest('tmux is not installed (scripts/bootstrap --tests)')
        if nbformat is None:
            self.skipTest('python3-nbformat is not installed (scripts/bootstrap --tests)')
        self.tmp = tempfile.mkdtemp(prefix='cellbox-nb-')
        self.uis = []

    def tearDown(self):
        for ui in self.uis:
            ui.close()
        shutil.rmtree(self.tmp, ignore_errors=True)

    def path(self, name):
        return os.path.join(self.tmp, name)

    def start(self, *args, name=None, **kw):
        ui = Tui(self.tmp, name or self.id().rsplit('.', 1)[-1], args, **kw)
        self.uis.append(ui)
        return ui

    def escape(self, ui):
        """Esc, and wait for command mode (a key sent at once after it would be Alt+key). Edit
        mode is waited for first: until the key that entered it is taken, the status line
        still says command from before."""
        ui.wait_for('\u2502 edit')
        ui.keys('Escape')
        ui.wait_for('\u2502 command \u2502')

    def ready(self, ui):
        """Wait until the kernel runs (the status line names the backend)."""
        ui.wait_for('local \u2502')
        return ui

    def read(self, path):
        with open(path, 'rb') as f:
            return f.read()

    def nb(self, path):
        nb = nbformat.read(path, as_version=4)
        nbformat.validate(nb)
        return nb

    def cellbox_pid(self, ui):
        shell = int(ui.tmux('display', '-p', '#{pane_pid}').strip())
        out = subprocess.run(['ps', '-o', 'pid=', '--ppid', str(shell)], capture_output=True,
                             text=True).stdout.split()
        self.assertEqual(len(out), 1, out)
        return int(out[0])


class NotebookTest(Base):
    def test_edit_run_save_middle_cell(self):
        path = self.path('squares.ipynb')
        four_cells(path)
        ui = self.ready(self.start(path))
        s = ui.wait_for('command mode', 'squares.ipynb',
                        'In [2]: squares = [i * i for i in range(n)]', '[0, 1, 4, 9]',
                        'Out[3]: 14')
        # Move to cell 3, edit it, run it: the new output under it.
        ui.keys('Down')
        ui.keys('Down')
        ui.wait_for('cell 3/4')
        ui.keys('Enter')
        ui.wait_for('edit mode')
        ui.keys('Up', 'C-a', 'C-k')            # the cursor starts at the end: the first line
        ui.type('n = 5; squares = [i * i * 10 for i in range(n)]')
        ui.wait_for('n = 5; squares')
        self.escape(ui)
        ui.keys('F7')                          # run in place (Ctrl-Enter where it can be told)
        s = ui.wait_for('[0, 10, 40, 90, 160]')
        self.assertNotIn('[0, 1, 4, 9]', s)    # the old output went
        # its output can show before its done (In [*]): the count comes with the done
        s = ui.wait_for('In [1]: n = 5; squares', '[0, 10, 40, 90, 160]', '[+]')
        ui.keys('C-s')
        ui.wait_for("saved 4 cells to '%s'" % path)
        nb = self.nb(path)
        cell = nb.cells[2]
        self.assertEqual(cell.source, 'n = 5; squares = [i * i * 10 for i in range(n)]\n'
                                      'print(squares)')
        self.assertEqual(cell.execution_count, 1)
        self.assertEqual(cell.outputs[0].output_type, 'stream')
        self.assertEqual(cell.outputs[0].text, '[0, 10, 40, 90, 160]\n')
        # The other cells are as they were, outputs included.
        self.assertEqual(nb.cells[3].outputs[0].data['text/plain'], '14')
        self.assertEqual(nb.cells[0].source, '# Squares\n\nThe *first* few, with `range`.')
        ui.wait_gone('[+]')

    def test_unchanged_save_is_byte_identical(self):
        ipynb = self.path('same.ipynb')
        four_cells(ipynb)
        percent = self.path('same.py')
        text = ('# ---\n# jupyter:\n#   kernelspec:\n#     display_name: Python 3\n'
                '#     name: python3\n# ---\n\n'
                '# %% [markdown]\n# # Title\n# Some text\n\n'
                '# %% Setup tags=["parameters"]\nimport math\n%time x = 1\n\n\n'
                '#%%\nprint(math.pi)\n')
        with open(percent, 'w') as f:
            f.write(text)
        before = self.read(ipynb)
        ui = self.ready(self.start(ipynb, name='ipynb'))
        ui.keys('C-s')
        ui.wait_for('saved 4 cells')
        self.assertEqual(self.read(ipynb), before)
        ui.keys('C-q')
        self.assertEqual(ui.exit_status(), 'exit=0')
        ui = self.ready(self.start('tui', percent, name='percent'))
        s = ui.wait_for('same.py', 'In [ ]: import math')
        ui.command('w')
        ui.wait_for('saved 3 cells')
        self.assertEqual(self.read(percent).decode(), text)
        # A change to one cell keeps the others' markers, titles, metadata and the header.
        ui.keys('End')
        ui.keys('Enter')
        ui.keys('C-e')
        ui.type('  # changed')
        self.escape(ui)
        ui.keys('C-s')
        ui.wait_for('saved 3 cells')
        got = self.read(percent).decode()
        self.assertEqual(got, text.replace('print(math.pi)\n', 'print(math.pi)  # changed\n'))

    def test_insert_delete_undo_move_type(self):
        path = self.path('ops.ipynb')
        make_notebook(path, [new_code_cell('a = 1'), new_code_cell('b = 2')])
        ui = self.ready(self.start(path))
        ui.wait_for('cell 1/2')
        ui.keys('b')                            # a new cell below
        ui.wait_for('cell 2/3')
        ui.keys('Enter')
        ui.type('c = 3')
        self.escape(ui)
        ui.keys('a')                            # and one above it
        ui.wait_for('cell 2/4')
        ui.keys('Enter')
        ui.type('# Notes')
        self.escape(ui)
        ui.keys('m')                            # markdown: drawn as a heading
        s = ui.wait_for(' Notes\n')
        self.assertNotIn('# Notes', s)
        ui.keys('J')                            # moved down, past "c = 3"
        ui.wait_for('cell 3/4')
        ui.keys('Up')
        ui.keys('d', 'd')                       # delete "c = 3"
        s = ui.wait_for('cell deleted')
        self.assertNotIn('c = 3', s)
        ui.keys('z')                            # and back
        ui.wait_for('c = 3')
        ui.keys('Home')
        ui.keys('y')                            # already code: nothing changes
        ui.keys('Down')
        ui.keys('r')                            # "c = 3"... no: the cell after "a = 1"
        ui.wait_for('raw: ')
        ui.keys('C-s')
        ui.wait_for('saved 4 cells')
        nb = self.nb(path)
        self.assertEqual([(c.cell_type, c.source) for c in nb.cells],
                         [('code', 'a = 1'), ('raw', 'c = 3'), ('markdown', '# Notes'),
                          ('code', 'b = 2')])

    def test_run_all_and_a_failing_cell(self):
        path = self.path('runall.ipynb')
        make_notebook(path, [new_code_cell('print("one")'), new_code_cell('1 / 0'),
                             new_code_cell('print("three")')])
        ui = self.ready(self.start(path))
        ui.command('run-all')
        s = ui.wait_for('ZeroDivisionError')
        ui.wait_for('queued cell not run')
        s = ui.screen()
        self.assertIn('one', s)
        self.assertNotIn('three\n', s.split('print("three")')[1])
        self.assertIn('In [ ]: print("three")', s)
        # The setting runs what is queued anyway.
        ui.keys('C-q')                          # the runs changed outputs: unsaved, so
        ui.wait_for('unsaved changes')
        ui.keys('C-q')                          # a second one quits
        self.assertEqual(ui.exit_status(), 'exit=0')
        ui = self.ready(self.start('--run-after-error', path, name='keep'))
        ui.command('run-all')
        s = ui.wait_for('In [3]: print("three")')
        ui.wait_for('\n  three')

    def test_recovery_after_kill(self):
        path = self.path('crash.ipynb')
        four_cells(path)
        before = self.read(path)
        ui = self.ready(self.start(path))
        ui.keys('Down')
        ui.keys('Enter')
        ui.keys('C-u')
        ui.type('n = 99  # not saved')
        self.escape(ui)
        ui.wait_for('[+]')
        rec = self.path('.crash.ipynb.cellbox-recover')
        deadline = time.monotonic() + 20
        while not os.path.exists(rec) and time.monotonic() < deadline:
            time.sleep(0.1)
        self.assertTrue(os.path.exists(rec), 'the autosave was written')
        os.kill(self.cellbox_pid(ui), signal.SIGKILL)
        self.assertEqual(self.read(path), before)
        ui = self.ready(self.start(path, name='again'))
        ui.wait_for('unsaved changes were found')
        ui.keys('r')
        s = ui.wait_for('recovered 4 cells', 'n = 99  # not saved')
        ui.keys('C-s')
        ui.wait_for('saved 4 cells')
        self.assertEqual(self.nb(path).cells[1].source, 'n = 99  # not saved')
        self.assertFalse(os.path.exists(rec))
        # A clean quit with a file that did not exist: it is made by the first save.
        ui.keys('C-q')
        self.assertEqual(ui.exit_status(), 'exit=0')
        new = self.path('fresh.ipynb')
        ui = self.ready(self.start(new, name='fresh'))
        ui.keys('Enter')
        ui.type('print("fresh")')
        ui.keys('F5')
        ui.wait_for('\n  fresh')
        ui.command('w')
        ui.wait_for('saved 2 cells')
        self.assertEqual(self.nb(new).cells[0].outputs[0].text, 'fresh\n')

    def test_changed_on_disk_is_not_overwritten(self):
        path = self.path('disk.ipynb')
        four_cells(path)
        ui = self.ready(self.start(path))
        ui.keys('Enter')
        ui.type(' more')
        self.escape(ui)
        time.sleep(0.05)
        make_notebook(path, [new_code_cell('written by someone else')])
        ui.keys('C-s')
        ui.wait_for('changed on disk since it was read')
        self.assertEqual(self.nb(path).cells[0].source, 'written by someone else')
        ui.command('w!')
        ui.wait_for('saved 4 cells')
        self.assertEqual(len(self.nb(path).cells), 4)

    def test_markdown_find_and_help(self):
        path = self.path('md.ipynb')
        make_notebook(path, [
            new_markdown_cell('# Big title\n\n## Part **one**\n\nSee [docs](https://e.org) '
                              'and `code`.\n\n> quoted\n\n1. first\n2. second\n\n```\nblock\n```'),
            new_code_cell('needle = 1'), new_code_cell('other = 2')])
        ui = self.ready(self.start(path))
        s = ui.wait_for('Big title', 'Part one', 'See docs (https://e.org) and code.',
                        '\u2502 quoted', '1. first', '  block')
        for raw in ('# Big', '**one**', '[docs]', '`code`', '```'):
            self.assertNotIn(raw, s)
        ui.keys('Enter')                        # edit: the raw source
        s = ui.wait_for('md  >>: # Big title', '**one**')
        self.escape(ui)
        ui.keys('/')
        ui.type('NEEDLE')
        ui.keys('Enter')
        ui.wait_for('cell 2/3')
        ui.keys('F1')
        ui.wait_for('Notebook ', 'Shift-Enter', 'F5', 'Ctrl-S', 'd d', 'run-all', 'Esc')

    def test_shift_enter_with_extended_keys(self):
        path = self.path('keys.ipynb')
        make_notebook(path, [new_code_cell('print("first")'), new_code_cell('print("second")')])
        ui = self.start(path)
        ui.tmux('set', '-s', 'extended-keys', 'on')   # tmux passes on modified keys as asked
        self.ready(ui)
        ui.keys('S-Enter')
        ui.wait_for('\n  first')
        ui.wait_for('cell 2/2')
        ui.keys('C-Enter')
        ui.wait_for(' second\n')
        ui.wait_for('cell 2/2')
        ui.keys('M-Enter')                      # runs again and adds a cell in edit mode
        ui.wait_for('cell 3/3')
        ui.wait_for('edit mode')

    def test_large_notebook_opens_and_scrolls(self):
        path = self.path('big.ipynb')
        make_notebook(path, [new_code_cell('x_%d = %d' % (i, i), execution_count=i + 1,
                                           outputs=[new_output('stream', name='stdout',
                                                               text='row %d\n' % i)])
                             for i in range(1000)])
        ui = self.start(path)
        ui.wait_for('cell 1/1000')
        ui.keys('End')
        s = ui.wait_for('x_999 = 999', 'row 999')
        ui.keys('PPage')
        ui.keys('PPage')
        s = ui.wait_gone('x_999 = 999')
        self.assertRegex(s, r'row 9[5-8]\d')
        ui.keys('Home')
        ui.wait_for('x_0 = 0')
        ui.command('stats')
        s = ui.wait_for('first frame', '1000 cells')


class ImageTest(Base):
    """Images stored in the notebook, drawn as half-blocks in tmux (every cell a U+2580)."""

    def start(self, *args, **kw):
        kw.setdefault('env_extra', {}).setdefault('CELLBOX_BLOCKS', 'half')
        return super().start(*args, **kw)

    def png(self):
        import base64
        import io
        from PIL import Image
        img = Image.new('RGB', (320, 240), (255, 255, 255))
        for x in range(320):
            img.putpixel((x, 120 + (x % 40) - 20), (255, 0, 0))
        buf = io.BytesIO()
        img.save(buf, format='PNG')
        return base64.b64encode(buf.getvalue()).decode()

    def test_images_in_the_file_are_drawn(self):
        path = self.path('img.ipynb')
        make_notebook(path, [
            new_code_cell('plot()', execution_count=1, outputs=[
                new_output('display_data', data={'image/png': self.png(),
                                                 'text/plain': '<Figure>'})]),
            new_code_cell('print("after")', execution_count=2, outputs=[
                new_output('stream', name='stdout', text='after\n')])])
        ui = self.ready(self.start(path))
        s = ui.wait_for('[image 1: 320x240 PNG]')
        rows = s.split('\n')
        k = next(i for i, r in enumerate(rows) if '[image 1: 320x240 PNG]' in r)
        blocks = [r for r in rows[k + 1:] if '\u2580' in r]
        self.assertGreaterEqual(len(blocks), 5, s)          # half-blocks under its line
        self.assertIn('after', '\n'.join(rows[k + len(blocks):]))
        # Opened from the console too, and saved back with the image as it was.
        ui.keys('C-q')
        self.assertEqual(ui.exit_status(), 'exit=0')
        ui = self.ready(self.start(name='console'))
        ui.command('open ' + path)
        ui.wait_for('opened 2 cells')
        ui.wait_for('[image 1: 320x240 PNG]')
        before = self.read(path)
        ui.keys('C-s')
        ui.wait_for('saved 2 cells')
        self.assertEqual(self.read(path), before)


class PasteTest(Base):
    def paste(self, ui, text):
        path = self.path('paste.txt')
        with open(path, 'w') as f:
            f.write(text)
        ui.tmux('load-buffer', path)
        ui.tmux('paste-buffer', '-p')      # bracketed, as the application asked

    def test_paste_in_the_console_is_one_cell(self):
        self.assertEqual(BLOCK.count('\n'), 20)
        ui = self.ready(self.start())
        self.paste(ui, BLOCK)
        ui.wait_for('   ...: print("total"')
        s = ui.screen()
        self.assertNotIn('In [1]:', s)          # nothing ran on the pasted newlines
        ui.keys('Enter')
        ui.wait_for('total 4.0')
        # done (the output may come first); indented as pasted, not twice
        s = ui.wait_for('In [1]: class Point:', '   ...:     def __init__(self, x, y):',
                        '   ...:         self.x = x', '   ...:             s += p.norm()')
        self.assertNotIn('In [2]:', s)

    def test_paste_in_notebook_edit_mode(self):
        path = self.path('paste.ipynb')
        make_notebook(path, [new_code_cell('')])
        ui = self.ready(self.start(path))
        ui.keys('Enter')
        ui.wait_for('edit mode')
        self.paste(ui, BLOCK)
        ui.wait_for('   ...: print("total"')
        ui.keys('F5')
        ui.wait_for('total 4.0')
        ui.keys('C-s')
        ui.wait_for('saved')
        self.assertEqual(self.nb(path).cells[0].source, BLOCK)


if __name__ == '__main__':
    unittest.main()
