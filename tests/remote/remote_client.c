/*
 * The docker client (engine/docker*.c) against whatever engine the environment names, for
 * tests/remote/test_remote.py: each command prints what it saw and exits 0, or prints the
 * client's error and exits 1.
 *
 *	remote_client ping			docker_init + GET /version: "api X server Y"
 *	remote_client attach IMAGE		a container whose exit status is 3 + the length
 *						of the line written to its stdin through a raw
 *						attach; its wait answered on a raw connection:
 *						"exit 7" for "abcd"; then "children: none"
 *						when no child (ssh) is left after the release
 *	remote_client bind PATH IMAGE		start a container binding PATH: "started" or
 *						"refused: ..."
 *	remote_client bench N			N round trips of GET /_ping on one raw
 *						connection (docker_dial): "median_us X p90_us Y"
 *	remote_client bench-direct N		the same on a CONNECT_ONLY TLS handle in this
 *						thread (no pump): what the pump adds is the gap
 */
#include "docker.h"
#include "docker_int.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static int fail(const char *what, struct strbuf *err)
{
	printf("error: %s: %s\n", what, err->buf);
	strbuf_reset(err);
	return 1;
}

static int ping(void)
{
	struct docker d;
	struct strbuf err = STRBUF_INIT;
	cJSON *v = NULL;

	if (docker_init(&d, NULL, &err) < 0) {
		fail("init", &err);
		strbuf_release(&err);
		return 1;
	}
	if (docker_call(&d, "GET", "/version", NULL, &v, &err) != 200) {
		docker_release(&d);
		fail("version", &err);
		strbuf_release(&err);
		return 1;
	}
	printf("api %s server %s host %s\n", d.api,
	       cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(v, "Version")), d.host);
	cJSON_Delete(v);
	docker_release(&d);
	strbuf_release(&err);
	return 0;
}

/* Read from `fd` until `needle` is in `sb` or `seconds` pass. */
static int read_until(int fd, struct strbuf *sb, const char *needle, double seconds)
{
	double deadline = clock_now() + seconds;

	while (!strstr(sb->buf, needle)) {
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		char buf[4096];
		ssize_t n;
		double left = deadline - clock_now();

		if (left <= 0 || poll(&pfd, 1, (int)(left * 1000) + 1) <= 0)
			return -1;
		n = read(fd, buf, sizeof(buf));
		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			continue;
		if (n <= 0)
			return -1;
		strbuf_add(sb, buf, (size_t)n);
	}
	return 0;
}

static int attach(const char *image)
{
	struct docker d;
	struct strbuf err = STRBUF_INIT, reply = STRBUF_INIT, path = STRBUF_INIT;
	cJSON *body, *created = NULL, *cmd, *hc;
	const char *id = NULL;
	char *p;
	int in = -1, wait_fd = -1, rc = 1;
	double t0 = clock_now();

	if (docker_init(&d, NULL, &err) < 0) {
		fail("init", &err);
		strbuf_release(&err);
		return 1;
	}
	body = cJSON_CreateObject();
	cJSON_AddStringToObject(body, "Image", image);
	cmd = cJSON_AddArrayToObject(body, "Entrypoint");
	cJSON_AddItemToArray(cmd, cJSON_CreateString("sh"));
	cJSON_AddItemToArray(cmd, cJSON_CreateString("-c"));
	cJSON_AddItemToArray(cmd, cJSON_CreateString("read x; exit $((${#x} + 3))"));
	cJSON_AddBoolToObject(body, "OpenStdin", 1);
	cJSON_AddBoolToObject(body, "StdinOnce", 1);
	cJSON_AddBoolToObject(body, "AttachStdin", 1);
	hc = cJSON_AddObjectToObject(body, "HostConfig");
	cJSON_AddStringToObject(hc, "NetworkMode", "none");
	if (docker_call(&d, "POST", "/containers/create", body, &created, &err) != 201 ||
	    !(id = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(created, "Id")))) {
		fail("create", &err);
		goto out;
	}
	in = docker_attach(&d, id, 0, &err);
	if (in < 0) {
		fail("attach", &err);
		goto remove;
	}
	p = xasprintf("/containers/%s/wait?condition=next-exit", id);
	wait_fd = docker_send_raw(&d, "POST", p, &err);
	free(p);
	if (wait_fd < 0) {
		fail("wait", &err);
		goto remove;
	}
	/* The wait's head says it is registered: only then may the container start and exit
	   (over ssh the request is still on its way when docker_send_raw() returns). */
	if (read_until(wait_fd, &reply, "\r\n\r\n", 30) < 0) {
		printf("error: no head on the wait connection: '%s'\n", reply.buf);
		goto remove;
	}
	strbuf_addf(&path, "/containers/%s/start", id);
	if (docker_call(&d, "POST", path.buf, NULL, NULL, &err) != 204) {
		fail("start", &err);
		goto remove;
	}
	if (fsutil_write_all(in, "abcd\n", 5) < 0) {
		printf("error: write to the attach connection: %s\n", strerror(errno));
		goto remove;
	}
	if (read_until(wait_fd, &reply, "StatusCode", 60) < 0 ||
	    read_until(wait_fd, &reply, "}", 5) < 0) {
		printf("error: no answer on the wait connection after %.1f s: '%s'\n",
		       clock_now() - t0, reply.buf);
		goto remove;
	}
	p = strstr(reply.buf, "\"StatusCode\":");
	printf("exit %ld\n", p ? strtol(p + 13, NULL, 10) : -1L);
	rc = 0;
