#ifndef CELLBOX_DOCKER_INT_H
#define CELLBOX_DOCKER_INT_H

/*
 * Between the docker client's files: docker.c (the API calls), docker_raw.c (its raw
 * connections: docker_dial(), the wait, attach and upgrades), docker_host.c
 * (which engine), docker_tls.c (TLS for curl, and the pump that makes a TLS connection a
 * plain descriptor), docker_ssh.c (ssh ... docker system dial-stdio children).
 */

#include <curl/curl.h>
#include "docker_host.h"

/* How long a connection (TCP, TLS handshake, ssh) may take before it is an error. */
#define DOCKER_CONNECT_SECONDS 30L

/* curl's socket, opened close-on-exec (a kernel spawned later must not inherit it). */
curl_socket_t docker_tls_cloexec_socket(void *data, curlsocktype purpose,
					struct curl_sockaddr *addr);

/* The TLS options of `ep` on handle `c` (CA, client certificate, verification). */
void docker_tls_options(CURL *c, const struct docker_endpoint *ep);

/* The pump threads of one client (docker_tls.c). */
struct docker_tls_group;

struct docker_tls_group *docker_tls_group_new(void);
/*
 * Let go of the group: wait up to `seconds` for its pumps to end (their descriptors closed);
 * one whose descriptor is still open keeps running and frees the group when it ends.
 */
void docker_tls_group_free(struct docker_tls_group *g, double seconds);

/*
 * A fresh TLS connection to `ep` as a plain descriptor: one end of a socketpair whose other
 * end a thread of its own (counted in `g`) pumps through a CONNECT_ONLY curl handle; closing
 * the descriptor ends the thread and the connection. -1 with `err` set (what failed, said for
 * people).
 */
int docker_tls_dial(struct docker_tls_group *g, const struct docker_endpoint *ep,
		    struct strbuf *err);

/*
 * Say why curl's `rc` (with its error buffer `detail`) failed against `ep`, for people: no
 * engine there, which TLS check failed and what to do. Appended to `err`.
 */
void docker_tls_explain(const struct docker_endpoint *ep, CURLcode rc, const char *detail,
			struct strbuf *err);

/* ssh children: one per connection, reaped as they end, killed at docker_ssh_free(). */
struct docker_ssh;

struct docker_ssh *docker_ssh_new(void);
/*
 * A fresh connection to `ep` through `ssh ... docker system dial-stdio`: one end of a
 * socketpair, the other ssh's stdin and stdout. -1 with `err` set.
 */
int docker_ssh_dial(struct docker_ssh *s, const struct docker_endpoint *ep, struct strbuf *err);
/*
 * curl's connections to `ep` (its OPENSOCKETFUNCTION and PREREQFUNCTION call these): a socket
 * for curl with its address rewritten to a private local end, then ssh started on that end
 * once curl has connected (docker_ssh.c says why). CURL_SOCKET_BAD / -1 with `err` set.
 */
curl_socket_t docker_ssh_curl_open(struct docker_ssh *s, struct curl_sockaddr *addr,
				   struct strbuf *err);
int docker_ssh_curl_connected(struct docker_ssh *s, const struct docker_endpoint *ep,
			      struct strbuf *err);
/*
 * Why the connection `fd` (from docker_ssh_dial, maybe closed since) failed: ssh's first line
 * of stderr, waiting up to `seconds` for it to end. Appended to `err`; 0 when there was one.
 */
int docker_ssh_why(struct docker_ssh *s, int fd, double seconds, struct strbuf *err);
/* Reap the children that have ended (never blocks). */
void docker_ssh_reap(struct docker_ssh *s);
/* Kill every child still running, reap them all, free `s` (NULL: nothing). */
void docker_ssh_free(struct docker_ssh *s);

#endif
