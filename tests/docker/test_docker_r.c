/*
 * The R kernel on the docker backend: a real dockerd, the real cellbox-r image
 * (scripts/build-image --kernel r), the same hardening as the Python kernel's.
 * `test_docker_r NAME` runs one; without a daemon or the image every test is skipped.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "backend.h"
#include "docker.h"
#include "session.h"
#include "util.h"
#include "../harness.h"

#define IMAGE_ENV "CELLBOX_R_IMAGE"

/* Open an R session in a container with the hardened defaults, changed by `so` where it says. */
static struct session *open_r(struct session_opts *so)
{
	return open_container(so, "r", getenv(IMAGE_ENV), NULL);
}

static void test_state_persists(void)
{
	struct session *s = open_r(NULL);

	if (!s)
		return;
	CHECK_STR(session_backend_name(s), backend_name());
	CHECK_STR(info_str(session_kernel_info(s), "wake"), "stdin");	/* a container: its stdin */
	expect_shown(s, "x <- 41\nx + 1", "[1] 42");
	expect_shown(s, "Sys.getenv('HOME')", "[1] \"/home/cellbox\"");
	expect_shown(s, "getwd()", "[1] \"/home/cellbox\"");
	expect_shown(s, "system2('id', '-u', stdout = TRUE) != '0'", "[1] TRUE");	/* not root */
	session_close(s);
}

static void test_plots(void)
{
	struct session *s = open_r(NULL);
	struct outcome o;

	if (!s)
		return;
	check_seed_plots_r(s);
	run(s, "library(ggplot2)\nprint(ggplot(mtcars, aes(wt, mpg)) + geom_point())\n"
	       "lattice::xyplot(mpg ~ wt, mtcars)", 0, 0, &o);
	CHECK(o.plots == 2 && o.last_plot_index == 3);
	CHECK(!strstr(o.err.buf, "font"));		/* the image has fonts for the text */
	if (o.plots != 2)
		tap_note(o.err.buf), tap_note(o.evalue);
	outcome_release(&o);
	session_close(s);
}

/* Output while the cell runs, an error, a warning: as on the local backend. */
static void test_streams_errors(void)
{
	struct session *s = open_r(NULL);
	struct outcome o;

	if (!s)
		return;
	/* the cell waits until the test has seen its output and interrupts it, then goes on */
	check_streaming_r(s, "invisible(tryCatch({cat('first\\n'); Sys.sleep(60)}, interrupt = "
			  "function(e) NULL)); cat('second\\n')", 0, &o);
	outcome_release(&o);
	expect_error(s, "f <- function() stop('boom')\nf()", "ERROR");
	run(s, "as.integer('x')", 0, 0, &o);
	CHECK_STR(o.shown, "[1] NA");
	CHECK(strstr(o.err.buf, "NAs introduced by coercion") != NULL);
	outcome_release(&o);
	session_close(s);
}

/*
 * Run the cellbox executable with `args` in a scratch home; its output in `out` (through a
 * file: a detached pool daemon keeps what it inherited open).
 */
