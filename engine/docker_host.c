/* Which engine, and how: host strings, the TLS environment, docker contexts (docker_host.h). */
#include "docker_host.h"
#include "sha256.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#define DEFAULT_SOCKET "/var/run/docker.sock"
#define FORMS "unix:///path, tcp://host:port or ssh://[user@]host[:port]"

/* Copy `s` (n bytes) into dst[size]: -1 when it does not fit. */
static int put(char *dst, size_t size, const char *s, size_t n)
{
	if (n >= size)
		return -1;
	memcpy(dst, s, n);
	dst[n] = '\0';
	return 0;
}

/* Whether every byte of s[0..n) is in `set` or alphanumeric, and the first is not '-'. */
static int safe_chars(const char *s, size_t n, const char *set)
{
	if (!n || s[0] == '-')
		return 0;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      (c && strchr(set, c))))
			return 0;
	}
	return 1;
}

/* A port: 1 to 65535 in digits. */
static int valid_port(const char *s, size_t n)
{
	long v = 0;

	if (!n || n > 5)
		return 0;
	for (size_t i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return 0;
		v = v * 10 + (s[i] - '0');
	}
	return v >= 1 && v <= 65535;
}

/*
 * "name[:port]" or "[v6][:port]" (s, n bytes) into ep->name and ep->port (port left as it is
 * when absent). 0, or -1.
 */
static int parse_hostport(const char *s, size_t n, struct docker_endpoint *ep)
{
	const char *name = s, *port = NULL;
	size_t nl = n, pl = 0;

	if (n && s[0] == '[') {
		const char *close = memchr(s, ']', n);
		if (!close)
			return -1;
		name = s + 1;
		nl = (size_t)(close - name);
		if (!safe_chars(name, nl, ":.%"))
			return -1;
		if (close + 1 < s + n) {
			if (close[1] != ':')
				return -1;
			port = close + 2;
			pl = (size_t)(s + n - port);
		}
	} else {
		const char *colon = memchr(s, ':', n);
		if (colon) {
			if (memchr(colon + 1, ':', (size_t)(s + n - colon - 1)))
				return -1;	/* an IPv6 address needs its brackets */
			nl = (size_t)(colon - s);
			port = colon + 1;
			pl = (size_t)(s + n - port);
		}
		if (!safe_chars(name, nl, ".-_"))
			return -1;
	}
	if (put(ep->name, sizeof(ep->name), name, nl) < 0)
		return -1;
	if (port && (!valid_port(port, pl) || put(ep->port, sizeof(ep->port), port, pl) < 0))
		return -1;
	return 0;
}

