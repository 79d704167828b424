/*
 * Memory checkpoints of named sessions whose kernel runs under gVisor (docker with runtime
 * runsc, on an engine with the checkpoint API whose data root is ours): the host checkpoints
 * its kernel's container through the engine and writes the image with what a restore needs
 * (memckpt.h's file); a restore makes a fresh channel, a new container of the same config with
 * that channel mounted where the old one was, puts the image in the container's checkpoints
 * directory under the engine's data root, starts it from there and adopts the kernel. See
 * named.h and docs/sessions.md, "Checkpoint and restore".
 */
#include "named_int.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "backend.h"
#include "channel.h"
#include "dockerckpt.h"
#include "fsutil.h"
#include "history.h"
#include "kernel.h"
#include "memckpt.h"
#include "random.h"
#include "sha256.h"
#include "wall.h"

#define NOTE_MAX 4096		/* bytes of a host note in the channel (container, engine) */
/*
 * The host's note on a channel whose kernel was restored from a memory checkpoint. Such a
 * kernel is checkpointed in memory again as any other, but its host has only the cells run
 * since the restore: a re-run checkpoint of it (and so a fork by re-running) is refused.
 */
#define RESTORED_NOTE "restored"

#define READY_MAX (64u << 10)	/* bytes of the kernel's ready file kept */

/* The user's checkpoint key: beside the history, $XDG_STATE_HOME/cellbox/checkpoint.key. */
static int load_key(char key[MEMCKPT_KEY_HEX + 1], struct strbuf *err)
{
	char *sessions = history_sessions_dir(), *slash = strrchr(sessions, '/'), *path;
	int rc;

	if (slash)
		*slash = '\0';
	if (fsutil_mkdir_p(sessions) < 0) {
		strbuf_addf(err, "cannot create '%s': %s", sessions, strerror(errno));
		free(sessions);
		return -1;
	}
	path = xasprintf("%s/checkpoint.key", sessions);
	rc = memckpt_key_load(path, key, err);
	free(path);
	free(sessions);
	return rc;
}

/* A note the host left at the channel's top (no container sees it), trimmed; NULL: none. */
static char *read_note(const char *channel, const char *name)
{
	struct strbuf sb = STRBUF_INIT;
	char *path = xasprintf("%s/%s", channel, name);

	if (strbuf_read_file(&sb, path, NOTE_MAX) < 0 || !sb.len) {
		free(path);
		strbuf_release(&sb);
		return NULL;
	}
	free(path);
	while (sb.len && (sb.buf[sb.len - 1] == '\n' || sb.buf[sb.len - 1] == ' '))
		sb.buf[--sb.len] = '\0';
	return strbuf_detach(&sb, NULL);
}

/*
 * The kernel's ready file, which the kernel wrote (its part of the channel: hostile): opened
 * without following a link or blocking on a FIFO, a regular file of at most READY_MAX, text.
 */
static char *read_ready(const char *channel)
{
	struct strbuf sb = STRBUF_INIT;
	char *path = xasprintf("%s/kernel/ready", channel);
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	struct stat st;

	free(path);
	if (fd < 0)
		return NULL;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size > READY_MAX ||
	    strbuf_read_fd(&sb, fd, READY_MAX + 1) < 0 || !sb.len || sb.len > READY_MAX ||
	    strlen(sb.buf) != sb.len) {
		close(fd);
		strbuf_release(&sb);
		return NULL;
	}
	close(fd);
	return strbuf_detach(&sb, NULL);
}

