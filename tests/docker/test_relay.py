"""The relay (kernels/relay/relay.c, the channel's far end inside a sandbox) run directly on
this host, as the container would run it: a temporary directory as its CHANNEL, frames
(engine/stream_frame.h) on its stdin, its frames read from its stdout. The runner it starts
is a FAKE (FAKE_RUNNER below, a few lines of sh): it stands for the real runner only to make
the relay do its work (wake on a byte, write results, plots, links, exit), which is what is
under test here.

    tests/docker/test_relay.py [CASE]

CELLBOX_RELAY names the static binary (build/kernels/cellbox-relay); skipped without it."""
import os
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import threading
import time
import unittest

RELAY = os.environ.get('CELLBOX_RELAY', '')
WAIT = 10.0

# A FAKE runner (not a runner: it speaks no protocol). $1 is the channel (also the cwd). It
# writes its pid to kernel/ready, starts a helper in its process group that records a SIGINT
# in $FAKE_MARK, then on each byte of its stdin: logs "woke N" (its stdout is kernel/log),
# answers each new host/commands/<id>.json with a plot, then a results line; makes a link and
# a FIFO in kernel/plots when host/files/links exists; writes kernel/out/r.csv, then renames a
# longer one over it when host/files/replace exists; exits with host/files/exit's number.
FAKE_RUNNER = r'''
cd "$1" || exit 99
echo $$ > kernel/ready
/usr/bin/python3 -c '
import os, signal, sys, time
signal.signal(signal.SIGINT, lambda *a: (open(sys.argv[1], "w").write("INT"), os._exit(0)))
open(sys.argv[1] + ".pid", "w").write(str(os.getpid()))
time.sleep(60)' "$FAKE_MARK" &
n=0
done_ids=
while :; do
	b=$(dd bs=1 count=1 2>/dev/null)
	[ -n "$b" ] || exit 0
	n=$((n + 1))
	echo "woke $n"
	for f in host/commands/*.json; do
		[ -f "$f" ] || continue
		id=$(basename "$f" .json)
		case " $done_ids " in *" $id "*) continue ;; esac
		done_ids="$done_ids $id"
		printf 'PNG-%s-%0200d' "$id" 0 > kernel/plots/$id.png
		echo "{\"id\":\"$id\"}" >> kernel/results/$id.jsonl
	done
	if [ -f host/files/links ] && [ ! -e kernel/plots/fifo.png ]; then
		ln -s /etc/passwd kernel/plots/link.png
		mkfifo kernel/plots/fifo.png
		echo after > kernel/plots/after.png
	fi
	if [ -f host/files/replace ] && [ ! -e kernel/out/done ]; then
		printf 'old-%0300d' 0 > kernel/out/r.csv
		sleep 0.3
		printf 'NEW-%0400d' 0 > kernel/out/r.tmp
		mv kernel/out/r.tmp kernel/out/r.csv
		echo replaced > kernel/out/done
	fi
	[ -f host/files/exit ] && exit "$(cat host/files/exit)"
done
'''

# A FAKE runner that leaves orphans to the relay (pid 1 of its own pid namespace) dying
# around its own end, which is exit 5.
ORPHAN_RUNNER = r'''
i=0
while [ $i -lt 300 ]; do
	(/bin/true &)
	i=$((i + 1))
done &
sleep 0.05
exit 5
'''


def frame(kind, name, offset=0, data=b'', flags=0):
    name = name.encode()
    return struct.pack('>BBHIQ', ord(kind), flags, len(name), len(data), offset) + name + data


