/*
 * Integration tests of the session engine with the R kernel: the real runner.R on the real R
 * (local backend), driven through the session API as every front end drives it, so the host's
 * side of the protocol (wake-up FIFO, SIGINT to the process group, the kernel table) is in the
 * path. `test_session_r NAME` runs one; without Rscript every case is skipped.
 */
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "session.h"
#include "util.h"
#include "../harness.h"

#ifndef TEST_RSCRIPT
#define TEST_RSCRIPT "/usr/bin/Rscript"
#endif

static struct session *open_r(double grace)
{
	struct session_opts so = { 0 };

	so.kernel = "r";
	so.rscript = TEST_RSCRIPT;
	so.interrupt_grace = grace;
	return open_checked(&so);
}

/* The seed's R example: plot(1:10) gives one plot; with clear_plots, hist() gives one again. */
static void test_seed_plots(void)
{
	struct session *s = open_r(0);
	struct outcome o;

	if (!s)
		return;
	check_seed_plots_r(s);
	/* accumulate: the counter goes on */
	run(s, "barplot(1:3)", 0, 0, &o);
	CHECK(o.plots == 1 && o.last_plot_index == 2);
	outcome_release(&o);
	request(s, "clear_plots", NULL, &o);
	CHECK(o.reply_seen && o.reply_cleared == 2);
	outcome_release(&o);
	session_close(s);
}

static void test_state_persists(void)
{
	struct session *s = open_r(0);
	const cJSON *info;
	struct outcome o;

	if (!s)
		return;
	info = session_kernel_info(s);
	CHECK_STR(info_str(info, "language"), "R");
	CHECK_STR(info_str(info, "wake"), "fifo");
	CHECK_STR(session_kernel(s)->name, "r");
	run(s, "x <- 41", 0, 0, &o);
	CHECK(o.shown_count == 0);
	outcome_release(&o);
	run(s, "x + 1", 0, 0, &o);
	CHECK_STR(o.shown, "[1] 42");
	CHECK_STR(o.status, "ok");
	outcome_release(&o);
	expect_shown(s, "f <- function(n) n * x\nf(2)", "[1] 82");
	session_close(s);
}

/* Output reaches the host while the cell still runs, not at its end. */
static void test_streaming(void)
{
	struct session *s = open_r(0);
	struct outcome o;

	if (!s)
		return;
	/* the cell waits until the test has seen its output and interrupts it, then goes on */
	check_streaming_r(s, "invisible(tryCatch({cat('first\\n'); message('note'); "
			  "Sys.sleep(60)}, interrupt = function(e) NULL)); cat('second\\n')", 1, &o);
	CHECK_STR(o.err.buf, "note\n\n");
	CHECK(o.order_ok);
	outcome_release(&o);
	session_close(s);
}

static void test_errors_and_warnings(void)
{
	struct session *s = open_r(0);
	struct outcome o;

	if (!s)
		return;
	/* as IRkernel stores them */
	run(s, "f <- function() stop('boom')\nf()", 0, 0, &o);
	CHECK_STR(o.ename, "ERROR");
	CHECK_STR(o.evalue, "Error in f(): boom\n");
	CHECK_STR(o.status, "error");
	outcome_release(&o);
	run(s, "x <- )", 0, 0, &o);
	CHECK_STR(o.ename, "ERROR");
	CHECK_STR(o.evalue, "Error in parse(text = x, srcfile = src): <text>:1:6: unexpected ')'\n"
		  "1: x <- )\n         ^\n");
	outcome_release(&o);
	run(s, "log(-1)", 0, 0, &o);
	CHECK_STR(o.status, "ok");
	CHECK_STR(o.shown, "[1] NaN");
	CHECK_STR(o.err.buf, "Warning message in log(-1):\n\u201cNaNs produced\u201d\n");
	outcome_release(&o);
	expect_shown(s, "'still alive'", "[1] \"still alive\"");
	session_close(s);
}

static void test_interrupt(void)
{
	struct session *s = open_r(0);

	if (!s)
		return;
	check_interrupt(s, &lang_r, "cat('spinning\\n'); repeat {}");
	session_close(s);
}

static void test_timeout(void)
{
	struct session *s = open_r(10);	/* a loaded machine must not turn this into a restart */

	if (!s)
		return;
	check_timeout(s, &lang_r, 0.5);
	check_system_interrupted_r(s);
	expect_kept(s, &lang_r);
	session_close(s);
}