int docker_host_parse(const char *host, struct docker_endpoint *ep, struct strbuf *err)
{
	size_t n;

	memset(ep, 0, sizeof(*ep));
	if (!host || put(ep->host, sizeof(ep->host), host, strlen(host)) < 0) {
		strbuf_addf(err, "docker host too long (expected %s)", FORMS);
		return -1;
	}
	if (!strncmp(host, "unix://", 7)) {
		const char *p = host + 7;
		ep->kind = DOCKER_UNIX;
		if (!*p)
			p = DEFAULT_SOCKET;
		if (*p != '/' || strlen(p) >= sizeof(((struct sockaddr_un *)0)->sun_path)) {
			strbuf_addf(err, "docker host '%s': a unix socket is an absolute path under "
				    "108 bytes (unix:///var/run/docker.sock)", host);
			return -1;
		}
		snprintf(ep->path, sizeof(ep->path), "%s", p);
		return 0;
	}
	if (!strncmp(host, "tcp://", 6)) {
		const char *p = host + 6;
		ep->kind = DOCKER_TCP;
		n = strlen(p);
		if (n && p[n - 1] == '/')
			n--;
		if (!n) {
			p = "localhost";
			n = strlen(p);
		}
		if (memchr(p, '/', n) || memchr(p, '?', n) || memchr(p, '@', n) ||
		    parse_hostport(p, n, ep) < 0) {
			strbuf_addf(err, "docker host '%s' is not tcp://host:port (a name or an "
				    "address, [v6] in brackets, a port 1-65535, no path)", host);
			return -1;
		}
		return 0;
	}
	if (!strncmp(host, "ssh://", 6)) {
		const char *p = host + 6, *slash, *at;
		ep->kind = DOCKER_SSH;
		if (strpbrk(p, "?#")) {
			strbuf_addf(err, "docker host '%s': no query or fragment in an ssh:// host",
				    host);
			return -1;
		}
		slash = strchr(p, '/');
		n = slash ? (size_t)(slash - p) : strlen(p);
		at = memchr(p, '@', n);
		if (at) {
			size_t ul = (size_t)(at - p);
			if (memchr(p, ':', ul)) {
				strbuf_addf(err, "docker host '%s': a password in the host is not "
					    "supported (use ssh's keys or agent)", host);
				return -1;
			}
			if (!safe_chars(p, ul, "._-") || put(ep->user, sizeof(ep->user), p, ul) < 0) {
				strbuf_addf(err, "docker host '%s': unusable user name", host);
				return -1;
			}
			n -= ul + 1;
			p = at + 1;
		}
		if (parse_hostport(p, n, ep) < 0) {
			strbuf_addf(err, "docker host '%s' is not ssh://[user@]host[:port][/socket]",
				    host);
			return -1;
		}
		if (slash && strcmp(slash, "/")) {
			if (!safe_chars(slash + 1, strlen(slash + 1), "._-/") ||
			    put(ep->path, sizeof(ep->path), slash, strlen(slash)) < 0) {
				strbuf_addf(err, "docker host '%s': unusable remote socket path", host);
				return -1;
			}
		}
		return 0;
	}
	strbuf_addf(err, "unsupported docker host '%s' (expected %s)", host, FORMS);
	return -1;
}

/* The docker CLI's configuration directory: $DOCKER_CONFIG, else ~/.docker. */
static void config_dir(char *out, size_t size)
{
	const char *dir = getenv("DOCKER_CONFIG"), *home = getenv("HOME");

	if (dir && *dir) {
		snprintf(out, size, "%s", dir);
		return;
	}
	if (!home || !*home) {
		struct passwd *pw = getpwuid(getuid());
		home = pw && pw->pw_dir ? pw->pw_dir : "/";
	}
	snprintf(out, size, "%s/.docker", home);
}

/* Whether `path` is a regular file (following links: it is the user's own directory). */
static int is_file(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* dst[DOCKER_PATH_MAX] = dir/name when that fits and is a file; else "" (and 0). */
static int tls_file(char *dst, const char *dir, const char *name)
{
	int n = snprintf(dst, DOCKER_PATH_MAX, "%s/%s", dir, name);

	if (n < 0 || n >= DOCKER_PATH_MAX || !is_file(dst)) {
		dst[0] = '\0';
		return 0;
	}
	return 1;
}

/*
 * A JSON file of the user's, capped at DOCKER_CONFIG_MAX and never blocking (a FIFO is
 * refused): NULL with errno set (ENOENT when it is not there), else the parsed value.
 */
static cJSON *read_json(const char *path, struct strbuf *err)
{
	struct strbuf text = STRBUF_INIT;
	struct stat st;
	cJSON *json = NULL;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);

	if (fd < 0)
		return NULL;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size > DOCKER_CONFIG_MAX) {
		strbuf_addf(err, "%s is not a regular file under %u KB", path,
			    DOCKER_CONFIG_MAX >> 10);
		close(fd);
		errno = EINVAL;
		return NULL;
	}
	if (strbuf_read_fd(&text, fd, DOCKER_CONFIG_MAX + 1) < 0 || text.len > DOCKER_CONFIG_MAX) {
		strbuf_addf(err, "cannot read %s: %s", path, strerror(errno ? errno : EFBIG));
	} else if (!(json = cJSON_ParseWithLength(text.buf, text.len))) {
		strbuf_addf(err, "%s is not JSON", path);
	}
	close(fd);
	strbuf_release(&text);
	if (!json)
		errno = EINVAL;
	return json;
}

