"""Tests of the Python runner (runner.zip) as a process: its start, its end and restarts, its
wake-ups without inotify, and the policy's import hook (kernels/PROTOCOL.md). The
request-by-request cases are test_runner.py's; this file shares its helpers.

    /usr/bin/python3 -m unittest kernels/python/test_runner_process.py
"""

import base64
import fcntl
import os
import shutil
import struct
import sys
import tempfile
import termios
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
import runner_harness as harness
from runner_harness import done, make_channel, of_type, text

from test_runner import Runner, tiny_png


class LifecycleTest(unittest.TestCase):
    """Separate runners: plot numbering after a restart, shutdown, channel removal."""

    def test_restart_and_shutdown(self):
        channel = harness.restart_channel("cellbox-", tiny_png())
        try:
            # a request left before start-up is served
            r = Runner(channel)
            try:
                self.assertLess(r.startup, 5.0)
                evs = r.events("0000000001")
                self.assertEqual(of_type(evs, "result")[0]["data"]["text/plain"], "42")
                r.n = 1
                png = base64.b64encode(tiny_png()).decode()
                evs = r.execute("from IPython.display import Image\n"
                                "Image(data=__import__('base64').b64decode('%s'))" % png)
                plot = [e for e in of_type(evs, "result") if "plot" in e][0]["plot"]
                self.assertEqual(plot["index"], 8)
                self.assertEqual(of_type(evs, "result")[0]["data"]["text/plain"],
                                 "<IPython.core.display.Image object>")
                self.assertNotIn("Traceback", r.read_log())
                evs = r.request("shutdown")
                self.assertEqual(evs, [evs[-1]])
                self.assertEqual(done(evs)["status"], "ok")
                self.assertEqual(r.proc.wait(10), 0)
            finally:
                r.close()
        finally:
            shutil.rmtree(channel, ignore_errors=True)

    def test_polling_fallback(self):
        r = Runner(env={"CELLBOX_RUNNER_NO_INOTIFY": "1"})
        try:
            # the completer is built lazily: %config must still know it in a first cell
            evs = r.execute("%config IPCompleter.greedy = False")
            self.assertEqual(done(evs)["status"], "ok", evs)
            for i in range(3):
                evs = r.execute("%d * 2" % i)
                self.assertEqual(of_type(evs, "result")[0]["data"]["text/plain"], str(i * 2))
            self.assertIn("polling", r.read_log())
            # an internal failure still ends the request, with its traceback in the log
            evs = r.request("inspect", code="len", cursor_pos="not a number")
            self.assertEqual(done(evs)["status"], "error")
            self.assertEqual(len(of_type(evs, "error")), 1)
            self.assertIn("Traceback", r.read_log())
            self.assertEqual(of_type(r.execute("1"), "result")[0]["data"]["text/plain"], "1")
        finally:
            r.close()
        self.assertEqual(r.proc.returncode, 0)

    def test_wake_fifo_without_inotify(self):
        channel = tempfile.mkdtemp(prefix="cellbox-test-")
        make_channel(channel)
        os.mkfifo(os.path.join(channel, "host", "wake"), 0o600)
        # held as the host holds it, from before the runner starts
        wfd = os.open(os.path.join(channel, "host", "wake"), os.O_RDWR | os.O_NONBLOCK)
        r = Runner(channel, env={"CELLBOX_RUNNER_NO_INOTIFY": "1"})
        try:
            self.assertEqual(r.ready["wake"], "fifo")
            self.assertNotIn("polling", r.read_log())

            def until(what, cond):
                t0 = time.monotonic()
                while not cond():
                    self.assertLess(time.monotonic() - t0, 10, what)
                    time.sleep(0.01)

            def asleep():
                with open("/proc/%d/wchan" % r.proc.pid) as f:
                    return "poll" in f.read()

            def unread():
                return struct.unpack("i", fcntl.ioctl(wfd, termios.FIONREAD, b"\0" * 4))[0]

            for i in range(3):
                until("asleep on the FIFO", asleep)
                rid = r.send("execute", code="%d * 3" % i)
                os.write(wfd, b"w")
                evs = r.events(rid)
                self.assertEqual(of_type(evs, "result")[0]["data"]["text/plain"], str(i * 3))
                until("the wake-up byte taken", lambda: unread() == 0)
            until("asleep on the FIFO", asleep)
            # no host: the runner keeps waiting (no spinning), and serves the next one
            os.close(wfd)
            time.sleep(0.3)
            with open("/proc/%d/stat" % r.proc.pid) as f:
                t1 = sum(int(x) for x in f.read().split(") ")[1].split()[11:13])
            time.sleep(1.0)
            with open("/proc/%d/stat" % r.proc.pid) as f:
                t2 = sum(int(x) for x in f.read().split(") ")[1].split()[11:13])
            self.assertLessEqual(t2 - t1, 2)
            wfd = os.open(os.path.join(channel, "host", "wake"), os.O_RDWR | os.O_NONBLOCK)
            rid = r.send("execute", code="'back'")
            os.write(wfd, b"w")
            self.assertEqual(of_type(r.events(rid), "result")[0]["data"]["text/plain"], "'back'")
        finally:
            r.close()
            os.close(wfd)
            shutil.rmtree(channel, ignore_errors=True)

    def test_channel_removed(self):
        r = Runner()
        try:
            self.assertEqual(r.execute("1")[-1]["status"], "ok")
            shutil.rmtree(r.channel)
            self.assertEqual(r.proc.wait(5), 0)
        finally:
            r.close()

    def test_stdin_wakeup(self):
        """CELLBOX_WAKE=stdin: no inotify; a byte on stdin per command wakes the runner."""
        rfd, wfd = os.pipe()
        r = Runner(env={"CELLBOX_WAKE": "stdin"}, stdin=rfd)
        os.close(rfd)
        r.wake_stdin = lambda: os.write(wfd, b"w")
        try:
            t0 = time.monotonic()
            for i in range(20):
                evs = r.execute("%d + 1" % i)
                self.assertEqual(of_type(evs, "result")[0]["data"]["text/plain"], str(i + 1))
            # woken, not polling: 20 cells well within the 1 s channel check each would cost
            self.assertLess(time.monotonic() - t0, 10)
            self.assertNotIn("polling", r.read_log())
            # without the byte the command waits (inotify is not what wakes it)
            rid, held = r.unwoken("'late'", 0.3)
            self.assertEqual(held, b"")
            os.write(wfd, b"w")
            self.assertEqual(done(r.events(rid))["status"], "ok")
        finally:
            os.close(wfd)
            r.close()

    def test_memory_error_in_the_runner(self):
        """The runner's own loop out of memory: it answers, does not spin, its log stays small."""
        r = Runner()
        try:
            evs = r.execute(
                "import resource, re\n"
                "vm = int(re.search(r'VmSize:\\s+(\\d+)', open('/proc/self/status').read())"
                ".group(1)) * 1024\n"
                "resource.setrlimit(resource.RLIMIT_AS, (vm + (64 << 20), resource.RLIM_INFINITY))\n"
                "ballast = []\n"
                "try:\n"
                "    while True: ballast.append(bytearray(1 << 16))\n"
                "except MemoryError:\n"
                "    pass\n")
            self.assertEqual(done(evs)["type"], "done")
            # the next requests are served (the loop let go of its reserve), not spun on
            cpu0 = os.times()
            evs = r.execute("del ballast[:]\n'freed'", wait=20)
            self.assertEqual(done(evs)["status"], "ok", evs)
            self.assertEqual(of_type(r.execute("1 + 1"), "result")[0]["data"]["text/plain"], "2")
            self.assertLess(len(r.read_log()), 2 << 20)
        finally:
            r.close()

    def test_log_is_capped(self):
        r = Runner()
        try:
            # diagnostics of the runner itself (no request: stream text goes to the log)
            evs = r.execute("import _cellbox_runner as cr\n"
                            "for i in range(5000): cr._log('x' * 1000)")
            self.assertEqual(done(evs)["status"], "ok")
            log = r.read_log()
            self.assertLess(len(log), (1 << 20) + 4096)
            self.assertIn("log capped", log)
        finally:
            r.close()



