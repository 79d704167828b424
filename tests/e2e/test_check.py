"""`cellbox replay --check` end to end: nbval's markers and tags, --check-ignore,
--check-images pixels, --check-lax, and what must never be a difference."""
import base64
import io
import json
import os
import shutil
import subprocess
import tempfile
import unittest

from test_cli import clean_env

BIN = os.environ.get('CELLBOX_BIN', 'cellbox')


def notebook(cells):
    """A notebook of code cells: each (source, outputs, tags)."""
    return {'cells': [{'cell_type': 'code', 'execution_count': None, 'id': 'c%d' % i,
                       'metadata': {'tags': tags} if tags else {}, 'outputs': outs,
                       'source': src} for i, (src, outs, tags) in enumerate(cells)],
            'metadata': {}, 'nbformat': 4, 'nbformat_minor': 5}


def stream(text, name='stdout'):
    return {'name': name, 'output_type': 'stream', 'text': text}


def png_b64(w, h, color):
    from PIL import Image
    b = io.BytesIO()
    Image.new('RGB', (w, h), color).save(b, 'png')
    return base64.b64encode(b.getvalue()).decode()


class CheckTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix='cellbox-e2e-')
        self.env = clean_env(self.tmp)

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def check(self, cells, *args):
        path = os.path.join(self.tmp, 'nb.ipynb')
        with open(path, 'w') as f:
            json.dump(notebook(cells), f)
        return subprocess.run([BIN, 'replay', path, '--check', '--no-progress', *args],
                              capture_output=True, text=True, env=self.env, timeout=180,
                              cwd=self.tmp)

    def test_no_false_alarms(self):
        # What always differs between two runs: split streams, interleaving, addresses,
        # timings, %timeit counts, cell file names in warnings and tracebacks.
        p = self.check([
            ('import sys\nprint("a")\nprint("e", file=sys.stderr)\nprint("b")',
             [stream('a\n'), stream('b\n'), stream('e\n', 'stderr')], None),
            ('object()', [{'data': {'text/plain': '<object at 0x7f0011223344>'},
                                         'execution_count': 2, 'metadata': {},
                                         'output_type': 'execute_result'}], None),
            ('%timeit -n 3 -r 2 pass',
             [stream('The slowest run took 4.78 times longer than the fastest. This could mean '
                     'that an intermediate result is being cached.\n'
                     '9.87 ns ± 1.2 ns per loop (mean ± std. dev. of 7 runs, 100,000,000 loops each)\n')],
             None),
            ('import warnings\nwarnings.warn("w")',
             [stream('/tmp/ipykernel_1234/99999.py:2: UserWarning: w\n  warnings.warn("w")\n',
                     'stderr')], None),
            ('1/0', [{'ename': 'ZeroDivisionError', 'evalue': 'division by zero',
                      'output_type': 'error', 'traceback': ['Input In [7]']}],
             ['raises-exception']),
        ])
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertIn('outputs match', p.stderr)

    def test_markers(self):
        p = self.check([
            ('# NBVAL_IGNORE_OUTPUT\nprint("now")', [stream('then\n')], None),
            ('print("now")', [stream('then\n')], ['nbval-ignore-output']),
            ('# NBVAL_SKIP\nraise SystemExit("must not run")', [], None),
            ('print("x")', [], ['nbval-skip']),
            ('#NBVAL_RAISES_EXCEPTION\n1/0', [{'ename': 'ZeroDivisionError',
                                              'evalue': 'division by zero',
                                              'output_type': 'error', 'traceback': []}], None),
        ])
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertIn('2 skipped', p.stderr)
        self.assertNotIn('must not run', p.stdout)
        # a cell marked to raise that does not raise is a difference
        p = self.check([('# NBVAL_RAISES_EXCEPTION\n1', [], None)])
        self.assertEqual(p.returncode, 6, p.stdout + p.stderr)
        self.assertIn('marked to raise an exception and did not', p.stdout)
        # lax: only NBVAL_CHECK_OUTPUT cells are compared
        cells = [('print("now")', [stream('then\n')], None),
                 ('# NBVAL_CHECK_OUTPUT\nprint("same")', [stream('same\n')], None)]
        self.assertEqual(self.check(cells).returncode, 6)
        self.assertEqual(self.check(cells, '--check-lax').returncode, 0)
        cells[1] = ('print("now")', [stream('then\n')], ['nbval-check-output'])
        self.assertEqual(self.check(cells, '--check-lax').returncode, 6)

    def test_check_ignore(self):
        cells = [('import random\nprint("seed", random.randrange(10**9))',
                  [stream('seed 12345\n')], None)]
        p = self.check(cells)
        self.assertEqual(p.returncode, 6)
        self.assertIn('- seed 12345', p.stdout)
        p = self.check(cells, '--check-ignore', r'seed \d+')
        self.assertEqual(p.returncode, 0, p.stdout)
        # repeated: every pattern applies, not only the last one given
        cells2 = [('import random\nprint("seed", random.randrange(10**9), "tag", random.randrange(10**9))',
                   [stream('seed 12345 tag 678\n')], None)]
        p = self.check(cells2, '--check-ignore', r'seed \d+', '--check-ignore', r'tag \d+')
        self.assertEqual(p.returncode, 0, p.stdout)
        self.assertEqual(self.check(cells2, '--check-ignore', r'tag \d+').returncode, 6)
        p = self.check(cells, '--check-ignore', '(')
        self.assertEqual(p.returncode, 2)
        self.assertIn('--check-ignore', p.stderr)

    def test_images(self):
        code = ('from IPython.display import Image\nimport base64\n'
                'Image(base64.b64decode("%s"))')

        def cell(now, stored):
            return (code % now, [{'data': {'image/png': stored, 'text/plain':
                                           '<IPython.core.display.Image object>'},
                                  'execution_count': 1, 'metadata': {},
                                  'output_type': 'execute_result'}], None)
        red = png_b64(40, 30, 'red')
        self.assertEqual(self.check([cell(red, png_b64(42, 28, 'red'))]).returncode, 0)
        p = self.check([cell(red, png_b64(43, 30, 'red'))])
        self.assertEqual(p.returncode, 6)
        self.assertIn('- [image/png 43x30]', p.stdout)
        self.assertIn('+ [image/png 40x30]', p.stdout)
        # same size, other pixels: equal by size, different by pixels
        blue = png_b64(40, 30, 'blue')
        self.assertEqual(self.check([cell(red, blue)]).returncode, 0)
        self.assertEqual(self.check([cell(red, blue)], '--check-images', 'pixels').returncode, 6)
        self.assertEqual(self.check([cell(red, red)], '--check-images', 'pixels').returncode, 0)
        self.assertEqual(self.check([cell(red, red)], '--check-images', 'colour').returncode, 2)
        # an image that is missing, or another format, differs
        p = self.check([(code % red, [{'data': {'text/plain': '<IPython.core.display.Image object>'},
                                        'execution_count': 1, 'metadata': {},
                                        'output_type': 'execute_result'}], None)])
        self.assertEqual(p.returncode, 6)


if __name__ == '__main__':
    unittest.main()
