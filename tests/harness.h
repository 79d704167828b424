#ifndef CELLBOX_TEST_HARNESS_H
#define CELLBOX_TEST_HARNESS_H

/*
 * The set-up the engine's test programs share (the local and docker suites, both kernels),
 * beside outcome.h's cells:
 *
 *   info_str(info, key)                   a string of the kernel's ready object
 *   backend_name(), under_gvisor()        the container backend under test, its runtime
 *   open_container(so, kernel, image, rt) a session on it, `so` (or the defaults) changed
 *   container_skip_reason(image, rt, how) why the container tests cannot run here
 *   tap_main_unless(..., why)             tap_main(), or every test skipped for `why`
 *   check_streaming_r(s, code, note, &o) the R kernel's output seen while its cell runs
 *   check_system_interrupted_r(s)         ... an interrupt reaching its system() command
 *   check_seed_plots_r(s)                 ... its plots numbered, and after clear_plots
 *
 * and the cases every kernel passes alike, on every backend, said in its language (struct lang,
 * lang_python and lang_r):
 *
 *   check_timeout(s, lang, secs)          a cell past its timeout is interrupted, state kept
 *   check_interrupt(s, lang, code)        an interrupted cell is aborted, state kept
 *   expect_kept(s, lang)                  the value those keep is still there
 *   check_copy_files(s, lang)             files copied into a container's session and out
 *
 * Everything is static inline: a program takes what it uses.
 */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "docker.h"
#include "files.h"
#include "session.h"
#include "util.h"
#include "outcome.h"
#include "tap.h"

/* String member `key` of the kernel's ready object, "" when it has none. */
static inline const char *info_str(const cJSON *info, const char *key)
{
	return str_or_empty(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(info, key)));
}

/*
 * The backend under test: docker, or $CELLBOX_TEST_BACKEND (podman, with DOCKER_HOST at its
 * socket for the test's own calls).
 */
static inline const char *backend_name(void)
{
	const char *b = getenv("CELLBOX_TEST_BACKEND");

	return b && *b ? b : "docker";
}

/* Whether the kernels run under gVisor (runsc): it answers some calls its own way. */
static inline int under_gvisor(void)
{
	const char *rt = getenv("CELLBOX_RUNTIME");

	return rt && !strcmp(rt, "runsc");
}

/*
 * Open a session on the container backend with the hardened defaults, changed by `so` where
 * it says (NULL: none): the kernel `kernel` (NULL: the default), its image `image` (NULL: the
 * kernel's own), the runtime `runtime` (NULL: dockerd's default).
 */
static inline struct session *open_container(struct session_opts *so, const char *kernel,
					     const char *image, const char *runtime)
{
	struct session_opts dflt = { 0 };

	if (!so)
		so = &dflt;
	so->backend = backend_name();
	so->kernel = kernel;
	so->sandbox.image = image;
	so->sandbox.runtime = runtime;
	/* CELLBOX_CHANNEL=stream: the same cases over the relay's stream (docker-stream/) */
	if (!so->sandbox.channel)
		so->sandbox.channel = getenv("CELLBOX_CHANNEL");
	return open_checked(so);
}

/*
 * Why the container tests cannot run here (no daemon, no runtime `runtime` when one is named,
 * no image `image`, which `build` builds), allocated; NULL when they can.
 */
static inline char *container_skip_reason(const char *image, const char *runtime,
					  const char *build)
{
	struct docker d;
	struct strbuf err = STRBUF_INIT;
	char *path, *why = NULL;

	if (docker_init(&d, NULL, &err) < 0)
		return strbuf_detach(&err, NULL);
	if (runtime && *runtime) {
		cJSON *info = NULL;

		if (docker_call(&d, "GET", "/info", NULL, &info, &err) != 200 ||
		    !cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(info, "Runtimes"),
						     runtime))
			why = xasprintf("dockerd has no runtime '%s' (configure it in "
					"/etc/docker/daemon.json)", runtime);
		cJSON_Delete(info);
	}
	if (!why) {
		path = xasprintf("/images/%s/json", image);
		if (docker_call(&d, "GET", path, NULL, NULL, &err) != 200)
			why = xasprintf("no image %s (%s builds it)", image, build);
		free(path);
	}
	docker_release(&d);
	strbuf_release(&err);
	return why;
}

