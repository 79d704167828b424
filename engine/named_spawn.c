/*
 * Starting a named session's host (named_start): forked twice so that it is nobody's child
 * and in a session of its own (no terminal: a hang-up of the front end's never reaches it),
 * its output into the session directory's host.log and nothing else of the front end's open,
 * its session opened by the caller's function, then its socket made; the front end waits on
 * a pipe until the host says "open" or why not. See named.h.
 */
#include "named_int.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fsutil.h"
#include "msg.h"
#include "process.h"
#include "util.h"

/* How long a host's start waits for the threads of its parent to end (process.h). */
#define NAMED_FORK_WAIT_MS 2000

/* The listening socket at DIR/sock, ours alone; -1 with `err`. */
static int listen_at(const char *dir, struct strbuf *err)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	char *path = xasprintf("%s/sock", dir);
	int fd = -1;
	mode_t old;

	if (strlen(path) >= sizeof(a.sun_path)) {
		strbuf_addf(err, "'%s': the path is too long for a socket", path);
		free(path);
		return -1;
	}
	memcpy(a.sun_path, path, strlen(path) + 1);
	unlink(path);		/* a dead host's */
	old = umask(077);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof(a)) < 0 || listen(fd, 16) < 0) {
		strbuf_addf(err, "cannot listen at '%s': %s", path, strerror(errno));
		if (fd >= 0)
			close(fd);
		fd = -1;
	}
	umask(old);
	free(path);
	return fd;
}

/* The host's signals: the front end's handlers and mask are not its own. */
static void host_signals(void)
{
	static const int reset[] = { SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGWINCH, SIGCHLD,
				     SIGTSTP, SIGTTIN, SIGTTOU, SIGALRM, SIGUSR1, SIGUSR2, SIGCONT };
	struct sigaction dfl = { .sa_handler = SIG_DFL }, ign = { .sa_handler = SIG_IGN };
	sigset_t none;

	for (size_t i = 0; i < ARRAY_SIZE(reset); i++)
		sigaction(reset[i], &dfl, NULL);
	sigaction(SIGHUP, &ign, NULL);
	sigaction(SIGINT, &ign, NULL);
	sigaction(SIGPIPE, &ign, NULL);
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
}

/* Standard input from /dev/null, output and errors into DIR/host.log. */
static void host_stdio(const char *dir)
{
	char *log = xasprintf("%s/host.log", dir);
	int in = open("/dev/null", O_RDONLY | O_CLOEXEC);
	int out = open(log, O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_CLOEXEC, 0600);

	if (in >= 0)
		dup2(in, 0);
	if (out >= 0) {
		dup2(out, 1);
		dup2(out, 2);
	}
	if (in > 2)
		close(in);
	if (out > 2)
		close(out);
	free(log);
}

/* DIR/host.pid: `cellbox gc` leaves a session whose host is starting (no socket yet) alone. */
static void write_pid(const char *dir)
{
	char *path = xasprintf("%s/host.pid", dir), buf[32];
	int n = snprintf(buf, sizeof(buf), "%ld\n", (long)getpid());
	struct strbuf err = STRBUF_INIT;

	fsutil_write_atomic(path, buf, (size_t)n, 0600, &err);
	free(path);
	strbuf_release(&err);
}

/* The host itself, in the grandchild: open, say so on `ready`, serve, leave. */
static void host_main(const char *name, const char *dir, const struct named_idle *idle,
		      named_open_fn open_fn, void *data, const struct named_recorder *rec, int ready)
{
	struct strbuf err = STRBUF_INIT;
	struct host *h = named_host_new(name, dir, idle, rec);
	struct session *s;
	int lfd;

	host_signals();
	/*
	 * Nothing of the front end's but `ready`: its terminal kept in a spare descriptor (the
	 * UI), its client's pipes and other sessions' channels (the MCP server, which goes on:
	 * they must close when it ends).
	 */
	process_close_fds(ready, -1);
	host_stdio(dir);
	write_pid(dir);
	s = open_fn(data, named_host_state, h, &err);
	lfd = s ? listen_at(dir, &err) : -1;
	if (lfd < 0) {
		if (write(ready, "E", 1) == 1)
			fsutil_write_all(ready, err.buf, err.len);
		session_close(s);
		fsutil_remove_tree(dir);
		_exit(1);
	}
	if (rec && rec->open)
		rec->open(rec->data, s);
	if (write(ready, "O", 1) != 1)
		msg_error("cellbox: the front end that started session '%s' is gone", name);
	close(ready);
	named_host_serve(h, s, lfd);
	_exit(0);
}

int named_start(const char *runtime, const char *name, const struct named_idle *idle,
		named_open_fn open_fn, void *data, const struct named_recorder *rec,
		struct strbuf *err)
{
	struct strbuf got = STRBUF_INIT, why = STRBUF_INIT;
	char *dir = named_dir(runtime, name, 1, err);
	int p[2], fd, rc = -1, status;
	pid_t pid;

	if (!dir)
		return -1;
	if ((fd = named_connect(dir, &why)) >= 0) {
		close(fd);
		strbuf_addf(err, "a session named '%s' is running (cellbox attach %s)", name, name);
		goto out;
	}
	if (pipe2(p, O_CLOEXEC) < 0) {
		strbuf_addf(err, "cannot start the session's host: %s", strerror(errno));
		goto out;
	}
	fflush(NULL);
	/* The host is a program of its own, forked from a front end or a host: see process.h. */
	process_await_one_thread(NAMED_FORK_WAIT_MS);
	pid = fork();
	if (pid == 0) {
		close(p[0]);
		setsid();
		if (fork() == 0)
			host_main(name, dir, idle, open_fn, data, rec, p[1]);
		_exit(0);
	}
	close(p[1]);
	if (pid < 0) {
		strbuf_addf(err, "cannot start the session's host: %s", strerror(errno));
		close(p[0]);
		goto out;
	}
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	strbuf_read_fd(&got, p[0], 1 << 20);
	close(p[0]);
	if (got.len && got.buf[0] == 'O')
		rc = 0;
	else if (got.len > 1)
		strbuf_add(err, got.buf + 1, got.len - 1);
	else
		strbuf_addf(err, "the session's host died as it started (its log: %s/host.log)", dir);
out:
	free(dir);
	strbuf_release(&got);
	strbuf_release(&why);
	return rc;
}
