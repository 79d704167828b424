/*
 * The docker family's container as it is made: the body of POST /containers/create, with its
 * user, mounts, hardening, limits, runtime and labels, and the create call itself.
 */
#include "backend.h"
#include "backend_docker_int.h"
#include "docker.h"
#include "kernel.h"
#include "protocol.h"	/* generated from the runner: CELLBOX_KERNEL_IMAGE */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#define DEFAULT_IMAGE CELLBOX_KERNEL_IMAGE
#define DEFAULT_PIDS 256
#define DEFAULT_HOME_SIZE (512ull << 20)
/*
 * The container's user when cellbox runs as root: a uid no host account or process has
 * (0x70000000, in the range systemd leaves unused, above subordinate-uid and nspawn ranges),
 * so that what the kernel holds of the per-uid limits (inotify instances, processes, pending
 * signals) is no host user's. Without a user namespace a container's uid is the host's.
 */
#define CONTAINER_UID 1879048192u

/* Whether the engine may not report an OOM kill: podman (cgroup v1), or not runc (gVisor). */
int backend_docker_oom_unsure(const char *engine, const char *runtime)
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

/* The channel's owner: the container's user; 1 when it is not ours. */
int backend_docker_channel_owner(struct backend *be, const struct kernel_spec *spec, uid_t *uid,
			    gid_t *gid)
{
	struct backend_docker *db = (struct backend_docker *)be;
	struct strbuf err = STRBUF_INIT;

	/* Over a stream the local channel is only ever written by this process. */
	if (!db->connected && backend_docker_connect(&db->d, db->engine, spec->sandbox ?
						     spec->sandbox->host : NULL, &err) == 0)
		db->connected = 1;
	strbuf_release(&err);
	if (db->connected && backend_docker_stream_wanted(spec->sandbox, &db->d))
		return 0;
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
	const char *mode = egress_is_list(net) ? "none" : net;	/* the list: by the proxy */
	unsigned long long home_size = sb->home_size ? sb->home_size : DEFAULT_HOME_SIZE;

	container_user(sb, &uid, &gid);
	db->memory = spec->memory ? spec->memory : DEFAULT_MEMORY;
	db->oom_unsure = backend_docker_oom_unsure(db->engine, sb->runtime);
	cJSON_AddStringToObject(body, "Image", sb->image && *sb->image ? sb->image : DEFAULT_IMAGE);
	snprintf(buf, sizeof(buf), "%u:%u", (unsigned)uid, (unsigned)gid);
	cJSON_AddStringToObject(body, "User", buf);
	cJSON_AddStringToObject(body, "WorkingDir", "/home/cellbox");
	/*
	 * The runner's argv is the host's: the channel is mounted at the same path, or (over a
	 * stream) made there by the relay, which runs the runner.
	 */
	cmd = cJSON_AddArrayToObject(body, "Cmd");
	if (db->stream) {
		backend_docker_stream_cmd(cmd, spec, k->container_exec, db->base.signal_group);
	} else {
		cJSON_AddItemToArray(cmd, cJSON_CreateString("/bin/sh"));
		cJSON_AddItemToArray(cmd, cJSON_CreateString("-c"));
		snprintf(buf, sizeof(buf), "exec %s \"$0\" \"$1\" %s>>\"$1/kernel/log\" 2>&1",
			 k->container_exec, wakes_by_stdin(sb, k) ? "" : "</dev/null ");
		cJSON_AddItemToArray(cmd, cJSON_CreateString(buf));
		cJSON_AddItemToArray(cmd, cJSON_CreateString(spec->runner));
		cJSON_AddItemToArray(cmd, cJSON_CreateString(spec->channel_dir));
	}
	env = cJSON_AddArrayToObject(body, "Env");
	cJSON_AddItemToArray(env, cJSON_CreateString("HOME=/home/cellbox"));
	cJSON_AddItemToArray(env, cJSON_CreateString("MPLBACKEND=Agg"));
	cJSON_AddItemToArray(env, cJSON_CreateString("MPLCONFIGDIR=/tmp/matplotlib"));
	cJSON_AddItemToArray(env, cJSON_CreateString("PYTHONDONTWRITEBYTECODE=1"));
	{
		char *e = xasprintf("CELLBOX_NETWORK=%s", net);

		cJSON_AddItemToArray(env, cJSON_CreateString(e));
		free(e);
	}
	if (db->egress.pid) {
		/* The runner relays 127.0.0.1 to the proxy's socket (kernels/python/runner/egress.py). */
		char *e = xasprintf("CELLBOX_EGRESS=%s/host/" EGRESS_SOCKET, spec->channel_dir);

		cJSON_AddItemToArray(env, cJSON_CreateString(e));
		free(e);
	}
	db->open_stdin = 0;
	if (db->stream || wakes_by_stdin(sb, k)) {
		/*
		 * A byte on stdin per command (PROTOCOL.md, "Waking the runner"): the container's,
		 * or (over a stream) the relay's pipe; the stream is the container's stdin and out.
		 */
		cJSON_AddItemToArray(env, cJSON_CreateString("CELLBOX_WAKE=stdin"));
		cJSON_AddBoolToObject(body, "OpenStdin", 1);
		db->open_stdin = 1;
		cJSON_AddBoolToObject(body, "StdinOnce", 0);
		cJSON_AddBoolToObject(body, "AttachStdin", 1);
		cJSON_AddBoolToObject(body, "AttachStdout", db->stream);
		cJSON_AddBoolToObject(body, "AttachStderr", db->stream);
	}
	if (k->env[0]) {
		snprintf(buf, sizeof(buf), "%s=%s", k->env[0], k->env[1]);
		cJSON_AddItemToArray(env, cJSON_CreateString(buf));
	}
	/* The engine's init (tini) forwards our SIGINT to the kernel's process group. */
	if (db->base.signal_group && !db->stream)
		cJSON_AddItemToArray(env, cJSON_CreateString("TINI_KILL_PROCESS_GROUP=1"));
	labels = cJSON_AddObjectToObject(body, "Labels");
	backend_docker_owner_labels(labels);
	cJSON_AddStringToObject(labels, LABEL_CHANNEL, spec->channel_dir);
	if (db->stream)
		cJSON_AddStringToObject(labels, LABEL_STREAM, "1");

	hc = cJSON_AddObjectToObject(body, "HostConfig");
	/* Over a stream the relay is the init (kernels/relay/relay.c): the only holder of stdout. */
	cJSON_AddBoolToObject(hc, "Init", !db->stream);
	/* What the kernel writes to its init's stdout is nobody's: no log on the host's disk. */
	cJSON_AddStringToObject(cJSON_AddObjectToObject(hc, "LogConfig"), "Type", "none");
	if (!db->stream) {
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
	cJSON_AddStringToObject(hc, "NetworkMode", mode);
	cJSON_AddBoolToObject(hc, "ReadonlyRootfs", !sb->writable_root);
	tmpfs = cJSON_AddObjectToObject(hc, "Tmpfs");
	/* Podman 4.3 refuses uid= for tmpfs and ignores mode=; its own U option chowns. */
	if (strcmp(db->engine, "podman"))
		snprintf(buf, sizeof(buf), "rw,exec,nosuid,nodev,size=%llu,mode=0700,uid=%u,gid=%u",
			 home_size, (unsigned)uid, (unsigned)gid);
	else
		snprintf(buf, sizeof(buf), "rw,exec,nosuid,nodev,size=%llu,U", home_size);
	cJSON_AddStringToObject(tmpfs, "/home/cellbox", buf);
	if (db->stream) {
		/* The channel in the sandbox: its memory is the container's (the cgroup's limit). */
		if (strcmp(db->engine, "podman"))
			snprintf(buf, sizeof(buf), "rw,noexec,nosuid,nodev,size=%llu,mode=0700,"
				 "uid=%u,gid=%u", db->memory, (unsigned)uid, (unsigned)gid);
		else
			snprintf(buf, sizeof(buf), "rw,noexec,nosuid,nodev,size=%llu,U", db->memory);
		cJSON_AddStringToObject(tmpfs, spec->channel_dir, buf);
	}
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

/*
 * Start the proxy of an allow-list (egress.h) once for this backend: its socket is in
 * the channel's host part, which the container sees (read-only) at the same path.
 */
static int start_egress(struct backend_docker *db, const struct kernel_spec *spec,
			struct strbuf *err)
{
	char *path;
	int rc;

	if (db->egress.pid)
		return 0;
	if (db->stream) {
		strbuf_addstr(err, "network allow-list: needs the channel shared with the engine "
			      "(a local engine, --channel shared), not over a stream");
		return -1;
	}
	path = xasprintf("%s/host/" EGRESS_SOCKET, spec->channel_dir);
	rc = egress_proxy_start(&db->egress, spec->sandbox->network, spec->sandbox->egress_hosts,
				path, err);
	free(path);
	return rc;
}

/* Create the container for `spec` (not started): docker_prepare and docker_start's first half. */
int backend_docker_create_container(struct backend_docker *db, const struct kernel_spec *spec,
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
	backend_docker_sweep_once(db);
	db->stream = backend_docker_stream_wanted(sb, &db->d);
	if (sb && egress_is_list(sb->network) && start_egress(db, spec, err) < 0)
		return -1;
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
	if (db->stream) {
		if (backend_docker_stream_attach(db, err) < 0)
			goto out;
	} else if (wakes_by_stdin(sb, spec->kernel ? spec->kernel : kernel_default()) &&
		   backend_docker_attach_stdin(db, err) < 0) {
		goto out;
	}
	rc = 0;
out:
	if (rc < 0)
		backend_docker_discard(db);
	cJSON_Delete(body);
	cJSON_Delete(reply);
	strbuf_release(&msg);
	return rc;
}
