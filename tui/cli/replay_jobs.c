/* cellbox replay FILE...: many cell files, --jobs at a time, each in a process of its own. */
#include "replay_jobs.h"
#include "junit.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "clock.h"
#include "fsutil.h"

#define JOBS_MAX 64		/* --jobs above this is taken as this */
#define JOBS_HELD 128		/* files started and not yet printed (descriptors: 4 each) */
#define JOBS_OUTPUT_MAX ((size_t)256 << 20)	/* of a file's stdout, and of its stderr */
#define JOBS_GRACE 15.0		/* seconds a stopped file has to close its session: then KILL */

enum job_state { JOB_WAITING, JOB_RUNNING, JOB_DONE, JOB_PRINTED };

/* One stream of a running file: its pipe, spooled to an unlinked temporary file. */
struct capture {
	int pipe;		/* the read end, -1 once closed */
	int spool;		/* -1 until something came */
	size_t len;		/* bytes spooled */
	int cut;		/* more came than JOBS_OUTPUT_MAX (or the spool failed) */
};

struct job {
	const char *file;
	char *out_path, *plots_dir;	/* -o DIR/NAME.ipynb, --plots DIR/NAME */
	enum job_state state;
	pid_t pid;
	struct capture cap[2];		/* the file's stdout, stderr */
	double started, seconds;
	int rc;				/* its exit code, 128+N for a signal; -1 not run */
	char *error;			/* why it could not start */
};

struct jobs {
	const struct cli_args *args;
	struct cellbox_config *cfg;
	struct job *job;
	struct replay_result *shared;	/* each child's result, in memory shared with it */
	int n, max, color;
	int started, running, done, printed;
	int stopping;			/* 0, SIGINT (interrupts sent), SIGTERM (stops sent) */
	double t0, stop_at, bar_at;
	int progress, bar_shown;
	char *junit_dir;		/* --junit: a private directory, each file's <testsuite> */
};

static volatile sig_atomic_t child_exited;

static void on_sigchld(int sig)
{
	(void)sig;
	child_exited = 1;
}

/* A file's process whose cellbox died writes into a closed pipe: it goes on to clean up. */
static void on_sigpipe(int sig)
{
	(void)sig;
}

/* ---- names: -o DIR and --plots DIR hold one entry per file ---- */

/* NAME of FILE: its last component without the extension ("a/b.ipynb" -> "b"). */
static char *stem_of(const char *file)
{
	const char *base = file, *dot;
	size_t len = strlen(file);

	while (len > 1 && file[len - 1] == '/')
		len--;
	for (size_t i = 0; i < len; i++)
		if (file[i] == '/' && i + 1 < len)
			base = file + i + 1;
	len -= (size_t)(base - file);
	dot = memrchr(base, '.', len);
	if (dot && dot > base)
		len = (size_t)(dot - base);
	return xstrndup(base, len);
}

/* Each file's -o and --plots paths; -1 after saying which two files would share one. */
static int name_outputs(struct jobs *J)
{
	const char *out = cli_value(J->args, "output"), *plots = cli_value(J->args, "plots");
	char **stem;
	int rc = 0;

	if (!out && !plots)
		return 0;
	stem = xcalloc((size_t)J->n, sizeof(*stem));
	for (int i = 0; i < J->n; i++)
		stem[i] = stem_of(J->job[i].file);
	for (int i = 0; i < J->n && rc == 0; i++) {
		for (int k = 0; k < i; k++) {
			if (!strcmp(stem[i], stem[k])) {
				struct strbuf line = STRBUF_INIT;
				strbuf_addf(&line, "replay: '%s' and '%s' would both write '%s' in "
					    "%s: give them different names", J->job[k].file,
					    J->job[i].file, stem[i], out ? "-o" : "--plots");
				cli_printf(stderr, "cellbox: %s\n", line.buf);
				strbuf_release(&line);
				rc = -1;
				break;
			}
		}
		if (!*stem[i] || !strcmp(stem[i], ".") || !strcmp(stem[i], "..")) {
			cli_printf(stderr, "cellbox: replay: '%s' names no file for -o or --plots\n",
				   J->job[i].file);
			rc = -1;
		}
	}
	if (rc == 0 && out && fsutil_mkdir_p(out) < 0) {
		msg_error("cannot create '%s': %s", out, strerror(errno));
		rc = -1;
	}
	for (int i = 0; i < J->n; i++) {
		if (rc == 0 && out)
			J->job[i].out_path = xasprintf("%s/%s.ipynb", out, stem[i]);
		if (rc == 0 && plots)
			J->job[i].plots_dir = xasprintf("%s/%s", plots, stem[i]);
		free(stem[i]);
	}
	free(stem);
	return rc;
}

