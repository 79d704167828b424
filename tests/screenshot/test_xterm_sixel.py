#!/usr/bin/python3
"""A plot drawn by `cellbox run` in a real sixel terminal, checked on the screen's pixels.

Starts Xvfb (a display number it picks itself), runs Debian's xterm as a VT340 on it with
`cellbox run -c CODE` inside, takes a screenshot of the root window (xwd + ImageMagick's
convert) and checks that the plot's red line is on screen, large, below the text printed
before it. Needs: xvfb xterm x11-apps imagemagick python3-pil (scripts/bootstrap --tests).
Exits 77 (a skip for meson) when one of them is missing.

    CELLBOX_BIN=build/tui/cellbox tests/screenshot/test_xterm_sixel.py [SHOT.png]
"""
import os
import shutil
import subprocess
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


def main():
    why = xscreen.missing()
    if why:
        print('skip: ' + why)
        return 77
    tmp = tempfile.mkdtemp(prefix='cellbox-shot-')
    shot = sys.argv[1] if len(sys.argv) > 1 else os.path.join(tmp, 'shot.png')
    done = os.path.join(tmp, 'done')
    env = xscreen.clean_env(tmp, PYTHON)
    try:
        xvfb = xscreen.Xvfb(env)
    except RuntimeError as e:
        print('not ok: %s' % e)
        return 1
    xterm = None
    try:
        script = '"$0" run -c "$1" > /dev/tty 2>&1; echo $? > "$2"; sleep 60'
        xterm = subprocess.Popen(['xterm', '-ti', 'vt340', '-geometry', '100x40+0+0',
                                  '-fn', 'fixed', '-e', 'sh', '-c', script, BIN, CODE, done],
                                 env=env, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 120
        while not os.path.exists(done) or not open(done).read().strip():
            if time.monotonic() > deadline or xterm.poll() is not None:
                print('not ok: cellbox did not finish in xterm')
                return 1
            time.sleep(0.1)
        time.sleep(0.5)                   # let xterm paint
        red = xscreen.red_pixels(env, shot)
    finally:
        if xterm and xterm.poll() is None:
            xterm.kill()
            xterm.wait()
        xvfb.close()
    status = open(done).read().strip()
    check = xscreen.Checks()
    check(status == '0', 'cellbox run exited 0 (got %s)' % status)
    check(len(red) > 2000, 'the red line covers %d pixels (> 2000)' % len(red))
    if red:
        xs = [p[0] for p in red]
        ys = [p[1] for p in red]
        check(max(xs) - min(xs) > 250 and max(ys) - min(ys) > 150,
              'the line spans %dx%d pixels' % (max(xs) - min(xs), max(ys) - min(ys)))
        check(min(ys) > 13, 'it is below the first text row (top at y=%d)' % min(ys))
    print('screenshot: %s' % shot)
    if check.ok and len(sys.argv) < 2:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0 if check.ok else 1


if __name__ == '__main__':
    sys.exit(main())
