/*
 * Integration tests of the session engine on the real runner and the real IPython
 * (the local backend). Each test opens its own session; `test_session NAME` runs one.
 */
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "session.h"
#include "util.h"
#include "zygote.h"
#include "../harness.h"

#ifndef TEST_PYTHON
#define TEST_PYTHON "/usr/bin/python3"
#endif


static struct session *open_session(double grace)
{
	struct session_opts so = { 0 };

	so.python = TEST_PYTHON;
	so.interrupt_grace = grace;
	return open_checked(&so);
}

static void test_state_persists(void)
{
	struct session *s = open_session(0);
	struct outcome o;

	if (!s)
		return;
	CHECK(session_state(s) == SESSION_IDLE);
	run(s, "x = 41", 0, 0, &o);
	CHECK_STR(o.status, "ok");
	CHECK(o.results == 0);
	outcome_release(&o);
	run(s, "x + 1", 0, 0, &o);
	CHECK_STR(o.result, "42");
	CHECK_STR(o.status, "ok");
	CHECK(o.why == REASON_OK && !o.reason[0]);
	outcome_release(&o);
	expect_result(s, "def f(n):\n    return n * x\nf(2)", "82");
	session_close(s);
}

static void test_magics(void)
{
	struct session *s = open_session(0);
	struct outcome o;

	if (!s)
		return;
	run(s, "alpha = 1\nbeta = 'b'", 0, 0, &o);
	outcome_release(&o);
	run(s, "%who", 0, 0, &o);
	CHECK(strstr(o.out.buf, "alpha") && strstr(o.out.buf, "beta"));
	outcome_release(&o);
	run(s, "!echo hi", 0, 0, &o);
	CHECK_STR(o.out.buf, "hi\r\n");	/* a pseudo-terminal's line end, as ipykernel's */
	outcome_release(&o);
	run(s, "%%timeit -n1 -r1\nsum(range(100))", 0, 0, &o);
	CHECK(strstr(o.out.buf, "loop") != NULL);
	CHECK_STR(o.status, "ok");
	outcome_release(&o);
	run(s, "%cd /tmp", 0, 0, &o);
	outcome_release(&o);
	run(s, "import os; os.getcwd()", 0, 0, &o);
	CHECK_STR(o.result, "'/tmp'");
	outcome_release(&o);
	session_close(s);
}

static void test_stream_order(void)
{
	struct session *s = open_session(0);
	struct outcome o;

	if (!s)
		return;
	run(s, "import sys\nprint('a')\nprint('b', file=sys.stderr)\nprint('c')\n"
	       "sys.stdout.write('no newline')", 0, 0, &o);
	CHECK_STR(o.out.buf, "a\nc\nno newline");
	CHECK_STR(o.err.buf, "b\n");
	CHECK(o.order_ok);
	outcome_release(&o);
	session_close(s);
}

static void test_errors(void)
{
	struct session *s = open_session(0);

	if (!s)
		return;
	expect_error(s, "1/0", "ZeroDivisionError");
	expect_error(s, "x = )", "SyntaxError");
	expect_result(s, "'still alive'", "'still alive'");
	session_close(s);
}

static void test_plots(void)
{
	struct session *s = open_session(0);
	struct outcome o;

	if (!s)
		return;
	run(s, "import matplotlib.pyplot as plt\nplt.plot([1, 2, 3])\nplt.show()", 0, 0, &o);
	CHECK(o.plots == 1 && o.last_plot_index == 1);
	outcome_release(&o);
	run(s, "plt.plot([3, 2, 1])", 0, 0, &o);	/* left open: captured at the end */
	CHECK(o.plots == 1 && o.last_plot_index == 2);
	outcome_release(&o);
	request(s, "clear_plots", NULL, &o);
	CHECK(o.reply_seen && o.reply_cleared == 2);
	outcome_release(&o);
	run(s, "plt.plot([5, 5, 5]); plt.show()", 0, 0, &o);
	CHECK(o.plots == 1 && o.last_plot_index == 1);
	outcome_release(&o);
	session_close(s);
}

static void test_timeout(void)
{
	struct session *s = open_session(0);

	if (!s)
		return;
	check_timeout(s, &lang_python, 0.5);
	session_close(s);
}

