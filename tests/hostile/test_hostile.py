"""The channel as the sandbox's wall: a hostile kernel on the real dockerd and image.

Each case is one class of attack (README "Security"): the cell plays the attacker, as the
container's user, on whatever its channel lets it reach; the test looks from the host that no
host file changed, nothing leaked into JSON, plots or the history, and that the session said
what happened and went on (or restarted). Run one: test_hostile.py CASE. With
CELLBOX_TEST_RUNTIME=runsc the kernels run under gVisor. Without a daemon, the image or the
runtime, a case reports itself skipped (exit 77) with the reason; the runtime-directory case
needs root (it makes two local users).
"""
import base64
import glob
import json
import os
import pwd
import shutil
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import threading
import time
import unittest

BIN = os.environ.get('CELLBOX_BIN', 'cellbox')
PYTHON = os.environ.get('CELLBOX_TEST_PYTHON', '/usr/bin/python3')
RUNTIME = os.environ.get('CELLBOX_TEST_RUNTIME', '')
SKIP = 77

# What every attacking cell starts with: where its channel is, what it may write there, and
# the names the host would use next if ids could be guessed (as they could: 0000000001, ...).
PRELUDE = r'''
import os, sys, json, glob, stat, threading, time
import _cellbox_runner as R
CH = sys.argv[1]
def writable_dirs():
    out = []
    for root, dirs, files in os.walk(CH):
        if os.access(root, os.W_OK):
            out.append(root)
    return out
def next_ids(n=20):
    cur = R._S.req_id
    seq = int(cur[:10])
    rest = cur[10:]
    ids = []
    for k in range(1, n + 1):
        ids.append('%010d' % (seq + k))
        ids.append('%010d%s' % (seq + k, rest))
    return ids
def plant(path, how, target=None):
    try:
        if os.path.lexists(path):
            os.unlink(path)
    except OSError:
        pass
    try:
        if how == 'symlink':
            os.symlink(target, path)
        elif how == 'fifo':
            os.mkfifo(path)
        elif how == 'link':
            os.link(target, path)
        return True
    except OSError:
        return False
'''


def docker_skip_reason():
    """Why the docker cases cannot run here, or None."""
    host = os.environ.get('DOCKER_HOST', 'unix:///var/run/docker.sock')
    if not host.startswith('unix://'):
        return 'only a unix DOCKER_HOST is supported here'
    try:
        s = socket.socket(socket.AF_UNIX)
        s.settimeout(10)
        s.connect(host[len('unix://'):])
        s.sendall(b'GET /info HTTP/1.0\r\nHost: docker\r\n\r\n')
        data = b''
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
        s.close()
        info = json.loads(data.split(b'\r\n\r\n', 1)[1])
    except (OSError, ValueError, IndexError) as e:
        return 'no docker daemon at %s (%s)' % (host, e)
    if RUNTIME and RUNTIME not in (info.get('Runtimes') or {}):
        return 'dockerd has no runtime %r (configure it in /etc/docker/daemon.json)' % RUNTIME
    p = subprocess.run([BIN, 'run', '--backend', 'docker', '--help'], capture_output=True,
                       text=True)
    image = os.environ.get('CELLBOX_IMAGE') or ''
    if not image:
        for line in p.stdout.splitlines():
            if '--image' in line and 'default ' in line:
                image = line.split('default ', 1)[1].split(',')[0].rstrip(')').strip()
    try:
        s = socket.socket(socket.AF_UNIX)
        s.connect(host[len('unix://'):])
        s.sendall(('GET /images/%s/json HTTP/1.0\r\nHost: docker\r\n\r\n' % image).encode())
        head = s.recv(64)
        s.close()
    except OSError as e:
        return 'cannot ask dockerd about the image: %s' % e
    if b' 200 ' not in head:
        return 'no image %s (scripts/build-image builds it)' % image
    return None


def tree_bytes(path):
    """Bytes of disk the files below `path` take (st_blocks), across mounts, never following."""
    total = 0
    for root, dirs, files in os.walk(path):
        for name in dirs + files:
            try:
                total += os.lstat(os.path.join(root, name)).st_blocks * 512
            except OSError:
                pass
    return total


def files_containing(top, needle):
    """Files below `top` whose bytes contain `needle`."""
    hits = []
    for root, dirs, files in os.walk(top):
        for name in files:
            p = os.path.join(root, name)
            try:
                st = os.lstat(p)
                if not stat.S_ISREG(st.st_mode):
                    continue
                with open(p, 'rb') as f:
                    if needle in f.read():
                        hits.append(p)
            except OSError:
                pass
    return hits


