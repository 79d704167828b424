"""Any Jupyter kernel inside cellbox (issue 29, item 2): `--kernel jupyter:NAME` starts the
installed kernelspec NAME where the runner runs and serves it through the channel (the runner's
bridge speaks ZMQ to it there; the host sees files). Run with the real kernels Debian has:
ipykernel (python3), IRkernel (ir), xeus-python (xpython) and Octave's (octave: Debian's
python3-octave-kernel, gnuplot-nox, ghostscript and fonts-freefont-otf for its plots). Run as
test_bridge.NAME."""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_cli import BIN, PYTHON, clean_env  # noqa: E402
import test_tui  # noqa: E402


def kernelspecs():
    out = subprocess.run([PYTHON, '-c', 'from jupyter_client.kernelspec import '
                          'KernelSpecManager as K; print(" ".join(K().find_kernel_specs()))'],
                         capture_output=True, text=True)
    return set(out.stdout.split()) if out.returncode == 0 else set()


SPECS = kernelspecs()


def need(spec):
    if spec not in SPECS:
        raise unittest.SkipTest('no kernelspec %r here (scripts/bootstrap --tests)' % spec)


class Base(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix='cellbox-bridge-')
        self.env = clean_env(self.tmp)

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def cellbox(self, *args, stdin=None, timeout=120):
        return subprocess.run([BIN, *args], input=stdin, capture_output=True, text=True,
                              env=self.env, timeout=timeout, cwd=self.tmp)


class BridgeTest(Base):
    def test_ipykernel_cells_state_input_plots(self):
        need('python3')
        r = self.cellbox('repl', '--kernel', 'jupyter:python3',
                         stdin='x = 6\nname = input("who? ")\nbob\nprint("hi", name, x * 7)\n'
                               'for i in range(2):\n    print("line", i)\n\nx\n')
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn('hi bob 42', r.stdout)
        self.assertIn('line 0\nline 1', r.stdout)     # is_complete asked the kernel
        self.assertTrue(r.stdout.rstrip().endswith('6'), r.stdout)
        r = self.cellbox('run', '--kernel', 'jupyter:python3', '--json', '-c',
                         'import matplotlib.pyplot as plt; plt.plot([1, 2]); plt.show()')
        out = json.loads(r.stdout)
        self.assertEqual(out['exit_code'], 0, r.stderr)
        self.assertEqual(len(out['plots']), 1)
        self.assertGreater(out['plots'][0]['width'], 100)

    def test_interrupt_and_timeout_keep_the_state(self):
        need('python3')
        r = self.cellbox('repl', '--kernel', 'jupyter:python3', '--timeout', '2',
                         stdin='x = 5\nimport time; time.sleep(60)\nprint("after", x)\n')
        self.assertIn('KeyboardInterrupt', r.stdout + r.stderr)
        self.assertIn('after 5', r.stdout)

    def test_errors_and_death(self):
        need('python3')
        r = self.cellbox('run', '--kernel', 'jupyter:python3', '-c', '1/0')
        self.assertEqual(r.returncode, 1)
        self.assertIn('ZeroDivisionError', r.stdout + r.stderr)
        r = self.cellbox('run', '--kernel', 'jupyter:python3', '-c', 'import os; os._exit(3)')
        self.assertEqual(r.returncode, 4, r.stderr)
        self.assertIn('exit code 3', r.stderr)

    def test_irkernel_plot_and_error(self):
        need('ir')
        r = self.cellbox('run', '--kernel', 'jupyter:ir', '--json', '-c',
                         'plot(1:10, main = "t"); y <- 21; print(y * 2); stop("boom")')
        out = json.loads(r.stdout)
        self.assertEqual(out['exit_code'], 1)
        self.assertIn('[1] 42', out['stdout'])
        self.assertIn('boom', out['stderr'])
        self.assertEqual([p['width'] for p in out['plots']], [840])

    def test_xeus_python(self):
        need('xpython')
        r = self.cellbox('repl', '--kernel', 'jupyter:xpython', stdin='x = 6\nprint(x * 7)\n')
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn('42', r.stdout)

    def test_replay_a_notebook(self):
        need('python3')
        nb = {'cells': [{'cell_type': 'code', 'metadata': {}, 'source': 'a = 2',
                         'outputs': [], 'execution_count': None},
                        {'cell_type': 'code', 'metadata': {}, 'source': 'print(a + 1)\na * 10',
                         'outputs': [], 'execution_count': None}],
              'metadata': {}, 'nbformat': 4, 'nbformat_minor': 5}
        path = os.path.join(self.tmp, 'n.ipynb')
        with open(path, 'w') as f:
            json.dump(nb, f)
        out = os.path.join(self.tmp, 'out.ipynb')
        r = self.cellbox('replay', '--kernel', 'jupyter:python3', path, '-o', out)
        self.assertEqual(r.returncode, 0, r.stderr)
        with open(out) as f:
            cells = json.load(f)['cells']
        self.assertEqual(cells[1]['outputs'][0]['text'], ['3\n'])
        self.assertEqual(cells[1]['outputs'][1]['data']['text/plain'], ['20'])


