/* The Docker Engine API client. */
#include "docker.h"
#include "curl_lazy.h"
#include "numconv.h"

#include <curl/curl.h>
#include <errno.h>
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

int docker_dial(const struct docker *d)
{
	int fd;

	if (d->socket_path) {
		struct sockaddr_un sa = { .sun_family = AF_UNIX };

		if (strlen(d->socket_path) >= sizeof(sa.sun_path)) {
			errno = ENAMETOOLONG;
			return -1;
		}
		strcpy(sa.sun_path, d->socket_path);
		fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fd < 0)
			return -1;
		if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
			int saved = errno;
			close(fd);
			errno = saved;
			return -1;
		}
		return fd;
	} else {
		struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *res, *ai;
		char host[256], *colon;
		const char *hp = d->host + strlen("tcp://");

		snprintf(host, sizeof(host), "%s", hp);
		host[strcspn(host, "/")] = '\0';
		colon = strrchr(host, ':');
		if (colon)
			*colon++ = '\0';
		if (getaddrinfo(host, colon ? colon : "2375", &hints, &res) != 0) {
			errno = EHOSTUNREACH;
			return -1;
		}
		fd = -1;
		for (ai = res; ai && fd < 0; ai = ai->ai_next) {
			fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
			if (fd >= 0 && connect(fd, ai->ai_addr, ai->ai_addrlen) < 0) {
				close(fd);
				fd = -1;
			}
		}
		freeaddrinfo(res);
		if (fd < 0)
			errno = ECONNREFUSED;
		return fd;
	}
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
 * GET /version takes several (it asks every component). 0, or -1 when there is no header.
 */
static int ping_version(struct docker *d)
{
	CURL *c = d->curl;
	struct strbuf body = STRBUF_INIT;
	char *url = xasprintf("%s/_ping", d->base);
	long status = 0;

	d->api[0] = '\0';
	curl_easy_reset(c);
	curl_easy_setopt(c, CURLOPT_URL, url);
	if (d->socket_path)
		curl_easy_setopt(c, CURLOPT_UNIX_SOCKET_PATH, d->socket_path);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, write_body);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, &body);
	curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, api_header);
	curl_easy_setopt(c, CURLOPT_HEADERDATA, (void *)d->api);
	if (curl_easy_perform(c) == CURLE_OK)
		curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
	strbuf_release(&body);
	free(url);
	return status == 200 && d->api[0] ? 0 : -1;
}

int docker_init(struct docker *d, const char *host, struct strbuf *err)
{
	cJSON *reply = NULL;
	const char *v;
	long status;
	int fd;

	memset(d, 0, sizeof(*d));
	if (!host)
		host = getenv("DOCKER_HOST");
	if (!host || !*host)
		host = DEFAULT_HOST;
	d->host = xstrdup(host);
	if (!strncmp(host, "unix://", 7)) {
		d->socket_path = xstrdup(host + 7);
		d->base = xstrdup("http://localhost");
	} else if (!strncmp(host, "tcp://", 6)) {
		d->base = xasprintf("http://%s", host + 6);
		if (d->base[strlen(d->base) - 1] == '/')
			d->base[strlen(d->base) - 1] = '\0';
	} else {
		strbuf_addf(err, "unsupported docker host '%s' (expected unix:///path or tcp://host:port)",
			    host);
		goto fail;
	}
	/* Connect once by hand: errno tells "no daemon" from "permission denied". */
	fd = docker_dial(d);
	if (fd < 0) {
		if (errno == EACCES || errno == EPERM)
			strbuf_addf(err, "permission denied on the docker socket %s (run as root, or "
				    "add yourself to the '%s' group)", d->socket_path ? d->socket_path :
				    host, "docker");
		else
			strbuf_addf(err, "no docker daemon answers at %s: %s (start it: dockerd, "
				    "or 'podman system service' for podman)", host, strerror(errno));
		goto fail;
	}
	close(fd);
	d->curl = curl_easy_init();
	if (!d->curl) {
		strbuf_addf(err, "cannot initialise libcurl%s%s", *curl_lazy_error() ? ": " : "",
			    curl_lazy_error());
		goto fail;
	}
	if (ping_version(d) < 0) {
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
		curl_easy_cleanup(d->curl);
	free(d->host);
	free(d->socket_path);
	free(d->base);
	memset(d, 0, sizeof(*d));
}

long docker_request(struct docker *d, const char *method, const char *path, const char *type,
		    const void *body, size_t len, struct strbuf *out, struct strbuf *err)
{
	CURL *c = d->curl;
	struct curl_slist *headers = NULL;
	struct body_in in = { body, len, 0 };
	char *url = xasprintf("%s%s", d->base, path);
	long status = -1;
	CURLcode rc;

	curl_easy_reset(c);
	curl_easy_setopt(c, CURLOPT_URL, url);
	if (d->socket_path)
		curl_easy_setopt(c, CURLOPT_UNIX_SOCKET_PATH, d->socket_path);
	curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
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
		strbuf_addf(err, "%s %s: %s (docker host %s)", method, path, curl_easy_strerror(rc),
			    d->host);
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

int docker_send_raw(struct docker *d, const char *method, const char *path, struct strbuf *err)
{
	char *req;
	int fd = docker_dial(d), rc;

	if (fd < 0) {
		strbuf_addf(err, "cannot connect to %s: %s", d->host, strerror(errno));
		return -1;
	}
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

int docker_attach(struct docker *d, const char *id, int output, struct strbuf *err)
{
	struct strbuf head = STRBUF_INIT;
	char *req;
	int fd = docker_dial(d), rc = -1;
	double deadline = clock_now() + 10;

	if (fd < 0) {
		strbuf_addf(err, "cannot connect to %s: %s", d->host, strerror(errno));
		return -1;
	}
	req = xasprintf("POST /v%s/containers/%s/attach?stream=1&stdin=1%s HTTP/1.1\r\n"
			"Host: docker\r\nContent-Length: 0\r\nUpgrade: tcp\r\n"
			"Connection: Upgrade\r\n\r\n", d->api, id,
			output ? "&stdout=1&stderr=1" : "");
	if (fsutil_write_all(fd, req, strlen(req)) < 0) {
		strbuf_addf(err, "cannot write to %s: %s", d->host, strerror(errno));
		goto out;
	}
	/* The answer's head, byte by byte: what follows it is the raw stream. */
	while (!strstr(head.buf, "\r\n\r\n")) {
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		double left = deadline - clock_now();
		char c;

		if (left <= 0 || head.len > 4096 || poll(&pfd, 1, wait_ms(left)) <= 0 ||
		    read(fd, &c, 1) != 1) {
			strbuf_addf(err, "no answer from %s to attach", d->host);
			goto out;
		}
		strbuf_addch(&head, c);
	}
	if (strncmp(head.buf, "HTTP/1.1 101", 12) && strncmp(head.buf, "HTTP/1.1 200", 12) &&
	    strncmp(head.buf, "HTTP/1.0 200", 12)) {
		strbuf_addf(err, "cannot attach to the container's stdin: %.*s", (int)strcspn(head.buf, "\r"),
			    head.buf);
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
