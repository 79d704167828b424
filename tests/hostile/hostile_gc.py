"""The hostile case about what `cellbox gc` removes: a dead container's label naming a path
(outside the runtime directory, through a link in it, through '..'). Run through
test_hostile.py CASE."""
import json
import os
import socket
import subprocess

from hostile_base import Base


def docker_call(method, path, body=None):
    """(status, JSON answer) of dockerd's Engine API, through DOCKER_HOST's socket."""
    host = os.environ.get('DOCKER_HOST', 'unix:///var/run/docker.sock')[len('unix://'):]
    data = json.dumps(body).encode() if body is not None else b''
    s = socket.socket(socket.AF_UNIX)
    s.settimeout(30)
    s.connect(host)
    s.sendall(('%s %s HTTP/1.0\r\nHost: docker\r\nContent-Type: application/json\r\n'
               'Content-Length: %d\r\n\r\n' % (method, path, len(data))).encode() + data)
    reply = b''
    while True:
        chunk = s.recv(65536)
        if not chunk:
            break
        reply += chunk
    s.close()
    head, _, rest = reply.partition(b'\r\n\r\n')
    status = int(head.split()[1])
    try:
        return status, json.loads(rest) if rest.strip() else None
    except ValueError:
        return status, rest


class GcLabels(Base):
    """`cellbox gc` and the labels of dead containers (real dockerd)."""

    def test_gc_forged_label(self):
        """A dead container whose label names a directory outside the runtime directory, or
        one reached through a link in it: gc leaves both, and removes a channel of ours
        (before: it deleted whatever the label named, if its name began with the pid)."""
        p = subprocess.Popen(['true'])
        p.wait()
        pid = p.pid                                   # a process that is gone
        hexa = '0123456789abcdef'
        os.makedirs(self.run_dir, mode=0o700)
        outside = os.path.join(self.tmp, 'precious')
        os.makedirs(outside)
        victims = []
        for n in range(2):
            v = os.path.join(outside, '%d-%d-%s' % (pid, n, hexa))
            os.makedirs(v)
            with open(os.path.join(v, 'data'), 'w') as f:
                f.write('the host files, as they were\n')
            victims.append(v)
        os.symlink(outside, os.path.join(self.run_dir, 'link'))
        # Ours, where the pool keeps its kernels' channels (the runtime directory's own sweep
        # looks only at its top).
        ours = os.path.join(self.run_dir, 'pool', 'default', 'kernels', '%d-2-%s' % (pid, hexa))
        os.makedirs(os.path.join(ours, 'kernel'), mode=0o700)
        labels = [victims[0],                                        # outside
                  os.path.join(self.run_dir, 'link', os.path.basename(victims[1])),  # a link
                  os.path.join(self.run_dir, '..', os.path.basename(self.tmp), 'precious',
                               os.path.basename(victims[0])),       # '..' back out
                  ours]                                              # ours: removed
        # Any session starting on this engine meanwhile (other cases run beside this one)
        # sweeps dead processes' containers too, without a runtime directory to look in: the
        # round counts only when this gc is the one that removed all four.
        for attempt in range(5):
            made = []
            try:
                for ch in labels:
                    status, c = docker_call('POST', '/containers/create', {
                        'Image': os.environ.get('CELLBOX_IMAGE') or 'cellbox-python:p2',
                        'Cmd': ['true'],
                        'Labels': {'org.cellbox.pid': str(pid), 'org.cellbox.start': '1',
                                   'org.cellbox.host': socket.gethostname(),
                                   'org.cellbox.channel': ch}})
                    self.assertEqual(status, 201, c)
                    made.append(c['Id'])
                g = self.cellbox('gc', '--backend', 'docker')
                self.assertEqual(g.returncode, 0, g.stderr)
                for v in victims:
                    self.assertTrue(os.path.isfile(os.path.join(v, 'data')),
                                    'gc deleted %s, which a label named' % v)
                if all('removed container %s' % cid[:12] in g.stdout for cid in made):
                    break
            finally:
                for cid in made:
                    docker_call('DELETE', '/containers/%s?force=1' % cid)
        else:
            self.fail('another sweep took the containers first, five times: %s' % g.stdout)
        self.assertFalse(os.path.exists(ours), 'gc left the channel of ours')