/* A path a container saw the channel at: absolute, plain, not too long. */
static int mount_path_ok(const char *p)
{
	size_t n = p ? strlen(p) : 0;

	return n > 1 && n < 512 && p[0] == '/' && !strstr(p, "/.") && !strstr(p, "//") &&
	       strspn(p, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._/-") == n;
}

/*
 * The path the container of inspect answer `c` sees channel `channel` at: the destination of
 * the bind of its host part (`CHANNEL/host:AT/host:ro`, as created), less "/host"; NULL when
 * there is none. A kernel restored from a memory checkpoint sees its first container's paths,
 * not its own channel's, and gVisor finds each mount of a checkpoint again by where the
 * container saw it: a second restore with the channel at the first restore's paths fails, "no
 * server FD available for filesystem with unique ID" (scripts/probe-runsc-checkpoint).
 */
static char *seen_at(const cJSON *c, const char *channel)
{
	const cJSON *b;
	char *host = xasprintf("%s/host:", channel), *at = NULL;
	size_t hn = strlen(host);

	cJSON_ArrayForEach(b, cJSON_GetObjectItemCaseSensitive(
		cJSON_GetObjectItemCaseSensitive(c, "HostConfig"), "Binds")) {
		const char *v = cJSON_GetStringValue(b);
		size_t n = v ? strlen(v) : 0;

		if (n > hn + 8 && !strncmp(v, host, hn) && !strcmp(v + n - 8, "/host:ro")) {
			at = xstrndup(v + hn, n - hn - 8);
			break;
		}
	}
	free(host);
	if (at && !mount_path_ok(at)) {
		free(at);
		at = NULL;
	}
	return at;
}

/* Whether the engine of `d` keeps checkpoints where we may put them. Its root into *root. */
static int engine_ok(struct docker *d, char **root, struct strbuf *err)
{
	struct dockerckpt_engine e;

	if (dockerckpt_engine(d, &e, err) < 0)
		return -1;
	if (!e.experimental || !e.root || access(e.root, W_OK) < 0) {
		strbuf_addf(err, "a memory checkpoint needs an engine on this machine with the "
			    "checkpoint API (dockerd --experimental) and its data root ours to write "
			    "(%s)", e.root ? e.root : "none given");
		dockerckpt_engine_release(&e);
		return -1;
	}
	*root = e.root;
	return 0;
}

/*
 * The runner's digest: the restored runner has the old one's modules in memory and imports
 * the rest from the runner file the restore writes, so a restore takes only the same runner.
 */
static void runner_hash(const struct kernel_def *k, char hex[65])
{
	struct sha256 c;

	sha256_init(&c);
	sha256_update(&c, k->code, *k->code_len);
	sha256_hex(&c, hex);
}

int named_memckpt_restored(struct session *s)
{
	const char *channel = session_channel_dir(s);
	char *note = channel ? read_note(channel, RESTORED_NOTE) : NULL;

	free(note);
	return note != NULL;
}

int named_memckpt_make(struct session *s, const char *name, const cJSON *cells,
		       const char *path, int probe, struct strbuf *err)
{
	const char *channel = session_channel_dir(s);
	char *id = channel ? read_note(channel, BACKEND_CONTAINER_FILE) : NULL;
	char *engine = channel ? read_note(channel, BACKEND_ENGINE_FILE) : NULL;
	char *root = NULL, *dir = NULL, *ready_text = NULL, ck[24], key[MEMCKPT_KEY_HEX + 1];
	char *seen = NULL, hash[65];
	struct strbuf p = STRBUF_INIT;
	const char *runtime;
	cJSON *c = NULL, *meta = NULL;
	struct docker d;
	int connected = 0, made = 0, rc = -1;

	if (!probe && (!path || *path != '/')) {
		strbuf_addstr(err, "the checkpoint's path is not absolute");
		goto out;
	}
	if (!probe && session_state(s) != SESSION_IDLE) {
		strbuf_addstr(err, "the kernel is not idle (a cell runs, or it is dead): a memory "
			      "checkpoint is taken between cells");
		goto out;
	}
	if (!id || !dockerckpt_name_ok(id)) {
		strbuf_addstr(err, "a memory checkpoint needs a kernel in a container (--backend "
			      "docker --runtime runsc)");
		goto out;
	}
	if (load_key(key, err) < 0 || docker_init(&d, engine, err) < 0)
		goto out;
	connected = 1;
	strbuf_addf(&p, "/containers/%s/json", id);
	if (docker_call(&d, "GET", p.buf, NULL, &c, err) != 200)
		goto out;
	runtime = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(
		cJSON_GetObjectItemCaseSensitive(c, "HostConfig"), "Runtime"));
	if (!runtime || strncmp(runtime, "runsc", 5)) {
		strbuf_addf(err, "a memory checkpoint needs gVisor (--runtime runsc), not %s; "
			    "checkpoint without --memory writes the cells", runtime ? runtime : "runc");
		goto out;
	}
	if (cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(
		cJSON_GetObjectItemCaseSensitive(c, "Config"), "Labels"), "org.cellbox.stream")) {
		strbuf_addstr(err, "a memory checkpoint needs the channel mounted, not over a stream "
			      "(the engine is on this machine: CELLBOX_CHANNEL=mount)");
		goto out;
	}
	seen = seen_at(c, channel);
	if (!seen) {
		strbuf_addstr(err, "the kernel's container has no mount of its channel as cellbox "
			      "makes it, at a plain path (letters, digits, '._-/'): a restore could "
			      "not mount it there again");
		goto out;
	}
	if (engine_ok(&d, &root, err) < 0)
		goto out;
	if (probe) {		/* all a checkpoint needs is here: none is taken */
		rc = 0;
		goto out;
	}
	ready_text = read_ready(channel);
	if (!ready_text) {
		strbuf_addstr(err, "the kernel's ready file cannot be read (or is not a file)");
		goto out;
	}
	random_hex(ck + 3, 8);
	memcpy(ck, "cb-", 3);
	if (dockerckpt_create(&d, id, ck, 0, err) < 0)
		goto out;
	made = 1;
	dir = dockerckpt_dir(root, id, ck);
	meta = cJSON_CreateObject();
	cJSON_AddStringToObject(meta, "name", name);
	cJSON_AddStringToObject(meta, "channel", seen);
	cJSON_AddStringToObject(meta, "ready", ready_text);
	runner_hash(session_kernel(s), hash);
	cJSON_AddStringToObject(meta, "runner_sha256", hash);
	cJSON_AddItemToObject(meta, "config", cJSON_DetachItemFromObjectCaseSensitive(c, "Config"));
	cJSON_AddItemToObject(meta, "host_config",
			      cJSON_DetachItemFromObjectCaseSensitive(c, "HostConfig"));
	cJSON_AddItemToObject(meta, "cells", cJSON_IsArray(cells) ? cJSON_Duplicate(cells, 1)
			      : cJSON_CreateArray());
	rc = memckpt_write(path, key, meta, dir, err);
