#!/usr/bin/python3
"""Sixel encoding: cellbox's encoder and img2sixel (libsixel-bin) on the same plots, one run.

Usage: bench/sixel.py [--bin build/bench/bench_sixel] [-n N]

Makes two matplotlib PNGs (640x480 and 1280x960: three lines, markers, grid, legend), then:
  - in process: cellbox's decode and encode times (graphics_load, graphics_render), medians;
  - as whole processes, interleaved, same image, output to a pipe: `bench_sixel --emit` and
    `img2sixel` at the image's own size, and both scaled to 640 pixels wide (-w 640);
  - the bytes each emits.
  - the full-screen UI's frame time when scrolling past three plots: `cellbox tui` on a pty
    whose other side answers the terminal queries as a sixel terminal (10x20-pixel cells,
    100x40) and reads everything; `:redraw 200 scroll` moves the output one row a frame over
    three matplotlib plots and times each frame with its own clock (layout, curses' update,
    the plots' bytes written). One row per protocol (--graphics sixel, kitty, kitty-unicode,
    iterm, blocks with the default quadrants, blocks --blocks half), and no graphics as the
    baseline; the anchor is what img2sixel takes to encode the three plots at the drawn
    size, the cost of a frame that re-encoded instead of reusing the caches. "bytes a frame"
    counts the plots' bytes only (not curses' text).
"""
import argparse
import fcntl
import json
import os
import re
import select
import struct
import shutil
import statistics
import subprocess
import sys
import tempfile
import termios
import time

HERE = os.path.dirname(os.path.abspath(__file__))
TARGET_MS = 30.0
FRAME_TARGET_MS = 8.0           # scrolling past three plots, sixel and kitty (DESIGN.md)


def make_plots(d):
    code = r'''
import sys, numpy as np, matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
x = np.linspace(0, 10, 400)
for name, dpi in (("p640.png", 100), ("p1280.png", 200)):
    fig, ax = plt.subplots(figsize=(6.4, 4.8))
    ax.plot(x, np.sin(x), label="sin")
    ax.plot(x, np.cos(x), label="cos")
    ax.plot(x, np.sin(x) * np.exp(-x / 5), "o", markevery=20, label="damped")
    ax.grid(True); ax.legend(); ax.set_title("cellbox sixel bench")
    fig.savefig(sys.argv[1] + "/" + name, dpi=dpi)
'''
    subprocess.run(['/usr/bin/python3', '-c', code, d], check=True)
    return [os.path.join(d, 'p640.png'), os.path.join(d, 'p1280.png')]


def png_size(path):
    with open(path, 'rb') as f:
        head = f.read(24)
    return int.from_bytes(head[16:20], 'big'), int.from_bytes(head[20:24], 'big')


def time_process(argv, n):
    times, size = [], 0
    for _ in range(n):
        t = time.monotonic()
        p = subprocess.run(argv, stdout=subprocess.PIPE, check=True)
        times.append((time.monotonic() - t) * 1e3)
        size = len(p.stdout)
    return statistics.median(times), size


SIXEL_ANSWER = (b'\x1b[?1;0;256S\x1b[?2;0;1000;1000S\x1b[4;800;1000t\x1b[6;20;10t'
                b'\x1b[?63;1;2;4;6;9;15;22c')
PLOT_CELL = (b'import numpy as np, matplotlib.pyplot as plt; x = np.linspace(0, 10, 400); '
             b'plt.plot(x, np.sin(x), label="sin"); plt.plot(x, np.cos(x), label="cos"); '
             b'plt.grid(True); plt.legend(); plt.title("cellbox scroll bench"); plt.show()\r')


