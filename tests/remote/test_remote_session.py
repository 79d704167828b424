"""Sessions on a remote engine: the test engine of scripts/test-engine (a second dockerd in a
mount namespace of its own: it cannot see this host's files, so no channel directory can be
shared with its containers) reached over TLS and over ssh. Every command that starts a kernel
runs there with --docker-host, the channel going over the relay's stream (the `channel`
setting's auto): state, plots, files copied in and out, input, interrupts, timeouts, a kernel
that dies, and the shared channel refused by the engine (the proof that it is remote).

    python3 tests/remote/test_remote_session.py [TlsSession.test_repl ...]
"""
import json
import os
import queue
import signal
import subprocess
import sys
import tempfile
import threading
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'e2e'))
from test_remote import OURS, engine, skip_reason  # noqa: E402

BIN = os.environ.get('CELLBOX_BIN', os.path.join(os.path.dirname(__file__), '..', '..', 'build',
                                                 'tui', 'cellbox'))
PLOT = ('import matplotlib.pyplot as plt, os\n'
        'plt.plot([1, 3, 2]); plt.show()\n'
        'print("cwd", os.getcwd())\n')


class Repl:
    """A `cellbox repl` reading cells from a pipe, its output read by a thread."""

    def __init__(self, env, *args):
        self.p = subprocess.Popen([BIN, 'repl', *args], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env)
        self.q = queue.Queue()
        self.out = b''
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for chunk in iter(lambda: self.p.stdout.read1(65536), b''):
            self.q.put(chunk)
        self.q.put(None)

    def send(self, line):
        self.p.stdin.write(line.encode() + b'\n')
        self.p.stdin.flush()

    def expect(self, what, timeout=120):
        deadline = time.monotonic() + timeout
        while what.encode() not in self.out:
            try:
                chunk = self.q.get(timeout=max(0.1, deadline - time.monotonic()))
            except queue.Empty:
                chunk = b''
            if chunk is None or time.monotonic() > deadline:
                raise AssertionError('no %r in %r' % (what, self.out[-2000:]))
            self.out += chunk
        at = self.out.index(what.encode()) + len(what)
        seen, self.out = self.out[:at], self.out[at:]
        return seen.decode(errors='replace')

    def close(self):
        try:
            self.p.stdin.close()
        except OSError:
            pass
        try:
            self.p.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.p.kill()
            self.p.wait()
        return self.p.returncode