class OctaveTest(Base):
    """GNU Octave through Debian's octave_kernel (metakernel: it drives octave-cli on a pty,
    plots with gnuplot, printed to PNG by ghostscript). Its is_complete says "incomplete" to
    any cell not ending in a newline, so a blank line ends a cell, as in jupyter-console."""

    def setUp(self):
        need('octave')
        super().setUp()

    def octave_notebook(self, name, sources):
        """A notebook of code cells whose kernelspec is Octave's, in the test's directory."""
        nb = {'cells': [{'cell_type': 'code', 'metadata': {}, 'source': src, 'outputs': [],
                         'execution_count': None} for src in sources],
              'metadata': {'kernelspec': {'name': 'octave', 'display_name': 'Octave',
                                          'language': 'octave'}},
              'nbformat': 4, 'nbformat_minor': 5}
        path = os.path.join(self.tmp, name)
        with open(path, 'w') as f:
            json.dump(nb, f)
        return path

    def test_repl_cells_state_error(self):
        r = self.cellbox('repl', '--kernel', 'jupyter:octave',
                         stdin='x = 6\n\ndisp(x * 7)\n\nfor i = 1:2\n  printf("line %d\\n", i);\n'
                               'end\n\nerror("boom")\n\ndisp(x + 1)\n\n')
        self.assertEqual(r.returncode, 0, r.stderr)
        # Octave's lines (\r\n from its pty, read here as \n) and nothing else: with the
        # terminal's TERM, readline's bracketed-paste escapes and an echoed "\r\r\n" began
        # every output. An error is only its text: octave_kernel replies "ok" to every cell.
        self.assertEqual(r.stdout, 'x = 6\n42\nline 1\nline 2\nerror: boom\n7\n')

    def test_interrupt_keeps_the_state(self):
        r = self.cellbox('repl', '--kernel', 'jupyter:octave', '--timeout', '3',
                         stdin='x = 5;\n\npause(60)\n\ndisp(x * 2)\n\n')
        self.assertIn('timeout', r.stdout + r.stderr)
        self.assertTrue(r.stdout.endswith('\n10\n'), r.stdout)

    def test_replay_a_notebook_with_a_plot(self):
        # The notebook's kernelspec picks the bridged kernel: no --kernel.
        path = self.octave_notebook('n.ipynb', ['x = 6;', 'plot(1:10)\ntitle("t")\ndisp(x * 7)'])
        out = os.path.join(self.tmp, 'out.ipynb')
        plots = os.path.join(self.tmp, 'plots')
        r = self.cellbox('replay', path, '-o', out, '--plots', plots)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn('[plot 1: 560x420 PNG, saved to', r.stdout)
        with open(os.path.join(plots, 'plot-1.png'), 'rb') as f:
            self.assertEqual(f.read(8), b'\x89PNG\r\n\x1a\n')
        with open(out) as f:
            done = json.load(f)
        self.assertEqual(done['metadata']['kernelspec']['name'], 'octave')
        self.assertEqual(done['metadata']['language_info']['name'], 'octave')
        outputs = done['cells'][1]['outputs']
        self.assertEqual([o['output_type'] for o in outputs], ['stream', 'display_data'])
        self.assertEqual(outputs[0]['text'], ['42\r\n'])
        self.assertIn('image/png', outputs[1]['data'])

    def test_ui_plot_and_completion(self):
        if not shutil.which('tmux'):
            self.skipTest('tmux is not installed (scripts/bootstrap --tests)')
        ui = test_tui.Tui(self.tmp, 'octave', ['--kernel', 'jupyter:octave'],
                          env_extra={'CELLBOX_BLOCKS': 'half'})
        try:
            ui.run('x = 6')
            ui.keys('Enter')                # the blank line that ends an Octave cell
            ui.wait_for('x = 6\n', 'idle', timeout=120)
            # Tab: one completion is inserted (the kernel's two empty ones dropped; kept,
            # they made a menu of three).
            ui.type('plotm')
            ui.keys('Tab')
            ui.wait_for('>>: plotmatrix')
            ui.keys('C-u')
            ui.wait_gone('plotmatrix')
            ui.run('plot(1:10)')
            ui.keys('Enter')
            ui.wait_for('[plot 1: 560x420 PNG]', timeout=120)
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline:
                rows = ui.screen().split('\n')
                k = next(i for i, r in enumerate(rows) if r.startswith('[plot 1: 560x420 PNG]'))
                blocks = [i for i, r in enumerate(rows) if test_tui.BLOCK in r]
                if len(blocks) >= 5:
                    break
                time.sleep(0.1)
            self.assertGreaterEqual(len(blocks), 5, '\n'.join(rows))
            self.assertEqual(blocks[0], k + 1, 'the image is right below its line')
        finally:
            ui.close()


    def test_ui_opens_an_octave_notebook(self):
        # The notebook's kernelspec picks the bridged kernel in the UI too (no --kernel): the
        # header names it, its cells run in Octave, and the saved file keeps its kernelspec.
        if not shutil.which('tmux'):
            self.skipTest('tmux is not installed (scripts/bootstrap --tests)')
        path = self.octave_notebook('oct.ipynb', ['x = 6;\ndisp(x * 7)'])
        ui = test_tui.Tui(self.tmp, 'octave-nb', [path])
        try:
            ui.wait_for('oct.ipynb', ' octave ')
            ui.keys('F5')
            s = ui.wait_for('42', 'In [1]', timeout=120)
            self.assertNotIn('SyntaxError', s)
            ui.keys('C-s')
            ui.wait_for('saved')
            with open(path) as f:
                saved = json.load(f)
            self.assertEqual(saved['metadata']['kernelspec']['name'], 'octave')
            text = ''.join(''.join(o.get('text', '')) for o in saved['cells'][0]['outputs'])
            self.assertEqual(text.strip(), '42')
        finally:
            ui.close()