/* A context's name as the CLI allows them: [a-zA-Z0-9][a-zA-Z0-9_.+-]+. */
static int valid_context(const char *name)
{
	size_t n = strlen(name);

	if (n < 2 || n > 100 || name[0] == '.' || name[0] == '_' || name[0] == '+')
		return 0;
	return safe_chars(name, n, "_.+-");
}

/* dir/contexts/<kind>/<sha256 of name><rest> */
static void context_path(char *out, size_t size, const char *dir, const char *kind,
			 const char *name, const char *rest)
{
	struct sha256 c;
	char hex[65];

	sha256_init(&c);
	sha256_update(&c, name, strlen(name));
	sha256_hex(&c, hex);
	snprintf(out, size, "%s/contexts/%s/%s%s", dir, kind, hex, rest);
}

int docker_host_context(const char *dir, const char *name, struct docker_endpoint *ep,
			struct strbuf *err)
{
	char meta[DOCKER_PATH_MAX + 128], tls[DOCKER_PATH_MAX + 128];
	cJSON *json, *docker, *skip;
	const char *host;
	int skip_verify, rc = -1;

	if (!valid_context(name)) {
		strbuf_addf(err, "'%s' is not a docker context name", name);
		return -1;
	}
	context_path(meta, sizeof(meta), dir, "meta", name, "/meta.json");
	json = read_json(meta, err);
	if (!json) {
		if (errno == ENOENT)
			strbuf_addf(err, "docker context '%s' not found (no %s; see 'docker context "
				    "ls', or unset DOCKER_CONTEXT)", name, meta);
		return -1;
	}
	docker = cJSON_GetObjectItemCaseSensitive(
		cJSON_GetObjectItemCaseSensitive(json, "Endpoints"), "docker");
	host = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(docker, "Host"));
	skip = cJSON_GetObjectItemCaseSensitive(docker, "SkipTLSVerify");
	if (!cJSON_IsObject(docker) || (skip && !cJSON_IsBool(skip)) ||
	    (cJSON_GetObjectItemCaseSensitive(docker, "Host") && !host)) {
		strbuf_addf(err, "docker context '%s': %s has no usable Endpoints.docker", name,
			    meta);
		goto out;
	}
	if (docker_host_parse(host && *host ? host : "unix://" DEFAULT_SOCKET, ep, err) < 0) {
		strbuf_addf(err, " (docker context '%s')", name);
		goto out;
	}
	skip_verify = cJSON_IsTrue(skip);
	snprintf(ep->origin, sizeof(ep->origin), "docker context '%s'", name);
	rc = 0;
	if (ep->kind != DOCKER_TCP)
		goto out;
	context_path(tls, sizeof(tls), dir, "tls", name, "/docker");
	tls_file(ep->ca, tls, "ca.pem");
	tls_file(ep->cert, tls, "cert.pem");
	tls_file(ep->key, tls, "key.pem");
	if (!*ep->cert != !*ep->key) {
		strbuf_addf(err, "docker context '%s': %s has %s without %s", name, tls,
			    *ep->cert ? "cert.pem" : "key.pem", *ep->cert ? "key.pem" : "cert.pem");
		rc = -1;
	}
	ep->tls = *ep->ca || *ep->cert || skip_verify;
	ep->verify = ep->tls && !skip_verify;
	if (!ep->port[0])
		snprintf(ep->port, sizeof(ep->port), "%s", ep->tls ? "2376" : "2375");
out:
	cJSON_Delete(json);
	return rc;
}

