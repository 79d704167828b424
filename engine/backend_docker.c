/*
 * The docker and podman backends: the runner as a container's command, over the Engine API.
 * This room is the running container; its connections are backend_docker_conn.c, how it is
 * made backend_docker_create.c, the collection of dead processes' containers
 * backend_docker_gc.c (backend_docker_int.h).
 */
#include "backend.h"
#include "backend_docker_int.h"
#include "docker.h"
#include "numconv.h"
#include "usage.h"
#include "wall.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* The docker backend that `be` is. */
static struct backend_docker *docker_of(struct backend *be)
{
	return (struct backend_docker *)be;
}

/* Wake the runner: a byte on the container's stdin, when it is woken so. */
static void docker_wake(struct backend *be)
{
	struct backend_docker *db = docker_of(be);

	if (db->st) {
		backend_docker_stream_wake(db);
		return;
	}
	if (db->watch_only)
		return;		/* (a relay's stdin: one host end writes, its own) */
	/*
	 * A full socket means wake-ups are already waiting: one more is not needed. Other
	 * errors are the engine's, and the wait connection says how the container ended.
	 */
	if (db->stdin_fd >= 0) {
		ssize_t n = write(db->stdin_fd, "w", 1);
		(void)n;
	}
}

/* Create the container ahead of its start (backend prepare()). */
static int docker_prepare(struct backend *be, const struct kernel_spec *spec, struct strbuf *err)
{
	return backend_docker_create_container(docker_of(be), spec, err);
}

/* Start the container (created first unless prepared), wait on it, name it in the channel. */
static int docker_start(struct backend *be, const struct kernel_spec *spec, struct strbuf *err)
{
	struct backend_docker *db = docker_of(be);
	struct strbuf msg = STRBUF_INIT;
	char *path = NULL;
	long status;
	int rc = -1;

	if (!db->created && backend_docker_create_container(db, spec, err) < 0)
		return -1;
	db->created = 0;
	path = xasprintf("/containers/%s/start", db->id);
	status = docker_call(&db->d, "POST", path, NULL, NULL, &msg);
	if (status != 204 && status != 304) {
		strbuf_addf(err, "cannot start the container: %s", msg.buf);
		goto out;
	}
	if (backend_docker_open_wait(db, err) < 0)
		goto out;
	if (db->stream && backend_docker_stream_begin(db, spec->channel_dir, 0, err) < 0)
		goto out;
	backend_docker_notes_write(db, spec);
	rc = 0;
out:
	if (rc < 0)
		backend_docker_discard(db);
	strbuf_release(&msg);
	free(path);
	return rc;
}

/* The wait connection, readable when the container stops. */
static int docker_exit_fd(struct backend *be)
{
	return docker_of(be)->wait_fd;
}

/* Why the container stopped, from its state. */
static enum reason describe_exit(struct backend_docker *db, struct strbuf *why)
{
	enum reason reason = REASON_KERNEL_DIED;
	struct strbuf err = STRBUF_INIT;
	char *path = xasprintf("/containers/%s/json", db->id);
	cJSON *reply = NULL, *state;
	long status;
	long long n;
	int code, oom;

