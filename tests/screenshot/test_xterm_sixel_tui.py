#!/usr/bin/python3
"""A plot in the full-screen UI in a real sixel terminal, checked on the screen's pixels.

Starts Xvfb (a display number it picks itself) and Debian's xterm as a VT340 on it, running
this script as a relay: it starts `cellbox tui` on a pty of its own, copies bytes both ways
between it and xterm, logs what cellbox writes and types what the test puts in a FIFO (no X
input tools needed). Screenshots of the root window (xwd + ImageMagick's convert) check:
  1. after a plot cell, the plot's red line is on screen, large, below the cell's text rows
     and above the editor;
  2. after a long output has scrolled the plot out of the pane, no red pixels are left;
  3. one page back, the plot's lower part is on screen again (cropped);
  4. under the help pager, no red pixels.
Needs: xvfb xterm x11-apps imagemagick python3-pil (scripts/bootstrap --tests).
Exits 77 (a skip for meson) when one of them is missing.

    CELLBOX_BIN=build/tui/cellbox tests/screenshot/test_xterm_sixel_tui.py [SHOT-PREFIX]
"""
import fcntl
import os
import pty
import select
import shutil
import subprocess
import sys
import tempfile
import termios
import time
import tty

import xscreen

BIN = os.environ.get('CELLBOX_BIN', 'cellbox')
PYTHON = os.environ.get('CELLBOX_TEST_PYTHON', '/usr/bin/python3')
CODE = ('import matplotlib.pyplot as plt; print("before the plot"); '
        'plt.plot([0, 1, 2], [0, 2, 1], color="#ff0000", linewidth=6); plt.show(); '
        'print("after the plot")')
COLS, ROWS, CELL_H = 100, 40, 13        # xterm -fn fixed: 6x13 cells


def relay(fifo, log, argv):
    """Inside xterm: run argv on a pty, relay both ways, log its output, type the FIFO."""
    pid, master = pty.fork()
    if pid == 0:
        os.execvp(argv[0], argv)
    fcntl.ioctl(master, termios.TIOCSWINSZ, fcntl.ioctl(0, termios.TIOCGWINSZ, b'\0' * 8))
    tty.setraw(0)
    ffd = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    keep = os.open(fifo, os.O_WRONLY)   # so the FIFO never reads as closed
    with open(log, 'wb', buffering=0) as lf:
        while True:
            r, _, _ = select.select([0, master, ffd], [], [])
            try:
                if master in r:
                    data = os.read(master, 65536)
                    if not data:
                        break
                    os.write(1, data)
                    lf.write(data)
                if 0 in r:
                    os.write(master, os.read(0, 4096))
                if ffd in r:
                    os.write(master, os.read(ffd, 4096))
            except OSError:
                break
    os.close(keep)
    os.waitpid(pid, 0)


