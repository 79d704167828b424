/* The zygote: a warm Python runner that forks kernels (zygote.h). */
#include "zygote.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kernel.h"
#include "numconv.h"
#include "wall.h"

/* How long the zygote may take to import, and to fork one kernel. */
#define ZYGOTE_START_TIMEOUT 60.0
#define ZYGOTE_FORK_TIMEOUT 10.0
/* The descriptor the zygote reads its requests from (runner.zip --zygote FD). */
#define ZYGOTE_FD 3
/* Bytes of the zygote's arguments a kernel rewrites as its own ("runner.zip CHANNEL"). */
#define ZYGOTE_ARG_ROOM 4096

struct zygote {
	pid_t pid;
	int gone;		/* reaped */
	int fd;			/* our end of the socketpair */
	int ready;		/* it said it imported everything */
	int broken;		/* a request failed: it forks no more */
	char *python;
	char *preimport;
	struct strbuf error;	/* why it broke */
};

static struct zygote *installed;

/* The child: a runner in zygote mode on the socket, stdio to /dev/null and the log. */
static void __attribute__((noreturn)) exec_zygote(const char *python, const char *runner,
						  const char *preimport, int sock, int logfd,
						  pid_t parent)
{
	const struct kernel_def *k = kernel_find("python");

	process_signals_for_child();
	setpgid(0, 0);		/* a terminal's Ctrl-C for the daemon is not for the zygote */
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() != parent)
		_exit(127);
	process_stdio_to_null(0, 0, -1, -1);
	if (logfd >= 0) {
		dup2(logfd, 1);
		dup2(logfd, 2);
	}
	if (sock == ZYGOTE_FD)
		fcntl(sock, F_SETFD, 0);
	else if (dup2(sock, ZYGOTE_FD) < 0)
		_exit(127);
	/* Nothing else of the daemon's (or what it inherited) for the zygote and its kernels */
	process_close_fds(ZYGOTE_FD, -1);
	/* The environment of a cold kernel (backend_local.c exec_runner). */
	setenv("PYTHONDONTWRITEBYTECODE", "1", 1);
	if (k && k->env[0])
		setenv(k->env[0], k->env[1], 1);
	/* room for a kernel's own command line (runner/zygote.py _zygote_cmdline) */
	{
		char pad[ZYGOTE_ARG_ROOM + 1];

		memset(pad, '/', ZYGOTE_ARG_ROOM);
		pad[ZYGOTE_ARG_ROOM] = 0;
		execl(python, python, runner, "--zygote", "3", preimport, pad, (char *)NULL);
	}
	_exit(127);
}

/* Write the Python runner into the zygote's directory; its path (caller frees) or NULL. */
static char *write_runner(const char *dir, struct strbuf *err)
{
	const struct kernel_def *k = kernel_find("python");
	char *path;
	int fd;

	if (!k) {
		strbuf_addstr(err, "no python kernel");
		return NULL;
	}
	path = xasprintf("%s/%s", dir, k->runner);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0 || fsutil_write_all(fd, k->code, *k->code_len) < 0) {
		strbuf_addf(err, "cannot write the zygote's runner '%s': %s", path, strerror(errno));
		if (fd >= 0)
			close(fd);
		free(path);
		return NULL;
	}
	close(fd);
	return path;
}

struct zygote *zygote_start(const char *dir, const char *python, const char *preimport,
			    struct strbuf *err)
{
	struct zygote *z = NULL;
	char *runner = NULL, *log = NULL;
	int sv[2] = { -1, -1 }, logfd = -1;
	pid_t parent = getpid(), pid;

	if (wall_own_dir(dir, 1, err) < 0 || !(runner = write_runner(dir, err)))
		goto out;
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0) {
		strbuf_addf(err, "cannot make the zygote's socket: %s", strerror(errno));
		goto out;
	}
	log = xasprintf("%s/log", dir);
	logfd = open(log, O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_CLOEXEC, 0600);
	pid = fork();
	if (pid < 0) {
		strbuf_addf(err, "cannot fork the zygote: %s", strerror(errno));
		goto out;
	}
	if (pid == 0)
		exec_zygote(python, runner, preimport ? preimport : "", sv[1], logfd, parent);
	z = xcalloc(1, sizeof(*z));
	strbuf_init(&z->error, 0);
	z->pid = pid;
	z->fd = sv[0];
	sv[0] = -1;
	z->python = xstrdup(python);
	z->preimport = xstrdup(preimport ? preimport : "");
out:
	if (sv[0] >= 0)
		close(sv[0]);
	if (sv[1] >= 0)
		close(sv[1]);
	if (logfd >= 0)
		close(logfd);
	free(runner);
	free(log);
	return z;
}

pid_t zygote_pid(const struct zygote *z)
{
	return z ? z->pid : 0;
}

const char *zygote_preimport(const struct zygote *z)
{
	return z->preimport;
}

const char *zygote_error(const struct zygote *z)
{
	return z->error.len ? z->error.buf : z->gone ? "it ended" : "";
}

