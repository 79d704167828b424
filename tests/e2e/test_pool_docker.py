"""Pooled mode on the docker backend: the core cases of test_pool.py with warm containers.

Run one case: test_pool_docker.py CASE (meson does). Without a reachable dockerd or without the
kernel image every case reports itself skipped (exit 77), with the reason.
"""
import http.client
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
import unittest
import urllib.parse

from test_cli import BIN
from test_pool import PoolTest, wait_for as wait_local

SKIP = 77


def wait_for(pred, timeout=120, what='condition'):
    """The local suite's wait, with a timeout generous for containers on a loaded machine."""
    return wait_local(pred, timeout=timeout, what=what)


class UnixHTTPConnection(http.client.HTTPConnection):
    def __init__(self, path):
        super().__init__('localhost', timeout=30)
        self.path = path

    def connect(self):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(30)
        self.sock.connect(self.path)


def engine(path):
    """GET `path` from dockerd: (status, parsed JSON or None)."""
    host = os.environ.get('DOCKER_HOST', 'unix:///var/run/docker.sock')
    if not host.startswith('unix://'):
        raise OSError('only a unix DOCKER_HOST is supported here: ' + host)
    c = UnixHTTPConnection(host[len('unix://'):])
    try:
        c.request('GET', path)
        r = c.getresponse()
        body = r.read()
        try:
            return r.status, json.loads(body)
        except ValueError:
            return r.status, None                     # /_ping says "OK", errors may be text
    finally:
        c.close()


def engine_post(path):
    """POST `path` to dockerd without a body: the status."""
    host = os.environ.get('DOCKER_HOST', 'unix:///var/run/docker.sock')
    c = UnixHTTPConnection(host[len('unix://'):])
    try:
        c.request('POST', path)
        r = c.getresponse()
        r.read()
        return r.status
    finally:
        c.close()


def skip_reason():
    """Why these tests cannot run here, or None."""
    try:
        status, _ = engine('/_ping')
    except OSError as e:
        return 'no docker daemon (%s)' % e
    if status != 200:
        return 'the docker daemon answers %d to /_ping' % status
    flt = urllib.parse.quote(json.dumps({'reference': ['cellbox-python']}))
    status, images = engine('/images/json?filters=' + flt)
    if status != 200 or not images:
        return 'no cellbox-python image (scripts/build-image builds it)'
    return None


def containers_of(pid):
    """The ids of the containers (running or not) a process labelled as its own."""
    flt = urllib.parse.quote(json.dumps({'label': ['org.cellbox.pid=%d' % pid]}))
    status, cs = engine('/containers/json?all=1&filters=' + flt)
    assert status == 200, status
    return {c['Id'] for c in cs}


def running_of(pid):
    """The ids of the running containers a process labelled as its own (not those created
    ahead, not started)."""
    flt = urllib.parse.quote(json.dumps({'label': ['org.cellbox.pid=%d' % pid],
                                         'status': ['running']}))
    status, cs = engine('/containers/json?filters=' + flt)
    assert status == 200, status
    return {c['Id'] for c in cs}


def running(cid):
    status, c = engine('/containers/%s/json' % cid)
    return status == 200 and c['State']['Running']