/* ---- capturing a file's output ---- */

/* An unlinked temporary file in $TMPDIR (or /tmp). */
static int spool_open(void)
{
	const char *dir = getenv("TMPDIR");
	char *tmpl;
	int fd;

	if (!dir || !*dir)
		dir = "/tmp";
	fd = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
	if (fd >= 0 || (errno != EOPNOTSUPP && errno != EISDIR))
		return fd;
	tmpl = xasprintf("%s/cellbox-replay-XXXXXX", dir);
	fd = mkostemp(tmpl, O_CLOEXEC);
	if (fd >= 0)
		unlink(tmpl);
	free(tmpl);
	return fd;
}

/* Read what the pipe holds now (all of it when the writer is gone) into the spool. */
static void capture_read(struct capture *c)
{
	char buf[65536];

	while (c->pipe >= 0) {
		ssize_t n = read(c->pipe, buf, sizeof(buf));
		size_t keep;

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			if (n == 0 || errno != EAGAIN) {
				close(c->pipe);
				c->pipe = -1;
			}
			return;
		}
		keep = JOBS_OUTPUT_MAX - c->len < (size_t)n ? JOBS_OUTPUT_MAX - c->len : (size_t)n;
		if (keep && c->spool < 0 && !c->cut && (c->spool = spool_open()) < 0)
			c->cut = 1;
		if (keep && c->spool >= 0 && fsutil_write_all(c->spool, buf, keep) < 0) {
			c->cut = 1;
			keep = 0;
		}
		c->len += keep;
		if (keep < (size_t)n)
			c->cut = 1;
	}
}

/* Copy the spool to `f` and close it. */
static void capture_put(struct capture *c, FILE *f)
{
	char buf[65536];
	ssize_t n;

	if (c->spool < 0)
		return;
	fflush(f);
	if (lseek(c->spool, 0, SEEK_SET) == 0)
		while ((n = read(c->spool, buf, sizeof(buf))) > 0)
			if (fsutil_write_all(fileno(f), buf, (size_t)n) < 0)
				break;
	close(c->spool);
	c->spool = -1;
}

static void capture_close(struct capture *c)
{
	if (c->pipe >= 0)
		close(c->pipe);
	if (c->spool >= 0)
		close(c->spool);
	c->pipe = c->spool = -1;
}

/* ---- the children ---- */

/* In the child: become the replay of file `i` alone, then exit with its code. */
static void __attribute__((noreturn)) child_run(struct jobs *J, int i, pid_t parent,
						int out, int err)
{
	struct job *j = &J->job[i];
	struct replay_file_opts o = { .out_path = j->out_path, .plots_dir = j->plots_dir,
				      .color = J->color };
	struct replay_result res = { .rc = -1 };
	int null = open("/dev/null", O_RDONLY | O_CLOEXEC), rc;
	char *junit = J->junit_dir ? xasprintf("%s/%d.xml", J->junit_dir, i) : NULL;

	/* Its own group: the terminal's Ctrl-C is the parent's to pass on. */
	setpgid(0, 0);
	prctl(PR_SET_PDEATHSIG, SIGTERM);
	if (getppid() != parent)
		_exit(128 + SIGTERM);
	signal(SIGCHLD, SIG_DFL);
	signal(SIGPIPE, on_sigpipe);	/* a handler, not SIG_IGN: exec() does not pass it on */
	for (int k = 0; k < J->n; k++)
		for (int s = 0; s < 2; s++)
			capture_close(&J->job[k].cap[s]);
	if (null < 0 || dup2(null, 0) < 0 || dup2(out, 1) < 0 || dup2(err, 2) < 0)
		_exit(EXIT_NO_KERNEL);
	close(null);
	close(out);
	close(err);
	cli_sigint = cli_sigterm = 0;
	sigprocmask(SIG_SETMASK, cli_wait_mask(), NULL);	/* as replay of one file starts */
	o.junit_path = junit;
	rc = cmd_replay_file(J->args, J->cfg, j->file, &o, &res);
	res.rc = rc;
	J->shared[i] = res;
	fflush(NULL);
	_exit(rc);
}

