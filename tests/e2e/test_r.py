"""The R kernel end to end through the cellbox executable: `run`, `repl`, `replay` of R percent
files and R notebooks, the history, a pool of R kernels, the full-screen UI (tmux)."""
import json
import os
import pty
import select
import shutil
import signal
import subprocess
import sys
import time
import unittest

from test_cli import BIN, Base
from test_pool import PoolTest, wait_for
import test_tui

RSCRIPT = os.environ.get('CELLBOX_TEST_RSCRIPT', '/usr/bin/Rscript')

if not os.access(RSCRIPT, os.X_OK):
    print('1..0 # SKIP no Rscript (Debian: apt-get install r-base-core r-cran-jsonlite)')
    sys.exit(77)

PERCENT_R = '''# ---
# jupyter:
#   kernelspec:
#     display_name: R
#     language: R
#     name: ir
# ---

# %% [markdown]
# # Squares

# %%
squares <- (1:5)^2
print(squares)

# %% tags=["raises-exception"]
stop("on purpose")

# %%
sum(squares)

# %%
plot(squares); hist(squares)
'''


class RBase(Base):
    def setUp(self):
        super().setUp()
        self.env['CELLBOX_RSCRIPT'] = RSCRIPT

    def write(self, name, text):
        path = os.path.join(self.tmp, name)
        with open(path, 'w') as f:
            f.write(text)
        return path