remove:
	strbuf_reset(&path);
	strbuf_addf(&path, "/containers/%s?force=1", id);
	docker_call(&d, "DELETE", path.buf, NULL, NULL, &err);
out:
	if (in >= 0)
		close(in);
	if (wait_fd >= 0)
		close(wait_fd);
	cJSON_Delete(body);
	cJSON_Delete(created);
	docker_release(&d);
	/* Every child of the client (ssh's) is gone and reaped once it is released. */
	errno = 0;
	printf("children: %s\n", waitpid(-1, NULL, WNOHANG) < 0 && errno == ECHILD ? "none" :
	       "left");
	strbuf_release(&err);
	strbuf_release(&reply);
	strbuf_release(&path);
	return rc;
}

static int bind_path(const char *src, const char *image)
{
	struct docker d;
	struct strbuf err = STRBUF_INIT, path = STRBUF_INIT;
	cJSON *body, *created = NULL, *hc, *mounts, *m, *cmd;
	const char *id = NULL;
	long st;

	if (docker_init(&d, NULL, &err) < 0) {
		fail("init", &err);
		strbuf_release(&err);
		return 1;
	}
	body = cJSON_CreateObject();
	cJSON_AddStringToObject(body, "Image", image);
	cmd = cJSON_AddArrayToObject(body, "Entrypoint");
	cJSON_AddItemToArray(cmd, cJSON_CreateString("true"));
	hc = cJSON_AddObjectToObject(body, "HostConfig");
	cJSON_AddStringToObject(hc, "NetworkMode", "none");
	/* Mounts, not Binds: a missing source of Binds is made (on the engine's side). */
	mounts = cJSON_AddArrayToObject(hc, "Mounts");
	m = cJSON_CreateObject();
	cJSON_AddStringToObject(m, "Type", "bind");
	cJSON_AddStringToObject(m, "Source", src);
	cJSON_AddStringToObject(m, "Target", "/mnt");
	cJSON_AddBoolToObject(m, "ReadOnly", 1);
	cJSON_AddItemToArray(mounts, m);
	st = docker_call(&d, "POST", "/containers/create", body, &created, &err);
	id = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(created, "Id"));
	if (st == 201 && id) {
		strbuf_addf(&path, "/containers/%s/start", id);
		st = docker_call(&d, "POST", path.buf, NULL, NULL, &err);
	}
	if (st == 204)
		printf("started\n");
	else
		printf("refused: %s\n", err.buf);
	if (id) {
		strbuf_reset(&path);
		strbuf_addf(&path, "/containers/%s?force=1", id);
		docker_call(&d, "DELETE", path.buf, NULL, NULL, &err);
	}
	cJSON_Delete(body);
	cJSON_Delete(created);
	docker_release(&d);
	strbuf_release(&err);
	strbuf_release(&path);
	return 0;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

#define PING "GET /_ping HTTP/1.1\r\nHost: docker\r\n\r\n"