static int cellbox(const char *home, const char *const *args, struct strbuf *out)
{
	const char *bin = getenv("CELLBOX_BIN");
	char *log = xasprintf("%s/cellbox.out", home);
	int status = -1;
	pid_t pid;

	if (!bin) {
		free(log);
		return -1;
	}
	pid = fork();
	if (pid == 0) {
		char *argv[24];
		size_t n = 0;
		int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0600);

		dup2(fd, 1);
		dup2(fd, 2);
		setenv("XDG_STATE_HOME", home, 1);
		setenv("XDG_CONFIG_HOME", home, 1);
		argv[n++] = (char *)bin;
		for (; *args && n < ARRAY_SIZE(argv) - 1; args++)
			argv[n++] = (char *)*args;
		argv[n] = NULL;
		execv(bin, argv);
		_exit(127);
	}
	waitpid(pid, &status, 0);
	strbuf_read_file(out, log, 1 << 20);
	free(log);
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* Replay an R percent file and the R notebook it makes, in containers. */
static void test_replay(void)
{
	char home[] = "/tmp/cellbox-docker-r-XXXXXX";
	struct strbuf out = STRBUF_INIT;
	char *src, *nb;
	FILE *f;

	CHECK(mkdtemp(home) != NULL);
	src = xasprintf("%s/cells.R", home);
	nb = xasprintf("%s/cells.ipynb", home);
	f = fopen(src, "w");
	CHECK(f != NULL);
	if (!f)
		return;
	fputs("# %%\nv <- c(3, 1, 2)\nsort(v)\n# %%\nplot(v)\n", f);
	fclose(f);
	{
		const char *args[] = { "replay", "--backend", backend_name(), src, "-o", nb, NULL };
		CHECK(cellbox(home, args, &out) == 0);
	}
	CHECK(strstr(out.buf, "[1] 1 2 3") != NULL);
	CHECK(strstr(out.buf, "[plot 1: 840x840 PNG") != NULL);
	tap_note(out.buf);
	strbuf_reset(&out);
	{
		const char *args[] = { "replay", "--backend", backend_name(), "--check", nb, NULL };
		CHECK(cellbox(home, args, &out) == 0);	/* the notebook says R by itself */
	}
	CHECK(strstr(out.buf, "outputs match") != NULL);
	tap_note(out.buf);
	fsutil_remove_tree(home);
	free(src);
	free(nb);
	strbuf_release(&out);
}

/* A pool of R kernels in containers: each client gets a fresh one. */
static void test_pool(void)
{
	char home[] = "/tmp/cellbox-docker-r-XXXXXX";
	struct strbuf out = STRBUF_INIT, first = STRBUF_INIT;
	char *run_dir;

	CHECK(mkdtemp(home) != NULL);
	run_dir = xasprintf("%s/run", home);
	setenv("CELLBOX_RUNTIME_DIR", run_dir, 1);
	{
		const char *args[] = { "pool", "serve", "--detach", "--backend", backend_name(),
				       "--kernel", "r", "--min", "2", "--max", "3", NULL };
		CHECK(cellbox(home, args, &out) == 0);
		tap_note(out.buf);
	}
	for (int i = 0; i < 40; i++) {			/* two warm kernels */
		const char *args[] = { "pool", "status", NULL };
		const char *p;
		int ready = 0;

		strbuf_reset(&out);
		cellbox(home, args, &out);
		for (p = out.buf; (p = strstr(p, "\nready ")); p++)
			ready++;
		if (ready >= 2)
			break;
		sleep(1);
	}
	CHECK(strstr(out.buf, "r kernels") != NULL);
	for (int i = 0; i < 2; i++) {
		const char *args[] = { "run", "--pool", "--backend", backend_name(), "--kernel", "r",
				       "-c", "cat(Sys.info()[['nodename']], '\\n')", NULL };
		strbuf_reset(&out);
		CHECK(cellbox(home, args, &out) == 0);
		CHECK(!strstr(out.buf, "note:"));	/* a pooled kernel, not a fresh one */
		tap_note(out.buf);
		if (!i)
			strbuf_addstr(&first, out.buf);
		else
			CHECK(strcmp(first.buf, out.buf) != 0);	/* another container */
	}
	{
		const char *args[] = { "pool", "stop", NULL };
		strbuf_reset(&out);
		CHECK(cellbox(home, args, &out) == 0);
	}
	unsetenv("CELLBOX_RUNTIME_DIR");
	fsutil_remove_tree(home);
	free(run_dir);
	strbuf_release(&out);
	strbuf_release(&first);
}

