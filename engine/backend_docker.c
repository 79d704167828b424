/* The docker and podman backends: the runner as a container's command, over the Engine API. */
#include "backend.h"
#include "channel.h"
#include "docker.h"
#include "kernel.h"
#include "protocol.h"	/* generated from the runner: CELLBOX_KERNEL_IMAGE */
#include "wall.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#define DEFAULT_IMAGE CELLBOX_KERNEL_IMAGE
#define DEFAULT_MEMORY (1ull << 30)
#define DEFAULT_PIDS 256
#define DEFAULT_HOME_SIZE (512ull << 20)
#define CONTAINER_UID 1000
#define LABEL_PID "org.cellbox.pid"
#define LABEL_START "org.cellbox.start"
#define LABEL_HOST "org.cellbox.host"
#define LABEL_CHANNEL "org.cellbox.channel"

struct backend_docker {
	struct backend base;
	char *engine;		/* "docker" or "podman" */
	struct docker d;
	int connected;
	char *id;		/* the running container, NULL when none */
	int created;		/* id is created and not started yet (prepare()) */
	int wait_fd;		/* POST /containers/ID/wait; readable when it exits */
	struct strbuf wait_reply;
	unsigned long long memory;	/* the limit in force, for messages */
	int stdin_fd;		/* the container's stdin (attached), or -1: the runner's wake-up */
	int oom_unsure;		/* podman, or a runtime other than runc: OOM kills may go unsaid */
};

/* Whether the engine may not report an OOM kill: podman (cgroup v1), or not runc (gVisor). */
static int oom_unsure(const char *engine, const char *runtime)
{
	return strcmp(engine, "docker") || (runtime && *runtime && strcmp(runtime, "runc"));
}

/*
 * Whether the runner is woken through its stdin: under another OCI runtime than runc (gVisor's
 * runsc), inotify inside does not see the host's writes to a bind mount; a kernel without
 * inotify (R's) is woken so under every runtime (PROTOCOL.md, "Waking the runner").
 */
static int wakes_by_stdin(const struct sandbox_opts *sb, const struct kernel_def *k)
{
	if (k && k->wake_stdin)
		return 1;
	return sb && sb->runtime && *sb->runtime && strcmp(sb->runtime, "runc");
}

static struct backend_docker *docker_of(struct backend *be)
{
	return (struct backend_docker *)be;
}

/* The engine socket for podman when none is given. */
static const char *podman_host(void)
{
	static char buf[512];
	const char *h = getenv("CONTAINER_HOST"), *xdg = getenv("XDG_RUNTIME_DIR");
	char path[400];

	if (h && *h)
		return h;
	if (xdg && *xdg && getuid() != 0) {
		snprintf(path, sizeof(path), "%s/podman/podman.sock", xdg);
		if (access(path, F_OK) == 0) {
			snprintf(buf, sizeof(buf), "unix://%s", path);
			return buf;
		}
	}
	return "unix:///run/podman/podman.sock";
}

int backend_docker_connect(struct docker *d, const char *engine, const char *host,
			   struct strbuf *err)
{
	if (!host && !strcmp(engine, "podman"))
		host = podman_host();
	return docker_init(d, host, err);
}

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

/* Parse "uid[:gid]"; -1 when it is not numeric. */
static int parse_user(const char *s, uid_t *uid, gid_t *gid)
{
	char *end;
	unsigned long u = strtoul(s, &end, 10), g;

	if (end == s || (*end && *end != ':'))
		return -1;
	g = u;
	if (*end == ':') {
		const char *gs = end + 1;
		g = strtoul(gs, &end, 10);
		if (end == gs || *end)
			return -1;
	}
	*uid = (uid_t)u;
	*gid = (gid_t)g;
	return 0;
}

/* The container's user: the option, else ours, else (for root) the image's user. */
static void container_user(const struct sandbox_opts *sb, uid_t *uid, gid_t *gid)
{
	if (sb && sb->user && *sb->user && parse_user(sb->user, uid, gid) == 0)
		return;
	if (getuid() == 0) {
		*uid = CONTAINER_UID;
		*gid = CONTAINER_UID;
	} else {
		*uid = getuid();
		*gid = getgid();
	}
}

