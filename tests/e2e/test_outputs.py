"""End to end: artifacts (savefig, plotly HTML) in `run`, and the host's refusals when the
kernel names a plot or artifact file that is not one (a symlink, a FIFO, a hard link)."""
import base64
import json
import os
import shutil
import subprocess
import tempfile
import unittest

from test_cli import clean_env

BIN = os.environ.get('CELLBOX_BIN', 'cellbox')

# A cell that plays a hostile kernel: it plants entries in the channel's plots/ and appends
# events naming them to its own results file, as code in a container could.
HOSTILE = r'''
import json, os, _cellbox_runner as r
plots = r._S.plot_dir
def event(ev):
    os.write(r._S.out_fd, (json.dumps(ev) + "\n").encode())
os.symlink(SECRET, os.path.join(plots, "90.png"))
os.mkfifo(os.path.join(plots, "91.png"))
os.link(SECRET_COPY, os.path.join(plots, "92.png"))
for n in (90, 91, 92):
    event({"type": "artifact", "index": n, "path": "plots/%d.png" % n, "format": "png",
           "name": "x\x1b[31mred"})
    event({"type": "display", "data": {"text/plain": "p"},
           "plot": {"index": n, "path": "plots/%d.png" % n, "format": "png"}})
event({"type": "artifact", "index": 93, "path": "../ready", "format": "png"})
print("planted")
'''


class OutputsTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix='cellbox-e2e-')
        self.env = clean_env(self.tmp)

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def run_code(self, code, *args):
        path = os.path.join(self.tmp, 'cell.py')
        with open(path, 'w') as f:
            f.write(code)
        return subprocess.run([BIN, 'run', path, *args], capture_output=True, text=True,
                              env=self.env, timeout=180, cwd=self.tmp)

    def test_savefig_is_an_artifact(self):
        plots = os.path.join(self.tmp, 'plots')
        p = self.run_code('import matplotlib.pyplot as plt\nplt.plot([1, 2])\n'
                          'plt.savefig("out.png")\nplt.savefig("out.svg")\n', '--plots', plots)
        self.assertEqual(p.returncode, 0, p.stderr)
        lines = p.stdout.splitlines()
        self.assertRegex(lines[0], r'^\[artifact 1: out\.png, PNG 640x480, saved to .*/plot-1\.png\]$')
        self.assertRegex(lines[1], r'^\[artifact 2: out\.svg, SVG, saved to .*/plot-2\.svg\]$')
        self.assertRegex(lines[2], r'^\[plot 3: \d+x\d+ PNG')  # still open: shown once
        self.assertEqual(len(lines), 3, p.stdout)
        with open(os.path.join(self.tmp, 'out.png'), 'rb') as a, \
                open(os.path.join(plots, 'plot-1.png'), 'rb') as b:
            self.assertEqual(a.read(), b.read())
        j = json.loads(self.run_code('import matplotlib.pyplot as plt\nplt.plot([1])\n'
                                     'plt.savefig("a.png")\nplt.close()\n', '--json').stdout)
        self.assertEqual([(x['format'], x['width']) for x in j['plots']], [('png', 640)])
        self.assertEqual(base64.b64decode(j['plots'][0]['content_base64'])[:4], b'\x89PNG')

    def test_plotly_html_artifact(self):
        if subprocess.run(['/usr/bin/python3', '-c', 'import plotly'],
                          capture_output=True).returncode:
            self.skipTest('python3-plotly is not installed')
        plots = os.path.join(self.tmp, 'plots')
        p = self.run_code('import plotly.graph_objects as go\n'
                          'go.Figure(go.Scatter(y=[4, 5])).show()\n', '--plots', plots)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertRegex(p.stdout, r'\[artifact \d+: HTML, saved to .*/plot-\d+\.html\]')
        html = [f for f in os.listdir(plots) if f.endswith('.html')]
        self.assertEqual(len(html), 1)
        with open(os.path.join(plots, html[0]), encoding='utf-8') as f:
            page = f.read()
        self.assertIn('"y":[4,5]', page.replace(' ', ''))
        self.assertIn('plotly', page[:2000].lower())

    def test_hostile_plot_files_are_refused(self):
        secret = os.path.join(self.tmp, 'secret.txt')
        with open(secret, 'w') as f:
            f.write('TOP-SECRET-HOST-FILE')
        copy = os.path.join(self.tmp, 'run', 'secret-copy')
        # The runtime directory, made as the wall wants it (ours, 0700): the hard link's
        # source must be on the channel's file system.
        os.makedirs(os.path.dirname(copy), mode=0o700, exist_ok=True)
        shutil.copy(secret, copy)
        plots = os.path.join(self.tmp, 'plots')
        code = 'SECRET = %r\nSECRET_COPY = %r\n' % (secret, copy) + HOSTILE
        p = self.run_code(code, '--json', '--plots', plots, '--timeout', '60')
        self.assertEqual(p.returncode, 0, p.stderr)   # and it did not hang on the FIFO
        j = json.loads(p.stdout)
        self.assertIn('planted', j['stdout'])
        blob = p.stdout + p.stderr
        self.assertNotIn('TOP-SECRET', blob)
        self.assertNotIn(base64.b64encode(b'TOP-SECRET-HOST-FILE')[:12].decode(), blob)
        for name in os.listdir(plots) if os.path.isdir(plots) else []:
            with open(os.path.join(plots, name), 'rb') as f:
                self.assertNotIn(b'TOP-SECRET', f.read())
        # The session refuses them (a note in the cell's stderr: the JSON's, with --json).
        self.assertIn('refused', j['stderr'] + p.stderr)
        self.assertEqual([x['content_base64'] for x in j['plots']], [''] * len(j['plots']))
        self.assertNotIn('../ready', blob.replace('"path":\t"plots/', ''))
        # a file name is the kernel's too: its escapes do not reach the terminal
        q = self.run_code('import matplotlib.pyplot as plt\nplt.plot([1])\n'
                          'plt.savefig("x\\x1b[31mred.png")\nplt.close()\n')
        self.assertIn('[artifact 1: x', q.stdout)
        self.assertNotIn('\x1b', q.stdout)


if __name__ == '__main__':
    unittest.main()
