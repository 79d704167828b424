/*
 * The docker backend against llm-sandbox's way of talking to a container, in one run on the
 * same engine and image:
 *
 *   cellbox      a docker session: the warm round trip of `pass` through the bind-mounted
 *                channel (session_execute .. done), and cold start (create -> ready), with
 *                the wall in place (results read through descriptors, plots checked, the
 *                quota counted). Three rows: runc woken by inotify (the default), runc woken
 *                by a byte on stdin (the wake-up gVisor needs, under the runtime name
 *                io.containerd.runc.v2, which is runc too), and runsc (gVisor); then runc
 *                and runsc with the channel over the relay's stream (--channel stream: one
 *                attach connection, no shared directory).
 *   llm-sandbox  a re-creation of its per-cell calls (InteractiveSandboxSession over the
 *                Python SDK): put_archive of the command file, `exec test -f` of the result
 *                every 100 ms (poll_interval), get_archive of the result, `exec rm`. The
 *                container runs a small IPython watcher that polls its queue every 5 ms, so
 *                the time measured is the protocol's, not the watcher's.
 *
 * Usage: bench_docker [N]   (N round trips of each; default 30)
 *        bench_docker --anchor N   only the anchor, as one JSON line (bench/mcp.py)
 * A runtime dockerd does not know is left out of the table, with a note.
 * For podman: CELLBOX_BENCH_BACKEND=podman DOCKER_HOST=unix:///run/podman/podman.sock
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "docker.h"
#include "session.h"
#include "stats.h"
#include "util.h"

#define POLL_INTERVAL_NS 100000000L	/* llm-sandbox's poll_interval = 0.1 */
#define QUEUE "/home/cellbox/q"

static const char watcher[] =
	"import json, os, time\n"
	"from IPython.core.interactiveshell import InteractiveShell\n"
	"shell = InteractiveShell.instance()\n"
	"q = '" QUEUE "'\n"
	"os.makedirs(q, exist_ok=True)\n"
	"while True:\n"
	"    names = [n for n in os.listdir(q) if n.startswith('cmd') and n.endswith('.json')]\n"
	"    for n in names:\n"
	"        p = os.path.join(q, n)\n"
	"        try:\n"
	"            cmd = json.load(open(p))\n"
	"        except ValueError:\n"
	"            continue  # put_archive is still writing it\n"
	"        r = shell.run_cell(cmd['code'], store_history=False)\n"
	"        out = os.path.join(q, 'result' + n[3:])\n"
	"        with open(out + '.tmp', 'w') as f:\n"
	"            json.dump({'ok': r.success}, f)\n"
	"        os.rename(out + '.tmp', out)\n"
	"        os.unlink(p)\n"
	"    time.sleep(0.005)\n";

/* Sort and return the median. */
static double median(double *t, int n)
{
	stats_sort(t, n);
	return n % 2 ? t[n / 2] : (t[n / 2 - 1] + t[n / 2]) / 2;
}

/* Die with a message. */
/* The anchor's running container and its engine, for fail() to remove (it has no labels). */
static struct docker *anchor_engine;
static char *anchor_id;

static void __attribute__((noreturn)) fail(const char *what, const char *why)
{
	fprintf(stderr, "bench_docker: %s: %s\n", what, why);
	if (anchor_id) {
		char *rm = xasprintf("/containers/%s?force=1", anchor_id);
		struct strbuf ignored = STRBUF_INIT;

		anchor_id = NULL;	/* a failure in here does not come back */
		docker_call(anchor_engine, "DELETE", rm, NULL, NULL, &ignored);
	}
	exit(1);
}

