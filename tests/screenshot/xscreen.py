"""What the screenshot tests share: the tools they need, a private X display (Xvfb), a
screenshot of its root window and the red pixels on it, and the TAP-like check printer."""
import os
import shutil
import subprocess


def missing():
    """The reason the screenshot tests cannot run here, or None."""
    for tool in ('Xvfb', 'xterm', 'xwd', 'convert'):
        if not shutil.which(tool):
            return '%s is not installed (scripts/bootstrap --tests)' % tool
    try:
        from PIL import Image  # noqa: F401
    except ImportError:
        return 'python3-pil is not installed'
    return None


def clean_env(tmp, python, **extra):
    """The environment for cellbox under test: none of ours leaks in, state under tmp."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith('CELLBOX_') and k not in ('TMUX', 'COLORTERM', 'NO_COLOR')}
    env.update(CELLBOX_PYTHON=python, CELLBOX_RUNTIME_DIR=os.path.join(tmp, 'run'),
               XDG_CONFIG_HOME=os.path.join(tmp, 'config'), **extra)
    return env


class Xvfb:
    """A 1024x768 X display of our own (Xvfb picks the number); `env` gets its DISPLAY."""

    def __init__(self, env):
        rfd, wfd = os.pipe()
        self.proc = subprocess.Popen(['Xvfb', '-displayfd', str(wfd), '-screen', '0',
                                      '1024x768x24', '-nolisten', 'tcp'], pass_fds=[wfd],
                                     stderr=subprocess.DEVNULL)
        os.close(wfd)
        display = b''
        try:
            while not display.endswith(b'\n'):
                chunk = os.read(rfd, 16)
                if not chunk:
                    self.close()
                    raise RuntimeError('Xvfb did not start')
                display += chunk
        finally:
            os.close(rfd)
        env['DISPLAY'] = ':' + display.decode().strip()

    def close(self):
        self.proc.kill()
        self.proc.wait()


def red_pixels(env, path):
    """Save a screenshot of the display to path; return the (x, y) of its pure red pixels."""
    xwd = subprocess.run(['xwd', '-root', '-silent'], env=env, capture_output=True, check=True)
    subprocess.run(['convert', 'xwd:-', path], input=xwd.stdout, check=True)
    from PIL import Image
    img = Image.open(path).convert('RGB')
    w, h = img.size
    px = img.load()
    return [(x, y) for y in range(h) for x in range(w)
            if px[x, y][0] > 200 and px[x, y][1] < 80 and px[x, y][2] < 80]


class Checks:
    """Prints 'ok - ...' or 'not ok - ...' per check and remembers whether all passed."""

    def __init__(self):
        self.ok = True

    def __call__(self, cond, what):
        print('%s - %s' % ('ok' if cond else 'not ok', what))
        self.ok = self.ok and bool(cond)