/* Start file `i` in a child of its own. */
static void job_start(struct jobs *J, int i)
{
	struct job *j = &J->job[i];
	int p[2][2] = { { -1, -1 }, { -1, -1 } };
	pid_t parent = getpid();

	if (pipe2(p[0], O_CLOEXEC) < 0 || pipe2(p[1], O_CLOEXEC) < 0)
		goto fail;
	fcntl(p[0][0], F_SETFL, O_NONBLOCK);
	fcntl(p[1][0], F_SETFL, O_NONBLOCK);
	fflush(NULL);	/* nothing buffered is printed twice */
	j->started = clock_now();
	j->pid = fork();
	if (j->pid < 0)
		goto fail;
	if (j->pid == 0) {
		close(p[0][0]);
		close(p[1][0]);
		child_run(J, i, parent, p[0][1], p[1][1]);
	}
	setpgid(j->pid, j->pid);	/* here too: the group exists before we signal it */
	close(p[0][1]);
	close(p[1][1]);
	j->cap[0].pipe = p[0][0];
	j->cap[1].pipe = p[1][0];
	j->state = JOB_RUNNING;
	J->running++;
	return;
fail:
	j->error = xasprintf("cannot start a process for it: %s", strerror(errno));
	for (int s = 0; s < 2; s++)
		for (int e = 0; e < 2; e++)
			if (p[s][e] >= 0)
				close(p[s][e]);
	j->rc = EXIT_NO_KERNEL;
	j->state = JOB_DONE;
	J->done++;
}

/* Collect every child that ended: what is left in its pipes, its exit code. */
static void jobs_reap(struct jobs *J)
{
	int st;
	pid_t pid;

	while ((pid = waitpid(-1, &st, WNOHANG)) > 0) {
		for (int i = 0; i < J->n; i++) {
			struct job *j = &J->job[i];

			if (j->state != JOB_RUNNING || j->pid != pid)
				continue;
			/* A kernel it left may hold a pipe: take what is there, no more. */
			for (int s = 0; s < 2; s++) {
				capture_read(&j->cap[s]);
				if (j->cap[s].pipe >= 0)
					close(j->cap[s].pipe);
				j->cap[s].pipe = -1;
			}
			j->rc = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
			j->seconds = clock_now() - j->started;
			j->state = JOB_DONE;
			J->running--;
			J->done++;
		}
	}
}

/* Send `sig` to every running child (SIGINT: interrupt its cell; SIGTERM, SIGKILL: stop). */
static void jobs_signal(struct jobs *J, int sig)
{
	for (int i = 0; i < J->n; i++)
		if (J->job[i].state == JOB_RUNNING)
			kill(J->job[i].pid, sig);
}

/* Act on a Ctrl-C, SIGTERM or SIGHUP of ours; kill what outlived the grace period. */
static void jobs_stop(struct jobs *J)
{
	if (cli_sigterm && J->stopping != SIGTERM) {
		J->stopping = SIGTERM;
		J->stop_at = clock_now();
		jobs_signal(J, SIGTERM);
	}
	if (cli_sigint) {
		cli_sigint = 0;
		if (J->stopping != SIGTERM) {
			J->stopping = J->stopping ? SIGTERM : SIGINT;
			J->stop_at = clock_now();
			jobs_signal(J, J->stopping);
		}
	}
	if (J->stopping == SIGTERM && clock_now() - J->stop_at > JOBS_GRACE)
		jobs_signal(J, SIGKILL);
	if (!J->stopping)
		return;
	for (int i = J->started; i < J->n; i++) {
		J->job[i].state = JOB_DONE;	/* not run: rc -1 */
		J->done++;
	}
	J->started = J->n;
}

/* ---- what is printed ---- */

static void bar_clear(struct jobs *J)
{
	if (J->bar_shown) {
		fputs("\r\x1b[K", stderr);
		fflush(stderr);
		J->bar_shown = 0;
	}
}

/* Files done / total, running, elapsed. */
static void bar_draw(struct jobs *J)
{
	char bar[21];
	int fill = 20 * J->done / J->n;

	if (!J->progress || clock_now() - J->bar_at < 0.2)
		return;
	for (int i = 0; i < 20; i++)
		bar[i] = i < fill ? '#' : '-';
	bar[20] = '\0';
	fprintf(stderr, "\r\x1b[K[%s] %d/%d files, %d running %.1fs", bar, J->done, J->n,
		J->running, clock_now() - J->t0);
	fflush(stderr);
	J->bar_shown = 1;
	J->bar_at = clock_now();
}

/* Print the files that ended, in the order of the arguments, each whole. */
static void jobs_print(struct jobs *J)
{
	while (J->printed < J->n && J->job[J->printed].state == JOB_DONE) {
		struct job *j = &J->job[J->printed++];

		bar_clear(J);
		J->bar_at = 0;
		if (j->rc < 0)
			continue;	/* not run: the table says so */
		cli_printf(stderr, "==> %s <==\n", j->file);
		fflush(stderr);
		capture_put(&j->cap[0], stdout);
		capture_put(&j->cap[1], stderr);
		if (j->error)
			msg_error("replay: %s", j->error);
		for (int s = 0; s < 2; s++)
			if (j->cap[s].cut)
				msg_error("replay: the %s of '%s' was cut after %zu bytes",
					  s ? "stderr" : "stdout", j->file, j->cap[s].len);
		j->state = JOB_PRINTED;
	}
}