class Base(unittest.TestCase):
    """A temporary home for one case: settings, a secret and a victim file of the host's."""
    backend = 'docker'

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix='cellbox-hostile-')
        os.chmod(self.tmp, 0o755)      # the victim files below are the host's, readable by root
        self.run_dir = os.path.join(self.tmp, 'run')
        self.state = os.path.join(self.tmp, 'state')
        env = {k: v for k, v in os.environ.items()
               if not k.startswith('CELLBOX_') and not k.startswith('SANDBOX_')}
        env.update(XDG_CONFIG_HOME=os.path.join(self.tmp, 'config'), XDG_STATE_HOME=self.state,
                   CELLBOX_RUNTIME_DIR=self.run_dir, CELLBOX_PYTHON=PYTHON, TERM='dumb',
                   CELLBOX_BACKEND=self.backend)
        if RUNTIME:
            env['CELLBOX_RUNTIME'] = RUNTIME
        for k in ('CELLBOX_IMAGE', 'DOCKER_HOST'):
            if os.environ.get(k):
                env[k] = os.environ[k]
        self.env = env
        # A root-only secret and a root-owned file an attack would overwrite and give away.
        self.secret = ('SECRET-%s' % base64.b32encode(os.urandom(10)).decode()).encode()
        self.secret_path = os.path.join(self.tmp, 'secret')
        with open(self.secret_path, 'wb') as f:
            f.write(self.secret + b'\n')
        os.chmod(self.secret_path, 0o600)
        self.victim = os.path.join(self.tmp, 'victim')
        with open(self.victim, 'w') as f:
            f.write('the host file, as it was\n')
        os.chmod(self.victim, 0o644)
        self.victim_stat = os.stat(self.victim)

    def tearDown(self):
        subprocess.run([BIN, 'gc', '--backend', self.backend], env=self.env,
                       capture_output=True)
        shutil.rmtree(self.tmp, ignore_errors=True)

    # -- helpers

    def cellbox(self, *args, stdin=None, timeout=180, env=None, allow_hang=False):
        """Run cellbox; a hang is a failure of the wall (it must never wait on the kernel).
        With `allow_hang`, a hang gives None (the caller checks other things first)."""
        try:
            return subprocess.run([BIN, *args], input=stdin, capture_output=True, text=True,
                                  env=env or self.env, timeout=timeout)
        except subprocess.TimeoutExpired as e:
            if allow_hang:
                return None
            self.fail('cellbox %s hung past %d s (stdout %r, stderr %r)'
                      % (' '.join(args)[:80], timeout, (e.stdout or b'')[-400:],
                         (e.stderr or b'')[-400:]))

    def repl(self, *cells, args=(), timeout=180, env=None, allow_hang=False):
        """Cells through `cellbox repl` on a pipe, each one line (a longer one is exec'd)."""
        text = ''.join((c if '\n' not in c.strip() else 'exec(%r)' % c).strip() + '\n\n'
                       for c in cells)
        return self.cellbox('repl', *args, stdin=text, timeout=timeout, env=env,
                            allow_hang=allow_hang)

    def attack(self, body):
        return PRELUDE + body

    def assertVictimIntact(self):
        st = os.lstat(self.victim)
        self.assertTrue(stat.S_ISREG(st.st_mode), 'the victim was replaced')
        with open(self.victim) as f:
            self.assertEqual(f.read(), 'the host file, as it was\n', 'the victim was written')
        self.assertEqual((st.st_uid, st.st_gid), (0, 0), 'the victim was given away (chown)')
        self.assertEqual(st.st_mode, self.victim_stat.st_mode, 'the victim changed mode')
        with open(self.secret_path, 'rb') as f:
            self.assertEqual(f.read(), self.secret + b'\n')

    def assertNoLeak(self, *texts, dirs=()):
        for t in texts:
            if isinstance(t, str):
                t = t.encode()
            self.assertNotIn(self.secret, t, 'the secret leaked into the output')
        for d in (self.state,) + tuple(dirs):
            self.assertEqual(files_containing(d, self.secret), [],
                             'the secret leaked into files of the host')

    def history_cells(self):
        cells = []
        for path in glob.glob(os.path.join(self.state, 'cellbox', 'sessions', '*',
                                           'history.jsonl')):
            with open(path) as f:
                cells += [json.loads(line) for line in f if line.strip()]
        return cells


