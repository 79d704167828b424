"""Issue 25, defects 7, 8 and 9 (the command line's part): the REPL's indent, `run --json`,
--plots, history export and list, pool status and fail-fast without a daemon, plurals.
Each test failed on the tree before its fix (the report of branch w25-cli says how)."""
import json
import os
import pty
import time
import unittest

from test_cli import BIN, Base, Pty
import mcp_base

RSCRIPT = os.environ.get('CELLBOX_TEST_RSCRIPT', '/usr/bin/Rscript')


class KernelPty(Pty):
    """The REPL on a pty with arguments (Pty runs `cellbox repl` alone)."""

    def __init__(self, env, *args):
        self.pid, self.fd = pty.fork()
        if self.pid == 0:
            os.execve(BIN, [BIN, 'repl', *args], env)
        self.buf = b''

    def prompt(self, n):
        return self.expect(r'In \[\x1b\[1m%d\x1b' % n)


def exported_cells(case):
    """The code of the newest recorded session's cells, through `history export`."""
    path = os.path.join(case.tmp, 'cells.ipynb')
    p = case.cellbox('history', 'export', path)
    case.assertEqual(p.returncode, 0, p.stderr)
    with open(path) as f:
        return [''.join(c['source']) for c in json.load(f)['cells']]


class ReplIndentTest(Base):
    def test_no_indent_after_a_block(self):
        # IPython's terminal pre-fills only continuation lines: a new cell after a block
        # starts empty (it began '    ' and 'x = 5' ran as '    x = 5': IndentationError).
        t = KernelPty(self.env)
        try:
            t.expect(r'IPython')
            for n in range(1, 13):      # up to In [13]: two digits
                t.prompt(n)
                t.send('%d\r' % n)
            t.prompt(13)
            t.send('for i in range(2):\r')
            # the continuation prompt is as wide as 'In [13]: ', the indent after it
            m = t.expect(r'\r\n(?:\r|\x1b\[\?2004[lh])*( *\.\.\.: )( *)')
            self.assertEqual(m.group(1), b' ' * (len('In [13]: ') - 5) + b'...: ')
            t.send('print(i * 7)\r')
            t.expect(r'\.\.\.: ')
            t.send('\r')                # a blank line ends the block
            t.expect(r'7\r\n')
            t.prompt(14)
            time.sleep(0.2)             # what the prompt is pre-filled with has come
            t.send('x = 5\r')
            t.prompt(15)
            t.send('x * 2\r')
            t.expect(r'Out\[15\]:.* 10')
            t.prompt(16)
            t.send('\x04')
            self.assertEqual(t.wait(), 0)
        finally:
            t.close()
        cells = exported_cells(self)
        # no pre-filled indent, no blank line of the block's end in the history
        self.assertEqual(cells[-3:], ['for i in range(2):\n    print(i * 7)', 'x = 5', 'x * 2'])

    @unittest.skipUnless(os.access(RSCRIPT, os.X_OK), 'no Rscript')
    def test_r_closer_dedents(self):
        # R's } typed on a pre-filled line takes the indent back (it stayed '  }').
        self.env['CELLBOX_RSCRIPT'] = RSCRIPT
        t = KernelPty(self.env, '--kernel', 'r')
        try:
            t.expect(r'Ctrl-D exits')
            t.prompt(1)
            t.send('f <- function(x) {\r')
            t.expect(r'\.\.\.: ')
            t.send('x + 1\r')
            t.expect(r'\.\.\.: ')
            time.sleep(0.2)
            t.send('}')
            time.sleep(0.3)             # typed, not pasted: no more input at once
            t.send('\r')
            t.prompt(2)
            t.send('f(41)\r')
            t.expect(r'\[1\] 42')
            t.prompt(3)
            t.send('\x04')
            self.assertEqual(t.wait(), 0)
        finally:
            t.close()
        self.assertEqual(exported_cells(self)[0], 'f <- function(x) {\n  x + 1\n}')


