"""A plot drawn by `cellbox run` in a real terminal, checked on the screen's pixels.

Starts Xvfb (a display number it picks itself), runs the terminal (xscreen.TERMINALS) on it
with `cellbox run -c CODE` inside, takes a screenshot of the root window (xwd + ImageMagick's
convert) and checks that the plot's red line is on screen, large, below the text printed
before it. Exits 77 (a skip for meson) when a tool is missing.
"""
import os
import shutil
import sys
import tempfile
import time

import xscreen

BIN = os.environ.get('CELLBOX_BIN', 'cellbox')
PYTHON = os.environ.get('CELLBOX_TEST_PYTHON', '/usr/bin/python3')
CODE = ('import matplotlib.pyplot as plt\n'
        'print("before the plot")\n'
        'plt.plot([0, 1, 2], [0, 2, 1], color="#ff0000", linewidth=6); plt.show()\n'
        'print("after the plot")')


def main(terminal, shot=None):
    """Run the check in `terminal`; keep the screenshot at `shot` when given."""
    why = xscreen.missing(terminal)
    if why:
        print('skip: ' + why)
        return 77
    tmp = tempfile.mkdtemp(prefix='cellbox-shot-')
    shot = shot or os.path.join(tmp, 'shot.png')
    done = os.path.join(tmp, 'done')
    env = xscreen.clean_env(tmp, PYTHON)
    _, cell_h = xscreen.TERMINALS[terminal]['cell']
    xvfb = xscreen.open_display(env)
    if not xvfb:
        return 1
    term = None
    try:
        script = '"$0" run -c "$1" > /dev/tty 2>&1; echo $? > "$2"; sleep 60'
        term = xscreen.start_terminal(terminal, 100, 40, ['sh', '-c', script, BIN, CODE, done],
                                      env)
        deadline = time.monotonic() + 120
        while not os.path.exists(done) or not open(done).read().strip():
            if time.monotonic() > deadline or term.poll() is not None:
                print('not ok: cellbox did not finish in %s' % terminal)
                return 1
            time.sleep(0.1)
        time.sleep(1.0)                   # let the terminal paint
        red = xscreen.red_pixels(env, shot)
    finally:
        if term and term.poll() is None:
            term.kill()
            term.wait()
        xvfb.close()
    status = open(done).read().strip()
    check = xscreen.Checks()
    check(status == '0', 'cellbox run exited 0 (got %s)' % status)
    box = xscreen.check_line(check, red, 2000, 250, 150)
    if box:
        check(box[1] > cell_h, 'it is below the first text row (top at y=%d)' % box[1])
    print('screenshot: %s' % shot)
    if check.ok and shot.startswith(tmp):
        shutil.rmtree(tmp, ignore_errors=True)
    return 0 if check.ok else 1


if __name__ == '__main__':
    sys.exit(main(sys.argv[1], *sys.argv[2:3]))
