/*
 * Forking a named session (named.h, docs/sessions.md "Fork"), the host's part: the new
 * session's channel made, the copy's pid found as this machine sees it, its pid note
 * written, and the new session's host started on it by adoption. The kernel's part is the
 * runner's fork request (kernels/PROTOCOL.md). Local kernels only: a copy of a process can
 * be made only inside the pid namespace it is in, so the copy lives in the forked kernel's.
 */
#include "named_int.h"
#include "session_int.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "backend.h"
#include "channel.h"
#include "fsutil.h"
#include "kernel.h"
#include "msg.h"
#include "util.h"

/* The copy's channel, made for it by the host: its path, or NULL with `err`. */
static char *fork_channel(struct session *s, struct strbuf *err)
{
	struct strbuf why = STRBUF_INIT;
	const struct backend_ops *ops = s->named ? NULL :
					backend_find(session_backend_name(s), &why);
	struct channel ch;
	char *dir;

	strbuf_release(&why);
	/* a kernel that is a process of this host, its copies adopted by pid: the local backend */
	if (!ops || !(ops->flags & BACKEND_CHILD_KERNELS)) {
		strbuf_addstr(err, "only a session of the local backend can be forked here");
		return NULL;
	}
	if (strcmp(session_kernel(s)->name, "python")) {
		strbuf_addf(err, "the %s kernel cannot be forked (its runner has no fork request: "
			    "only Python's)", session_kernel(s)->name);
		return NULL;
	}
	if (!s->be || session_state(s) == SESSION_DEAD) {
		strbuf_addstr(err, "its kernel is not running");
		return NULL;
	}
	if (channel_create(&ch, s->runtime_dir, err) < 0)
		return NULL;
	/*
	 * No tmpfs on kernel/: the kernel that forks lives in a mount namespace made before it,
	 * which a mount made now does not reach (this machine's mounts are private). Its quota
	 * is kept by watching, as where cellbox may not mount.
	 */
	if (channel_reset_kernel(&ch, 0, err) < 0) {
		channel_release(&ch, 1);
		return NULL;
	}
	dir = xstrdup(ch.dir);
	channel_release(&ch, 0);
	return dir;
}

/* What /proc/PID/ns/pid links to ("pid:[N]"), into `out` (size `n`); -1 when it cannot. */
static int pid_ns_of(pid_t pid, char *out, size_t n)
{
	char path[64];
	ssize_t len;

	snprintf(path, sizeof(path), "/proc/%ld/ns/pid", (long)pid);
	len = readlink(path, out, n - 1);
	if (len <= 0)
		return -1;
	out[len] = 0;
	return 0;
}

/* The innermost pid of /proc/PID/status's NSpid line; -1 when not there. */
static long inner_pid_of(pid_t pid)
{
	struct strbuf st = STRBUF_INIT;
	char path[64], *line, *end;
	long last = -1;

	snprintf(path, sizeof(path), "/proc/%ld/status", (long)pid);
	if (strbuf_read_file(&st, path, 1 << 16) == 0 && (line = strstr(st.buf, "\nNSpid:"))) {
		line += 7;
		end = strchr(line, '\n');
		if (end)
			*end = 0;
		for (char *tok = strtok(line, " \t"); tok; tok = strtok(NULL, " \t"))
			last = strtol(tok, NULL, 10);
	}
	strbuf_release(&st);
	return last;
}

/* Whether `pid` is, now, the process `nspid` of namespace `ns`. */
static int is_in(pid_t pid, const char *ns, long nspid)
{
	char here[64];

	return pid_ns_of(pid, here, sizeof(here)) == 0 && !strcmp(here, ns) &&
	       inner_pid_of(pid) == nspid;
}

/* The process that is `nspid` in the pid namespace of process `ref` (a pidfd in *pidfd), or 0. */
static pid_t fork_find(pid_t ref, long nspid, int *pidfd)
{
	char ns[64];
	struct dirent *e;
	pid_t found = 0;
	DIR *d;

	*pidfd = -1;
	if (nspid <= 0 || pid_ns_of(ref, ns, sizeof(ns)) < 0 || !(d = opendir("/proc")))
		return 0;
	/* The kernel's word (its pid) is only looked for, among the processes of its namespace. */
	while (!found && (e = readdir(d))) {
		char *end;
		long p = strtol(e->d_name, &end, 10);

		if (*end || p <= 0 || !is_in((pid_t)p, ns, nspid))
			continue;
		*pidfd = (int)syscall(SYS_pidfd_open, (pid_t)p, 0);
		/* Looked at again once held: the pid may have been another's in between. */
		if (*pidfd >= 0 && is_in((pid_t)p, ns, nspid)) {
			found = (pid_t)p;
		} else if (*pidfd >= 0) {
			close(*pidfd);
			*pidfd = -1;
		}
	}
	closedir(d);
	return found;
}

