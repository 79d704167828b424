#ifndef CELLBOX_DOCKER_H
#define CELLBOX_DOCKER_H

/*
 * A small Docker Engine API client on libcurl and cJSON: the same client talks to dockerd and
 * to Podman's Docker-compatible service.
 *
 *	struct docker d;
 *	if (docker_init(&d, NULL, &err) < 0) ...	// DOCKER_HOST or the default socket
 *	status = docker_call(&d, "POST", "/containers/create", body, &reply, &err);
 *	docker_release(&d);
 *
 * Paths are given without the version prefix; docker_init() asks the daemon for its API
 * version and every call is made under it.
 */

#include <cjson/cJSON.h>
#include "util.h"

struct docker_endpoint;
struct docker_ssh;
struct docker_tls_group;

struct docker {
	void *curl;		/* CURL easy handle, reused so the connection stays open */
	char *host;		/* as given or resolved: "unix:///...", "tcp://h:p", "ssh://..." */
	char *base;		/* "http://localhost/v1.41", "https://h:p/v1.41" */
	char api[16];		/* "1.41" */
	struct docker_endpoint *ep;	/* which engine and how (docker_host.h) */
	struct docker_ssh *ssh;		/* ssh:// only: the children of its connections */
	struct docker_tls_group *pumps;	/* TLS only: the threads of its raw connections */
	int ssh_fd;		/* ssh:// only: the connection curl opened last (-1: none) */
	char curl_error[256];	/* curl's words for its last failure (CURL_ERROR_SIZE) */
};

/*
 * Connect to `host` (NULL: $DOCKER_HOST, else the current docker context, else
 * unix:///var/run/docker.sock; docker_host.h says how, TLS and ssh:// included) and negotiate
 * the API version, within DOCKER_PING_SECONDS. Errors name the host and say what to do: no
 * engine, permission denied, which TLS check failed, ssh's own first line of stderr.
 */
int docker_init(struct docker *d, const char *host, struct strbuf *err);
/*
 * The same for an engine whose API version `api` is known already (a note its container's
 * starter left): on a unix socket the socket is tried, and nothing is asked or loaded until
 * a request needs libcurl (docker_status_raw(), docker_send_raw() and docker_attach() do
 * not). Elsewhere, or with no valid `api`, it is docker_init().
 */
int docker_init_api(struct docker *d, const char *host, const char *api, struct strbuf *err);
/*
 * Close the connections; kill and reap the ssh children still running; wait up to a second
 * for the TLS pumps of the raw connections already closed to finish.
 */
void docker_release(struct docker *d);

/* How long docker_init() waits for the engine's first answer (ssh: its connection too). */
#define DOCKER_PING_SECONDS 15L

/*
 * One request with a raw body (NULL = none) of `type`; the response body is appended to
 * `out` (may be NULL). Returns the HTTP status, or -1 with `err` set when there was no answer.
 */
long docker_request(struct docker *d, const char *method, const char *path, const char *type,
		    const void *body, size_t len, struct strbuf *out, struct strbuf *err);
/*
 * One request with a JSON body (may be NULL); the reply is parsed into *reply (may be NULL;
 * NULL when the body is not JSON). A status >= 400 adds the daemon's message to `err`.
 */
long docker_call(struct docker *d, const char *method, const char *path, const cJSON *body,
		 cJSON **reply, struct strbuf *err);
/*
 * A fresh connection to the engine of `d`, as a descriptor that carries its HTTP in the clear:
 * the engine's socket itself (unix://, tcp://); under TLS one end of a socketpair pumped
 * through TLS by a thread of its own (docker_tls.c); for ssh:// one end of a socketpair whose
 * other is `ssh ... docker system dial-stdio` (docker_ssh.c). Every raw connection (wait,
 * attach) is made here; closing the descriptor ends it (thread, ssh child). -1 with errno set.
 */
int docker_dial(const struct docker *d);
/* The same, -1 with `err` (may be NULL) saying why, for people. */
int docker_dial_err(const struct docker *d, struct strbuf *err);
/*
 * Open a new connection of its own and send a request on it without waiting for the answer
 * (POST /containers/ID/wait): the descriptor becomes readable when the daemon answers.
 */
int docker_send_raw(struct docker *d, const char *method, const char *path, struct strbuf *err);
/*
 * A request on a connection of its own whose answer's status is all that is wanted (is the
 * container there): the status, or -1 with `err`. No HTTP client is loaded for it (libcurl
 * takes 8 ms to load here, much of a pooled run's path: backend_docker.c's adopt).
 */
long docker_status_raw(struct docker *d, const char *method, const char *path,
		       struct strbuf *err);

/*
 * Attach to container `id`'s stdin on a connection of its own (POST /containers/ID/attach,
 * upgraded to the raw stream): what is written to the descriptor reaches the container's
 * stdin (created with OpenStdin); with `output`, its stdout and stderr come back on it in the
 * engine's multiplexed form (8-byte heads: stream.h's pump reads them). -1 with `err` set.
 */
int docker_attach(struct docker *d, const char *id, int output, struct strbuf *err);

/*
 * The one way to such a stream: POST `path` with JSON `body` (NULL: none) on a connection of
 * its own, upgraded to the raw stream (the attach above; an exec's start, POST
 * /exec/ID/start). `what` names it in errors ("cannot <what>: <the engine's status line>").
 * The descriptor, or -1 with `err`.
 */
int docker_upgrade(struct docker *d, const char *path, const char *body, const char *what,
		   struct strbuf *err);

/* Percent-encode `s` for a query string. */
void docker_urlencode(struct strbuf *sb, const char *s);

#endif
