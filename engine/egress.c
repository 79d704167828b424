/*
 * The egress proxy: a child process that serves a sandbox's allow-list on a Unix socket
 * (egress.h). One poll loop; each connection reads a request head, is checked, resolved
 * and connected, then relays bytes both ways through two bounded buffers.
 */
#include "egress.h"
#include "process.h"
#include "alloc.h"
#include "clock.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#define MAX_CONNS 64
#define HEAD_MAX 8192
#define BUF_SIZE 16384
#define HEAD_SECONDS 10.0
#define CONNECT_SECONDS 10.0
#define IDLE_SECONDS 300.0
#define CLOSING_SECONDS 2.0
#define HOSTS_MAX (1 << 20)

enum state { HEAD, CONNECTING, RELAY, CLOSING };

struct conn {
	int cfd, sfd;			/* the sandbox's end, the server's (-1 when none) */
	enum state state;
	char up[BUF_SIZE];		/* sandbox -> server */
	size_t up_len;
	char down[BUF_SIZE];		/* server -> sandbox */
	size_t down_len;
	int tunnel;			/* CONNECT: owes the sandbox its 200 once connected */
	int c_eof, s_eof;		/* that side has nothing more to send */
	int s_shut, c_shut;		/* we shut the write side of sfd, cfd */
	double deadline;
	char target[EGRESS_MAX_NAME + 16];	/* host:port, for messages */
};

/* Close a connection's descriptors and free it. */
static void conn_free(struct conn *c)
{
	if (c->cfd >= 0)
		close(c->cfd);
	if (c->sfd >= 0)
		close(c->sfd);
	free(c);
}

/*
 * Answer the sandbox with `code` and a status line that says `fmt` (no more reading from the
 * server), then close once it is sent.
 */
__attribute__((format(printf, 3, 4)))
static void refuse(struct conn *c, int code, const char *fmt, ...)
{
	char why[300];
	va_list ap;
	int n;

	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	for (char *p = why; *p; p++)	/* a status line is one line of printable text */
		if ((unsigned char)*p < 0x20 || (unsigned char)*p >= 0x7f)
			*p = '?';
	n = snprintf(c->down, sizeof(c->down), "HTTP/1.1 %d cellbox egress: %s\r\n"
		     "Content-Type: text/plain\r\nContent-Length: %zu\r\nConnection: close\r\n"
		     "X-Cellbox-Egress: refused\r\n\r\ncellbox egress: %s\n",
		     code, why, strlen(why) + 17, why);
	c->down_len = n > 0 && (size_t)n < sizeof(c->down) ? (size_t)n : 0;
	c->up_len = 0;
	if (c->sfd >= 0) {
		close(c->sfd);
		c->sfd = -1;
	}
	c->state = CLOSING;
	c->deadline = clock_now() + CLOSING_SECONDS + HEAD_SECONDS;
}

/* The operator's hosts file (egress-hosts), read before the fork; NULL when none. */
static const struct strbuf *hosts_file;

/*
 * Where the request's host is: an address literal in a listed range, or a listed name from
 * the hosts file or the host's resolver. A name that is not listed is never resolved.
 */
static int resolve(struct conn *c, const struct egress_request *r, const struct egress_list *l,
		   struct sockaddr_storage *ss, socklen_t *sslen)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *res = NULL;
	char port[8];
	int rc;

	if (egress_literal(r->host, r->port, ss, sslen) == 0) {
		if (egress_allows_addr(l, (struct sockaddr *)ss, r->port))
			return 0;
		refuse(c, 403, "%s is not on the sandbox's allow-list", c->target);
		return -1;
	}
	if (!egress_allows_name(l, r->host, r->port)) {
		refuse(c, 403, "%s is not on the sandbox's allow-list", c->target);
		return -1;
	}
	if (hosts_file && egress_hosts_lookup(hosts_file->buf, hosts_file->len, r->host, r->port,
					      ss, sslen))
		return 0;
	snprintf(port, sizeof(port), "%u", r->port);
	rc = getaddrinfo(r->host, port, &hints, &res);
	if (rc || !res || res->ai_addrlen > sizeof(*ss)) {
		refuse(c, 502, "cannot resolve %s: %s", r->host,
		       rc ? gai_strerror(rc) : "no address");
		if (res)
			freeaddrinfo(res);
		return -1;
	}
	memcpy(ss, res->ai_addr, res->ai_addrlen);
	*sslen = res->ai_addrlen;
	freeaddrinfo(res);
	return 0;
}

