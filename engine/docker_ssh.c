/*
 * ssh:// engines, as the docker CLI reaches them: each connection is a child
 *
 *	ssh [-F $CELLBOX_SSH_CONFIG] -o BatchMode=yes -o ConnectTimeout=30 -T [-l user] [-p port]
 *	    -- host docker [--host=unix://path] system dial-stdio
 *
 * whose stdin and stdout are one end of a socketpair (the caller holds the other). ssh's own
 * configuration, agent and known_hosts apply; BatchMode and a session of its own (no
 * controlling terminal) mean no password or host-key question can appear in the middle of a
 * UI: ssh fails instead, and its first line of stderr (kept, bounded) says why. Children are
 * reaped as they end and killed when the client is released.
 */
#include "docker_int.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stddef.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "numconv.h"

extern char **environ;

#define MAX_CHILDREN 64
#define STDERR_KEEP 2048

struct ssh_child {
	pid_t pid;		/* 0: reaped */
	int fd;			/* the caller's end when dialled (a number to find it by) */
	int errfd;		/* ssh's stderr, non-blocking; -1 when closed */
	char err[STDERR_KEEP];	/* its first bytes */
	size_t err_len;
};

struct docker_ssh {
	struct ssh_child kids[MAX_CHILDREN];
	int n;
	int listen;		/* curl's connection's local end, until it is reached (-1) */
	int curl_fd;		/* curl's socket of its last connection */
};

struct docker_ssh *docker_ssh_new(void)
{
	struct docker_ssh *s = xcalloc(1, sizeof(struct docker_ssh));

	s->listen = -1;
	s->curl_fd = -1;
	return s;
}

/* Keep what ssh wrote to stderr, up to STDERR_KEEP bytes (the rest is read and dropped). */
static void drain(struct ssh_child *k)
{
	char buf[4096];
	ssize_t n;

	while (k->errfd >= 0) {
		n = read(k->errfd, buf, sizeof(buf));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			return;
		if (n <= 0) {
			close(k->errfd);
			k->errfd = -1;
			return;
		}
		if (k->err_len < STDERR_KEEP) {
			size_t take = (size_t)n < STDERR_KEEP - k->err_len ? (size_t)n :
				      STDERR_KEEP - k->err_len;
			memcpy(k->err + k->err_len, buf, take);
			k->err_len += take;
		}
	}
}

/* Forget child `i` (reaped, its stderr closed), moving the last one into its place. */
static void drop(struct docker_ssh *s, int i)
{
	if (s->kids[i].errfd >= 0)
		close(s->kids[i].errfd);
	s->kids[i] = s->kids[--s->n];
}

void docker_ssh_reap(struct docker_ssh *s)
{
	if (!s)
		return;
	for (int i = 0; i < s->n; i++) {
		struct ssh_child *k = &s->kids[i];
		if (k->pid > 0) {
			pid_t r = waitpid(k->pid, NULL, WNOHANG);
			if (r == k->pid || (r < 0 && errno == ECHILD))	/* ECHILD: reaped by another */
				k->pid = 0;
		}
		drain(k);
		if (!k->pid && k->errfd < 0)
			drop(s, i--);
	}
}

/*
 * Run ssh for `ep` with `sock` as its stdin and stdout (the parent keeps its own descriptor,
 * `key`, to find the child by). 0, or -1 with `err` set.
 */
static int spawn(struct docker_ssh *s, const struct docker_endpoint *ep, int sock, int key,
		 struct strbuf *err)
{
	const char *argv[24], *cfg = getenv("CELLBOX_SSH_CONFIG");
	char remote[DOCKER_PATH_MAX + 64];
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t attr;
	sigset_t none, deflt;
	int errp[2], n = 0, rc;
	pid_t pid;

