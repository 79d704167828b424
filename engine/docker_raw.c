/*
 * The docker client's raw connections (docker.h): a descriptor of its own to the engine
 * (its socket, a TLS pump's end, an ssh child's), a request sent on it without waiting (a
 * container's wait), the head of an answer read byte by byte, the status-only request, and
 * the upgrades to a raw stream (attach, an exec's start). No HTTP client is loaded for any.
 */
#include "docker.h"
#include "docker_int.h"
#include "numconv.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

/* Connect `fd` to `sa` within DOCKER_CONNECT_SECONDS (a host that drops packets). */
static int connect_within(int fd, const struct sockaddr *sa, socklen_t len)
{
	int flags = fcntl(fd, F_GETFL), rc, soerr = 0;
	socklen_t sl = sizeof(soerr);
	struct pollfd pfd = { .fd = fd, .events = POLLOUT };

	fcntl(fd, F_SETFL, flags | O_NONBLOCK);
	rc = connect(fd, sa, len);
	if (rc < 0 && errno == EINPROGRESS) {
		rc = poll(&pfd, 1, (int)DOCKER_CONNECT_SECONDS * 1000);
		if (rc == 0)
			errno = ETIMEDOUT;
		if (rc > 0 && getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) == 0 && soerr)
			errno = soerr;
		rc = rc > 0 && !soerr ? 0 : -1;
	}
	fcntl(fd, F_SETFL, flags);
	return rc;
}

/* unix:// and plain tcp://: the engine's own socket. */
static int dial_socket(const struct docker_endpoint *ep)
{
	int fd, saved;

	if (ep->kind == DOCKER_UNIX) {
		struct sockaddr_un sa = { .sun_family = AF_UNIX };

		if (strlen(ep->path) >= sizeof(sa.sun_path)) {
			errno = ENAMETOOLONG;
			return -1;
		}
		strcpy(sa.sun_path, ep->path);
		fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fd < 0)
			return -1;
		if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
			saved = errno;
			close(fd);
			errno = saved;
			return -1;
		}
		return fd;
	} else {
		struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *res, *ai;

		if (getaddrinfo(ep->name, ep->port, &hints, &res) != 0) {
			errno = EHOSTUNREACH;
			return -1;
		}
		fd = -1;
		saved = ECONNREFUSED;
		for (ai = res; ai && fd < 0; ai = ai->ai_next) {
			fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
			if (fd >= 0 && connect_within(fd, ai->ai_addr, ai->ai_addrlen) < 0) {
				saved = errno;
				close(fd);
				fd = -1;
			}
		}
		freeaddrinfo(res);
		if (fd < 0)
			errno = saved;
		return fd;
	}
}

int docker_dial_err(const struct docker *d, struct strbuf *err)
{
	struct strbuf why = STRBUF_INIT;
	int fd, saved;

	if (d->ep->kind == DOCKER_SSH) {
		docker_ssh_reap(d->ssh);
		fd = docker_ssh_dial(d->ssh, d->ep, &why);
	} else if (d->ep->tls) {
		fd = docker_tls_dial(d->pumps, d->ep, &why);
	} else {
		fd = dial_socket(d->ep);
		if (fd < 0)
			strbuf_addf(&why, "cannot connect to %s: %s", d->host, strerror(errno));
	}
	saved = errno;
	if (fd < 0 && err)
		strbuf_add(err, why.buf, why.len);
	strbuf_release(&why);
	errno = saved;
	return fd;
}

int docker_dial(const struct docker *d)
{
	return docker_dial_err(d, NULL);
}

int docker_send_raw(struct docker *d, const char *method, const char *path, struct strbuf *err)
{
	char *req;
	int fd = docker_dial_err(d, err), rc;

	if (fd < 0)
		return -1;
	req = xasprintf("%s /v%s%s HTTP/1.1\r\nHost: docker\r\nContent-Length: 0\r\n"
			"Connection: close\r\n\r\n", method, d->api, path);
	rc = fsutil_write_all(fd, req, strlen(req));
	free(req);
	if (rc < 0) {
		strbuf_addf(err, "cannot write to %s: %s", d->host, strerror(errno));
		close(fd);
		return -1;
	}
	return fd;
}