class DockerPoolTest(unittest.TestCase):
    # The helpers of the local suite, with every command on the docker backend.
    setUp_local = PoolTest.setUp
    tearDown = PoolTest.tearDown
    cellbox = PoolTest.cellbox
    serve = PoolTest.serve
    start_daemon = PoolTest.start_daemon
    status = PoolTest.status
    hold_lease = PoolTest.hold_lease

    def setUp(self):
        self.setUp_local()
        self.env['CELLBOX_BACKEND'] = 'docker'
        # pool-docker-stream/: the same cases with the channel over the relay's stream (its
        # kernels adopted by attaching again: the relay sends the kernel part anew)
        if os.environ.get('CELLBOX_TEST_CHANNEL'):
            self.env['CELLBOX_CHANNEL'] = os.environ['CELLBOX_TEST_CHANNEL']

    def run_host(self, *extra):
        """A one-shot pooled run printing the container's host name (its id's first 12)."""
        return self.cellbox('run', '--pool', *extra, '-c',
                            'import socket; print(socket.gethostname())')

    def ready_ids(self):
        return {k['container'] for k in self.status().get('ready', []) if k.get('alive')}

    def test_daemon_only_watches(self):
        """Over a stream, the daemon holds no stream of its ready kernels: it watches them
        through their wait connection alone (before: a pump thread and an attach each, whose
        pings every 5 s interleaved with a client's frames on the relay's stdin and killed the
        kernel now and then: 1 file in 40 of a replay --jobs 4 --pool)."""
        if self.env.get('CELLBOX_CHANNEL') != 'stream':
            self.skipTest('a case of the channel over a stream (CELLBOX_TEST_CHANNEL=stream)')
        self.serve('--min', '2', '--max', '2', ready=2)
        pid = self.status()['daemon']['pid']
        time.sleep(1)       # (a thread of a start just done has ended by now)
        tasks = os.listdir('/proc/%d/task' % pid)
        self.assertEqual(len(tasks), 1, 'the daemon runs %d threads' % len(tasks))
        p = self.run_host()
        self.assertEqual(p.returncode, 0, p.stderr)

    def test_lease_never_reused(self):
        self.serve('--min', '1', '--max', '2')
        used = set()
        for _ in range(3):
            ready = wait_for(self.ready_ids, what='a ready container')
            p = self.run_host()
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertNotIn('note:', p.stderr)       # it was a pooled kernel
            host = p.stdout.strip()
            full = [c for c in ready if c.startswith(host)]
            self.assertEqual(len(full), 1, (host, ready))
            used.add(full[0])
        self.assertEqual(len(used), 3)                # a used container is never handed out again
        for cid in used:                              # and it is gone, not kept
            wait_for(lambda: engine('/containers/%s/json' % cid)[0] == 404,
                     what='container %.12s to be removed' % cid)
        self.assertFalse(used & self.ready_ids())

    def test_adopted_by_its_notes(self):
        """A pooled run adopts its container by the notes its starter left at the channel's
        top (container.json: the engine's API version, the container's limit, stdin and
        stream): it asks the engine only whether the container is there, on a connection of
        its own, and loads no HTTP client (libcurl: 8 ms of a pooled run here). Without the
        note it asks the engine's inspect, as before, and the run is the same."""
        self.serve('--min', '1', '--max', '1')     # one kernel at a time: the one noted or not
        kernels = os.path.join(self.tmp, 'run', 'pool', 'default', 'kernels')
        for note in (True, False):
            wait_for(self.ready_ids, what='a ready container')
            for name in os.listdir(kernels):
                facts = os.path.join(kernels, name, 'container.json')
                if not note and os.path.exists(facts):
                    os.unlink(facts)
            env = self.env
            self.env = dict(env, LD_DEBUG='libs')
            try:
                p = self.run_host()
            finally:
                self.env = env
            self.assertEqual(p.returncode, 0, p.stderr[-2000:])
            self.assertNotIn('note:', p.stderr)       # a pooled kernel, not a cold one
            self.assertRegex(p.stdout.strip(), r'^[0-9a-f]{12}$')
            loaded = re.findall(r'calling init: (\S*libcurl\S*)', p.stderr)
            if note:
                self.assertEqual(loaded, [], 'adopted by its note, yet libcurl was loaded')
            else:
                self.assertTrue(loaded, 'no note: the inspect, by libcurl')

    def test_contention_wait(self):
        self.serve('--min', '2', '--max', '2', ready=2)
        pid = self.daemon.pid
        code = 'import socket, time; print(socket.gethostname()); time.sleep(0.3)'
        procs = [subprocess.Popen([BIN, 'run', '--pool', '--pool-strategy', 'wait',
                                   '--pool-timeout', '120', '-c', code],
                                  env=self.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                  text=True) for _ in range(4)]
        peak = 0
        while any(p.poll() is None for p in procs):
            # The engine's own count: every container of the daemon, whatever its state.
            peak = max(peak, len(containers_of(pid)))
            time.sleep(0.02)
        outs = [p.communicate() for p in procs]
        for p, (out, err) in zip(procs, outs):
            self.assertEqual(p.returncode, 0, err)
            self.assertNotIn('note:', err)
        hosts = [out.strip() for out, _ in outs]
        self.assertEqual(len(set(hosts)), 4)          # no container leased twice
        self.assertLessEqual(peak, 2)                 # nothing past the maximum
        self.assertGreaterEqual(peak, 1)

    def test_quick_release_refills(self):
        # Leased and handed back while the daemon is busy starting another container: it
        # must still see the release, remove the container and refill (a miss would count a
        # gone kernel as ready, and at the maximum every later client would wait in vain).
        self.serve('--min', '2', '--max', '2', ready=2)
        pid = self.daemon.pid
        for _ in range(8):
            p = self.cellbox('run', '--pool', '--pool-strategy', 'wait', '--pool-timeout', '60',
                             '-c', 'pass')
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertNotIn('note:', p.stderr)
            self.assertLessEqual(len(containers_of(pid)), 2)
        wait_for(lambda: len(self.ready_ids()) == 2 and len(containers_of(pid)) == 2,
                 what='two warm containers and nothing else')

    def test_exhaustion_strategies(self):
        self.serve('--min', '1', '--max', '1')
        holder = self.hold_lease()
        try:
            wait_for(lambda: self.status()['leased'], what='the lease')
            p = self.run_host('--pool-strategy', 'fail-fast')
            self.assertEqual(p.returncode, 5)
            self.assertIn('pool exhausted', p.stderr)
            p = self.run_host('--pool-strategy', 'wait', '--pool-timeout', '0.5')
            self.assertEqual(p.returncode, 5)
            self.assertIn('no kernel became free within 0.5 s', p.stderr)
            p = self.run_host('--pool-strategy', 'temporary')
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertIn('temporary kernel', p.stderr)
            self.assertEqual(len(containers_of(self.daemon.pid)), 1)   # not in the pool
            st = self.status()
            self.assertEqual(len(st['ready']) + len(st['leased']), 1)
        finally:
            holder.stdin.close()
            holder.wait(timeout=60)
        p = self.run_host('--pool-strategy', 'wait', '--pool-timeout', '60')
        self.assertEqual(p.returncode, 0, p.stderr)

    def test_killed_client_is_reclaimed(self):
        self.serve('--min', '1', '--max', '1')
        holder = self.hold_lease()
        st = wait_for(lambda: self.status()['leased'], what='the lease')
        cid = st[0]['container']
        self.assertTrue(running(cid))
        holder.kill()
        holder.wait()
        wait_for(lambda: not self.status()['leased'], what='the lease to be reclaimed')
        wait_for(lambda: engine('/containers/%s/json' % cid)[0] == 404,
                 what='the container of the dead client to be removed')
        ready = wait_for(self.ready_ids, what='a refill')
        self.assertNotIn(cid, ready)

    def test_killed_idle_kernel_is_replaced(self):
        self.serve('--min', '1', '--max', '2')
        old = wait_for(self.ready_ids, what='a ready container').pop()
        self.assertEqual(engine_post('/containers/%s/kill?signal=SIGKILL' % old), 204)
        wait_for(lambda: self.ready_ids() - {old}, what='a replacement container')
        wait_for(lambda: engine('/containers/%s/json' % old)[0] == 404,
                 what='the killed container to be removed')
        self.assertIn('kernel died (killed by signal 9', self.stop_daemon())

    def test_unresponsive_kernel_is_replaced(self):
        self.serve('--min', '1', '--max', '2', '--health-interval', '0.5')
        old = wait_for(self.ready_ids, what='a ready container').pop()
        self.assertEqual(engine_post('/containers/%s/pause' % old), 204)   # alive, but mute
        wait_for(lambda: self.ready_ids() - {old}, timeout=60,
                 what='the health check to replace it')
        wait_for(lambda: engine('/containers/%s/json' % old)[0] == 404,
                 what='the paused container to be removed')
        self.assertIn('stopped answering', self.stop_daemon())

    def stop_daemon(self):
        self.daemon.send_signal(signal.SIGTERM)
        _, err = self.daemon.communicate(timeout=60)
        return err

    def test_killed_daemon_restarts_clean(self):
        self.serve('--min', '2', '--max', '2', ready=2)
        old_pid = self.daemon.pid
        old = containers_of(old_pid)
        self.assertEqual(len(old), 2)
        self.daemon.kill()
        self.daemon.wait()
        # A dead daemon's containers are a dead process's: `cellbox gc` may remove them ...
        self.serve('--min', '1', '--max', '2')
        # ... and a restarted daemon does, before it starts its own (the old ready entries,
        # still alive until then, may have made serve() return early).
        wait_for(lambda: not containers_of(old_pid), what="the dead daemon's containers to go")
        # one started, and one created ahead (the room left under max)
        wait_for(lambda: len(running_of(self.daemon.pid)) == 1 and
                 len(containers_of(self.daemon.pid)) == 2, what='a new container and a spare')
        st = wait_for(lambda: (lambda st: st if [k['container'] for k in st['ready']]
                               == list(running_of(self.daemon.pid)) else None)(self.status()),
                      what='the new container in ready/')
        self.assertEqual(len(st['ready']), 1)
        self.assertEqual(len(os.listdir(os.path.join(self.tmp, 'run', 'pool', 'default',
                                                     'kernels'))), 2)
        self.assertEqual(self.run_host().returncode, 0)
        # gc leaves a live pool alone, and removes a dead one's.
        wait_for(lambda: len(self.ready_ids()) == 1 and len(running_of(self.daemon.pid)) == 1
                 and len(containers_of(self.daemon.pid)) == 2,
                 what='the used container removed and one refilled')
        before = containers_of(self.daemon.pid)
        p = self.cellbox('gc')
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(containers_of(self.daemon.pid), before, p.stdout)
        new_pid = self.daemon.pid
        left = containers_of(new_pid)
        self.daemon.kill()
        self.daemon.wait()
        p = self.cellbox('gc')
        self.assertEqual(p.returncode, 0, p.stderr)
        # The spare too, never started. (A session starting beside this test sweeps a dead
        # process's containers as gc does: what gc did not name, that sweep took first.)
        self.assertEqual(containers_of(new_pid), set(), p.stdout)
        for cid in left:
            if 'removed container %.12s' % cid not in p.stdout:
                print('# %.12s: removed by another sweep before gc' % cid, file=sys.stderr)

    def test_spares_created_ahead(self):
        self.serve('--min', '1', '--max', '3')
        pid = self.daemon.pid
        # the room under max is filled with containers created, not started
        wait_for(lambda: len(containers_of(pid)) == 3, what='two spares')
        self.assertEqual(len(running_of(pid)), 1)
        spares = containers_of(pid) - running_of(pid)
        for cid in spares:
            self.assertEqual(engine('/containers/%s/json' % cid)[1]['State']['Status'],
                             'created')
        hosts = set()
        for _ in range(3):
            p = self.run_host('--pool-strategy', 'wait', '--pool-timeout', '60')
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertNotIn('note:', p.stderr)
            hosts.add(p.stdout.strip())
        self.assertEqual(len(hosts), 3)
        # the spares were started on demand (the next ones made meanwhile may serve too)
        self.assertTrue({h for h in hosts if any(c.startswith(h) for c in spares)}, hosts)
        self.assertLessEqual(len(containers_of(pid)), 3)
        log = self.stop_daemon()
        self.assertIn('created ahead', log)
        self.assertEqual(containers_of(pid), set())   # the spares go with it

    def test_clean_stop_removes_all(self):
        self.serve('--min', '1', '--max', '2')
        holder = self.hold_lease()
        wait_for(lambda: self.status()['leased'], what='the lease')
        wait_for(self.ready_ids, what='a refill')
        pid = self.daemon.pid
        self.assertEqual(len(containers_of(pid)), 2)
        self.stop_daemon()
        self.assertEqual(containers_of(pid), set())   # a pool's kernels do not outlive it
        holder.stdin.close()
        holder.wait(timeout=60)


if __name__ == '__main__':
    why = skip_reason()
    if why:
        print('SKIP: ' + why)
        sys.exit(SKIP)
    case = sys.argv[1] if len(sys.argv) > 1 else None
    argv = [sys.argv[0], '-v'] + (['DockerPoolTest.test_' + case] if case else [])
    unittest.main(argv=argv)