class PolicyHookTest(harness.RunnerCase):
    """The security policy's import hook (request `policy`), in a runner of its own."""

    runner = Runner
    failure = "Traceback"

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        evs = cls.r.request("policy", policy="t", modules=[
            {"name": "os", "description": "Operating system interface", "severity": "HIGH"},
            {"name": "subprocess", "description": "Subprocess", "severity": "HIGH"}])
        assert done(evs)["status"] == "ok", evs
        cls.reply = of_type(evs, "reply")[0]

    def refused(self, code, **kw):
        evs = self.r.execute(code, **kw)
        if not code.startswith("%"):        # %time shows the error and ends well itself
            self.assertEqual(done(evs)["status"], "error", evs)
        err = of_type(evs, "error")[0]
        self.assertEqual(err["ename"], "SecurityViolation", evs)
        return err["evalue"]

    def test_reply(self):
        self.assertEqual(self.reply["modules"], ["os", "subprocess"])

    def test_names_built_at_run_time(self):
        msg = self.refused("m = __import__('o' + 's')")
        self.assertEqual(msg, "import of 'os' refused by the security policy 't' "
                              "(module os: Operating system interface, HIGH)")
        self.refused("import importlib\nimportlib.import_module('sub' + 'process')")
        self.refused("import importlib\nimportlib.__import__('o' + 's')")
        self.refused("exec('imp' + 'ort os')")

    def test_every_import_form(self):
        self.refused("import os.path")
        self.refused("from os import path")
        self.refused("import json, subprocess")
        self.refused("def f():\n    import os\nf()")       # a function of the cell is the user's
        self.refused("%time import os")

    def test_libraries_import_freely(self):
        # shutil and tempfile import os themselves: library code is not the user's.
        evs = self.r.execute("import shutil, tempfile, json\nprint(json.dumps(shutil.which('sh') "
                             "is not None))")
        self.assertEqual(done(evs)["status"], "ok", evs)
        self.assertEqual(text(evs), "true\n")

    def test_refusal_is_an_import_error(self):
        evs = self.r.execute("try:\n    import os\nexcept ImportError as e:\n    print('no', type(e).__name__)")
        self.assertEqual(done(evs)["status"], "ok", evs)
        self.assertEqual(text(evs), "no SecurityViolation\n")

    def test_trusted_requests_are_not_checked(self):
        evs = self.r.execute("print(__import__('os').sep)", trusted=True, silent=True)
        self.assertEqual(done(evs)["status"], "ok", evs)
        self.assertEqual(text(evs), "/\n")
        self.refused("__import__('os')")      # and the hook is back for the next cell

    def test_runner_modules_are_the_runners(self):
        # Every file of the runner package (runner.zip/runner/<module>.py) is the runner's own
        # to the hook, not only the one that holds it; a cell's frames are the user's; code is
        # judged by its file, not its globals: a string eval'd in the runner's or a library's
        # namespace is still the user's (issue 24: timeit ran `import os` in its own globals).
        evs = self.r.execute(
            "import sys\n"
            "g = sys.modules['runner.guard']\n"
            "pl = sys.modules['runner.plots']\n"
            "class Loader:\n"
            "    def exec_module(self, module):\n"
            "        global frame\n"
            "        frame = sys._getframe(1)\n"
            "pl._HookedLoader(Loader(), lambda m: None).exec_module(None)\n"
            "print(frame.f_code.co_name, frame.f_code.co_filename)\n"
            "print(g._from_user(frame), g._from_user(sys._getframe()))\n"
            "mods = sorted(n for n in sys.modules if n.startswith('runner.'))\n"
            "print(*mods)\n"
            "print(*[g._from_user(eval('__import__(\"sys\")._getframe()', vars(sys.modules[n])))\n"
            "        for n in mods])\n"
            "import shutil\n"
            "print(g._from_user(sys._getframe()),\n"
            "      g._from_user(eval('__import__(\"sys\")._getframe()', vars(shutil))),\n"
            "      g._from_user(sys._getframe().f_back))")
        self.assertEqual(done(evs)["status"], "ok", evs)
        where, verdict, mods, each, user = text(evs).splitlines()
        name, path = where.split(" ", 1)
        self.assertEqual(name, "exec_module")
        self.assertTrue(path.endswith(os.path.join("runner.zip", "runner", "plots.py")), path)
        self.assertEqual(verdict, "False True")
        self.assertEqual(mods.split(), ["runner." + m for m in (
            "capture", "egress", "events", "fork", "guard", "plots", "requests", "serve", "shell", "state",
            "waiting", "zygote")])
        self.assertEqual(set(each.split()), {"True"})     # eval'd text: the user's, anywhere
        self.assertEqual(user, "True True False")   # the cell's; eval'd in shutil's; IPython's

    def test_library_runs_a_code_string(self):
        # A library running the user's string (in its own globals or not) runs the user's code.
        self.refused("import timeit\ntimeit.timeit('import os', number=1)")
        self.refused("import timeit, shutil\ntimeit.timeit('import os', number=1, "
                     "globals=vars(shutil))")
        self.refused("import cProfile, tempfile\ncProfile.Profile().runctx('import os', "
                     "vars(tempfile), None)")

    def test_processes_refused_whoever_asks(self):
        for code in ("import tempfile\ntempfile._os.system('true')",
                     "import asyncio\nasyncio.subprocess.subprocess.run(['true'])",
                     "import pydoc\npydoc.pipepager('x', 'cat')",
                     "import shutil\nshutil.os.fork()"):
            msg = self.refused(code)
            self.assertRegex(msg, r"^starting a process \((os\.system|subprocess\.Popen|"
                                  r"os\.fork)\) refused by the security policy 't'$", code)
        msg = self.refused("import asyncio\nasyncio.subprocess.subprocess._fork_exec()")
        self.assertEqual(msg, "starting a process refused by the security policy 't'")
        self.assertIn("module posix", self.refused("import posix"))

    def test_libraries_that_cope_without_a_process_go_on(self):
        # A refused process is an OSError (PermissionError, EPERM), as a failure to start one
        # is: platform runs `file` (and `uname -p`, which pandas' import asks for) and copes.
        evs = self.r.execute("import platform, tempfile\nprint(platform.architecture()[0])\n"
                             "try:\n    tempfile._os.system('true')\n"
                             "except PermissionError as e:\n    print('refused', e.errno)")
        self.assertEqual(done(evs)["status"], "ok", evs)
        self.assertEqual(text(evs), "64bit\nrefused 1\n")

    def test_code_under_a_librarys_name(self):
        # User code must not pass for a library's by its file name.
        lib = "json.__file__"
        self.assertIn("compiled under a library's name", self.refused(
            "import json\nc = compile('import os', %s, 'exec')" % lib))
        self.assertIn("a code object under a library's name", self.refused(
            "import json\nc = (lambda: 0).__code__.replace(co_filename=%s)" % lib))
        self.assertIn("marshal.loads refused", self.refused(
            "import marshal\nmarshal.loads(marshal.dumps((lambda: 0).__code__))"))

    def test_bad_request(self):
        evs = self.r.request("policy", modules="os")
        self.assertEqual(done(evs)["status"], "error")
        self.assertEqual(of_type(evs, "error")[0]["ename"], "RequestError")

