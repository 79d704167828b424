"""Terminal escapes from every source (issue 24, class 6), end to end on the real binary.

Text cellbox did not write reaches the terminal only through its sanitiser (engine/sanitize.h),
whatever its source: the kernel (an input() prompt, is_complete's indent, set_next_input,
completions, output in --json), a file (replay's echo, its progress bar, --check's diff, a
file name in an error), the history store (list, show, search, recall in the REPL). Each test
sends the same payload -- OSC 52 (a clipboard write), OSC 0 (a title change), CSI 6n (the
terminal would type its reply), CSI 2J, and the same as C1 controls U+009B / U+009D / U+009C --
and asserts what reaches the terminal has none of it: no OSC, DCS, APC, PM or SOS, none of the
payload's CSIs (the pty's other ESCs are cellbox's own and readline's), no ESC at all on a pipe,
no C1 control in either encoding, and valid UTF-8 (a raw 0x9b byte is not).
"""
import json
import os
import pty
import select
import subprocess
import time
import unittest

import test_tui
from test_cli import BIN, Base, Pty

# The payload as characters (for files, argv, the kernel's strings) and as Python source
# escapes (typed into the REPL, so what is typed is plain ASCII).
PAYLOAD = ('\x1b]52;c;ZXZpbA==\x07\x1b]0;pwned\x07\x1b[6n\x1b[2J'
           '\u009b6n\u009d0;pwned\u009c\u009b2J')
PAYLOAD_SRC = PAYLOAD.encode('unicode_escape').decode('ascii')


def problems(data, own_escapes=False):
    """What in `data` (bytes bound for a terminal) a terminal would act on and cellbox did
    not write; with own_escapes, ESCs other than the payload's are cellbox's and readline's."""
    found = []
    try:
        text = data.decode('utf-8')
    except UnicodeDecodeError as e:
        found.append('not UTF-8 at %d: %r' % (e.start, data[max(0, e.start - 20):e.end + 20]))
        text = data.decode('utf-8', 'replace')
    c1 = sorted({'U+%04X' % ord(c) for c in text if 0x80 <= ord(c) <= 0x9f})
    if c1:
        found.append('C1 controls ' + ', '.join(c1))
    if own_escapes:
        for seq in (b'\x1b]', b'\x1bP', b'\x1b_', b'\x1b^', b'\x1bX', b'\x1b[6n', b'\x1b[2J'):
            if seq in data:
                found.append('%r' % seq)
    elif b'\x1b' in data:
        i = data.index(b'\x1b')
        found.append('ESC: %r' % data[max(0, i - 20):i + 30])
    return found


class LoggedPty(Pty):
    """The REPL on a pty, keeping every byte it wrote (`log`, reset at will)."""
    log = b''

    def __init__(self, env):
        self.pid, self.fd = pty.fork()
        if self.pid == 0:
            try:
                os.execve(BIN, [BIN, 'repl'], env)
            finally:
                os._exit(127)  # never the test run again, in the child
        self.buf = b''

    @property
    def buf(self):
        return self._buf

    @buf.setter
    def buf(self, value):
        old = getattr(self, '_buf', b'')
        if len(value) > len(old) and value.startswith(old):
            self.log += value[len(old):]
        self._buf = value

    def drain(self, seconds):
        """Read what comes for `seconds`."""
        deadline = time.monotonic() + seconds
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                return
            r, _, _ = select.select([self.fd], [], [], left)
            if r:
                try:
                    data = os.read(self.fd, 65536)
                except OSError:
                    return
                if not data:
                    return
                self.buf += data


# A first cell that makes the runner answer one request kind with `reply` (the kernel is the
# attacker: its code can change how it answers), for the code `test` (on req) picks.
PATCH = ("import sys; rq = [m for m in list(sys.modules.values()) "
         "if isinstance(getattr(m, '_HANDLERS', None), dict)][0]; "
         "orig_{kind} = rq._HANDLERS['{kind}']; "
         "rq._HANDLERS['{kind}'] = lambda req: (rq._emit({reply}) or 'ok') "
         "if {test} else orig_{kind}(req)")
STARTS = "req.get('code', '').startswith('%s')"


