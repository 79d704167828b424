/*
 * The Docker Engine API client: its requests through libcurl (made at the first that needs
 * it), the engine's API version. Its raw connections (a descriptor of its own per wait,
 * attach or exec) are docker_raw.c.
 */
#include "docker.h"
#include "curl_lazy.h"
#include "docker_int.h"
#include "numconv.h"

#include <curl/curl.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#define DEFAULT_HOST "unix:///var/run/docker.sock"
#define MAX_REPLY (64u << 20)

struct body_in {
	const char *data;
	size_t len, off;
};

/* curl read callback: hand out the request body. */
static size_t read_body(char *buf, size_t size, size_t n, void *data)
{
	struct body_in *in = data;
	size_t room = size * n, left = in->len - in->off;

	if (room > left)
		room = left;
	memcpy(buf, in->data + in->off, room);
	in->off += room;
	return room;
}

/* curl write callback: keep the response body (or drop it). */
static size_t write_body(char *buf, size_t size, size_t n, void *data)
{
	struct strbuf *out = data;

	if (out) {
		if (out->len + size * n > MAX_REPLY)
			return 0;
		strbuf_add(out, buf, size * n);
	}
	return size * n;
}

/* ssh://: curl's socket, pointed at a private local end (docker_ssh.c) ... */
static curl_socket_t ssh_open(void *data, curlsocktype purpose, struct curl_sockaddr *addr)
{
	struct docker *d = data;
	struct strbuf err = STRBUF_INIT;
	curl_socket_t fd;

	(void)purpose;
	docker_ssh_reap(d->ssh);
	fd = docker_ssh_curl_open(d->ssh, addr, &err);
	if (fd == CURL_SOCKET_BAD)
		snprintf(d->curl_error, sizeof(d->curl_error), "%s", err.buf);
	else
		d->ssh_fd = fd;
	strbuf_release(&err);
	return fd;
}

/* ... where ssh is started once curl has connected (nothing for a reused connection). */
static int ssh_prereq(void *data, char *ip, char *local_ip, int port, int local_port)
{
	struct docker *d = data;
	struct strbuf err = STRBUF_INIT;
	int rc;

	(void)ip;
	(void)local_ip;
	(void)port;
	(void)local_port;
	rc = docker_ssh_curl_connected(d->ssh, d->ep, &err);
	if (rc < 0)
		snprintf(d->curl_error, sizeof(d->curl_error), "%s", err.buf);
	strbuf_release(&err);
	return rc < 0 ? CURL_PREREQFUNC_ABORT : CURL_PREREQFUNC_OK;
}

/*
 * A request of `d`'s on its handle: the URL, how to reach the engine (unix socket, TLS
 * options, the ssh connection), no signals, curl's error words kept in d->curl_error.
 */
static void setup(struct docker *d, const char *url)
{
	CURL *c = d->curl;

	curl_easy_reset(c);
	d->curl_error[0] = '\0';
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_ERRORBUFFER, d->curl_error);
	curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, DOCKER_CONNECT_SECONDS);
	switch (d->ep->kind) {
	case DOCKER_UNIX:
		curl_easy_setopt(c, CURLOPT_UNIX_SOCKET_PATH, d->ep->path);
		break;
	case DOCKER_TCP:
		curl_easy_setopt(c, CURLOPT_OPENSOCKETFUNCTION, docker_tls_cloexec_socket);
		docker_tls_options(c, d->ep);
		break;
	case DOCKER_SSH:
		curl_easy_setopt(c, CURLOPT_OPENSOCKETFUNCTION, ssh_open);
		curl_easy_setopt(c, CURLOPT_OPENSOCKETDATA, (void *)d);
		curl_easy_setopt(c, CURLOPT_PREREQFUNCTION, ssh_prereq);
		curl_easy_setopt(c, CURLOPT_PREREQDATA, (void *)d);
		break;
	}
}

/* Why curl's `rc` failed, for people (ssh: ssh's own words when it has some). */
static void explain(struct docker *d, CURLcode rc, struct strbuf *err)
{
	struct strbuf why = STRBUF_INIT;
	char detail[sizeof(d->curl_error)];

	snprintf(detail, sizeof(detail), "%s", d->curl_error);
	if (d->ep->kind == DOCKER_SSH && d->ssh_fd >= 0 &&
	    docker_ssh_why(d->ssh, d->ssh_fd, 5, &why) == 0) {
		strbuf_addf(err, "ssh to %s failed: %s (ssh runs with BatchMode=yes: its keys, "
			    "agent and known_hosts must let it in without a question)", d->host,
			    why.buf);
	} else if (d->ep->kind == DOCKER_UNIX) {
		strbuf_addf(err, "docker engine %s: %s", d->host, *detail ? detail :
			    curl_easy_strerror(rc));
	} else {
		docker_tls_explain(d->ep, rc, detail, err);
	}
	strbuf_release(&why);
}