class ForkTest(unittest.TestCase):
    """The fork request (PROTOCOL.md): a copy of the runner process serves another channel,
    with the kernel's state; the old one serves its own on."""

    def setUp(self):
        self.r = Runner()
        self.channel = tempfile.mkdtemp(prefix="cellbox-fork-")
        make_channel(self.channel)
        self.copy = None

    def tearDown(self):
        if self.copy:
            try:
                os.kill(self.copy, 9)
            except ProcessLookupError:
                pass
        self.r.close()
        shutil.rmtree(self.channel, ignore_errors=True)

    def driver(self):
        """A harness driving the copy's channel (the copy is no child of ours)."""
        d = harness.Runner.__new__(harness.Runner)
        d.channel, d.timeout, d.wake_fd, d.wake_stdin, d.n = self.channel, 30.0, -1, None, 0
        d.proc = type("Copy", (), {"poll": lambda _: None, "returncode": None})()
        return d

    def test_fork_serves_the_new_channel_with_the_state(self):
        evs = self.r.execute("import random, os\nr = random.random()\nprint(r)")
        r0 = text(evs)
        evs = self.r.request("fork", channel=self.channel)
        self.assertEqual(done(evs)["status"], "ok", evs)
        import json
        with open(os.path.join(self.channel, "kernel", "ready")) as f:
            ready = json.loads(f.read())
        self.copy = ready["pid"]
        self.assertNotEqual(self.copy, self.r.proc.pid)
        c = self.driver()
        evs = c.execute("print(r)\nimport sys\nprint('err', file=sys.stderr)\n"
                        "os.system('echo from-a-child')")
        self.assertEqual(text(evs), r0 + "from-a-child\n")
        self.assertEqual(text(evs, "stderr"), "err\n")
        self.assertEqual(text(c.execute("import sys; print(sys.argv[-1])")),
                         self.channel + "\n")
        c.execute("r = 0")
        self.assertEqual(text(c.execute("print(r)")), "0\n")
        self.assertEqual(text(self.r.execute("print(r)")), r0)     # the old one's own
        with open(os.path.join(self.channel, "kernel", "log")) as f:
            self.assertNotIn("Traceback", f.read())

    def test_fork_needs_a_channel(self):
        for bad in ("relative/path", 5, "/nonexistent/channel"):
            evs = self.r.request("fork", channel=bad)
            self.assertEqual(done(evs)["status"], "error", evs)
            self.assertEqual(of_type(evs, "error")[0]["ename"], "RequestError")
        self.assertEqual(text(self.r.execute("print(1)")), "1\n")


if __name__ == "__main__":
    unittest.main()