static int docker_channel_owner(struct backend *be, const struct kernel_spec *spec, uid_t *uid,
				gid_t *gid)
{
	(void)be;
	container_user(spec->sandbox, uid, gid);
	return *uid != getuid() || *gid != getgid();
}

/* Add a comma-separated list as a JSON array of strings ("none" is the empty list). */
static void add_list(cJSON *obj, const char *name, const char *list)
{
	cJSON *arr = cJSON_AddArrayToObject(obj, name);
	char *copy = xstrdup(list), *save = NULL;

	for (char *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save))
		if (*t && strcmp(t, "none"))
			cJSON_AddItemToArray(arr, cJSON_CreateString(t));
	free(copy);
}

/* Say a byte count the way limits are written: "64 MB", "1 GB". */
static void describe_size(struct strbuf *sb, unsigned long long n)
{
	if (n >= (1ull << 30) && n % (1ull << 30) == 0)
		strbuf_addf(sb, "%llu GB", n >> 30);
	else
		strbuf_addf(sb, "%llu MB", (n + (1ull << 19)) >> 20);
}

/*
 * Podman (rootful) gives every container RLIMIT_NOFILE and RLIMIT_NPROC of 1048576 unless
 * told otherwise; raising a limit above the hard limit the engine runs under needs
 * CAP_SYS_RESOURCE, and where that is missing (a sandboxed machine) the runtime fails with
 * "setrlimit RLIMIT_NPROC: Operation not permitted". Ask for our own hard limits instead
 * (NPROC also capped at 32768: more is refused on such machines, and the pids limit is the
 * real bound).
 */
static void add_podman_ulimits(cJSON *hc)
{
	static const struct { const char *name; int resource; rlim_t cap; } lims[] = {
		{ "nofile", RLIMIT_NOFILE, 1048576 },
		{ "nproc", RLIMIT_NPROC, 32768 },
	};
	cJSON *arr = cJSON_AddArrayToObject(hc, "Ulimits");

	for (size_t i = 0; i < ARRAY_SIZE(lims); i++) {
		struct rlimit rl;
		cJSON *u;
		rlim_t v = lims[i].cap;

		if (getrlimit(lims[i].resource, &rl) == 0 && rl.rlim_max != RLIM_INFINITY &&
		    rl.rlim_max < v)
			v = rl.rlim_max;
		u = cJSON_CreateObject();
		cJSON_AddStringToObject(u, "Name", lims[i].name);
		cJSON_AddNumberToObject(u, "Soft", (double)v);
		cJSON_AddNumberToObject(u, "Hard", (double)v);
		cJSON_AddItemToArray(arr, u);
	}
}

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

