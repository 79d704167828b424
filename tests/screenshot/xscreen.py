"""What the screenshot tests share: the tools they need, a private X display (Xvfb), the
terminals (xterm as a VT340 with sixel, kitty with its graphics protocol) and their cell
sizes, a relay that runs a program on a pty inside the terminal, a screenshot of the root
window and the red pixels on it, and the TAP-like check printer.

    python3 xscreen.py --relay FIFO LOG ARGV...   (what the terminal runs for the UI tests)
"""
import fcntl
import os
import pty
import select
import shutil
import subprocess
import sys
import termios
import tty

# The terminals: how to start one COLS x ROWS at the top-left with ARGV in it, and its cell.
TERMINALS = {
    # Debian's xterm as a VT340 (sixel), the "fixed" font: 6x13 cells.
    'xterm': {'tool': 'xterm', 'cell': (6, 13), 'env': {},
              'argv': lambda cols, rows, argv: ['xterm', '-ti', 'vt340', '-geometry',
                                                '%dx%d+0+0' % (cols, rows), '-fn', 'fixed',
                                                '-e'] + argv},
    # Debian's kitty 0.26 on Mesa's software OpenGL, its own font at 10 points: 8x17 cells.
    'kitty': {'tool': 'kitty', 'cell': (8, 17), 'env': {'LIBGL_ALWAYS_SOFTWARE': '1'},
              'argv': lambda cols, rows, argv: ['kitty', '--config', 'NONE',
                                                '-o', 'font_size=10',
                                                '-o', 'initial_window_width=%dc' % cols,
                                                '-o', 'initial_window_height=%dc' % rows,
                                                '-o', 'remember_window_size=no'] + argv},
}


def missing(terminal='xterm'):
    """The reason the screenshot tests cannot run here, or None."""
    for tool in ('Xvfb', TERMINALS[terminal]['tool'], 'xwd', 'convert'):
        if not shutil.which(tool):
            return '%s is not installed (scripts/bootstrap --tests)' % tool
    try:
        from PIL import Image  # noqa: F401
    except ImportError:
        return 'python3-pil is not installed'
    return None


def start_terminal(terminal, cols, rows, argv, env):
    """Start `terminal` COLS x ROWS at the screen's top-left corner, running argv."""
    t = TERMINALS[terminal]
    return subprocess.Popen(t['argv'](cols, rows, argv), env=dict(env, **t['env']),
                            stderr=subprocess.DEVNULL)


def clean_env(tmp, python, **extra):
    """The environment for cellbox under test: none of ours leaks in, state under tmp."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith('CELLBOX_') and k not in ('TMUX', 'COLORTERM', 'NO_COLOR',
                                                           'TERM_PROGRAM', 'LC_TERMINAL',
                                                           'COLORFGBG', 'KITTY_WINDOW_ID')}
    env.update(CELLBOX_PYTHON=python, CELLBOX_RUNTIME_DIR=os.path.join(tmp, 'run'),
               XDG_CONFIG_HOME=os.path.join(tmp, 'config'), **extra)
    return env


class Xvfb:
    """A 1024x768 X display of our own (Xvfb picks the number); `env` gets its DISPLAY."""

    def __init__(self, env):
        rfd, wfd = os.pipe()
        self.proc = subprocess.Popen(['Xvfb', '-displayfd', str(wfd), '-screen', '0',
                                      '1024x768x24', '-nolisten', 'tcp'], pass_fds=[wfd],
                                     stderr=subprocess.DEVNULL)
        os.close(wfd)
        display = b''
        try:
            while not display.endswith(b'\n'):
                chunk = os.read(rfd, 16)
                if not chunk:
                    self.close()
                    raise RuntimeError('Xvfb did not start')
                display += chunk
        finally:
            os.close(rfd)
        env['DISPLAY'] = ':' + display.decode().strip()

    def close(self):
        self.proc.kill()
        self.proc.wait()


def red_pixels(env, path):
    """Save a screenshot of the display to path; return the (x, y) of its pure red pixels
    (the plots draw #ff0000; the light theme's reds, as color160 = #d70000, are not)."""
    xwd = subprocess.run(['xwd', '-root', '-silent'], env=env, capture_output=True, check=True)
    subprocess.run(['convert', 'xwd:-', path], input=xwd.stdout, check=True)
    from PIL import Image
    img = Image.open(path).convert('RGB')
    w, h = img.size
    px = img.load()
    return [(x, y) for y in range(h) for x in range(w)
            if px[x, y][0] >= 240 and px[x, y][1] < 60 and px[x, y][2] < 60]


def open_display(env):
    """Start Xvfb for `env` (a 'not ok' line when it does not start); the Xvfb, or None."""
    try:
        return Xvfb(env)
    except RuntimeError as e:
        print('not ok: %s' % e)
        return None


def bounds(red):
    """The box (x0, y0, x1, y1) around the pixels `red`."""
    return (min(p[0] for p in red), min(p[1] for p in red),
            max(p[0] for p in red), max(p[1] for p in red))


def check_line(check, red, pixels, wide, high, what='the red line'):
    """Check the plot's red line: more than `pixels` pixels, over more than `wide` x `high`;
    its bounds, or None when it is not on screen."""
    check(len(red) > pixels, '%s covers %d pixels (> %d)' % (what, len(red), pixels))
    if not red:
        return None
    x0, y0, x1, y1 = box = bounds(red)
    check(x1 - x0 > wide and y1 - y0 > high, 'the line spans %dx%d pixels' % (x1 - x0, y1 - y0))
    return box


class Checks:
    """Prints 'ok - ...' or 'not ok - ...' per check and remembers whether all passed."""

    def __init__(self):
        self.ok = True

    def __call__(self, cond, what):
        print('%s - %s' % ('ok' if cond else 'not ok', what))
        self.ok = self.ok and bool(cond)


def relay(fifo, log, argv):
    """Inside the terminal: run argv on a pty, relay both ways, log its output, type the
    FIFO (so the tests need no X input tools)."""
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


if __name__ == '__main__' and len(sys.argv) > 4 and sys.argv[1] == '--relay':
    relay(sys.argv[2], sys.argv[3], sys.argv[4:])