class ReplEscapesTest(Base):
    def setUp(self):
        super().setUp()
        self.env.update(LANG='C.UTF-8', LC_ALL='C.UTF-8')

    def start(self):
        t = LoggedPty(self.env)
        t.expect(r'In \[.*1.*\]:', timeout=90)
        return t

    def finish(self, t):
        t.buf = b''
        t.send('\x03')  # clear the line, then end on an empty one
        t.expect(r'\^C\r\n')
        t.expect(r'In \[')
        t.send('\x04')
        self.assertEqual(t.wait(), 0)

    def assertClean(self, t, what):
        self.assertEqual(problems(t.log, own_escapes=True), [],
                         '%s reached the terminal raw: %r' % (what, t.log[-600:]))

    def test_input_prompt(self):
        t = self.start()
        try:
            t.log = b''
            t.send('name = input("%s" + "who" + "? ")\r' % PAYLOAD_SRC)
            t.expect(r'who\? ')
            t.send('Ada\r')
            t.expect(r'In \[.*2.*\]:')
            self.assertClean(t, "input()'s prompt")
            t.send('name.upper()\r')
            t.expect(r"'ADA'")
            t.expect(r'In \[.*3.*\]:')    # the cell is done: Ctrl-C clears, not interrupts
            self.finish(t)
        finally:
            t.close()

    def test_is_complete_indent(self):
        t = self.start()
        try:
            reply = "{'type': 'reply', 'status': 'incomplete', 'indent': '%s'}" % PAYLOAD_SRC
            t.send(PATCH.format(kind='is_complete', reply=reply, test=STARTS % 'if 1') + '\r')
            t.expect(r'In \[.*2.*\]:')
            t.log = b''
            t.send('if 1:\r')
            t.expect(r'\.\.\.: ')
            t.drain(1)
            self.assertClean(t, "is_complete's indent")
            self.finish(t)
        finally:
            t.close()

    def test_set_next_input(self):
        t = self.start()
        try:
            t.log = b''
            t.send("get_ipython().set_next_input('%sx = 1')\r" % PAYLOAD_SRC)
            t.expect(r'In \[.*2.*\]:')
            t.drain(1)
            self.assertIn(b'x = 1', t.log)  # the text is there, its controls are not
            self.assertClean(t, 'set_next_input')
            t.send('\r')  # run what was put there (Ctrl-C keeps it for the next prompt)
            t.expect(r'In \[.*3.*\]:')
            self.finish(t)
        finally:
            t.close()

    def test_completions(self):
        t = self.start()
        try:
            reply = ("{'type': 'reply', 'matches': ['zzA%s', 'zzB%s'], 'cursor_start': 0, "
                     "'cursor_end': 2}" % (PAYLOAD_SRC, PAYLOAD_SRC))
            t.send(PATCH.format(kind='complete', reply=reply, test=STARTS % 'zz') + '\r')
            t.expect(r'In \[.*2.*\]:')
            t.log = b''
            t.send('zz\t\t')
            t.drain(2)
            self.assertClean(t, 'completions')
            self.finish(t)
        finally:
            t.close()

    def test_history_recalled(self):
        # Code recorded by an earlier run comes back with Up: shown again on the terminal.
        p = self.cellbox('run', '-c', 'x = "%s"' % PAYLOAD)
        self.assertEqual(p.returncode, 0, p.stderr)
        t = self.start()
        try:
            t.log = b''
            t.send('\x1b[A')
            t.expect('pwned')
            t.drain(1)
            self.assertClean(t, 'a recalled cell')
            self.finish(t)
        finally:
            t.close()