/* The body of POST /containers/create. */
static cJSON *create_body(struct backend_docker *db, const struct kernel_spec *spec)
{
	const struct sandbox_opts none = { 0 }, *sb = spec->sandbox ? spec->sandbox : &none;
	const struct kernel_def *k = spec->kernel ? spec->kernel : kernel_default();
	cJSON *body = cJSON_CreateObject(), *hc, *cmd, *env, *labels, *tmpfs;
	char buf[256];
	uid_t uid;
	gid_t gid;
	const char *net = sb->network && *sb->network ? sb->network : "none";
	unsigned long long home_size = sb->home_size ? sb->home_size : DEFAULT_HOME_SIZE;

	container_user(sb, &uid, &gid);
	db->memory = spec->memory ? spec->memory : DEFAULT_MEMORY;
	db->oom_unsure = oom_unsure(db->engine, sb->runtime);
	cJSON_AddStringToObject(body, "Image", sb->image && *sb->image ? sb->image : DEFAULT_IMAGE);
	snprintf(buf, sizeof(buf), "%u:%u", (unsigned)uid, (unsigned)gid);
	cJSON_AddStringToObject(body, "User", buf);
	cJSON_AddStringToObject(body, "WorkingDir", "/home/cellbox");
	/* The runner's argv is the host's: the channel is mounted at the same path. */
	cmd = cJSON_AddArrayToObject(body, "Cmd");
	cJSON_AddItemToArray(cmd, cJSON_CreateString("/bin/sh"));
	cJSON_AddItemToArray(cmd, cJSON_CreateString("-c"));
	snprintf(buf, sizeof(buf), "exec %s \"$0\" \"$1\" %s>>\"$1/kernel/log\" 2>&1",
		 k->container_exec, wakes_by_stdin(sb, k) ? "" : "</dev/null ");
	cJSON_AddItemToArray(cmd, cJSON_CreateString(buf));
	cJSON_AddItemToArray(cmd, cJSON_CreateString(spec->runner));
	cJSON_AddItemToArray(cmd, cJSON_CreateString(spec->channel_dir));
	env = cJSON_AddArrayToObject(body, "Env");
	cJSON_AddItemToArray(env, cJSON_CreateString("HOME=/home/cellbox"));
	cJSON_AddItemToArray(env, cJSON_CreateString("MPLBACKEND=Agg"));
	cJSON_AddItemToArray(env, cJSON_CreateString("MPLCONFIGDIR=/tmp/matplotlib"));
	cJSON_AddItemToArray(env, cJSON_CreateString("PYTHONDONTWRITEBYTECODE=1"));
	snprintf(buf, sizeof(buf), "CELLBOX_NETWORK=%s", net);
	cJSON_AddItemToArray(env, cJSON_CreateString(buf));
	if (wakes_by_stdin(sb, k)) {
		/* A byte on stdin per command (PROTOCOL.md, "Waking the runner"). */
		cJSON_AddItemToArray(env, cJSON_CreateString("CELLBOX_WAKE=stdin"));
		cJSON_AddBoolToObject(body, "OpenStdin", 1);
		cJSON_AddBoolToObject(body, "StdinOnce", 0);
		cJSON_AddBoolToObject(body, "AttachStdin", 1);
	}
	if (k->env[0]) {
		snprintf(buf, sizeof(buf), "%s=%s", k->env[0], k->env[1]);
		cJSON_AddItemToArray(env, cJSON_CreateString(buf));
	}
	/* The engine's init (tini) forwards our SIGINT to the kernel's process group. */
	if (db->base.signal_group)
		cJSON_AddItemToArray(env, cJSON_CreateString("TINI_KILL_PROCESS_GROUP=1"));
	labels = cJSON_AddObjectToObject(body, "Labels");
	backend_docker_owner_labels(labels);
	cJSON_AddStringToObject(labels, LABEL_CHANNEL, spec->channel_dir);

	hc = cJSON_AddObjectToObject(body, "HostConfig");
	cJSON_AddBoolToObject(hc, "Init", 1);
	{
		/* The channel's two one-way parts, at the host's paths: the host's read-only. */
		cJSON *binds = cJSON_AddArrayToObject(hc, "Binds");
		char *bind = xasprintf("%s/host:%s/host:ro", spec->channel_dir, spec->channel_dir);
		cJSON_AddItemToArray(binds, cJSON_CreateString(bind));
		free(bind);
		bind = xasprintf("%s/kernel:%s/kernel:rw", spec->channel_dir, spec->channel_dir);
		cJSON_AddItemToArray(binds, cJSON_CreateString(bind));
		free(bind);
	}
	if (sb->runtime && *sb->runtime)
		cJSON_AddStringToObject(hc, "Runtime", sb->runtime);
	cJSON_AddStringToObject(hc, "NetworkMode", net);
	cJSON_AddBoolToObject(hc, "ReadonlyRootfs", !sb->writable_root);
	tmpfs = cJSON_AddObjectToObject(hc, "Tmpfs");
	/* Podman 4.3 refuses uid= for tmpfs and ignores mode=; its own U option chowns. */
	if (strcmp(db->engine, "podman"))
		snprintf(buf, sizeof(buf), "rw,exec,nosuid,nodev,size=%llu,mode=0700,uid=%u,gid=%u",
			 home_size, (unsigned)uid, (unsigned)gid);
	else
		snprintf(buf, sizeof(buf), "rw,exec,nosuid,nodev,size=%llu,U", home_size);
	cJSON_AddStringToObject(tmpfs, "/home/cellbox", buf);
	cJSON_AddStringToObject(tmpfs, "/tmp", strcmp(db->engine, "podman") ?
				"rw,exec,nosuid,nodev,size=256m,mode=1777" :
				"rw,exec,nosuid,nodev,size=256m,U");
	add_list(hc, "CapDrop", sb->cap_drop ? sb->cap_drop : "ALL");
	add_list(hc, "SecurityOpt", sb->security_opt ? sb->security_opt : "no-new-privileges");
	cJSON_AddNumberToObject(hc, "PidsLimit", (double)(sb->pids ? sb->pids : DEFAULT_PIDS));
	cJSON_AddNumberToObject(hc, "Memory", (double)db->memory);
	cJSON_AddNumberToObject(hc, "MemorySwap", (double)db->memory);
	cJSON_AddNumberToObject(hc, "NanoCpus", (sb->cpus > 0 ? sb->cpus : 1.0) * 1e9);
	if (!strcmp(db->engine, "podman"))
		add_podman_ulimits(hc);
	return body;
}

