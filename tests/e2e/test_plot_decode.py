"""End to end: a kernel's plot that is a hostile PNG costs that plot, not the front end.

The real binary and the real IPython runner on the local backend; the first cell plays a
hostile kernel and shows two PNGs as its plots (written to its plots/ and announced with its
own events, as code in a container could), each one that stopped libsixel's image loader, which
decoded plots before libpng in a child did: RGBA at 4 bits (a failed assertion: `run` died with
134) and a cut zlib stream of zeros (stb_image spun at 100% CPU, past SIGTERM). `cellbox run`
with block graphics prints a note for each, the plots' text lines, and goes on: the second
cell's matplotlib plot is drawn.
"""
import os
import shutil
import subprocess
import tempfile
import time
import unittest

from test_graphics import BIN, clean_env

HOSTILE = r'''# %%
import json, os, struct, zlib, _cellbox_runner as r
def chunk(t, d):
    return struct.pack('>I', len(d)) + t + d + struct.pack('>I', zlib.crc32(t + d))
def png(w, h, depth, ctype, z):
    ihdr = struct.pack('>IIBBBBB', w, h, depth, ctype, 0, 0, 0)
    return (b'\x89PNG\r\n\x1a\n' + chunk(b'IHDR', ihdr) + chunk(b'IDAT', z) +
            chunk(b'IEND', b''))
bad = {91: (7, 5, png(7, 5, 4, 6, zlib.compress(b'\0' * 75))),
       92: (16, 16, png(16, 16, 8, 0, zlib.compress(b'\0' * 10000000, 9)[:20]))}
for n, (w, h, data) in bad.items():
    with open(os.path.join(r._S.plot_dir, '%d.png' % n), 'wb') as f:
        f.write(data)
    os.write(r._S.out_fd, (json.dumps(
        {"type": "display", "data": {"text/plain": "forged %d" % n},
         "plot": {"index": n, "path": "plots/%d.png" % n, "format": "png",
                  "width": w, "height": h}}) + "\n").encode())
print("planted", sorted(len(d) for _, _, d in bad.values()))

# %%
import matplotlib.pyplot as plt
print("second cell ran")
plt.plot([1, 3, 2]); plt.show()
'''


class PlotDecodeTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix='cellbox-decode-')

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def test_hostile_pngs_cost_one_plot(self):
        path = os.path.join(self.tmp, 'cells.py')
        with open(path, 'w') as f:
            f.write(HOSTILE)
        t0 = time.monotonic()
        p = subprocess.run([BIN, 'run', '--graphics', 'blocks', '--timeout', '60', path],
                           capture_output=True, env=clean_env(self.tmp, COLORTERM='truecolor'),
                           timeout=120)
        took = time.monotonic() - t0
        out, err = p.stdout.decode(errors='replace'), p.stderr.decode(errors='replace')
        self.assertEqual(p.returncode, 0, (out[-1500:], err[-1500:]))
        self.assertIn('planted [69, 77]', out)
        for n in (1, 2):        # the host's numbers (the kernel said 91 and 92)
            self.assertRegex(err, r"cellbox: plot %d could not be decoded: cannot decode "
                                  r"'[^']*plot-%d\.png': \S" % (n, n))
            self.assertIn('[plot %d: ' % n, out)      # its text line instead
        # the next cell ran and its plot was drawn in block characters
        self.assertIn('second cell ran', out)
        self.assertGreater(sum(out.count(c) for c in '\u2580\u2584\u258c\u2590\u2598\u259d'),
                           100, out[-300:])
        self.assertLess(took, 90)


if __name__ == '__main__':
    unittest.main()
