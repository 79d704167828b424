"""End-to-end tests of the full-screen UI in a real terminal: tmux, driven with send-keys and
read with capture-pane. Each test has its own tmux server (-L) and a fixed window size."""
import json
import os
import re
import shutil
import struct
import subprocess
import tempfile
import time
import unittest

BIN = os.environ.get('CELLBOX_BIN', 'cellbox')
PYTHON = os.environ.get('CELLBOX_TEST_PYTHON', '/usr/bin/python3')


class Tui:
    def __init__(self, tmp, name, args=(), env_extra=None, size=(100, 30)):
        self.sock = 'cellbox-%d-%s' % (os.getpid(), name)
        self.env = env = self.environment(tmp, env_extra)
        self.status = os.path.join(tmp, 'status-' + name)
        term = ('env TERM=%s ' % env['TERM']) if 'TERM' in (env_extra or {}) else ''
        cmd = term + ' '.join([BIN] + list(args)) + '; echo exit=$? > ' + self.status + '; sleep 600'
        # In the test's own directory: what the kernel writes stays out of the source tree.
        self.tmux('-f', '/dev/null', 'new-session', '-d', '-c', tmp, '-x', str(size[0]), '-y',
                  str(size[1]), cmd)
        self.wait_for('F1 help')

    @staticmethod
    def environment(tmp, env_extra=None):
        """cellbox's environment: its config, state and channel under `tmp`."""
        env = {k: v for k, v in os.environ.items() if not k.startswith('CELLBOX_')}
        env.update(XDG_CONFIG_HOME=os.path.join(tmp, 'config'),
                   XDG_STATE_HOME=os.path.join(tmp, 'state'),
                   CELLBOX_RUNTIME_DIR=os.path.join(tmp, 'run'),
                   CELLBOX_PYTHON=PYTHON, LANG='C.UTF-8', LC_ALL='C.UTF-8')
        env.pop('NO_COLOR', None)
        env.pop('TMUX', None)
        env.update(env_extra or {})
        return env

    def tmux(self, *args):
        return subprocess.run(['tmux', '-L', self.sock] + list(args), env=self.env,
                              capture_output=True, text=True, timeout=30).stdout

    def keys(self, *keys):
        self.tmux('send-keys', *keys)

    def type(self, text):
        self.tmux('send-keys', '-l', text)

    def screen(self, escapes=False):
        return self.tmux('capture-pane', '-p', *(['-e'] if escapes else []))

    def wait_for(self, text, *more, timeout=60, escapes=False):
        """The screen once TEXT and every one of MORE are on it (a check of several things
        on one screen waits for all of them: curses paints in pieces)."""
        want = (text,) + more
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            s = self.screen(escapes)
            if all(t in s for t in want):
                return s
            time.sleep(0.05)
        raise AssertionError('%r not on the screen:\n%s' % (want, self.screen()))

    def wait_gone(self, text, timeout=60):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            s = self.screen()
            if text not in s:
                return s
            time.sleep(0.05)
        raise AssertionError('%r still on the screen:\n%s' % (text, self.screen()))

    def run(self, code):
        self.type(code)
        self.keys('Enter')

    def command(self, line):
        """A cellbox command through Ctrl-O."""
        self.keys('C-o')
        self.type(line)
        self.keys('Enter')

    def quit(self):
        """Ctrl-Q, and once more if the UI asked (a cell whose end had not come yet: the
        output shows before the kernel's `done`)."""
        self.keys('C-q')
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and not os.path.exists(self.status):
            if 'Ctrl-Q again quits' in self.screen():
                self.keys('C-q')
                return
            time.sleep(0.05)

    def exit_status(self, timeout=30):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if os.path.exists(self.status):
                with open(self.status) as f:
                    status = f.read().strip()
                if status:          # the shell makes the file before it writes the line
                    return status
            time.sleep(0.05)
        return None

    def close(self):
        self.tmux('kill-server')


class Base(unittest.TestCase):
    def setUp(self):
        if not shutil.which('tmux'):
            self.skipTest('tmux is not installed (scripts/bootstrap --tests)')
        self.tmp = tempfile.mkdtemp(prefix='cellbox-tui-')
        self.ui = None

    def start(self, *args, **kw):
        self.ui = Tui(self.tmp, self.id().rsplit('.', 1)[-1], args, **kw)
        return self.ui

    def tearDown(self):
        if self.ui:
            self.ui.close()
        shutil.rmtree(self.tmp, ignore_errors=True)