out:
	if (made) {
		struct strbuf ignore = STRBUF_INIT;

		strbuf_reset(&p);
		strbuf_addf(&p, "/containers/%s/checkpoints/%s", id, ck);
		docker_call(&d, "DELETE", p.buf, NULL, NULL, &ignore);
		strbuf_release(&ignore);
	}
	if (connected)
		docker_release(&d);
	cJSON_Delete(meta);
	cJSON_Delete(c);
	free(ready_text);
	free(seen);
	strbuf_release(&p);
	free(root);
	free(dir);
	free(id);
	free(engine);
	return rc;
}

int named_checkpoint_memory(const char *runtime, const char *name, const char *path,
			    struct strbuf *err)
{
	cJSON *msg = cJSON_CreateObject(), *r;
	int rc;

	cJSON_AddStringToObject(msg, "t", "memckpt");
	if (path)
		cJSON_AddStringToObject(msg, "path", path);
	else
		cJSON_AddTrueToObject(msg, "probe");
	r = named_ask(runtime, name, msg, path ? 300.0 : 30.0, err);
	rc = r ? 0 : -1;
	cJSON_Delete(r);
	return rc;
}

/* Copy member `key` of `from` into `to` when it is of `type` (cJSON's type bits). */
static void keep(cJSON *to, const cJSON *from, const char *key, int type)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(from, key);

	if (v && (v->type & 0xff) == type)
		cJSON_AddItemToObject(to, key, cJSON_Duplicate(v, 1));
}

/*
 * The create body of the restored container from the checkpoint's config, member by member:
 * what cellbox's own create sets (backend_docker_create.c) and nothing else, the runtime
 * gVisor's, no network, the channel `dir` mounted at the old paths `old`.
 */
