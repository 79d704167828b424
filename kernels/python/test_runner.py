"""Tests of the Python runner (the package runner/, as it ships: runner.zip, see
test_runner_zip.py) against kernels/PROTOCOL.md. Plots and rich outputs are
test_runner_plots.py's, the runner as a process test_runner_process.py's.

Each test talks to a real runner process the way the cellbox host does: the host part
<channel>/host/commands gets command files (tmp + rename), the kernel part <channel>/kernel has the
ready and log files and results/<id>.jsonl (made by the host before its command), where the
events are read back. The runner is the build's zip (CELLBOX_RUNNER_ZIP, which meson test
sets), else one zipped here from runner/ as the build zips it (scripts/embed.py).

    /usr/bin/python3 kernels/python/test_runner.py
    /usr/bin/python3 -m unittest kernels/python/test_runner.py
"""

import glob
import json
import os
import re
import signal
import struct
import subprocess
import sys
import time
import unittest
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
import runner_harness as harness
from runner_harness import done, of_type, text

from test_runner_zip import PACKAGE, PROTOCOL_SOURCE, RUNNER  # noqa: E402
PYTHON = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else sys.executable
TIMEOUT = 30.0


def tiny_png(w=3, h=2):
    def chunk(kind, data):
        return (struct.pack(">I", len(data)) + kind + data
                + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF))
    raw = b"".join(b"\x00" + b"\xff\x00\x00" * w for _ in range(h))
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))


class Runner(harness.Runner):
    """runner.zip on the interpreter, in a temporary channel directory (runner_harness.Runner)."""

    def __init__(self, channel=None, env=None, stdin=subprocess.DEVNULL):
        super().__init__([PYTHON, RUNNER], channel=channel, env=env, stdin=stdin,
                         timeout=TIMEOUT)


class RunnerCase(harness.RunnerCase):
    """One runner shared by a class's tests; the runner logs its own failures with a
    traceback. (No tests of its own: test_runner_plots.py's class shares it.)"""

    runner = Runner
    failure = "Traceback"

    def result(self, evs):
        res = of_type(evs, "result")
        self.assertEqual(len(res), 1, evs)
        return res[0]["data"]["text/plain"]