class CellTest(Base):
    def test_run_cell_out(self):
        ui = self.start('tui')
        ui.run('6 * 7')
        s = ui.wait_for('Out[1]: 42', 'In [1]: 6 * 7')
        ui.quit()
        self.assertEqual(ui.exit_status(), 'exit=0')

    def test_multi_line(self):
        ui = self.start()          # no command: the UI, since this is a terminal
        ui.run('for i in range(3):')
        ui.wait_for('   ...:')      # incomplete: a new line (capture-pane trims its indent)
        ui.run('print("row", i)')
        ui.keys('Enter')           # a blank line ends the block
        ui.wait_for('row 2', 'In [1]: for i in range(3):', '   ...:     print("row", i)', 'row 0')
        # Ctrl-J always inserts a newline; Alt-Enter always runs.
        ui.type('x = 1')
        ui.keys('C-j')
        ui.type('x + 1')
        ui.keys('M-Enter')
        ui.wait_for('Out[2]: 2')

    def test_streaming_and_interrupt(self):
        ui = self.start()
        ui.run('import time')
        ui.wait_for('In [1]: import time')
        ui.run('for i in range(100): print("tick", i, flush=True); time.sleep(0.2)')
        ui.wait_for('tick 2')                  # before the cell ends
        self.assertIn('busy', ui.screen())
        # The UI answers while the cell runs: type the next cell.
        ui.type('"typed meanwhile"')
        ui.wait_for('In  >>: "typed meanwhile"')
        ui.keys('C-c')
        s = ui.wait_for('[interrupted]', 'KeyboardInterrupt')
        self.assertNotIn('tick 99', s)
        ui.keys('Enter')
        ui.wait_for("Out[3]: 'typed meanwhile'")

    def test_clear_output_live(self):
        """clear_output() redraws the cell while it runs: a progress display replaces itself
        (wait=True keeps the old text until the new comes), and the cell ends with the last."""
        ui = self.start()
        ui.run('from IPython.display import clear_output; import time')
        ui.wait_for('In [1]:')
        ui.run('for i in range(30): clear_output(wait=True); print("tick", i, flush=True); '
               'time.sleep(0.3 if i < 3 else 0.02)')
        s = ui.wait_for('tick 2')              # while the cell runs
        self.assertNotIn('tick 0', s)
        self.assertNotIn('tick 1\n', s)
        ui.run('clear_output(); print("after", "clear")')
        s = ui.wait_for('after clear', 'tick 29')
        for i in range(29):
            self.assertNotIn('tick %d\n' % i, s + '\n')

    def test_display_updates_live(self):
        """update_display() rewrites the display it names in the pane, also one an earlier
        cell showed, and shows nothing new."""
        ui = self.start()
        ui.run("h = display('state ' + str(0), display_id=True); print('printed')")
        ui.wait_for('printed')
        ui.run("import time\nfor i in range(1, 6): h.update('state %d' % i); time.sleep(0.2)")
        ui.keys('Enter')
        s = ui.wait_for("'state 5'")
        for i in range(5):                         # replaced in place, not added
            self.assertNotIn("'state %d'" % i, s)
        self.assertEqual(s.count("'state 5'"), 1, s)
        self.assertLess(s.index("'state 5'"), s.index('\nprinted'))  # where it was shown

    def test_restart_and_history(self):
        ui = self.start()
        ui.run('secret = 41')
        ui.wait_for('In [1]: secret = 41')
        ui.keys('F6')
        ui.wait_for('[kernel restarted]')
        ui.run('"secret" in globals()')
        ui.wait_for('Out[1]: False')
        # History survives the restart: Up twice brings back the first cell.
        ui.keys('Up')
        ui.keys('Up')
        ui.wait_for('In  >>: secret = 41')
        ui.keys('C-u')
        ui.keys('C-r')
        ui.type('secr')
        ui.wait_for("(history search)'secr': \"secret\" in globals()")
        ui.keys('Escape')
        # The restart command from the command prompt too.
        ui.command('restart')
        ui.wait_for('kernel restarted')

    def test_kernel_death_shown(self):
        ui = self.start()
        ui.run('import os; os._exit(3)')
        s = ui.wait_for('press F6', 'dead')
        ui.keys('F6')
        ui.wait_for('[kernel restarted]')
        ui.run('1 + 1')
        ui.wait_for('Out[1]: 2')

    def test_resize(self):
        ui = self.start()
        ui.run('print("x" * 150)')
        ui.wait_for('x' * 100)
        ui.tmux('resize-window', '-x', '60', '-y', '20')
        s = ui.wait_for('x' * 60 + '\n' + 'x' * 60 + '\n' + 'x' * 30)
        lines = s.split('\n')
        self.assertLessEqual(max(len(l) for l in lines), 60)
        self.assertIn('F1 help', lines[19])     # the status line is the last row
        ui.run('2 + 2')
        ui.wait_for('Out[2]: 4')

    def test_help_overlay_and_quit(self):
        ui = self.start()
        ui.keys('F1')
        ui.wait_for('cellbox help', 'Enter', 'Ctrl-C', 'F6', 'Ctrl-Q', 'restart')
        ui.keys('NPage')           # the rest of the commands
        ui.wait_for('theme [NAME]', 'load FILE', 'quit')
        ui.keys('q')
        ui.wait_gone('cellbox help')
        ui.command('quit')
        self.assertEqual(ui.exit_status(), 'exit=0')

    def test_completion_and_help_pager(self):
        ui = self.start()
        ui.run('import collections')
        ui.wait_for('In [1]: import collections')
        ui.type('collections.Ordered')
        ui.keys('Tab')
        ui.wait_for('In  >>: collections.OrderedDict')
        ui.keys('C-u')
        ui.run('len?')
        ui.wait_for('Return the number of items')
        ui.keys('Escape')
        ui.wait_gone('Return the number of items')

    def test_save_and_load(self):
        ui = self.start()
        ui.run('a = 5')
        ui.wait_for('In [1]: a = 5')
        ui.run('print("five", a)')
        ui.wait_for('five 5')
        path = os.path.join(self.tmp, 'cells.py')
        ui.command('save ' + path)
        ui.wait_for('saved this session')
        with open(path) as f:
            text = f.read()
        self.assertIn('# %%\na = 5\n', text)
        self.assertIn('# %%\nprint("five", a)\n', text)
        # A notebook keeps the outputs, from the history store.
        nb_path = os.path.join(self.tmp, 'cells.ipynb')
        ui.command('save ' + nb_path)
        # (The command line typed shows the name too: wait for the file itself.)
        deadline = time.monotonic() + 60
        while not os.path.exists(nb_path) and time.monotonic() < deadline:
            time.sleep(0.05)
        with open(nb_path) as f:
            nb = json.load(f)
        self.assertEqual([c['source'] for c in nb['cells']], [['a = 5'], ['print("five", a)']])
        self.assertEqual(nb['cells'][1]['outputs'][0]['text'], ['five 5\n'])
        with open(path, 'a') as f:
            f.write('\n# %%\nprint(a * 2)\n')
        ui.command('load %s run' % path)
        ui.wait_for('\n10\n')

    def test_load_recorded_session(self):
        ui = self.start()
        ui.run('print("from" + " the past")')
        ui.wait_for('from the past')
        ui.keys('C-q')
        self.assertEqual(ui.exit_status(), 'exit=0')
        ui.close()
        os.unlink(ui.status)
        sessions = os.listdir(os.path.join(self.tmp, 'state', 'cellbox', 'sessions'))
        self.assertEqual(len(sessions), 1)
        # A tmux server of its own: the old one may still be going away.
        ui = self.ui = Tui(self.tmp, 'second-session', ())
        ui.command('load %s run' % sessions[0])      # a recorded session, by its id
        ui.wait_for("running 1 cells from '%s'" % sessions[0])
        ui.wait_for('In [1]: print("from" + " the past")')

    def test_copy_in_and_out(self):
        ui = self.start()
        src = os.path.join(self.tmp, 'host.txt')
        with open(src, 'w') as f:
            f.write('from the host\n')
        ui.command('copy-in %s data.txt' % src)
        ui.wait_for("copied '%s' into the sandbox" % src)
        ui.run('print(open("data.txt").read().upper(), end="")')
        ui.wait_for('FROM THE HOST')
        ui.run('open("made.txt", "w").write("made in the kernel")')
        ui.wait_for('Out[2]: 18')
        dst = os.path.join(self.tmp, 'back.txt')
        ui.command('copy-out made.txt %s' % dst)
        ui.wait_for('out of the sandbox')
        with open(dst) as f:
            self.assertEqual(f.read(), 'made in the kernel')

    def test_history_of_earlier_sessions(self):
        ui = self.start()
        ui.run('earlier = "from the first session"')
        ui.wait_for('In [1]: earlier')
        ui.keys('C-q')
        self.assertEqual(ui.exit_status(), 'exit=0')
        ui.close()
        # A new session (on a tmux server of its own: the old one may still be going away):
        # Up reaches the earlier session's cells.
        ui = self.ui = Tui(self.tmp, 'second-session', ())
        ui.keys('Up')
        ui.wait_for('In  >>: earlier = "from the first session"')

    def test_scroll_side_pane_plot_input(self):
        ui = self.start()
        ui.run('for i in range(200): print("line", i)')
        ui.wait_for('line 199')
        ui.keys('PPage')
        s = ui.wait_for('more rows below')
        self.assertNotIn('line 199', s)
        self.assertIn('line 160', s)       # one page back
        ui.keys('NPage')
        s = ui.wait_gone('more rows below')
        self.assertIn('line 199', s)
        ui.run('import matplotlib.pyplot as plt; plt.plot([1, 2]); plt.show()')
        ui.wait_for('[plot 1: ', timeout=120)
        ui.keys('F3')
        ui.wait_for('Plots', 'History', 'plot 1 ')
        ui.keys('F3')
        ui.wait_gone('History')
        ui.run('name = input("who? ")')
        ui.wait_for('input: who?')
        ui.type('Ada')
        ui.keys('Enter')
        ui.wait_for('who? Ada')
        ui.run('name.upper()')
        ui.wait_for("'ADA'")


