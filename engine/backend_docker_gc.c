/*
 * The docker family's containers that outlive their process: the labels that name the owner,
 * and the removal of the containers whose cellbox process is gone (backend_gc, the sweep).
 */
#include "backend.h"
#include "backend_docker_int.h"
#include "channel.h"
#include "docker.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* The start time of process `pid` in clock ticks since boot, 0 when unknown. */
static unsigned long long process_start(long pid)
{
	struct strbuf sb = STRBUF_INIT;
	char path[64];
	unsigned long long start = 0;
	const char *p;

	snprintf(path, sizeof(path), "/proc/%ld/stat", pid);
	if (strbuf_read_file(&sb, path, 4096) == 0 && (p = strrchr(sb.buf, ')'))) {
		/* Field 22 (starttime); p is at the end of field 2. */
		for (int field = 2; field < 22 && p; field++)
			p = strchr(p + 1, ' ');
		if (p)
			start = strtoull(p + 1, NULL, 10);
	}
	strbuf_release(&sb);
	return start;
}

/* Add the labels that tie a container to this process (pid, its start time, the host). */
void backend_docker_owner_labels(cJSON *labels)
{
	char buf[64], host[256] = "";

	snprintf(buf, sizeof(buf), "%ld", (long)getpid());
	cJSON_AddStringToObject(labels, LABEL_PID, buf);
	snprintf(buf, sizeof(buf), "%llu", process_start(getpid()));
	cJSON_AddStringToObject(labels, LABEL_START, buf);
	gethostname(host, sizeof(host) - 1);
	cJSON_AddStringToObject(labels, LABEL_HOST, host);
}

static int collect(const char *engine, const char *host, const char *root, int tries,
		   struct strbuf *out, struct strbuf *err);

/* Remove the containers of dead cellbox processes, once per process. */
void backend_docker_sweep_once(struct backend_docker *db)
{
	static int swept;
	struct strbuf err = STRBUF_INIT;

	if (swept)
		return;
	swept = 1;
	/* A session's start: one try each; the channels are its own sweep's (session_kernel.c). */
	collect(db->engine, db->d.host, NULL, 1, NULL, &err);
	strbuf_release(&err);
}

/*
 * Remove container `id` for good: the engine may refuse while it is busy with it (a kill
 * it has not seen end, a removal in progress), so it is asked up to `tries` times, 250 ms
 * apart. 0 when it is gone, -1 with `err` saying what the engine said last.
 */
static int remove_container_surely(struct docker *d, const char *id, int tries,
				   struct strbuf *err)
{
	char *path = xasprintf("/containers/%s?force=1&v=1", id);
	long status = 0;

	for (int n = 0; n < tries; n++) {
		if (n)
			nanosleep(&(struct timespec){ .tv_nsec = 250 * 1000 * 1000 }, NULL);
		strbuf_reset(err);
		status = docker_call(d, "DELETE", path, NULL, NULL, err);
		if (status == 204 || status == 404)
			break;
	}
	free(path);
	return status == 204 || status == 404 ? 0 : -1;
}

/* Remove container `id` (killing it first); errors are ignored. */
void backend_docker_remove_container(struct docker *d, const char *id)
{
	struct strbuf err = STRBUF_INIT;

	remove_container_surely(d, id, 1, &err);
	strbuf_release(&err);
}

/* Whether container `id` runs: 1, 0 (stopped or gone), -1 when the engine cannot say. */
int backend_docker_container_running(const char *engine, const char *host, const char *id)
{
	struct docker d;
	struct strbuf err = STRBUF_INIT;
	char *path = xasprintf("/containers/%s/json", id);
	cJSON *reply = NULL;
	int running = -1;

	if (backend_docker_connect(&d, engine, host, &err) == 0) {
		long status = docker_call(&d, "GET", path, NULL, &reply, &err);
		if (status == 200)
			running = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(
				cJSON_GetObjectItemCaseSensitive(reply, "State"), "Running"));
		else if (status == 404)
			running = 0;
		docker_release(&d);
	}
	cJSON_Delete(reply);
	strbuf_release(&err);
	free(path);
	return running;
}

