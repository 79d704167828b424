#ifndef CELLBOX_DOCKER_HOST_H
#define CELLBOX_DOCKER_HOST_H

/*
 * Which engine to talk to, and how: the host string and its TLS settings, read as the docker
 * CLI reads them.
 *
 *	host given (--docker-host)	that host; TLS from the environment (below)
 *	else $DOCKER_HOST		the same
 *	else a docker context		$DOCKER_CONTEXT, else "currentContext" of
 *					$DOCKER_CONFIG/config.json (~/.docker): its meta.json's
 *					Endpoints.docker.Host and SkipTLSVerify, its TLS files
 *	else				unix:///var/run/docker.sock (tcp://localhost:2376
 *					when the environment asks for TLS)
 *
 * TLS from the environment (tcp:// only): DOCKER_TLS_VERIFY non-empty = TLS, the server's
 * certificate verified against $DOCKER_CERT_PATH/ca.pem (DOCKER_CERT_PATH defaults to the
 * config directory, ~/.docker); DOCKER_TLS non-empty = TLS without verification (as the CLI).
 * cert.pem and key.pem there are the client's certificate when both exist. A context's TLS
 * files are contexts/tls/<sha256 of its name>/docker/{ca,cert,key}.pem: with ca.pem the
 * server is verified unless SkipTLSVerify.
 *
 * Host forms: unix:///path, tcp://host[:port] (2375, or 2376 under TLS), ssh://[user@]host
 * [:port][/socket] (ssh ... docker system dial-stdio). Names that could reach a command line
 * as an option (a leading '-') or carry shell metacharacters are refused.
 */

#include "util.h"

enum docker_kind { DOCKER_UNIX, DOCKER_TCP, DOCKER_SSH };

#define DOCKER_PATH_MAX 512

struct docker_endpoint {
	enum docker_kind kind;
	char host[600];			/* as given, for messages */
	char path[DOCKER_PATH_MAX];	/* unix: the socket; ssh: the remote socket or "" */
	char name[256];			/* tcp, ssh: the host name or address (no brackets) */
	char port[8];			/* tcp: always; ssh: "" for ssh's own default */
	char user[64];			/* ssh: "" for ssh's own default */
	int tls;			/* tcp: https */
	int verify;			/* tcp with tls: verify the server's certificate */
	char ca[DOCKER_PATH_MAX];	/* tls: the CA file ("" = none, only when !verify) */
	char cert[DOCKER_PATH_MAX];	/* tls: the client's certificate ("" = none) */
	char key[DOCKER_PATH_MAX];	/* tls: its key ("" = none) */
	char origin[200];		/* "--docker-host", "DOCKER_HOST", "context NAME", ... */
};

/* The largest meta.json or config.json read (the CLI's are a few hundred bytes). */
#define DOCKER_CONFIG_MAX (256u << 10)

/*
 * Parse `host` alone into `ep` (no TLS, no files read): 0, or -1 with `err` saying what is
 * wrong with it and which forms are supported.
 */
int docker_host_parse(const char *host, struct docker_endpoint *ep, struct strbuf *err);

/*
 * Resolve the engine as the table above says: `host` is --docker-host (NULL: none). TLS files
 * are checked to exist (a missing one is an error naming it); nothing is connected. 0, or -1
 * with `err` set.
 */
int docker_host_resolve(const char *host, struct docker_endpoint *ep, struct strbuf *err);

/*
 * The docker context `name`'s endpoint from the config directory `dir` (contexts/meta/...).
 * Used by docker_host_resolve(); public for its tests. 0, or -1 with `err` set.
 */
int docker_host_context(const char *dir, const char *name, struct docker_endpoint *ep,
			struct strbuf *err);

#endif