	/*
	 * Where the engine may learn of an OOM kill late or never (oom_unsure), a SIGKILL is asked
	 * about again a few times, 100 ms apart, before it is called a plain SIGKILL.
	 */
	for (int tries = 0;; tries++) {
		cJSON_Delete(reply);
		reply = NULL;
		strbuf_reset(&err);
		status = docker_call(&db->d, "GET", path, NULL, &reply, &err);
		state = cJSON_GetObjectItemCaseSensitive(reply, "State");
		if (status != 200 || !state) {
			strbuf_addf(why, "kernel lost (the container is gone: %s)", err.buf);
			reason = REASON_CHANNEL_LOST;
			goto out;
		}
		if (!json_integer(cJSON_GetObjectItemCaseSensitive(state, "ExitCode"), INT_MIN,
				  INT_MAX, &n))
			n = -1;
		code = (int)n;
		oom = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(state, "OOMKilled"));
		if (oom || code != 128 + SIGKILL || !db->oom_unsure || tries == 3)
			break;
		nanosleep(&(struct timespec){ .tv_nsec = 100 * 1000 * 1000 }, NULL);
	}
	if (oom) {
		reason = REASON_OOM_KILLED;
		strbuf_addstr(why, "kernel killed: out of memory (limit ");
		wall_describe_size(why, db->memory);
		strbuf_addch(why, ')');
	} else {
		/* The init (tini) reports a death by signal as 128 + the signal. */
		int ws = backend_init_status((code & 0xff) << 8);
		const char *e = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(state, "Error"));
		struct strbuf note = STRBUF_INIT;

		/*
		 * Podman on cgroup v1 does not report OOM kills, nor always dockerd under gVisor:
		 * say what it may have been.
		 */
		if (WIFSIGNALED(ws) && WTERMSIG(ws) == SIGKILL && db->oom_unsure) {
			strbuf_addstr(&note, "out of memory? the limit is ");
			wall_describe_size(&note, db->memory);
		}
		backend_describe_status(ws, note.buf, why);
		if (WIFEXITED(ws) && e && *e)
			strbuf_addf(why, ": %s", e);
		strbuf_release(&note);
	}
out:
	cJSON_Delete(reply);
	strbuf_release(&err);
	free(path);
	return reason;
}

/* Read the wait connection: 0 while the container runs, else 1 (it is removed; `why` says how). */
static int docker_reap(struct backend *be, enum reason *reason, struct strbuf *why)
{
	struct backend_docker *db = docker_of(be);
	int ended = 0, broke;

	*reason = REASON_KERNEL_DIED;
	if (!db->id)
		return 1;
	for (;;) {
		char buf[1024];
		ssize_t n = read(db->wait_fd, buf, sizeof(buf));

		if (n > 0) {
			if (db->wait_reply.len < 65536)
				strbuf_add(&db->wait_reply, buf, (size_t)n);
			continue;
		}
		if (n == 0 || (errno != EAGAIN && errno != EINTR))
			ended = 1;
		if (n < 0 && errno == EINTR)
			continue;
		break;
	}
	if (!ended && !strstr(db->wait_reply.buf, "StatusCode"))
		return 0;
	/* Over a stream, the container's last bytes are read before it is said to be gone. */
	if (db->st && (broke = backend_docker_stream_settle(db, 2, why))) {
		*reason = broke == 2 ? REASON_QUOTA_EXCEEDED : REASON_CHANNEL_LOST;
		backend_docker_discard(db);
		return 1;
	}
	*reason = describe_exit(db, why);
	backend_docker_discard(db);
	return 1;
}

/* Send signal `sig` to the container through the API. */
static int docker_signal(struct backend *be, int sig)
{
	struct backend_docker *db = docker_of(be);
	struct strbuf err = STRBUF_INIT;
	const char *abbrev = sigabbrev_np(sig);
	char *path;
	long status;

	if (!db->id || !abbrev)
		return -1;
	path = xasprintf("/containers/%s/kill?signal=SIG%s", db->id, abbrev);
	status = docker_call(&db->d, "POST", path, NULL, NULL, &err);
	free(path);
	strbuf_release(&err);
	return status == 204 ? 0 : -1;
}

/* Remove the container (killing it) and forget it. */
static void docker_kill(struct backend *be)
{
	backend_docker_discard(docker_of(be));
}

/* Let go of the container, which runs on. */
static void docker_detach(struct backend *be)
{
	backend_docker_forget(docker_of(be));	/* the container runs on; free() has nothing to kill */
}

static void cgroup_forget(struct backend_docker *db);

/* Kill the container, close the engine's connection, free the backend. */
static void docker_free(struct backend *be)
{
	struct backend_docker *db = docker_of(be);

	docker_kill(be);
	egress_proxy_stop(&db->egress);
	cgroup_forget(db);
	if (db->connected)
		docker_release(&db->d);
	strbuf_release(&db->wait_reply);
	free(db->engine);
	free(db);
}