/* A one-file ustar archive of `name` with `data`. */
static void tar_one(struct strbuf *tar, const char *name, const char *data, size_t len)
{
	char h[512];
	unsigned sum = 0;
	size_t pad = (512 - len % 512) % 512;

	memset(h, 0, sizeof(h));
	snprintf(h, 100, "%s", name);
	snprintf(h + 100, 8, "%07o", 0644);
	snprintf(h + 108, 8, "%07o", 1000);
	snprintf(h + 116, 8, "%07o", 1000);
	snprintf(h + 124, 12, "%011zo", len);
	snprintf(h + 136, 12, "%011lo", (unsigned long)time(NULL));
	memset(h + 148, ' ', 8);
	h[156] = '0';
	memcpy(h + 257, "ustar", 6);
	memcpy(h + 263, "00", 2);
	for (size_t i = 0; i < sizeof(h); i++)
		sum += (unsigned char)h[i];
	snprintf(h + 148, 8, "%06o", sum);
	strbuf_add(tar, h, sizeof(h));
	strbuf_add(tar, data, len);
	for (size_t i = 0; i < pad + 1024; i++)
		strbuf_addch(tar, 0);
}

/* Run a command in the container the way docker-py's exec_run does; returns its exit code. */
static int exec_run(struct docker *d, const char *id, const char *const *argv)
{
	struct strbuf err = STRBUF_INIT, path = STRBUF_INIT, out = STRBUF_INIT;
	cJSON *body = cJSON_CreateObject(), *cmd, *reply = NULL;
	char *exec_id;
	int code;

	cJSON_AddBoolToObject(body, "AttachStdout", 1);
	cJSON_AddBoolToObject(body, "AttachStderr", 1);
	cmd = cJSON_AddArrayToObject(body, "Cmd");
	for (; *argv; argv++)
		cJSON_AddItemToArray(cmd, cJSON_CreateString(*argv));
	strbuf_addf(&path, "/containers/%s/exec", id);
	if (docker_call(d, "POST", path.buf, body, &reply, &err) != 201)
		fail("exec create", err.buf);
	exec_id = xstrdup(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(reply, "Id")));
	cJSON_Delete(reply);
	cJSON_Delete(body);
	strbuf_reset(&path);
	strbuf_addf(&path, "/exec/%s/start", exec_id);
	if (docker_request(d, "POST", path.buf, "application/json",
			   "{\"Detach\":false,\"Tty\":false}", 29, &out, &err) != 200)
		fail("exec start", err.buf);
	strbuf_reset(&path);
	strbuf_addf(&path, "/exec/%s/json", exec_id);
	if (docker_call(d, "GET", path.buf, NULL, &reply, &err) != 200)
		fail("exec inspect", err.buf);
	code = (int)cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(reply, "ExitCode"));
	cJSON_Delete(reply);
	free(exec_id);
	strbuf_release(&err);
	strbuf_release(&path);
	strbuf_release(&out);
	return code;
}

/* One cell the llm-sandbox way; returns milliseconds. */
static double anchor_cell(struct docker *d, const char *id, int n)
{
	struct strbuf tar = STRBUF_INIT, err = STRBUF_INIT, path = STRBUF_INIT, got = STRBUF_INIT;
	char name[64], result[128];
	const char *test[] = { "test", "-f", result, NULL };
	const char *rm[] = { "rm", "-f", result, NULL };
	double t0 = clock_now();

	snprintf(name, sizeof(name), "cmd%06d.json", n);
	snprintf(result, sizeof(result), QUEUE "/result%06d.json", n);
	tar_one(&tar, name, "{\"code\": \"pass\"}", 16);
	strbuf_addf(&path, "/containers/%s/archive?path=" QUEUE, id);
	{
		long status = docker_request(d, "PUT", path.buf, "application/x-tar", tar.buf,
					     tar.len, NULL, &err);
		if (status != 200) {
			if (!err.len)
				strbuf_addf(&err, "HTTP status %ld (was the container removed?)",
					    status);
			fail("put_archive", err.buf);
		}
	}
	while (exec_run(d, id, test) != 0) {
		struct timespec ts = { 0, POLL_INTERVAL_NS };
		nanosleep(&ts, NULL);
	}
	strbuf_reset(&path);
	strbuf_addf(&path, "/containers/%s/archive?path=%s", id, result);
	if (docker_request(d, "GET", path.buf, NULL, NULL, 0, &got, &err) != 200 ||
	    !memmem(got.buf, got.len, "\"ok\": true", 10))
		fail("get_archive", err.len ? err.buf : "no result");
	exec_run(d, id, rm);
	strbuf_release(&tar);
	strbuf_release(&err);
	strbuf_release(&path);
	strbuf_release(&got);
	return (clock_now() - t0) * 1e3;
}