static void test_ggplot_lattice_pages(void)
{
	struct session *s = open_r(0);
	struct outcome o;

	if (!s)
		return;
	run(s, "library(ggplot2)\nggplot(data.frame(x = 1:3, y = 3:1), aes(x, y)) + geom_line()",
	    0, 0, &o);
	CHECK_STR(o.status, "ok");
	CHECK(o.plots == 1 && o.last_plot_index == 1);
	outcome_release(&o);
	run(s, "lattice::xyplot(1:5 ~ 1:5)", 0, 0, &o);
	CHECK(o.plots == 1 && o.last_plot_index == 2);
	outcome_release(&o);
	run(s, "for (i in 1:3) plot(i)\nprint(ggplot(data.frame(x = 1), aes(x, x)) + geom_point())",
	    0, 0, &o);
	CHECK(o.plots == 4 && o.last_plot_index == 6);
	outcome_release(&o);
	session_close(s);
}

static void test_input(void)
{
	struct session *s = open_r(0);
	struct outcome o;

	if (!s)
		return;
	cell_wait(s, cell_start(s, "name <- readline('who? ')\ntoupper(name)",
				SESSION_EXEC_ALLOW_STDIN, 0, "Ada", &o));
	CHECK(o.input_requests == 1);
	CHECK_STR(o.shown, "[1] \"ADA\"");
	outcome_release(&o);
	run(s, "readline('again? ')", 0, 0, &o);	/* no stdin: an error, not a hang */
	CHECK_STR(o.status, "error");
	CHECK(strstr(o.evalue, "cannot answer input requests") != NULL);
	outcome_release(&o);
	session_close(s);
}

static void test_requests(void)
{
	struct session *s = open_r(0);
	struct outcome o;

	if (!s)
		return;
	request(s, "is_complete", "{\"code\": \"f <- function(x) {\"}", &o);
	CHECK_STR(o.reply_status, "incomplete");
	CHECK_STR(o.reply_indent, "  ");
	outcome_release(&o);
	request(s, "is_complete", "{\"code\": \"x <- )\"}", &o);
	CHECK_STR(o.reply_status, "invalid");
	outcome_release(&o);
	request(s, "complete", "{\"code\": \"suppressMessa\", \"cursor_pos\": 13}", &o);
	CHECK(!strncmp(o.matches.buf, "suppressMessages\n", 17));	/* the first match */
	outcome_release(&o);
	request(s, "inspect", "{\"code\": \"paste0\", \"cursor_pos\": 3}", &o);
	CHECK(o.reply_found);
	outcome_release(&o);
	session_close(s);
}

/* Between requests the kernel sleeps in a read of the wake-up FIFO: no polling. */
static void test_wake_no_polling(void)
{
	struct session *s = open_r(0);
	const cJSON *pid;
	struct outcome o;
	char path[64], wchan[64] = "";
	int fd;
	ssize_t n;

	if (!s)
		return;
	run(s, "1", 0, 0, &o);
	outcome_release(&o);
	pid = cJSON_GetObjectItemCaseSensitive(session_kernel_info(s), "pid");
	/* the pid is the kernel's init (a pid namespace of its own): the runner is its child */
	snprintf(path, sizeof(path), "/proc/%d/task/%d/children", pid ? pid->valueint : 0,
		 pid ? pid->valueint : 0);
	fd = open(path, O_RDONLY);
	n = fd >= 0 ? read(fd, wchan, sizeof(wchan) - 1) : -1;
	wchan[n > 0 ? n : 0] = '\0';
	if (fd >= 0)
		close(fd);
	snprintf(path, sizeof(path), "/proc/%d/wchan",
		 atoi(wchan) > 0 ? atoi(wchan) : pid ? pid->valueint : 0);
	wchan[0] = '\0';
	/* pipe_read, or anon_pipe_read on newer kernels */
	for (int i = 0; i < 100 && !strstr(wchan, "pipe_read"); i++) {
		struct timespec ts = { 0, 10000000 };

		nanosleep(&ts, NULL);
		fd = open(path, O_RDONLY);
		n = fd >= 0 ? read(fd, wchan, sizeof(wchan) - 1) : -1;
		wchan[n > 0 ? n : 0] = '\0';
		if (fd >= 0)
			close(fd);
	}
	CHECK(strstr(wchan, "pipe_read") != NULL);
	if (!strstr(wchan, "pipe_read"))
		printf("# wchan '%s'\n", wchan);
	expect_shown(s, "2", "[1] 2");			/* and it wakes for the next one */
	session_close(s);
}