/* Name the other cellbox kernel images there are (built for another protocol). */
static void add_stale_images(struct docker *d, const char *image, struct strbuf *err)
{
	struct strbuf path = STRBUF_INIT, msg = STRBUF_INIT;
	char repo[128];
	cJSON *list = NULL, *img, *tag;
	int found = 0;

	snprintf(repo, sizeof(repo), "%s", image);
	repo[strcspn(repo, ":")] = '\0';
	strbuf_addstr(&path, "/images/json?filters=");
	{
		char *f = xasprintf("{\"reference\":[\"%s\"]}", repo);
		docker_urlencode(&path, f);
		free(f);
	}
	if (docker_call(d, "GET", path.buf, NULL, &list, &msg) == 200) {
		cJSON_ArrayForEach(img, list) {
			cJSON_ArrayForEach(tag, cJSON_GetObjectItemCaseSensitive(img, "RepoTags")) {
				const char *t = cJSON_GetStringValue(tag);
				if (!t || !strcmp(t, image))
					continue;
				strbuf_addf(err, "%s%s", found++ ? ", " : "; there is ", t);
			}
		}
		if (found)
			strbuf_addstr(err, ", made for another runner protocol (stale)");
	}
	cJSON_Delete(list);
	strbuf_release(&path);
	strbuf_release(&msg);
}

static int collect(const char *engine, const char *host, int tries, struct strbuf *out,
		   struct strbuf *err);