int zygote_reaped(struct zygote *z, pid_t pid)
{
	if (!z || z->gone || pid != z->pid)
		return 0;
	z->gone = 1;
	return 1;
}

int zygote_usable(const struct zygote *z)
{
	struct zygote *zz = (struct zygote *)z;

	if (!z || z->broken || z->gone)
		return 0;
	if (waitpid(z->pid, NULL, WNOHANG) == z->pid) {
		zz->gone = 1;
		return 0;
	}
	return 1;
}

/* Read one message from the zygote within `timeout` seconds; NULL with `err` set. */
static cJSON *receive(struct zygote *z, double timeout, struct strbuf *err)
{
	double deadline = clock_now() + timeout;
	char buf[4096];
	ssize_t n;

	for (;;) {
		struct pollfd pfd = { .fd = z->fd, .events = POLLIN };
		double left = deadline - clock_now();
		int r;

		if (left <= 0) {
			strbuf_addf(err, "the zygote did not answer within %g s", timeout);
			return NULL;
		}
		r = poll(&pfd, 1, wait_ms(left));
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			continue;
		n = recv(z->fd, buf, sizeof(buf) - 1, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			strbuf_addstr(err, "the zygote ended (see its log)");
			return NULL;
		}
		buf[n] = 0;
		return cJSON_Parse(buf);
	}
}

/* An answer's "error", put in `err`; 0 when there is none. */
static int answer_error(const cJSON *a, struct strbuf *err)
{
	const char *e = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(a, "error"));

	if (!a) {
		strbuf_addstr(err, "the zygote's answer is unreadable");
		return -1;
	}
	if (e) {
		strbuf_addf(err, "the zygote: %.300s", e);
		return -1;
	}
	return 0;
}

int zygote_fork(struct zygote *z, const struct kernel_spec *spec, pid_t *kernel,
		struct strbuf *err)
{
	cJSON *req = NULL, *a = NULL;
	const cJSON *pid;
	char *text = NULL, *cwd = NULL;
	int rc = -1, fatal = 1;

	if (!zygote_usable(z)) {
		strbuf_addstr(err, "the zygote is gone");
		goto out;
	}
	if (spec->cwd && access(spec->cwd, X_OK) < 0) {
		strbuf_addf(err, "cannot enter '%s': %s", spec->cwd, strerror(errno));
		fatal = 0;	/* the cold start says so; the zygote stays */
		goto out;
	}
	if (!z->ready) {
		a = receive(z, ZYGOTE_START_TIMEOUT, err);
		if (!a || answer_error(a, err) < 0)
			goto out;
		cJSON_Delete(a);
		a = NULL;
		z->ready = 1;
	}
	cwd = spec->cwd ? xstrdup(spec->cwd) : getcwd(NULL, 0);
	req = cJSON_CreateObject();
	cJSON_AddNumberToObject(req, "parent", getpid());
	cJSON_AddStringToObject(req, "channel", spec->channel_dir);
	cJSON_AddStringToObject(req, "runner", spec->runner);
	cJSON_AddStringToObject(req, "cwd", cwd ? cwd : "/");
	cJSON_AddNumberToObject(req, "memory", (double)spec->memory);
	text = cJSON_PrintUnformatted(req);
	if (send(z->fd, text, strlen(text), MSG_NOSIGNAL) < 0) {
		strbuf_addf(err, "cannot ask the zygote: %s", strerror(errno));
		goto out;
	}
	a = receive(z, ZYGOTE_FORK_TIMEOUT, err);
	if (!a || answer_error(a, err) < 0)
		goto out;
	pid = cJSON_GetObjectItemCaseSensitive(a, "pid");
	if (!cJSON_IsNumber(pid) || pid->valueint <= 0) {
		strbuf_addstr(err, "the zygote's answer has no pid");
		goto out;
	}
	*kernel = (pid_t)pid->valueint;
	rc = 0;
out:
	if (rc < 0 && z && fatal) {
		z->broken = 1;
		strbuf_reset(&z->error);
		strbuf_add(&z->error, err->buf, err->len);
	}
	cJSON_Delete(req);
	cJSON_Delete(a);
	cJSON_free(text);
	free(cwd);
	return rc;
}

void zygote_free(struct zygote *z)
{
	if (!z)
		return;
	if (installed == z)
		installed = NULL;
	if (!z->gone) {
		kill(z->pid, SIGKILL);
		while (waitpid(z->pid, NULL, 0) < 0 && errno == EINTR)
			;
	}
	close(z->fd);
	free(z->python);
	free(z->preimport);
	strbuf_release(&z->error);
	free(z);
}

void zygote_install(struct zygote *z)
{
	installed = z;
}

struct zygote *zygote_for(const struct kernel_spec *spec)
{
	const char *kernel = spec->kernel ? spec->kernel->name : "python";

	if (!installed || strcmp(kernel, "python") || !spec->python ||
	    strcmp(spec->python, installed->python) || !zygote_usable(installed))
		return NULL;
	return installed;
}

void zygote_close_inherited(void)
{
	if (installed)
		close(installed->fd);
}