/* Start the anchor's container: same image, a writable root for the archive API. */
static char *anchor_start(struct docker *d, int podman)
{
	struct strbuf err = STRBUF_INIT;
	cJSON *body = cJSON_CreateObject(), *cmd, *hc, *reply = NULL;
	char *id, *path;
	const char *ready[] = { "test", "-d", QUEUE, NULL };

	cJSON_AddStringToObject(body, "Image", session_kernel_image());
	cmd = cJSON_AddArrayToObject(body, "Cmd");
	cJSON_AddItemToArray(cmd, cJSON_CreateString("python3"));
	cJSON_AddItemToArray(cmd, cJSON_CreateString("-c"));
	cJSON_AddItemToArray(cmd, cJSON_CreateString(watcher));
	cJSON_AddItemToObject(body, "Labels", cJSON_CreateObject());
	hc = cJSON_AddObjectToObject(body, "HostConfig");
	cJSON_AddStringToObject(hc, "NetworkMode", "none");
	if (podman) {	/* see add_podman_ulimits() in engine/backend_docker.c */
		cJSON *u = cJSON_AddArrayToObject(hc, "Ulimits");
		cJSON_AddItemToArray(u, cJSON_Parse("{\"Name\":\"nofile\",\"Soft\":1024,\"Hard\":1024}"));
		cJSON_AddItemToArray(u, cJSON_Parse("{\"Name\":\"nproc\",\"Soft\":4096,\"Hard\":4096}"));
	}
	cJSON_AddNumberToObject(hc, "Memory", 1 << 30);
	if (docker_call(d, "POST", "/containers/create", body, &reply, &err) != 201)
		fail("create", err.buf);
	id = xstrdup(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(reply, "Id")));
	path = xasprintf("/containers/%s/start", id);
	if (docker_call(d, "POST", path, NULL, NULL, &err) != 204) {
		char *rm = xasprintf("/containers/%s?force=1", id);
		struct strbuf ignored = STRBUF_INIT;

		docker_call(d, "DELETE", rm, NULL, NULL, &ignored);
		fail("start", err.buf);
	}
	anchor_engine = d;
	anchor_id = id;
	while (exec_run(d, id, ready) != 0) {
		struct timespec ts = { 0, 50000000 };
		nanosleep(&ts, NULL);
	}
	free(path);
	cJSON_Delete(body);
	cJSON_Delete(reply);
	strbuf_release(&err);
	return id;
}

/* The anchor's container, two cells to warm it, `n` timed into `t`, and it removed. */
static void anchor_run(struct docker *d, int podman, int n, double *t)
{
	struct strbuf err = STRBUF_INIT;
	char *id = anchor_start(d, podman), *path;

	for (int i = -2; i < n; i++) {
		double ms = anchor_cell(d, id, i + 2);
		if (i >= 0)
			t[i] = ms;
	}
	path = xasprintf("/containers/%s?force=1", id);
	anchor_id = NULL;
	docker_call(d, "DELETE", path, NULL, NULL, &err);
	free(path);
	free(id);
	strbuf_release(&err);
}

/* The anchor alone: its median as {"anchor_median_ms": ..., "n": N}. */
static int anchor_only(int n)
{
	struct strbuf err = STRBUF_INIT;
	double *t = xcalloc((size_t)n, sizeof(double));
	const char *be = getenv("CELLBOX_BENCH_BACKEND");
	struct docker d;

	if (docker_init(&d, NULL, &err) < 0)
		fail("docker", err.buf);
	anchor_run(&d, be && !strcmp(be, "podman"), n, t);
	printf("{\"anchor_median_ms\": %.3f, \"n\": %d}\n", median(t, n), n);
	free(t);
	docker_release(&d);
	strbuf_release(&err);
	return 0;
}

/* What one kind of session measured. */
struct row {
	const char *label;
	const char *runtime;	/* NULL: the engine's default (runc) */
	const char *channel;	/* NULL: auto (shared on a unix socket); "stream": the relay */
	double warm, p90, cold;
	int ok;
};