/* The pid note of a channel (BACKEND_PID_FILE), as backend_local.c writes it. */
static int write_pid_note(const char *channel, pid_t pid, struct strbuf *err)
{
	char *path = xasprintf("%s/" BACKEND_PID_FILE, channel), text[24];
	int n = snprintf(text, sizeof(text), "%ld\n", (long)pid);
	int rc = fsutil_write_atomic(path, text, (size_t)n, 0600, err);

	free(path);
	return rc;
}

/* The pid a kernel's ready file in `channel` says (its own word, as its namespace sees it). */
static long ready_pid(const char *channel)
{
	struct strbuf ready = STRBUF_INIT;
	char *path = xasprintf("%s/kernel/ready", channel);
	const cJSON *pid;
	cJSON *info = NULL;
	long n = -1;

	if (strbuf_read_file(&ready, path, 1 << 20) == 0 &&
	    (info = cJSON_ParseWithLength(ready.buf, ready.len)) &&
	    cJSON_IsNumber(pid = cJSON_GetObjectItemCaseSensitive(info, "pid")) &&
	    pid->valuedouble >= 1 && pid->valuedouble <= 4194304)	/* pid_max's ceiling */
		n = (long)pid->valuedouble;
	cJSON_Delete(info);
	strbuf_release(&ready);
	free(path);
	return n;
}

/* What the new session's host opens: the forked session's options, on the copy's channel. */
struct fork_open {
	struct session_opts opts;
	const char *channel;
};

static struct session *fork_open(void *data, session_state_fn on_state, void *state_data,
				 struct strbuf *err)
{
	struct fork_open *fo = data;
	struct session_opts so = fo->opts;

	so.on_state = on_state;
	so.state_data = state_data;
	return session_attach(&so, fo->channel, err);
}

/* The copy found, its pid note written, its host started (named_int.h says how). */
static pid_t fork_finish(struct session *s, const char *runtime, const char *name,
			 const char *channel, const struct named_recorder *rec, int *pidfd,
			 struct strbuf *err)
{
	struct fork_open fo = { .opts = s->opts, .channel = channel };
	long ref = backend_kernel_pid(session_channel_dir(s), NULL), nspid = ready_pid(channel);
	pid_t pid = 0;

	*pidfd = -1;
	if (ref > 0)
		pid = fork_find((pid_t)ref, nspid, pidfd);
	if (!pid) {
		strbuf_addstr(err, "the copy of the kernel is not to be found");
		goto out;
	}
	if (write_pid_note(channel, pid, err) < 0 ||
	    named_start(runtime, name, NULL, fork_open, &fo, rec, err) < 0) {
		kill(pid, SIGKILL);
		close(*pidfd);
		*pidfd = -1;
		pid = 0;
	}
out:
	if (!pid)
		channel_remove_dir(channel);
	return pid;
}

/* A fork under way: the kernel's fork request in flight. */
struct fork_req {
	struct session *s;
	const struct named_recorder *rec;
	char *name, *channel, *runtime;
	struct strbuf why;		/* the kernel's error, when it said one */
	named_forked_fn done;
	void *data;
};

static void fork_req_free(struct fork_req *f)
{
	free(f->name);
	free(f->channel);
	free(f->runtime);
	strbuf_release(&f->why);
	free(f);
}