/* Whether the cellbox process of a container's labels is still running. */
static int owner_alive(const cJSON *labels, const char *host)
{
	const char *pid_s = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(labels, LABEL_PID));
	const char *start_s = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(labels,
										     LABEL_START));
	const char *h = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(labels, LABEL_HOST));
	long pid;

	if (!pid_s || !*pid_s || !h || strcmp(h, host))
		return 1;	/* another machine's, or labels an image left empty: not ours */
	pid = strtol(pid_s, NULL, 10);
	if (pid <= 0 || (kill((pid_t)pid, 0) < 0 && errno == ESRCH))
		return 0;
	/* The pid may have been reused by another process since. */
	if (start_s && strtoull(start_s, NULL, 10) != process_start(pid))
		return 0;
	return 1;
}

/*
 * Remove the containers of cellbox processes that are gone, each asked `tries` times, and
 * the channels their labels name below `root` (NULL: none).
 */
static int collect(const char *engine, const char *host, const char *root, int tries,
		   struct strbuf *out, struct strbuf *err)
{
	struct docker d;
	struct strbuf path = STRBUF_INIT, why = STRBUF_INIT;
	cJSON *list = NULL, *c;
	char hostname[256] = "";
	int removed = 0, failed = 0;
	long status;

	if (backend_docker_connect(&d, engine, host, err) < 0)
		return -1;
	gethostname(hostname, sizeof(hostname) - 1);
	strbuf_addstr(&path, "/containers/json?all=1&filters=");
	docker_urlencode(&path, "{\"label\":[\"" LABEL_PID "\"]}");
	status = docker_call(&d, "GET", path.buf, NULL, &list, err);
	if (status != 200) {
		removed = -1;
		goto out;
	}
	cJSON_ArrayForEach(c, list) {
		const cJSON *labels = cJSON_GetObjectItemCaseSensitive(c, "Labels");
		const char *id = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(c, "Id"));
		const char *ch = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(labels,
										       LABEL_CHANNEL));
		const char *pid = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(labels,
											LABEL_PID));

		if (!id || owner_alive(labels, hostname))
			continue;
		/*
		 * Handed over to another process of ours (channel_keep: a detached session's host),
		 * in whichever runtime directory: every process's first container sweeps (root
		 * NULL), and must not end another's detached session. A label that names a keeper
		 * note falsely only keeps a container (channel_kept reads a regular file of ours).
		 */
		if (ch && ch[0] == '/' && channel_kept(ch))
			continue;
		if (remove_container_surely(&d, id, tries, &why) < 0) {
			strbuf_addf(err, "%scannot remove container %.12s: %s", err->len ? "; " : "",
				    id, why.buf);
			failed = 1;
			continue;
		}
		removed++;
		if (out)
			strbuf_addf(out, "removed container %.12s of process %s (channel %s)\n", id,
				    pid ? pid : "?", ch ? ch : "?");
		/*
		 * The dead process's channel, when it is still where the label says and that is
		 * one of ours: anyone who may make a container (or an image's own labels) can
		 * write a label, so it names a path to check, never one to trust.
		 */
		if (ch && pid)
			channel_remove_labelled(root, ch, strtol(pid, NULL, 10));
	}
	if (failed)
		removed = -1;
out:
	cJSON_Delete(list);
	strbuf_release(&path);
	strbuf_release(&why);
	docker_release(&d);
	return removed;
}

/* backend_gc: patient (up to 10 s for a container the engine is busy with). */
int backend_docker_gc_dead(const char *engine, const char *host, const char *runtime_dir,
			   struct strbuf *out, struct strbuf *err)
{
	return collect(engine, host, runtime_dir, 40, out, err);
}