class Hostile(Base):
    """The attacks a kernel in a container can make through its channel."""

    def test_symlinks_at_host_names(self):
        """Links (and hard links) at every name the host writes: no host file is written or
        given away. (Before: commands/<next id>.json.tmp -> a root file, chowned to 1000.)"""
        cell = self.attack(r'''
planted = 0
for d in writable_dirs():
    for i in next_ids():
        for suffix in ('.json.tmp', '.json', '.jsonl', '.input', '.input.tmp', '.1.input'):
            planted += plant(os.path.join(d, i + suffix), 'symlink', VICTIM)
    for name in ('ready.tmp', 'runner.py.tmp', 'container.tmp', 'exit_status', 'pid',
                 'log', 'ready', 'container', 'copy-in-0', 'copy-out-0'):
        planted += plant(os.path.join(d, name), 'symlink', VICTIM)
    own = os.path.join(d, 'own-file')
    try:
        open(own, 'w').write('mine')
        for i in next_ids(5):
            planted += plant(os.path.join(d, i + '.jsonl'), 'link', own)
    except OSError:
        pass
print('planted', planted)
'''.replace('VICTIM', repr(self.victim)))
        p = self.repl(cell, 'print("second")', '6 * 7', 'print("fourth")', 'print("fifth")',
                      args=('--copy-out', '/etc/hostname:%s' % os.path.join(self.tmp, 'out')),
                      timeout=120, allow_hang=True)
        self.assertVictimIntact()
        self.assertIsNotNone(p, 'the session hung')
        self.assertIn('second', p.stdout, p.stderr)
        self.assertIn('42', p.stdout)
        self.assertIn('fifth', p.stdout, p.stderr)

    def test_plot_links_and_fifos(self):
        """Plots that are links to host files, hard links, FIFOs, not PNGs: refused before they
        are copied anywhere (before: the secret went into --json, --plots and the history)."""
        out = os.path.join(self.tmp, 'plots')
        cell = self.attack(r'''
P = R._S.plot_dir
made = {
    90: plant(os.path.join(P, '90.png'), 'symlink', SECRET),
    91: plant(os.path.join(P, '91.png'), 'symlink', '/dev/zero'),
    92: plant(os.path.join(P, '92.png'), 'fifo'),
    93: plant(os.path.join(P, '93.png'), 'symlink', HOSTFIFO),
}
open(os.path.join(P, 'x'), 'w').write('not a png')
made[94] = plant(os.path.join(P, '94.png'), 'link', os.path.join(P, 'x'))
open(os.path.join(P, '95.png'), 'wb').write(b'\x89PNG\r\n\x1a\n' + b'\0' * 100)
for n in sorted(made) + [95]:
    R._emit({"type": "display", "data": {"text/plain": "forged %d" % n},
             "plot": {"index": n, "path": "plots/%d.png" % n, "format": "png",
                      "width": 1, "height": 1}})
R._emit({"type": "display", "data": {"text/plain": "escape"},
         "plot": {"index": 96, "path": "../../" + os.path.basename(SECRET)}})
import matplotlib.pyplot as plt
plt.plot([1, 2, 3]); plt.show()
print('planted', made)
'''.replace('SECRET', repr(self.secret_path)).replace('HOSTFIFO', repr(self.host_fifo())))
        p = self.cellbox('run', '--json', '--plots', out, '-c', cell, timeout=120)
        self.assertEqual(p.returncode, 0, p.stderr)
        o = json.loads(p.stdout)
        contents = [base64.b64decode(pl['content_base64']) for pl in o['plots']]
        self.assertNoLeak(p.stdout, p.stderr, *contents, dirs=(out,))
        self.assertIn('refused plot', o['stderr'] + p.stderr)
        # the real plot of the same cell came through, as a PNG
        self.assertEqual([c[:8] for c in contents], [b'\x89PNG\r\n\x1a\n'])
        self.assertVictimIntact()

    def test_artifact_links_fifos_oversized(self):
        """Artifacts (a file the cell saved) that are links to host files, FIFOs, hard links,
        past their cap or not what they say: refused by the wall's checks before anything
        copies them; a real savefig of the same cell comes through."""
        out = os.path.join(self.tmp, 'plots')
        cell = self.attack(r"""
P = R._S.plot_dir
made = {
    90: plant(os.path.join(P, '90.png'), 'symlink', SECRET),
    91: plant(os.path.join(P, '91.svg'), 'fifo'),
    92: plant(os.path.join(P, '92.html'), 'symlink', HOSTFIFO),
}
open(os.path.join(P, 'x'), 'w').write('<html>')
made[93] = plant(os.path.join(P, '93.pdf'), 'link', os.path.join(P, 'x'))
with open(os.path.join(P, '94.html'), 'wb') as f:
    f.truncate(100 << 20)                         # past an artifact's cap, and sparse
open(os.path.join(P, '95.png'), 'wb').write(b'\x89PNG\r\n\x1a\n' + b'\0' * 100)
exts = {90: 'png', 91: 'svg', 92: 'html', 93: 'pdf', 94: 'html', 95: 'png'}
for n in sorted(exts):
    R._emit({"type": "artifact", "index": n, "path": "plots/%d.%s" % (n, exts[n]),
             "format": exts[n], "width": 1, "height": 1, "name": "evil-%d" % n})
R._emit({"type": "artifact", "index": 96, "path": "../../" + os.path.basename(SECRET),
         "format": "png", "name": "escape"})
import matplotlib.pyplot as plt
plt.plot([1, 2, 3]); plt.savefig('real.png'); plt.close()
print('planted', made)
""".replace('SECRET', repr(self.secret_path)).replace('HOSTFIFO', repr(self.host_fifo())))
        p = self.cellbox('run', '--json', '--plots', out, '-c', cell, timeout=120)
        self.assertEqual(p.returncode, 0, p.stderr)
        o = json.loads(p.stdout)
        self.assertIn('planted', o['stdout'])
        contents = [base64.b64decode(pl['content_base64']) for pl in o['plots']]
        self.assertNoLeak(p.stdout, p.stderr, *contents, dirs=(out,))
        told = o['stderr'] + p.stderr
        self.assertEqual(told.count('refused artifact'), 7, told)
        # (a FIFO the sandbox made under gVisor stays inside it: the host finds no file)
        for why in ('symbolic link', 'has 2 links', 'over its cap', "kernel's plots/",
                    'does not exist' if RUNTIME else 'FIFO'):
            self.assertIn(why, told)
        self.assertNotIn('evil', p.stdout)
        # only the real savefig came through, as a PNG, and is the only file copied out
        self.assertEqual([(pl['format'], pl['width']) for pl in o['plots']], [('png', 640)])
        self.assertEqual([c[:8] for c in contents], [b'\x89PNG\r\n\x1a\n'])
        self.assertEqual(len(os.listdir(out)), 1, os.listdir(out))
        self.assertVictimIntact()

    def test_forged_events(self):
        """Events for requests not yet made, after done, malformed, oversized: never shown
        as another cell's output (before: 'PWNED' as the output of later cells, count 99)."""
        cell = self.attack(r'''
forged = 0
for i in next_ids():
    try:
        with open(os.path.join(R._S.res_dir, i + '.jsonl'), 'a') as f:
            f.write(json.dumps({"type": "stream", "name": "stdout", "text": "PWNED\n"}) + "\n")
            f.write(json.dumps({"type": "result", "execution_count": 99,
                                "data": {"text/plain": "'PWNED'"}}) + "\n")
            # the event types that act on other outputs or name files: bound the same way
            f.write(json.dumps({"type": "clear_output", "wait": False}) + "\n")
            f.write(json.dumps({"type": "artifact", "index": 1, "path": "plots/1.png",
                                "format": "png", "name": "PWNED.png"}) + "\n")
            f.write(json.dumps({"type": "done", "status": "ok", "execution_count": 99,
                                "duration": 0}) + "\n")
        forged += 1
    except OSError:
        pass
own = os.path.join(R._S.res_dir, R._S.req_id + '.jsonl')
with open(own, 'a') as f:
    f.write('{not json\n[1, 2]\n"a string"\n')
    f.write('{"type": "stream", "name": "stdout", "text": "' + 'x' * (33 << 20) + '"}\n')
def after_done():
    time.sleep(1)
    try:
        with open(own, 'a') as f:
            f.write(json.dumps({"type": "stream", "name": "stdout", "text": "PWNED late\n"}) + "\n")
            f.write(json.dumps({"type": "clear_output", "wait": False}) + "\n")
    except OSError:
        pass
threading.Thread(target=after_done).start()
print('forged', forged)
''')
        p = self.repl(cell, 'print("second")', 'import time; time.sleep(1.5); 6 * 7',
                      'print("fourth")')
        self.assertNotIn('PWNED', p.stdout)
        self.assertIn('second', p.stdout, p.stderr)
        self.assertIn('42', p.stdout)
        self.assertIn('fourth', p.stdout)
        self.assertEqual(p.stderr.count('skipped 3 malformed event lines'), 1, p.stderr)
        self.assertIn('dropped 1 event line', p.stderr)
        cells = self.history_cells()
        self.assertEqual(len(cells), 4, cells)
        self.assertEqual([c['execution_count'] for c in cells], [1, 2, 3, 4])
        self.assertNotIn('PWNED', json.dumps([c['outputs'] for c in cells]))
        self.assertNotIn('[artifact', p.stdout)
        # no forged or late clear_output took a later cell's output away
        self.assertIn('second', json.dumps(cells[1]['outputs']))
        self.assertIn('fourth', json.dumps(cells[3]['outputs']))

    def test_output_limit(self):
        """More output than a cell may send: a note, the cell interrupted, the next one runs."""
        env = dict(self.env, CELLBOX_OUTPUT_LIMIT='4m')
        p = self.repl('import sys\nwhile True: sys.stdout.write("y" * 65536)', 'print("next")',
                      env=env)
        self.assertIn('passed its limit of 4 MB', p.stderr)
        self.assertIn('the cell interrupted', p.stderr)
        self.assertIn('next', p.stdout, p.stderr)
        self.assertLess(p.stdout.count('y'), 8 << 20)

    def host_fifo(self):
        path = os.path.join(self.tmp, 'host-fifo')
        if not os.path.exists(path):
            os.mkfifo(path)
        return path

    def test_fifos_for_results(self):
        """A FIFO, a link to a host FIFO or to /dev/zero where results are read: the session
        never blocks (before: it hung, past --timeout)."""
        cell = self.attack(r'''
n = 0
for k, i in enumerate(next_ids(10)):
    p = os.path.join(R._S.res_dir, i + '.jsonl')
    n += plant(p, ('fifo', 'symlink', 'symlink')[k % 3], (None, '/dev/zero', HOSTFIFO)[k % 3])
own = os.path.join(R._S.res_dir, R._S.req_id + '.jsonl')
plant(own, 'symlink', '/dev/zero')
print('planted', n)
'''.replace('HOSTFIFO', repr(self.host_fifo())))
        p = self.repl(cell, 'print("after")', 'print("and after")', args=('--timeout', '10'),
                      timeout=120)
        self.assertIn('after', p.stdout, p.stderr)
        self.assertIn('and after', p.stdout, p.stderr)

    def test_results_made_ahead(self):
        """The next request's results and command files are made while a cell runs
        (engine/session_files.c): the kernel writes a forged done into the results file made
        ahead, then puts a FIFO, a link to /dev/zero and a link to a host FIFO in its place.
        The host reads only the file it made, never blocks, and the session goes on."""
        attacks = [r'''
own = R._S.req_id + '.jsonl'
ahead = [n for n in os.listdir(R._S.res_dir) if n != own and n.endswith('.jsonl')]
for n in ahead:
    with open(os.path.join(R._S.res_dir, n), 'a') as f:
        f.write('{"type":"stream","name":"stdout","text":"forged\\n"}\n'
                '{"type":"done","status":"ok","execution_count":99,"duration":0}\n')
print('ahead', len(ahead))
'''] + [r'''
own = R._S.req_id + '.jsonl'
for n in os.listdir(R._S.res_dir):
    if n != own:
        plant(os.path.join(R._S.res_dir, n), HOW, TARGET)
print('planted')
'''.replace('HOW', repr(how)).replace('TARGET', repr(target))
            for how, target in (('fifo', None), ('symlink', '/dev/zero'),
                                ('symlink', self.host_fifo()))]
        p = self.repl(*(self.attack(a) for a in attacks), 'print("after")',
                      'print("and after")', args=('--timeout', '10'), timeout=120)
        self.assertIn('ahead 1', p.stdout, p.stderr)    # one made ahead, as said
        self.assertIn('after', p.stdout, p.stderr)
        self.assertIn('and after', p.stdout, p.stderr)
        # each request got a results file of its own: none waited for an answer that could
        # not come (SESSION_REQUEST_TIMEOUT, then a restart)
        self.assertNotIn('restarted', p.stderr)
        self.assertVictimIntact()

    def test_disk_fill(self):
        """The kernel fills the host's disk through its channel: stopped at the quota, then a
        fresh kernel (before: 2 GB written to the host's disk)."""
        env = dict(self.env, CELLBOX_CHANNEL_QUOTA='64m')
        cell = self.attack(r'''
target = [d for d in writable_dirs()][-1]
block = b'x' * (4 << 20)
written = 0
try:
    with open(os.path.join(target, 'fill'), 'wb') as f:
        for i in range(100):
            f.write(block)
            f.flush()
            written += len(block)
            print('wrote', written >> 20, 'MB', flush=True)
except OSError as e:
    print('stopped:', e)
''')
        peak = [0]
        stop = threading.Event()

        def sample():
            while not stop.is_set():
                peak[0] = max(peak[0], tree_bytes(self.run_dir))
                time.sleep(0.02)
        t = threading.Thread(target=sample)
        t.start()
        try:
            p = self.repl(cell, 'print("alive after")', env=env, timeout=300)
        finally:
            stop.set()
            t.join()
        self.assertLess(peak[0], (64 + 8) << 20,
                        'the kernel took %d MB of the host disk' % (peak[0] >> 20))
        self.assertIn('channel quota exceeded', p.stderr, p.stdout)
        self.assertIn('alive after', p.stdout, p.stderr)

    def test_channel_removed(self):
        """The kernel removes (or moves) its channel: the session goes on or restarts (before:
        every later cell failed for good)."""
        cell = self.attack(r'''
import shutil, subprocess
shutil.rmtree(CH, ignore_errors=True)
subprocess.run(['rm', '-rf', CH], capture_output=True)
for d in writable_dirs():
    try:
        os.rename(d, d + '.moved')
    except OSError:
        pass
print('removed what it could')
''')
        p = self.repl(cell, 'print("alive-1")', 'x = 20', 'print("alive", x + 1)')
        self.assertIn('alive-1', p.stdout, p.stderr)
        self.assertIn('alive 21', p.stdout, p.stderr)

    def test_racing_renames(self):
        """A thread swaps the plot files for links to a host secret while the host reads them:
        what is checked is what is copied (before: read by name again, the secret leaked)."""
        out = os.path.join(self.tmp, 'plots')
        cell = self.attack(r'''
P = R._S.plot_dir
stop = False
def swap():
    k = 0
    while not stop:
        k += 1
        for n in range(1, 21):
            tmp = os.path.join(P, '.swap%d' % k)
            try:
                os.symlink(SECRET, tmp)
                os.replace(tmp, os.path.join(P, '%d.png' % n))
            except OSError:
                pass
t = threading.Thread(target=swap)
t.start()
import matplotlib.pyplot as plt
for n in range(20):
    plt.plot([0, n]); plt.show()
stop = True
t.join()
print('raced')
'''.replace('SECRET', repr(self.secret_path)))
        p = self.cellbox('run', '--json', '--plots', out, '-c', cell, timeout=180)
        self.assertEqual(p.returncode, 0, p.stderr)
        o = json.loads(p.stdout)
        contents = [base64.b64decode(pl['content_base64']) for pl in o['plots']]
        self.assertNoLeak(p.stdout, p.stderr, *contents, dirs=(out,))
        for c in contents:
            self.assertEqual(c[:8], b'\x89PNG\r\n\x1a\n')
        self.assertVictimIntact()

    def test_runtime_in_use(self):
        """The kernel runs under the runtime asked for (gVisor has a kernel of its own)."""
        p = self.cellbox('run', '-c', 'import os; print(os.uname().release)')
        self.assertEqual(p.returncode, 0, p.stderr)
        if RUNTIME == 'runsc':
            self.assertNotEqual(p.stdout.strip(), os.uname().release)
        else:
            self.assertEqual(p.stdout.strip(), os.uname().release)

    def test_killed_front_end_leaves_nothing(self):
        """SIGTERM of `repl`: its container and channel go; kill -9: `cellbox gc` removes
        both."""
        for sig in (signal.SIGTERM, signal.SIGKILL):
            proc = subprocess.Popen([BIN, 'repl'], stdin=subprocess.PIPE,
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=self.env)
            proc.stdin.write(b'print("up" + "now")\n\n')
            proc.stdin.flush()
            seen = b''
            t0 = time.monotonic()
            while b'upnow' not in seen and time.monotonic() - t0 < 120:
                seen += os.read(proc.stdout.fileno(), 4096)
            self.assertIn(b'upnow', seen)
            self.assertEqual(len(containers_of(proc.pid)), 1)
            proc.send_signal(sig)
            proc.wait(60)
            if sig == signal.SIGKILL:
                self.assertEqual(len(containers_of(proc.pid)), 1)
                g = self.cellbox('gc', '--backend', 'docker')
                self.assertEqual(g.returncode, 0, g.stderr)
            self.assertEqual(containers_of(proc.pid), [], 'a container left after %s' % sig)
            self.assertEqual(os.listdir(self.run_dir), [], 'a channel left after %s' % sig)