	docker_ssh_reap(s);
	if (s->n >= MAX_CHILDREN) {
		strbuf_addf(err, "too many ssh connections to %s at once (%d)", ep->host,
			    MAX_CHILDREN);
		errno = EMFILE;
		return -1;
	}
	if (*ep->path)
		snprintf(remote, sizeof(remote), "docker --host=unix://%s system dial-stdio",
			 ep->path);
	else
		snprintf(remote, sizeof(remote), "docker system dial-stdio");
	argv[n++] = "ssh";
	if (cfg && *cfg) {
		argv[n++] = "-F";
		argv[n++] = cfg;
	}
	argv[n++] = "-o";
	argv[n++] = "BatchMode=yes";
	argv[n++] = "-o";
	argv[n++] = "ConnectTimeout=30";
	argv[n++] = "-T";
	if (*ep->user) {
		argv[n++] = "-l";
		argv[n++] = ep->user;
	}
	if (*ep->port) {
		argv[n++] = "-p";
		argv[n++] = ep->port;
	}
	argv[n++] = "--";
	argv[n++] = ep->name;
	argv[n++] = remote;
	argv[n] = NULL;

	if (pipe2(errp, O_CLOEXEC) < 0) {
		strbuf_addf(err, "cannot connect to %s: %s", ep->host, strerror(errno));
		return -1;
	}
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, sock, 0);
	posix_spawn_file_actions_adddup2(&fa, sock, 1);
	posix_spawn_file_actions_adddup2(&fa, errp[1], 2);
	posix_spawnattr_init(&attr);
	sigemptyset(&none);
	sigemptyset(&deflt);
	sigaddset(&deflt, SIGPIPE);
	sigaddset(&deflt, SIGINT);
	sigaddset(&deflt, SIGTERM);
	sigaddset(&deflt, SIGHUP);
	sigaddset(&deflt, SIGQUIT);
	sigaddset(&deflt, SIGCHLD);
	posix_spawnattr_setsigmask(&attr, &none);
	posix_spawnattr_setsigdefault(&attr, &deflt);
	/* A session of its own: no terminal to ask on, no Ctrl-C of the UI's. */
	posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF |
				 POSIX_SPAWN_SETSID);
	rc = posix_spawnp(&pid, "ssh", &fa, &attr, (char *const *)argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	posix_spawnattr_destroy(&attr);
	close(errp[1]);
	if (rc) {
		close(errp[0]);
		strbuf_addf(err, "cannot run ssh for %s: %s (install openssh-client)", ep->host,
			    strerror(rc));
		errno = rc;
		return -1;
	}
	fcntl(errp[0], F_SETFL, fcntl(errp[0], F_GETFL) | O_NONBLOCK);
	s->kids[s->n] = (struct ssh_child){ .pid = pid, .fd = key, .errfd = errp[0] };
	s->n++;
	return 0;
}

int docker_ssh_dial(struct docker_ssh *s, const struct docker_endpoint *ep, struct strbuf *err)
{
	int sv[2], rc;

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0) {
		strbuf_addf(err, "cannot connect to %s: %s", ep->host, strerror(errno));
		return -1;
	}
	rc = spawn(s, ep, sv[1], sv[0], err);
	close(sv[1]);
	if (rc < 0) {
		close(sv[0]);
		return -1;
	}
	return sv[0];
}

/*
 * curl's connections. curl 7.88 (Debian 12's) connect()s a socket that its SOCKOPTFUNCTION
 * said was connected already (curl issue 10626, fixed in 8.0), so curl cannot be handed a
 * socketpair. Instead the socket curl opens is pointed (its address rewritten) at a listening
 * abstract unix socket with a random name that lives only until curl's connect() has landed
 * in it; the connection accepted there, checked to come from this very process (SO_PEERCRED),
 * becomes the ssh child's stdin and stdout. curl's own socket is then an ordinary connected
 * unix socket: kept alive and reused by curl while ssh lives.
 */