/* Rewrite a plain http request's line into origin form, in place in c->up. */
static void to_origin_form(struct conn *c, const struct egress_request *r)
{
	char line[HEAD_MAX + 2];
	size_t n = 0, method = r->target_off;

	memcpy(line, c->up, method);
	n = method;
	if (r->path_len) {
		memcpy(line + n, c->up + r->path_off, r->path_len);
		n += r->path_len;
	} else {
		line[n++] = '/';
	}
	/* " HTTP/1.x\r\n": from the end of the target to the end of the line. */
	memcpy(line + n, c->up + r->target_off + r->target_len,
	       r->line_len - r->target_off - r->target_len);
	n += r->line_len - r->target_off - r->target_len;
	/* n <= r->line_len: the path is part of the target it replaces (or "/" for none). */
	memmove(c->up + n, c->up + r->line_len, c->up_len - r->line_len);
	memcpy(c->up, line, n);
	c->up_len = c->up_len - r->line_len + n;
}

/* The head is complete: check it, resolve, start connecting. */
static void head_done(struct conn *c, size_t head_len, const struct egress_list *l)
{
	struct egress_request r;
	struct sockaddr_storage ss;
	socklen_t sslen = 0;
	const char *why;

	if (egress_request_parse(c->up, head_len, &r, &why) < 0) {
		refuse(c, 400, "%s", why);
		return;
	}
	snprintf(c->target, sizeof(c->target), strchr(r.host, ':') ? "[%s]:%u" : "%s:%u", r.host,
		 r.port);
	if (resolve(c, &r, l, &ss, &sslen) < 0)
		return;
	c->sfd = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (c->sfd < 0) {
		refuse(c, 502, "cannot connect to %s: %s", c->target, strerror(errno));
		return;
	}
	if (connect(c->sfd, (struct sockaddr *)&ss, sslen) < 0 && errno != EINPROGRESS) {
		refuse(c, 502, "cannot connect to %s: %s", c->target, strerror(errno));
		return;
	}
	if (r.connect) {
		memmove(c->up, c->up + head_len, c->up_len - head_len);
		c->up_len -= head_len;
	} else {
		to_origin_form(c, &r);
	}
	c->state = CONNECTING;
	c->deadline = clock_now() + CONNECT_SECONDS;
	c->tunnel = r.connect;
}

/* The server's connect() finished. */
static void connected(struct conn *c)
{
	int err = 0;
	socklen_t len = sizeof(err);
	static const char ok[] = "HTTP/1.1 200 Connection established\r\n\r\n";

	if (getsockopt(c->sfd, SOL_SOCKET, SO_ERROR, &err, &len) < 0)
		err = errno;
	if (err) {
		refuse(c, 502, "cannot connect to %s: %s", c->target, strerror(err));
		return;
	}
	if (c->tunnel) {		/* its answer goes first */
		memcpy(c->down, ok, sizeof(ok) - 1);
		c->down_len = sizeof(ok) - 1;
	}
	c->state = RELAY;
	c->deadline = clock_now() + IDLE_SECONDS;
}

/*
 * Find the end of a request head in c->up, looking from `from` on (what came before was
 * looked at already, but for the last 3 bytes): its length, 0 when not there yet.
 */