class PrivateDockerd:
    """A dockerd of the test's own (its own data, exec root and socket), so that restarting it
    disturbs no one else's containers. Its data stays between runs: the image is imported once
    (scripts/build-image, from the cached root file system)."""
    top = '/run/cellbox-test-dockerd'
    data = '/var/lib/cellbox-test-dockerd'

    def __init__(self, log_dir):
        self.sock = os.path.join(self.top, 'docker.sock')
        self.host = 'unix://' + self.sock
        self.log = os.path.join(log_dir, 'dockerd.log')
        self.conf = os.path.join(log_dir, 'daemon.json')
        with open(self.conf, 'w') as f:
            json.dump({}, f)
        self.proc = None

    def start(self):
        os.makedirs(self.top, exist_ok=True)
        with open(self.log, 'ab') as log:
            self.proc = subprocess.Popen(
                ['dockerd', '--config-file', self.conf, '--data-root', self.data,
                 '--exec-root', os.path.join(self.top, 'exec'), '--host', self.host,
                 '--pidfile', os.path.join(self.top, 'dockerd.pid'), '--bridge=none',
                 '--iptables=false', '--ip-masq=false', '--cgroup-parent', 'cellbox-test'],
                stdout=log, stderr=log)
        t0 = time.monotonic()
        while not self.answers():
            if self.proc.poll() is not None or time.monotonic() - t0 > 60:
                with open(self.log, errors='replace') as f:
                    raise unittest.SkipTest('a private dockerd does not start: ' + f.read()[-400:])
            time.sleep(0.1)

    def answers(self):
        try:
            s = socket.socket(socket.AF_UNIX)
            s.settimeout(2)
            s.connect(self.sock)
            s.sendall(b'GET /_ping HTTP/1.0\r\n\r\n')
            ok = b' 200 ' in s.recv(64)
            s.close()
            return ok
        except OSError:
            return False

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None

    def image(self):
        build = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', 'scripts',
                             'build-image')
        p = subprocess.run([build], env=dict(os.environ, DOCKER_HOST=self.host),
                           capture_output=True, text=True, timeout=900)
        if p.returncode != 0:
            raise unittest.SkipTest('no image in the private dockerd: ' + p.stderr[-400:])