class RunTest(RBase):
    def test_values_streams_exit_codes(self):
        p = self.cellbox('run', '--kernel', 'r', '-c',
                         'x <- 1:3\nprint(x)\nx * 2\ninvisible(7)\nmessage("note")')
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stdout, '[1] 1 2 3\n[1] 2 4 6\n')
        self.assertEqual(p.stderr, 'note\n\n')          # as IRkernel writes a message
        p = self.cellbox('run', '--kernel', 'r', '-c', 'f <- function() stop("boom")\nf()')
        self.assertEqual(p.returncode, 1)
        self.assertIn('Error in f(): boom', p.stderr)
        self.assertNoChannelsLeft()

    def test_names_of_the_kernel(self):
        for args, env in ((['--lang', 'R'], {}), (['--kernel', 'ir'], {}),
                          ([], {'CELLBOX_KERNEL': 'r'})):
            self.env.update(env)
            p = self.cellbox('run', *args, '-c', 'R.version$language')
            self.assertEqual((p.returncode, p.stdout), (0, '[1] "R"\n'), (args, p.stderr))
            self.env.pop('CELLBOX_KERNEL', None)
        os.makedirs(os.path.join(self.tmp, 'config', 'cellbox'))
        self.write('config/cellbox/config', 'kernel = r\n')
        self.assertEqual(self.cellbox('run', '-c', 'TRUE').stdout, '[1] TRUE\n')
        self.assertIn('r', self.cellbox('config').stdout.split('kernel', 1)[1].split()[0])
        os.unlink(os.path.join(self.tmp, 'config', 'cellbox', 'config'))
        p = self.cellbox('run', '--kernel', 'cobol', '-c', '1')
        self.assertEqual(p.returncode, 2)
        self.assertIn("there is no kernel 'cobol' (there are: python, r, jupyter:NAME (an "
                      "installed kernelspec))", p.stderr)

    def test_policy_and_libraries_refused(self):
        # The policy reads Python: an R session under one does not start (exit 5, no kernel)
        # instead of running cells it cannot check; the same policy runs a Python cell.
        p = self.cellbox('run', '--kernel', 'r', '--policy', 'production', '-c', '1')
        self.assertEqual(p.returncode, 5, p.stderr)
        self.assertIn("the security policy 'production' reads Python code: it cannot check "
                      "the r kernel's cells (use --policy none with --kernel r)", p.stderr)
        p = self.cellbox('run', '--kernel', 'r', '--policy', 'none', '-c', '1')
        self.assertEqual((p.returncode, p.stdout), (0, '[1] 1\n'), p.stderr)
        p = self.cellbox('run', '--kernel', 'python', '--policy', 'production', '-c', '1')
        self.assertEqual((p.returncode, p.stdout), (0, '1\n'), p.stderr)
        path = self.write('p.R', 'cat(1)\n')
        p = self.cellbox('run', '--policy', 'production', path)      # .R picks R: refused too
        self.assertEqual(p.returncode, 5, p.stderr)
        # --libraries are pip packages: an error before any kernel starts
        p = self.cellbox('run', '--kernel', 'r', '--libraries', 'numpy', '-c', '1')
        self.assertNotEqual(p.returncode, 0)
        self.assertIn("libraries: 'numpy' are pip packages: the r kernel cannot take them",
                      p.stderr)
        self.assertNoChannelsLeft()

    def test_file_extension_picks_r(self):
        path = self.write('script.R', 'invisible(cat("from R", R.version$major, "\\n"))\n')
        p = self.cellbox('run', path)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertTrue(p.stdout.startswith('from R '), p.stdout)
        # a flag beats the file's name
        p = self.cellbox('run', '--kernel', 'python', path)
        self.assertEqual(p.returncode, 1)

    def test_json_plots_and_error(self):
        plots = os.path.join(self.tmp, 'plots')
        p = self.cellbox('run', '--kernel', 'r', '--json', '--plots', plots, '-c',
                         'plot(1:10)\ncat("done\\n")')
        r = json.loads(p.stdout)
        self.assertEqual((r['exit_code'], r['status'], r['stdout']), (0, 'ok', 'done\n'))
        self.assertEqual(len(r['plots']), 1)
        self.assertEqual((r['plots'][0]['width'], r['plots'][0]['height']), (840, 840))
        self.assertTrue(os.path.exists(os.path.join(plots, 'plot-1.png')))
        p = self.cellbox('run', '--kernel', 'r', '--json', '-c', 'stop("bad")')
        r = json.loads(p.stdout)
        self.assertEqual(r['exit_code'], 1)
        self.assertEqual((r['error']['ename'], r['error']['evalue']),
                         ('ERROR', 'Error in eval(expr, envir, enclos): bad\n'))

    def test_timeout_and_interrupt(self):
        p = self.cellbox('run', '--kernel', 'r', '--timeout', '1', '-c', 'repeat {}')
        self.assertEqual(p.returncode, 3, p.stderr)
        proc = subprocess.Popen([BIN, 'run', '--kernel', 'r', '-c',
                                 'cat("started\\n"); repeat {}'], env=self.env,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.assertEqual(proc.stdout.readline(), 'started\n')      # streamed, not at the end
        proc.send_signal(signal.SIGINT)
        self.assertEqual(proc.wait(30), 130)
        proc.stdout.close()
        proc.stderr.close()


class ReplTest(RBase):
    def test_pipe(self):
        cells = ('f <- function(x) {\n\n  x + 1\n}\n'   # a blank line does not end an R cell
                 'f(1)\n'
                 'y <- c(1,\n2)\n'
                 'y\n')
        p = self.cellbox('repl', '--kernel', 'r', stdin=cells)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stdout, '[1] 2\n[1] 1 2\n')
        p = self.cellbox('repl', '--kernel', 'r', stdin='stop("x")\n1\n')
        self.assertEqual(p.returncode, 1)
        self.assertEqual(p.stdout, '[1] 1\n')

    def test_tty_banner_completion_input(self):
        pid, fd = pty.fork()
        if pid == 0:
            os.execve(BIN, [BIN, 'repl', '--kernel', 'r'], self.env)
        out = b''

        def until(text, timeout=60, count=1):
            nonlocal out
            deadline = time.monotonic() + timeout
            while out.count(text.encode()) < count:
                if time.monotonic() > deadline:
                    raise AssertionError('%r not in %r' % (text, out))
                r, _, _ = select.select([fd], [], [], 0.2)
                if r:
                    try:
                        out += os.read(fd, 4096)
                    except OSError:
                        break
        try:
            until('Ctrl-D exits')
            self.assertIn(b': R ', out)
            until('In [')
            os.write(fd, b'long_name_here <- 5\r')
            until('2\x1b[0;32m]:')
            os.write(fd, b'long_name_h\t')                   # the kernel's completion
            until('long_name_here')
            os.write(fd, b'\r')
            until('[1] 5')
            until('In [\x1b[1m3')
            os.write(fd, b'answer <- readline("who? ")\r')   # readline() asks at the prompt
            # The prompt itself (the second 'who? ', after the echo): lines typed before the
            # cell runs arrive together, and the REPL takes such lines as one pasted cell.
            until('who? ', count=2)
            os.write(fd, b'R users\r')
            os.write(fd, b'answer\r')
            until('[1] "R users"')
            os.write(fd, b'\x04')
        finally:
            os.close(fd)
            os.waitpid(pid, 0)