/* Keep the value of an "Api-Version:" header line. */
static size_t api_header(char *line, size_t size, size_t n, void *data)
{
	char *api = data;
	size_t len = size * n;

	if (len > 12 && !strncasecmp(line, "Api-Version:", 12)) {
		const char *v = line + 12;
		size_t vl;

		while (*v == ' ')
			v++;
		vl = strcspn(v, "\r\n");
		if (vl && vl < 16) {
			memcpy(api, v, vl);
			api[vl] = '\0';
		}
	}
	return len;
}

/*
 * The API version from GET /_ping's Api-Version header: a fraction of a millisecond, where
 * GET /version takes several (it asks every component). 0; 1 when the engine answered
 * without it (ask /version); -1 with `err` set when there was no answer.
 */
static int ping_version(struct docker *d, struct strbuf *err)
{
	CURL *c = d->curl;
	struct strbuf body = STRBUF_INIT;
	char *url = xasprintf("%s/_ping", d->base);
	long status = 0;
	CURLcode rc;

	d->api[0] = '\0';
	setup(d, url);
	strbuf_set_max(&body, 4096);
	curl_easy_setopt(c, CURLOPT_TIMEOUT, DOCKER_PING_SECONDS);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, write_body);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, &body);
	curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, api_header);
	curl_easy_setopt(c, CURLOPT_HEADERDATA, (void *)d->api);
	rc = curl_easy_perform(c);
	if (rc != CURLE_OK) {
		explain(d, rc, err);
		status = -1;
	} else {
		curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
		/* Plain HTTP to a TLS port: Go's server answers 400 and says so. */
		if (status == 400 && strstr(body.buf, "HTTPS")) {
			strbuf_addf(err, "the engine at %s speaks TLS (%s): set DOCKER_TLS_VERIFY=1 and "
				    "DOCKER_CERT_PATH to the directory of its ca.pem, cert.pem and "
				    "key.pem", d->host, d->ep->origin);
			status = -1;
		}
	}
	strbuf_release(&body);
	free(url);
	if (status < 0)
		return -1;
	return status == 200 && d->api[0] ? 0 : 1;
}

/* Whether `api` reads as an API version ("1.41"). */
static int api_ok(const char *api)
{
	size_t n = api ? strlen(api) : 0;

	return n >= 3 && n < sizeof(((struct docker *)0)->api) && isdigit((unsigned char)api[0]) &&
	       strspn(api, "0123456789.") == n;
}

/* A curl handle for `d`, made at its first request: 0, or -1 with `err`. */
static int need_curl(struct docker *d, struct strbuf *err)
{
	if (d->curl)
		return 0;
	d->curl = curl_easy_init();
	if (!d->curl) {
		strbuf_addf(err, "cannot initialise libcurl%s%s", *curl_lazy_error() ? ": " : "",
			    curl_lazy_error());
		return -1;
	}
	return 0;
}

int docker_init(struct docker *d, const char *host, struct strbuf *err)
{
	return docker_init_api(d, host, NULL, err);
}

