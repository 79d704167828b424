"""The full-screen UI against what is not its own: hostile output and plot files, signals, a
terminal that goes away, output past the cap (tmux, as test_tui.py)."""
import fcntl
import os
import select
import shutil
import signal
import struct
import subprocess
import termios
import time
import unittest

from test_tui import BIN, BLOCK, Base, PYTHON, Tui


class SafetyTest(Base):
    def test_hostile_output(self):
        ui = self.start()
        title = ui.tmux('display', '-p', '#{pane_title}').strip()
        ui.run('print("\\x1b]0;HACKED\\x07\\x1b]52;c;aGFja2Vk\\x07\\x1b[2J\\x1b[H'
               '\\x1b[10;10Hmoved\\x1b[?1049l\\x1bc after")')
        ui.wait_for('moved after')
        s = ui.wait_for('In [1]: print(')               # nothing was cleared (once it is done)
        self.assertEqual(ui.tmux('display', '-p', '#{pane_title}').strip(), title)
        self.assertNotIn('HACKED', s.split('moved after')[1])
        self.assertIn('F1 help', s.split('\n')[29])       # the layout is intact
        buffers = ui.tmux('list-buffers')
        self.assertNotIn('hacked', buffers)
        ui.run('1 + 1')
        ui.wait_for('Out[2]: 2')

    def test_sigterm_cleans_up(self):
        ui = self.start()
        ui.run('x = 1')
        ui.wait_for('In [1]: x = 1')
        shell = int(ui.tmux('display', '-p', '#{pane_pid}').strip())
        pids = subprocess.run(['ps', '-o', 'pid=', '--ppid', str(shell)], capture_output=True,
                              text=True).stdout.split()
        self.assertEqual(len(pids), 1)
        os.kill(int(pids[0]), signal.SIGTERM)
        self.assertEqual(ui.exit_status(), 'exit=0')
        run_dir = os.path.join(self.tmp, 'run')
        self.assertEqual(os.listdir(run_dir) if os.path.isdir(run_dir) else [], [])

    def test_hostile_plot_files(self):
        # The kernel names a plot file: a symlink out of the channel, a FIFO and a hard link
        # are refused, and the UI neither hangs on the FIFO nor draws what the link points at.
        secret = os.path.join(self.tmp, 'secret.png')
        subprocess.run([PYTHON, '-c', 'import matplotlib; matplotlib.use("Agg"); '
                        'import matplotlib.pyplot as plt; plt.plot([1, 3, 2]); '
                        'plt.savefig(%r)' % secret], check=True, timeout=120)
        copy = os.path.join(self.tmp, 'run', 'secret-copy.png')
        # The runtime directory as the wall wants it (ours, 0700); the hard link's source
        # must be on the channel's file system.
        os.makedirs(os.path.dirname(copy), mode=0o700, exist_ok=True)
        shutil.copy(secret, copy)
        ui = self.start('--graphics', 'blocks')
        ui.run('import json, os, _cellbox_runner as r; d = r._S.plot_dir; '
               'os.symlink(%r, d + "/90.png"); os.mkfifo(d + "/91.png"); '
               'os.link(%r, d + "/92.png"); '
               '[os.write(r._S.out_fd, (json.dumps({"type": "display", "data": {}, '
               '"plot": {"index": n, "path": "plots/%%d.png" %% n, "format": "png", '
               '"width": 640, "height": 480}}) + "\\n").encode()) for n in (90, 91, 92)]; '
               'print("planted")' % (secret, copy))
        s = ui.wait_for("refused plot 'plots/92.png'")
        for n in (90, 91):              # the session refused each before the UI saw it
            self.assertIn("refused plot 'plots/%d.png'" % n, s)
        ui.run('1 + 1')
        s = ui.wait_for('Out[2]: 2')
        self.assertNotIn(BLOCK, s)      # nothing was drawn from the three files
        for n in (90, 91, 92):          # :save-plot copies none of them either: none is known
            ui.command('save-plot %d %s' % (n, os.path.join(self.tmp, 'saved.png')))
            ui.wait_for('save-plot: no plots yet')
        self.assertFalse(os.path.exists(os.path.join(self.tmp, 'saved.png')))
        ui.run('2 + 2')
        ui.wait_for('Out[3]: 4')

    def kill_tmux_server(self, ui):
        """The terminal goes away as when its tmux server is killed: the pty is gone at once."""
        shell = int(ui.tmux('display', '-p', '#{pane_pid}').strip())
        pid = int(subprocess.run(['ps', '-o', 'pid=', '--ppid', str(shell)], capture_output=True,
                                 text=True).stdout.split()[0])
        os.kill(int(ui.tmux('display', '-p', '#{pid}').strip()), signal.SIGKILL)
        self.ui = None
        return pid

    def assert_ends(self, pid, timeout=30):
        """The process `pid` (not our child) ends within `timeout` seconds; a zombie has."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                with open('/proc/%d/stat' % pid) as f:
                    if f.read().rsplit(')', 1)[1].split()[0] == 'Z':
                        return
            except FileNotFoundError:
                return
            time.sleep(0.1)
        os.kill(pid, signal.SIGKILL)
        self.fail('cellbox is still running %d s after its terminal went away' % timeout)

    def test_terminal_gone_mid_paste(self):
        # tmux killed while the UI waits for the end of a paste: the terminal hangs up under
        # it (poll says POLLHUP, reads fail); the UI must end, and the kernel with it.
        ui = self.start()
        ui.run('x = 1')
        ui.wait_for('In [1]: x = 1')
        ui.type('\x1b[200~half a paste')
        time.sleep(0.5)                                  # read, the UI waits for its end
        self.assert_ends(self.kill_tmux_server(ui))
        run_dir = os.path.join(self.tmp, 'run')
        self.assertEqual(os.listdir(run_dir) if os.path.isdir(run_dir) else [], [])

    def test_terminal_gone_without_sighup(self):
        # A pty that is not the UI's controlling terminal: when its other side closes, no
        # SIGHUP comes, only the hang-up on stdin, which must end the UI (not spin on it).
        master, slave = os.openpty()
        fcntl.ioctl(master, termios.TIOCSWINSZ, struct.pack('HHHH', 30, 100, 0, 0))
        env = Tui.environment(self.tmp, {'TERM': 'xterm-256color'})
        proc = subprocess.Popen([BIN, 'tui'], stdin=slave, stdout=slave, stderr=slave, env=env,
                                cwd=self.tmp, start_new_session=True)
        os.close(slave)
        out = b''
        try:
            deadline = time.monotonic() + 60
            while b'F1 help' not in out and time.monotonic() < deadline:
                if select.select([master], [], [], 0.1)[0]:
                    out += os.read(master, 65536)
            self.assertIn(b'F1 help', out)
            os.close(master)
            master = -1
            proc.wait(timeout=30)
        finally:
            if master >= 0:
                os.close(master)
            if proc.poll() is None:
                proc.kill()
                proc.wait()
                self.fail('cellbox is still running 30 s after its terminal went away')
        run_dir = os.path.join(self.tmp, 'run')
        self.assertEqual(os.listdir(run_dir) if os.path.isdir(run_dir) else [], [])

    def test_sigterm_mid_paste(self):
        # SIGTERM while the UI waits for the end of a paste still ends it.
        ui = self.start()
        ui.type('\x1b[200~half a paste')
        time.sleep(0.5)                                  # read, the UI waits for its end
        shell = int(ui.tmux('display', '-p', '#{pane_pid}').strip())
        pid = int(subprocess.run(['ps', '-o', 'pid=', '--ppid', str(shell)], capture_output=True,
                                 text=True).stdout.split()[0])
        os.kill(pid, signal.SIGTERM)
        self.assertEqual(ui.exit_status(), 'exit=0')

    def test_long_output_truncated(self):
        ui = self.start()
        ui.run('print("y" * 2_000_000)')
        ui.wait_for('[output truncated:', timeout=120)
        ui.run('3 + 3')
        ui.wait_for('Out[2]: 6')


if __name__ == '__main__':
    unittest.main()
