"""The harness of the runners' own tests (python/test_runner.py, r/test_runner.py).

What it offers, the same for every kernel:

    make_channel(dir)      the channel layout the host makes (PROTOCOL.md)
    Runner(command, ...)   a runner process in a temporary channel, driven as the host drives
                           it: commands as tmp + rename, events read back from
                           kernel/results/<id>.jsonl, the wake-up FIFO held as the host holds it
    of_type, text, done,   what a request's events say
    merged_streams
    RunnerCase             a TestCase base: one runner shared by the tests of the class, its log
                           checked for the runner's own failures at the end, run_ok(),
                           is_complete(), big_output(), answer_input(), bad_commands()
    restart_channel()      a channel with plots and a request left from before the start
    as_shipped(env, ...)   a runner file as the build ships it (runner.zip, runner.R)
    embed()                scripts/embed.py, the build's own packer

The kernel's parts are passed in: the interpreter and runner command, the environment it starts
with, the names of its temporary directories, the word its log uses for a failure.
"""

import atexit
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest


def embed():
    """scripts/embed.py, the module the build packs the runners with."""
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                    "scripts"))
    import embed as module
    return module


def as_shipped(env, name, make):
    """A runner file as the build ships it: the build's own (the path in environment variable
    `env`, which meson test sets), else `name` in a temporary directory (removed at exit)
    holding the bytes make(embed()) gives: made here as the build makes it."""
    path = os.environ.get(env)
    if path:
        return path
    tmp = tempfile.mkdtemp(prefix="cellbox-runner-")
    atexit.register(shutil.rmtree, tmp, True)
    path = os.path.join(tmp, name)
    with open(path, "wb") as f:
        f.write(make(embed()))
    return path


def make_channel(channel):
    """The layout the host makes (PROTOCOL.md): host/commands, kernel/{ready,log,results,plots}."""
    for d in ("host/commands", "kernel/results", "kernel/plots", "kernel/out"):
        os.makedirs(os.path.join(channel, d), exist_ok=True)
    for f in ("ready", "log"):
        open(os.path.join(channel, "kernel", f), "ab").close()