/*
 * The head of the answer on raw connection `fd`, byte by byte (what follows it is the
 * body, or the raw stream of an upgrade), at most 4096 bytes, within 10 s; -1 with `err`
 * saying that `what` had no answer.
 */
static int read_head(struct docker *d, int fd, const char *what, struct strbuf *head,
		     struct strbuf *err)
{
	double deadline = clock_now() + 10;

	while (!strstr(head->buf, "\r\n\r\n")) {
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		double left = deadline - clock_now();
		char c;

		if (left <= 0 || head->len > 4096 || poll(&pfd, 1, wait_ms(left)) <= 0 ||
		    read(fd, &c, 1) != 1) {
			strbuf_addf(err, "no answer from %s to %s", d->host, what);
			if (d->ep->kind == DOCKER_SSH) {
				strbuf_addstr(err, ": ssh: ");
				if (docker_ssh_why(d->ssh, fd, 2, err) < 0)
					strbuf_addstr(err, "(nothing on its stderr)");
			}
			return -1;
		}
		strbuf_addch(head, c);
	}
	return 0;
}

long docker_status_raw(struct docker *d, const char *method, const char *path,
		       struct strbuf *err)
{
	struct strbuf head = STRBUF_INIT;
	int fd = docker_send_raw(d, method, path, err);
	long status = -1;
	char *end = NULL;

	if (fd < 0)
		return -1;
	if (read_head(d, fd, path, &head, err) == 0) {
		status = strncmp(head.buf, "HTTP/1.", 7) || head.len < 12 ? -1 :
			strtol(head.buf + 9, &end, 10);
		if (status < 100 || status > 599 || !end || *end != ' ') {
			strbuf_addf(err, "%s answered %s with no HTTP status", d->host, path);
			status = -1;
		}
	}
	close(fd);
	strbuf_release(&head);
	return status;
}

int docker_upgrade(struct docker *d, const char *path, const char *body, const char *what,
		   struct strbuf *err)
{
	struct strbuf head = STRBUF_INIT;
	char *req;
	int fd = docker_dial_err(d, err), rc = -1;

	if (fd < 0)
		return -1;
	req = xasprintf("POST /v%s%s HTTP/1.1\r\nHost: docker\r\n%sContent-Length: %zu\r\n"
			"Upgrade: tcp\r\nConnection: Upgrade\r\n\r\n%s", d->api, path,
			body ? "Content-Type: application/json\r\n" : "", body ? strlen(body) : 0,
			body ? body : "");
	if (fsutil_write_all(fd, req, strlen(req)) < 0) {
		strbuf_addf(err, "cannot write to %s: %s", d->host, strerror(errno));
		goto out;
	}
	/* The answer's head: what follows it is the raw stream. */
	if (read_head(d, fd, what, &head, err) < 0)
		goto out;
	if (strncmp(head.buf, "HTTP/1.1 101", 12) && strncmp(head.buf, "HTTP/1.1 200", 12) &&
	    strncmp(head.buf, "HTTP/1.0 200", 12)) {
		strbuf_addf(err, "cannot %s: %.*s", what, (int)strcspn(head.buf, "\r"), head.buf);
		goto out;
	}
	rc = 0;
out:
	free(req);
	strbuf_release(&head);
	if (rc < 0) {
		close(fd);
		return -1;
	}
	return fd;
}

int docker_attach(struct docker *d, const char *id, int output, struct strbuf *err)
{
	char *path = xasprintf("/containers/%s/attach?stream=1&stdin=1%s", id,
			       output ? "&stdout=1&stderr=1" : "");
	int fd = docker_upgrade(d, path, NULL, "attach to the container's stdin", err);

	free(path);
	return fd;
}
