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

struct docker {
	void *curl;		/* CURL easy handle, reused so the connection stays open */
	char *host;		/* "unix:///var/run/docker.sock" or "tcp://host:port" */
	char *socket_path;	/* unix sockets only */
	char *base;		/* "http://localhost/v1.41" */
	char api[16];		/* "1.41" */
};

/*
 * Connect to `host` (NULL: $DOCKER_HOST, else unix:///var/run/docker.sock) and negotiate the
 * API version. Errors name the socket and say what to do: no daemon, permission denied.
 */
int docker_init(struct docker *d, const char *host, struct strbuf *err);
void docker_release(struct docker *d);

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
 * A fresh connection to the engine of `d`, as a descriptor that carries its HTTP: the engine's
 * socket itself (unix://, tcp://). Every raw connection (wait, attach) is made here. -1 with
 * errno set.
 */
int docker_dial(const struct docker *d);
/*
 * Open a new connection of its own and send a request on it without waiting for the answer
 * (POST /containers/ID/wait): the descriptor becomes readable when the daemon answers.
 */
int docker_send_raw(struct docker *d, const char *method, const char *path, struct strbuf *err);

/*
 * Attach to container `id`'s stdin on a connection of its own (POST /containers/ID/attach,
 * upgraded to the raw stream): what is written to the descriptor reaches the container's
 * stdin (created with OpenStdin); with `output`, its stdout and stderr come back on it in the
 * engine's multiplexed form (8-byte heads: stream.h's pump reads them). -1 with `err` set.
 */
int docker_attach(struct docker *d, const char *id, int output, struct strbuf *err);

/* Percent-encode `s` for a query string. */
void docker_urlencode(struct strbuf *sb, const char *s);

#endif