class Runner:
    """A runner process in a temporary channel directory, driven like the host drives it.

    `command` is the runner's command line without the channel (appended); `wake` holds the
    channel's wake-up FIFO open as the host does (made when missing); `new_session` starts it
    in a process group of its own, which close() kills; `timeout` bounds every wait.
    """

    def __init__(self, command, channel=None, env=None, wake=False, stdin=subprocess.DEVNULL,
                 new_session=False, prefix="cellbox-", timeout=30.0):
        self.timeout = timeout
        self.new_session = new_session
        self.own_channel = channel is None
        self.channel = channel or tempfile.mkdtemp(prefix=prefix + "test-")
        self.cwd = tempfile.mkdtemp(prefix=prefix + "cwd-")
        make_channel(self.channel)
        self.wake_fd = -1
        self.wake_stdin = None      # a callable, for a runner woken through its stdin
        if wake:
            path = os.path.join(self.channel, "host", "wake")
            if not os.path.exists(path):
                os.mkfifo(path, 0o600)
            # as the host holds it: read-write, so the runner has a writer and never blocks
            self.wake_fd = os.open(path, os.O_RDWR | os.O_NONBLOCK | os.O_CLOEXEC)
        self.log = open(os.path.join(self.channel, "kernel", "log"), "ab")
        t0 = time.monotonic()
        self.proc = subprocess.Popen(command + [self.channel], stdin=stdin,
                                     stdout=self.log, stderr=self.log, cwd=self.cwd,
                                     env=dict(os.environ, **(env or {})),
                                     start_new_session=new_session)
        ready = os.path.join(self.channel, "kernel", "ready")
        while True:
            with open(ready, "rb") as f:
                line = f.read()
            if line.endswith(b"\n"):     # written in place, taken once it ends so
                break
            if self.proc.poll() is not None:
                raise RuntimeError("runner exited with %s before ready:\n%s"
                                   % (self.proc.returncode, self.read_log()))
            if time.monotonic() - t0 > self.timeout:
                raise RuntimeError("runner not ready:\n" + self.read_log())
            time.sleep(0.002)
        self.startup = time.monotonic() - t0
        self.ready = json.loads(line)
        self.n = 0

    def read_log(self):
        try:
            with open(os.path.join(self.channel, "kernel", "log"), encoding="utf-8",
                      errors="replace") as f:
                return f.read()
        except OSError:
            return ""

    def wake(self):
        if self.wake_stdin:
            self.wake_stdin()
        if self.wake_fd >= 0:
            try:
                os.write(self.wake_fd, b"w")
            except BlockingIOError:
                pass

    def write_file(self, name, obj, wake=True):
        path = os.path.join(self.channel, "host", "commands", name)
        data = obj if isinstance(obj, bytes) else json.dumps(obj).encode()
        with open(path + ".tmp", "wb") as f:
            f.write(data)
        os.rename(path + ".tmp", path)
        if wake:
            self.wake()

    def results_path(self, rid):
        return os.path.join(self.channel, "kernel", "results", rid + ".jsonl")

    def send(self, kind, wake=True, **fields):
        self.n += 1
        rid = "%010d" % self.n
        fields.update(id=rid, kind=kind)
        # the host makes the results file first, then the command
        open(self.results_path(rid), "ab").close()
        self.write_file(rid + ".json", fields, wake=wake)
        return rid

    def unwoken(self, code, pause):
        """Send `code` without waking the runner: its request id, and what its results file
        held `pause` seconds later (wake it, then take its events())."""
        rid = self.send("execute", wake=False, code=code)
        time.sleep(pause)
        with open(self.results_path(rid), "rb") as f:
            return rid, f.read()

    def let_go(self):
        """The host's hold on the wake-up FIFO goes (the host gone, or none yet)."""
        os.close(self.wake_fd)
        self.wake_fd = -1

    def events(self, rid, until="done", timeout=None):
        """Events of request rid, once one of type `until` has arrived."""
        path = self.results_path(rid)
        timeout = self.timeout if timeout is None else timeout
        t0 = time.monotonic()
        while True:
            try:
                with open(path, "rb") as f:
                    data = f.read()
            except FileNotFoundError:
                data = b""
            lines = data.split(b"\n")[:-1]          # only complete lines
            evs = [json.loads(line.decode("utf-8")) for line in lines]
            if any(e["type"] == until for e in evs):
                return evs
            if self.proc.poll() is not None:
                raise AssertionError("runner died (%s) during request %s: %r\n%s"
                                     % (self.proc.returncode, rid, evs, self.read_log()))
            if time.monotonic() - t0 > timeout:
                raise AssertionError("timeout waiting for %s of %s: %r\n%s"
                                     % (until, rid, evs, self.read_log()))
            time.sleep(0.002)

    def request(self, kind, wait=None, **fields):
        """Send a request (`fields` are the command's) and take its events up to the done,
        waiting `wait` seconds at most (the runner's default timeout when None)."""
        evs = self.events(self.send(kind, **fields), timeout=wait)
        assert evs[-1]["type"] == "done", evs
        return evs

    def execute(self, code, wait=None, **fields):
        return self.request("execute", wait=wait, code=code, **fields)

    def close(self, wait=5):
        """Shut it down as the host does (killed after `wait` seconds), remove what it had."""
        if self.proc.poll() is None:
            try:
                self.request("shutdown")
            except Exception:
                pass
            try:
                self.proc.wait(wait)
            except subprocess.TimeoutExpired:
                if not self.new_session:
                    self.proc.kill()
        if self.new_session:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)    # anything the session left behind
            except OSError:
                pass
        if self.proc.poll() is None:
            self.proc.wait()
        if self.wake_fd >= 0:
            os.close(self.wake_fd)
            self.wake_fd = -1
        self.log.close()
        if self.own_channel:
            shutil.rmtree(self.channel, ignore_errors=True)
        shutil.rmtree(self.cwd, ignore_errors=True)


def of_type(evs, kind):
    return [e for e in evs if e["type"] == kind]


