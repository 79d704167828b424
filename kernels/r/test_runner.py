"""Tests of runner.R against kernels/PROTOCOL.md.

Each test talks to a real R runner the way the cellbox host does: command files written as
tmp + rename into <channel>/host/commands, a byte written to the <channel>/host/wake FIFO (or to
stdin) after each (and after SIGINT), events read back from <channel>/kernel/results/<id>.jsonl.

    /usr/bin/python3 -m unittest -v test_runner        (from kernels/r)

The runner is the build's runner.R (CELLBOX_RUNNER_R, which meson test sets), else its parts
joined here.
"""

import glob
import os
import shutil
import signal
import subprocess
import sys
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
import runner_harness as harness
from runner_harness import done, of_type, text

# runner.R as it ships (its parts, runner/NN-name.R, joined as the build joins them)
RUNNER = harness.as_shipped("CELLBOX_RUNNER_R", "runner.R", lambda embed: embed.join_parts(
    glob.glob(os.path.join(HERE, "runner", "*.R"))))
RSCRIPT = os.environ.get("CELLBOX_TEST_RSCRIPT") or shutil.which("Rscript") or "/usr/bin/Rscript"
TIMEOUT = 60.0

if not os.access(RSCRIPT, os.X_OK):
    print("1..0 # SKIP no Rscript (Debian: apt-get install r-base-core r-cran-jsonlite)")
    sys.exit(77)


class Runner(harness.Runner):
    """runner.R on the real R in a temporary channel directory, the wake-up FIFO held by
    default (runner_harness.Runner); started as the host starts it, in a process group of its
    own and with no default packages until the helpers are forked."""

    def __init__(self, channel=None, env=None, wake=True, stdin=subprocess.DEVNULL):
        super().__init__([RSCRIPT, RUNNER], channel=channel,
                         env=dict({"R_DEFAULT_PACKAGES": "NULL"}, **(env or {})), wake=wake,
                         stdin=stdin, new_session=True, prefix="cellbox-r-", timeout=TIMEOUT)

    def interrupt(self):
        # as the host interrupts the R kernel: SIGINT to its process group, then a wake-up
        os.killpg(self.proc.pid, signal.SIGINT)
        self.wake()

    def helpers(self):
        """Pids of the runner's forked helpers (its children that are R too)."""
        out = subprocess.run(["ps", "-o", "pid=", "--ppid", str(self.proc.pid)],
                             capture_output=True, text=True).stdout
        return [int(p) for p in out.split()]

    def close(self):
        super().close(wait=10)


def have_repr():
    return subprocess.run([RSCRIPT, "-e", "quit(status = !requireNamespace('repr', quietly = TRUE))"],
                          capture_output=True).returncode == 0


def shown(evs):
    """What the console would print for the visible values: the display texts."""
    return [e["data"].get("text/plain") for e in of_type(evs, "display") if "plot" not in e]


def plots(evs):
    return [e["plot"] for e in of_type(evs, "display") if "plot" in e]


