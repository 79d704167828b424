"""--libraries on the local backend: a venv of the interpreter that sees its packages, made
once from a wheel the test makes (offline, through --wheelhouse) and reused; the errors."""
import os
import subprocess
import time
import unittest

from test_cli import Base, PYTHON
from wheel import make_wheel


class LocalLibrariesTest(Base):
    def setUp(self):
        super().setUp()
        if subprocess.run([PYTHON, '-m', 'pip', '--version'], capture_output=True).returncode:
            self.skipTest(PYTHON + ' has no pip (scripts/bootstrap --tests)')
        self.env['XDG_CACHE_HOME'] = os.path.join(self.tmp, 'cache')
        self.wheels = os.path.join(self.tmp, 'wheels')
        make_wheel(self.wheels, 'cbtestlocal', '1.0', 7)

    def test_install_once_then_reuse(self):
        code = 'import cbtestlocal, IPython, sys\nprint(cbtestlocal.VALUE, sys.prefix != sys.base_prefix)'
        t0 = time.monotonic()
        p = self.cellbox('run', '--libraries', 'cbtestlocal', '--wheelhouse', self.wheels, '-c', code)
        first = time.monotonic() - t0
        self.assertEqual((p.returncode, p.stdout), (0, '7 True\n'), p.stderr)
        self.assertIn('installing cbtestlocal for %s (once: kept in ' % PYTHON, p.stderr)
        venvs = os.listdir(os.path.join(self.tmp, 'cache', 'cellbox', 'venvs'))
        self.assertEqual(len(venvs), 1)
        t0 = time.monotonic()
        p = self.cellbox('run', '--libraries', 'cbtestlocal', '-c', code)
        second = time.monotonic() - t0
        self.assertEqual((p.returncode, p.stdout), (0, '7 True\n'), p.stderr)
        self.assertNotIn('installing', p.stderr)
        self.assertEqual(os.listdir(os.path.join(self.tmp, 'cache', 'cellbox', 'venvs')), venvs)
        print('\nfirst (venv + pip): %.2f s, second (cached): %.2f s' % (first, second))

    def test_errors(self):
        p = self.cellbox('run', '--libraries', 'pandas @ https://example.com/p.whl', '-c', 'pass')
        self.assertEqual(p.returncode, 2)
        self.assertIn("'pandas @ https://example.com/p.whl' is not a package requirement", p.stderr)
        p = self.cellbox('run', '--libraries', 'nosuchlocal', '--wheelhouse', self.wheels, '-c', 'pass')
        self.assertEqual(p.returncode, 5, p.stderr)
        self.assertIn('cannot install nosuchlocal (pip exited with 1):', p.stderr)
        self.assertIn('ERROR: No matching distribution found for nosuchlocal', p.stderr)
        self.assertEqual(os.listdir(os.path.join(self.tmp, 'cache', 'cellbox', 'venvs')), [])
        self.env['CELLBOX_LIBRARIES'] = 'ok, -bad'
        p = self.cellbox('run', '-c', 'pass')
        self.assertEqual(p.returncode, 2)
        self.assertIn("'-bad' is not a package requirement", p.stderr)


if __name__ == '__main__':
    unittest.main()
