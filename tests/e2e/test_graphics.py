"""Inline plots end to end: cellbox on a pty whose other side plays a terminal.

The harness answers the terminal queries as kitty (its recorded answers), as iTerm2, as a
sixel terminal (xterm -ti vt340 with window ops allowed), as a colour terminal without
sixel, or not at all, and records every byte cellbox writes, so the tests can assert what a
terminal would be asked and shown. The personas also answer the background colour (OSC 11)
light or dark.
"""
import base64
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

QUERIES = (b'\x1b[?1;1;0S\x1b[?2;1;0S\x1b[14t\x1b[16t\x1b_Gi=31,s=1,v=1,a=q,t=d,f=24;AAAA\x1b\\'
           b'\x1b[>q\x1b]11;?\x1b\\\x1b[c')
ANSWERS = {
    # 256 registers, 1000x1000 at most, an 800x480 text area of 10x20 cells, DA1 with 4.
    'sixel': (b'\x1b[?1;0;256S\x1b[?2;0;1000;1000S\x1b[4;480;800t\x1b[6;20;10t'
              b'\x1b[?63;1;2;4;6;9;15;22c'),
    # xterm as a VT420: XTSMGRAPHICS fails, no window ops, DA1 without 4.
    'blocks': b'\x1b[?1;3S\x1b[?2;3S\x1b[?64;1;2;6;9;15;16;17;18;21;22;28c',
    'silent': None,
    # What Debian's kitty 0.26.5 answers (recorded under Xvfb): no XTSMGRAPHICS, the text
    # area and an 8x17 cell, the graphics query OK, XTVERSION, a black background, DA1.
    'kitty': (b'\x1b[4;391;640t\x1b[6;17;8t\x1b_Gi=31;OK\x1b\\\x1bP>|kitty(0.26.5)\x1b\\'
              b'\x1b]11;rgb:0000/0000/0000\x1b\\\x1b[?62;c'),
    # An iTerm2 3.5: cells of 10x20, XTVERSION, a white background, DA1 with sixel (which
    # iTerm2 also has; its own protocol is preferred).
    'iterm': (b'\x1b[4;480;800t\x1b[6;20;10t\x1bP>|iTerm2 3.5.0\x1b\\'
              b'\x1b]11;rgb:ffff/ffff/ffff\x1b\\\x1b[?62;4c'),
    # xterm 379 without sixel on a white and on a black background (recorded: XTVERSION
    # and OSC 11 as xterm sends them).
    'light': (b'\x1b[?1;3S\x1b[?2;3S\x1bP>|XTerm(379)\x1b\\\x1b]11;rgb:ffff/ffff/ffff\x1b\\'
              b'\x1b[?64;1;2;6;9;15;16;17;18;21;22;28c'),
    'dark': (b'\x1b[?1;3S\x1b[?2;3S\x1bP>|XTerm(379)\x1b\\\x1b]11;rgb:0000/0000/0000\x1b\\'
             b'\x1b[?64;1;2;6;9;15;16;17;18;21;22;28c'),
}
# Thirty lines of output and a marker (curses may write "line 29" as "line 2", BS, "29").
LINES = b'print("\\n".join("line %d" % i for i in range(30)) + "\\nend of lines")\r'
PLACEHOLDER = '\U0010EEEE'
# The first diacritics of the kitty protocol's table: numbers 0, 1, 2, ...
DIACRITICS = '\u0305\u030D\u030E\u0310\u0312\u033D\u033E\u033F\u0346\u034A'


def kitty_commands(out):
    """The kitty graphics commands in `out`: (keys dict, payload bytes), the query left out."""
    cmds = []
    for m in re.finditer(rb'\x1b_G([^;\x1b]*)(?:;([^\x1b]*))?\x1b\\', out):
        keys = dict(kv.split(b'=', 1) for kv in m.group(1).split(b',') if kv)
        keys = {k.decode(): v.decode() for k, v in keys.items()}
        if keys.get('a') == 'q':
            continue
        cmds.append((keys, m.group(2) or b''))
    return cmds