static size_t head_end(const struct conn *c, size_t from)
{
	for (size_t i = from > 3 ? from - 3 : 0; i + 1 < c->up_len; i++) {
		if (c->up[i] == '\n' && c->up[i + 1] == '\n')
			return i + 2;
		if (c->up[i] == '\n' && i + 2 < c->up_len && c->up[i + 1] == '\r' &&
		    c->up[i + 2] == '\n')
			return i + 3;
	}
	return 0;
}

/* Read into a buffer; 1 when bytes came, 0 on EOF, -1 on error, 2 when nothing now. */
static int fill(int fd, char *buf, size_t *len, size_t cap)
{
	ssize_t n = recv(fd, buf + *len, cap - *len, 0);

	if (n > 0) {
		*len += (size_t)n;
		return 1;
	}
	if (n == 0)
		return 0;
	return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR ? 2 : -1;
}

/* Write from a buffer; -1 on error. */
static int flush(int fd, char *buf, size_t *len)
{
	ssize_t n = send(fd, buf, *len, MSG_NOSIGNAL);

	if (n < 0)
		return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR ? 0 : -1;
	memmove(buf, buf + n, *len - (size_t)n);
	*len -= (size_t)n;
	return 0;
}

/* Act on what poll() said of a connection; 1 when it is over. */
static int conn_step(struct conn *c, short crev, short srev, const struct egress_list *l)
{
	int rc;

	switch (c->state) {
	case HEAD:
		if (crev & (POLLIN | POLLHUP | POLLERR)) {
			size_t end, before = c->up_len;

			rc = fill(c->cfd, c->up, &c->up_len, HEAD_MAX);
			if (rc == 0 || rc == -1)
				return 1;
			end = head_end(c, before);
			if (end)
				head_done(c, end, l);
			else if (c->up_len == HEAD_MAX)
				refuse(c, 431, "the request head is over %d bytes", HEAD_MAX);
		}
		return 0;
	case CONNECTING:
		if (srev & (POLLOUT | POLLERR | POLLHUP))
			connected(c);
		return 0;
	case CLOSING:
		if ((crev & POLLOUT) && c->down_len && flush(c->cfd, c->down, &c->down_len) < 0)
			return 1;
		if (!c->down_len && !c->c_shut) {
			shutdown(c->cfd, SHUT_WR);
			c->c_shut = 1;
		}
		if (crev & (POLLIN | POLLHUP | POLLERR)) {
			/* Read what it still sends and drop it: closing with it unread resets. */
			char sink[4096];
			ssize_t n = recv(c->cfd, sink, sizeof(sink), 0);

			if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR))
				return 1;
		}
		return 0;
	case RELAY:
		break;
	}
	if (crev & (POLLIN | POLLHUP | POLLERR) && !c->c_eof && c->up_len < BUF_SIZE) {
		rc = fill(c->cfd, c->up, &c->up_len, BUF_SIZE);
		if (rc == -1)
			return 1;
		c->c_eof = rc == 0;
	}
	if (srev & (POLLIN | POLLHUP | POLLERR) && !c->s_eof && c->down_len < BUF_SIZE) {
		rc = fill(c->sfd, c->down, &c->down_len, BUF_SIZE);
		if (rc == -1)
			return 1;
		c->s_eof = rc == 0;
	}
	if (c->up_len && (srev & POLLOUT) && flush(c->sfd, c->up, &c->up_len) < 0)
		return 1;
	if (c->down_len && (crev & POLLOUT) && flush(c->cfd, c->down, &c->down_len) < 0)
		return 1;
	if (c->c_eof && !c->up_len && !c->s_shut) {
		shutdown(c->sfd, SHUT_WR);
		c->s_shut = 1;
	}
	if (c->s_eof && !c->down_len && !c->c_shut) {
		shutdown(c->cfd, SHUT_WR);
		c->c_shut = 1;
	}
	c->deadline = clock_now() + IDLE_SECONDS;
	return c->c_shut && c->s_shut;
}

