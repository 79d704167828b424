"""A plot in the full-screen UI in a real terminal, checked on the screen's pixels.

Starts Xvfb (a display number it picks itself) and the terminal (xscreen.TERMINALS) on it,
running xscreen's relay: it starts `cellbox tui` on a pty of its own, copies bytes both ways
between it and the terminal, logs what cellbox writes and types what the test puts in a FIFO
(no X input tools needed). Screenshots of the root window (xwd + ImageMagick's convert)
check:
  1. after a plot cell, the plot's red line is on screen, large, below the cell's text rows
     and above the editor;
  2. after a long output has scrolled the plot out of the pane, no red pixels are left;
  3. one page back, the plot's lower part is on screen again (cropped);
  4. under the help pager, no red pixels;
  5. the pager closed, the plot is back where it was.
Exits 77 (a skip for meson) when a tool is missing.
"""
import os
import shutil
import sys
import tempfile
import time

import xscreen

BIN = os.environ.get('CELLBOX_BIN', 'cellbox')
PYTHON = os.environ.get('CELLBOX_TEST_PYTHON', '/usr/bin/python3')
CODE = ('import matplotlib.pyplot as plt; print("before the plot"); '
        'plt.plot([0, 1, 2], [0, 2, 1], color="#ff0000", linewidth=6); plt.show(); '
        'print("after the plot")')
COLS, ROWS = 100, 40


class Session:
    def __init__(self, terminal, tmp, env):
        self.tmp, self.env = tmp, env
        self.fifo = os.path.join(tmp, 'keys')
        self.log = os.path.join(tmp, 'out.log')
        os.mkfifo(self.fifo)
        relay = [sys.executable, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                              'xscreen.py'),
                 '--relay', self.fifo, self.log, BIN, 'tui']
        self.term = xscreen.start_terminal(terminal, COLS, ROWS, relay, env)

    def output(self):
        try:
            with open(self.log, 'rb') as f:
                return f.read()
        except FileNotFoundError:
            return b''

    def wait_for(self, text, after=0, timeout=120):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            out = self.output()
            if text in out[after:]:
                return len(out)
            if self.term.poll() is not None:
                break
            time.sleep(0.1)
        raise AssertionError('%r never written; the last bytes: %r' % (text, self.output()[-500:]))

    def type(self, data):
        fd = os.open(self.fifo, os.O_WRONLY)
        os.write(fd, data)
        os.close(fd)

    def settle(self):
        """Wait until cellbox has written nothing for a while, then let the terminal paint."""
        n, quiet = -1, 0
        while quiet < 5:
            time.sleep(0.1)
            m = len(self.output())
            quiet = quiet + 1 if m == n else 0
            n = m
        time.sleep(0.8)

    def shot(self, path):
        self.settle()
        return xscreen.red_pixels(self.env, path)

    def close(self):
        if self.term.poll() is None:
            self.term.kill()
            self.term.wait()


def main(terminal, prefix=None, marker=b'\x1bP'):
    """Run the checks in `terminal`, whose graphics begin with `marker`; keep the
    screenshots as PREFIX-*.png when given."""
    why = xscreen.missing(terminal)
    if why:
        print('skip: ' + why)
        return 77
    tmp = tempfile.mkdtemp(prefix='cellbox-shot-tui-')
    keep = prefix is not None
    prefix = prefix or os.path.join(tmp, 'tui')
    env = xscreen.clean_env(tmp, PYTHON, XDG_STATE_HOME=os.path.join(tmp, 'state'),
                            TERM='xterm-256color', LANG='C.UTF-8', LC_ALL='C.UTF-8')
    cell_h = xscreen.TERMINALS[terminal]['cell'][1]
    xvfb = xscreen.open_display(env)
    if not xvfb:
        return 1
    s = None
    check = xscreen.Checks()

    try:
        s = Session(terminal, tmp, env)
        s.wait_for(b'F1 help')
        at = len(s.output())
        s.type(CODE.encode() + b'\r')
        at = s.wait_for(b'after the plot', at)
        s.wait_for(marker, at - 40000 if at > 40000 else 0)   # the plot's graphics
        red = s.shot(prefix + '-1-plot.png')
        first = xscreen.check_line(check, red, 1000, 150, 100, 'the plot: the red line')
        if first:
            check(first[1] > 3 * cell_h, 'below the cell\'s first three text rows (top at y=%d)'
                  % first[1])
            check(first[3] < (ROWS - 3) * cell_h, 'above the editor (bottom at y=%d)' % first[3])
        at = len(s.output())
        # The wait is for a line the screen never showed before: curses writes only the cells
        # that change, so "line 59" over "line 49" comes out as "59", and the code's echo must
        # not hold the marker either.
        s.type(b'for i in range(61): print("line", i) if i < 60 else '
               b'print("LINES", "DONE", sep="-")\r')
        s.wait_for(b'LINES-DONE', at)
        red = s.shot(prefix + '-2-scrolled-away.png')
        check(len(red) < 50, 'scrolled out of the pane: %d red pixels left (< 50)' % len(red))
        s.type(b'\x1b[5~')                  # PgUp: one page back
        red = s.shot(prefix + '-3-page-up.png')
        check(len(red) > 300, 'one page back: the plot\'s lower part, %d red pixels' % len(red))
        if red:
            check(min(p[1] for p in red) < 3 * cell_h,
                  'cropped at the pane\'s top (top at y=%d)' % min(p[1] for p in red))
        s.type(b'\x1b[6~\x1b[6~\x1b[6~')    # back to the bottom, then all the way up
        s.settle()
        s.type(b'\x1b[5~\x1b[5~\x1b[5~')
        s.settle()
        s.type(b'\x1bOP')                   # F1: the help pager over everything
        red = s.shot(prefix + '-4-help.png')
        check(len(red) < 50, 'under the help pager: %d red pixels (< 50)' % len(red))
        s.type(b'q')
        red = s.shot(prefix + '-5-back.png')
        if red and first:
            box = xscreen.bounds(red)
            check(box == first, 'the pager closed: the plot where it was (%r, first %r)'
                  % (box, first))
        else:
            check(False, 'the pager closed: the plot is back (%d red pixels)' % len(red))
        s.type(b'\x11')                     # Ctrl-Q
    except AssertionError as e:
        check(False, str(e))
    finally:
        if s:
            s.close()
        xvfb.close()
    print('screenshots: %s-*.png' % prefix)
    if check.ok and not keep:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0 if check.ok else 1