class RefusedTest(Base):
    def test_unknown_kernel_bad_name_policy_files(self):
        r = self.cellbox('run', '--kernel', 'jupyter:no-such-kernel', '-c', '1')
        self.assertEqual(r.returncode, 5)
        self.assertIn("no Jupyter kernel named 'no-such-kernel'", r.stderr)
        r = self.cellbox('run', '--kernel', 'jupyter:../x', '-c', '1')
        self.assertNotEqual(r.returncode, 0)
        self.assertRegex(r.stderr, re.compile('kernel', re.I))
        need('python3')
        # The policy and the file helpers are in Python: not for another kernel's cells.
        r = self.cellbox('run', '--kernel', 'jupyter:python3', '--policy', 'production',
                         '-c', '1')
        self.assertNotEqual(r.returncode, 0)
        self.assertIn('policy', r.stderr)
        src = os.path.join(self.tmp, 'in.txt')
        with open(src, 'w') as f:
            f.write('data')
        r = self.cellbox('run', '--kernel', 'jupyter:python3', '--copy-in', src, '-c', '1')
        self.assertNotEqual(r.returncode, 0)
        self.assertIn('cannot copy files', r.stderr)


class ExistingTest(Base):
    """--existing: the REPL on an ipykernel someone else started (this test, through
    jupyter_client), as jupyter-console --existing: the kernel's state is shared, an interrupt
    goes through its control channel, and the kernel outlives cellbox."""

    def test_repl_on_a_running_kernel(self):
        need('python3')
        from jupyter_client.manager import KernelManager
        km = KernelManager(kernel_name='python3')
        km.start_kernel(cwd=self.tmp)
        try:
            kc = km.client()
            kc.start_channels()
            kc.wait_for_ready(timeout=60)
            kc.execute_interactive('x = 41', timeout=60)
            r = self.cellbox('repl', '--existing', km.connection_file, '--timeout', '2',
                             stdin='print(x + 1)\nimport time; time.sleep(60)\n'
                                   'print("still", x)\ny = "from cellbox"\n')
            self.assertIn('42', r.stdout)
            self.assertIn('KeyboardInterrupt', r.stdout + r.stderr)
            self.assertIn('still 41', r.stdout)
            self.assertTrue(km.is_alive(), 'cellbox ended a kernel it did not start')
            seen = []
            kc.execute_interactive('print(y)', timeout=60, output_hook=lambda m: seen.append(
                m['content'].get('text')))
            self.assertIn('from cellbox\n', seen)
            kc.stop_channels()
            # No sandbox: a container backend cannot reach it, and says so.
            r = self.cellbox('repl', '--existing', km.connection_file, '--backend', 'docker',
                             stdin='1\n')
            self.assertEqual(r.returncode, 5)
            self.assertIn('only the local backend', r.stderr)
        finally:
            km.shutdown_kernel(now=True)
        r = self.cellbox('repl', '--existing', os.path.join(self.tmp, 'none.json'), stdin='1\n')
        self.assertEqual(r.returncode, 2)
        self.assertIn('not a connection file', r.stderr)
        bad = os.path.join(self.tmp, 'bad.json')
        with open(bad, 'w') as f:
            f.write('{"shell_port": "x"')
        r = self.cellbox('repl', '--existing', bad, stdin='1\n')
        self.assertEqual(r.returncode, 5)
        self.assertIn('not a connection file', r.stderr)


class DockerTest(Base):
    def test_image_without_jupyter_client_says_so(self):
        ok = shutil.which('docker') and subprocess.run(
            ['docker', 'image', 'inspect', 'cellbox-python:p2'], capture_output=True).returncode == 0
        if not ok:
            self.skipTest('no dockerd or no kernel image here (scripts/build-image)')
        r = self.cellbox('run', '--backend', 'docker', '--kernel', 'jupyter:python3', '-c', '1')
        self.assertEqual(r.returncode, 5)
        self.assertIn("no jupyter_client here to start the Jupyter kernel 'python3'", r.stderr)


if __name__ == '__main__':
    unittest.main()