static cJSON *create_body(const cJSON *meta, const char *dir, const char *old,
			  struct strbuf *err)
{
	const cJSON *cfg = cJSON_GetObjectItemCaseSensitive(meta, "config");
	const cJSON *hc = cJSON_GetObjectItemCaseSensitive(meta, "host_config");
	static const char *const cfg_strings[] = { "Image", "User", "WorkingDir" };
	static const char *const cfg_arrays[] = { "Cmd", "Env", "Entrypoint" };
	static const char *const cfg_bools[] = { "OpenStdin", "AttachStdin", "AttachStdout",
						 "AttachStderr", "StdinOnce", "Tty" };
	static const char *const hc_numbers[] = { "Memory", "MemorySwap", "NanoCpus",
						  "PidsLimit", "CpuShares" };
	const char *runtime = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(hc, "Runtime"));
	cJSON *body, *h, *binds, *labels;
	char *bind;

	if (!cJSON_IsObject(cfg) || !cJSON_IsObject(hc) || !runtime ||
	    strncmp(runtime, "runsc", 5) || !dockerckpt_name_ok(runtime)) {
		strbuf_addstr(err, "the checkpoint's container is not a gVisor one");
		return NULL;
	}
	body = cJSON_CreateObject();
	for (size_t i = 0; i < ARRAY_SIZE(cfg_strings); i++)
		keep(body, cfg, cfg_strings[i], cJSON_String);
	for (size_t i = 0; i < ARRAY_SIZE(cfg_arrays); i++)
		keep(body, cfg, cfg_arrays[i], cJSON_Array);
	for (size_t i = 0; i < ARRAY_SIZE(cfg_bools); i++) {
		keep(body, cfg, cfg_bools[i], cJSON_True);
		keep(body, cfg, cfg_bools[i], cJSON_False);
	}
	labels = cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(cfg, "Labels"), 1);
	if (!cJSON_IsObject(labels)) {
		cJSON_Delete(labels);
		labels = cJSON_CreateObject();
	}
	cJSON_DeleteItemFromObjectCaseSensitive(labels, "org.cellbox.channel");
	cJSON_AddStringToObject(labels, "org.cellbox.channel", dir);
	cJSON_DeleteItemFromObjectCaseSensitive(labels, "org.cellbox.pid");
	bind = xasprintf("%ld", (long)getpid());
	cJSON_AddStringToObject(labels, "org.cellbox.pid", bind);
	free(bind);
	cJSON_AddItemToObject(body, "Labels", labels);
	h = cJSON_AddObjectToObject(body, "HostConfig");
	cJSON_AddStringToObject(h, "Runtime", runtime);
	cJSON_AddStringToObject(h, "NetworkMode", "none");
	cJSON_AddStringToObject(h, "IpcMode", "private");
	keep(h, hc, "Init", cJSON_True);
	keep(h, hc, "ReadonlyRootfs", cJSON_True);
	keep(h, hc, "Tmpfs", cJSON_Object);
	keep(h, hc, "LogConfig", cJSON_Object);
	keep(h, hc, "SecurityOpt", cJSON_Array);
	for (size_t i = 0; i < ARRAY_SIZE(hc_numbers); i++)
		keep(h, hc, hc_numbers[i], cJSON_Number);
	cJSON_AddItemToArray(cJSON_AddArrayToObject(h, "CapDrop"), cJSON_CreateString("ALL"));
	binds = cJSON_AddArrayToObject(h, "Binds");
	bind = xasprintf("%s/host:%s/host:ro", dir, old);
	cJSON_AddItemToArray(binds, cJSON_CreateString(bind));
	free(bind);
	bind = xasprintf("%s/kernel:%s/kernel:rw", dir, old);
	cJSON_AddItemToArray(binds, cJSON_CreateString(bind));
	free(bind);
	return body;
}

/* The container's user "UID:GID" of the checkpoint, for its channel part. */
static void owner_of(const cJSON *meta, struct channel *ch)
{
	const char *u = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(
		cJSON_GetObjectItemCaseSensitive(meta, "config"), "User"));
	unsigned long uid, gid;
	char *end;

	if (!u)
		return;
	uid = strtoul(u, &end, 10);
	if (end == u || *end != ':' || uid > 0x7fffffffUL)
		return;
	gid = strtoul(end + 1, &end, 10);
	if (*end || gid > 0x7fffffffUL)
		return;
	channel_set_owner(ch, (uid_t)uid, (gid_t)gid);
}

static char *kept_runtime;