class Dockerd(Base):
    """The engine itself goes away under a session."""

    def test_dockerd_restart(self):
        """dockerd restarts mid-session: the session says so, and the next cell runs on a
        fresh kernel (before: 'the kernel is not running' for every cell after)."""
        if os.geteuid() != 0:
            raise unittest.SkipTest('runs a dockerd of its own: needs root')
        d = PrivateDockerd(self.tmp)
        d.start()
        try:
            d.image()
            env = dict(self.env, DOCKER_HOST=d.host)
            proc = subprocess.Popen([BIN, 'repl'], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE, env=env)
            out = b''

            def until(text, timeout=120):
                nonlocal out
                t0 = time.monotonic()
                while text not in out and time.monotonic() - t0 < timeout:
                    chunk = os.read(proc.stdout.fileno(), 4096)
                    if not chunk:
                        break
                    out += chunk
                return text in out
            proc.stdin.write(b'x = 1\n\nprint("one", x)\n\nimport time; print("two"); time.sleep(60)\n\n')
            proc.stdin.flush()
            self.assertTrue(until(b'two'), out)
            d.stop()                      # under a running cell
            d.start()
            proc.stdin.write(b'print("three")\n\nprint("four")\n\n')
            proc.stdin.close()
            self.assertTrue(until(b'four'), out)
            err = proc.stderr.read().decode(errors='replace')
            proc.wait(60)
            self.assertIn(b'three', out, err)
            # It said what happened (dockerd stops its containers with SIGTERM, or the wait
            # connection is gone), and started a fresh kernel once dockerd was back.
            self.assertRegex(err, r'kernel (died|lost)')
            self.assertRegex(err, r'restarted it|restarting the kernel')
            self.assertNotIn('the kernel is not running', err)
        finally:
            subprocess.run([BIN, 'gc', '--backend', 'docker'], env=dict(self.env,
                           DOCKER_HOST=d.host), capture_output=True)
            d.stop()