/* The events to wait for on each side of a connection. */
static void conn_events(const struct conn *c, short *cev, short *sev)
{
	*cev = *sev = 0;
	switch (c->state) {
	case HEAD:
		*cev = POLLIN;
		break;
	case CONNECTING:
		*sev = POLLOUT;
		break;
	case CLOSING:
		*cev = POLLIN | (c->down_len ? POLLOUT : 0);
		break;
	case RELAY:
		if (!c->c_eof && c->up_len < BUF_SIZE)
			*cev |= POLLIN;
		if (c->down_len)
			*cev |= POLLOUT;
		if (!c->s_eof && c->down_len < BUF_SIZE)
			*sev |= POLLIN;
		if (c->up_len)
			*sev |= POLLOUT;
		break;
	}
}

/* Accept a connection; over the cap it is answered 503 and closed. -1 when none waits. */
static int accept_one(int listen_fd, struct conn **conns, size_t *n)
{
	static const char busy[] = "HTTP/1.1 503 cellbox egress: too many connections\r\n"
				   "Content-Length: 0\r\nConnection: close\r\n\r\n";
	int fd = accept4(listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
	struct conn *c;

	if (fd < 0)
		return -1;
	if (*n == MAX_CONNS) {
		if (send(fd, busy, sizeof(busy) - 1, MSG_NOSIGNAL | MSG_DONTWAIT) < 0)
			(void)0;
		close(fd);
		return 0;
	}
	c = xcalloc(1, sizeof(*c));
	c->cfd = fd;
	c->sfd = -1;
	c->state = HEAD;
	c->deadline = clock_now() + HEAD_SECONDS;
	conns[(*n)++] = c;
	return 0;
}

/* The proxy's loop. */
void egress_proxy_serve(int listen_fd, int quit_fd, const struct egress_list *l)
{
	struct conn *conns[MAX_CONNS];
	struct pollfd pfd[2 + 2 * MAX_CONNS];
	size_t n = 0;

	for (;;) {
		double now = clock_now(), next = now + 60;
		int timeout;

		pfd[0] = (struct pollfd){ .fd = quit_fd, .events = POLLIN };
		pfd[1] = (struct pollfd){ .fd = listen_fd, .events = POLLIN };
		for (size_t i = 0; i < n; i++) {
			short cev, sev;

			conn_events(conns[i], &cev, &sev);
			/* A side waited on for nothing is left out: its hang-up would spin. */
			pfd[2 + 2 * i] = (struct pollfd){ .fd = cev ? conns[i]->cfd : -1,
							  .events = cev };
			pfd[3 + 2 * i] = (struct pollfd){ .fd = sev ? conns[i]->sfd : -1,
							  .events = sev };
			if (conns[i]->deadline < next)
				next = conns[i]->deadline;
		}
		timeout = next <= now ? 0 : (int)((next - now) * 1000) + 1;
		if (poll(pfd, 2 + 2 * n, timeout) < 0 && errno != EINTR)
			break;
		if (pfd[0].revents)
			break;
		now = clock_now();
		for (size_t i = 0; i < n;) {
			struct conn *c = conns[i];
			short crev = pfd[2 + 2 * i].revents, srev = pfd[3 + 2 * i].revents;
			int over = 0;

			if (crev || srev)
				over = conn_step(c, crev, srev, l);
			else if (now >= c->deadline && c->state == HEAD)
				refuse(c, 408, "no request head within %.0f s", HEAD_SECONDS);
			else if (now >= c->deadline && c->state == CONNECTING)
				refuse(c, 504, "connecting to %s timed out", c->target);
			else if (now >= c->deadline)
				over = 1;
			if (!over) {
				i++;
				continue;
			}
			/* The last connection takes its place, with what poll() said of it. */
			conn_free(c);
			n--;
			conns[i] = conns[n];
			pfd[2 + 2 * i].revents = pfd[2 + 2 * n].revents;
			pfd[3 + 2 * i].revents = pfd[3 + 2 * n].revents;
		}
		/* A burst of connections, bounded. */
		for (int i = 0; i < 16 && (pfd[1].revents & POLLIN); i++)
			if (accept_one(listen_fd, conns, &n) < 0)
				break;
	}
	for (size_t i = 0; i < n; i++)
		conn_free(conns[i]);
}

/*
 * In the child: every descriptor closed but 0-2 and the two it needs (process.h); 0 and 1
 * to /dev/null (a host path), unless one of them is one of the two (the session had them shut).
 */
static void keep_only(int a, int b)
{
	process_stdio_to_null(0, 1, a, b);
	process_close_fds(a, b);
}

/* Listen on `path` and start the proxy in a child. */
int egress_proxy_start(struct egress_proxy *p, const char *network, const char *hosts_path,
		       const char *path, struct strbuf *err)
{
	struct egress_list *l = xcalloc(1, sizeof(*l));
	struct strbuf hosts = STRBUF_INIT;
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	int fd = -1, pipefd[2] = { -1, -1 }, rc = -1;
	pid_t pid;

	p->pid = 0;
	p->keep_fd = -1;
	if (egress_list_parse(network, l, err) < 0)
		goto out;
	if (hosts_path && *hosts_path) {
		strbuf_set_max(&hosts, HOSTS_MAX);
		if (strbuf_read_file(&hosts, hosts_path, HOSTS_MAX) < 0) {
			strbuf_addf(err, "egress: cannot read the hosts file '%s': %s", hosts_path,
				    errno == EFBIG ? "over 1 MB" : strerror(errno));
			goto out;
		}
	}
	if (strlen(path) >= sizeof(sun.sun_path)) {
		strbuf_addf(err, "egress: the socket path '%s' is too long for a socket (%zu bytes "
			    "at most): use a shorter runtime directory", path,
			    sizeof(sun.sun_path) - 1);
		goto out;
	}
	strcpy(sun.sun_path, path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	unlink(path);
	if (fd < 0 || bind(fd, (struct sockaddr *)&sun, sizeof(sun)) < 0 ||
	    chmod(path, 0666) < 0 || listen(fd, 64) < 0 || pipe2(pipefd, O_CLOEXEC) < 0) {
		strbuf_addf(err, "egress: cannot listen on '%s': %s", path, strerror(errno));
		goto out;
	}
	pid = fork();
	if (pid < 0) {
		strbuf_addf(err, "egress: cannot start the proxy: %s", strerror(errno));
		goto out;
	}
	if (pid == 0) {
		/* The session's handlers are not the proxy's: ^C is not its end, SIGTERM is. */
		signal(SIGPIPE, SIG_IGN);
		signal(SIGINT, SIG_IGN);
		signal(SIGTERM, SIG_DFL);
		signal(SIGHUP, SIG_DFL);
		keep_only(fd, pipefd[0]);
		hosts_file = &hosts;
		egress_proxy_serve(fd, pipefd[0], l);
		_exit(0);
	}
	p->pid = pid;
	p->keep_fd = pipefd[1];
	pipefd[1] = -1;
	rc = 0;
out:
	if (fd >= 0)
		close(fd);
	if (pipefd[0] >= 0)
		close(pipefd[0]);
	if (pipefd[1] >= 0)
		close(pipefd[1]);
	free(l);
	strbuf_release(&hosts);
	return rc;
}

/* End the proxy and reap it (a zeroed struct has none). */
void egress_proxy_stop(struct egress_proxy *p)
{
	if (p->pid <= 0)
		return;
	close(p->keep_fd);	/* its end; SIGKILL for a proxy stuck in a resolver */
	kill(p->pid, SIGKILL);
	while (waitpid(p->pid, NULL, 0) < 0 && errno == EINTR)
		;
	p->pid = 0;
	p->keep_fd = -1;
}