class RunJsonTest(Base):
    def run_json(self, *args):
        p = self.cellbox('run', '--json', *args)
        return p, json.loads(p.stdout)

    def test_no_colour_in_json(self):
        # stdout is a pipe: the JSON is for programs, as MCP's (it carried \x1b[0;31m ...).
        p, out = self.run_json('-c', 'import sys\nsys.stderr.write("\\x1b[31mred\\x1b[0m\\n")\n'
                               'print("\\x1b[1mkept\\x1b[0m")\n1/0')
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertIn('red\n', out['stderr'])
        self.assertIn('ZeroDivisionError', out['stderr'])
        self.assertNotIn('\x1b', out['stderr'])
        for line in out['error']['traceback']:
            self.assertNotIn('\x1b', line)
        self.assertTrue(any('ZeroDivisionError' in line for line in out['error']['traceback']))
        self.assertEqual(out['stdout'], '\x1b[1mkept\x1b[0m\n')     # stdout as printed

    def test_outcome_and_reason_always(self):
        # README and docs list `reason`; it was there only when the session stopped a cell.
        p, out = self.run_json('-c', 'pass')
        self.assertEqual((p.returncode, out['outcome']), (0, 'ok'))
        self.assertIn('reason', out)
        self.assertIsNone(out['reason'])
        p, out = self.run_json('-c', '1/0')
        self.assertEqual((out['exit_code'], out['outcome'], out['reason']), (1, 'error', None))
        p, out = self.run_json('--timeout', '0.5', '-c', 'while True: pass')
        self.assertEqual((out['exit_code'], out['outcome']), (3, 'timeout'))
        self.assertIsInstance(out['reason'], str)

    def test_plots_dir_with_slash(self):
        d = os.path.join(self.tmp, 'out') + '/'
        p, out = self.run_json('--plots', d, '-c',
                               'import matplotlib.pyplot as plt\nplt.plot([1, 2]); plt.show()')
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(out['plots'][0]['path'], d + 'plot-1.png')     # not out//plot-1.png
        self.assertTrue(os.path.isfile(d + 'plot-1.png'))
        p = self.cellbox('run', '--plots', d, '-c',
                         'import matplotlib.pyplot as plt\nplt.plot([1, 2]); plt.show()')
        self.assertIn('saved to %splot-1.png]' % d, p.stdout)

    def test_plots_path_is_a_file(self):
        # Found before the code runs (it was found when the first plot was saved).
        f = os.path.join(self.tmp, 'afile')
        marker = os.path.join(self.tmp, 'ran')
        open(f, 'w').close()
        p = self.cellbox('run', '--plots', f, '-c', 'open(%r, "w").close()' % marker)
        self.assertEqual(p.returncode, 2, p.stderr)
        self.assertIn('Not a directory', p.stderr)
        self.assertFalse(os.path.exists(marker), 'the code ran')
        script = os.path.join(self.tmp, 'cells.py')
        with open(script, 'w') as s:
            s.write('open(%r, "w").close()\n' % marker)
        p = self.cellbox('replay', '--plots', f, script)
        self.assertEqual(p.returncode, 2, p.stderr)
        self.assertFalse(os.path.exists(marker), 'the code ran')


class HistoryTest(Base):
    def test_export_by_extension(self):
        self.assertEqual(self.cellbox('run', '-c', 'x = 1').returncode, 0)
        txt = os.path.join(self.tmp, 'x.txt')
        p = self.cellbox('history', 'export', txt)
        self.assertEqual(p.returncode, 2)
        self.assertIn('FILE.ipynb', p.stderr)
        self.assertIn('FILE.py', p.stderr)
        self.assertFalse(os.path.exists(txt), 'written anyway (as percent format)')
        for name in ('x.py', 'x.R', 'x.ipynb'):
            p = self.cellbox('history', 'export', os.path.join(self.tmp, name))
            self.assertEqual(p.returncode, 0, p.stderr)

    def test_py_export_ends_with_newline(self):
        self.assertEqual(self.cellbox('repl', stdin='x = 1\nif x:\n    y = 2\n\n').returncode, 0)
        path = os.path.join(self.tmp, 'x.py')
        self.assertEqual(self.cellbox('history', 'export', path).returncode, 0)
        with open(path) as f:
            text = f.read()
        self.assertEqual(text, '# %%\nx = 1\n\n# %%\nif x:\n    y = 2\n')

    def test_unknown_session(self):
        self.assertEqual(self.cellbox('run', '-c', 'x = 1').returncode, 0)
        for args in (('list',), ('show', '1'), ('search', 'x')):
            p = self.cellbox('history', *args, '--session', 'nope')
            self.assertEqual(p.returncode, 2, args)
            self.assertIn("no recorded session 'nope'", p.stderr)
        self.assertEqual(self.cellbox('history', 'list').returncode, 0)


class PoolNoDaemonTest(Base):
    def test_status(self):
        for made in (False, True):
            if made:    # a pool a stopped daemon left behind
                os.makedirs(os.path.join(self.tmp, 'run', 'pool', 'default', 'ready'))
                for d in ('run', 'run/pool', 'run/pool/default', 'run/pool/default/ready'):
                    os.chmod(os.path.join(self.tmp, d), 0o700)
            p = self.cellbox('pool', 'status')
            self.assertEqual((p.returncode, p.stdout), (5, ''), made)
            self.assertIn('no pool daemon is running', p.stderr)
            p = self.cellbox('pool', 'status', '--json')
            self.assertEqual(p.returncode, 5, made)
            st = json.loads(p.stdout)
            self.assertIs(st['daemon_alive'], False)
            self.assertEqual((st['ready'], st['leased']), ([], []))

    def test_fail_fast(self):
        marker = os.path.join(self.tmp, 'ran')
        code = 'open(%r, "w").close()' % marker
        p = self.cellbox('run', '--pool', '--pool-strategy', 'fail-fast', '-c', code)
        self.assertEqual(p.returncode, 5, p.stderr)
        self.assertIn('no pool daemon serves', p.stderr)
        self.assertIn('fail-fast', p.stderr)
        self.assertFalse(os.path.exists(marker), 'a fresh kernel ran it')
        # the other strategies still fall back to a fresh kernel, and say so
        p = self.cellbox('run', '--pool', '--pool-strategy', 'wait', '-c', code)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn('no pool daemon serves', p.stderr)
        self.assertTrue(os.path.exists(marker))


class PluralTest(mcp_base.Base):
    def test_session_list_words(self):
        s = self.server()
        h = self.open(s)
        self.run_cell(s, h, 'import matplotlib.pyplot as plt\nplt.plot([1]); plt.show()')
        line = mcp_base.text(s.call('session_list'))
        self.assertIn('1 cell, 1 plot\n', line)     # was "1 cells, 1 plots"


if __name__ == '__main__':
    unittest.main()