def containers_of(pid):
    """The ids of containers labelled with cellbox pid `pid`."""
    host = os.environ.get('DOCKER_HOST', 'unix:///var/run/docker.sock')[len('unix://'):]
    filt = json.dumps({'label': ['org.cellbox.pid=%d' % pid]})
    s = socket.socket(socket.AF_UNIX)
    s.connect(host)
    s.sendall(('GET /containers/json?all=1&filters=%s HTTP/1.0\r\nHost: docker\r\n\r\n'
               % __import__('urllib.parse').parse.quote(filt)).encode())
    data = b''
    while True:
        chunk = s.recv(65536)
        if not chunk:
            break
        data += chunk
    s.close()
    return [c['Id'] for c in json.loads(data.split(b'\r\n\r\n', 1)[1])]


class Local(Base):
    """What is about the local backend (no container): its runtime directory, its children."""
    backend = 'local'

    def test_requests_answered(self):
        """A kernel that never answers the host's own requests (the REPL asks is_complete
        before each cell): interrupted, then killed and restarted after 30 s, and the session
        goes on (before: the REPL waited for ever)."""
        cell = self.attack(r'''
R._HANDLERS['is_complete'] = lambda req: time.sleep(3600)
print('deaf')
''')
        t0 = time.monotonic()
        p = self.repl(cell, 'print("after")', timeout=120)
        self.assertIn('deaf', p.stdout, p.stderr)
        self.assertIn('did not answer within 30 s', p.stderr)
        self.assertIn('it was killed and restarted', p.stderr)
        self.assertIn('after', p.stdout, p.stderr)
        self.assertLess(time.monotonic() - t0, 110)

    def test_children_die_with_the_kernel(self):
        """A kernel's children in a session of their own die with it (close, kill -9)."""
        code = ("import subprocess\n"
                "p = subprocess.Popen(['setsid', 'sleep', '%s'])\n"
                "print('child started')\n")
        for sig in (None, signal.SIGKILL):
            marker = '%d.%06d' % (1000 + (sig or 0), os.getpid() % 1000000)
            if sig is None:
                p = self.cellbox('run', '-c', code % marker)
                self.assertIn('child started', p.stdout, p.stderr)
            else:
                proc = subprocess.Popen([BIN, 'repl'], stdin=subprocess.PIPE,
                                        stdout=subprocess.PIPE, env=self.env)
                proc.stdin.write(('exec(%r)\n\n' % (code % marker)).encode())
                proc.stdin.flush()
                seen = b''
                while b'child started' not in seen:
                    chunk = os.read(proc.stdout.fileno(), 4096)
                    if not chunk:
                        break
                    seen += chunk
                self.assertIn(b'child started', seen)
                t0 = time.monotonic()
                while not sleepers(marker) and time.monotonic() - t0 < 10:
                    time.sleep(0.02)     # (setsid execs sleep after Popen returned)
                self.assertTrue(sleepers(marker))
                proc.kill()
                proc.wait()
                g = self.cellbox('gc')
                self.assertEqual(g.returncode, 0, g.stderr)
                self.assertEqual(os.listdir(self.run_dir), [], 'gc left the channel')
            t0 = time.monotonic()
            while sleepers(marker) and time.monotonic() - t0 < 10:
                time.sleep(0.05)
            self.assertEqual(sleepers(marker), [], 'the setsid child outlived its kernel')

    def test_runtime_dir_of_another_user(self):
        """/dev/shm/cellbox-UID and /tmp/cellbox-UID (the defaults without XDG_RUNTIME_DIR)
        made first by another local user: refused, never used (before: the other user's
        runner.py ran as the victim)."""
        if os.geteuid() != 0:
            raise unittest.SkipTest('makes two local users: needs root')
        victim = ensure_user('cellbox-victim')
        attacker = ensure_user('cellbox-attacker')
        roots = ['/tmp/cellbox-%d' % victim.pw_uid]
        if os.path.isdir('/dev/shm'):
            roots.append('/dev/shm/cellbox-%d' % victim.pw_uid)
        for root in roots:
            shutil.rmtree(root, ignore_errors=True)
        home = os.path.join(self.tmp, 'victim-home')
        os.makedirs(home)
        os.chown(home, victim.pw_uid, victim.pw_gid)
        marker = os.path.join(self.tmp, 'pwned')
        evil = os.path.join(self.tmp, 'evil')
        os.makedirs(evil)
        os.chmod(evil, 0o777)
        with open(os.path.join(self.tmp, 'evil-runner.py'), 'w') as f:
            f.write('import os\nopen(%r, "w").write("ran as uid %%d" %% os.getuid())\n' % marker)
        os.chmod(self.tmp, 0o777)
        os.chmod(os.path.join(self.tmp, 'evil-runner.py'), 0o644)
        # The other user makes the directory first, and swaps every new channel in it for a
        # directory of theirs whose runner.py is theirs.
        thieves = [subprocess.Popen(
            ['setpriv', '--reuid', str(attacker.pw_uid), '--regid', str(attacker.pw_gid),
             '--clear-groups', PYTHON, '-c', THIEF, root, evil,
             os.path.join(self.tmp, 'evil-runner.py')],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE) for root in roots]
        try:
            for root in roots:
                t0 = time.monotonic()
                while not os.path.isdir(root) and time.monotonic() - t0 < 10:
                    time.sleep(0.01)
                self.assertEqual(os.stat(root).st_uid, attacker.pw_uid)
            env = {k: v for k, v in self.env.items()
                   if k not in ('CELLBOX_RUNTIME_DIR', 'XDG_RUNTIME_DIR')}
            env.update(HOME=home, XDG_STATE_HOME=os.path.join(home, 'state'),
                       XDG_CONFIG_HOME=os.path.join(home, 'config'))
            refused = 0
            for _ in range(20):
                p = subprocess.run(['setpriv', '--reuid', str(victim.pw_uid), '--regid',
                                    str(victim.pw_gid), '--clear-groups', BIN, 'run', '-c',
                                    'print(1)'], capture_output=True, text=True, env=env,
                                   timeout=60)
                if os.path.exists(marker):
                    with open(marker) as f:
                        self.fail("the other user's code ran: " + f.read())
                if p.returncode == 5 and 'belongs to uid %d' % attacker.pw_uid in p.stderr:
                    refused += 1
            self.assertEqual(refused, 20, p.stderr + p.stdout)
            self.assertIn("refusing to use it", p.stderr)
        finally:
            for thief in thieves:
                thief.kill()
                thief.wait()
            for root in roots:
                shutil.rmtree(root, ignore_errors=True)