class Relay:
    """The relay on a temporary channel, its frames collected by a thread."""

    def __init__(self, group):
        self.tmp = tempfile.mkdtemp(prefix='cellbox-relay-')
        self.channel = os.path.join(self.tmp, 'channel')
        os.mkdir(self.channel)
        self.mark = os.path.join(self.tmp, 'mark')
        env = dict(os.environ, FAKE_MARK=self.mark)
        self.runner = os.path.join(self.channel, 'host', 'runner.sh')
        self.proc = subprocess.Popen([RELAY, self.channel, str(group), 'sh', self.runner],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, env=env)
        self.frames = []
        self.lock = threading.Condition()
        self.reader = threading.Thread(target=self.read, daemon=True)
        self.reader.start()

    def read(self):
        out = self.proc.stdout
        while True:
            head = out.read(16)
            if len(head) < 16:
                break
            kind, flags, nlen, dlen, off = struct.unpack('>BBHIQ', head)
            name = out.read(nlen).decode('ascii', 'replace')
            data = out.read(dlen)
            with self.lock:
                self.frames.append((chr(kind), name, off, data))
                self.lock.notify_all()
        with self.lock:
            self.frames.append(('EOF', '', 0, b''))
            self.lock.notify_all()

    def send(self, *frames):
        self.proc.stdin.write(b''.join(frames))
        self.proc.stdin.flush()

    def start(self):
        """The fake runner written as the host writes it (W, LAST), then S."""
        self.send(frame('W', 'host/runner.sh', 0, FAKE_RUNNER.encode(), 1), frame('S', ''))
        self.wait(lambda: self.kernel_file('kernel/ready').strip().isdigit())
        self.wait(lambda: os.path.exists(self.mark + '.pid') and
                  open(self.mark + '.pid').read().isdigit())
        self.runner_pid = int(self.kernel_file('kernel/ready'))

    def wait(self, pred, what='a frame'):
        deadline = time.monotonic() + WAIT
        with self.lock:
            while not pred():
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError('timed out waiting for %s; frames: %r' %
                                         (what, self.summary()))
                self.lock.wait(min(left, 0.1))

    def summary(self):
        return [(k, n, o, len(d)) for k, n, o, d in self.frames]

    def kernel_file(self, name):
        """What the host would hold of kernel file `name`, from the A/T/X frames so far."""
        content = None
        with self.lock:
            for kind, n, off, data in self.frames:
                if n != name:
                    continue
                if kind == 'A':
                    content = (content or b'')[:off] + data
                elif kind == 'T':
                    content = (content or b'')[:off]
                elif kind == 'X':
                    content = None
        return content.decode('ascii', 'replace') if content is not None else ''

    def names(self):
        with self.lock:
            return [n for k, n, o, d in self.frames]

    def command(self, rid):
        self.send(frame('W', 'host/commands/%s.json' % rid, 0, b'{"code":"1"}', 1))

    def exit_code(self):
        try:
            return self.proc.wait(WAIT)
        except subprocess.TimeoutExpired:
            raise AssertionError('the relay did not exit; frames: %r' % self.summary())

    def close(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        for f in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            try:
                f.close()
            except OSError:
                pass
        try:
            pid = int(open(self.mark + '.pid').read())
            os.kill(pid, signal.SIGKILL)
        except (OSError, ValueError):
            pass
        shutil.rmtree(self.tmp, ignore_errors=True)


class RelayTest(unittest.TestCase):
    def setUp(self):
        if not RELAY or not os.access(RELAY, os.X_OK):
            self.skipTest('no relay in this build (CELLBOX_RELAY=%r)' % RELAY)
        self.relays = []

    def tearDown(self):
        for r in self.relays:
            r.close()

    def relay(self, group=0):
        r = Relay(group)
        self.relays.append(r)
        r.start()
        return r

    def test_results_in_order(self):
        """A command wakes the runner; its plot's bytes come back before its results line."""
        r = self.relay()
        r.command('1')
        r.wait(lambda: r.kernel_file('kernel/results/1.jsonl') == '{"id":"1"}\n')
        self.assertEqual(r.kernel_file('kernel/plots/1.png'), 'PNG-1-' + '0' * 200)
        names = r.names()
        last_plot = max(i for i, n in enumerate(names) if n == 'kernel/plots/1.png')
        first_result = names.index('kernel/results/1.jsonl')
        self.assertLess(last_plot, first_result, r.summary())
        self.assertIn('woke 1', r.kernel_file('kernel/log'))
        r.command('2')
        r.wait(lambda: r.kernel_file('kernel/results/2.jsonl') == '{"id":"2"}\n')
        names = r.names()
        self.assertLess(max(i for i, n in enumerate(names) if n == 'kernel/plots/2.png'),
                        names.index('kernel/results/2.jsonl'), r.summary())
        r.send(frame('P', '', 4242))
        r.wait(lambda: ('P', '', 4242, b'') in r.frames, 'the ping answer')

    def test_delete_takes_results(self):
        """D of a command removes its results file in the sandbox (an X comes back)."""
        r = self.relay()
        r.command('7')
        r.wait(lambda: r.kernel_file('kernel/results/7.jsonl') != '')
        results = os.path.join(r.channel, 'kernel', 'results', '7.jsonl')
        self.assertTrue(os.path.exists(results))
        r.send(frame('D', 'host/commands/7.json'))
        r.wait(lambda: ('X', 'kernel/results/7.jsonl', 0, b'') in r.frames, 'the X')
        self.assertFalse(os.path.exists(results))
        self.assertFalse(os.path.exists(os.path.join(r.channel, 'host', 'commands', '7.json')))

    def test_wake(self):
        """K writes a byte to the runner's stdin."""
        r = self.relay()
        r.send(frame('K', ''))
        r.wait(lambda: 'woke 1' in r.kernel_file('kernel/log'))
        r.send(frame('K', ''))
        r.wait(lambda: 'woke 2' in r.kernel_file('kernel/log'))

    def test_sigint_pid(self):
        """GROUP 0: SIGINT to the relay reaches the runner only; the relay exits 128 + 2."""
        r = self.relay(0)
        r.proc.send_signal(signal.SIGINT)
        # The fake runner (sh) takes a SIGINT when its foreground read (dd) ends: a byte ends it.
        time.sleep(0.3)
        self.assertIsNone(r.proc.poll(), 'the SIGINT reached more than the runner (its read)')
        r.send(frame('K', ''))
        self.assertEqual(r.exit_code(), 130)
        time.sleep(0.5)
        self.assertFalse(os.path.exists(r.mark), 'the runner\'s group got the SIGINT')
        pid = int(open(r.mark + '.pid').read())
        os.kill(pid, 0)         # the helper in the runner's group lives on

    def test_sigint_group(self):
        """GROUP 1: SIGINT to the relay reaches the runner's process group."""
        r = self.relay(1)
        r.proc.send_signal(signal.SIGINT)
        self.assertEqual(r.exit_code(), 130)
        deadline = time.monotonic() + WAIT
        while not os.path.exists(r.mark) and time.monotonic() < deadline:
            time.sleep(0.05)
        self.assertTrue(os.path.exists(r.mark), 'the runner\'s group did not get the SIGINT')

    def test_exit_code(self):
        """The relay exits with the runner's code, after sending what it wrote last."""
        r = self.relay()
        r.send(frame('W', 'host/files/exit', 0, b'7\n', 1), frame('K', ''))
        self.assertEqual(r.exit_code(), 7)
        r.wait(lambda: ('EOF', '', 0, b'') in r.frames, 'the end of the stream')
        self.assertIn('woke 1', r.kernel_file('kernel/log'))

    def test_replaced_file(self):
        """A kernel file renamed over (a new file, longer) comes back whole, not spliced."""
        r = self.relay()
        r.send(frame('W', 'host/files/replace', 0, b'1', 1), frame('K', ''))
        r.wait(lambda: r.kernel_file('kernel/out/done') == 'replaced\n')
        self.assertEqual(r.kernel_file('kernel/out/r.csv'), 'NEW-' + '0' * 400, r.summary())

    def test_links_not_sent(self):
        """A link or FIFO the runner makes in kernel/plots is not sent, and blocks nothing."""
        r = self.relay()
        r.send(frame('W', 'host/files/links', 0, b'1', 1), frame('K', ''))
        r.wait(lambda: r.kernel_file('kernel/plots/after.png') == 'after\n')
        r.send(frame('P', '', 1))
        r.wait(lambda: ('P', '', 1, b'') in r.frames, 'the ping answer')
        r.send(frame('W', 'host/files/exit', 0, b'0', 1), frame('K', ''))
        self.assertEqual(r.exit_code(), 0)
        r.wait(lambda: ('EOF', '', 0, b'') in r.frames, 'the end of the stream')
        names = r.names()
        self.assertNotIn('kernel/plots/link.png', names)
        self.assertNotIn('kernel/plots/fifo.png', names)

    def test_orphans_at_exit(self):
        """As pid 1, orphans dying around the runner's end: the relay still ends with its code."""
        if os.geteuid() != 0 or not shutil.which('unshare'):
            self.skipTest('needs root and unshare for a pid namespace')
        for _ in range(10):
            tmp = tempfile.mkdtemp(prefix='cellbox-relay-')
            try:
                p = subprocess.Popen(['unshare', '--pid', '--fork', '--kill-child', RELAY, tmp,
                                      '0', 'sh', os.path.join(tmp, 'host', 'r.sh')],
                                     stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL)
                p.stdin.write(frame('W', 'host/r.sh', 0, ORPHAN_RUNNER.encode(), 1) +
                              frame('S', ''))
                p.stdin.flush()
                try:
                    self.assertEqual(p.wait(WAIT), 5)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()
                    self.fail('the relay missed its runner\'s end among the orphans')
                finally:
                    p.stdin.close()
            finally:
                shutil.rmtree(tmp, ignore_errors=True)


if __name__ == '__main__':
    if len(sys.argv) == 2 and not sys.argv[1].startswith('-'):
        sys.argv[1] = 'RelayTest.test_' + sys.argv[1]
    unittest.main(verbosity=2)