def tui_scroll(cellbox, graphics, tmp, frames=200, extra=()):
    """Frame time of `cellbox tui --graphics MODE` scrolling past three plots, on a pty."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith('CELLBOX_') and k not in ('TMUX', 'COLORTERM', 'NO_COLOR')}
    env.update(TERM='xterm-256color', LANG='C.UTF-8', LC_ALL='C.UTF-8',
               CELLBOX_PYTHON='/usr/bin/python3', CELLBOX_RUNTIME_DIR=tmp + '/run',
               XDG_CONFIG_HOME=tmp + '/config', XDG_STATE_HOME=tmp + '/state')
    master, slave = os.openpty()
    fcntl.ioctl(master, termios.TIOCSWINSZ, struct.pack('HHHH', 40, 100, 1000, 800))
    proc = subprocess.Popen([cellbox, 'tui', '--graphics', graphics, *extra], stdin=slave,
                            stdout=slave, stderr=slave, env=env, start_new_session=True,
                            preexec_fn=lambda: fcntl.ioctl(0, termios.TIOCSCTTY, 0))
    os.close(slave)
    out = bytearray()
    answered = False

    def until(pat, start, timeout=180):
        # Reads as fast as a terminal would: the search looks only at what is new (with an
        # overlap for a match cut in two), so a frame's time is not the reader's.
        nonlocal answered
        rx = re.compile(pat)
        deadline = time.monotonic() + timeout
        scanned = start
        while time.monotonic() < deadline:
            m = rx.search(out, max(start, scanned - 512))
            if m:
                return m
            scanned = len(out)
            r, _, _ = select.select([master], [], [], 0.1)
            if r:
                try:
                    out.extend(os.read(master, 1 << 16))
                except OSError:
                    break
            if not answered and b'\x1b[c' in out:
                os.write(master, SIXEL_ANSWER)
                answered = True
        raise SystemExit('bench: %r not seen from cellbox tui; the last bytes: %r'
                         % (pat, bytes(out[-600:])))

    try:
        until(rb'F1 help', 0)
        for k in range(3):
            at = len(out)
            os.write(master, PLOT_CELL)
            until(rb'\[plot %d: ' % (k + 1), at)
        time.sleep(1)
        at = len(out)
        os.write(master, b'\x0fredraw %d scroll\r' % frames)
        m = until(rb'redraw: (\d+) scrolling frames, (\d+) rows, median ([0-9.]+) ms, '
                  rb'p90 ([0-9.]+) ms, (\d+) B/frame', at, 300)
        os.write(master, b'\x11')
        return {'rows': int(m.group(2)), 'median_ms': float(m.group(3)),
                'p90_ms': float(m.group(4)), 'bytes': int(m.group(5))}
    finally:
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        os.close(master)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--bin', default=os.path.join(HERE, '..', 'build', 'bench', 'bench_sixel'))
    ap.add_argument('-n', type=int, default=30)
    ap.add_argument('--modes', default='sixel,kitty,kitty-unicode,iterm,blocks,blocks-half,none',
                    help='the full-screen rows to run (blocks-half: --blocks half)')
    args = ap.parse_args()
    img2sixel = shutil.which('img2sixel')
    if not img2sixel:
        sys.exit('bench/sixel.py: img2sixel is missing (scripts/bootstrap --bench)')
    tmp = tempfile.mkdtemp(prefix='cellbox-bench-sixel-')
    try:
        plots = make_plots(tmp)
        print('in process (cellbox), %d runs each:' % (args.n * 2))
        print('  %-10s %-10s %10s %10s %10s %9s' % ('image', 'drawn at', 'decode ms', 'encode ms',
                                                    'p90 ms', 'bytes'))
        ok = True
        for path in plots:
            w, h = png_size(path)
            for width in ([0] if w <= 640 else [0, 640]):
                r = json.loads(subprocess.run([args.bin, '-n', str(args.n * 2), '-w', str(width),
                                               path], capture_output=True, text=True,
                                              check=True).stdout)
                print('  %-10s %-10s %10.2f %10.2f %10.2f %9d' % (
                    '%dx%d' % (w, h), '%dx%d' % (r['px_w'], r['px_h']), r['decode_median_ms'],
                    r['encode_median_ms'], r['encode_p90_ms'], r['bytes']))
                if w == 640 and r['encode_median_ms'] >= TARGET_MS:
                    ok = False
        print('\nwhole process, decode + encode + write, median of %d (interleaved):' % args.n)
        print('  %-10s %-10s %14s %14s %7s %11s %11s' % ('image', 'drawn at', 'cellbox ms',
                                                      'img2sixel ms', 'i2s/cb', 'cellbox B',
                                                      'img2sixel B'))
        for path in plots:
            w, h = png_size(path)
            for width in ([0] if w <= 640 else [0, 640]):
                cb = [args.bin, '--emit', '-w', str(width), path]
                im = [img2sixel] + (['-w', str(width)] if width else []) + [path]
                cts, its = [], []
                for _ in range(args.n):
                    cts.append(time_process(cb, 1))
                    its.append(time_process(im, 1))
                c_ms = statistics.median(t for t, _ in cts)
                i_ms = statistics.median(t for t, _ in its)
                print('  %-10s %-10s %14.2f %14.2f %6.2fx %11d %11d' % (
                    '%dx%d' % (w, h), '%dx%d' % (width or w, (width or w) * h // w), c_ms, i_ms,
                    i_ms / c_ms, cts[0][1], its[0][1]))
        print('\ntarget: 640x480 encoded in < %.0f ms in process: %s' % (
            TARGET_MS, 'met' if ok else 'NOT met'))
        cellbox = os.path.join(os.path.dirname(args.bin), '..', 'tui', 'cellbox')
        print('\nfull-screen UI, 100x40 cells of 10x20 pixels, three 640x480 plots drawn at '
              '533x400,\n`:redraw 200 scroll` (one row a frame), the UI\'s own clock:')
        print('  %-22s %10s %10s %16s' % ('graphics', 'median ms', 'p90 ms', 'bytes a frame'))
        medians = {}
        rows = {'sixel': ('sixel', 'sixel', ()), 'kitty': ('kitty', 'kitty', ()),
                'kitty-unicode': ('kitty-unicode', 'kitty-unicode', ()),
                'iterm': ('iterm', 'iterm', ()), 'blocks': ('blocks (quadrants)', 'blocks', ()),
                'blocks-half': ('blocks --blocks half', 'blocks', ('--blocks', 'half')),
                'none': ('none', 'none', ())}
        for key in args.modes.split(','):
            name, mode, extra = rows[key]
            r = tui_scroll(cellbox, mode, tmp, extra=extra)
            medians[name] = r['median_ms']
            print('  %-22s %10.3f %10.3f %16d' % (name, r['median_ms'], r['p90_ms'], r['bytes']))
        im = [img2sixel, '-w', '533', '-h', '400', plots[0]]
        i_ms = statistics.median(time_process(im, 1)[0] for _ in range(args.n))
        print('  %-22s %10.3f %10s %16s' % ('img2sixel x3 (anchor)', 3 * i_ms, '', ''))
        print('  (the anchor: three img2sixel processes at 533x400, what a frame would cost '
              'that re-encoded)')
        for name in [m for m in ('sixel', 'kitty') if m in medians]:
            print('frame target: %s <= %.0f ms median: %s (%.3f ms; img2sixel/cellbox %.0fx)' % (
                name, FRAME_TARGET_MS, 'met' if medians[name] <= FRAME_TARGET_MS else 'NOT met',
                medians[name], 3 * i_ms / medians[name] if medians[name] else 0))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == '__main__':
    main()