THIEF = r'''
import ctypes, os, struct, sys, time
root, evil, runner = sys.argv[1:4]
data = open(runner).read()
os.mkdir(root, 0o777)
os.chmod(root, 0o777)
libc = ctypes.CDLL(None, use_errno=True)
fd = libc.inotify_init1(0)
libc.inotify_add_watch(fd, root.encode(), 0x100)          # IN_CREATE
n = 0
while True:
    buf = os.read(fd, 65536)
    off = 0
    while off < len(buf):
        wd, mask, cookie, ln = struct.unpack_from('iIII', buf, off)
        name = buf[off + 16:off + 16 + ln].rstrip(b'\0').decode()
        off += 16 + ln
        if not name or name.startswith('.'):
            continue
        n += 1
        mine = os.path.join(evil, 'c%d' % n)
        os.mkdir(mine)
        os.chmod(mine, 0o777)         # the victim makes its directories in it, as ever
        try:
            os.rename(os.path.join(root, name), os.path.join(root, '.stolen%d' % n))
            os.symlink(mine, os.path.join(root, name))
        except OSError:
            continue
        # Keep our runner.py there, whatever the victim writes in its place, for a while.
        t_end = time.monotonic() + 3
        while time.monotonic() < t_end:
            for rel in ('runner.py', 'host/runner.py'):
                p = os.path.join(mine, rel)
                try:
                    with open(p + '.x', 'w') as f:
                        f.write(data)
                    os.replace(p + '.x', p)
                except OSError:
                    pass
            time.sleep(0.0002)
'''