struct session *named_memckpt_restore(const struct session_opts *opts, const char *path,
				      struct strbuf *err)
{
	/* The kernel is a docker container under gVisor, whatever the settings' backend says. */
	struct session_opts copy = *opts, *so = &copy;
	char key[MEMCKPT_KEY_HEX + 1], hash[65], *root = NULL, *runtime = NULL, *ckdir = NULL;
	const struct kernel_def *k;
	const char *old, *ready, *id, *rt;
	struct channel ch;
	struct docker d;
	struct strbuf p = STRBUF_INIT;
	cJSON *meta = NULL, *body = NULL, *reply = NULL;
	struct session *s = NULL;
	int connected = 0, have_ch = 0;

	memset(&ch, 0, sizeof(ch));
	if (load_key(key, err) < 0 || memckpt_read(path, key, &meta, err) < 0)
		goto out;
	old = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(meta, "channel"));
	ready = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(meta, "ready"));
	k = kernel_find(so->kernel ? so->kernel : "python");
	if (!mount_path_ok(old) || !ready || strlen(ready) > READY_MAX || !k) {
		strbuf_addf(err, "'%s': its channel, ready file or kernel is not as written", path);
		goto out;
	}
	runner_hash(k, hash);
	rt = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(meta, "runner_sha256"));
	if (!rt || strcmp(rt, hash)) {
		strbuf_addf(err, "'%s' was made by another cellbox (its runner differs from this "
			    "one's): a memory restore needs the same", path);
		goto out;
	}
	/* The options' strings are borrowed for the session's life: the runtime's kept. */
	copy.backend = "docker";
	rt = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(
		cJSON_GetObjectItemCaseSensitive(meta, "host_config"), "Runtime"));
	free(kept_runtime);
	kept_runtime = xstrdup(rt ? rt : "runsc");
	copy.sandbox.runtime = kept_runtime;
	if (docker_init(&d, so->sandbox.host, err) < 0)
		goto out;
	connected = 1;
	if (engine_ok(&d, &root, err) < 0)
		goto out;
	runtime = session_runtime_dir(so->runtime_dir);
	if (!runtime || channel_create(&ch, runtime, err) < 0)
		goto out;
	have_ch = 1;
	ch.quota = so->channel_quota;
	owner_of(meta, &ch);
	if (channel_reset_kernel(&ch, 1, err) < 0 ||
	    channel_write(&ch, k->runner, k->code, *k->code_len, err) < 0)
		goto out;
	if (pwrite(ch.ready_fd, ready, strlen(ready), 0) != (ssize_t)strlen(ready)) {
		strbuf_addf(err, "cannot write the ready file: %s", strerror(errno));
		goto out;
	}
	body = create_body(meta, ch.dir, old, err);
	if (!body || docker_call(&d, "POST", "/containers/create", body, &reply, err) != 201)
		goto out;
	id = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(reply, "Id"));
	if (!dockerckpt_name_ok(id)) {
		strbuf_addstr(err, "the engine gave no container id");
		goto out;
	}
	ckdir = dockerckpt_dir(root, id, "restore");
	strbuf_addf(&p, "%s/containers/%s/checkpoints", root, id);
	if (mkdir(p.buf, 0700) < 0 && errno != EEXIST) {
		strbuf_addf(err, "cannot create '%s': %s", p.buf, strerror(errno));
		goto remove;
	}
	if (memckpt_extract(path, key, ckdir, err) < 0 ||
	    dockerckpt_start(&d, id, "restore", err) < 0)
		goto remove;
	backend_write_note(ch.dir, BACKEND_CONTAINER_FILE, id);
	backend_write_note(ch.dir, RESTORED_NOTE, "1\n");
	if (so->sandbox.host)
		backend_write_note(ch.dir, BACKEND_ENGINE_FILE, so->sandbox.host);
	s = session_attach(so, ch.dir, err);
	if (s)
		goto out;
remove:
	strbuf_reset(&p);
	strbuf_addf(&p, "/containers/%s?force=1", id);
	{
		struct strbuf ignore = STRBUF_INIT;

		docker_call(&d, "DELETE", p.buf, NULL, NULL, &ignore);
		strbuf_release(&ignore);
	}
out:
	if (have_ch)
		channel_release(&ch, s == NULL);
	if (connected)
		docker_release(&d);
	cJSON_Delete(meta);
	cJSON_Delete(body);
	cJSON_Delete(reply);
	strbuf_release(&p);
	free(root);
	free(runtime);
	free(ckdir);
	return s;
}