class Remote:
    """The cases, over one way to the engine (a subclass says which: host())."""

    def setUp(self):
        why = skip_reason()
        if why:
            self.skipTest(why)
        e = engine()
        self.tmp = tempfile.mkdtemp(prefix='cellbox-remote-')
        env = {k: v for k, v in os.environ.items()
               if k not in OURS and not k.startswith('CELLBOX_')}
        env.update(XDG_CONFIG_HOME=os.path.join(self.tmp, 'config'),
                   XDG_STATE_HOME=os.path.join(self.tmp, 'state'), TERM='dumb',
                   CELLBOX_BACKEND='docker', DOCKER_CONFIG=os.path.join(self.tmp, 'docker'))
        env.update(self.transport(e))
        self.env = env
        self.host = self.docker_host(e)

    def cellbox(self, *args, timeout=180, stdin=None):
        return subprocess.run([BIN, *args], env=self.env, capture_output=True, text=True,
                              timeout=timeout, input=stdin)

    def test_run_plot_files(self):
        """One-shot: a plot, a file copied in and one copied out, the working directory."""
        src = os.path.join(self.tmp, 'in.txt')
        dst = os.path.join(self.tmp, 'out.txt')
        plots = os.path.join(self.tmp, 'plots')
        with open(src, 'w') as f:
            f.write('from the host\n')
        p = self.cellbox('run', '--docker-host', self.host, '--plots', plots,
                         '--copy-in', src + ':/home/cellbox/in.txt',
                         '--copy-out', '/home/cellbox/out.txt:' + dst, '-c',
                         PLOT + 'open("out.txt", "w").write(open("in.txt").read().upper())\n')
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn('cwd /home/cellbox', p.stdout)
        with open(os.path.join(plots, 'plot-1.png'), 'rb') as f:
            self.assertEqual(f.read(8), b'\x89PNG\r\n\x1a\n')
        with open(dst) as f:
            self.assertEqual(f.read(), 'FROM THE HOST\n')

    def test_shared_channel_cannot_work(self):
        """The engine cannot see this host's channel: a shared one fails to start, and says
        why; the stream (auto) is what works."""
        p = self.cellbox('run', '--docker-host', self.host, '--channel', 'shared',
                         '--startup-timeout', '20', '-c', 'print("reached")', timeout=120)
        self.assertNotEqual(p.returncode, 0, p.stdout)
        self.assertNotIn('reached', p.stdout)
        p = self.cellbox('run', '--docker-host', self.host, '-c', 'print("reached")')
        self.assertEqual((p.returncode, p.stdout.strip()), (0, 'reached'), p.stderr)

    def test_repl(self):
        """State across cells, input, an interrupt, a timeout, a kernel that dies."""
        # The grace after the timeout's interrupt is the kernel's time to answer over the
        # stream; under a loaded machine the default 2 s was seen not to be enough.
        r = Repl(dict(self.env, CELLBOX_INTERRUPT_GRACE='10'), '--docker-host', self.host,
                 '--timeout', '8')
        try:
            r.send('x = 41')
            r.send('print("x is", x + 1)')
            r.expect('x is 42')
            r.send('name = input("who? ")')
            r.expect('who?')
            r.send('remote')
            r.send('print("hello", name)')
            r.expect('hello remote')
            r.send('import time; print("sleeping", flush=True); time.sleep(60)')
            r.expect('sleeping')
            time.sleep(0.5)
            r.p.send_signal(signal.SIGINT)
            r.expect('KeyboardInterrupt')
            r.send('print("still", x)')
            r.expect('still 41')
            r.send('while True: pass')
            r.expect('timeout')
            r.send('print("after the timeout", x)')
            r.expect('after the timeout 41')
            r.send('import os, signal; os.kill(os.getpid(), signal.SIGKILL)')
            r.expect('kernel died')
            r.send('print("alive again")')
            r.expect('alive again')
        finally:
            r.close()

    def test_replay(self):
        """A cell file replayed on the remote engine, its notebook written here."""
        cells = os.path.join(self.tmp, 'cells.py')
        nb = os.path.join(self.tmp, 'cells.ipynb')
        with open(cells, 'w') as f:
            f.write('# %%\nx = 6\n# %%\nprint(x * 7)\n# %%\n' + PLOT)
        p = self.cellbox('replay', '--docker-host', self.host, '-o', nb, cells)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn('42', p.stdout)
        with open(nb) as f:
            outs = [o for c in json.load(f)['cells'] for o in c.get('outputs', [])]
        self.assertTrue(any('image/png' in o.get('data', {}) for o in outs), outs)

    def test_tui(self):
        """The full-screen UI (in tmux) on the remote engine: a cell, its output, the round
        trip to the sandbox in the status line, a clean quit."""
        from test_tui import Tui
        extra = dict(self.transport(engine()), DOCKER_CONFIG=os.path.join(self.tmp, 'docker'),
                     CELLBOX_BACKEND='docker')
        ui = Tui(self.tmp, type(self).__name__, ['tui', '--docker-host', self.host],
                 env_extra=extra)
        try:
            ui.wait_for('docker', ' ms \u2502')
            ui.run('x = 6 * 7; print("answer", x)')
            ui.wait_for('answer 42')
            ui.run('import os; print("cwd", os.getcwd())')
            ui.wait_for('cwd /home/cellbox')
            ui.quit()
            self.assertEqual(ui.exit_status(), 'exit=0')
        finally:
            ui.close()

    def test_mcp(self):
        """The MCP server on the remote engine: execute_code in a fresh sandbox, and a session
        whose state is kept between session_run calls."""
        from mcp_base import Server, text
        s = Server(self.env, '--docker-host', self.host)
        try:
            s.initialize()
            r = s.call('execute_code', {'code': 'import os; print(6 * 7, os.getcwd())'},
                       timeout=180)
            self.assertIn('42 /home/cellbox', text(r))
            h = s.call('session_open', {'backend': 'docker'}, timeout=180)
            handle = h['structuredContent']['handle']
            r = s.call('session_run', {'handle': handle, 'code': 'y = 20'}, timeout=180)
            self.assertFalse(r.get('isError'), r)
            r = s.call('session_run', {'handle': handle, 'code': 'print(y + 22)'}, timeout=180)
            self.assertIn('42', text(r))
        finally:
            s.close()


class TlsSession(Remote, unittest.TestCase):
    """DOCKER_HOST=tcp://127.0.0.1:PORT with DOCKER_TLS_VERIFY and the client certificate."""

    def transport(self, e):
        return {k: e[k] for k in ('DOCKER_TLS_VERIFY', 'DOCKER_CERT_PATH')}

    def docker_host(self, e):
        return e['DOCKER_HOST']


class SshSession(Remote, unittest.TestCase):
    """ssh://root@127.0.0.1:PORT through `ssh ... docker system dial-stdio` (the test key)."""

    def transport(self, e):
        return {'CELLBOX_SSH_CONFIG': e['CELLBOX_SSH_CONFIG']}

    def docker_host(self, e):
        return e['CELLBOX_TEST_SSH_HOST']


if __name__ == '__main__':
    unittest.main()