def text(evs, name="stdout"):
    return "".join(e["text"] for e in evs if e["type"] == "stream" and e["name"] == name)


def done(evs):
    return evs[-1]


def merged_streams(evs):
    """The streams in their order: [name, text] a run, a stream's consecutive texts joined."""
    merged = []
    for e in of_type(evs, "stream"):
        if merged and merged[-1][0] == e["name"]:
            merged[-1][1] += e["text"]
        else:
            merged.append([e["name"], e["text"]])
    return merged


class RunnerCase(unittest.TestCase):
    """One runner shared by the tests (a session, as the host has): a subclass names the
    kernel's runner class (`runner`) and the word its log uses for a failure (`failure`)."""

    runner = None
    failure = "Traceback"

    @classmethod
    def setUpClass(cls):
        cls.r = cls.runner()

    @classmethod
    def tearDownClass(cls):
        log = cls.r.read_log()
        cls.r.close()
        # the runner logs its own failures
        assert cls.failure not in log, log

    def run_ok(self, code, **kw):
        evs = self.r.execute(code, **kw)
        self.assertEqual(done(evs)["status"], "ok", evs)
        return evs

    def is_complete(self, code):
        """The is_complete reply to `code`: (status, indent)."""
        reply = of_type(self.r.request("is_complete", code=code), "reply")[0]
        return reply["status"], reply["indent"]

    def big_output(self, code, n):
        """`code` writes n x's and a newline: they come whole, in stream events of 64 KiB at
        the most."""
        evs = self.run_ok(code)
        streams = of_type(evs, "stream")
        self.assertTrue(all(len(e["text"]) <= 65536 for e in streams))
        self.assertGreaterEqual(len(streams), (n + 1) // 65536)
        self.assertEqual(text(evs), "x" * n + "\n")

    def answer_input(self, code, want):
        """`code` asks "who? " once (not for a password): answered "bob", it ends well, having
        written `want` to stdout."""
        r = self.r
        rid = r.send("execute", code=code, allow_stdin=True)
        req = of_type(r.events(rid, until="input_request"), "input_request")[0]
        self.assertEqual(req, {"type": "input_request", "prompt": "who? ", "password": False})
        r.write_file(rid + ".1.input", {"value": "bob"})
        evs = r.events(rid)
        self.assertEqual(done(evs)["status"], "ok")
        self.assertEqual(text(evs), want)

    def bad_commands(self):
        """Commands the runner must refuse, each ended with an error and served once (the
        runner's own part of test_bad_commands): not JSON, an unknown kind, code not a string."""
        r = self.r
        r.write_file("0000099901.json", b"{not json")
        evs = r.events("0000099901")
        self.assertEqual(done(evs)["status"], "error")
        self.assertEqual([e["ename"] for e in of_type(evs, "error")], ["RequestError"])
        # host/ is read-only to a container's runner: the command stays (the host removes it)
        # and is not served again
        self.assertTrue(os.path.exists(os.path.join(r.channel, "host", "commands",
                                                    "0000099901.json")))
        r.write_file("0000099902.json", {"id": "0000099902", "kind": "frobnicate"})
        self.assertEqual(done(r.events("0000099902"))["status"], "error")
        r.write_file("0000099903.json", {"id": "0000099903", "kind": "execute", "code": 5})
        self.assertEqual(done(r.events("0000099903"))["status"], "error")


def restart_channel(prefix, plot):
    """A channel as a restarted kernel finds it: plots 3 and 7 (`plot`'s bytes) left by the one
    before, and request 0000000001 (40 + 2) written before it starts."""
    channel = tempfile.mkdtemp(prefix=prefix + "test-")
    make_channel(channel)
    for n in (3, 7):
        with open(os.path.join(channel, "kernel", "plots", "%d.png" % n), "wb") as f:
            f.write(plot)
    with open(os.path.join(channel, "host", "commands", "0000000001.json"), "w") as f:
        json.dump({"id": "0000000001", "kind": "execute", "code": "40 + 2"}, f)
    return channel
