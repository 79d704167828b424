"""The hostile cases about what a kernel puts on the host's disk through its plots: the
channel quota counted for the session across restarts and for each copy, one kernel file
named by many plot numbers, plot numbers given again, the history store's cap on plot bytes. Run through
test_hostile.py CASE."""
import glob
import json
import os
import re
import struct
import threading
import time

from hostile_base import Base, tree_bytes

MB = 1 << 20

# Plots as a hostile kernel makes them: its own PNG files (stored, uncompressed, so their
# size is what it says) and display events that name them by whatever numbers it likes.
PLOTS = r'''
import os, struct, zlib
from runner import plots as P
def png(side):
    raw = b''.join(b'\x00' + os.urandom(side * 3) for _ in range(side))
    def chunk(t, d):
        return struct.pack('>I', len(d)) + t + d + struct.pack('>I', zlib.crc32(t + d))
    return (b'\x89PNG\r\n\x1a\n' + chunk(b'IHDR', struct.pack('>IIBBBBB', side, side, 8, 2, 0, 0, 0))
            + chunk(b'IDAT', zlib.compress(raw, 0)) + chunk(b'IEND', b''))
def show(rel, index, side):
    R._emit({"type": "display", "data": {"text/plain": "plot %d" % index},
             "plot": {"index": index, "path": rel, "format": "png", "width": side,
                      "height": side}})
'''