class FileEscapesTest(Base):
    def run_pty_stderr(self, *args):
        """Run cellbox with stdout on a pipe and stderr on a pty (the progress bar draws)."""
        master, slave = pty.openpty()
        proc = subprocess.Popen([BIN, *args], stdout=subprocess.PIPE, stderr=slave,
                                env=self.env)
        os.close(slave)
        err = b''
        while True:
            r, _, _ = select.select([master], [], [], 120)
            self.assertTrue(r, 'no end: %r' % err[-500:])
            try:
                data = os.read(master, 65536)
            except OSError:
                data = b''
            if not data:
                break
            err += data
        out = proc.stdout.read()
        proc.stdout.close()
        proc.wait(timeout=60)
        os.close(master)
        return proc.returncode, out, err

    def test_replay_echo_and_progress(self):
        path = os.path.join(self.tmp, 'hostile.py')
        with open(path, 'w') as f:
            f.write('# %%%%\n# %s\nx = 1\n# %%%%\ny = "%s"; raise ValueError(1)\n'
                    % (PAYLOAD, PAYLOAD))
        rc, out, err = self.run_pty_stderr('replay', '--no-timing', path)
        self.assertEqual(rc, 1, err)
        self.assertIn(b'In [1]: # ', out)
        self.assertIn(b'[', err)  # the bar was drawn
        self.assertEqual(problems(out), [], 'the echo of the code: %r' % out)
        self.assertEqual(problems(err, own_escapes=True), [],
                         'the progress bar and the failure message: %r' % err)

    def test_history_list_show_search(self):
        p = self.cellbox('run', '-c', 'x = 1  # %s\nx' % PAYLOAD)
        self.assertEqual(p.returncode, 0, p.stderr)
        for args in (('list',), ('show', '1'), ('search', 'pwned')):
            p = subprocess.run([BIN, 'history', *args], capture_output=True, env=self.env,
                               timeout=60)
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertIn(b'pwned', p.stdout)
            self.assertEqual(problems(p.stdout + p.stderr), [],
                             'history %s: %r' % (args[0], p.stdout))

    def test_check_diff(self):
        nb = {'cells': [{'cell_type': 'code', 'execution_count': 1, 'id': 'a', 'metadata': {},
                         'source': 'print("now")',
                         'outputs': [{'output_type': 'stream', 'name': 'stdout',
                                      'text': 'stored %s\n' % PAYLOAD}]}],
              'metadata': {}, 'nbformat': 4, 'nbformat_minor': 5}
        path = os.path.join(self.tmp, 'stored.ipynb')
        with open(path, 'w') as f:
            json.dump(nb, f)
        p = subprocess.run([BIN, 'replay', '--check', path], capture_output=True,
                           env=self.env, timeout=120)
        self.assertEqual(p.returncode, 6, p.stderr)
        self.assertIn(b'- stored', p.stdout)
        self.assertEqual(problems(p.stdout + p.stderr), [], '--check: %r' % p.stdout)

    def test_file_name_in_an_error(self):
        p = subprocess.run([BIN, 'run', os.path.join(self.tmp, 'no%s.py' % PAYLOAD)],
                           capture_output=True, env=self.env, timeout=60)
        self.assertNotEqual(p.returncode, 0)
        self.assertIn(b'cannot read', p.stderr)
        self.assertEqual(problems(p.stderr), [], 'the message: %r' % p.stderr)

    def test_policy_check_quotes_code(self):
        # The verdict quotes the shell line (and how it reads it): C0 there is a blank already.
        p = subprocess.run([BIN, 'check', '-c', '!echo %s' % PAYLOAD],
                           capture_output=True, env=self.env, timeout=60)
        self.assertIn(b'read as os.system', p.stdout)
        self.assertEqual(problems(p.stdout + p.stderr), [], 'check: %r' % p.stdout)

    def test_json_output(self):
        # JSON escapes C0 (ESC); C1 controls are escaped too, and the JSON says the same.
        p = subprocess.run([BIN, 'run', '--json', '-c', 'print("%s")' % PAYLOAD_SRC],
                           capture_output=True, env=self.env, timeout=120)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(problems(p.stdout), [], 'run --json: %r' % p.stdout)
        self.assertEqual(json.loads(p.stdout)['stdout'], PAYLOAD + '\n')


class UiEscapesTest(test_tui.Base):
    """The full-screen UI draws through curses (controls shown as ^X), but what the kernel
    puts in the editor becomes the cell's code: it is sanitised on the way in too."""

    def test_set_next_input(self):
        # U+009B in the text would be kept and run: max('A\x9b') is U+009B, 155.
        ui = self.start()
        ui.run("get_ipython().set_next_input(\"print(ord(max('A\\x9b')) + 1000)\")")
        time.sleep(2)  # the text is in the editor
        ui.keys('Enter')
        s = self.wait_any(ui, '1065', '1155')
        self.assertIn('1065', s)  # 'A' alone: U+009B was dropped

    def wait_any(self, ui, *texts):
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            s = ui.screen()
            if any(t in s for t in texts):
                return s
            time.sleep(0.05)
        raise AssertionError('none of %r on the screen:\n%s' % (texts, ui.screen()))

    def test_is_complete_indent(self):
        # An indent holding U+009B would be taken into the line: an invalid character there.
        ui = self.start()
        reply = "{'type': 'reply', 'status': 'incomplete', 'indent': '    \\x9b'}"
        ui.run(PATCH.format(kind='is_complete', reply=reply, test="req.get('code') == 'if 1:'"))
        ui.wait_for('In [2]')
        ui.type('if 1:')
        ui.keys('Enter')
        ui.type('pass')
        ui.keys('Enter')
        s = self.wait_any(ui, 'Error')
        self.assertNotIn('non-printable', s)
        self.assertIn('expected an indented block', s)


if __name__ == '__main__':
    unittest.main()