static void test_timeout(void)
{
	struct session_opts so = { .interrupt_grace = 10 };	/* loaded machines: no restart */
	struct session *s = open_r(&so);

	if (!s)
		return;
	check_timeout(s, &lang_r, 1.0);
	check_system_interrupted_r(s);		/* the init gives it to the kernel's group */
	expect_kept(s, &lang_r);			/* the same kernel */
	session_close(s);
}

static void test_interrupt(void)
{
	struct session *s = open_r(NULL);

	if (!s)
		return;
	check_interrupt(s, &lang_r, "cat('start\\n'); Sys.sleep(60)");
	session_close(s);
}

static void test_out_of_memory(void)
{
	struct session_opts so = { 0 };
	struct session *s;
	struct outcome o;

	so.memory = 192ull << 20;	/* R and its two helpers start in about 90 MB */
	s = open_r(&so);
	if (!s)
		return;
	run(s, "blocks <- list()\nrepeat blocks[[length(blocks) + 1]] <- numeric(1e6)", 0, 0, &o);
	CHECK_STR(o.ename, "KernelDied");
	if (!strcmp(backend_name(), "docker"))
		CHECK_STR(o.evalue, "kernel killed: out of memory (limit 192 MB)");
	CHECK(session_state(s) == SESSION_DEAD);
	outcome_release(&o);
	session_close(s);
}

static void test_network_none(void)
{
	struct session *s = open_r(NULL);
	struct outcome o;

	if (!s)
		return;
	run(s, "socketConnection('1.1.1.1', 80, timeout = 5)", 0, 0, &o);
	CHECK_STR(o.status, "error");
	outcome_release(&o);
	expect_shown(s, "sort(list.files('/sys/class/net'))", "[1] \"lo\"");
	run(s, "install.packages('jsonlite')", 0, 0, &o);
	CHECK(strstr(o.evalue, "has no network") != NULL);
	if (!strstr(o.evalue, "has no network"))
		tap_note(o.evalue), tap_note(o.err.buf);
	outcome_release(&o);
	session_close(s);
}

static void test_read_only(void)
{
	struct session *s = open_r(NULL);
	struct outcome o;

	if (!s)
		return;
	run(s, "writeLines('x', '/usr/evil')", 0, 0, &o);
	CHECK_STR(o.status, "error");
	CHECK(strstr(o.err.buf, "Read-only file system") != NULL);
	if (!strstr(o.err.buf, "Read-only file system"))
		tap_note(o.err.buf), tap_note(o.evalue);
	outcome_release(&o);
	expect_shown(s, "writeLines('a', '/home/cellbox/a'); writeLines('b', '/tmp/b')\n"
			"c(readLines('/home/cellbox/a'), readLines('/tmp/b'))", "[1] \"a\" \"b\"");
	expect_shown(s, "sub('CapEff:\\\\s*', '', grep('^CapEff', readLines('/proc/self/status'), "
			"value = TRUE))", "[1] \"0000000000000000\"");
	session_close(s);
}

static void test_copy_files(void)
{
	struct session *s = open_r(NULL);

	if (!s)
		return;
	check_copy_files(s, &lang_r);
	session_close(s);
}

static const struct tap_test tests[] = {
	{ "state_persists", test_state_persists },
	{ "plots", test_plots },
	{ "streams_errors", test_streams_errors },
	{ "replay", test_replay },
	{ "pool", test_pool },
	{ "timeout", test_timeout },
	{ "interrupt", test_interrupt },
	{ "out_of_memory", test_out_of_memory },
	{ "network_none", test_network_none },
	{ "read_only", test_read_only },
	{ "copy_files", test_copy_files },
};

int main(int argc, char **argv)
{
	char *image = getenv(IMAGE_ENV) ? xstrdup(getenv(IMAGE_ENV)) : session_kernel_image_for("r");
	char *why;

	signal(SIGPIPE, SIG_IGN);
	why = container_skip_reason(image, NULL, "scripts/build-image --kernel r");
	free(image);
	return tap_main_unless(argc, argv, tests, ARRAY_SIZE(tests), why);
}