class Session:
    def __init__(self, tmp, env):
        self.tmp, self.env = tmp, env
        self.fifo = os.path.join(tmp, 'keys')
        self.log = os.path.join(tmp, 'out.log')
        os.mkfifo(self.fifo)
        cmd = [sys.executable, os.path.abspath(__file__), '--relay', self.fifo, self.log,
               BIN, 'tui']
        self.xterm = subprocess.Popen(['xterm', '-ti', 'vt340', '-geometry',
                                       '%dx%d+0+0' % (COLS, ROWS), '-fn', 'fixed', '-e'] + cmd,
                                      env=env, stderr=subprocess.DEVNULL)

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
            if self.xterm.poll() is not None:
                break
            time.sleep(0.1)
        raise AssertionError('%r never written; the last bytes: %r' % (text, self.output()[-500:]))

    def wait_until_idle(self, after, timeout=120):
        """Wait for the status line to say busy, then idle again: the cell after `after` ran."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            out = self.output()
            busy = out.find(b' busy ', after)
            if busy >= 0 and out.find(b' idle ', busy) >= 0:
                return len(out)
            if self.xterm.poll() is not None:
                break
            time.sleep(0.1)
        raise AssertionError('the cell never ended; the last bytes: %r' % self.output()[-500:])

    def type(self, data):
        fd = os.open(self.fifo, os.O_WRONLY)
        os.write(fd, data)
        os.close(fd)

    def settle(self):
        """Wait until cellbox has written nothing for a while, then let xterm paint."""
        n, quiet = -1, 0
        while quiet < 5:
            time.sleep(0.1)
            m = len(self.output())
            quiet = quiet + 1 if m == n else 0
            n = m
        time.sleep(0.5)

    def shot(self, path):
        self.settle()
        return xscreen.red_pixels(self.env, path)

    def close(self):
        if self.xterm.poll() is None:
            self.xterm.kill()
            self.xterm.wait()


def main():
    if len(sys.argv) > 1 and sys.argv[1] == '--relay':
        relay(sys.argv[2], sys.argv[3], sys.argv[4:])
        return 0
    why = xscreen.missing()
    if why:
        print('skip: ' + why)
        return 77
    tmp = tempfile.mkdtemp(prefix='cellbox-shot-tui-')
    prefix = sys.argv[1] if len(sys.argv) > 1 else os.path.join(tmp, 'tui')
    env = xscreen.clean_env(tmp, PYTHON, XDG_STATE_HOME=os.path.join(tmp, 'state'),
                            TERM='xterm-256color', LANG='C.UTF-8', LC_ALL='C.UTF-8')
    try:
        xvfb = xscreen.Xvfb(env)
    except RuntimeError as e:
        print('not ok: %s' % e)
        return 1
    s = None
    check = xscreen.Checks()

    try:
        s = Session(tmp, env)
        s.wait_for(b'F1 help')
        at = len(s.output())
        s.type(CODE.encode() + b'\r')
        at = s.wait_for(b'after the plot', at)
        s.wait_for(b'\x1bP', at - 20000 if at > 20000 else 0)   # a sixel DCS
        red = s.shot(prefix + '-1-plot.png')
        check(len(red) > 1000, 'the plot: the red line covers %d pixels (> 1000)' % len(red))
        if red:
            xs = [p[0] for p in red]
            ys = [p[1] for p in red]
            check(max(xs) - min(xs) > 150 and max(ys) - min(ys) > 100,
                  'the line spans %dx%d pixels' % (max(xs) - min(xs), max(ys) - min(ys)))
            check(min(ys) > 3 * CELL_H, 'below the cell\'s first three text rows (top at y=%d)'
                  % min(ys))
            check(max(ys) < (ROWS - 3) * CELL_H, 'above the editor (bottom at y=%d)' % max(ys))
        at = len(s.output())
        s.type(b'for i in range(60): print("line", i)\r')
        # The UI rewrites only the cells of a row that changed: 'line 59' is written whole
        # only when its row held something else. Wait for the cell to end instead.
        s.wait_for(b'line', at)
        s.wait_until_idle(at)
        red = s.shot(prefix + '-2-scrolled-away.png')
        check(len(red) < 50, 'scrolled out of the pane: %d red pixels left (< 50)' % len(red))
        s.type(b'\x1b[5~')                  # PgUp: one page back
        red = s.shot(prefix + '-3-page-up.png')
        check(len(red) > 300, 'one page back: the plot\'s lower part, %d red pixels' % len(red))
        if red:
            check(min(p[1] for p in red) < 3 * CELL_H,
                  'cropped at the pane\'s top (top at y=%d)' % min(p[1] for p in red))
        s.type(b'\x1bOP')                   # F1: the help pager over everything
        red = s.shot(prefix + '-4-help.png')
        check(len(red) < 50, 'under the help pager: %d red pixels (< 50)' % len(red))
        s.type(b'q\x11')                    # close it, Ctrl-Q
    except AssertionError as e:
        check(False, str(e))
    finally:
        if s:
            s.close()
        xvfb.close()
    print('screenshots: %s-*.png' % prefix)
    if check.ok and len(sys.argv) < 2:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0 if check.ok else 1


if __name__ == '__main__':
    sys.exit(main())
