"""Inline plots end to end: cellbox on a pty whose other side plays a terminal.

The harness answers the terminal queries as a sixel terminal (xterm -ti vt340 with window
ops allowed), as a colour terminal without sixel, or not at all, and records every byte
cellbox writes, so the tests can assert what a terminal would be asked and shown.
"""
import fcntl
import os
import re
import select
import shutil
import struct
import subprocess
import tempfile
import termios
import time
import unittest

BIN = os.environ.get('CELLBOX_BIN', 'cellbox')
PYTHON = os.environ.get('CELLBOX_TEST_PYTHON', '/usr/bin/python3')

QUERIES = b'\x1b[?1;1;0S\x1b[?2;1;0S\x1b[14t\x1b[16t\x1b[c'
ANSWERS = {
    # 256 registers, 1000x1000 at most, an 800x480 text area of 10x20 cells, DA1 with 4.
    'sixel': (b'\x1b[?1;0;256S\x1b[?2;0;1000;1000S\x1b[4;480;800t\x1b[6;20;10t'
              b'\x1b[?63;1;2;4;6;9;15;22c'),
    # xterm as a VT420: XTSMGRAPHICS fails, no window ops, DA1 without 4.
    'blocks': b'\x1b[?1;3S\x1b[?2;3S\x1b[?64;1;2;6;9;15;16;17;18;21;22;28c',
    'silent': None,
}
PLOT = ('import matplotlib.pyplot as plt\nprint("before")\n'
        'plt.plot([1, 3, 2]); plt.show()\nprint("after")')


def clean_env(tmp, **extra):
    env = {k: v for k, v in os.environ.items()
           if not k.startswith('CELLBOX_') and k not in ('TMUX', 'COLORTERM', 'NO_COLOR')}
    env.update(XDG_CONFIG_HOME=os.path.join(tmp, 'config'),
               XDG_STATE_HOME=os.path.join(tmp, 'state'),
               CELLBOX_RUNTIME_DIR=os.path.join(tmp, 'run'),
               CELLBOX_PYTHON=PYTHON, TERM='xterm-256color', **extra)
    return env


def _controlling_tty():
    fcntl.ioctl(0, termios.TIOCSCTTY, 0)


class FakeTerminal:
    """cellbox on a 24x80 pty; answers the queries as `persona` and records the output."""

    def __init__(self, args, env, persona, rows=24, cols=80):
        self.master, slave = os.openpty()
        fcntl.ioctl(self.master, termios.TIOCSWINSZ, struct.pack('HHHH', rows, cols, 0, 0))
        self.proc = subprocess.Popen([BIN, *args], stdin=slave, stdout=slave, stderr=slave,
                                     env=env, start_new_session=True,
                                     preexec_fn=_controlling_tty)
        os.close(slave)
        self.answer = ANSWERS[persona]
        self.out = b''
        self.answered = False
        self.query_seen_at = None
        self.closed = False
        self.pos = 0            # expect() looks past the last match

    def pump(self, timeout):
        """Read for up to `timeout` seconds; answer the queries once they are all in."""
        r, _, _ = select.select([self.master], [], [], timeout)
        if not r:
            return
        try:
            data = os.read(self.master, 65536)
        except OSError:
            data = b''
        if not data:
            self.closed = True
            return
        self.out += data
        if self.query_seen_at is None and b'\x1b[c' in self.out:
            self.query_seen_at = time.monotonic()
        if self.query_seen_at is not None and self.answer and not self.answered:
            os.write(self.master, self.answer)
            self.answered = True

    def expect(self, pattern, timeout=60):
        rx = re.compile(pattern)
        deadline = time.monotonic() + timeout
        while not rx.search(self.out, self.pos):
            if self.closed or time.monotonic() > deadline:
                raise AssertionError('no %r in %r' % (pattern, self.out[-3000:]))
            self.pump(0.1)
        m = rx.search(self.out, self.pos)
        self.pos = m.end()
        return m

    def send(self, data):
        os.write(self.master, data)

    def finish(self, timeout=120):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and not self.closed:
            self.pump(0.1)
        code = self.proc.wait(timeout=max(1, deadline - time.monotonic()))
        os.close(self.master)
        return code

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        if not self.closed:
            os.close(self.master)
            self.closed = True


class Base(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix='cellbox-gfx-')

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def run_plot(self, persona, *flags, **env):
        t = FakeTerminal(['run', *flags, '-c', PLOT], clean_env(self.tmp, **env), persona)
        try:
            self.assertEqual(t.finish(), 0, t.out[-2000:])
        finally:
            t.kill()
        return t