/* Remove the containers of dead cellbox processes, once per process. */
static void sweep_once(struct backend_docker *db)
{
	static int swept;
	struct strbuf err = STRBUF_INIT;

	if (swept)
		return;
	swept = 1;
	collect(db->engine, db->d.host, 1, NULL, &err);	/* a session's start: one try each */
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
static void remove_container(struct docker *d, const char *id)
{
	struct strbuf err = STRBUF_INIT;

	remove_container_surely(d, id, 1, &err);
	strbuf_release(&err);
}

/* Wait on a connection of its own: it answers when the container stops. */
static int open_wait(struct backend_docker *db, struct strbuf *err)
{
	char *path = xasprintf("/containers/%s/wait?condition=not-running", db->id);

	db->wait_fd = docker_send_raw(&db->d, "POST", path, err);
	free(path);
	if (db->wait_fd < 0)
		return -1;
	fcntl(db->wait_fd, F_SETFL, fcntl(db->wait_fd, F_GETFL) | O_NONBLOCK);
	strbuf_reset(&db->wait_reply);
	return 0;
}

/* Attach to the container's stdin, the runner's wake-up (non-blocking writes). */
static int attach_stdin(struct backend_docker *db, struct strbuf *err)
{
	db->stdin_fd = docker_attach_stdin(&db->d, db->id, err);
	if (db->stdin_fd < 0)
		return -1;
	fcntl(db->stdin_fd, F_SETFL, fcntl(db->stdin_fd, F_GETFL) | O_NONBLOCK);
	return 0;
}

static void docker_wake(struct backend *be)
{
	struct backend_docker *db = docker_of(be);

	/*
	 * A full socket means wake-ups are already waiting: one more is not needed. Other
	 * errors are the engine's, and the wait connection says how the container ended.
	 */
	if (db->stdin_fd >= 0) {
		ssize_t n = write(db->stdin_fd, "w", 1);
		(void)n;
	}
}

/*
 * Leave the container's id in the channel (`container`): who adopts the kernel needs it. The
 * note sits at the channel's top, which no container sees; written as every host file is.
 */
static void write_container_file(const char *channel_dir, const char *id)
{
	struct strbuf err = STRBUF_INIT;
	int fd = open(channel_dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

	if (fd >= 0) {
		wall_write_at(fd, BACKEND_CONTAINER_FILE, id, strlen(id), 0644,
			      BACKEND_CONTAINER_FILE, &err);
		close(fd);
	}
	strbuf_release(&err);
}

/* Create the container for `spec` (not started): docker_prepare and docker_start's first half. */
static int create_container(struct backend_docker *db, const struct kernel_spec *spec,
			    struct strbuf *err)
{
	const struct sandbox_opts *sb = spec->sandbox;
	cJSON *body = NULL, *reply = NULL;
	struct strbuf msg = STRBUF_INIT;
	const char *image;
	long status;
	int rc = -1;

	if (db->id) {
		strbuf_addstr(err, "the kernel is already running");
		return -1;
	}
	if (!db->connected) {
		if (backend_docker_connect(&db->d, db->engine, sb ? sb->host : NULL, err) < 0)
			return -1;
		db->connected = 1;
	}
	sweep_once(db);
	body = create_body(db, spec);
	image = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(body, "Image"));
	status = docker_call(&db->d, "POST", "/containers/create", body, &reply, &msg);
	if (status == 404) {
		const struct kernel_def *k = spec->kernel ? spec->kernel : kernel_default();

		strbuf_addf(err, "the kernel image '%s' is not in %s: build it with "
			    "scripts/build-image%s%s%s (%s)", image, db->engine,
			    k != kernel_default() ? " --kernel " : "",
			    k != kernel_default() ? k->name : "",
			    strcmp(db->engine, "docker") ? " --engine podman" : "", msg.buf);
		add_stale_images(&db->d, image, err);
		goto out;
	}
	if (status != 201) {
		strbuf_addf(err, "cannot create the container (%s, HTTP %ld): %s", image, status,
			    msg.buf);
		goto out;
	}
	db->id = xstrdup(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(reply, "Id")));
	db->created = 1;
	if (wakes_by_stdin(sb, spec->kernel ? spec->kernel : kernel_default()) &&
	    attach_stdin(db, err) < 0)
		goto out;
	rc = 0;
out:
	if (rc < 0 && db->id) {
		remove_container(&db->d, db->id);
		free(db->id);
		db->id = NULL;
		db->created = 0;
	}
	cJSON_Delete(body);
	cJSON_Delete(reply);
	strbuf_release(&msg);
	return rc;
}

static int docker_prepare(struct backend *be, const struct kernel_spec *spec, struct strbuf *err)
{
	return create_container(docker_of(be), spec, err);
}

static int docker_start(struct backend *be, const struct kernel_spec *spec, struct strbuf *err)
{
	struct backend_docker *db = docker_of(be);
	struct strbuf msg = STRBUF_INIT;
	char *path = NULL;
	long status;
	int rc = -1;

	if (!db->created && create_container(db, spec, err) < 0)
		return -1;
	db->created = 0;
	path = xasprintf("/containers/%s/start", db->id);
	status = docker_call(&db->d, "POST", path, NULL, NULL, &msg);
	if (status != 204 && status != 304) {
		strbuf_addf(err, "cannot start the container: %s", msg.buf);
		goto out;
	}
	if (open_wait(db, err) < 0)
		goto out;
	write_container_file(spec->channel_dir, db->id);
	rc = 0;
out:
	if (rc < 0 && db->id) {
		remove_container(&db->d, db->id);
		free(db->id);
		db->id = NULL;
	}
	strbuf_release(&msg);
	free(path);
	return rc;
}