/* A docker or podman backend without a container yet. */
static struct backend *docker_create(const char *engine)
{
	struct backend_docker *db = xcalloc(1, sizeof(*db));

	db->base.ops = &backend_docker_ops;
	db->engine = xstrdup(engine);
	db->wait_fd = -1;
	usage_cgroup_init(&db->cg);
	db->stdin_fd = -1;
	db->stream_fd = -1;
	strbuf_init(&db->wait_reply, 0);
	return &db->base;
}

/*
 * Take over the running container of the kernel in `k`'s channel (a pooled kernel; its id
 * is in the channel's BACKEND_CONTAINER_FILE). Death is seen through a wait connection
 * (exit_fd), reap() reads the container's real exit reason, signal() goes through the API,
 * kill() removes the container.
 */
static struct backend *docker_adopt(const char *engine, const struct kernel_handle *k,
				    struct strbuf *err)
{
	struct backend_docker *db;
	struct strbuf msg = STRBUF_INIT, idbuf = STRBUF_INIT, hostbuf = STRBUF_INIT;
	const char *host = backend_docker_engine_of(k, &hostbuf), *id;
	char *path = NULL;
	cJSON *reply = NULL;
	char api[16];
	long status;
	long long n;
	int rc = -1, facts;

	if (backend_docker_read_id(k, engine, &idbuf, err) < 0) {
		strbuf_release(&idbuf);
		return NULL;
	}
	id = idbuf.buf;
	db = docker_of(docker_create(engine));
	/* Its starter's facts (backend_docker_notes.c), else the engine's inspect of it. */
	facts = backend_docker_read_facts(k, db, api, sizeof(api)) == 0;
	if (backend_docker_connect_api(&db->d, engine, host, facts ? api : NULL, err) < 0)
		goto out;
	db->connected = 1;
	path = xasprintf("/containers/%s/json", id);
	if (facts)
		status = docker_status_raw(&db->d, "GET", path, &msg);
	else
		status = docker_call(&db->d, "GET", path, NULL, &reply, &msg);
	if (status != 200) {
		strbuf_addf(err, "no container %.12s in %s to adopt: %s", id, engine,
			    msg.len ? msg.buf : "it is not there");
		goto out;
	}
	if (reply) {
		const cJSON *hc = cJSON_GetObjectItemCaseSensitive(reply, "HostConfig");
		const cJSON *cfg = cJSON_GetObjectItemCaseSensitive(reply, "Config");

		db->memory = json_integer(cJSON_GetObjectItemCaseSensitive(hc, "Memory"), 1,
					  LLONG_MAX, &n) ? (unsigned long long)n : 0;
		db->oom_unsure = backend_docker_oom_unsure(engine, cJSON_GetStringValue(
			cJSON_GetObjectItemCaseSensitive(hc, "Runtime")));
		/* A kernel whose channel goes over a stream (its label): attached again, hello. */
		db->stream = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(
			cfg, "Labels"), LABEL_STREAM) != NULL;
		db->open_stdin = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(cfg, "OpenStdin"));
	}
	if (!db->memory)
		db->memory = DEFAULT_MEMORY;
	db->id = xstrdup(id);
	/*
	 * A kernel only watched (a pool's daemon) gets nothing from us, but its stdin is held
	 * open: the engine lets a container's stdin go when no one is attached to it, and a
	 * relay's next host end could send nothing.
	 */
	if (k->watch) {
		db->stream = 0;
		db->watch_only = 1;
	}
	if (db->stream ? backend_docker_stream_attach(db, err) < 0 :
	    db->open_stdin && backend_docker_attach_stdin(db, err) < 0) {
		free(db->id);
		db->id = NULL;
		goto out;
	}
	/* An exited container answers the wait at once: reap() then says why it stopped. */
	if (backend_docker_open_wait(db, err) < 0 ||
	    (db->stream && backend_docker_stream_begin(db, k->channel_dir, 1, err) < 0)) {
		backend_docker_forget(db);
		goto out;
	}
	rc = 0;