static void test_death(void)
{
	struct session *s = open_r(0);
	struct strbuf err = STRBUF_INIT;
	struct outcome o;
	double took;

	if (!s)
		return;
	run(s, "kept <- 1", 0, 0, &o);
	outcome_release(&o);
	took = run(s, "cat('bye\\n'); tools::pskill(Sys.getpid(), tools::SIGKILL)", 0, 0, &o);
	printf("# death noticed after %.3f s\n", took);
	CHECK(took < 10);
	CHECK_STR(o.reason, "kernel died (killed by signal 9, SIGKILL)");
	CHECK_STR(o.out.buf, "bye\n");	/* what it wrote before it died is kept */
	CHECK(session_state(s) == SESSION_DEAD);
	outcome_release(&o);
	CHECK(session_restart(s, &err) == 0);
	expect_shown(s, "exists('kept')", "[1] FALSE");
	strbuf_release(&err);
	session_close(s);
}

static void test_bad_start(void)
{
	struct session_opts so = { 0 };
	struct strbuf err = STRBUF_INIT;
	char script[] = "/tmp/cellbox-norjson-XXXXXX";
	struct session *s;
	int fd;

	so.kernel = "r";
	so.rscript = "/nonexistent/Rscript";
	s = session_open(&so, &err);
	CHECK(s == NULL);
	CHECK(strstr(err.buf, "cannot run '/nonexistent/Rscript'") != NULL);
	strbuf_reset(&err);
	so.kernel = "cobol";
	s = session_open(&so, &err);
	CHECK(s == NULL);
	CHECK_STR(err.buf, "there is no kernel 'cobol' (there are: python, r, jupyter:NAME (an "
		  "installed kernelspec))");
	strbuf_reset(&err);

	/* An R without jsonlite: the error says what to install and shows the runner's log. */
	fd = mkstemp(script);
	CHECK(fd >= 0);
	dprintf(fd, "#!/bin/sh\nR_LIBS_SITE=/nonexistent R_LIBS_USER=/nonexistent exec %s \"$@\"\n",
		TEST_RSCRIPT);
	close(fd);
	chmod(script, 0700);
	so.kernel = "r";
	so.rscript = script;
	s = session_open(&so, &err);
	CHECK(s == NULL);
	CHECK(strstr(err.buf, "failed to start") != NULL);
	CHECK(strstr(err.buf, "apt-get install r-cran-jsonlite") != NULL);
	tap_note(err.buf);
	unlink(script);
	strbuf_release(&err);
}

/*
 * The security policy reads Python: an R session under a policy is refused, with a message
 * that says why, rather than run unchecked cells. A Python session takes the same policy.
 */
static void test_policy_refused(void)
{
	struct session_opts so = { 0 };
	struct strbuf err = STRBUF_INIT;
	struct policy *p = policy_parse("threshold = LOW\nmodule os HIGH Operating system\n",
					"tight", &err);
	struct session *s;

	CHECK(p != NULL);
	if (!p) {
		tap_note(err.buf);
		strbuf_release(&err);
		return;
	}
	p->name = xstrdup("tight");	/* policy_load() names it after its file */
	so.kernel = "r";
	so.policy = p;
	s = session_open(&so, &err);
	CHECK(s == NULL);
	CHECK_STR(err.buf, "the security policy 'tight' reads Python code: it cannot check the r "
		  "kernel's cells (use --policy none with --kernel r)");
	session_close(s);
	strbuf_reset(&err);
	so.kernel = "python";
	s = session_open(&so, &err);
	CHECK(s != NULL);
	if (!s)
		tap_note(err.buf);
	session_close(s);
	policy_free(p);
	strbuf_release(&err);
}

static const struct tap_test tests[] = {
	{ "seed_plots", test_seed_plots },
	{ "state_persists", test_state_persists },
	{ "streaming", test_streaming },
	{ "errors_and_warnings", test_errors_and_warnings },
	{ "interrupt", test_interrupt },
	{ "timeout", test_timeout },
	{ "ggplot_lattice_pages", test_ggplot_lattice_pages },
	{ "input", test_input },
	{ "requests", test_requests },
	{ "wake_no_polling", test_wake_no_polling },
	{ "death", test_death },
	{ "bad_start", test_bad_start },
	{ "policy_refused", test_policy_refused },
};

int main(int argc, char **argv)
{
	signal(SIGPIPE, SIG_IGN);
	if (access(TEST_RSCRIPT, X_OK) < 0) {
		printf("1..0 # SKIP no %s (Debian: apt-get install r-base-core r-cran-jsonlite)\n",
		       TEST_RSCRIPT);
		return 0;
	}
	return tap_main(argc, argv, tests, ARRAY_SIZE(tests));
}