class RunnerTest(harness.RunnerCase):
    """One runner shared by the tests; the runner logs its own failures as "failed"."""

    runner = Runner
    failure = "failed"

    # -- basics

    def test_ready(self):
        ready = self.r.ready
        self.assertEqual(ready["protocol"], 2)
        self.assertEqual(ready["pid"], self.r.proc.pid)
        self.assertEqual(ready["kernel"], "r")
        self.assertEqual(ready["language"], "R")
        version = subprocess.check_output(
            [RSCRIPT, "-e", "cat(paste(R.version$major, R.version$minor, sep = '.'))"], text=True)
        self.assertEqual(ready["version"], version.strip())
        self.assertEqual(ready["cwd"], os.path.realpath(self.r.cwd))
        self.assertEqual(ready["wake"], "fifo")
        self.assertFalse(os.path.exists(os.path.join(self.r.channel, "ready.tmp")))

    def test_state_and_values(self):
        self.run_ok("x_state <- 41")
        evs = self.run_ok("x_state + 1")
        self.assertEqual(shown(evs), ["[1] 42"])
        self.assertIsInstance(done(evs)["duration"], float)
        # every visible top-level value is shown, invisible ones are not
        evs = self.run_ok("1:3\ninvisible(5)\ny <- 2\n(y)\nNULL")
        self.assertEqual(shown(evs), ["[1] 1 2 3", "[1] 2", "NULL"])
        # printed as the console prints them: S3 print methods, S4 show, data frames
        evs = self.run_ok("data.frame(a = 1:2, b = c('x', 'y'))")
        self.assertEqual(shown(evs), ["  a b\n1 1 x\n2 2 y"])
        evs = self.run_ok("setClass('P', representation(n = 'numeric'))\n"
                          "setMethod('show', 'P', function(object) cat('<P', object@n, '>\\n'))\n"
                          "new('P', n = 3)")
        self.assertEqual(shown(evs)[-1], "<P 3 >")
        self.assertEqual(shown(self.run_ok(".Last.value"))[0], "<P 3 >")
        n0 = done(self.run_ok("1"))["execution_count"]
        self.assertEqual(done(self.run_ok("2"))["execution_count"], n0 + 1)

    def test_rich_values(self):
        if not have_repr():
            self.skipTest("needs the repr package (Debian: r-cran-repr)")
        # as IRkernel displays them: repr's text/plain beside html, markdown and latex
        evs = self.run_ok("data.frame(a = 1:2, b = c(0.5, 2))\nmatrix(1:4, 2)\nc(u = 1)\nNULL")
        disp = of_type(evs, "display")
        self.assertEqual([sorted(d["data"]) for d in disp],
                         [["text/html", "text/latex", "text/markdown", "text/plain"]] * 3
                         + [["text/plain"]])
        self.assertEqual(disp[0]["data"]["text/plain"], "  a b  \n1 1 0.5\n2 2 2.0")
        self.assertIn("<caption>A data.frame: 2 \u00d7 2</caption>", disp[0]["data"]["text/html"])
        self.assertEqual(disp[1]["data"]["text/plain"],
                         "     [,1] [,2]\n[1,] 1    3   \n[2,] 2    4   ")
        self.assertEqual(disp[1]["data"]["text/markdown"],
                         "\nA matrix: 2 \u00d7 2 of type int\n\n| 1 | 3 |\n| 2 | 4 |\n\n")
        # IRkernel's options: no rich display, or other mime types
        evs = self.run_ok("options(jupyter.rich_display = FALSE); 1:2\n"
                          "options(jupyter.rich_display = TRUE, "
                          "jupyter.display_mimetypes = c('text/plain', 'text/latex')); 1:2\n"
                          "options(jupyter.display_mimetypes = NULL)")
        self.assertEqual([sorted(d["data"]) for d in of_type(evs, "display")],
                         [["text/plain"], ["text/latex", "text/plain"]])
        # a whole HTML document is isolated, as IRdisplay marks it
        evs = self.run_ok("repr_html.doc <- function(obj, ...) '<html><body>d</body></html>'\n"
                          "registerS3method('repr_html', 'doc', repr_html.doc, "
                          "envir = asNamespace('repr'))\nstructure(1, class = 'doc')")
        d = of_type(evs, "display")[-1]
        self.assertEqual(d["data"]["text/html"], "<html><body>d</body></html>")
        self.assertEqual(d["metadata"], {"text/html": {"isolated": True}})

    def test_silent(self):
        before = done(self.run_ok("1"))["execution_count"]
        evs = self.run_ok("2", silent=True)
        self.assertEqual(shown(evs), [])
        self.assertEqual(done(self.run_ok("3"))["execution_count"], before + 1)

    def test_streams(self):
        evs = self.run_ok('cat("a1\\n"); message("e1"); print("a2")\n'
                          'warning("w1"); cat("a3")')
        self.assertEqual(text(evs), 'a1\n[1] "a2"\na3')
        warned = "Warning message in eval(expr, envir, enclos):\n\u201cw1\u201d\n"
        self.assertEqual(text(evs, "stderr"), "e1\n\n" + warned)
        # message() and warnings keep their order with stdout; a message ends with a blank
        # line, a warning is shown at once, both as IRkernel writes them
        self.assertEqual(harness.merged_streams(evs),
                         [["stdout", "a1\n"], ["stderr", "e1\n\n"], ["stdout", '[1] "a2"\n'],
                          ["stderr", warned], ["stdout", "a3"]])

    def test_stderr_connection(self):
        evs = self.run_ok('cat("to stderr\\n", file = stderr()); write("w", stderr())')
        self.assertEqual(text(evs, "stderr"), "to stderr\nw\n")
        self.assertEqual(text(evs), "")

    def test_subprocess_output(self):
        evs = self.run_ok('cat("a\\n"); system("echo b; echo e >&2"); invisible(system2("echo", "c"))')
        self.assertEqual(text(evs), "a\nb\nc\n")
        self.assertEqual(text(evs, "stderr"), "e\n")
        # a forked child (parallel) writes to the same pipes
        evs = self.run_ok('invisible(parallel::mclapply(1:2, function(i) cat("child", i, "\\n"), '
                          'mc.cores = 2))')
        self.assertEqual(sorted(text(evs).splitlines()), ["child 1 ", "child 2 "])

    def test_streaming_before_the_end(self):
        r = self.r
        # the cell cannot end before the test has seen its first output and opened the gate
        gate = os.path.join(r.cwd, "gate-streaming")
        rid = r.send("execute", code='cat("first\\n"); message("err first"); '
                                     'while (!file.exists("%s")) Sys.sleep(0.01); '
                                     'cat("second\\n")' % gate)
        evs = r.events(rid, until="stream", timeout=30)
        self.assertNotIn("done", [e["type"] for e in evs])
        self.assertEqual(text(evs), "first\n")
        open(gate, "w").close()
        evs = r.events(rid)
        self.assertEqual(text(evs), "first\nsecond\n")
        self.assertEqual(text(evs, "stderr"), "err first\n\n")

    def test_big_output(self):
        self.big_output('cat(strrep("x", 3e6), "\\n", sep = "")', 3_000_000)

    def test_invalid_utf8_and_nul(self):
        evs = self.run_ok('writeBin(as.raw(c(0xff, 0xfe, 0x6f, 0x6b, 0x0a)), stdout())\n'
                          'e <- charToRaw(enc2utf8("\\u00e9"))\n'
                          'writeBin(e[1], stdout()); Sys.sleep(0.05); writeBin(c(e[2], as.raw(10)), stdout())\n'
                          'writeBin(as.raw(c(0x61, 0, 0x62, 10)), stdout())')
        self.assertEqual(text(evs), "\ufffd\ufffdok\n\u00e9\na\ufffdb\n")
        evs = self.run_ok('cat("\\u00e9t\\u00e9 \\u4e2d\\n")')
        self.assertEqual(text(evs), "\u00e9t\u00e9 \u4e2d\n")

    def test_errors(self):
        evs = self.r.execute('f <- function(x) g(x)\ng <- function(x) stop("boom")\nf(1)')
        self.assertEqual(done(evs)["status"], "error")
        err = of_type(evs, "error")
        self.assertEqual(len(err), 1, evs)
        # as IRkernel stores it: ename ERROR, toString() of the condition, the calls with
        # their place in the cell
        self.assertEqual(err[0]["ename"], "ERROR")
        self.assertEqual(err[0]["evalue"], "Error in g(x): boom\n")
        self.assertEqual(err[0]["traceback"], [
            "Error in g(x): boom\nTraceback:\n", "1. f(1)",
            "2. g(x)   # at line 1 of file <text>", '3. stop("boom")   # at line 2 of file <text>'])
        evs = self.run_ok("traceback()")
        self.assertEqual(text(evs).splitlines()[0], '3: stop("boom") at <text>#2')
        # at the top level the call is IRkernel's
        err = of_type(self.r.execute('stop("top")'), "error")[0]
        self.assertEqual(err["traceback"], ["Error in eval(expr, envir, enclos): top\nTraceback:\n",
                                            '1. stop("top")'])
        # C-level errors name their call
        err = of_type(self.r.execute('log("a")'), "error")[0]
        self.assertEqual(err["traceback"], [
            "Error in log(\"a\"): non-numeric argument to mathematical function\nTraceback:\n"])
        # a cell's own eval() like the runner's is part of the traceback
        err = of_type(self.r.execute('u <- function() {\n  expr <- quote(stop("inner"))\n'
                                     '  envir <- globalenv(); enclos <- baseenv()\n'
                                     '  eval(expr, envir, enclos)\n}\nu()'), "error")[0]
        self.assertEqual(err["traceback"][1], "1. u()")
        self.assertEqual(err["traceback"][2], "2. eval(expr, envir, enclos)   # at line 4 of file <text>")
        # deep recursion: a run of more than 3 equal calls is the first, an ellipsis, the last
        err = of_type(self.r.execute('r <- function(n) if (n == 0) stop("bottom") else r(n - 1)\n'
                                     'r(6)'), "error")[0]
        self.assertEqual(err["traceback"][1:], ["1. r(6)", "2. r(n - 1)", "3. \u22ef",
                                                "4. r(n - 1)", '5. stop("bottom")'])
        # a cell stops at its first error
        evs = self.r.execute('cat("before\\n"); stop("mid"); cat("after\\n")')
        self.assertEqual(text(evs), "before\n")
        # condition classes are kept
        err = of_type(self.r.execute('stop(structure(class = c("myError", "error", "condition"), '
                                     'list(message = "custom", call = NULL)))'), "error")[0]
        self.assertEqual((err["ename"], err["evalue"]), ("ERROR", "Error: custom\n"))
        self.assertEqual(err["traceback"], ["Error: custom\nTraceback:\n"])
        # a syntax error runs nothing
        evs = self.r.execute('cat("no\\n")\nx <- )')
        self.assertEqual(done(evs)["status"], "error")
        err = of_type(evs, "error")
        self.assertEqual(err[0]["ename"], "ERROR")
        self.assertEqual(err[0]["evalue"], "Error in parse(text = x, srcfile = src): <text>:2:6: "
                                           "unexpected ')'\n1: cat(\"no\\n\")\n2: x <- )\n"
                                           "        ^\n")
        self.assertEqual(text(evs), "")
        # the session goes on
        self.assertEqual(shown(self.run_ok("1 + 1")), ["[1] 2"])

    def test_warnings(self):
        # each at once, as IRkernel shows it
        evs = self.run_ok("log(-1)")
        self.assertEqual(shown(evs), ["[1] NaN"])
        self.assertEqual(text(evs, "stderr"), "Warning message in log(-1):\n\u201cNaNs produced\u201d\n")
        self.assertEqual([e["type"] for e in evs if e["type"] != "done"], ["stream", "display"])
        evs = self.run_ok("f <- function() { warning('w1'); warning('w2'); 3 }\nf()")
        self.assertEqual(text(evs, "stderr"), "Warning message in f():\n\u201cw1\u201d\n"
                                              "Warning message in f():\n\u201cw2\u201d\n")
        self.assertIn("In f() : w1", shown(self.run_ok("warnings()"))[0])
        evs = self.run_ok("warning('no call', call. = FALSE)")
        self.assertEqual(text(evs, "stderr"), "Warning message:\n\u201cno call\u201d\n")
        evs = self.run_ok("old <- options(warn = -1); f(); options(old)")
        self.assertEqual(text(evs, "stderr"), "")
        evs = self.r.execute("old <- options(warn = 2); tryCatch(f(), finally = options(old))")
        self.assertEqual(done(evs)["status"], "error")
        self.assertIn("(converted from warning) w1", of_type(evs, "error")[0]["evalue"])
        evs = self.run_ok("suppressWarnings(log(-1))")
        self.assertEqual(text(evs, "stderr"), "")
        evs = self.r.execute("{ f(); stop('after') }")
        self.assertEqual(text(evs, "stderr"), "Warning message in f():\n\u201cw1\u201d\n"
                                              "Warning message in f():\n\u201cw2\u201d\n")

    def test_quit_keeps_session(self):
        evs = self.run_ok("q()")
        self.assertIn("does not end this session", text(evs, "stderr"))
        self.assertEqual(shown(self.run_ok("1 + 1")), ["[1] 2"])

    def test_help_pager(self):
        evs = self.run_ok("?mean")
        disp = [e for e in of_type(evs, "display") if e.get("pager")]
        self.assertEqual(len(disp), 1, evs)
        plain = disp[0]["data"]["text/plain"]
        self.assertIn("Arithmetic Mean", plain)
        self.assertNotIn("\b", plain)

    # -- plots

    def test_plots(self):
        r = self.r
        r.request("clear_plots")
        chan_plots = os.path.join(r.channel, "kernel", "plots")

        def check(plot, index):
            self.assertEqual(plot["index"], index)
            self.assertEqual(plot["format"], "png")
            self.assertEqual(plot["path"], "plots/%d.png" % index)
            with open(os.path.join(r.channel, "kernel", plot["path"]), "rb") as f:
                self.assertEqual(f.read(8), b"\x89PNG\r\n\x1a\n")

        # the seed: plot(1:10) gives one plot; with clear_plots, hist() gives one again
        evs = self.run_ok("plot(1:10)")
        ps = plots(evs)
        self.assertEqual(len(ps), 1, evs)
        check(ps[0], 1)
        # IRkernel's size: 7 x 7 inches at 120 dpi, shown at half of it
        self.assertEqual((ps[0]["width"], ps[0]["height"]), (840, 840))
        self.assertEqual(of_type(evs, "display")[0]["data"]["text/plain"], "plot without title")
        self.assertEqual(of_type(evs, "display")[0]["metadata"],
                         {"image/png": {"width": 420, "height": 420}})
        evs = self.run_ok("hist(rnorm(100))", clear_plots=True)
        ps = plots(evs)
        self.assertEqual(len(ps), 1)
        check(ps[0], 1)
        self.assertEqual(sorted(n for n in os.listdir(chan_plots)), ["1.png"])

        # accumulate: the counter goes on across cells
        evs = self.run_ok("plot(1:3); lines(3:1)\nbarplot(1:4)")
        self.assertEqual([p["index"] for p in plots(evs)], [2, 3])
        # ggplot2 and lattice (grid graphics), printed or autoprinted
        evs = self.run_ok("library(ggplot2)\n"
                          "ggplot(data.frame(x = 1:3, y = c(2, 1, 3)), aes(x, y)) + geom_point()")
        self.assertEqual([p["index"] for p in plots(evs)], [4])
        self.assertEqual(shown(evs), [])
        evs = self.run_ok("library(lattice)\nprint(xyplot(y ~ x, data.frame(x = 1:5, y = 5:1)))\n"
                          "bwplot(~ rnorm(20))")
        self.assertEqual([p["index"] for p in plots(evs)], [5, 6])
        # several pages in one cell, each as it is finished; a multi-figure page is one page
        evs = self.run_ok("for (i in 1:3) plot(i)\npar(mfrow = c(1, 2)); plot(1); plot(2)")
        self.assertEqual([p["index"] for p in plots(evs)], [7, 8, 9, 10])
        # sizes: repr.plot.* as in IRkernel (inches and dpi)
        evs = self.run_ok("options(repr.plot.width = 4, repr.plot.height = 3, repr.plot.res = 100)\n"
                          "plot(1)\noptions(repr.plot.width = NULL, repr.plot.height = NULL,\n"
                          "repr.plot.res = NULL)")
        self.assertEqual([(p["width"], p["height"]) for p in plots(evs)], [(400, 300)])
        self.assertEqual(of_type(evs, "display")[0]["metadata"],
                         {"image/png": {"width": 200, "height": 150}})
        # a page's text is its last title, as IRkernel's: each page its own, a multi-figure
        # page its last, grid graphics none
        evs = self.run_ok('plot(1, main = "one"); plot(2)\nhist(1:3)\n'
                          'par(mfrow = c(1, 2)); plot(1, main = "l"); plot(2, main = "r")\n'
                          'lattice::xyplot(1 ~ 1, main = "grid")')
        self.assertEqual([e["data"]["text/plain"] for e in of_type(evs, "display")],
                         ["Plot with title \u201cone\u201d", "plot without title",
                          "Plot with title \u201cHistogram of 1:3\u201d",
                          "Plot with title \u201cr\u201d", "plot without title"])
        # a device the user opens on a file is the user's
        path = os.path.join(r.cwd, "mine.png")
        evs = self.run_ok("png(%r); plot(1); invisible(dev.off())" % path)
        self.assertEqual(plots(evs), [])
        self.assertTrue(os.path.exists(path))
        # nothing is left open, nothing hidden stays in plots/
        self.assertEqual(shown(self.run_ok("dev.cur()")), ["null device \n          1 "])
        self.assertEqual([n for n in os.listdir(chan_plots) if n.startswith(".")], [])
        evs = r.request("clear_plots")
        self.assertEqual(of_type(evs, "reply")[0]["cleared"], 16)
        self.assertEqual(os.listdir(chan_plots), [])

    def test_plot_streams_while_running(self):
        r = self.r
        gate = os.path.join(r.cwd, "gate-plots")
        rid = r.send("execute", code='plot(1); plot(2); while (!file.exists("%s")) '
                                     'Sys.sleep(0.01)' % gate)
        evs = r.events(rid, until="display", timeout=30)
        self.assertNotIn("done", [e["type"] for e in evs])
        self.assertEqual(len(plots(evs)), 1)          # the first page, finished by the second
        open(gate, "w").close()
        evs = r.events(rid)
        self.assertEqual(len(plots(evs)), 2)

    # -- requests other than execute

    def test_complete(self):
        self.run_ok("complete_me_please <- 1")
        reply = of_type(self.r.request("complete", code="x <- complete_me_p", cursor_pos=17),
                        "reply")[0]
        self.assertEqual(reply["matches"], ["complete_me_please"])
        self.assertEqual((reply["cursor_start"], reply["cursor_end"]), (5, 17))
        reply = of_type(self.r.request("complete", code="a <- 1\nmean(x, na.r", cursor_pos=19),
                        "reply")[0]
        self.assertIn("na.rm=", reply["matches"])
        self.assertEqual((reply["cursor_start"], reply["cursor_end"]), (15, 19))
        reply = of_type(self.r.request("complete", code="library(jsonl", cursor_pos=13),
                        "reply")[0]
        self.assertIn("jsonlite", reply["matches"])

    def test_inspect(self):
        reply = of_type(self.r.request("inspect", code="mean(x)", cursor_pos=2, detail_level=0),
                        "reply")[0]
        self.assertTrue(reply["found"])
        self.assertIn("Arithmetic Mean", reply["data"]["text/plain"])
        self.run_ok("inspect_me <- list(a = 1)")
        reply = of_type(self.r.request("inspect", code="inspect_me", cursor_pos=3), "reply")[0]
        self.assertTrue(reply["found"])
        self.assertIn("List of 1", reply["data"]["text/plain"])
        reply = of_type(self.r.request("inspect", code="no_such_name_here", cursor_pos=3),
                        "reply")[0]
        self.assertFalse(reply["found"])

    def test_is_complete(self):
        check = self.is_complete
        self.assertEqual(check("f <- function(x) {"), ("incomplete", "  "))
        self.assertEqual(check("x <- c(1,\n  list(2,"), ("incomplete", "    "))
        self.assertEqual(check("x <- 'open"), ("incomplete", ""))
        self.assertEqual(check("1 +"), ("incomplete", ""))
        self.assertEqual(check("x <- 1"), ("complete", ""))
        self.assertEqual(check(""), ("complete", ""))
        self.assertEqual(check("x <- )"), ("invalid", ""))

    def test_bad_commands(self):
        r = self.r
        self.bad_commands()
        r.write_file("0000099904.json", {"id": "../../etc", "kind": "execute", "code": "1"})
        self.assertEqual(done(r.events("0000099904"))["status"], "ok")     # the file's name
        r.write_file("0000099905.json", b"[1, 2]")
        self.assertEqual(done(r.events("0000099905"))["status"], "error")
        self.assertEqual(shown(self.run_ok("1 + 1")), ["[1] 2"])
        self.assertEqual(len(of_type(r.events("0000099901"), "done")), 1)

    # -- readline()

    def test_input(self):
        r = self.r
        self.answer_input('name <- readline("who? ")\ncat("hello", name, "\\n")', "hello bob \n")
        # the k-th answer is <id>.<k>.input, read once: a second readline() waits for the next
        rid = r.send("execute", code='a <- readline("1? "); b <- readline("2? "); cat(a, b, "\n")',
                     allow_stdin=True)
        r.events(rid, until="input_request")
        r.write_file(rid + ".1.input", {"value": "one"})
        until_n = lambda: len(of_type(r.events(rid, until="input_request"), "input_request"))
        t0 = time.monotonic()
        while until_n() < 2 and time.monotonic() - t0 < TIMEOUT:
            time.sleep(0.01)
        self.assertNotIn("done", [e["type"] for e in r.events(rid, until="input_request")])
        r.write_file(rid + ".2.input", {"value": "two"})
        self.assertEqual(text(r.events(rid)), "one two \n")
        # functions that ask through readline() use it too
        rid = r.send("execute", code='askYesNo("go on?")', allow_stdin=True)
        req = of_type(r.events(rid, until="input_request"), "input_request")[0]
        self.assertEqual(req["prompt"], "go on? (Yes/no/cancel) ")
        r.write_file(rid + ".1.input", {"value": "n"})
        self.assertEqual(shown(r.events(rid)), ["[1] FALSE"])

        evs = r.execute('readline("x")', allow_stdin=False)
        self.assertEqual(done(evs)["status"], "error")
        self.assertIn("cannot answer input requests", of_type(evs, "error")[0]["evalue"])

    # -- SIGINT

    def test_sigint_interrupts_cell(self):
        r = self.r
        rid = r.send("execute", code='cat("spinning\\n"); repeat {}')
        r.events(rid, until="stream")
        r.interrupt()
        evs = r.events(rid, timeout=10)
        self.assertEqual(done(evs)["status"], "aborted")
        self.assertEqual(of_type(evs, "error")[0]["ename"], "interrupt")
        self.assertEqual(shown(self.run_ok("1 + 1")), ["[1] 2"])

        # while waiting for input
        rid = r.send("execute", code='readline("? ")', allow_stdin=True)
        r.events(rid, until="input_request")
        r.interrupt()
        self.assertEqual(done(r.events(rid, timeout=10))["status"], "aborted")

        # in Sys.sleep
        rid = r.send("execute", code='cat("go\\n"); Sys.sleep(30)')
        r.events(rid, until="stream")
        time.sleep(0.1)
        r.interrupt()
        self.assertEqual(done(r.events(rid, timeout=10))["status"], "aborted")
        # in a command run by system(): as Ctrl-C in a terminal, the command ends (R ignores
        # SIGINT while it waits) and the cell goes on. Sent once the command runs: one that
        # lands while system() starts it is lost, as a Ctrl-C there would be
        rid = r.send("execute", code='cat("go\\n"); s <- system("sleep 30"); cat("after", s, "\\n")')
        r.events(rid, until="stream")
        t0 = time.monotonic()
        while "sleep" not in subprocess.run(["ps", "-o", "comm=", "-g", str(r.proc.pid)],
                                            capture_output=True, text=True).stdout.split():
            self.assertLess(time.monotonic() - t0, 10, "system()'s command not started")
            time.sleep(0.01)
        r.interrupt()
        evs = r.events(rid, timeout=20)                 # not the 30 s of the sleep
        self.assertIn("after", text(evs))
        self.assertEqual(shown(self.run_ok("1 + 1")), ["[1] 2"])

    def test_sigint_between_cells(self):
        r = self.r
        self.run_ok("1")
        for _ in range(3):
            r.interrupt()
            time.sleep(0.02)
        time.sleep(0.2)
        self.assertIsNone(r.proc.poll())
        # the next cell is not the one interrupted
        evs = self.run_ok("Sys.sleep(0.2); 1 + 1")
        self.assertEqual(shown(evs), ["[1] 2"])


if __name__ == "__main__":
    unittest.main()