/* The p-th fraction of sorted `t`. */
static double quantile(const double *t, int n, double q)
{
	int i = (int)(q * (n - 1) + 0.5);
	return t[i < 0 ? 0 : i >= n ? n - 1 : i];
}

/* Cold starts and warm round trips of `pass` in sessions of one runtime. */
static void measure(const char *backend, struct row *r, int n, int warm)
{
	double *ours = xcalloc((size_t)n, sizeof(double)), cold[5];
	struct session_opts so = { 0 };
	struct strbuf err = STRBUF_INIT;
	struct session *s = NULL;

	so.backend = backend;
	so.sandbox.runtime = r->runtime;
	so.sandbox.channel = r->channel;
	/* Cold start: session_open() returns once the runner wrote `ready`. */
	for (int i = 0; i < 5; i++) {
		double t0 = clock_now();
		s = session_open(&so, &err);
		if (!s) {
			fprintf(stderr, "bench_docker: %s: %s\n", r->label, err.buf);
			goto out;
		}
		cold[i] = (clock_now() - t0) * 1e3;
		if (i < 4)
			session_close(s);
	}
	for (int i = -warm; i < n; i++) {
		double t0 = clock_now();
		unsigned long rid = session_execute(s, "pass", 0, 0, NULL, NULL, &err);
		if (!rid)
			fail("execute", err.buf);
		while (session_wait(s, rid) < 0)
			;
		if (i >= 0)
			ours[i] = (clock_now() - t0) * 1e3;
	}
	session_close(s);
	r->warm = median(ours, n);
	r->p90 = quantile(ours, n, 0.9);
	r->cold = median(cold, 5);
	r->ok = 1;
out:
	strbuf_release(&err);
	free(ours);
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 30, warm = 5;
	double *theirs;
	struct row rows[] = {
		{ .label = "cellbox, runc, woken by inotify (the default)" },
		{ .label = "cellbox, runc, woken by a byte on stdin",
		  .runtime = "io.containerd.runc.v2" },
		{ .label = "cellbox, runsc (gVisor), woken by a byte on stdin", .runtime = "runsc" },
		{ .label = "cellbox, runc, channel over the relay's stream", .channel = "stream" },
		{ .label = "cellbox, runsc (gVisor), channel over the relay's stream",
		  .runtime = "runsc", .channel = "stream" },
	};
	struct strbuf err = STRBUF_INIT;
	const char *backend;
	struct docker d;

	if (argc > 2 && !strcmp(argv[1], "--anchor"))
		return anchor_only(atoi(argv[2]) > 0 ? atoi(argv[2]) : 1);
	if (n < 1)
		n = 1;
	theirs = xcalloc((size_t)n, sizeof(double));
	backend = getenv("CELLBOX_BENCH_BACKEND");	/* podman: with DOCKER_HOST at its socket */
	if (!backend)
		backend = "docker";
	if (docker_init(&d, NULL, &err) < 0)
		fail("docker", err.buf);
	for (size_t i = 0; i < ARRAY_SIZE(rows); i++)
		measure(backend, &rows[i], n, warm);

	anchor_run(&d, !strcmp(backend, "podman"), n, theirs);

	printf("warm round trip of `pass` on %s (%s, engine API %s), median (p90) of %d:\n",
	       backend, session_kernel_image(), d.api, n);
	{
		double a = median(theirs, n);

		printf("  %-52s %9.3f ms\n", "llm-sandbox protocol (put_archive, exec test -f / 100 ms, "
		       "get_archive, exec rm)", a);
		for (size_t i = 0; i < ARRAY_SIZE(rows); i++) {
			if (!rows[i].ok) {
				printf("  %-52s (not measured: see above)\n", rows[i].label);
				continue;
			}
			printf("  %-52s %9.3f ms (%.3f)  %5.0fx faster\n", rows[i].label, rows[i].warm,
			       rows[i].p90, a / rows[i].warm);
		}
	}
	printf("cold start, create -> ready, median of 5:\n");
	for (size_t i = 0; i < ARRAY_SIZE(rows); i++)
		if (rows[i].ok)
			printf("  %-52s %9.1f ms\n", rows[i].label, rows[i].cold);
	docker_release(&d);
	strbuf_release(&err);
	free(theirs);
	return 0;
}
