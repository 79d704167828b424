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

    def venvs(self):
        d = os.path.join(self.tmp, 'cache', 'cellbox', 'venvs')
        return sorted(v for v in os.listdir(d) if os.path.isdir(os.path.join(d, v)))

    def test_install_once_then_reuse(self):
        code = 'import cbtestlocal, IPython, sys\nprint(cbtestlocal.VALUE, sys.prefix != sys.base_prefix)'
        t0 = time.monotonic()
        p = self.cellbox('run', '--libraries', 'cbtestlocal', '--wheelhouse', self.wheels, '-c', code)
        first = time.monotonic() - t0
        self.assertEqual((p.returncode, p.stdout), (0, '7 True\n'), p.stderr)
        self.assertIn('installing cbtestlocal for %s (once: kept in ' % PYTHON, p.stderr)
        venvs = self.venvs()
        self.assertEqual(len(venvs), 1)
        t0 = time.monotonic()
        p = self.cellbox('run', '--libraries', 'cbtestlocal', '-c', code)
        second = time.monotonic() - t0
        self.assertEqual((p.returncode, p.stdout), (0, '7 True\n'), p.stderr)
        self.assertNotIn('installing', p.stderr)
        self.assertEqual(self.venvs(), venvs)
        print('\nfirst (venv + pip): %.2f s, second (cached): %.2f s' % (first, second))

    def test_wheelhouse_is_the_key(self):
        # Issue 24, class 8, locally: a clean wheelhouse after one whose wheel (same name and
        # version) carries a .pth file gets a venv of its own.
        poisoned = os.path.join(self.tmp, 'wheels-a')
        make_wheel(poisoned, 'cbtestlocal', '1.0', 7, extra={
            'cbtestlocal_hook.pth': b'import sys; sys.cellbox_poisoned = "from wheelhouse A"\n'})
        code = 'import sys\nprint(getattr(sys, "cellbox_poisoned", "clean"))'
        p = self.cellbox('run', '--libraries', 'cbtestlocal', '--wheelhouse', poisoned, '-c', code)
        self.assertEqual((p.returncode, p.stdout), (0, 'from wheelhouse A\n'), p.stderr)
        p = self.cellbox('run', '--libraries', 'cbtestlocal', '--wheelhouse', self.wheels, '-c',
                         code)
        self.assertEqual((p.returncode, p.stdout), (0, 'clean\n'), p.stderr)
        self.assertEqual(len(self.venvs()), 2)

    def test_errors(self):
        p = self.cellbox('run', '--libraries', 'pandas @ https://example.com/p.whl', '-c', 'pass')
        self.assertEqual(p.returncode, 2)
        self.assertIn("'pandas @ https://example.com/p.whl' is not a package requirement", p.stderr)
        p = self.cellbox('run', '--libraries', 'nosuchlocal', '--wheelhouse', self.wheels, '-c', 'pass')
        self.assertEqual(p.returncode, 5, p.stderr)
        self.assertIn('cannot install nosuchlocal (pip exited with 1):', p.stderr)
        self.assertIn('ERROR: No matching distribution found for nosuchlocal', p.stderr)
        self.assertEqual(self.venvs(), [])
        self.env['CELLBOX_LIBRARIES'] = 'ok, -bad'
        p = self.cellbox('run', '-c', 'pass')
        self.assertEqual(p.returncode, 2)
        self.assertIn("'-bad' is not a package requirement", p.stderr)


if __name__ == '__main__':
    unittest.main()