class RunnerTest(RunnerCase):
    """Cells, streams, errors, IPython's features, requests, input() and SIGINT."""

    # -- basics

    def test_ready(self):
        ready = self.r.ready
        # The runner's PROTOCOL line is the one source of the version (scripts/embed.py).
        with open(PROTOCOL_SOURCE, encoding="utf-8") as f:
            line = [l for l in f if l.startswith("PROTOCOL = ")]
        self.assertEqual(len(line), 1)
        for path in glob.glob(os.path.join(PACKAGE, "*.py")):      # ... and the only one
            if path != PROTOCOL_SOURCE:
                with open(path, encoding="utf-8") as f:
                    self.assertNotRegex(f.read(), r"(?m)^PROTOCOL\b", path)
        self.assertEqual(ready["protocol"], int(line[0].split("=")[1]))
        self.assertGreaterEqual(ready["protocol"], 1)
        self.assertEqual(ready["pid"], self.r.proc.pid)
        version = subprocess.check_output(
            [PYTHON, "-c", "import sys; print('%d.%d.%d' % sys.version_info[:3])"], text=True)
        self.assertEqual(ready["python"], version.strip())
        self.assertRegex(ready["ipython"], r"^\d+\.\d+")
        self.assertEqual(ready["cwd"], os.path.realpath(self.r.cwd))
        # the runner made nothing of its own at the top of the kernel part, nor in the host's
        self.assertEqual(sorted(os.listdir(os.path.join(self.r.channel, "kernel"))),
                         ["log", "out", "plots", "ready", "results"])
        self.assertEqual(os.listdir(os.path.join(self.r.channel, "host")), ["commands"])

    def test_state_and_result(self):
        self.run_ok("x_state = 41")
        evs = self.run_ok("x_state + 1")
        self.assertEqual(self.result(evs), "42")
        res = of_type(evs, "result")[0]
        self.assertEqual(res["execution_count"], done(evs)["execution_count"])
        evs = self.run_ok("1+1")
        self.assertEqual(self.result(evs), "2")
        self.assertEqual(evs[-1]["type"], "done")
        self.assertIsInstance(done(evs)["duration"], float)
        # Out / _ / In work (history is in memory)
        n = done(evs)["execution_count"]
        evs = self.run_ok("(Out[%d], _, In[%d])" % (n, n))
        self.assertEqual(self.result(evs), "(2, 2, '1+1')")
        # the last inputs and results, which the runner keeps as plain attributes, not traits
        self.run_ok("'a'")
        self.run_ok("'b'")
        evs = self.run_ok("(_i, _ii, _iii, __, ___, _i%d)" % n)
        self.assertEqual(self.result(evs), "(\"'b'\", \"'a'\", '(Out[%d], _, In[%d])', 'a', "
                         "(2, 2, '1+1'), '1+1')" % (n, n))
        self.assertEqual(done(self.r.execute("1/0"))["status"], "error")
        evs = self.run_ok("ip = get_ipython(); ip.last_execution_succeeded, "
                          "type(ip.last_execution_result.error_in_exec).__name__")
        self.assertEqual(self.result(evs), "(False, 'ZeroDivisionError')")
        evs = self.run_ok("get_ipython().last_execution_succeeded, get_ipython().execution_count")
        self.assertEqual(self.result(evs), "(True, %d)" % done(evs)["execution_count"])
        evs = self.run_ok("%history -l 1")   # no SQLite history: must not fail
        evs = self.run_ok("%history -n")
        self.assertIn("x_state = 41", text(evs))

    def test_top_level_await(self):
        # IPython's autoawait: a cell with a top-level await, async for or async with runs on
        # its loop (the runner asks IPython only about cells with the words in them)
        self.run_ok("import asyncio\nasync def three():\n    await asyncio.sleep(0)\n"
                    "    return 3")
        self.assertEqual(self.result(self.run_ok("await three()")), "3")

        evs = self.run_ok("async def gen():\n    yield 1\n    yield 2\n"
                          "[i async for i in gen()]")
        self.assertEqual(self.result(evs), "[1, 2]")
        evs = self.run_ok("import contextlib\n@contextlib.asynccontextmanager\n"
                          "async def cm():\n    yield 'in'\nasync with cm() as v:\n    print(v)")
        self.assertEqual(text(evs), "in\n")
        evs = self.r.execute("x = 'await'\nawait")      # the word, and no await statement
        self.assertEqual(done(evs)["status"], "error")
        self.assertEqual(self.result(self.run_ok("'no await here'")), "'no await here'")

    def test_syntax_warning_once(self):
        # IPython's own await check compiles the cell as "<>" and shows its SyntaxWarning a
        # first time; here the cell's compile shows it, once, under the cell's file name
        evs = self.run_ok("x = 1\nx is 1")
        err = text(evs, "stderr")
        self.assertEqual(err.count("SyntaxWarning"), 1, err)
        self.assertRegex(err, r"ipykernel_\d+/\d+\.py:2: SyntaxWarning")

    def test_silent(self):
        before = done(self.run_ok("1"))["execution_count"]
        evs = self.run_ok("2", silent=True)
        self.assertEqual(of_type(evs, "result"), [])
        after = done(self.run_ok("3"))["execution_count"]
        self.assertEqual(after, before + 1)

    def test_streams(self):
        code = ("import sys\nprint('a1')\nprint('e1', file=sys.stderr)\nprint('a2')\n"
                "sys.stderr.write('e2\\n')\nprint('a3', end='')")
        evs = self.run_ok(code)
        self.assertEqual(text(evs, "stdout"), "a1\na2\na3")
        self.assertEqual(text(evs, "stderr"), "e1\ne2\n")
        # Python-level writes also keep their order across the two streams
        self.assertEqual(harness.merged_streams(evs),
                         [["stdout", "a1\n"], ["stderr", "e1\n"], ["stdout", "a2\n"],
                          ["stderr", "e2\n"], ["stdout", "a3"]])

    def test_last_text_and_done_in_one_write(self):
        # Text still waiting at the end of a cell goes out with the done in one write (one
        # wake-up of the host); an event after waiting text likewise. Counted in the runner.
        # A line printed after 30 ms of quiet is sent at once and holds the flusher back for
        # FLUSH_DELAY (20 ms): without it, text waiting alone is the flusher's after 1 ms,
        # which a loaded machine lets it take before the cell's end.
        self.run_ok("import sys\n_cb = sys.modules['runner.events']\n_cb_writes = []\n"
                    "_cb_real = _cb._write_all\n"
                    "def _cb_count(fd, data):\n    _cb_writes.append(bytes(data))\n"
                    "    return _cb_real(fd, data)\n"
                    "_cb._write_all = _cb_count")
        try:
            evs = self.run_ok("_cb_writes.clear()\nimport time; time.sleep(0.03)\n"
                              "print('head')\n_cb_n = sys.stdout.write('tail')")
            self.assertEqual([e["type"] for e in evs], ["stream", "stream", "done"])
            evs = self.run_ok("_cb_w = list(_cb_writes)\n_cb_writes.clear()\n"
                              "time.sleep(0.03)\nprint('head')\n"
                              "print('x', end='')\nget_ipython().set_next_input('y')\n"
                              "_cb_w2 = list(_cb_writes)")
            self.assertEqual([e["type"] for e in evs],
                             ["stream", "stream", "set_next_input", "done"])
        finally:
            self.run_ok("_cb._write_all = _cb_real")
        writes = json.loads(text(self.run_ok(
            "import json\nprint(json.dumps([[w.decode() for w in _cb_w],\n"
            "                  [w.decode() for w in _cb_w2]]))")))
        ends, sets = writes
        self.assertEqual(len(ends), 2, ends)                # 'head', then 'tail' with the done
        self.assertEqual([(e["type"], e.get("text")) for e in map(json.loads,
                                                                 ends[1].splitlines())],
                         [("stream", "tail"), ("done", None)])
        self.assertEqual(len(sets), 2, sets)
        self.assertEqual([(e["type"], e.get("text")) for e in map(json.loads,
                                                                 sets[1].splitlines())],
                         [("stream", "x"), ("set_next_input", "y")])

    def test_stream_before_result(self):
        evs = self.run_ok("print('first')\n'second'")
        self.assertEqual([e["type"] for e in evs], ["stream", "result", "done"])

    def test_fd_output(self):
        evs = self.run_ok("import os\nos.write(1, b'\\xff\\xfeok\\n')\n"
                          "os.write(2, b'err\\n')\ne = '\u00e9'.encode()\n"
                          "os.write(1, e[:1]); os.write(1, e[1:] + b'\\n')\nNone")
        self.assertEqual(text(evs), "\ufffd\ufffdok\n\u00e9\n")
        self.assertEqual(text(evs, "stderr"), "err\n")

    def test_subprocess_output(self):
        evs = self.run_ok("import os, subprocess, sys\nprint('a')\n"
                          "ret = os.system('echo b')\nprint('c')\n"
                          "p = subprocess.run(['sh', '-c', 'echo d; echo e >&2'])\n"
                          "sys.stdout.buffer.write(b'f\\n')\nNone")
        self.assertEqual(text(evs), "a\nb\nc\nd\nf\n")
        self.assertEqual(text(evs, "stderr"), "e\n")

    def test_forked_child_output(self):
        evs = self.run_ok("import os\npid = os.fork()\nif pid == 0:\n"
                          "    print('child')\n    os._exit(0)\n"
                          "os.waitpid(pid, 0)\nprint('parent')")
        self.assertEqual(text(evs), "child\nparent\n")
        evs = self.run_ok("import multiprocessing as mp\n"
                          "p = mp.get_context('fork').Process(target=print, args=('mp',))\n"
                          "p.start(); p.join()")
        self.assertEqual(text(evs), "mp\n")

    def test_thread_output(self):
        evs = self.run_ok("import threading\n"
                          "def f(k):\n    for i in range(200):\n        print(k)\n"
                          "ts = [threading.Thread(target=f, args=(k,)) for k in 'ab']\n"
                          "for t in ts: t.start()\n"
                          "for t in ts: t.join()")
        out = text(evs)
        self.assertEqual(sorted(out.replace("\n", "")), ["a"] * 200 + ["b"] * 200)

    def test_exit_keeps_session(self):
        evs = self.run_ok("exit")
        self.assertIn("do not end this session", text(evs, "stderr"))
        self.assertEqual(self.result(self.run_ok("1+1")), "2")

    def test_big_output(self):
        self.big_output("print('x' * 10_000_000)", 10_000_000)

    def test_lone_surrogate(self):
        evs = self.run_ok("print('a\\ud800b')\n"
                          "display({'text/plain': 'x\\udcffy'}, raw=True)")
        self.assertEqual(text(evs), "a?b\n")
        self.assertEqual(of_type(evs, "display")[0]["data"]["text/plain"], "x?y")

    def test_errors(self):
        evs = self.r.execute("1/0")
        self.assertEqual(done(evs)["status"], "error")
        err = of_type(evs, "error")
        self.assertEqual(len(err), 1, evs)
        self.assertEqual(err[0]["ename"], "ZeroDivisionError")
        self.assertEqual(err[0]["evalue"], "division by zero")
        tb = "".join(err[0]["traceback"])
        self.assertIn("\x1b[", tb)                          # IPython's colours are kept
        self.assertIn("ZeroDivisionError", tb)

        evs = self.r.execute("x = )")
        self.assertEqual(done(evs)["status"], "error")
        err = of_type(evs, "error")
        self.assertEqual(len(err), 1, evs)
        self.assertEqual(err[0]["ename"], "SyntaxError")
        self.assertEqual(text(evs) + text(evs, "stderr"), "")

        evs = self.r.execute("%no_such_magic")
        self.assertEqual(done(evs)["status"], "error")
        self.assertEqual(of_type(evs, "error")[0]["ename"], "UsageError")

    # -- IPython features

    def test_magics(self):
        self.run_ok("who_var_1 = 1")
        self.assertIn("who_var_1", text(self.run_ok("%who")))
        self.assertEqual(text(self.run_ok("!echo hi")), "hi\r\n")     # a pty, as ipykernel
        self.assertIn("per loop", text(self.run_ok("%%timeit -n1 -r1\nsum(range(10))")))
        old = self.result(self.run_ok("import os; os.getcwd()"))
        try:
            self.run_ok("%cd /tmp")
            evs = self.run_ok("import os; os.getcwd()")
            self.assertEqual(self.result(evs), "'/tmp'")
        finally:
            self.run_ok("import os; os.chdir(%s)" % old)
        evs = self.run_ok("files = !echo one\nfiles")
        self.assertIn("one", self.result(evs))

    def test_repeated_cells_transform_as_new(self):
        # The runner keeps a cell text's static transform for the next run of the same text:
        # a magic still runs each time, and a transformer the user adds later still applies.
        for _ in range(2):
            self.assertIn("rep_var_1", text(self.run_ok("rep_var_1 = 1\n%who")))
        self.assertEqual(self.result(self.run_ok("'rep-' + 'cell'")), "'rep-cell'")
        self.run_ok("def _rep_upper(lines):\n"
                    "    return [l.replace('rep-', 'REP-') for l in lines]\n"
                    "get_ipython().input_transformers_cleanup.append(_rep_upper)")
        try:
            self.assertEqual(self.result(self.run_ok("'rep-' + 'cell'")), "'REP-cell'")
        finally:
            self.run_ok("get_ipython().input_transformers_cleanup.remove(_rep_upper)")
        self.assertEqual(self.result(self.run_ok("'rep-' + 'cell'")), "'rep-cell'")
        # the cell's file name (tracebacks and warnings print it) follows its text, run again
        code = "__import__('sys')._getframe().f_code.co_filename"
        names = [self.result(self.run_ok(code)) for _ in range(2)]
        self.assertEqual(names[0], names[1])
        self.assertRegex(names[0], r"/ipykernel_%d/\d+\.py'$" % self.r.proc.pid)
        self.assertNotEqual(self.result(self.run_ok(code + " ")), names[0])

    def test_load_sets_next_input(self):
        path = os.path.join(self.r.cwd, "loadme.py")
        with open(path, "w") as f:
            f.write("a = 1\nprint(a)\n")
        evs = self.run_ok("%load " + path)
        nxt = of_type(evs, "set_next_input")
        self.assertEqual(len(nxt), 1, evs)
        self.assertEqual(nxt[0]["text"], "# %%load %s\na = 1\nprint(a)\n" % path)
        self.assertTrue(nxt[0]["replace"])
        self.assertEqual(of_type(self.run_ok("get_ipython().set_next_input('x = 2')"),
                                 "set_next_input")[0], {"type": "set_next_input",
                                                        "text": "x = 2", "replace": False})

    def test_width_from_columns(self):
        # The host sets COLUMNS; pandas, once loaded, takes it as its display width.
        self.run_ok("import os; os.environ['COLUMNS'] = '123'", silent=True)
        try:
            import pandas  # noqa: F401  (only to know whether the kernel has it)
        except ImportError:
            self.skipTest("pandas is not installed")
        evs = self.run_ok("import pandas as pd; pd.get_option('display.width')")
        self.assertEqual(self.result(evs), "123")   # imported in that cell: at once
        df = self.result(self.run_ok("pd.DataFrame([[1.5] * 30])"))
        widest = max(len(l) for l in df.split("\n"))
        self.assertTrue(100 < widest <= 130, widest)    # pandas' wrap is near its width
        self.run_ok("pd.set_option('display.width', 99)")
        self.run_ok("import os; os.environ['COLUMNS'] = '140'", silent=True)
        evs = self.run_ok("pd.get_option('display.width')")
        self.assertEqual(self.result(evs), "99")     # the user's own setting stays

    def test_pager(self):
        evs = self.run_ok("len?")
        disp = of_type(evs, "display")
        self.assertEqual(len(disp), 1, evs)
        self.assertTrue(disp[0].get("pager"))
        plain = disp[0]["data"]["text/plain"]
        self.assertIn("Return the number of items in a container", plain)
        self.assertIn("\x1b[", plain)                          # not stripped
        evs = self.run_ok("len??")
        self.assertTrue(of_type(evs, "display")[0].get("pager"))

    def test_display(self):
        evs = self.run_ok("from IPython.display import display, Markdown, HTML\n"
                          "display(Markdown('**b**'))\nHTML('<i>x</i>')")
        disp = of_type(evs, "display")
        self.assertEqual(disp[0]["data"]["text/markdown"], "**b**")
        res = of_type(evs, "result")[0]["data"]
        self.assertEqual(res["text/html"], "<i>x</i>")

    def test_ipython_package(self):
        evs = self.run_ok("import IPython\nfrom IPython import get_ipython, embed\n"
                          "(IPython.__version__, IPython.version_info[0] >= 8, "
                          "get_ipython() is IPython.get_ipython())")
        self.assertIn("True, True)", self.result(evs))

    # -- requests other than execute

    def test_complete(self):
        evs = self.r.request("complete", code="import o", cursor_pos=8)
        reply = of_type(evs, "reply")[0]
        self.assertIn("os", reply["matches"])
        self.assertEqual((reply["cursor_start"], reply["cursor_end"]), (7, 8))
        self.run_ok("complete_me_please = 1")
        evs = self.r.request("complete", code="x = complete_me_p", cursor_pos=17)
        reply = of_type(evs, "reply")[0]
        self.assertEqual(reply["matches"], ["complete_me_please"])
        self.assertEqual((reply["cursor_start"], reply["cursor_end"]), (4, 17))

    def test_inspect(self):
        evs = self.r.request("inspect", code="len(", cursor_pos=2, detail_level=0)
        reply = of_type(evs, "reply")[0]
        self.assertTrue(reply["found"])
        self.assertIn("Return the number of items", reply["data"]["text/plain"])
        evs = self.r.request("inspect", code="no_such_name_here", cursor_pos=3,
                             detail_level=1)
        self.assertFalse(of_type(evs, "reply")[0]["found"])

    def test_is_complete(self):
        self.assertEqual(self.is_complete("for i in range(3):"), ("incomplete", "    "))
        self.assertEqual(self.is_complete("x = 1"), ("complete", ""))
        self.assertEqual(self.is_complete("x = )"), ("invalid", ""))

    def test_bad_commands(self):
        r = self.r
        self.bad_commands()
        r.write_file("0000099904.1.input", {"value": "ignored"})   # not a request
        os.unlink(os.path.join(r.channel, "host", "commands", "0000099904.1.input"))
        self.assertEqual(self.result(self.run_ok("1+1")), "2")
        with open(os.path.join(r.channel, "kernel", "results", "0000099901.jsonl"), "rb") as f:
            self.assertEqual(f.read().count(b'"type":"done"'), 1)

    def test_results_file_not_regular(self):
        """Something of the kernel's put a FIFO (or a link) where a request's results file
        is: the runner neither blocks opening it (a FIFO without a reader) nor follows it,
        and serves the next request."""
        r = self.r
        res = os.path.join(r.channel, "kernel", "results")
        target = os.path.join(r.channel, "kernel", "elsewhere")
        for n, plant in ((99911, lambda p: os.mkfifo(p)), (99912, lambda p: os.symlink(target, p))):
            rid = "%010d" % n
            plant(os.path.join(res, rid + ".jsonl"))
            r.write_file(rid + ".json", {"id": rid, "kind": "execute", "code": "1"})
        self.assertEqual(self.result(self.run_ok("1+1")), "2")
        self.assertFalse(os.path.exists(target))
        self.assertIn("its results file", r.read_log())

    # -- input()

    def test_input(self):
        r = self.r
        self.answer_input("name = input('who? ')\nprint('hello', name)", "hello bob\n")
        # two input() calls in one cell: each answer has its own name
        rid = r.send("execute", code="a = input('a? ')\nb = input('b? ')\nprint(a + b)",
                     allow_stdin=True)
        r.events(rid, until="input_request")
        r.write_file(rid + ".1.input", {"value": "one"})
        while len(of_type(r.events(rid, until="input_request"), "input_request")) < 2:
            time.sleep(0.01)
        r.write_file(rid + ".2.input", {"value": "two"})
        self.assertEqual(text(r.events(rid)), "onetwo\n")

        rid = r.send("execute", code="import getpass\npw = getpass.getpass()\nlen(pw)",
                     allow_stdin=True)
        req = of_type(r.events(rid, until="input_request"), "input_request")[0]
        self.assertTrue(req["password"])
        r.write_file(rid + ".1.input", {"value": "secret"})
        self.assertEqual(self.result(r.events(rid)), "6")

        evs = r.execute("input('x')", allow_stdin=False)
        self.assertEqual(done(evs)["status"], "error")
        err = of_type(evs, "error")[0]
        self.assertEqual(err["ename"], "StdinNotImplementedError")
        self.assertIn("does not support input requests", err["evalue"])

    def test_stdin_reads_ask(self):
        # sys.stdin is read through input requests: the line's prompt is what the cell wrote
        # to stdout just before (taken out of the stream); each read is one line.
        r = self.r
        rid = r.send("execute", code="import sys\nprint('head')\nsys.stdout.write('name: ')\n"
                                     "a = sys.stdin.readline()\nb = sys.stdin.read()\n"
                                     "print(repr(a + b))", allow_stdin=True)
        req = of_type(r.events(rid, until="input_request"), "input_request")[0]
        self.assertEqual(req, {"type": "input_request", "prompt": "name: ", "password": False})
        r.write_file(rid + ".1.input", {"value": "Ada"})
        while len(of_type(r.events(rid, until="input_request"), "input_request")) < 2:
            time.sleep(0.01)
        r.write_file(rid + ".2.input", {"value": "Bo"})
        evs = r.events(rid)
        self.assertEqual(done(evs)["status"], "ok")
        self.assertEqual([e["prompt"] for e in of_type(evs, "input_request")], ["name: ", ""])
        self.assertEqual(text(evs), "head\n'Ada\\nBo\\n'\n")
        # without stdin (batch run, replay): the error input() gives, not a read of fd 0
        tty = "import os, sys\n(sys.stdin.isatty(), os.isatty(sys.stdin.fileno()))"
        self.assertEqual(self.result(self.run_ok(tty)), "(False, False)")
        evs = r.execute("import sys\nsys.stdin.readline()", allow_stdin=False)
        self.assertEqual(of_type(evs, "error")[0]["ename"], "StdinNotImplementedError")
        self.assertIn("does not support input requests", of_type(evs, "error")[0]["evalue"])

    def debugger_prompt(self, code, prompt):
        rid = self.r.send("execute", code=code, allow_stdin=True)
        req = of_type(self.r.events(rid, until="input_request"), "input_request")[0]
        self.assertEqual(req["prompt"], prompt)
        return rid

    def test_debugger(self):
        # pdb and ipdb read their commands through input requests; `q` quits, Ctrl-C (SIGINT
        # while the prompt waits) leaves the debugger and ends the cell as interrupted.
        r = self.r
        self.run_ok("def f():\n    x = 42\n    breakpoint()\n    return x + 1")
        rid = self.debugger_prompt("f()", "(Pdb) ")
        r.write_file(rid + ".1.input", {"value": "p x"})
        while len(of_type(r.events(rid, until="input_request"), "input_request")) < 2:
            time.sleep(0.01)
        r.write_file(rid + ".2.input", {"value": "c"})
        evs = r.events(rid)
        self.assertIn("42\n", text(evs))
        self.assertEqual(self.result(evs), "43")
        for code, prompt in (("f()", "(Pdb) "), ("%debug", "ipdb> ")):
            if code == "%debug":
                r.execute("def g():\n    y = 7\n    1/0\ng()")
            rid = self.debugger_prompt(code, prompt)
            time.sleep(0.05)
            os.kill(r.proc.pid, signal.SIGINT)
            evs = r.events(rid, timeout=5)
            self.assertEqual(done(evs)["status"], "aborted", code)
            self.assertEqual(of_type(evs, "error")[-1]["ename"], "KeyboardInterrupt")
            self.assertEqual(len(of_type(evs, "input_request")), 1)
        rid = self.debugger_prompt("%debug", "ipdb> ")
        r.write_file(rid + ".1.input", {"value": "p y * 6"})
        while len(of_type(r.events(rid, until="input_request"), "input_request")) < 2:
            time.sleep(0.01)
        r.write_file(rid + ".2.input", {"value": "q"})
        evs = r.events(rid)
        self.assertEqual(done(evs)["status"], "ok")
        self.assertIn("42\n", text(evs))
        self.assertEqual(self.result(self.run_ok("1+1")), "2")

    # -- SIGINT

    def test_sigint_interrupts_cell(self):
        r = self.r
        rid = r.send("execute", code="print('spinning')\nwhile True:\n    pass")
        r.events(rid, until="stream")
        time.sleep(0.2)     # past print()'s second write ("\n"): in the loop
        os.kill(r.proc.pid, signal.SIGINT)
        evs = r.events(rid)
        self.assertEqual(done(evs)["status"], "aborted")
        self.assertEqual(of_type(evs, "error")[0]["ename"], "KeyboardInterrupt")
        # IPython's traceback of it, ending in the cell's loop (not the handler's frame)
        tb = re.sub(r"\x1b\[[0-9;]*m", "", "\n".join(of_type(evs, "error")[0]["traceback"]))
        self.assertIn("----> 2 while True:", tb)
        self.assertNotIn("_on_sigint", tb)
        self.assertEqual(self.result(self.run_ok("1+1")), "2")

        # inside print(): the interrupt waits for the write's end, and the traceback ends
        # in the cell, not in the runner's write (before: capture.py and events._leave)
        rid = r.send("execute", code="n = 0\nwhile True:\n    n += 1\n    print(n, end=' ')")
        r.events(rid, until="stream")
        os.kill(r.proc.pid, signal.SIGINT)
        evs = r.events(rid)
        self.assertEqual(done(evs)["status"], "aborted")
        tb = re.sub(r"\x1b\[[0-9;]*m", "", "\n".join(of_type(evs, "error")[0]["traceback"]))
        self.assertRegex(tb, r"----> [234] ")
        self.assertNotIn("runner/", tb)
        self.assertEqual(self.result(self.run_ok("1+1")), "2")

        # while waiting for input
        rid = r.send("execute", code="input('? ')", allow_stdin=True)
        r.events(rid, until="input_request")
        os.kill(r.proc.pid, signal.SIGINT)
        self.assertEqual(done(r.events(rid))["status"], "aborted")

        # in a sleeping cell with a child process
        rid = r.send("execute", code="import subprocess\nprint('go')\n"
                                     "subprocess.run(['sleep', '10'])")
        r.events(rid, until="stream")
        time.sleep(0.05)
        os.kill(r.proc.pid, signal.SIGINT)
        self.assertEqual(done(r.events(rid, timeout=5))["status"], "aborted")
        self.assertEqual(self.result(self.run_ok("1+1")), "2")

    def test_sigint_between_nodes(self):
        # A SIGINT that lands while IPython compiles the cell's next statement (outside the
        # user's code: IPython calls it an error before execution) aborts the cell too.
        r = self.r
        body = "".join("    v%d = %d\n" % (i, i) for i in range(20000))
        code = ("import os, signal, threading\n"
                "threading.Timer(0.02, os.kill, (os.getpid(), signal.SIGINT)).start()\n"
                "def f():\n" + body)
        evs = r.events(r.send("execute", code=code), timeout=60)
        self.assertEqual(done(evs)["status"], "aborted")
        # an error event, not IPython's formatter failing on IPython's frames (its fallback
        # went to the streams)
        self.assertEqual([e["ename"] for e in of_type(evs, "error")], ["KeyboardInterrupt"])
        self.assertNotIn("Unexpected exception formatting", text(evs) + text(evs, "stderr"))
        self.assertEqual(self.result(self.run_ok("1+1")), "2")

    def test_sigint_between_cells(self):
        r = self.r
        self.run_ok("1")
        for _ in range(3):
            os.kill(r.proc.pid, signal.SIGINT)
            time.sleep(0.02)
        time.sleep(0.1)
        self.assertIsNone(r.proc.poll())
        self.assertEqual(self.result(self.run_ok("1+1")), "2")


if __name__ == "__main__":
    unittest.main()