def transmissions(cmds):
    """Split kitty commands into transmissions: lists of chunks, first with its keys."""
    out, cur = [], None
    for keys, payload in cmds:
        if cur is None and keys.get('a') in ('t', 'T'):
            cur = [(keys, payload)]
        elif cur is not None:
            cur.append((keys, payload))
        if cur is not None and keys.get('m', '0') == '0':
            out.append(cur)
            cur = None
    return out


# Saved at the full figure size (not cropped as the inline backend crops by default), so
# that the geometry below is that of a 640x480 image.
PLOT = ('import matplotlib.pyplot as plt\n'
        'from matplotlib_inline.backend_inline import set_matplotlib_formats\n'
        'set_matplotlib_formats("png", bbox_inches=None)\nprint("before")\n'
        'plt.plot([1, 3, 2]); plt.show()\nprint("after")')


# What the test's own terminal would tell cellbox.
LEAKY = ('TMUX', 'COLORTERM', 'NO_COLOR', 'TERM_PROGRAM', 'LC_TERMINAL', 'COLORFGBG',
         'KITTY_WINDOW_ID', 'WEZTERM_EXECUTABLE')


def clean_env(tmp, **extra):
    env = {k: v for k, v in os.environ.items()
           if not k.startswith('CELLBOX_') and k not in LEAKY}
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

    def quit(self):
        """Ctrl-Q, and once more if the UI asked (a cell whose end had not come yet)."""
        self.send(b'\x11')
        deadline = time.monotonic() + 2
        while time.monotonic() < deadline and not self.closed:
            self.pump(0.1)
        if not self.closed:
            self.send(b'\x11')

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

    def check_chunks(self, chunks):
        """A transmission as the protocol wants it: base64 chunks of at most 4096 bytes, a
        multiple of 4 but the last, m=1 on all but the last, only m and q after the first."""
        self.assertGreater(len(chunks), 1, 'a plot takes several chunks')
        for i, (keys, payload) in enumerate(chunks):
            self.assertLessEqual(len(payload), 4096)
            last = i == len(chunks) - 1
            self.assertEqual(keys['m'], '0' if last else '1')
            if not last:
                self.assertEqual(len(payload) % 4, 0)
            if i:
                self.assertEqual(set(keys), {'m', 'q'})
        return base64.b64decode(b''.join(p for _, p in chunks), validate=True)

    def run_plot(self, persona, *flags, code=PLOT, status=0, **env):
        t = FakeTerminal(['run', *flags, '-c', code], clean_env(self.tmp, **env), persona)
        try:
            self.assertEqual(t.finish(), status, t.out[-2000:])
        finally:
            t.kill()
        return t

    def saved_png(self):
        with open(os.path.join(self.tmp, 'plots', 'plot-1.png'), 'rb') as f:
            return f.read()


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
        t = self.run_plot('blocks', '--blocks', 'half', COLORTERM='truecolor')
        text = t.out.decode()
        rows = [line.rstrip('\r') for line in text.split('\n') if '\u2580' in line]
        # 640x480 in 80 columns and 22 rows of 10x20 (guessed) cells: 22 rows of 59 cells
        # (the image fills whole cells at the cells' 1:2 aspect).
        self.assertEqual(len(rows), 22, text[:500])
        for row in rows:
            self.assertEqual(row.count('\u2580'), 59)
            self.assertTrue(row.endswith('\x1b[0m'))
        # The figure's white margin, in truecolor, top and bottom.
        self.assertTrue(rows[0].startswith('\x1b[38;2;255;255;255;48;2;255;255;255m\u2580'))
        self.assertLess(text.index('before'), text.index('\u2580'))
        self.assertLess(text.rindex('\u2580'), text.index('after'))
        self.assertNotIn('\x1bP', text)

    def test_blocks_in_256_colours(self):
        t = self.run_plot('blocks', '--blocks=half')           # no COLORTERM
        text = t.out.decode()
        self.assertIn('\x1b[38;5;231;48;5;231m\u2580', text)
        self.assertNotIn('38;2;', text)

    def test_blocks_default_to_quadrants(self):
        t = self.run_plot('blocks', COLORTERM='truecolor')
        text = t.out.decode()
        rows = [line.rstrip('\r') for line in text.split('\n') if '\x1b[0m' in line]
        # Quadrants: 2x2 sub-pixels a cell, the same 22 x 59 cells; the white margin as
        # spaces on white, the plot's lines in quadrant characters.
        self.assertEqual(len(rows), 22, text[:500])
        self.assertTrue(rows[0].startswith('\x1b[48;2;255;255;255m' + ' ' * 59))
        quads = set(c for c in text if 0x2596 <= ord(c) <= 0x259f or c in '\u2580\u2584')
        self.assertGreater(len(quads), 4, quads)
        self.assertFalse(any(0x1fb00 <= ord(c) <= 0x1fb3b for c in text), 'no sextants')
        self.assertNotIn('\x1b_Ga=', text)

    def test_kitty_terminal(self):
        t = self.run_plot('kitty', '--plots', os.path.join(self.tmp, 'plots'))
        out = t.out
        self.assertTrue(out.startswith(QUERIES), out[:120])
        self.assertEqual(out.count(b'\x1b[c'), 1)
        self.assertNotIn(b'\x1bPq', out)
        sent = transmissions(kitty_commands(out))
        self.assertEqual(len(sent), 1)
        keys = sent[0][0][0]
        # Sent once as PNG, drawn at the cursor over the cells it fits: 640x480 in 80 x 22
        # cells of 8x17 pixels is 498x374 pixels, 63 x 22 cells.
        self.assertEqual((keys['a'], keys['f'], keys['q']), ('T', '100', '2'))
        self.assertEqual((keys['c'], keys['r']), ('63', '22'))
        self.assertEqual(self.check_chunks(sent[0]), self.saved_png())
        # After the image (the terminal moved the cursor to its last row): the next line.
        self.assertRegex(out, rb'before\r\n\x1b_Ga=T,')
        self.assertRegex(out, rb'\x1b_Gm=0,q=2;[A-Za-z0-9+/=]*\x1b\\\r+\n'
                              rb'\[plot 1: 640x480 PNG, saved to [^\]]+\]\r+\nafter')

    def test_kitty_unicode_placeholders(self):
        t = self.run_plot('kitty', '--graphics', 'kitty-unicode', '--plots',
                          os.path.join(self.tmp, 'plots'))
        sent = transmissions(kitty_commands(t.out))
        self.assertEqual(len(sent), 1)
        keys = sent[0][0][0]
        self.assertEqual((keys['a'], keys['U'], keys['f'], keys['q']), ('T', '1', '100', '2'))
        self.assertEqual((keys['c'], keys['r']), ('63', '22'))
        self.assertEqual(self.check_chunks(sent[0]), self.saved_png())
        image_id = int(keys['i'])
        self.assertTrue(1 <= image_id & 255 <= 255 and image_id >> 8 & 0xffff == 0)
        text = re.sub(r'\x1b_G[^\x1b]*\x1b\\', '', t.out.decode())
        rows = [r.strip('\r') for r in text.split('\n') if PLACEHOLDER in r]
        self.assertEqual(len(rows), 22)
        high = DIACRITICS[0] if image_id >> 24 == 0 else None
        for n, row in enumerate(rows):
            # 256-colour foreground = the id's low byte; row, column 0 and the id's high
            # byte on the first cell; the other 62 cells inherit.
            self.assertTrue(row.startswith('\x1b[38;5;%dm' % (image_id & 255)), row[:20])
            first = row[row.index(PLACEHOLDER):]
            self.assertEqual(first[1], DIACRITICS[n] if n < len(DIACRITICS) else first[1])
            self.assertEqual(first[2], DIACRITICS[0])
            if high:
                self.assertEqual(first[3], high)
            self.assertEqual(row.count(PLACEHOLDER), 63)
            self.assertTrue(row.endswith(PLACEHOLDER + '\x1b[39m'))
        self.assertLess(text.index('before'), text.index(PLACEHOLDER))
        self.assertLess(text.rindex(PLACEHOLDER), text.index('after'))

    def test_kitty_unicode_through_tmux(self):
        t = self.run_plot('kitty', '--graphics', 'kitty-unicode', TMUX='/tmp/tmux-0/x,1,0')
        out = t.out
        # Every graphics command inside tmux's passthrough with its ESCs doubled; the
        # placeholders are plain text for tmux to keep.
        wrapped = re.findall(rb'\x1bPtmux;\x1b\x1b_G(.*?)\x1b\x1b\\\x1b\\', out, re.S)
        self.assertGreater(len(wrapped), 1)
        self.assertTrue(wrapped[0].startswith(b'a=T,U=1,f=100,'))
        bare = out.replace(b'\x1bPtmux;', b'')
        self.assertNotIn(b'\x1b_Ga=', re.sub(rb'\x1b\x1b_G', b'', bare))
        self.assertEqual(out.decode().count(PLACEHOLDER + DIACRITICS[0] + DIACRITICS[0]), 1)

    def test_iterm_terminal(self):
        t = self.run_plot('iterm', '--plots', os.path.join(self.tmp, 'plots'))
        out = t.out
        m = re.search(rb'before\r\n\x1b\]1337;File=inline=1;size=(\d+);width=(\d+);height=(\d+);'
                      rb'preserveAspectRatio=0:([A-Za-z0-9+/=]+)\x07\r+\n\[plot 1: [^\]]+\]\r+\nafter',
                      out)
        self.assertIsNotNone(m, out[:400])
        png = base64.b64decode(m.group(4), validate=True)
        self.assertEqual(png, self.saved_png())
        self.assertEqual(int(m.group(1)), len(png))
        # 640x480 in 80 x 22 cells of 10x20: 586x440 pixels, 59 x 22 cells.
        self.assertEqual((int(m.group(2)), int(m.group(3))), (59, 22))
        self.assertEqual(out.count(b'\x1b]1337;'), 1)
        self.assertNotIn(b'\x1bPq', out)
        self.assertNotIn(b'\x1b_Ga=', out)

    def test_light_background_gets_lightbg_tracebacks(self):
        # IPython's LightBG scheme writes the exception name in 0;31, Linux in 1;31.
        t = self.run_plot('light', code='1/0', status=1)
        self.assertIn(b'\x1b[0;31mZeroDivisionError', t.out)
        self.assertNotIn(b'\x1b[1;31mZeroDivisionError', t.out)
        t = self.run_plot('dark', code='1/0', status=1)
        self.assertIn(b'\x1b[1;31mZeroDivisionError', t.out)
        t = self.run_plot('dark', code='1/0', status=1, COLORFGBG='0;15')
        self.assertIn(b'\x1b[1;31mZeroDivisionError', t.out, 'the answer beats COLORFGBG')
        t = self.run_plot('silent', code='1/0', status=1, COLORFGBG='0;15')
        self.assertIn(b'\x1b[0;31mZeroDivisionError', t.out, 'no answer: COLORFGBG')

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
        p = subprocess.run([BIN, 'run', '--graphics', 'ascii', '-c', '1'], capture_output=True,
                           text=True, env=clean_env(self.tmp), timeout=60)
        self.assertEqual(p.returncode, 2)
        self.assertIn("run: --graphics: 'ascii' is not one of "
                      "auto|kitty|kitty-unicode|iterm|sixel|blocks|none", p.stderr)
        p = subprocess.run([BIN, 'run', '--blocks', 'braille', '-c', '1'], capture_output=True,
                           text=True, env=clean_env(self.tmp), timeout=60)
        self.assertEqual(p.returncode, 2)
        self.assertIn("run: --blocks: 'braille' is not one of auto|sextant|quadrant|half",
                      p.stderr)

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
            # In [1] and its code (three rows at 80 columns), "before", the plot's line: the
            # image from row 6, column 1; 24 rows, so at most 12 rows of 20 pixels: 320x240.
            self.assertEqual([int(g) for g in m.groups()], [6, 1, 320, 240])
            self.settle(t)
            self.assertIn(b'after', t.out)
            at = len(t.out)
            t.send(b'x')                      # a frame where no plot moves writes none
            self.settle(t)
            self.assertIn(b'x', t.out[at:])
            self.assertNotIn(b'\x1bPq', t.out[at:])
            t.send(b'\x0c')                   # Ctrl-L wipes the screen: drawn again
            m = t.expect(dcs)
            self.assertEqual([int(g) for g in m.groups()], [6, 1, 320, 240])
            t.send(b'\x1bOP')                 # F1: the pager hides it
            t.expect(rb'q or Esc closes')
            self.settle(t)
            self.assertNotIn(b'\x1bPq', t.out[t.pos:])
            t.send(b'q')
            m = t.expect(dcs)
            self.assertEqual([int(g) for g in m.groups()], [6, 1, 320, 240])
            # A resize: asked again, the plot fitted to the new size (30 rows: 15 rows high;
            # the code takes three rows at 100 columns too).
            # (The pty sends SIGWINCH to cellbox, its foreground job.)
            fcntl.ioctl(t.master, termios.TIOCSWINSZ, struct.pack('HHHH', 30, 100, 0, 0))
            t.expect(rb'\x1b\[c')
            t.send(ANSWERS['sixel'])
            m = t.expect(dcs)
            self.assertEqual([int(g) for g in m.groups()], [6, 1, 400, 300])
            self.assertEqual(t.out.count(b'\x1b[c'), 2)
            t.quit()
            self.assertEqual(t.finish(), 0)
        finally:
            t.kill()


    def channel_png(self):
        """The kernel's first plot, in the session's channel (while the session runs)."""
        for root, _, files in os.walk(os.path.join(self.tmp, 'run')):
            if '1.png' in files and root.endswith('plots'):
                with open(os.path.join(root, '1.png'), 'rb') as f:
                    return f.read()
        self.fail('no plots/1.png under the runtime directory')

    def test_kitty_in_the_output_pane(self):
        t = FakeTerminal(['tui'], clean_env(self.tmp), 'kitty')
        try:
            t.expect(rb'F1 help')
            t.send(PLOT.replace('\n', '; ').encode() + b'\r')
            t.expect(rb'\x1b_Ga=p,')
            self.settle(t)
            cmds = kitty_commands(t.out)
            sent = transmissions(cmds)
            self.assertEqual(len(sent), 1)
            keys = sent[0][0][0]
            self.assertEqual((keys['a'], keys['f'], keys['q']), ('t', '100', '2'))
            image = keys['i']
            self.assertEqual(self.check_chunks(sent[0]), self.channel_png())
            puts = [k for k, _ in cmds if k.get('a') == 'p']
            # 24 rows: at most 12 of 17 pixels (204), so 272x204 pixels in 34 x 12 cells of
            # 8x17; the whole image as the source, the cursor left where it was.
            self.assertEqual(puts, [{'a': 'p', 'i': image, 'p': '1', 'x': '0', 'y': '0',
                                     'w': '640', 'h': '480', 'c': '34', 'r': '12', 'C': '1',
                                     'q': '2'}])
            # In the frame's graphics write: at the plot's top-left cell, after the
            # transmission (which does not care where the cursor is).
            # (Row 6: the cell's three rows, then 'before'.)
            self.assertRegex(t.out, rb'\x1b7\x1b\[6;1H(\x1b_G[^\x1b]*\x1b\\)+'
                                    rb'\x1b_Ga=p,[^\x1b]*\x1b\\\x1b8')
            at = len(t.out)
            t.send(b'x')                      # nothing moved: nothing written
            self.settle(t)
            self.assertIn(b'x', t.out[at:])
            self.assertNotIn(b'\x1b_G', t.out[at:])
            t.send(b'\x7f')
            # Scrolled away: the placement is deleted (the image stays with the terminal).
            at = len(t.out)
            t.send(LINES)
            t.expect(rb'end of lines')
            self.settle(t)
            later = kitty_commands(t.out[at:])
            self.assertIn({'a': 'd', 'd': 'i', 'i': image, 'p': '1', 'q': '2'},
                          [k for k, _ in later])
            self.assertEqual(transmissions(later), [])
            # Back far enough to see its lower part: placed again, cropped by the source
            # rectangle, without sending the pixels again.
            at = len(t.out)
            t.send(b'\x1b[5~')
            t.expect(rb'more rows below')
            self.settle(t)
            later = kitty_commands(t.out[at:])
            self.assertEqual(transmissions(later), [])
            puts = [k for k, _ in later if k.get('a') == 'p']
            self.assertTrue(puts, t.out[at:][-500:])
            crop = puts[-1]
            rows = int(crop['r'])
            self.assertTrue(0 < rows < 12 and crop['y'] != '0', crop)
            self.assertEqual(int(crop['y']) + int(crop['h']), 480)
            self.assertEqual(int(crop['y']), 480 * (12 - rows) // 12)
            # The pager hides it; closing the pager places it again.
            at = len(t.out)
            t.send(b'\x1bOP')
            t.expect(rb'q or Esc closes')
            self.settle(t)
            self.assertIn({'a': 'd', 'd': 'i', 'i': image, 'p': '1', 'q': '2'},
                          [k for k, _ in kitty_commands(t.out[at:])])
            t.send(b'q')
            t.expect(rb'\x1b_Ga=p,i=' + image.encode())
            # Leaving: the terminal is told to drop the image and its data.
            at = len(t.out)
            t.quit()
            self.assertEqual(t.finish(), 0)
            self.assertIn({'a': 'd', 'd': 'I', 'i': image, 'q': '2'},
                          [k for k, _ in kitty_commands(t.out[at:])])
            self.assertEqual(len(transmissions(kitty_commands(t.out))), 1)
        finally:
            t.kill()

    def test_kitty_second_plot_leaves_the_first(self):
        # 40 rows: two small plots (200x150 pixels, 9 rows) fit the pane one under the other.
        small = ('import matplotlib.pyplot as plt; plt.figure(figsize=(2, 1.5)); '
                 'plt.plot([1, 3, 2]); plt.show()')
        t = FakeTerminal(['tui'], clean_env(self.tmp), 'kitty', rows=40)
        try:
            t.expect(rb'F1 help')
            t.send(small.encode() + b'\r')
            t.expect(rb'\x1b_Ga=p,')
            self.settle(t)
            first = transmissions(kitty_commands(t.out))[0][0][0]['i']
            at = len(t.out)
            t.send(small.encode() + b'\r')
            t.expect(rb'\x1b_Ga=t,')
            self.settle(t)
            later = [k for k, _ in kitty_commands(t.out[at:])]
            second = [k['i'] for k in later if k.get('a') == 't']
            self.assertEqual(len(second), 1)
            # The new plot is sent and placed; the first, which did not move, is left alone.
            self.assertIn(second[0], [k['i'] for k in later if k.get('a') == 'p'])
            self.assertNotIn(first, [k.get('i') for k in later], later)
            t.quit()
            self.assertEqual(t.finish(), 0)
        finally:
            t.kill()

    def test_kitty_unicode_in_the_output_pane(self):
        t = FakeTerminal(['tui', '--graphics', 'kitty-unicode'], clean_env(self.tmp), 'kitty')
        try:
            t.expect(rb'F1 help')
            t.send(PLOT.replace('\n', '; ').encode() + b'\r')
            t.expect(PLACEHOLDER.encode())
            self.settle(t)
            sent = transmissions(kitty_commands(t.out))
            self.assertEqual(len(sent), 1)
            keys = sent[0][0][0]
            self.assertEqual((keys['a'], keys['U'], keys['c'], keys['r']), ('T', '1', '34', '12'))
            image = int(keys['i'])
            text = t.out.decode()
            first = '\x1b[38;5;%dm%s%s%s' % (image & 255, PLACEHOLDER, DIACRITICS[0],
                                             DIACRITICS[0])
            self.assertEqual(text.count(first), 1, 'row 0 drawn once')
            # The placeholder rows below each other (CUB + CUD), 34 cells each, from row 6.
            self.assertRegex(text, re.escape(first) + '.' + PLACEHOLDER + '{33}'
                             r'\x1b\[39m\x1b\[34D\x1b\[B')
            self.assertRegex(text, r'\x1b\[6;1H(\x1b_G[^\x1b]*\x1b\\)*' + re.escape(first))
            at = len(t.out)
            t.send(b'x')
            self.settle(t)
            self.assertNotIn(PLACEHOLDER.encode(), t.out[at:])
            t.send(b'\x7f')
            at = len(t.out)
            t.send(LINES)
            t.expect(rb'end of lines')
            self.settle(t)
            t.send(b'\x1b[5~')
            t.expect(rb'more rows below')
            self.settle(t)
            later = t.out[at:].decode()
            # Scrolled part way back: the lower rows only, first the row the pane's top
            # cuts at; nothing sent again.
            self.assertEqual(transmissions(kitty_commands(t.out[at:])), [])
            m = re.search('\x1b\\[1;1H\x1b\\[38;5;%dm%s(.)' % (image & 255, PLACEHOLDER), later)
            self.assertIsNotNone(m, later[-800:])
            self.assertIn(m.group(1), DIACRITICS[1:])
            t.quit()
            self.assertEqual(t.finish(), 0)
            self.assertIn({'a': 'd', 'd': 'I', 'i': str(image), 'q': '2'},
                          [k for k, _ in kitty_commands(t.out)])
        finally:
            t.kill()

    def test_iterm_in_the_output_pane(self):
        t = FakeTerminal(['tui'], clean_env(self.tmp), 'iterm')
        osc = (rb'\x1b7\x1b\[(\d+);1H\x1b\]1337;File=inline=1;size=(\d+);width=(\d+);'
               rb'height=(\d+);preserveAspectRatio=0:([A-Za-z0-9+/=]+)\x07')
        try:
            t.expect(rb'F1 help')
            t.send(PLOT.replace('\n', '; ').encode() + b'\r')
            m = t.expect(osc)
            # The file itself over 32 x 12 cells (320x240 pixels in cells of 10x20), from row 6.
            self.assertEqual([int(g) for g in m.groups()[:1] + m.groups()[2:4]], [6, 32, 12])
            self.assertEqual(base64.b64decode(m.group(5)), self.channel_png())
            self.settle(t)
            at = len(t.out)
            t.send(b'x')
            self.settle(t)
            self.assertNotIn(b'\x1b]1337', t.out[at:])
            t.send(b'\x7f')
            t.send(LINES)
            t.expect(rb'end of lines')
            self.settle(t)
            t.send(b'\x1b[5~')
            t.expect(rb'more rows below')
            m = t.expect(osc)
            # Partly scrolled out: a PNG of the visible rows, 320 pixels wide, 20 a row.
            rows = int(m.group(4))
            png = base64.b64decode(m.group(5))
            self.assertEqual(png[:8], b'\x89PNG\r\n\x1a\n')
            self.assertEqual(struct.unpack('>II', png[16:24]), (320, 20 * rows))
            self.assertTrue(0 < rows < 12, rows)
            self.assertEqual(int(m.group(1)), 1)
            t.quit()
            self.assertEqual(t.finish(), 0)
        finally:
            t.kill()

    def theme_of(self, persona, **env):
        """The theme `auto` picks and the kernel's IPython colour scheme."""
        t = FakeTerminal(['tui'], clean_env(self.tmp, **env), persona)
        try:
            t.expect(rb'F1 help')
            self.settle(t)
            # One write: the UI may draw between the stream's pieces, and curses skips the
            # blank it already has, so "scheme" and "LightBG" may come in two writes.
            t.send(b'print("scheme " + get_ipython().colors)\r')
            scheme = t.expect(rb'scheme (\w+)').group(1).decode()
            # The status line names the theme once the kernel is up (the first frame comes
            # before it, while the kernel starts).
            status = re.findall(rb'\b(light|dark)\b', t.out)
            t.quit()
            self.assertEqual(t.finish(), 0)
        finally:
            t.kill()
        return status[-1].decode() if status else None, scheme

    def test_theme_follows_the_background(self):
        self.assertEqual(self.theme_of('light'), ('light', 'LightBG'))
        self.assertEqual(self.theme_of('dark'), ('dark', 'Linux'))
        self.assertEqual(self.theme_of('silent', COLORFGBG='0;15'), ('light', 'LightBG'))
        self.assertEqual(self.theme_of('silent'), ('dark', 'Linux'))

if __name__ == '__main__':
    unittest.main()