class ThemeTest(Base):
    def test_theme_switch(self):
        ui = self.start('tui', '--theme', 'light', env_extra={'TERM': 'xterm-256color'})
        s = ui.wait_for('light', escapes=True)
        ui.run('1')
        light = ui.wait_for('Out[1]', escapes=True)
        self.assertIn('\x1b[', light)
        ui.command('theme high-contrast')
        hc = ui.wait_for('theme high-contrast', escapes=True)
        self.assertNotEqual(light.split('\n')[-2], hc.split('\n')[-2])
        ui.command('theme nosuch')
        ui.wait_for("no theme called 'nosuch'")
        del s

    def test_user_theme_dir(self):
        d = os.path.join(self.tmp, 'config', 'cellbox', 'themes')
        os.makedirs(d)
        with open(os.path.join(d, 'mine.theme'), 'w') as f:
            f.write('normal = default\nstatus = black on green\n')
        ui = self.start('tui', env_extra={'CELLBOX_THEME': 'mine'})
        # The status line names the theme in force (a theme that is not found shows a message
        # about the built-in one there instead, which names 'mine' too) ...
        s = ui.wait_for('\u2502 mine \u2502 F1 help')
        self.assertNotIn('no theme called', s)
        # ... and is drawn in its colours: black on green, as mine.theme says.
        status = [l for l in ui.screen(escapes=True).split('\n') if 'F1 help' in l][-1]
        self.assertRegex(status, r'\x1b\[30m\x1b\[42m|\x1b\[30;42m')

    def test_no_color(self):
        ui = self.start('tui', env_extra={'NO_COLOR': '1', 'TERM': 'xterm-256color'})
        ui.run('print("\\x1b[31mred\\x1b[0m")')
        s = ui.wait_for('red', escapes=True)
        # Attributes only: no colour sequences (3x/4x/38/48) on the screen.
        import re
        self.assertIsNone(re.search(r'\x1b\[([0-9;]*;)?[34][0-8][;m]', s), repr(s))

    def test_eight_colors(self):
        ui = self.start('tui', env_extra={'TERM': 'xterm'})   # 8 colours
        ui.run('print("\\x1b[38;5;208morange\\x1b[0m")')
        s = ui.wait_for('orange', escapes=True)
        self.assertNotIn('\x1b[38;5;', s)