static void test_ignored_interrupt(void)
{
	struct session *s = open_session(0.5);
	struct outcome o;

	if (!s)
		return;
	run(s, "z = 1", 0, 0, &o);
	outcome_release(&o);
	run(s, "import signal\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\nwhile True: pass",
	    0, 0.5, &o);
	CHECK_STR(o.status, "aborted");
	CHECK_STR(o.reason, "timeout: kernel restarted");
	CHECK(o.why == REASON_TIMEOUT_KILLED);
	CHECK_STR(o.ename, "TimeoutError");
	CHECK(strstr(o.evalue, "restarted") != NULL);
	outcome_release(&o);
	CHECK(session_state(s) == SESSION_IDLE);
	run(s, "z", 0, 0, &o);		/* a fresh kernel: z is gone */
	CHECK_STR(o.ename, "NameError");
	outcome_release(&o);
	session_close(s);
}

static void test_user_interrupt(void)
{
	struct session *s = open_session(0);

	if (!s)
		return;
	check_interrupt(s, &lang_python, "import time\nprint('start', flush=True)\ntime.sleep(60)");
	session_close(s);
}

static void test_death_exit(void)
{
	struct session *s = open_session(0);
	struct strbuf err = STRBUF_INIT;
	struct outcome o;
	double took;

	if (!s)
		return;
	took = run(s, "import os\nprint('bye', flush=True)\nos._exit(3)", 0, 0, &o);
	printf("# death noticed after %.3f s\n", took);
	CHECK(took < 10);		/* generous: the claim is "at once", measured in bench */
	CHECK_STR(o.status, "aborted");
	CHECK_STR(o.reason, "kernel died (exit code 3)");
	CHECK(o.why == REASON_KERNEL_DIED);
	CHECK_STR(o.ename, "KernelDied");
	CHECK_STR(o.out.buf, "bye\n");	/* what it printed before dying is kept */
	CHECK(session_state(s) == SESSION_DEAD);
	outcome_release(&o);
	CHECK(session_execute(s, "1", 0, 0, collect, &o, &err) == 0);
	CHECK(strstr(err.buf, "not running") != NULL);
	strbuf_reset(&err);
	CHECK(session_restart(s, &err) == 0);
	expect_result(s, "1 + 1", "2");
	strbuf_release(&err);
	session_close(s);
}

static void test_death_sigkill(void)
{
	struct session *s = open_session(0);
	struct outcome o;

	if (!s)
		return;
	run(s, "import os, signal\nos.kill(os.getpid(), signal.SIGKILL)", 0, 0, &o);
	CHECK_STR(o.status, "aborted");
	CHECK_STR(o.reason, "kernel died (killed by signal 9, SIGKILL)");
	CHECK(o.why == REASON_KERNEL_DIED);
	outcome_release(&o);
	session_close(s);
}

static void test_invalid_utf8(void)
{
	struct session *s = open_session(0);
	struct outcome o;

	if (!s)
		return;
	run(s, "import os\nos.write(1, b'\\xff\\xfeok\\n')", 0, 0, &o);
	CHECK(strstr(o.out.buf, "\xef\xbf\xbd") != NULL);	/* U+FFFD */
	CHECK(strstr(o.out.buf, "ok\n") != NULL);
	CHECK_STR(o.status, "ok");
	outcome_release(&o);
	run(s, "print('\\udcff lone surrogate')", 0, 0, &o);
	CHECK(strstr(o.out.buf, "lone surrogate") != NULL);
	outcome_release(&o);
	session_close(s);
}

static void test_big_output(void)
{
	struct session *s = open_session(0);
	struct outcome o;
	struct rusage ru;
	size_t xs = 0;

	if (!s)
		return;
	run(s, "print('x' * 10_000_000)", 0, 0, &o);
	for (size_t i = 0; i < o.out.len; i++)
		xs += o.out.buf[i] == 'x';
	CHECK(xs == 10000000 && o.out.len == 10000001);
	CHECK(o.events > 150);		/* it came in chunks, not one line */
	CHECK_STR(o.status, "ok");
	outcome_release(&o);
	getrusage(RUSAGE_SELF, &ru);
	printf("# host max RSS after a 10 MB cell: %ld kB\n", ru.ru_maxrss);
	session_close(s);
}