class ReplayTest(RBase):
    def test_percent_file(self):
        src = self.write('squares.R', PERCENT_R)
        out_nb = os.path.join(self.tmp, 'squares.ipynb')
        p = self.cellbox('replay', src, '-o', out_nb)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn('[1]  1  4  9 16 25', p.stdout)
        self.assertIn('Error in eval(expr, envir, enclos): on purpose', p.stdout)
        self.assertIn('[1] 55', p.stdout)
        self.assertIn('4 cells run', p.stderr)
        with open(out_nb) as f:
            nb = json.load(f)
        self.assertEqual(nb['metadata']['kernelspec']['name'], 'ir')
        self.assertEqual(nb['metadata']['language_info']['name'], 'R')
        code = [c for c in nb['cells'] if c['cell_type'] == 'code']
        self.assertEqual(code[0]['outputs'][0]['text'], ['[1]  1  4  9 16 25\n'])
        self.assertEqual(code[1]['outputs'][0]['output_type'], 'error')
        self.assertEqual(code[2]['outputs'][0]['data']['text/plain'], ['[1] 55'])
        pngs = [o for o in code[3]['outputs'] if 'image/png' in o.get('data', {})]
        self.assertEqual(len(pngs), 2)
        # the notebook replays on R by itself and checks against its outputs
        p = self.cellbox('replay', '--check', out_nb)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertIn('outputs match', p.stderr)
        nb['cells'][3]['source'] = ['sum(squares) + 1']
        with open(out_nb, 'w') as f:
            json.dump(nb, f)
        p = self.cellbox('replay', '--check', out_nb)
        self.assertEqual(p.returncode, 6)

    def test_notebook_by_language_info(self):
        nb = {'cells': [{'cell_type': 'code', 'execution_count': None, 'id': 'a1',
                         'metadata': {}, 'outputs': [],
                         'source': ['x <- c(a = 1, b = 2)\n', 'x[["b"]]']}],
              'metadata': {'language_info': {'name': 'R'}}, 'nbformat': 4, 'nbformat_minor': 5}
        path = self.write('lang.ipynb', json.dumps(nb))
        p = self.cellbox('replay', path)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn('[1] 2', p.stdout)

    def test_recorded_session_replays_on_r(self):
        p = self.cellbox('repl', '--kernel', 'r', stdin='v <- 10\nv * 2\n')
        self.assertEqual(p.stdout, '[1] 20\n')
        export = os.path.join(self.tmp, 'session.ipynb')
        p = self.cellbox('history', 'export', export)
        self.assertEqual(p.returncode, 0, p.stderr)
        with open(export) as f:
            self.assertEqual(json.load(f)['metadata']['kernelspec']['name'], 'ir')
        session = os.listdir(os.path.join(self.tmp, 'state', 'cellbox', 'sessions'))[0]
        p = self.cellbox('replay', session)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn('[1] 20', p.stdout)


class RPoolTest(unittest.TestCase):
    # the pool tests' helpers (not their tests)
    tearDown, cellbox, serve, status = (PoolTest.tearDown, PoolTest.cellbox, PoolTest.serve,
                                        PoolTest.status)
    start_daemon = PoolTest.start_daemon

    def setUp(self):
        PoolTest.setUp(self)
        self.env['CELLBOX_RSCRIPT'] = RSCRIPT

    def test_pool_of_r_kernels(self):
        self.serve('--kernel', 'r', '--min', '2', '--max', '3', '--preimport', 'lattice',
                   ready=2)
        st = self.status()
        self.assertEqual(st['daemon']['kernel'], 'r')
        pids = set()
        for _ in range(3):
            p = self.cellbox('run', '--pool', '--kernel', 'r', '-c',
                             # the kernel's channel names it (its pid is 2 in its namespace)
                             'cat(basename(commandArgs(TRUE)[1]), '
                             '"package:lattice" %in% search(), "\\n")')
            self.assertEqual(p.returncode, 0, p.stderr)
            pid, preimported = p.stdout.split()
            self.assertEqual(preimported, 'TRUE')
            pids.add(pid)
            self.assertNotIn('note:', p.stderr)           # a pooled kernel, not a fresh one
        self.assertEqual(len(pids), 3)                    # never handed out twice
        # a client of the other language is told, before anything is leased
        p = self.cellbox('run', '--pool', '-c', '1')
        self.assertEqual(p.returncode, 5)
        self.assertIn('serves r kernels, not python', p.stderr)
        wait_for(lambda: len([k for k in self.status()['ready'] if k['alive']]) >= 2,
                 what='the pool refilled')


