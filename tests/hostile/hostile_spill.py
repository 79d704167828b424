"""The hostile cases about what crosses the wall besides the channel: the container's logs,
its other writable places, the per-uid limits of the host's kernel. Run through
test_hostile.py CASE (docker, under runc and again under runsc)."""
import ctypes
import json
import os
import pwd
import select
import subprocess
import time
import urllib.parse

from hostile_base import Base, BIN, CHANNEL, RUNTIME, docker_get, tree_bytes

# The container's uid when cellbox runs as root (engine/backend_docker_create.c).
CONTAINER_UID = 1879048192


class Session:
    """`cellbox repl` on pipes, its output read up to a marker: a session held open while the
    test looks at its container from the host."""

    def __init__(self, env, *args):
        self.proc = subprocess.Popen([BIN, 'repl', *args], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
        self.out = b''

    def cell(self, code, marker, timeout=120, raw=False):
        """Send a cell (Python's through exec(), `raw` as it is) and read up to `marker`."""
        self.proc.stdin.write(((code if raw else 'exec(%r)' % code) + '\n\n').encode())
        self.proc.stdin.flush()
        t0 = time.monotonic()
        while marker.encode() not in self.out and time.monotonic() - t0 < timeout:
            if not select.select([self.proc.stdout], [], [], 1)[0]:
                continue
            chunk = os.read(self.proc.stdout.fileno(), 65536)
            if not chunk:
                break
            self.out += chunk
        return marker.encode() in self.out

    def line(self, prefix):
        """The JSON after `prefix` on a line of the output."""
        for ln in self.out.decode(errors='replace').splitlines():
            if ln.startswith(prefix):
                return json.loads(ln[len(prefix):])
        return None

    def close(self):
        if self.proc.stdout.closed:
            return ''
        try:
            self.proc.stdin.close()
        except OSError:
            pass
        try:
            self.proc.wait(60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        err = self.proc.stderr.read().decode(errors='replace')
        self.proc.stdout.close()
        self.proc.stderr.close()
        return err

    def container(self):
        """The inspection of this session's running container (labelled with its pid; a
        spare made ahead is not started)."""
        filt = json.dumps({'label': ['org.cellbox.pid=%d' % self.proc.pid],
                           'status': ['running']})
        ids = [c['Id'] for c in docker_get('/containers/json?all=1&filters=%s'
                                             % urllib.parse.quote(filt))]
        if len(ids) != 1:
            raise AssertionError('containers of pid %d: %r' % (self.proc.pid, ids))
        return docker_get('/containers/%s/json' % ids[0])


def inotify_init_as(uid):
    """Whether a process of `uid` on the host can make an inotify instance (its errno if not)."""
    code = ('import ctypes, os; libc = ctypes.CDLL(None, use_errno=True); '
            'fd = libc.inotify_init(); print(fd, ctypes.get_errno())')
    args = ['/usr/bin/python3', '-c', code]
    if uid != os.geteuid():
        args = ['setpriv', '--reuid', str(uid), '--regid', str(uid), '--clear-groups'] + args
    p = subprocess.run(args, capture_output=True, text=True, timeout=30)
    fd, err = p.stdout.split()
    return 0 if int(fd) >= 0 else int(err)


class Spill(Base):
    """The container's ways to the host besides its channel."""

    def test_logs_off(self):
        """20 MB to the container's init's stdout and stderr (/proc/1/fd/1, /proc/1/fd/2, the
        kernel's own uid): nothing of it reaches the host's disk (before: dockerd kept it all
        in the container's json log, unbounded)."""
        cell = r'''
block = b'z' * (1 << 20)
done = []
for fd in (1, 2):
    try:
        with open('/proc/1/fd/%d' % fd, 'wb', buffering=0) as f:
            for i in range(20):
                f.write(block)
        done.append(fd)
    except OSError as e:
        print('cannot write fd', fd, e)
print('WRO' + 'TE', done)
'''
        r_cell = ('tryCatch({con <- file("/proc/1/fd/1", "wb"); for (i in 1:20) writeBin('
                  'as.raw(rep(122L, 1048576)), con); close(con); cat("WRO", "TE [1]\\n", '
                  'sep="")}, error = function(e) cat("WRO", "TE [] ", conditionMessage(e), '
                  '"\\n", sep=""))')
        kernels = [('python', (), cell, False)]
        if r_image():
            kernels.append(('r', ('--kernel', 'r'), r_cell, True))
        for name, args, code, raw in kernels:
            s = Session(self.env, *args)
            try:
                if not s.cell(code, 'WROTE', raw=raw):
                    self.fail('%s: no answer: %r %r' % (name, s.out[-400:], s.close()[-400:]))
                if CHANNEL == 'stream':
                    # The relay is the init, holds the container's stdout alone and is not
                    # dumpable: its /proc/1/fd is root's, the kernel cannot write there.
                    self.assertIn(b'WROTE []', s.out)
                else:
                    self.assertIn(b'WROTE [1, 2]' if name == 'python' else b'WROTE [1]',
                                  s.out)
                time.sleep(1)       # dockerd copies the stream behind the kernel's writes
                c = s.container()
                cdir = os.path.join(docker_get('/info')['DockerRootDir'], 'containers', c['Id'])
                log = c.get('LogPath') or ''
                size = os.stat(log).st_size if log and os.path.exists(log) else 0
                self.assertLess(size, 1 << 20, '%s: the container log %s is %d MB'
                                % (name, log, size >> 20))
                self.assertLess(tree_bytes(cdir), 1 << 20, '%s: the container directory %s '
                                'took %d MB' % (name, cdir, tree_bytes(cdir) >> 20))
                self.assertEqual(c['HostConfig']['LogConfig']['Type'], 'none')
            finally:
                s.close()

    def test_writable_places(self):
        """Every place the kernel can write in its container is bounded: its tmpfs mounts
        (home, /tmp, /dev/shm: memory, within the container's limit) and the channel's kernel
        part (the quota); the root is read-only, and the engine's files bound into it (hosts,
        hostname, resolv.conf) are not the kernel's to write."""
        cell = r'''
import json
rw = []
for line in open('/proc/self/mounts'):
    dev, mnt, fstype, opts = line.split()[:4]
    mnt = mnt.replace('\\040', ' ')
    if 'rw' not in opts.split(',') or fstype in ('proc', 'sysfs', 'cgroup', 'cgroup2',
                                                  'devpts', 'mqueue'):
        continue
    rw.append((mnt, fstype))
wrote = []
for mnt, fstype in rw:
    if os.path.isdir(mnt):
        seen = 0
        for root, dirs, files in os.walk(mnt):
            seen += 1
            if seen > 2000 or root.startswith(CH + '/'):
                break
            try:
                p = os.path.join(root, '.cellbox-probe')
                open(p, 'w').write('x')
                os.unlink(p)
                wrote.append((mnt, fstype))
                break
            except OSError:
                pass
    else:
        try:
            open(mnt, 'a').close()
            wrote.append((mnt, fstype))
        except OSError:
            pass
for d in ('/', '/etc', '/usr', '/var', '/opt', '/root'):
    try:
        p = os.path.join(d, '.cellbox-probe')
        open(p, 'w').write('x')
        os.unlink(p)
        wrote.append((d, 'root'))
    except OSError:
        pass
print('WRO' + 'TE ' + json.dumps(wrote))
'''
        s = Session(self.env)
        try:
            self.assertTrue(s.cell(self.attack(cell), 'WROTE '), s.out[-400:])
            wrote = s.line('WROTE ')
        finally:
            s.close()
        # the channel's parts are the wall's (the quota bounds the kernel part); the rest must
        # be memory: a tmpfs (or a masked /proc file, /dev/null in the /dev tmpfs)
        self.assertEqual([(m, t) for m, t in wrote if t != 'tmpfs' and
                          not m.startswith(self.run_dir + '/')], [],
                         'the kernel can write there: %r' % wrote)

    def test_adoption_notes_out_of_reach(self):
        """The notes an adopter of the kernel reads (`container`, `engine`, `container.json`:
        the container's id and engine, and the facts that spare a pooled run the engine's
        inspect: its API version, stdin, stream) sit at the channel's top, which no kernel
        reaches. A cell that plants them, links among them, wherever it can write around its
        channel changes none of the host's, and a pooled run adopts a kernel by them as
        before."""
        s = Session(self.env)
        try:
            self.assertTrue(s.cell('print("UP")', 'UP'), s.out[-400:])
            tops = [d for d in (os.path.join(self.run_dir, n) for n in os.listdir(self.run_dir))
                    if os.path.isfile(os.path.join(d, 'container.json'))]
            self.assertEqual(len(tops), 1, os.listdir(self.run_dir))
            names = ('container', 'engine', 'container.json')
            before = {n: open(os.path.join(tops[0], n), 'rb').read() for n in names
                      if os.path.exists(os.path.join(tops[0], n))}
            self.assertIn('container.json', before)
            cell = r'''
import json
forged = '{"api": "9.99", "memory": 1, "oom_unsure": false, "stdin": true, "stream": true}'
made = []
for d in (CH, os.path.join(CH, 'kernel'), os.path.join(CH, 'host'), os.path.dirname(CH)):
    for name in ('container', 'engine', 'container.json'):
        p = os.path.join(d, name)
        for how in ('file', 'link'):
            try:
                if os.path.lexists(p):
                    os.unlink(p)
                if how == 'file':
                    open(p, 'w').write(forged)
                else:
                    os.symlink('/etc/passwd', p)
                made.append(p)
            except OSError:
                pass
print('MA' + 'DE ' + json.dumps(made))
'''
            self.assertTrue(s.cell(self.attack(cell), 'MADE '), s.out[-400:])
            after = {n: open(os.path.join(tops[0], n), 'rb').read() for n in names
                     if os.path.exists(os.path.join(tops[0], n))}
            self.assertEqual(after, before, 'the kernel changed a note at its channel\'s top')
            for n in names:
                self.assertFalse(os.path.islink(os.path.join(tops[0], n)), n)
        finally:
            s.close()
        # A pool's kernels are adopted by the same notes: the run is pooled and answers.
        daemon = subprocess.Popen([BIN, 'pool', 'serve', '--min', '1', '--max', '1'],
                                  env=self.env, stderr=subprocess.DEVNULL)
        try:
            ready = os.path.join(self.run_dir, 'pool', 'default', 'ready')
            t0 = time.monotonic()
            while time.monotonic() - t0 < 120 and not (os.path.isdir(ready) and
                                                       os.listdir(ready)):
                time.sleep(0.2)
            p = self.cellbox('run', '--pool', '-c', 'print(6 * 7)')
            self.assertEqual(p.returncode, 0, p.stderr[-400:])
            self.assertIn('42', p.stdout)
            self.assertNotIn('note:', p.stderr)       # pooled, not a cold start
        finally:
            self.cellbox('pool', 'stop')
            daemon.wait(60)

    def test_per_uid_limits(self):
        """A kernel holding 200 inotify instances: a host program of the caller's uid, and
        one of uid 1000 (the first user's, which root's kernels ran as), can still make one
        (before: EMFILE for every program of that uid); the kernel's uid on the host is no
        account's and no host process's but the container's."""
        if os.geteuid() != 0:
            self.skipTest('runs a program as uid 1000: needs root')
        cell = r'''
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
HELD = []
for i in range(200):
    fd = libc.inotify_init()
    if fd < 0:
        break
    HELD.append(fd)
print('HE' + 'LD %d uid %d' % (len(HELD), os.getuid()))
'''
        s = Session(self.env)
        try:
            if not s.cell(cell, 'HELD ', timeout=60):
                self.fail('no answer: %r %r' % (s.out[-400:], s.close()[-400:]))
            held = s.out.decode().split('HELD ', 1)[1].split()
            n, uid = int(held[0]), int(held[2])
            self.assertGreater(n, 100, s.out[-400:])
            self.assertEqual(inotify_init_as(os.geteuid()), 0, 'the caller has no inotify left')
            err = inotify_init_as(1000)
            self.assertEqual(err, 0, 'a host program of uid 1000 cannot inotify_init: %s'
                             % os.strerror(err))
            self.assertNotEqual(uid, os.geteuid())
            self.assertEqual(uid, CONTAINER_UID)
            with self.assertRaises(KeyError):
                pwd.getpwuid(uid)
            if not RUNTIME:
                c = s.container()
                top = docker_get('/containers/%s/top?ps_args=-o%%20pid' % c['Id'])
                inside = {int(p[0]) for p in top['Processes']}
                self.assertTrue(inside)
                for pid in inside:
                    self.assertEqual(proc_uid(pid), CONTAINER_UID, pid)
                # (other sessions' containers, of tests running beside this one, share it; one
                # starting as the host's processes are listed is in the engine's list a moment
                # later: what is outside every container is asked again, up to 5 times)
                outside = host_pids_of(CONTAINER_UID)
                for _ in range(5):
                    for other in docker_get('/containers/json?all=1'):
                        try:
                            top = docker_get('/containers/%s/top?ps_args=-o%%20pid'
                                             % other['Id'])
                        except Exception:
                            continue            # gone meanwhile, or not running
                        inside |= {int(p[0]) for p in (top or {}).get('Processes') or []}
                    outside = sorted(p for p in outside
                                     if p not in inside and os.path.exists('/proc/%d' % p))
                    if not outside:
                        break
                    time.sleep(0.5)
                self.assertEqual(outside, [])
        finally:
            s.close()


def r_image():
    """Whether dockerd has the R kernel's image (scripts/build-image --kernel r)."""
    filt = json.dumps({'reference': ['cellbox-r']})
    return bool(docker_get('/images/json?filters=' + urllib.parse.quote(filt)))


def proc_uid(pid):
    """The real uid of host process `pid`, or None when it is gone."""
    try:
        with open('/proc/%d/status' % pid) as f:
            for line in f:
                if line.startswith('Uid:'):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


def host_pids_of(uid):
    """The host's processes whose real uid is `uid`."""
    return [int(p) for p in os.listdir('/proc') if p.isdigit() and proc_uid(int(p)) == uid]