static double cpu_seconds(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
	       (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

/*
 * Back-to-back cells are looked for awake a moment (both sides spin up to 0.3 ms after a
 * command or a done); a long cell and an idle kernel are waited for asleep: neither side
 * spends CPU while it waits.
 */
static void test_waits_sleep(void)
{
	struct session *s = open_session(0);
	struct outcome o;
	double host;

	if (!s)
		return;
	for (int i = 0; i < 20; i++) {
		run(s, "pass", 0, 0, &o);
		outcome_release(&o);
	}
	host = cpu_seconds();
	run(s, "import time; time.sleep(0.8)", 0, 0, &o);
	outcome_release(&o);
	host = cpu_seconds() - host;
	CHECK(host < 0.2);
	printf("# host CPU while a 0.8 s cell ran: %.4f s\n", host);

	for (int i = 0; i < 20; i++) {
		run(s, "pass", 0, 0, &o);
		outcome_release(&o);
	}
	run(s, "import time; _cpu0 = time.process_time()", 0, 0, &o);
	outcome_release(&o);
	nanosleep(&(struct timespec){ .tv_nsec = 800 * 1000 * 1000 }, NULL);
	run(s, "time.process_time() - _cpu0 < 0.2", 0, 0, &o);
	CHECK_STR(o.result, "True");	/* the kernel's CPU over 0.8 s idle after a burst */
	outcome_release(&o);
	session_close(s);
}

static void test_malformed_event(void)
{
	struct session *s = open_session(0);
	struct outcome o;

	if (!s)
		return;
	/*
	 * The cell appends garbage to its own result file: the host must skip it, not stop,
	 * and say so once for the cell.
	 */
	run(s, "import glob\n"
	       "channel = open('/proc/self/cmdline').read().split('\\0')[-2]\n"
	       "for p in glob.glob(channel + '/kernel/results/*.jsonl'):\n"
	       "    open(p, 'a').write('this is {not json\\n[1, 2]\\n')\n"
	       "print('after')", 0, 0, &o);
	CHECK(strstr(o.err.buf, "skipped 2 malformed event lines") != NULL);
	{
		const char *first = strstr(o.err.buf, "malformed");

		CHECK(first && !strstr(first + 1, "malformed"));	/* once */
	}
	CHECK(strstr(o.out.buf, "after") != NULL);
	CHECK_STR(o.status, "ok");
	outcome_release(&o);
	expect_result(s, "2 + 2", "4");
	session_close(s);
}

static void test_input(void)
{
	struct session *s = open_session(0);
	struct outcome o;

	if (!s)
		return;
	cell_wait(s, cell_start(s, "name = input('who? ')\nname.upper()", SESSION_EXEC_ALLOW_STDIN,
				0, "Ada", &o));
	CHECK(o.input_requests == 1);
	CHECK_STR(o.result, "'ADA'");
	outcome_release(&o);
	/* no stdin: an error, not a hang */
	expect_error(s, "input('again? ')", "StdinNotImplementedError");
	session_close(s);
}

static void test_requests(void)
{
	struct session *s = open_session(0);
	struct outcome o;

	if (!s)
		return;
	request(s, "is_complete", "{\"code\": \"for i in range(3):\"}", &o);
	CHECK_STR(o.reply_status, "incomplete");
	CHECK_STR(o.reply_indent, "    ");
	outcome_release(&o);
	request(s, "is_complete", "{\"code\": \"x = 1\"}", &o);
	CHECK_STR(o.reply_status, "complete");
	outcome_release(&o);
	request(s, "is_complete", "{\"code\": \"x = )\"}", &o);
	CHECK_STR(o.reply_status, "invalid");
	outcome_release(&o);
	request(s, "complete", "{\"code\": \"import o\", \"cursor_pos\": 8}", &o);
	CHECK(!strncmp(o.matches.buf, "os\n", 3) || strstr(o.matches.buf, "\nos\n"));
	outcome_release(&o);
	request(s, "inspect", "{\"code\": \"len\", \"cursor_pos\": 3, \"detail_level\": 0}", &o);
	CHECK(o.reply_found);
	CHECK(strstr(o.reply_text, "len") != NULL);
	outcome_release(&o);
	session_close(s);
}

static void test_memory_limit(void)
{
	struct session_opts so = { 0 };
	struct strbuf err = STRBUF_INIT;
	struct session *s;
	struct outcome o;

	so.python = TEST_PYTHON;
	so.memory = 1ULL << 30;
	s = session_open(&so, &err);
	CHECK(s != NULL);
	if (!s) {
		tap_note(err.buf);
		strbuf_release(&err);
		return;
	}
	run(s, "b = bytearray(2 * 1024 ** 3)", 0, 0, &o);
	CHECK_STR(o.ename, "MemoryError");
	outcome_release(&o);
	expect_result(s, "len(bytearray(10 ** 6))", "1000000");	/* still serving */
	strbuf_release(&err);
	session_close(s);
}

static void test_bad_start(void)
{
	struct session_opts so = { 0 };
	struct strbuf err = STRBUF_INIT;
	char script[] = "/tmp/cellbox-nopy-XXXXXX";
	struct session *s;
	int fd;

	so.python = "/nonexistent/python3";
	s = session_open(&so, &err);
	CHECK(s == NULL);
	CHECK(strstr(err.buf, "cannot run '/nonexistent/python3': No such file or directory") != NULL);
	strbuf_reset(&err);

	/* An interpreter without IPython: the error says so and shows the runner's log. */
	fd = mkstemp(script);
	CHECK(fd >= 0);
	dprintf(fd, "#!/bin/sh\nexec %s -I -S \"$@\"\n", TEST_PYTHON);
	close(fd);
	chmod(script, 0700);
	so.python = script;
	s = session_open(&so, &err);
	CHECK(s == NULL);
	CHECK(strstr(err.buf, "failed to start") != NULL);
	CHECK(strstr(err.buf, "No module named 'IPython'") != NULL);
	tap_note(err.buf);
	unlink(script);
	strbuf_release(&err);
}

static void test_restart(void)
{
	struct session *s = open_session(0);
	struct strbuf err = STRBUF_INIT;
	struct outcome o;

	if (!s)
		return;
	run(s, "w = 3", 0, 0, &o);
	outcome_release(&o);
	CHECK(session_restart(s, &err) == 0);
	run(s, "w", 0, 0, &o);
	CHECK_STR(o.ename, "NameError");
	outcome_release(&o);
	strbuf_release(&err);
	session_close(s);
}

/* A kernel that removes its channel is stopped at once and the session recovers. */
static void test_channel_removed(void)
{
	struct session *s = open_session(0);
	struct strbuf why = STRBUF_INIT, err = STRBUF_INIT;
	struct outcome o;
	char *dir;

	if (!s)
		return;
	dir = xstrdup(session_channel_dir(s));
	run(s, "import shutil, sys, time\nshutil.rmtree(sys.argv[1])\ntime.sleep(30)", 0, 0, &o);
	CHECK(o.why == REASON_CHANNEL_LOST);
	CHECK(strstr(o.reason, "channel removed by the kernel") != NULL);
	tap_note(o.reason);
	CHECK(session_state(s) == SESSION_DEAD);
	outcome_release(&o);
	/* Before the next cell: a fresh kernel, in the channel made again at the same path. */
	CHECK(session_revive(s, &why, &err) == 1);
	CHECK(strstr(why.buf, "channel removed") != NULL);
	CHECK_STR(session_channel_dir(s), dir);
	expect_result(s, "40 + 2", "42");
	free(dir);
	strbuf_release(&why);
	strbuf_release(&err);
	session_close(s);
}

/* A kernel that died between two cells is started again before the next (Jupyter's way). */
static void test_revive(void)
{
	struct session *s = open_session(0);
	struct strbuf why = STRBUF_INIT, err = STRBUF_INIT;
	struct outcome o;
	const cJSON *pid;

	if (!s)
		return;
	CHECK(session_revive(s, &why, &err) == 0);	/* alive: nothing to do */
	run(s, "v = 1", 0, 0, &o);
	outcome_release(&o);
	pid = cJSON_GetObjectItemCaseSensitive(session_kernel_info(s), "pid");
	CHECK(cJSON_IsNumber(pid) && kill((pid_t)pid->valueint, SIGKILL) == 0);
	usleep(200000);
	CHECK(session_revive(s, &why, &err) == 1);
	CHECK(strstr(why.buf, "SIGKILL") != NULL);
	tap_note(why.buf);
	run(s, "'v' in dir()", 0, 0, &o);
	CHECK_STR(o.result, "False");		/* a fresh kernel */
	outcome_release(&o);
	strbuf_release(&why);
	strbuf_release(&err);
	session_close(s);
}

/* What a kernel's process is, as its own code sees it (a forked kernel must match a cold one). */
static const char facts_cell[] =
	"import os, sys, resource, signal, linecache\n"
	"st = dict(l.split(':', 1) for l in open('/proc/self/status'))\n"
	"import re\n"
	"chan = os.path.dirname(os.path.dirname(sys.argv[0]))\n"
	"fds = sorted(os.readlink('/proc/self/fd/%d' % f).split('[')[0].replace(chan, 'CH')\n"
	"             .split('/results/')[0]\n"
	"             for f in map(int, os.listdir('/proc/self/fd')) if f > 2 and\n"
	"             f not in inherited and\n"
	"             os.path.exists('/proc/self/fd/%d' % f))\n"
	"facts = [os.getpid(), os.getppid(), os.getpgrp() == os.getsid(0) or os.getpgrp(),\n"
	"         os.getuid(), os.getgid(), os.getcwd(), os.umask(0o22),\n"
	"         [st[k].strip() for k in ('CapInh', 'CapPrm', 'CapEff', 'CapBnd', 'CapAmb',\n"
	"          'NoNewPrivs', 'Seccomp', 'SigBlk', 'SigIgn', 'Threads')],\n"
	"         [resource.getrlimit(r) for r in (resource.RLIMIT_AS, resource.RLIMIT_NOFILE)],\n"
	"         signal.getsignal(signal.SIGINT).__name__, sys.argv[1] == chan,\n"
	"         sys.path[0] == os.path.join(chan, 'host', 'runner.zip'), len(fds), fds,\n"
	"         sorted(k for k in os.environ if k not in ('MPLBACKEND',)),\n"
	"         open('/proc/self/mountinfo').read().count('proc'),\n"
	"         [os.path.normpath(a.decode()).replace(chan, 'CH')\n"
	"          for a in open('/proc/self/cmdline', 'rb').read().split(b'\\0')],\n"
	"         get_ipython().execution_count, In, sorted(Out), _i, _,\n"
	"         len([f for f in linecache.cache if 'ipykernel_' in f])]\n"
	"print(facts)\n";

/* The facts of a kernel, with or without the zygote installed. */
static void kernel_facts(struct zygote *z, struct strbuf *facts)
{
	struct strbuf cell = STRBUF_INIT;
	struct session *s;
	struct outcome o;

	/* A cold kernel inherits what we hold without close-on-exec (the test runner's): not its. */
	strbuf_addstr(&cell, "inherited = {-1");
	for (int fd = 3; fd < 1024; fd++) {
		int flags = fcntl(fd, F_GETFD);

		if (flags >= 0 && !(flags & FD_CLOEXEC))
			strbuf_addf(&cell, ", %d", fd);
	}
	strbuf_addf(&cell, "}\n%s", facts_cell);
	zygote_install(z);
	s = open_session(0);
	zygote_install(NULL);
	if (!s) {
		strbuf_release(&cell);
		return;
	}
	run(s, cell.buf, 0, 30, &o);
	CHECK_STR(o.status, "ok");
	strbuf_add(facts, o.out.buf, o.out.len);
	outcome_release(&o);
	session_close(s);
	strbuf_release(&cell);
}

/* The zygote: its kernels are what a cold one is, each with its own random state. */
static void test_zygote_kernels(void)
{
	struct strbuf err = STRBUF_INIT, cold = STRBUF_INIT, forked = STRBUF_INIT;
	char dir[] = "/tmp/cellbox-zygote-test-XXXXXX";
	struct session *a, *b;
	struct zygote *z;
	struct outcome o1, o2;
	char *zdir;

	CHECK(mkdtemp(dir) != NULL);
	zdir = xasprintf("%s/zygote", dir);
	z = zygote_start(zdir, TEST_PYTHON, "numpy", &err);
	CHECK(z != NULL);
	if (!z) {
		tap_note(err.buf);
		goto out;
	}
	kernel_facts(NULL, &cold);
	kernel_facts(z, &forked);
	CHECK(zygote_usable(z));
	tap_note(zygote_error(z));
	CHECK(cold.len > 0);
	CHECK_STR(forked.buf, cold.buf);
	tap_note(forked.buf);

	/* Forked it is (a cold kernel imports numpy only when asked), and seeded afresh. */
	zygote_install(z);
	a = open_session(0);
	b = open_session(0);
	zygote_install(NULL);
	if (a && b) {
		static const char draw[] =
			"import sys, random; print('numpy.random' in sys.modules, random.random(), "
			"sys.modules['numpy.random'].rand() if 'numpy.random' in sys.modules else 0)";

		run(a, draw, 0, 30, &o1);
		run(b, draw, 0, 30, &o2);
		CHECK(!strncmp(o1.out.buf, "True ", 5));
		CHECK(o1.out.len > 10 && o2.out.len > 10);
		/* Python's random and numpy's each drew something else in the two kernels */
		CHECK(strcspn(o1.out.buf + 5, " ") != strcspn(o2.out.buf + 5, " ") ||
		      strncmp(o1.out.buf + 5, o2.out.buf + 5, strcspn(o1.out.buf + 5, " ")));
		CHECK(strcmp(strrchr(o1.out.buf, ' '), strrchr(o2.out.buf, ' ')) != 0);
		tap_note(o1.out.buf);
		tap_note(o2.out.buf);
		outcome_release(&o1);
		outcome_release(&o2);
	}
	session_close(a);
	session_close(b);

	/* A zygote that died: the next kernel starts cold, and works. */
	kill(zygote_pid(z), SIGKILL);
	usleep(100000);
	CHECK(!zygote_usable(z));
	zygote_install(z);
	a = open_session(0);
	zygote_install(NULL);
	if (a) {
		run(a, "print(1 + 1)", 0, 30, &o1);
		CHECK_STR(o1.out.buf, "2\n");
		outcome_release(&o1);
	}
	session_close(a);
out:
	zygote_free(z);
	{
		char *cmd = xasprintf("rm -rf '%s'", dir);
		CHECK(system(cmd) == 0);
		free(cmd);
	}
	free(zdir);
	strbuf_release(&err);
	strbuf_release(&cold);
	strbuf_release(&forked);
}

static const struct tap_test tests[] = {
	{ "state_persists", test_state_persists },
	{ "magics", test_magics },
	{ "stream_order", test_stream_order },
	{ "errors", test_errors },
	{ "plots", test_plots },
	{ "timeout", test_timeout },
	{ "ignored_interrupt", test_ignored_interrupt },
	{ "user_interrupt", test_user_interrupt },
	{ "death_exit", test_death_exit },
	{ "death_sigkill", test_death_sigkill },
	{ "invalid_utf8", test_invalid_utf8 },
	{ "big_output", test_big_output },
	{ "waits_sleep", test_waits_sleep },
	{ "malformed_event", test_malformed_event },
	{ "input", test_input },
	{ "requests", test_requests },
	{ "memory_limit", test_memory_limit },
	{ "bad_start", test_bad_start },
	{ "restart", test_restart },
	{ "channel_removed", test_channel_removed },
	{ "revive", test_revive },
	{ "zygote_kernels", test_zygote_kernels },
};

/*
 * With CELLBOX_TEST_ZYGOTE=1 every test's kernels are forked from a zygote (the pool daemon's
 * way), so the whole suite runs against forked kernels.
 */
int main(int argc, char **argv)
{
	struct strbuf err = STRBUF_INIT;
	struct zygote *z = NULL;
	char dir[] = "/tmp/cellbox-zygote-suite-XXXXXX";
	int rc;

	signal(SIGPIPE, SIG_IGN);
	if (getenv("CELLBOX_TEST_ZYGOTE") && *getenv("CELLBOX_TEST_ZYGOTE") == '1' &&
	    mkdtemp(dir)) {
		char *zdir = xasprintf("%s/zygote", dir);

		z = zygote_start(zdir, TEST_PYTHON, "", &err);
		if (!z)
			printf("Bail out! no zygote: %s\n", err.buf);
		free(zdir);
		if (!z)
			return 1;
		zygote_install(z);
	}
	rc = tap_main(argc, argv, tests, ARRAY_SIZE(tests));
	if (z) {
		char *cmd = xasprintf("rm -rf '%s'", dir);

		zygote_free(z);
		if (system(cmd) != 0)
			rc = 1;
		free(cmd);
	}
	strbuf_release(&err);
	return rc;
}