class RunTest(Base):
    def test_sixel_terminal(self):
        t = self.run_plot('sixel')
        out = t.out
        # Asked once, every query in one write, DA1 last.
        self.assertEqual(out.count(b'\x1b[c'), 1)
        self.assertTrue(out.startswith(QUERIES), out[:80])
        # One DCS sixel image, after the cell's earlier output, at the start of a line,
        # with the text that followed below it.
        self.assertEqual(out.count(b'\x1bPq'), 1)
        m = re.search(rb'before\r\n\x1bPq"1;1;(\d+);(\d+)#', out)
        self.assertIsNotNone(m, out[:300])
        # 640x480 fitted to 80x(24-2) cells of 10x20 pixels: 440 pixels high.
        self.assertEqual((int(m.group(1)), int(m.group(2))), (586, 440))
        end = out.index(b'\x1b\\', m.end())
        self.assertRegex(out[end:end + 20], rb'^\x1b\\\r+\nafter\r\n')
        # The text line is not printed when the plot is drawn.
        self.assertNotIn(b'[plot 1:', out)
        # A plain sixel body between: registers, bands, no other escapes.
        body = out[m.end():end]
        self.assertNotIn(b'\x1b', body)
        self.assertGreater(body.count(b'-'), 440 // 6 - 2)   # one '-' per band of 6 rows

    def test_no_sixel_terminal_gets_half_blocks(self):
        t = self.run_plot('blocks', COLORTERM='truecolor')
        text = t.out.decode()
        rows = [line.rstrip('\r') for line in text.split('\n') if '\u2580' in line]
        # 640x480 in 80 columns and 22 rows of two pixels: 58x44 pixels, 22 rows of 58 cells.
        self.assertEqual(len(rows), 22, text[:500])
        for row in rows:
            self.assertEqual(row.count('\u2580'), 58)
            self.assertTrue(row.endswith('\x1b[0m'))
        # The figure's white margin, in truecolor, top and bottom.
        self.assertTrue(rows[0].startswith('\x1b[38;2;255;255;255;48;2;255;255;255m\u2580'))
        self.assertLess(text.index('before'), text.index('\u2580'))
        self.assertLess(text.rindex('\u2580'), text.index('after'))
        self.assertNotIn('\x1bP', text)

    def test_blocks_in_256_colours(self):
        t = self.run_plot('blocks')           # no COLORTERM
        text = t.out.decode()
        self.assertIn('\x1b[38;5;231;48;5;231m\u2580', text)
        self.assertNotIn('38;2;', text)

    def test_silent_terminal(self):
        start = time.monotonic()
        t = self.run_plot('silent')
        self.assertIsNotNone(t.query_seen_at)
        # The line names a file that is still there after the run (kept with the history).
        m = re.search(rb'\[plot 1: 640x480 PNG, saved to ([^\]]+/plots/plot-1\.png)\]', t.out)
        self.assertIsNotNone(m, t.out[-500:])
        self.assertTrue(os.path.isfile(m.group(1).decode()))
        self.assertNotIn(b'\x1bP', t.out)
        # The bounded wait: far less than the generous limit that would catch a hang.
        self.assertLess(time.monotonic() - t.query_seen_at, 30)
        self.assertLess(time.monotonic() - start, 120)

    def test_graphics_none_asks_nothing(self):
        t = self.run_plot('sixel', '--graphics', 'none')
        self.assertNotIn(b'\x1b[c', t.out)
        self.assertIn(b'[plot 1: 640x480 PNG', t.out)

    def test_forced_sixel_on_a_terminal_without_it(self):
        t = self.run_plot('blocks', '--graphics=sixel')
        self.assertIn(b'\x1bPq"1;1;', t.out)

    def test_config_key(self):
        os.makedirs(os.path.join(self.tmp, 'config', 'cellbox'))
        with open(os.path.join(self.tmp, 'config', 'cellbox', 'config'), 'w') as f:
            f.write('graphics = blocks\n')
        t = self.run_plot('sixel')
        self.assertIn('\u2580', t.out.decode())
        self.assertNotIn(b'\x1bPq', t.out)

    def test_bad_value(self):
        p = subprocess.run([BIN, 'run', '--graphics', 'kitty', '-c', '1'], capture_output=True,
                           text=True, env=clean_env(self.tmp), timeout=60)
        self.assertEqual(p.returncode, 2)
        self.assertIn("graphics: 'kitty' is not one of auto|sixel|blocks|none", p.stderr)

    def test_pipe_gets_text_line(self):
        p = subprocess.run([BIN, 'run', '-c', PLOT], capture_output=True, env=clean_env(self.tmp),
                           timeout=120)
        self.assertEqual(p.returncode, 0)
        self.assertNotIn(b'\x1b', p.stdout)
        self.assertIn(b'[plot 1: 640x480 PNG', p.stdout)


class ReplTest(Base):
    def test_sixel_after_the_cells_output(self):
        t = FakeTerminal(['repl'], clean_env(self.tmp), 'sixel')
        try:
            t.expect(rb'In \[(\x1b\[1m)?1(\x1b\[0;32m)?\]:')
            t.send(PLOT.replace('\n', '; ').encode() + b'\r')
            m = t.expect(rb'before\r\n\x1bPq"1;1;(\d+);(\d+)#[^\x1b]*\x1b\\\r+\nafter\r\n')
            self.assertEqual((int(m.group(1)), int(m.group(2))), (586, 440))
            t.expect(rb'In \[(\x1b\[1m)?2(\x1b\[0;32m)?\]:')
            t.send(b'\x04')
            self.assertEqual(t.finish(), 0)
        finally:
            t.kill()
        self.assertEqual(t.out.count(b'\x1b[c'), 1)


class TuiTest(Base):
    """The full-screen UI: asked once at start and after a resize, plots written after the
    frame with the cursor saved around them, only when they move or the screen was wiped."""

    def settle(self, t, quiet=1.0):
        """Read until cellbox has written nothing for `quiet` seconds."""
        n = -1
        while n != len(t.out):
            n = len(t.out)
            deadline = time.monotonic() + quiet
            while time.monotonic() < deadline and not t.closed:
                t.pump(0.1)

    def test_sixel_in_the_output_pane(self):
        t = FakeTerminal(['tui'], clean_env(self.tmp), 'sixel')
        dcs = rb'\x1b7\x1b\[(\d+);(\d+)H\x1bPq"1;1;(\d+);(\d+)#[^\x1b]*\x1b\\\x1b8'
        try:
            t.expect(rb'F1 help')
            # Asked once, all together, before curses takes the screen (1049h).
            self.assertLess(t.out.index(QUERIES), t.out.index(b'\x1b[?1049h'))
            self.assertEqual(t.out.count(b'\x1b[c'), 1)
            t.send(PLOT.replace('\n', '; ').encode() + b'\r')
            m = t.expect(dcs)
            # In [1] and its code (two rows at 80 columns), "before", the plot's line: the
            # image from row 5, column 1; 24 rows, so at most 12 rows of 20 pixels: 320x240.
            self.assertEqual([int(g) for g in m.groups()], [5, 1, 320, 240])
            self.settle(t)
            self.assertIn(b'after', t.out)
            at = len(t.out)
            t.send(b'x')                      # a frame where no plot moves writes none
            self.settle(t)
            self.assertIn(b'x', t.out[at:])
            self.assertNotIn(b'\x1bPq', t.out[at:])
            t.send(b'\x0c')                   # Ctrl-L wipes the screen: drawn again
            m = t.expect(dcs)
            self.assertEqual([int(g) for g in m.groups()], [5, 1, 320, 240])
            t.send(b'\x1bOP')                 # F1: the pager hides it
            t.expect(rb'q or Esc closes')
            self.settle(t)
            self.assertNotIn(b'\x1bPq', t.out[t.pos:])
            t.send(b'q')
            m = t.expect(dcs)
            self.assertEqual([int(g) for g in m.groups()], [5, 1, 320, 240])
            # A resize: asked again, the plot fitted to the new size (30 rows: 15 rows high;
            # the code still takes two rows at 100 columns).
            # (The pty sends SIGWINCH to cellbox, its foreground job.)
            fcntl.ioctl(t.master, termios.TIOCSWINSZ, struct.pack('HHHH', 30, 100, 0, 0))
            t.expect(rb'\x1b\[c')
            t.send(ANSWERS['sixel'])
            m = t.expect(dcs)
            self.assertEqual([int(g) for g in m.groups()], [5, 1, 400, 300])
            self.assertEqual(t.out.count(b'\x1b[c'), 2)
            t.send(b'\x11')
            self.assertEqual(t.finish(), 0)
        finally:
            t.kill()


if __name__ == '__main__':
    unittest.main()
