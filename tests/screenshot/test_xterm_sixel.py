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

BIN = os.environ.get('CELLBOX_BIN', 'cellbox')
PYTHON = os.environ.get('CELLBOX_TEST_PYTHON', '/usr/bin/python3')
CODE = ('import matplotlib.pyplot as plt\n'
        'print("before the plot")\n'
        'plt.plot([0, 1, 2], [0, 2, 1], color="#ff0000", linewidth=6); plt.show()\n'
        'print("after the plot")')


def main():
    for tool in ('Xvfb', 'xterm', 'xwd', 'convert'):
        if not shutil.which(tool):
            print('skip: %s is not installed (scripts/bootstrap --tests)' % tool)
            return 77
    try:
        from PIL import Image
    except ImportError:
        print('skip: python3-pil is not installed')
        return 77
    tmp = tempfile.mkdtemp(prefix='cellbox-shot-')
    shot = sys.argv[1] if len(sys.argv) > 1 else os.path.join(tmp, 'shot.png')
    done = os.path.join(tmp, 'done')
    env = {k: v for k, v in os.environ.items()
           if not k.startswith('CELLBOX_') and k not in ('TMUX', 'COLORTERM', 'NO_COLOR')}
    env.update(CELLBOX_PYTHON=PYTHON, CELLBOX_RUNTIME_DIR=os.path.join(tmp, 'run'),
               XDG_CONFIG_HOME=os.path.join(tmp, 'config'))
    rfd, wfd = os.pipe()
    xvfb = subprocess.Popen(['Xvfb', '-displayfd', str(wfd), '-screen', '0', '1024x768x24',
                             '-nolisten', 'tcp'], pass_fds=[wfd], stderr=subprocess.DEVNULL)
    os.close(wfd)
    xterm = None
    try:
        display = b''
        while not display.endswith(b'\n'):
            chunk = os.read(rfd, 16)
            if not chunk:
                print('not ok: Xvfb did not start')
                return 1
            display += chunk
        env['DISPLAY'] = ':' + display.decode().strip()
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
        xwd = subprocess.run(['xwd', '-root', '-silent'], env=env, capture_output=True,
                             check=True)
        subprocess.run(['convert', 'xwd:-', shot], input=xwd.stdout, check=True)
    finally:
        if xterm and xterm.poll() is None:
            xterm.kill()
            xterm.wait()
        xvfb.kill()
        xvfb.wait()
        os.close(rfd)
    status = open(done).read().strip()
    img = Image.open(shot).convert('RGB')
    w, h = img.size
    px = img.load()
    red = [(x, y) for y in range(h) for x in range(w)
           if px[x, y][0] > 200 and px[x, y][1] < 80 and px[x, y][2] < 80]
    ok = True

    def check(cond, what):
        nonlocal ok
        print('%s - %s' % ('ok' if cond else 'not ok', what))
        ok = ok and cond

    check(status == '0', 'cellbox run exited 0 (got %s)' % status)
    check(len(red) > 2000, 'the red line covers %d pixels (> 2000)' % len(red))
    if red:
        xs = [p[0] for p in red]
        ys = [p[1] for p in red]
        check(max(xs) - min(xs) > 250 and max(ys) - min(ys) > 150,
              'the line spans %dx%d pixels' % (max(xs) - min(xs), max(ys) - min(ys)))
        check(min(ys) > 13, 'it is below the first text row (top at y=%d)' % min(ys))
    print('screenshot: %s' % shot)
    if ok and len(sys.argv) < 2:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0 if ok else 1


if __name__ == '__main__':
    sys.exit(main())