out:
	cJSON_Delete(reply);
	strbuf_release(&msg);
	strbuf_release(&idbuf);
	strbuf_release(&hostbuf);
	free(path);
	if (rc < 0) {
		docker_free(&db->base);
		return NULL;
	}
	return &db->base;
}

/* Whether the container of the kernel in `k`'s channel runs. */
static int docker_running(const char *engine, const struct kernel_handle *k, struct strbuf *id)
{
	struct strbuf cid = STRBUF_INIT, err = STRBUF_INIT, hostbuf = STRBUF_INIT;
	int running = 0;

	if (backend_docker_read_id(k, engine, &cid, &err) == 0) {
		if (id)
			strbuf_addstr(id, cid.buf);
		running = backend_docker_container_running(engine, backend_docker_engine_of(k, &hostbuf),
							   cid.buf);
	}
	strbuf_release(&hostbuf);
	strbuf_release(&cid);
	strbuf_release(&err);
	return running;
}

/* The stream's last ping answer's round trip, -1 without a stream. */
static double docker_latency(struct backend *be)
{
	return backend_docker_stream_latency(docker_of(be));
}

/* Forget the cgroup of a container found before. */
static void cgroup_forget(struct backend_docker *db)
{
	free(db->cg_id);
	db->cg_id = NULL;
	usage_cgroup_close(&db->cg);
}

/* The counters of the container's cgroup, found once per container (usage.h). */
static int docker_usage(struct backend *be, int reset, struct usage_sample *u)
{
	struct backend_docker *db = docker_of(be);

	usage_sample_clear(u);
	if (!db->id || db->created)
		return -1;
	if (!db->cg_id || strcmp(db->cg_id, db->id)) {
		cgroup_forget(db);
		db->cg_id = xstrdup(db->id);
		if (usage_cgroup_open(&db->cg, db->id) < 0)
			return -1;
	}
	return usage_read_cgroup(&db->cg, reset, u);
}

/* A context's backend (backend_docker_exec.c): the family's, with its table. */
static struct backend *exec_create(const char *engine)
{
	struct backend *be = docker_create(engine);

	be->ops = &backend_docker_exec_ops;
	return be;
}

/* The context's runner killed; the container, the sandbox's, stays. */
static void exec_free(struct backend *be)
{
	backend_docker_exec_kill(be);
	docker_free(be);
}

/* The docker family's `contexts`: a kernel started by an exec in a running container. */
const struct backend_ops backend_docker_exec_ops = {
	.name = "docker",
	.flags = BACKEND_SANDBOX | BACKEND_WITHIN,
	.create = exec_create,
	.start = backend_docker_exec_start,
	.exit_fd = backend_docker_exec_exit_fd,
	.reap = backend_docker_exec_reap,
	.signal = backend_docker_exec_signal,
	.kill = backend_docker_exec_kill,
	.free = exec_free,
	.detach = backend_docker_exec_detach,
	.wake = docker_wake,
	.usage = docker_usage,
	.channel_owner = backend_docker_channel_owner,
};

/* One table for both engines: what differs between docker and podman is in db->engine. */
const struct backend_ops backend_docker_ops = {
	.name = "docker",
	.flags = BACKEND_SLOW_KILL | BACKEND_IMAGES | BACKEND_SANDBOX | BACKEND_CONTEXTS,
	.contexts = &backend_docker_exec_ops,
	.create = docker_create,
	.adopt = docker_adopt,
	.running = docker_running,
	.gc = backend_docker_gc_dead,
	.prepare = docker_prepare,
	.start = docker_start,
	.exit_fd = docker_exit_fd,
	.reap = docker_reap,
	.signal = docker_signal,
	.kill = docker_kill,
	.free = docker_free,
	.detach = docker_detach,
	.wake = docker_wake,
	.latency = docker_latency,
	.usage = docker_usage,
	.channel_owner = backend_docker_channel_owner,
};