/* ok, failed (a cell failed or differed), error (nothing ran), interrupted, stopped. */
static const char *status_of(int rc)
{
	switch (rc) {
	case -1: return "not run";
	case EXIT_OK: return "ok";
	case EXIT_CELL_ERROR: case EXIT_TIMEOUT: case EXIT_KERNEL_DIED: case EXIT_POLICY:
	case EXIT_CHECK_FAILED: return "failed";
	case EXIT_INTERRUPTED: return "interrupted";
	default: return rc > 128 ? "stopped" : "error";
	}
}

/* How bad an exit code is: 0 best. */
static int severity(int rc)
{
	static const int order[] = { EXIT_OK, EXIT_CHECK_FAILED, EXIT_CELL_ERROR, EXIT_TIMEOUT,
				     EXIT_POLICY, EXIT_KERNEL_DIED, EXIT_NO_KERNEL, EXIT_USAGE };

	for (size_t i = 0; i < sizeof(order) / sizeof(order[0]); i++)
		if (rc == order[i])
			return (int)i;
	if (rc == EXIT_INTERRUPTED || rc == -1)
		return 9;
	return rc > 128 ? 10 : 8;	/* a signal; an exit code of no table */
}

/* The table on stderr; returns the worst exit code. */
static int jobs_table(struct jobs *J)
{
	int worst = EXIT_OK, count[6] = { 0 };
	static const char *const names[6] = { "ok", "failed", "error", "interrupted", "stopped",
					      "not run" };

	for (int i = 0; i < J->n; i++) {
		int rc = J->job[i].rc;
		/* A file not run counts as interrupted (Ctrl-C) or stopped (SIGTERM). */
		int as = rc >= 0 ? rc : J->stopping == SIGTERM ? 128 + SIGTERM : EXIT_INTERRUPTED;

		if (severity(as) > severity(worst))
			worst = as;
		for (int k = 0; k < 6; k++)
			if (!strcmp(status_of(rc), names[k]))
				count[k]++;
	}
	if (cli_sigterm)
		worst = cli_exit_terminated();
	fprintf(stderr, "replay: %d files in %.2f s (--jobs %d):", J->n, clock_now() - J->t0,
		J->max);
	for (int k = 0, first = 1; k < 6; k++)
		if (count[k]) {
			fprintf(stderr, "%s %d %s", first ? "" : ",", count[k], names[k]);
			first = 0;
		}
	fprintf(stderr, "; exit %d\n  %5s  %-11s %4s %8s  %s\n", worst, "cells", "status", "exit",
		"seconds", "file");
	for (int i = 0; i < J->n; i++) {
		const struct job *j = &J->job[i];
		const struct replay_result *r = &J->shared[i];
		char cells[16] = "-", rc[16] = "-", secs[32] = "-";

		if (r->rc >= 0)
			snprintf(cells, sizeof(cells), "%d", r->ran);
		if (j->rc >= 0) {
			snprintf(rc, sizeof(rc), "%d", j->rc);
			snprintf(secs, sizeof(secs), "%.2f", j->seconds);
		}
		cli_printf(stderr, "  %5s  %-11s %4s %8s  %s\n", cells, status_of(j->rc), rc, secs,
			   j->file);
	}
	return worst;
}

/* ---- the loop ---- */

/* Wait for output, an exit or a signal; take what came. */
static void jobs_wait(struct jobs *J, const sigset_t *mask)
{
	struct pollfd fds[2 * JOBS_MAX];
	struct capture *who[2 * JOBS_MAX];
	int nfds = 0;
	/* Woken by SIGCHLD too; the timeout redraws the bar and counts the grace period. */
	struct timespec ts = { 0, 200000000 };

	for (int i = 0; i < J->n && nfds < 2 * JOBS_MAX; i++)
		for (int s = 0; s < 2; s++)
			if (J->job[i].state == JOB_RUNNING && J->job[i].cap[s].pipe >= 0) {
				fds[nfds] = (struct pollfd){ .fd = J->job[i].cap[s].pipe,
							     .events = POLLIN };
				who[nfds++] = &J->job[i].cap[s];
			}
	if (!child_exited && ppoll(fds, (nfds_t)nfds, &ts, mask) > 0)
		for (int k = 0; k < nfds; k++)
			if (fds[k].revents)
				capture_read(who[k]);
	child_exited = 0;
	jobs_reap(J);
}