/* The kernel's fork request ended: the copy taken over by a new host, or why not. */
static void on_fork_event(struct session *s, const struct session_event *ev, void *data)
{
	struct fork_req *f = data;
	struct strbuf err = STRBUF_INIT;
	pid_t pid = 0;
	int pidfd = -1;

	if (ev->type == SESSION_EV_ERROR && ev->error.evalue && !f->why.len)
		strbuf_addstr(&f->why, ev->error.evalue);
	if (ev->type != SESSION_EV_DONE)
		return;
	if (ev->done.status != SESSION_STATUS_OK) {
		strbuf_addf(&err, "the kernel did not fork: %s",
			    f->why.len ? f->why.buf : event_status_name(ev->done.status));
		channel_remove_dir(f->channel);
	} else {
		pid = fork_finish(s, f->runtime, f->name, f->channel, f->rec, &pidfd, &err);
	}
	f->done(f->data, f->name, pid ? pidfd : -1, pid ? NULL : err.len ? err.buf : "failed");
	strbuf_release(&err);
	fork_req_free(f);
}

int named_fork_begin(struct session *s, const char *self, const char *name,
		     const char *runtime, const struct named_recorder *rec,
		     named_forked_fn done, void *data, struct strbuf *err)
{
	struct fork_req *f;
	cJSON *params;
	unsigned long id;
	char *channel;

	if (!name || !named_name_ok(name)) {
		strbuf_addstr(err, "a fork needs a valid name");
		return -1;
	}
	if (!strcmp(name, self)) {
		strbuf_addf(err, "a session named '%s' is running", name);
		return -1;
	}
	if (!(channel = fork_channel(s, err)))
		return -1;
	f = xcalloc(1, sizeof(*f));
	f->s = s;
	f->rec = rec;
	f->name = xstrdup(name);
	f->channel = channel;
	f->runtime = xstrdup(runtime);
	f->done = done;
	f->data = data;
	strbuf_init(&f->why, 0);
	params = cJSON_CreateObject();
	cJSON_AddStringToObject(params, "channel", channel);
	id = session_request(s, "fork", params, on_fork_event, f, err);
	cJSON_Delete(params);
	if (!id) {
		channel_remove_dir(channel);
		fork_req_free(f);
		return -1;
	}
	return 0;
}

int named_fork_alive(const int *pidfds, int n)
{
	int live = 0;

	for (int i = 0; i < n; i++) {
		struct pollfd p = { .fd = pidfds[i], .events = POLLIN };

		live += pidfds[i] >= 0 && poll(&p, 1, 0) == 0;
	}
	return live;
}

void named_fork_linger(struct session *s, const int *pidfds, int n)
{
	char *channel = xstrdup(session_channel_dir(s));
	long ref = backend_kernel_pid(channel, NULL);
	int runner_fd = -1;
	pid_t runner = ref > 0 ? fork_find((pid_t)ref, ready_pid(channel), &runner_fd) : 0;

	/*
	 * The session's own kernel stops (its memory kept, nothing of it runs): ending it would
	 * end its pid namespace's init, and with it every copy living there.
	 */
	msg_error("the session ended while %d fork(s) of its kernel live: its kernel (%ld) is "
		  "stopped until they end", named_fork_alive(pidfds, n), (long)runner);
	if (runner > 0)
		kill(runner, SIGSTOP);
	if (runner_fd >= 0)
		close(runner_fd);
	session_detach(s);
	while (named_fork_alive(pidfds, n)) {
		struct pollfd p[NAMED_MAX_FORKS];
		int m = 0;

		/* Only the live ones: an ended copy's pidfd stays readable. */
		for (int i = 0; i < n && m < NAMED_MAX_FORKS; i++)
			if (pidfds[i] >= 0 && named_fork_alive(&pidfds[i], 1))
				p[m++] = (struct pollfd){ .fd = pidfds[i], .events = POLLIN };
		if (poll(p, (nfds_t)m, 60000) < 0 && errno != EINTR)
			break;
	}
	if (ref > 0) {
		kill(-(pid_t)ref, SIGKILL);
		kill((pid_t)ref, SIGKILL);
	}
	channel_remove_dir(channel);
	free(channel);
}

int named_fork(const char *runtime, const char *name, const char *new_name, struct strbuf *err)
{
	cJSON *msg = cJSON_CreateObject(), *r;
	int rc;

	cJSON_AddStringToObject(msg, "t", "fork");
	cJSON_AddStringToObject(msg, "name", new_name);
	/* A busy kernel forks once its cell ends: no cap on the wait beyond the call's. */
	r = named_ask(runtime, name, msg, 24 * 3600.0, err);
	rc = r ? 0 : -1;
	cJSON_Delete(r);
	return rc;
}