static int docker_exit_fd(struct backend *be)
{
	return docker_of(be)->wait_fd;
}

/* Forget the container (it is gone or being removed). */
static void docker_forget(struct backend_docker *db)
{
	if (db->wait_fd >= 0)
		close(db->wait_fd);
	db->wait_fd = -1;
	if (db->stdin_fd >= 0)
		close(db->stdin_fd);
	db->stdin_fd = -1;
	free(db->id);
	db->id = NULL;
	db->created = 0;
}

/* Why the container stopped, from its state. */
static enum reason describe_exit(struct backend_docker *db, struct strbuf *why)
{
	enum reason reason = REASON_KERNEL_DIED;
	struct strbuf err = STRBUF_INIT;
	char *path = xasprintf("/containers/%s/json", db->id);
	cJSON *reply = NULL, *state;
	long status;
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
		code = (int)cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(state, "ExitCode"));
		oom = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(state, "OOMKilled"));
		if (oom || code != 128 + SIGKILL || !db->oom_unsure || tries == 3)
			break;
		nanosleep(&(struct timespec){ .tv_nsec = 100 * 1000 * 1000 }, NULL);
	}
	if (oom) {
		reason = REASON_OOM_KILLED;
		strbuf_addstr(why, "kernel killed: out of memory (limit ");
		describe_size(why, db->memory);
		strbuf_addch(why, ')');
	} else if (code > 128 && code < 128 + 65) {
		/* The init reports a death by signal as 128 + the signal. */
		int sig = code - 128;
		struct strbuf note = STRBUF_INIT;

		/*
		 * Podman on cgroup v1 does not report OOM kills, nor always dockerd under gVisor:
		 * say what it may have been.
		 */
		if (sig == SIGKILL && db->oom_unsure) {
			strbuf_addstr(&note, "out of memory? the limit is ");
			describe_size(&note, db->memory);
		}
		backend_describe_status(sig, note.buf, why);
		strbuf_release(&note);
	} else {
		const char *e = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(state, "Error"));
		backend_describe_status((code & 0xff) << 8, NULL, why);
		if (e && *e)
			strbuf_addf(why, ": %s", e);
	}
out:
	cJSON_Delete(reply);
	strbuf_release(&err);
	free(path);
	return reason;
}

static int docker_reap(struct backend *be, enum reason *reason, struct strbuf *why)
{
	struct backend_docker *db = docker_of(be);
	int ended = 0;

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
	*reason = describe_exit(db, why);
	remove_container(&db->d, db->id);
	docker_forget(db);
	return 1;
}

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

static void docker_kill(struct backend *be)
{
	struct backend_docker *db = docker_of(be);

	if (!db->id)
		return;
	remove_container(&db->d, db->id);
	docker_forget(db);
}

static void docker_detach(struct backend *be)
{
	docker_forget(docker_of(be));	/* the container runs on; free() has nothing to kill */
}

static void docker_free(struct backend *be)
{
	struct backend_docker *db = docker_of(be);

	docker_kill(be);
	if (db->connected)
		docker_release(&db->d);
	strbuf_release(&db->wait_reply);
	free(db->engine);
	free(db);
}

/* Whether container `id` runs: 1, 0 (stopped or gone), -1 when the engine cannot say. */
static int container_running(const char *engine, const char *host, const char *id)
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

/* Remove the containers of cellbox processes that are gone, each asked `tries` times. */
static int collect(const char *engine, const char *host, int tries, struct strbuf *out,
		   struct strbuf *err)
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
		/* The dead process's channel, when it is still where the label says. */
		if (ch && pid && *ch == '/') {
			const char *base = strrchr(ch, '/') + 1;
			size_t n = strlen(pid);
			if (!strncmp(base, pid, n) && base[n] == '-' && access(ch, F_OK) == 0)
				channel_remove_dir(ch);
		}
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
static int docker_gc(const char *engine, const char *host, struct strbuf *out,
		     struct strbuf *err)
{
	return collect(engine, host, 40, out, err);
}

