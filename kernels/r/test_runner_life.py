"""Tests of runner.R's life against kernels/PROTOCOL.md, each with a runner of its own: a fresh
session, without repr, restart and shutdown, its helpers' end and size, the wake-up FIFO and
its absence, a channel removed, the stdin wake-up. The runner, its harness and the helpers are
test_runner's.

    /usr/bin/python3 -m unittest -v test_runner_life        (from kernels/r)
"""

import os
import shutil
import signal
import subprocess
import tempfile
import time
import unittest

from test_runner import RSCRIPT, Runner, done, harness, of_type, plots, shown


class LifecycleTest(unittest.TestCase):
    """Separate runners: restart, shutdown, the wake-up FIFO and its absence."""

    def test_fresh_session(self):
        r = Runner()
        try:
            # the user's global environment is the user's: nothing of the runner's in it
            self.assertEqual(shown(r.execute("ls(all.names = TRUE)")), ["character(0)"])
            self.assertEqual(shown(r.execute("interactive()")), ["[1] FALSE"])
            self.assertEqual(shown(r.execute("exists('.Random.seed')")), ["[1] FALSE"])
            # the packages Rscript attaches, in its order, though it started with none
            self.assertEqual(shown(r.execute("search()[2:7]")), [
                '[1] "package:stats"     "package:graphics"  "package:grDevices"\n'
                '[4] "package:utils"     "package:datasets"  "package:methods"  '])
            self.assertEqual(shown(r.execute("Sys.getenv('R_DEFAULT_PACKAGES')")), ['[1] ""'])
        finally:
            r.close()

    def test_without_repr(self):
        # a library without repr (an image without r-cran-repr): values as print() shows
        # them, text/plain alone, and the kernel starts all the same
        lib = tempfile.mkdtemp(prefix="cellbox-r-lib-")
        try:
            jsonlite = subprocess.check_output(
                [RSCRIPT, "-e", "cat(system.file(package = 'jsonlite'))"], text=True)
            os.symlink(jsonlite, os.path.join(lib, "jsonlite"))
            r = Runner(env={"R_LIBS_SITE": lib, "R_LIBS_USER": lib})
            try:
                self.assertEqual(shown(r.execute("(requireNamespace('repr', quietly = TRUE))")),
                                 ["[1] FALSE"])
                evs = r.execute("data.frame(a = 1:2, b = c(0.5, 2))\nc(u = 1)")
                self.assertEqual([sorted(d["data"]) for d in of_type(evs, "display")],
                                 [["text/plain"], ["text/plain"]])
                self.assertEqual(shown(evs), ["  a   b\n1 1 0.5\n2 2 2.0", "u \n1 "])
            finally:
                r.close()
        finally:
            shutil.rmtree(lib, ignore_errors=True)

    def test_restart_and_shutdown(self):
        channel = harness.restart_channel("cellbox-r-", b"")
        try:
            # a request left before start-up is served
            r = Runner(channel)
            try:
                evs = r.events("0000000001")
                self.assertEqual(shown(evs), ["[1] 42"])
                r.n = 1
                self.assertEqual(plots(r.execute("plot(1)"))[0]["index"], 8)
                helpers = r.helpers()
                self.assertEqual(len(helpers), 2)
                evs = r.request("shutdown")
                self.assertEqual(evs, [evs[-1]])
                self.assertEqual(done(evs)["status"], "ok")
                self.assertEqual(r.proc.wait(10), 0)
                for pid in helpers:              # the helpers go with the kernel
                    for _ in range(200):
                        if not os.path.exists("/proc/%d" % pid):
                            break
                        time.sleep(0.01)
                    self.assertFalse(os.path.exists("/proc/%d" % pid))
            finally:
                r.close()
        finally:
            shutil.rmtree(channel, ignore_errors=True)

    def test_helpers_end_when_the_kernel_is_killed(self):
        r = Runner()
        try:
            helpers = r.helpers()
            self.assertEqual(len(helpers), 2)
            os.kill(r.proc.pid, signal.SIGKILL)
            r.proc.wait()
            for pid in helpers:                  # EOF on their pipes ends them
                for _ in range(300):
                    try:
                        with open("/proc/%d/stat" % pid) as f:
                            if f.read().split(") ")[1][0] == "Z":
                                break
                    except OSError:
                        break
                    time.sleep(0.01)
                else:
                    self.fail("helper %d still runs" % pid)
        finally:
            r.close()

    def test_helpers_stay_small(self):
        r = Runner()
        try:
            def pss(pid):
                with open("/proc/%d/smaps_rollup" % pid) as f:
                    return [int(l.split()[1]) // 1024 for l in f if l.startswith("Pss:")][0]
            helpers = r.helpers()
            self.assertEqual(len(helpers), 2)
            # forked before any package was loaded: little of their own
            self.assertTrue(all(pss(p) < 30 for p in helpers), [pss(p) for p in helpers])
            r.execute('for (i in 1:8) cat(strrep("x", 5e6), "\\n")\n'
                      'for (i in 1:2000) { cat(i, "\\n"); message(i) }')
            # the reader's heap is collected as bulk output goes through it
            self.assertTrue(all(pss(p) < 60 for p in helpers), [pss(p) for p in helpers])
        finally:
            r.close()

    def test_blocked_on_the_fifo_costs_nothing(self):
        r = Runner()
        try:
            r.execute("1")
            def cpu():
                with open("/proc/%d/stat" % r.proc.pid) as f:
                    fields = f.read().split(") ")[1].split()
                return int(fields[11]) + int(fields[12]), fields[0]
            t0, _ = cpu()
            time.sleep(1.0)
            t1, state = cpu()
            self.assertEqual(state, "S")          # sleeping in read(), not polling
            self.assertLessEqual(t1 - t0, 1)      # clock ticks in a second idle
            with open("/proc/%d/wchan" % r.proc.pid) as f:
                self.assertIn("pipe", f.read())
        finally:
            r.close()

    def test_polling_fallback(self):
        for env, wake in (({"CELLBOX_RUNNER_NO_WAKE": "1"}, True), ({}, False)):
            r = Runner(env=env, wake=wake)
            try:
                self.assertNotIn("wake", r.ready)
                for i in range(3):
                    self.assertEqual(shown(r.execute("%d * 2" % i)), [str("[1] %d" % (i * 2))])
                self.assertIn("polling", r.read_log())
            finally:
                r.close()

    def test_channel_removed(self):
        r = Runner()
        try:
            self.assertEqual(done(r.execute("1"))["status"], "ok")
            # the host removes its channel, then its hold on the FIFO goes
            shutil.rmtree(r.channel)
            r.let_go()
            self.assertEqual(r.proc.wait(10), 0)
        finally:
            r.close()

    def test_no_host_costs_nothing(self):
        r = Runner()
        try:
            self.assertEqual(done(r.execute("1"))["status"], "ok")
            # a pool keeps a kernel nobody holds: it waits in open(), without polling
            r.let_go()
            time.sleep(0.3)
            with open("/proc/%d/stat" % r.proc.pid) as f:
                t0 = sum(int(x) for x in f.read().split(") ")[1].split()[11:13])
            time.sleep(1.0)
            with open("/proc/%d/stat" % r.proc.pid) as f:
                fields = f.read().split(") ")[1].split()
            self.assertEqual(fields[0], "S")
            self.assertLessEqual(sum(int(x) for x in fields[11:13]) - t0, 1)
            with open("/proc/%d/wchan" % r.proc.pid) as f:
                self.assertEqual(f.read(), "wait_for_partner")   # blocked opening the FIFO
            # the next host opens it and is served at once
            r.wake_fd = os.open(os.path.join(r.channel, "host", "wake"),
                                os.O_RDWR | os.O_NONBLOCK | os.O_CLOEXEC)
            t0 = time.monotonic()
            self.assertEqual(shown(r.execute("2")), ["[1] 2"])
            self.assertLess(time.monotonic() - t0, 5)
        finally:
            r.close()

    def test_stdin_wakeup(self):
        """CELLBOX_WAKE=stdin (a container): a byte on stdin per command wakes the runner."""
        rfd, wfd = os.pipe()
        r = Runner(env={"CELLBOX_WAKE": "stdin"}, wake=False, stdin=rfd)
        os.close(rfd)
        try:
            self.assertEqual(r.ready["wake"], "stdin")
            r.wake_stdin = lambda: os.write(wfd, b"w")
            for i in range(3):
                self.assertEqual(shown(r.execute("%d + 1" % i)), ["[1] %d" % (i + 1)])
            # without the byte the command waits (nothing else wakes it)
            rid, held = r.unwoken("5", 0.5)
            self.assertEqual(held, b"")
            os.write(wfd, b"w")
            self.assertEqual(shown(r.events(rid)), ["[1] 5"])
            # the host's end gone: it polls from now on
            r.wake_stdin = None
            os.close(wfd)
            wfd = -1
            self.assertEqual(shown(r.execute("6")), ["[1] 6"])
        finally:
            if wfd >= 0:
                os.close(wfd)
            r.close()


if __name__ == "__main__":
    unittest.main()