def sgr_looks(line):
    """(character, (fg, bg, bold)) for each character of a line tmux captured with -e."""
    looks, fg, bg, bold, i = [], None, None, False, 0
    while i < len(line):
        if line[i] != '\x1b':
            looks.append((line[i], (fg, bg, bold)))
            i += 1
            continue
        j = line.index('m', i)
        codes = [int(c) if c else 0 for c in line[i + 2:j].split(';')]
        i = j + 1
        k = 0
        while k < len(codes):
            c = codes[k]
            if c == 0:
                fg, bg, bold = None, None, False
            elif c == 1:
                bold = True
            elif c == 22:
                bold = False
            elif 30 <= c <= 37 or 90 <= c <= 97:
                fg = c
            elif c == 39:
                fg = None
            elif 40 <= c <= 47 or 100 <= c <= 107:
                bg = c
            elif c == 49:
                bg = None
            elif c in (38, 48) and k + 2 < len(codes) and codes[k + 1] == 5:
                if c == 38:
                    fg = ('256', codes[k + 2])
                else:
                    bg = ('256', codes[k + 2])
                k += 2
            k += 1
    return looks


class TuiTest(unittest.TestCase):
    def setUp(self):
        if not shutil.which('tmux'):
            self.skipTest('tmux is not installed (scripts/bootstrap --tests)')
        import tempfile
        self.tmp = tempfile.mkdtemp(prefix='cellbox-tui-r-')
        self.ui = None

    def tearDown(self):
        if self.ui:
            self.ui.close()
        shutil.rmtree(self.tmp, ignore_errors=True)

    def test_r_cells_highlighting_completion(self):
        self.ui = ui = test_tui.Tui(self.tmp, 'r', ['tui', '--kernel', 'r'],
                                    env_extra={'CELLBOX_RSCRIPT': RSCRIPT})
        ui.run('sq <- function(x) {')                 # incomplete: a new, indented line
        ui.wait_for('   ...:')
        ui.run('x^2')
        ui.run('}')
        ui.wait_for('In [1]: sq <- function(x) {')
        ui.type('s')
        ui.keys('q')
        ui.keys('Tab')
        ui.wait_for('sqrt')                     # R's completions of 'sq': sq, sqrt
        ui.type('(4)')
        ui.keys('Enter')
        ui.wait_for('[1] 16')                   # the value's text, not repr's markdown "16"
        # a data frame: its HTML table (repr's), with repr's caption and column types
        ui.run('data.frame(a = 1:2, b = c("x", "y"))')
        ui.wait_for('A data.frame: 2 × 2')
        self.assertRegex(ui.screen(), r'<int>\s+<chr>')
        # R's keywords and strings are coloured in the editor: 'function' differs from text
        ui.type('if (TRUE) x else "s" # c')
        ui.wait_for('if (TRUE) x else "s" # c')
        line = [l for l in ui.screen(escapes=True).splitlines() if '# c' in l][-1]
        looks = sgr_looks(line)
        text = ''.join(c for c, _ in looks)
        at = text.index('if (TRUE)')
        look = lambda k: looks[at + k][1]
        self.assertEqual(look(0), look(1))                # "if": one keyword
        self.assertNotEqual(look(0), look(3))             # "(" is text
        self.assertEqual(look(0), look(4))                # TRUE is a keyword too
        self.assertNotEqual(look(3), look(17))            # the string "s"
        self.assertNotEqual(look(17), look(21))           # the comment
        ui.keys('C-u')
        ui.keys('C-q')
        self.assertEqual(ui.exit_status(), 'exit=0')


if __name__ == '__main__':
    unittest.main()