curl_socket_t docker_ssh_curl_open(struct docker_ssh *s, struct curl_sockaddr *addr,
				   struct strbuf *err)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	char name[13];
	socklen_t len;
	int fd;

	if (s->listen >= 0)
		close(s->listen);
	random_hex(name, 6);				/* 12 hex digits */
	sa.sun_path[0] = '\0';				/* abstract: no file, no umask */
	memcpy(sa.sun_path + 1, name, strlen(name));
	len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + strlen(name));
	if (len > sizeof(addr->addr)) {
		strbuf_addstr(err, "ssh: the address does not fit");
		return CURL_SOCKET_BAD;
	}
	s->listen = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (s->listen < 0 || fd < 0 || bind(s->listen, (struct sockaddr *)&sa, len) < 0 ||
	    listen(s->listen, 1) < 0) {
		strbuf_addf(err, "ssh: cannot make the local end: %s", strerror(errno));
		if (fd >= 0)
			close(fd);
		if (s->listen >= 0)
			close(s->listen);
		s->listen = -1;
		return CURL_SOCKET_BAD;
	}
	addr->family = AF_UNIX;
	addr->protocol = 0;
	addr->addrlen = len;
	memcpy(&addr->addr, &sa, len);
	s->curl_fd = fd;
	return fd;
}

int docker_ssh_curl_connected(struct docker_ssh *s, const struct docker_endpoint *ep,
			      struct strbuf *err)
{
	struct ucred cred;
	socklen_t cl = sizeof(cred);
	int conn, rc = -1;

	if (s->listen < 0)
		return 0;				/* a connection reused: ssh runs */
	conn = accept4(s->listen, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
	close(s->listen);
	s->listen = -1;
	if (conn < 0) {
		strbuf_addf(err, "ssh: the local end was not reached: %s", strerror(errno));
		return -1;
	}
	if (getsockopt(conn, SOL_SOCKET, SO_PEERCRED, &cred, &cl) < 0 || cred.pid != getpid() ||
	    cred.uid != getuid()) {
		strbuf_addstr(err, "ssh: the local end was reached by another process");
	} else {
		fcntl(conn, F_SETFL, fcntl(conn, F_GETFL) & ~O_NONBLOCK);
		rc = spawn(s, ep, conn, s->curl_fd, err);
	}
	close(conn);
	return rc;
}

int docker_ssh_why(struct docker_ssh *s, int fd, double seconds, struct strbuf *err)
{
	double deadline = clock_now() + seconds;
	struct ssh_child *k = NULL;

	for (int i = 0; s && i < s->n; i++)
		if (s->kids[i].fd == fd)
			k = &s->kids[i];
	if (!k)
		return -1;
	/* Until ssh closes its stderr (it has exited), or the time is up. */
	while (k->errfd >= 0) {
		struct pollfd pfd = { .fd = k->errfd, .events = POLLIN };
		double left = deadline - clock_now();

		if (left <= 0 || poll(&pfd, 1, wait_ms(left)) <= 0)
			break;
		drain(k);
	}
	drain(k);
	for (size_t i = 0; i < k->err_len; i++) {
		size_t len;
		const char *line = k->err + i;

		len = strcspn(line, "\r\n");
		if (len > k->err_len - i)
			len = k->err_len - i;
		/* ssh's "Warning: Permanently added ..." is not why. */
		if (len && strncmp(line, "Warning: Permanently added", 26)) {
			strbuf_add(err, line, len);
			return 0;
		}
		i += len;
	}
	return -1;
}

void docker_ssh_free(struct docker_ssh *s)
{
	double deadline = clock_now() + 2;

	if (!s)
		return;
	if (s->listen >= 0)
		close(s->listen);
	for (int i = 0; i < s->n; i++)
		if (s->kids[i].pid > 0)
			kill(s->kids[i].pid, SIGTERM);
	/* ssh ends at once on SIGTERM; one that does not in two seconds gets SIGKILL. */
	while (s->n) {
		docker_ssh_reap(s);
		if (!s->n)
			break;
		if (clock_now() > deadline) {
			for (int i = 0; i < s->n; i++) {
				if (s->kids[i].pid > 0) {
					kill(s->kids[i].pid, SIGKILL);
					waitpid(s->kids[i].pid, NULL, 0);
					s->kids[i].pid = 0;
				}
				if (s->kids[i].errfd >= 0)
					close(s->kids[i].errfd);
				s->kids[i].errfd = -1;
			}
			break;
		}
		usleep(5000);
	}
	free(s);
}