def ensure_user(name):
    try:
        return pwd.getpwnam(name)
    except KeyError:
        subprocess.run(['useradd', '--system', '--no-create-home', '--shell', '/bin/false',
                        name], check=True)
        return pwd.getpwnam(name)


def sleepers(marker):
    """Pids of `sleep MARKER` processes."""
    pids = []
    for d in os.listdir('/proc'):
        if d.isdigit():
            try:
                with open('/proc/%s/cmdline' % d, 'rb') as f:
                    if f.read().split(b'\0')[:2] == [b'sleep', marker.encode()]:
                        pids.append(int(d))
            except OSError:
                pass
    return pids


def main(argv):
    cases = {n[len('test_'):]: cls for cls in (Hostile, Local, Dockerd) for n in cls.__dict__
             if n.startswith('test_')}
    case = argv[1] if len(argv) > 1 else None
    if case and case not in cases:
        print('no case %r (cases: %s)' % (case, ', '.join(sorted(cases))))
        return 2
    if any(cls in (Hostile, Dockerd) for n, cls in cases.items() if case in (None, n)):
        why = docker_skip_reason()
        if why:
            print('SKIP: ' + why)
            return SKIP
    suite = unittest.TestSuite()
    for n, cls in sorted(cases.items()):
        if case in (None, n):
            suite.addTest(cls('test_' + n))
    r = unittest.TextTestRunner(verbosity=2).run(suite)
    if r.testsRun and len(r.skipped) == r.testsRun:
        return SKIP
    return 0 if r.wasSuccessful() else 1


if __name__ == '__main__':
    sys.exit(main(sys.argv))