/* One round trip on `fd`: the request out, the answer's "OK" body in. */
static int round_trip(int fd)
{
	struct strbuf sb = STRBUF_INIT;
	int rc = fsutil_write_all(fd, PING, strlen(PING)) < 0 ? -1 :
		 read_until(fd, &sb, "\r\n\r\nOK", 10);
	strbuf_release(&sb);
	return rc;
}

/* The same on a CONNECT_ONLY handle in this thread. */
static int round_trip_direct(CURL *c, curl_socket_t s)
{
	char buf[4096];
	size_t n, got = 0, sent = 0;
	struct pollfd pfd = { .fd = s, .events = POLLIN };

	while (sent < strlen(PING)) {
		CURLcode rc = curl_easy_send(c, &PING[sent], strlen(PING) - sent, &n);
		if (rc == CURLE_AGAIN)
			continue;
		if (rc != CURLE_OK)
			return -1;
		sent += n;
	}
	for (;;) {
		CURLcode rc = curl_easy_recv(c, buf + got, sizeof(buf) - 1 - got, &n);
		if (rc == CURLE_AGAIN) {
			if (poll(&pfd, 1, 10000) <= 0)
				return -1;
			continue;
		}
		if (rc != CURLE_OK || !n)
			return -1;
		got += n;
		buf[got] = '\0';
		if (strstr(buf, "\r\n\r\nOK"))
			return 0;
	}
}

static int bench(int n, int direct)
{
	struct docker d;
	struct strbuf err = STRBUF_INIT;
	double *t;
	CURL *c = NULL;
	curl_socket_t s = CURL_SOCKET_BAD;
	int fd = -1, rc = 1;

	if (docker_init(&d, NULL, &err) < 0) {
		fail("init", &err);
		strbuf_release(&err);
		return 1;
	}
	t = xcalloc((size_t)n, sizeof(double));
	if (direct) {
		char *url = xasprintf("https://%s:%s/", d.ep->name, d.ep->port);
		c = curl_easy_init();
		curl_easy_setopt(c, CURLOPT_URL, url);
		curl_easy_setopt(c, CURLOPT_CONNECT_ONLY, 1L);
		docker_tls_options(c, d.ep);
		free(url);
		if (curl_easy_perform(c) != CURLE_OK ||
		    curl_easy_getinfo(c, CURLINFO_ACTIVESOCKET, &s) != CURLE_OK) {
			printf("error: direct TLS connection failed\n");
			goto out;
		}
	} else if ((fd = docker_dial_err(&d, &err)) < 0) {
		fail("dial", &err);
		goto out;
	}
	for (int i = 0; i < n; i++) {
		double t0 = clock_now();
		if ((direct ? round_trip_direct(c, s) : round_trip(fd)) < 0) {
			printf("error: round trip %d failed\n", i);
			goto out;
		}
		t[i] = (clock_now() - t0) * 1e6;
	}
	qsort(t, (size_t)n, sizeof(double), cmp);
	printf("median_us %.0f p90_us %.0f\n", t[n / 2], t[n * 9 / 10]);
	rc = 0;
out:
	if (fd >= 0)
		close(fd);
	if (c)
		curl_easy_cleanup(c);
	free(t);
	docker_release(&d);
	strbuf_release(&err);
	return rc;
}

int main(int argc, char **argv)
{
	int rc = 2;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc == 2 && !strcmp(argv[1], "ping"))
		rc = ping();
	else if (argc == 3 && !strcmp(argv[1], "attach"))
		rc = attach(argv[2]);
	else if (argc == 4 && !strcmp(argv[1], "bind"))
		rc = bind_path(argv[2], argv[3]);
	else if (argc == 3 && !strcmp(argv[1], "bench"))
		rc = bench(atoi(argv[2]) > 0 ? atoi(argv[2]) : 100, 0);
	else if (argc == 3 && !strcmp(argv[1], "bench-direct"))
		rc = bench(atoi(argv[2]) > 0 ? atoi(argv[2]) : 100, 1);
	else
		fprintf(stderr, "usage: remote_client ping | attach IMAGE | bind PATH IMAGE | "
			"bench N | bench-direct N\n");
	return rc;
}