/* The context named by $DOCKER_CONTEXT or config.json's currentContext ("" = none). */
static int current_context(const char *dir, char *name, size_t size, char *why, size_t wsize,
			   struct strbuf *err)
{
	const char *env = getenv("DOCKER_CONTEXT"), *cur;
	char path[DOCKER_PATH_MAX + 32];
	cJSON *json;

	name[0] = '\0';
	if (env && *env) {
		snprintf(name, size, "%s", env);
		snprintf(why, wsize, "DOCKER_CONTEXT");
		return 0;
	}
	snprintf(path, sizeof(path), "%s/config.json", dir);
	json = read_json(path, err);
	if (!json)
		return errno == ENOENT ? 0 : -1;
	cur = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(json, "currentContext"));
	if (cur && strlen(cur) < size) {
		snprintf(name, size, "%s", cur);
		snprintf(why, wsize, "currentContext in config.json");
	}
	cJSON_Delete(json);
	return 0;
}

/* TLS as the environment asks for it (DOCKER_TLS_VERIFY, DOCKER_TLS, DOCKER_CERT_PATH). */
static int env_tls(struct docker_endpoint *ep, const char *dir, struct strbuf *err)
{
	const char *v = getenv("DOCKER_TLS_VERIFY"), *t = getenv("DOCKER_TLS");
	const char *cp = getenv("DOCKER_CERT_PATH");
	ep->verify = v && *v;
	ep->tls = ep->verify || (t && *t);
	if (!ep->port[0])
		snprintf(ep->port, sizeof(ep->port), "%s", ep->tls ? "2376" : "2375");
	if (!ep->tls)
		return 0;
	if (!cp || !*cp)
		cp = dir;
	if (!tls_file(ep->ca, cp, "ca.pem") && ep->verify) {
		strbuf_addf(err, "DOCKER_TLS_VERIFY is set but there is no CA certificate %s/ca.pem "
			    "(set DOCKER_CERT_PATH to the directory of ca.pem, cert.pem and key.pem)",
			    cp);
		return -1;
	}
	tls_file(ep->cert, cp, "cert.pem");
	tls_file(ep->key, cp, "key.pem");
	if (!*ep->cert != !*ep->key) {
		strbuf_addf(err, "%s/%s exists without %s (the client certificate needs both)", cp,
			    *ep->cert ? "cert.pem" : "key.pem", *ep->cert ? "key.pem" : "cert.pem");
		return -1;
	}
	return 0;
}

int docker_host_resolve(const char *host, struct docker_endpoint *ep, struct strbuf *err)
{
	char dir[DOCKER_PATH_MAX], name[101], why[DOCKER_PATH_MAX + 64];
	const char *env = getenv("DOCKER_HOST"), *origin = "--docker-host";
	const char *v = getenv("DOCKER_TLS_VERIFY"), *t = getenv("DOCKER_TLS");

	config_dir(dir, sizeof(dir));
	if (!host || !*host) {
		host = env;
		origin = "DOCKER_HOST";
	}
	if (!host || !*host) {
		if (current_context(dir, name, sizeof(name), why, sizeof(why), err) < 0)
			return -1;
		if (*name && strcmp(name, "default")) {
			if (docker_host_context(dir, name, ep, err) < 0)
				return -1;
			snprintf(ep->origin, sizeof(ep->origin), "docker context '%.100s' (%.40s)",
				 name, why);
			return 0;
		}
		host = (v && *v) || (t && *t) ? "tcp://localhost:2376" : "unix://" DEFAULT_SOCKET;
		origin = "the default";
	}
	if (docker_host_parse(host, ep, err) < 0) {
		strbuf_addf(err, " (from %s)", origin);
		return -1;
	}
	snprintf(ep->origin, sizeof(ep->origin), "%s", origin);
	return ep->kind == DOCKER_TCP ? env_tls(ep, dir, err) : 0;
}