/*
 * tap_main(), or when `why` is not NULL every test reported skipped for it (TAP "1..0 # SKIP",
 * on one line); `why` is freed.
 */
static inline int tap_main_unless(int argc, char **argv, const struct tap_test *tests, size_t n,
				  char *why)
{
	if (!why)
		return tap_main(argc, argv, tests, n);
	for (char *p = why; *p; p++)
		if (*p == '\n')
			*p = ' ';
	printf("1..0 # SKIP %s\n", why);
	free(why);
	return 0;
}

/*
 * Output of the R kernel reaches the host while the cell still runs, not at its end: `code`
 * writes "first\n" (and with `note` the message "note"), sleeps until it is interrupted, then
 * writes "second\n". Fills `o`, for the caller's further checks.
 */
static inline void check_streaming_r(struct session *s, const char *code, int note,
				     struct outcome *o)
{
	unsigned long id = cell_start(s, code, 0, 0, NULL, o);

	cell_await(s, id, o, NULL, note);
	CHECK_STR(o->out.buf, "first\n");
	if (note)
		CHECK_STR(o->err.buf, "note\n\n");
	CHECK(id && session_pending(s, id));		/* before the cell's end */
	cell_interrupt(s, id);
	CHECK_STR(o->out.buf, "first\nsecond\n");
}

/*
 * The seed's R example: plot(1:10) gives one plot, the first; with clear_plots, hist() gives
 * one again, numbered 1.
 */
static inline void check_seed_plots_r(struct session *s)
{
	struct outcome o;

	run(s, "plot(1:10)", 0, 0, &o);
	CHECK(o.plots == 1 && o.last_plot_index == 1);
	CHECK_STR(o.status, "ok");
	outcome_release(&o);
	run(s, "hist(rnorm(100))", SESSION_EXEC_CLEAR_PLOTS, 0, &o);
	CHECK(o.plots == 1 && o.last_plot_index == 1);
	outcome_release(&o);
}

/*
 * An interrupt reaches a command the R kernel runs by system(): the kernel's process group gets
 * it, as on a terminal, the command ends and the cell goes on. Sent once the command runs: R
 * ignores SIGINT while system() starts it and sh while it starts its own commands, so one that
 * lands there is lost (the grace then restarts the kernel); the shell here traps it before it
 * says "in", so none is lost.
 */
static inline void check_system_interrupted_r(struct session *s)
{
	struct outcome o;

	run_and_interrupt(s, "system(\"trap 'exit 130' INT; echo in; i=0; "
			  "while [ $i -lt 600 ]; do sleep 0.1; i=$((i+1)); done\"); cat('after\\n')",
			  "in\n", &o);
	CHECK_STR(o.reason, "interrupt");
	CHECK_STR(o.out.buf, "in\nafter\n");
	outcome_release(&o);
}

/* What the shared cases say in a kernel's language. */
struct lang {
	int shown;		/* values are displayed (R's printed ones), not results */
	const char *keep;	/* a cell that keeps 7 in `kept` */
	const char *kept;	/* ... one that gives it back */
	const char *kept_value;	/* ... as the kernel gives it */
	const char *spin;	/* a cell that runs until it is stopped */
	const char *interrupted;	/* the error an interrupted cell ends with */
	/* check_copy_files(): cells that read the copied file and make one, what they give */
	const char *read_copied, *read_copied_value;
	const char *make_file, *make_file_value;
	const char *made;	/* ... the bytes of the file made */
	const char *no_such_file;	/* the error copying out a file that is not there */
};

static const struct lang lang_python = {
	.keep = "kept = 7",
	.kept = "kept",
	.kept_value = "7",
	.spin = "while True: pass",
	.interrupted = "KeyboardInterrupt",
	.read_copied = "open('/home/cellbox/sub/dir/data.txt').read()",
	.read_copied_value = "'payload\\n'",
	.make_file = "open('made.txt', 'w').write('from the sandbox')",
	.make_file_value = "16",
	.made = "from the sandbox",
	.no_such_file = "No such file",
};