class Quota(Base):
    """The channel quota and the history's plots, on the local backend (no root needed)."""
    backend = 'local'

    def peak_while(self, fn, *dirs):
        """Run fn() while sampling the disk the files below `dirs` take; (result, peak)."""
        peak = [0]
        stop = threading.Event()

        def sample():
            while not stop.is_set():
                peak[0] = max(peak[0], sum(tree_bytes(d) for d in dirs))
                time.sleep(0.02)
        t = threading.Thread(target=sample)
        t.start()
        try:
            r = fn()
        finally:
            stop.set()
            t.join()
        return r, max(peak[0], sum(tree_bytes(d) for d in dirs))

    def test_quota_across_restarts(self):
        """A kernel that writes plots and dies, again and again: the session stops at the
        quota (before: each restart began the count again, 120 MB against 64 MB)."""
        env = dict(self.env, CELLBOX_CHANNEL_QUOTA='64m')
        cells = []
        for life in range(1, 6):
            cells.append(self.attack(PLOTS + r'''
data = png(1024)                          # 3 MB
for n in range(1, 5):
    open(os.path.join(R._S.plot_dir, '%d.png' % n), 'wb').write(data)
    show('plots/%d.png' % n, LIFE * 100 + n, 1024)
print('life LIFE wrote 4 plots', flush=True)
'''.replace('LIFE', str(life))))
            cells.append('import os; os._exit(3)')
        cells.append('print("alive after")')
        p, peak = self.peak_while(lambda: self.repl(*cells, env=env, timeout=300),
                                  self.run_dir, self.state)
        self.assertLess(peak, (64 + 16) * MB, 'the kernels put %d MB on the host' % (peak // MB))
        self.assertIn('channel quota exceeded', p.stderr, p.stdout[-2000:])
        self.assertIn('across restarts', p.stderr)
        self.assertIn('alive after', p.stdout, p.stderr[-2000:])

    def test_one_file_many_numbers(self):
        """One kernel file named by 40 plot numbers: each copy counts, the kernel is stopped
        at the quota (before: 21 copies in the channel and 21 more in the history)."""
        env = dict(self.env, CELLBOX_CHANNEL_QUOTA='64m')
        cell = self.attack(PLOTS + r'''
open(os.path.join(R._S.plot_dir, '1.png'), 'wb').write(png(1024))
for n in range(1, 41):
    show('plots/1.png', n, 1024)
print('named it 40 times', flush=True)
''')
        p, peak = self.peak_while(lambda: self.repl(cell, 'print("alive after")', env=env),
                                  self.run_dir, self.state)
        self.assertIn('channel quota exceeded', p.stderr, p.stdout[-2000:])
        self.assertLess(peak, (64 + 16) * MB, 'the copies took %d MB of the host' % (peak // MB))
        self.assertIn('alive after', p.stdout, p.stderr[-2000:])

    def test_plot_numbers_are_the_hosts(self):
        """A kernel that names its plots by numbers it had given before (as a lying one does,
        and a restarted one counting from 1): the host numbers its copies, so none is named
        again (before: each was 'plot 1', and the history kept only the last image under
        every cell's plot)."""
        shows = [self.attack(PLOTS + r'''
open(os.path.join(R._S.plot_dir, 'SIDE.png'), 'wb').write(png(SIDE))
show('plots/SIDE.png', 1, SIDE)
'''.replace('SIDE', str(side))) for side in (8, 16, 24)]
        p = self.repl(shows[0], shows[1], 'import os; os._exit(3)', shows[2])
        for n, side in ((1, 8), (2, 16), (3, 24)):
            self.assertIn('[plot %d: %dx%d PNG' % (n, side, side), p.stdout, p.stderr)
        seen = []
        for cell in self.history_cells():
            for plot in re.findall(r'"plot": "([^"]+)"', json.dumps(cell)):
                with open(plot, 'rb') as f:
                    seen.append((os.path.basename(plot), struct.unpack('>II', f.read(24)[16:])))
        self.assertEqual(seen, [('1.png', (8, 8)), ('2.png', (16, 16)), ('3.png', (24, 24))])

    def test_copy_out_counts(self):
        """Files copied out to the host count against the session's quota: a second 40 MB
        copy against 64 MB is refused (before: both written, the quota not asked)."""
        env = dict(self.env, CELLBOX_CHANNEL_QUOTA='64m')
        big = os.path.join(self.tmp, 'big')
        outs = [os.path.join(self.tmp, 'out%d' % n) for n in range(2)]
        p = self.repl('open(%r, "wb").write(b"x" * (40 << 20))' % big, env=env,
                      args=[a for o in outs for a in ('--copy-out', '%s:%s' % (big, o))])
        self.assertEqual(os.path.getsize(outs[0]), 40 * MB, p.stderr)
        self.assertFalse(os.path.exists(outs[1]), 'both copies were written past the quota')
        self.assertIn('over its cap of 24 MB', p.stderr)

    def test_history_plots_cap(self):
        """Sessions after sessions of plots: the history's plots stay under
        history-plots-size, the oldest dropped first, their cells saying so (before: no cap,
        every plot of every session kept)."""
        env = dict(self.env, CELLBOX_HISTORY_PLOTS_SIZE='10m')
        cell = self.attack(PLOTS + r'''
data = png(600)                           # 1 MB
for n in range(1, 4):
    open(os.path.join(R._S.plot_dir, '%d.png' % n), 'wb').write(data)
    show('plots/%d.png' % n, n, 600)
print('three plots', flush=True)
''')
        for _ in range(5):
            p = self.repl(cell, env=env)
            self.assertIn('three plots', p.stdout, p.stderr)
            time.sleep(1.1)         # session ids are per second; the order is theirs
        sessions = sorted(glob.glob(os.path.join(self.state, 'cellbox', 'sessions', '*')))
        self.assertEqual(len(sessions), 5)
        plots = [f for s in sessions for f in glob.glob(os.path.join(s, 'plots', '*.png'))]
        kept = sum(os.lstat(f).st_blocks * 512 for f in plots)
        self.assertLessEqual(kept, 10 * MB, 'the history keeps %d MB of plots' % (kept // MB))
        newest = glob.glob(os.path.join(sessions[-1], 'plots', '*.png'))
        self.assertEqual(len(newest), 3, 'the newest plots were dropped')
        oldest = os.path.join(sessions[0], 'plots')
        self.assertEqual(glob.glob(os.path.join(oldest, '*.png')), [])
        self.assertEqual(len(glob.glob(os.path.join(oldest, '*.png.dropped'))), 3)
        # The oldest cell keeps its text; its plots say why they are gone.
        out = os.path.join(self.tmp, 'oldest.ipynb')
        e = self.cellbox('history', 'export', out, '--session', os.path.basename(sessions[0]))
        self.assertEqual(e.returncode, 0, e.stderr)
        with open(out) as f:
            nb = json.load(f)
        text = json.dumps(nb)
        self.assertIn('three plots', text)
        self.assertEqual(text.count('[plot dropped: the history'), 3, text[:2000])
        s = self.cellbox('history', 'show', '1', '--session', os.path.basename(sessions[0]))
        self.assertIn('[plot dropped: the history', s.stdout, s.stderr)
