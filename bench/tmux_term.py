"""The terminal of the UI benchmarks (notebook.py, tui.py): a tmux server of their own, its
screen read as text; and the memory of a process in it."""
import subprocess
import time


class Term:
    def __init__(self, sock, env):
        self.sock = sock
        self.env = env

    def tmux(self, *args):
        return subprocess.run(['tmux', '-L', self.sock] + list(args), env=self.env,
                              capture_output=True, text=True, timeout=60).stdout

    def screen(self):
        return self.tmux('capture-pane', '-p')

    def wait(self, pred, timeout=60, poll=0.002):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            s = self.screen()
            if pred(s):
                return s
            time.sleep(poll)
        raise SystemExit('bench: timed out; the screen is:\n' + self.screen())

    def close(self):
        self.tmux('kill-server')


def rss_kb(pid):
    """The resident memory of process `pid` in kB (0 when it is gone)."""
    try:
        with open('/proc/%d/status' % pid) as f:
            for line in f:
                if line.startswith('VmRSS:'):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0