static const struct lang lang_r = {
	.shown = 1,
	.keep = "kept <- 7",
	.kept = "kept",
	.kept_value = "[1] 7",
	.spin = "repeat {}",
	.interrupted = "interrupt",
	.read_copied = "readLines('/home/cellbox/sub/dir/data.txt')",
	.read_copied_value = "[1] \"payload\"",
	.make_file = "writeLines('from the sandbox', 'made.txt')\nfile.exists('made.txt')",
	.make_file_value = "[1] TRUE",
	.made = "from the sandbox\n",
	.no_such_file = "no such file",
};

/* The value the cases below keep is still there: the same kernel serves the next cell. */
static inline void expect_kept(struct session *s, const struct lang *l)
{
	expect_text(s, l->kept, l->shown, l->kept_value);
}

/*
 * A cell that runs past its timeout of `secs` is interrupted: aborted for the timeout (not a
 * restart: the grace the session was opened with must outlast a loaded machine), with the
 * language's interrupt error, and what the kernel held is kept.
 */
static inline void check_timeout(struct session *s, const struct lang *l, double secs)
{
	struct outcome o;

	expect_text(s, l->keep, l->shown, "");
	run(s, l->spin, 0, secs, &o);
	CHECK_STR(o.status, "aborted");
	CHECK_STR(o.reason, "timeout");
	CHECK(o.why == REASON_TIMEOUT);
	CHECK_STR(o.ename, l->interrupted);	/* SIGINT reached the kernel (through an init) */
	outcome_release(&o);
	expect_kept(s, l);
}

/*
 * A cell interrupted once its output shows (`code` writes a line, then runs on) is aborted for
 * the interrupt, not by a restart, with the language's interrupt error; what the kernel held
 * is kept.
 */
static inline void check_interrupt(struct session *s, const struct lang *l, const char *code)
{
	struct outcome o;

	expect_text(s, l->keep, l->shown, "");
	run_and_interrupt(s, code, NULL, &o);
	CHECK_STR(o.status, "aborted");
	CHECK_STR(o.reason, "interrupt");		/* not "interrupt: kernel restarted" */
	CHECK(o.why == REASON_INTERRUPTED);
	CHECK_STR(o.ename, l->interrupted);
	outcome_release(&o);
	expect_kept(s, l);
}

/*
 * Files copied into a container's session and out of it: in onto the tmpfs work directory
 * behind a read-only root (the kernel reads them), out of it (what the kernel wrote); not into
 * the root, not out of what is not there.
 */
static inline void check_copy_files(struct session *s, const struct lang *l)
{
	struct strbuf err = STRBUF_INIT, back = STRBUF_INIT;
	char in[] = "/tmp/cellbox-copy-XXXXXX";
	char *out;
	int fd;

	fd = mkstemp(in);
	CHECK(fd >= 0 && write(fd, "payload\n", 8) == 8);
	close(fd);
	out = xasprintf("%s.out", in);
	CHECK(files_copy_in(s, in, "sub/dir/data.txt", &err) == 0);
	tap_note(err.buf);
	expect_text(s, l->read_copied, l->shown, l->read_copied_value);
	expect_text(s, l->make_file, l->shown, l->make_file_value);
	CHECK(files_copy_out(s, "made.txt", out, &err) == 0);
	CHECK(strbuf_read_file(&back, out, 1024) == 0);
	CHECK_STR(back.buf, l->made);
	strbuf_reset(&err);
	CHECK(files_copy_in(s, in, "/etc/evil", &err) < 0);	/* the root stays read-only */
	CHECK(strstr(err.buf, "Read-only file system") != NULL ||
	      (under_gvisor() && strstr(err.buf, "Permission denied") != NULL));
	tap_note(err.buf);
	strbuf_reset(&err);
	CHECK(files_copy_out(s, "/no/such/file", out, &err) < 0);
	CHECK(strstr(err.buf, l->no_such_file) != NULL);
	unlink(in);
	unlink(out);
	free(out);
	strbuf_release(&err);
	strbuf_release(&back);
}

#endif
