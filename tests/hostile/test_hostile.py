"""The channel as the sandbox's wall: a hostile kernel on the real dockerd and image.

Each case is one class of attack (docs/security.md): the cell plays the attacker, as the
container's user, on whatever its channel lets it reach; the test looks from the host that no
host file changed, nothing leaked into JSON, plots or the history, and that the session said
what happened and went on (or restarted). Run one: test_hostile.py CASE. With
CELLBOX_TEST_RUNTIME=runsc the kernels run under gVisor. Without a daemon, the image or the
runtime, a case reports itself skipped (exit 77) with the reason; the runtime-directory case
needs root (it makes two local users).
"""
import base64
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import unittest
import urllib.parse

from hostile_base import (Base, BIN, CHANNEL, RUNTIME, SKIP, docker_get, docker_skip_reason,
                          tree_bytes)
from hostile_gc import GcLabels
from hostile_local import Local
from hostile_pool import LocalPool
from hostile_quota import Quota
from hostile_spill import Spill


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
    for name in ('ready.tmp', 'runner.zip.tmp', 'container.tmp', 'exit_status', 'pid',
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
        if CHANNEL == 'stream':
            # Over the stream only the sandbox's regular files cross, as copies: its links
            # and FIFOs stay inside (the host finds no file), and the hard link arrives as a
            # copy of the sandbox's file (one link, the host's own): taken, the "<html>" text.
            self.assertEqual(told.count('refused artifact'), 6, told)
            whys = ('does not exist', 'over its cap', "kernel's plots/", 'not a PNG')
            self.assertEqual(told.count('does not exist'), 3, told)
            formats = [('pdf', 1), ('png', 640)]
        else:
            self.assertEqual(told.count('refused artifact'), 7, told)
            # (a FIFO the sandbox made under gVisor stays inside it: the host finds no file)
            whys = ('symbolic link', 'has 2 links', 'over its cap', "kernel's plots/",
                    'does not exist' if RUNTIME else 'FIFO')
            formats = [('png', 640)]
        for why in whys:
            self.assertIn(why, told)
        if CHANNEL != 'stream':
            self.assertNotIn('evil', p.stdout)
        # only the real savefig (and over a stream the copy) came through, and is all that
        # was copied out
        self.assertEqual([(pl['format'], pl['width']) for pl in o['plots']], formats)
        self.assertEqual([c[:8] for c in contents][-1], b'\x89PNG\r\n\x1a\n')
        self.assertEqual(len(os.listdir(out)), len(formats), os.listdir(out))
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

    def test_interrupt_ignored(self):
        """A kernel that ignores the timeout's SIGINT and prints what an interrupted cell
        would: killed and restarted when the grace (counted once, from the signal) is over;
        the next cell runs in a new kernel."""
        env = dict(self.env, CELLBOX_INTERRUPT_GRACE='2')
        cell = ('import signal, time\n'
                'def forge(*_):\n'
                '    print("KeyboardInterrupt", flush=True)\n'
                '    signal.signal(signal.SIGINT, forge)\n'
                'signal.signal(signal.SIGINT, forge)\n'
                'while True: time.sleep(0.05)')
        p = self.repl('kept = 7', cell, 'print("next", "kept" in globals())',
                      args=('--timeout', '2'), env=env)
        said = p.stdout + p.stderr
        self.assertIn('KeyboardInterrupt', p.stdout)         # it got the signal ...
        self.assertIn('ignored the interrupt for 2 s', said)  # ... and the host did not wait on it
        self.assertIn('timeout: kernel restarted', said)
        self.assertIn('next False', p.stdout, said)

    def test_many_files(self):
        """Over the stream: a cell that makes more files in plots/ than the channel holds is
        stopped, and the front end says why (before: the relay stopped sending past 8,192
        files and said nothing; the cell succeeded with its files missing)."""
        cell = self.attack(r"""
P = R._S.plot_dir
for n in range(10050):
    open(os.path.join(P, 'f%05d' % n), 'w').write('x')
time.sleep(2)
print('made them all')
""")
        p = self.cellbox('run', '-c', cell, timeout=300)
        self.assertNotEqual(p.returncode, 0, p.stdout)
        self.assertIn('more than 10000 files', p.stderr)

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
        # The host makes the next file just after it wakes the kernel for this cell: the
        # cell waits for it (up to 5 s) rather than racing the host to the directory.
        wait = r'''
def made_ahead(own):
    import time
    for _ in range(100):
        ahead = [n for n in os.listdir(R._S.res_dir) if n != own and n.endswith('.jsonl')]
        if ahead:
            return ahead
        time.sleep(0.05)
    return []
'''
        attacks = [wait + r'''
own = R._S.req_id + '.jsonl'
ahead = made_ahead(own)
for n in ahead:
    with open(os.path.join(R._S.res_dir, n), 'a') as f:
        f.write('{"type":"stream","name":"stdout","text":"forged\\n"}\n'
                '{"type":"done","status":"ok","execution_count":99,"duration":0}\n')
print('ahead', len(ahead))
'''] + [wait + r'''
own = R._S.req_id + '.jsonl'
made_ahead(own)
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
# (the kernel part's out/: over a stream the relay carries only the kernel part's files,
# and into results/ only those the host made)
target = [d for d in writable_dirs() if d.endswith('/kernel/out')][-1]
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
    filt = json.dumps({'label': ['org.cellbox.pid=%d' % pid]})
    return [c['Id'] for c in docker_get('/containers/json?all=1&filters=%s'
                                        % urllib.parse.quote(filt))]


def main(argv):
    cases = {n[len('test_'):]: cls for cls in (Hostile, Local, LocalPool, Dockerd, Quota,
                                               GcLabels, Spill)
             for n in cls.__dict__ if n.startswith('test_')}
    case = argv[1] if len(argv) > 1 else None
    if case and case not in cases:
        print('no case %r (cases: %s)' % (case, ', '.join(sorted(cases))))
        return 2
    if any(cls in (Hostile, Dockerd, GcLabels, Spill) for n, cls in cases.items()
           if case in (None, n)):
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