int docker_init_api(struct docker *d, const char *host, const char *api, struct strbuf *err)
{
	cJSON *reply = NULL;
	const char *v;
	long status;
	int fd, rc;

	memset(d, 0, sizeof(*d));
	d->ssh_fd = -1;
	d->ep = xcalloc(1, sizeof(*d->ep));
	if (docker_host_resolve(host, d->ep, err) < 0)
		goto fail;
	d->host = xstrdup(d->ep->host);
	switch (d->ep->kind) {
	case DOCKER_UNIX:
		d->base = xstrdup("http://localhost");
		/* Connect once by hand: errno tells "no daemon" from "permission denied". */
		fd = docker_dial(d);
		if (fd < 0) {
			if (errno == EACCES || errno == EPERM)
				strbuf_addf(err, "permission denied on the docker socket %s (run as "
					    "root, or add yourself to the '%s' group)", d->ep->path,
					    "docker");
			else
				strbuf_addf(err, "no docker daemon answers at %s: %s (start it: "
					    "dockerd, or 'podman system service' for podman)", d->host,
					    strerror(errno));
			goto fail;
		}
		close(fd);
		break;
	case DOCKER_TCP:
		d->base = xasprintf(strchr(d->ep->name, ':') ? "%s://[%s]:%s" : "%s://%s:%s",
				    d->ep->tls ? "https" : "http", d->ep->name, d->ep->port);
		if (d->ep->tls)
			d->pumps = docker_tls_group_new();
		break;
	case DOCKER_SSH:
		d->base = xstrdup("http://127.0.0.1");
		d->ssh = docker_ssh_new();
		break;
	}
	if (d->ep->kind == DOCKER_UNIX && api_ok(api)) {
		/* Its version known (and the socket answered): nothing more asked or loaded. */
		snprintf(d->api, sizeof(d->api), "%s", api);
		rc = 0;
	} else {
		if (need_curl(d, err) < 0)
			goto fail;
		rc = ping_version(d, err);
	}
	if (rc < 0)
		goto fail;
	if (rc > 0) {
		status = docker_call(d, "GET", "/version", NULL, &reply, err);
		if (status != 200) {
			if (status > 0)
				strbuf_addf(err, " (GET /version answered %ld)", status);
			goto fail;
		}
		v = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(reply, "ApiVersion"));
		snprintf(d->api, sizeof(d->api), "%s", v ? v : "1.41");
		cJSON_Delete(reply);
		reply = NULL;
	}
	{
		char *old = d->base;
		d->base = xasprintf("%s/v%s", old, d->api);
		free(old);
	}
	return 0;
fail:
	cJSON_Delete(reply);
	docker_release(d);
	return -1;
}

void docker_release(struct docker *d)
{
	if (d->curl)
		curl_easy_cleanup(d->curl);	/* closes its ssh connection, if any */
	docker_ssh_free(d->ssh);
	docker_tls_group_free(d->pumps, 1);
	free(d->host);
	free(d->ep);
	free(d->base);
	memset(d, 0, sizeof(*d));
	d->ssh_fd = -1;
}

long docker_request(struct docker *d, const char *method, const char *path, const char *type,
		    const void *body, size_t len, struct strbuf *out, struct strbuf *err)
{
	CURL *c;
	struct curl_slist *headers = NULL;
	struct body_in in = { body, len, 0 };
	char *url;
	long status = -1;
	CURLcode rc;

	if (need_curl(d, err) < 0)
		return -1;
	c = d->curl;
	url = xasprintf("%s%s", d->base, path);
	docker_ssh_reap(d->ssh);
	setup(d, url);
	curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, write_body);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, out);
	if (body || !strcmp(method, "POST") || !strcmp(method, "PUT")) {
		headers = curl_slist_append(headers, "Expect:");
		if (type) {
			char *h = xasprintf("Content-Type: %s", type);
			headers = curl_slist_append(headers, h);
			free(h);
		}
		curl_easy_setopt(c, CURLOPT_UPLOAD, 1L);
		curl_easy_setopt(c, CURLOPT_READFUNCTION, read_body);
		curl_easy_setopt(c, CURLOPT_READDATA, &in);
		curl_easy_setopt(c, CURLOPT_INFILESIZE_LARGE, (curl_off_t)len);
		/* CURLOPT_UPLOAD turns the method into PUT: say again which one we mean. */
		curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
	}
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers);
	rc = curl_easy_perform(c);
	if (rc != CURLE_OK) {
		strbuf_addf(err, "%s %s: ", method, path);
		explain(d, rc, err);
		goto out;
	}
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
out:
	curl_slist_free_all(headers);
	free(url);
	return status;
}

long docker_call(struct docker *d, const char *method, const char *path, const cJSON *body,
		 cJSON **reply, struct strbuf *err)
{
	struct strbuf out = STRBUF_INIT;
	char *text = body ? cJSON_PrintUnformatted(body) : NULL;
	cJSON *json;
	long status;

	if (reply)
		*reply = NULL;
	status = docker_request(d, method, path, "application/json", text,
				text ? strlen(text) : 0, &out, err);
	cJSON_free(text);
	if (status < 0)
		goto out;
	json = out.len ? cJSON_ParseWithLength(out.buf, out.len) : NULL;
	if (status >= 400) {
		const char *msg = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(json,
											"message"));
		strbuf_addstr(err, msg ? msg : (out.len ? out.buf : "no message"));
	}
	if (reply)
		*reply = json;
	else
		cJSON_Delete(json);
out:
	strbuf_release(&out);
	return status;
}

void docker_urlencode(struct strbuf *sb, const char *s)
{
	for (; *s; s++) {
		unsigned char ch = (unsigned char)*s;
		if ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
		    strchr("-_.~", ch))
			strbuf_addch(sb, ch);
		else
			strbuf_addf(sb, "%%%02X", ch);
	}
}