/* A docker or podman backend without a container yet. */
static struct backend *docker_create(const char *engine)
{
	struct backend_docker *db = xcalloc(1, sizeof(*db));

	db->base.ops = &backend_docker_ops;
	db->engine = xstrdup(engine);
	db->wait_fd = -1;
	db->stdin_fd = -1;
	strbuf_init(&db->wait_reply, 0);
	return &db->base;
}

/* The container id a channel names; -1 with `err` when there is none. */
static int read_container_id(const struct kernel_handle *k, const char *engine,
			     struct strbuf *id, struct strbuf *err)
{
	char *path = xasprintf("%s/" BACKEND_CONTAINER_FILE, k->channel_dir);
	int rc = 0;

	if (strbuf_read_file(id, path, 256) < 0 || !id->len) {
		strbuf_addf(err, "'%s' names no container: the kernel in '%s' is not a %s kernel",
			    path, k->channel_dir, engine);
		rc = -1;
	}
	free(path);
	return rc;
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
	struct strbuf msg = STRBUF_INIT, idbuf = STRBUF_INIT;
	const char *host = k->sandbox ? k->sandbox->host : NULL, *id;
	char *path = NULL;
	cJSON *reply = NULL;
	long status;
	int rc = -1;

	if (read_container_id(k, engine, &idbuf, err) < 0) {
		strbuf_release(&idbuf);
		return NULL;
	}
	id = idbuf.buf;
	db = docker_of(docker_create(engine));
	/* The id comes from a file in the channel, which the container can write: check it. */
	if (strlen(id) < 12 || strlen(id) > 64 || strspn(id, "0123456789abcdef") != strlen(id)) {
		strbuf_addf(err, "'%.64s' is not a container id", id);
		goto out;
	}
	if (backend_docker_connect(&db->d, engine, host, err) < 0)
		goto out;
	db->connected = 1;
	path = xasprintf("/containers/%s/json", id);
	status = docker_call(&db->d, "GET", path, NULL, &reply, &msg);
	if (status != 200) {
		strbuf_addf(err, "no container %.12s in %s to adopt: %s", id, engine, msg.buf);
		goto out;
	}
	db->memory = (unsigned long long)cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(
		cJSON_GetObjectItemCaseSensitive(reply, "HostConfig"), "Memory"));
	if (!db->memory)
		db->memory = DEFAULT_MEMORY;
	db->oom_unsure = oom_unsure(engine, cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(
		cJSON_GetObjectItemCaseSensitive(reply, "HostConfig"), "Runtime")));
	db->id = xstrdup(id);
	if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(reply,
			"Config"), "OpenStdin")) && attach_stdin(db, err) < 0) {
		free(db->id);
		db->id = NULL;
		goto out;
	}
	/* An exited container answers the wait at once: reap() then says why it stopped. */
	if (open_wait(db, err) < 0) {
		free(db->id);
		db->id = NULL;
		goto out;
	}
	rc = 0;
out:
	cJSON_Delete(reply);
	strbuf_release(&msg);
	strbuf_release(&idbuf);
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
	struct strbuf cid = STRBUF_INIT, err = STRBUF_INIT;
	int running = 0;

	if (read_container_id(k, engine, &cid, &err) == 0) {
		if (id)
			strbuf_addstr(id, cid.buf);
		running = container_running(engine, k->sandbox ? k->sandbox->host : NULL, cid.buf);
	}
	strbuf_release(&cid);
	strbuf_release(&err);
	return running;
}

/* One table for both engines: what differs between docker and podman is in db->engine. */
const struct backend_ops backend_docker_ops = {
	.name = "docker",
	.flags = BACKEND_SLOW_KILL | BACKEND_IMAGES | BACKEND_SANDBOX,
	.create = docker_create,
	.adopt = docker_adopt,
	.running = docker_running,
	.gc = docker_gc,
	.prepare = docker_prepare,
	.start = docker_start,
	.exit_fd = docker_exit_fd,
	.reap = docker_reap,
	.signal = docker_signal,
	.kill = docker_kill,
	.free = docker_free,
	.detach = docker_detach,
	.wake = docker_wake,
	.channel_owner = docker_channel_owner,
};