/* --junit: every file's <testsuite> in the order of the arguments, inside <testsuites>. */
static int jobs_junit(struct jobs *J, const char *path)
{
	struct strbuf all = STRBUF_INIT, err = STRBUF_INIT;
	int rc;

	for (int i = 0; i < J->n; i++) {
		char *frag = xasprintf("%s/%d.xml", J->junit_dir, i);
		replay_junit_gather(&all, frag, J->job[i].file, status_of(J->job[i].rc),
				    J->job[i].rc, J->job[i].seconds);
		free(frag);
	}
	rc = junit_save(path, all.buf, 1, &err);
	if (rc < 0)
		msg_error("--junit: %s", err.buf);
	strbuf_release(&all);
	strbuf_release(&err);
	return rc;
}

int replay_jobs_run(const struct cli_args *args, struct cellbox_config *cfg, int jobs)
{
	struct jobs J = { .args = args, .cfg = cfg, .n = args->argc, .max = jobs };
	struct sigaction sa;
	sigset_t chld, mask;
	int rc = EXIT_USAGE;

	if (J.max == 0) {
		long cpus = sysconf(_SC_NPROCESSORS_ONLN);
		J.max = cpus > 0 ? (int)cpus : 1;
	}
	if (J.max > JOBS_MAX)
		J.max = JOBS_MAX;
	J.job = xcalloc((size_t)J.n, sizeof(*J.job));
	for (int i = 0; i < J.n; i++) {
		J.job[i].file = args->argv[i];
		J.job[i].rc = -1;
		for (int s = 0; s < 2; s++)
			J.job[i].cap[s].pipe = J.job[i].cap[s].spool = -1;
	}
	J.shared = mmap(NULL, (size_t)J.n * sizeof(*J.shared), PROT_READ | PROT_WRITE,
			MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (J.shared == MAP_FAILED) {
		msg_error("replay: %s", strerror(errno));
		J.shared = NULL;
		goto out;
	}
	for (int i = 0; i < J.n; i++)
		J.shared[i].rc = -1;
	if (cmd_replay_check_options(args) < 0 || name_outputs(&J) < 0)
		goto out;
	if (cli_has(args, "junit")) {
		const char *tmp = getenv("TMPDIR");
		J.junit_dir = xasprintf("%s/cellbox-junit-XXXXXX", tmp && *tmp ? tmp : "/tmp");
		if (!mkdtemp(J.junit_dir)) {
			msg_error("replay: cannot create '%s': %s", J.junit_dir, strerror(errno));
			free(J.junit_dir);
			J.junit_dir = NULL;
			goto out;
		}
	}
	J.color = !cli_has(args, "json") && cli_want_color(1);
	J.progress = isatty(2) && !cli_has(args, "no-progress") && !cli_has(args, "json");

	cli_catch_sigint();
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_sigchld;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGCHLD, &sa, NULL);
	sigemptyset(&chld);
	sigaddset(&chld, SIGCHLD);
	sigprocmask(SIG_BLOCK, &chld, NULL);
	mask = *cli_wait_mask();
	sigdelset(&mask, SIGCHLD);

	J.t0 = clock_now();
	while (J.printed < J.n) {
		jobs_stop(&J);
		while (!J.stopping && J.running < J.max && J.started < J.n &&
		       J.started - J.printed < JOBS_HELD)
			job_start(&J, J.started++);
		jobs_print(&J);
		if (J.printed == J.n)
			break;
		bar_draw(&J);
		jobs_wait(&J, &mask);
	}
	bar_clear(&J);
	rc = jobs_table(&J);
	if (J.junit_dir && jobs_junit(&J, cli_value(args, "junit")) < 0 && rc == EXIT_OK)
		rc = EXIT_USAGE;
	sigprocmask(SIG_UNBLOCK, &chld, NULL);
	signal(SIGCHLD, SIG_DFL);
out:
	for (int i = 0; i < J.n; i++) {
		for (int s = 0; s < 2; s++)
			capture_close(&J.job[i].cap[s]);
		free(J.job[i].out_path);
		free(J.job[i].plots_dir);
		free(J.job[i].error);
	}
	if (J.junit_dir) {
		fsutil_remove_tree(J.junit_dir);
		free(J.junit_dir);
	}
	if (J.shared)
		munmap(J.shared, (size_t)J.n * sizeof(*J.shared));
	free(J.job);
	return rc;
}
