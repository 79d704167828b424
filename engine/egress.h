#ifndef CELLBOX_EGRESS_H
#define CELLBOX_EGRESS_H

/*
 * The egress proxy of a sandbox with an allow-list (egress_list.h, docs/egress.md): a process of
 * its own on the host, listening on a Unix socket in the channel's host part, which the
 * container sees read-only (connect() needs no write permission on the mount). The runner's
 * forwarder (kernels/python/runner/egress.py) relays 127.0.0.1:PORT in the sandbox to it.
 *
 * It serves "CONNECT host:port" (a tunnel, for https) and "METHOD http://host/..." (plain
 * http, sent on as origin-form), one request a connection: the connection then carries bytes
 * to that server and no other. A name is resolved here, by the host, and only when listed;
 * an address literal must be in a listed address or CIDR. A refusal is an HTTP answer whose
 * status line names it, which Python raises as it is:
 *
 *	HTTP/1.1 403 cellbox egress: 10.9.9.9:80 is not on the sandbox's allow-list
 *
 * The sandbox's code is hostile, and the proxy is bounded: 64 connections (more are answered
 * 503 and closed), a request head of 8 KiB (431), 10 s to send it and 10 s to connect, 16 KiB
 * buffered each way (a side that does not read stops the other), 5 minutes idle. It never
 * runs in the session's process: a stalled resolver or a flood stalls only this sandbox's
 * egress. It ends when the session closes the pipe it holds (egress_proxy_stop(), or the
 * session's exit).
 */

#include <sys/types.h>
#include "egress_list.h"
#include "strbuf.h"

/* The proxy's socket in the channel's host part. */
#define EGRESS_SOCKET "egress.sock"

struct egress_proxy {
	pid_t pid;		/* 0: none (a zeroed struct is a stopped proxy) */
	int keep_fd;		/* the pipe whose close ends it, while pid */
};

/*
 * Listen on `path` (made anew, mode 0666: the container's user connects) and start the proxy
 * for the allow-list `network` in a child process; `hosts_path` (NULL: none) is a hosts file
 * it resolves listed names by before the host's resolver (1 MB at most, read now). -1 with
 * `err` (a bad list, an unreadable hosts file, a path too long for a socket, no socket).
 */
int egress_proxy_start(struct egress_proxy *p, const char *network, const char *hosts_path,
		       const char *path, struct strbuf *err);

/* End the proxy and reap it; nothing when there is none. */
void egress_proxy_stop(struct egress_proxy *p);

/*
 * The proxy's loop on the listening socket `listen_fd` (non-blocking) for `l`, until
 * `quit_fd` is readable or hung up. For egress_proxy_start()'s child and for tests.
 */
void egress_proxy_serve(int listen_fd, int quit_fd, const struct egress_list *l);

#endif