BLOCK = '\u2580'
# At the full figure size (the inline backend crops by default): a 640x480 image.
PLOT_CELL = ('import matplotlib.pyplot as plt; '
             'from matplotlib_inline.backend_inline import set_matplotlib_formats; '
             'set_matplotlib_formats("png", bbox_inches=None); '
             'print("before"); plt.plot([1, 3, 2]); '
             'plt.show(); print("after")')


class PlotTest(Base):
    """Inline plots in the output pane. tmux 3.3 has no sixel: the UI picks block characters;
    these tests ask for half-blocks (every cell of the image is a U+2580 then), but one."""

    def start(self, *args, **kw):
        kw.setdefault('env_extra', {}).setdefault('CELLBOX_BLOCKS', 'half')
        return super().start(*args, **kw)

    def settled(self, ui):
        """The screen once two captures a little apart agree (a frame is written whole)."""
        last = ui.screen()
        for _ in range(100):
            time.sleep(0.15)
            s = ui.screen()
            if s == last:
                return s.split('\n')
            last = s
        return last.split('\n')

    def block_rows(self, rows):
        """Indexes of the rows that hold half-blocks; each must hold nothing else."""
        out = []
        for i, r in enumerate(rows):
            if BLOCK in r:
                self.assertEqual(r.strip().strip(BLOCK), '', 'text mixed with blocks: %r' % r)
                out.append(i)
        if out:
            self.assertEqual(out, list(range(out[0], out[-1] + 1)), 'block rows not together')
        return out

    def plot_start(self):
        ui = self.start()
        ui.run(PLOT_CELL)
        ui.wait_for('\nafter', timeout=120)
        rows = self.settled(ui)
        k = next(i for i, r in enumerate(rows) if r.startswith('[plot 1: 640x480 PNG]'))
        blocks = self.block_rows(rows)
        self.assertGreaterEqual(len(blocks), 5)
        self.assertEqual(blocks[0], k + 1, 'the image is right below its line')
        self.assertEqual(rows[blocks[-1] + 1].strip(), 'after')
        self.assertEqual(rows[k - 1].strip(), 'before')
        return ui, len(blocks)

    def test_blocks_in_reserved_rows(self):
        ui, n = self.plot_start()
        # Height-bound by the cap for blocks (the screen but 9 rows: 21 of 30): a 4:3 image
        # in cells of 1:2, 56 x 21.
        self.assertEqual(n, 21)
        rows = self.settled(ui)
        self.assertEqual([len(r.strip()) for r in rows if BLOCK in r], [56] * 21)
        esc = ui.screen(escapes=True).split('\n')
        k = next(i for i, r in enumerate(esc) if BLOCK in r)
        colors = set()
        for r in esc[k:k + n]:
            colors.update(re.findall(r'\x1b\[[0-9;]*[34]8;5;([0-9]+)', r))
        self.assertGreater(len(colors), 3, 'the blocks are coloured: %r' % colors)

    def test_scroll_keeps_screen_consistent(self):
        ui, n = self.plot_start()
        ui.run('for i in range(40): print("line", i)')
        ui.wait_for('line 39')
        rows = self.settled(ui)
        self.assertEqual(self.block_rows(rows), [], 'the plot scrolled away: no stale blocks')
        # One page back (26 rows): the top of the image is above the pane, the rest shows,
        # cropped, and "after" follows it.
        ui.keys('PPage')
        ui.wait_for('more rows below')
        rows = self.settled(ui)
        blocks = self.block_rows(rows)
        self.assertTrue(blocks and 0 < len(blocks) < n, 'cropped: %d of %d rows' % (len(blocks), n))
        self.assertEqual(blocks[0], 0)
        self.assertEqual(rows[blocks[-1] + 1].strip(), 'after')
        self.assertNotIn('[plot 1:', '\n'.join(rows))
        # To the top: the whole image again, under its line.
        ui.keys('PPage')
        ui.wait_for('[plot 1:')
        rows = self.settled(ui)
        blocks = self.block_rows(rows)
        self.assertEqual(len(blocks), n)
        self.assertTrue(rows[blocks[0] - 1].startswith('[plot 1:'))
        # Back to the bottom: nothing left behind.
        ui.keys('NPage')
        ui.keys('NPage')
        ui.keys('NPage')
        ui.wait_gone('more rows below')
        rows = self.settled(ui)
        self.assertEqual(self.block_rows(rows), [])
        self.assertIn('line 39', '\n'.join(rows))

    def test_overlays_hide_plots(self):
        ui, n = self.plot_start()
        ui.keys('F1')
        ui.wait_for('q or Esc closes')
        rows = self.settled(ui)
        self.assertNotIn(BLOCK, '\n'.join(rows), 'the pager hides the plot, margins too')
        ui.keys('q')
        ui.wait_gone('q or Esc closes')
        self.assertEqual(len(self.block_rows(self.settled(ui))), n)
        # The command prompt is on the status line: the plot stays.
        ui.keys('C-o')
        ui.wait_for('\n:')
        self.assertEqual(len(self.block_rows(self.settled(ui))), n)
        ui.keys('Escape')

    def test_gallery_view_and_save(self):
        ui, n = self.plot_start()
        ui.run('plt.plot([0, 1]); plt.show()')
        ui.wait_for('[plot 2: ', timeout=120)
        ui.keys('F3')
        ui.wait_for('Plots', 'plot 1  640x480', 'plot 2  640x480')
        ui.keys('F4')
        ui.wait_for('2 of 2')
        ui.keys('Left')
        ui.wait_for('1 of 2')
        rows = self.settled(ui)
        big = [r for r in rows if BLOCK in r]
        self.assertGreater(len(big), n, 'the viewer draws it bigger than the pane')
        ui.keys('s')
        ui.wait_for(':save-plot 1')
        dest = os.path.join(self.tmp, 'saved.png')
        ui.type(dest)
        ui.keys('Enter')
        ui.wait_for('plot 1 saved to', '1 of 2')       # the viewer stays open
        with open(dest, 'rb') as f:
            head = f.read(24)
        self.assertEqual(head[:8], b'\x89PNG\r\n\x1a\n')
        self.assertEqual(struct.unpack('>II', head[16:24]), (640, 480))
        ui.keys('Escape')
        ui.wait_gone('1 of 2')
        rows = [r[:72] for r in self.settled(ui)]      # the output pane, beside the side pane
        blocks = [r for r in rows if BLOCK in r]
        self.assertGreaterEqual(len(blocks), n)         # both plots, parts of them
        self.assertTrue(all(r.strip().strip(BLOCK) == '' for r in blocks), rows)

    def test_quadrants_by_default(self):
        ui = self.start(env_extra={'CELLBOX_BLOCKS': 'auto'})
        ui.run(PLOT_CELL)
        ui.wait_for('\nafter', timeout=120)
        rows = self.settled(ui)
        k = next(i for i, r in enumerate(rows) if r.startswith('[plot 1: 640x480 PNG]'))
        end = next(i for i, r in enumerate(rows) if r.strip() == 'after')
        self.assertEqual(end - k - 1, 21, 'the reserved rows')
        quads = set(c for r in rows[k + 1:end] for c in r
                    if 0x2596 <= ord(c) <= 0x259f or c in '\u2580\u2584')
        self.assertGreater(len(quads), 5, 'quadrant characters: %r' % quads)
        self.assertNotIn(BLOCK * 10, '\n'.join(rows), 'not half-blocks')
        # The white margin is painted too: spaces on white (the capture shows a colour
        # where it changes, and keeps trailing spaces with -N).
        esc = ui.tmux('capture-pane', '-p', '-e', '-N').split('\n')
        self.assertRegex(esc[k + 1], r'^(\x1b\[[0-9;]*m)*\x1b\[48;5;231m {56}$')

    def test_graphics_none(self):
        ui = self.start('tui', '--graphics', 'none')
        ui.run(PLOT_CELL)
        s = ui.wait_for('\nafter', '[plot 1: 640x480 PNG]\nafter', timeout=120)
        self.assertNotIn(BLOCK, s)


if __name__ == '__main__':
    unittest.main()
