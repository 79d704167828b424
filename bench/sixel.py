#!/usr/bin/python3
"""Sixel encoding: cellbox's encoder and img2sixel (libsixel-bin) on the same plots, one run.

Usage: bench/sixel.py [--bin build/bench/bench_sixel] [-n N]

Makes two matplotlib PNGs (640x480 and 1280x960: three lines, markers, grid, legend), then:
  - in process: cellbox's decode and encode times (graphics_load, graphics_render), medians;
  - as whole processes, interleaved, same image, output to a pipe: `bench_sixel --emit` and
    `img2sixel` at the image's own size, and both scaled to 640 pixels wide (-w 640);
  - the bytes each emits.
The frame time when scrolling past three plots needs the full-screen UI: not measured here.
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
TARGET_MS = 30.0


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


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--bin', default=os.path.join(HERE, '..', 'build', 'bench', 'bench_sixel'))
    ap.add_argument('-n', type=int, default=30)
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
        print('not measured: frame time when scrolling past three plots (needs the TUI)')
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == '__main__':
    main()
