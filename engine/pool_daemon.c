/* Pooled mode, the daemon's side: serve, spawn, health, reaping, status. */
#include "pool_daemon.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/file.h>
#include <sys/inotify.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "backend.h"
#include "channel.h"
#include "kernel.h"
#include "wall.h"
#include "zygote.h"

void pool_config_defaults(struct pool_config *pc)
{
	memset(pc, 0, sizeof(*pc));
	pc->min_size = 1;
	pc->max_size = 4;
	pc->prewarm = 1;
	pc->idle_timeout = 300;
	pc->max_age = 3600;
	pc->health_interval = 30;
}

struct pkernel {
	char *name;
	pid_t pid;		/* local: the runner's; container: the runner's inside it */
	struct backend *be;	/* container backends: the adopted container, else NULL */
	double born;		/* when it became ready */
	double ready_since;	/* when it last went into ready/ */
	pid_t client;		/* 0 while ready */
	int dying;		/* killed, waiting to be reaped */
};

struct daemon {
	const char *dir;
	const struct pool_config *pc;
	struct session_opts kopts;
	const char *backend;	/* kopts.backend or the default */
	FILE *log;
	int containers;		/* the kernels are not our children (containers): adopt them */
	int epfd;		/* the loop's epoll set: containers' wait connections join it */
	struct pkernel *k;
	size_t nk, alloc;
	double next_health;
	double spawn_after;	/* after a failed start: not before this (back-off) */
	double backoff;		/* the current back-off in seconds, 0 after a success */
	struct zygote *zygote;	/* local Python kernels are forked from it (zygote.h) */
	double zygote_after;	/* after a zygote failed: no new one before this */
	double zygote_backoff;
	int stop;
};

/* One line of the daemon's log. */
static void dlog(struct daemon *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void dlog(struct daemon *d, const char *fmt, ...)
{
	va_list ap;

	if (!d->log)
		return;
	fprintf(d->log, "cellbox pool: ");
	va_start(ap, fmt);
	vfprintf(d->log, fmt, ap);
	va_end(ap);
	fputc('\n', d->log);
	fflush(d->log);
}

/* A path inside the pool (caller frees). */
static char *ppath(const struct daemon *d, const char *a, const char *b)
{
	return b ? xasprintf("%s/%s/%s", d->dir, a, b) : xasprintf("%s/%s", d->dir, a);
}

/* Count the kernels that are ready or leased (not dying). */
static void count(const struct daemon *d, int *ready, int *leased)
{
	*ready = *leased = 0;
	for (size_t i = 0; i < d->nk; i++) {
		if (d->k[i].dying)
			continue;
		if (d->k[i].client)
			(*leased)++;
		else
			(*ready)++;
	}
}

/* Kill a kernel and remove its entry and channel; it is dropped once reaped. */
static void destroy(struct daemon *d, struct pkernel *k, const char *why)
{
	char *p;

	dlog(d, "retiring kernel %s (pid %ld): %s", k->name, (long)k->pid, why);
	if (k->be) {
		k->be->ops->kill(k->be);	/* removes the container; dropped at the next reap */
	} else if (k->pid > 0) {
		kill(-k->pid, SIGKILL);
		kill(k->pid, SIGKILL);
	}
	p = ppath(d, "ready", k->name);
	unlink(p);
	free(p);
	p = ppath(d, "kernels", k->name);
	channel_remove_dir(p);
	free(p);
	k->dying = 1;
}

/* Take over the container of the kernel in channel `dir` (the daemon's own watch on it). */
static struct backend *adopt_container(struct daemon *d, const char *dir, pid_t pid,
				       struct strbuf *err)
{
	struct kernel_handle k = { .channel_dir = dir, .pid = pid, .sandbox = &d->kopts.sandbox };

	return backend_adopt(d->backend, &k, err);
}

/*
 * Wake the loop when a ready container stops: its wait connection joins the epoll set, one
 * shot at a time (re-armed while it is ready, so a leased one never keeps the loop busy).
 */
static void watch_container(struct daemon *d, struct pkernel *k)
{
	struct epoll_event ev = { .events = EPOLLIN | EPOLLONESHOT };
	int fd = k->be ? k->be->ops->exit_fd(k->be) : -1;

	if (fd < 0 || d->epfd < 0)
		return;
	ev.data.fd = fd;
	if (epoll_ctl(d->epfd, EPOLL_CTL_MOD, fd, &ev) < 0)
		epoll_ctl(d->epfd, EPOLL_CTL_ADD, fd, &ev);
}

/* What a warming cell said: its error, and whether it ended well. */
struct warm_outcome {
	struct strbuf error;
	int done, ok;
};

/* Keep the outcome of a warming cell. */
static void on_warm_event(struct session *s, const struct session_event *ev, void *data)
{
	struct warm_outcome *w = data;

	(void)s;
	if (ev->type == SESSION_EV_ERROR) {
		strbuf_reset(&w->error);
		strbuf_addf(&w->error, "%s: %s", ev->error.ename ? ev->error.ename : "Error",
			    ev->error.evalue ? ev->error.evalue : "");
	} else if (ev->type == SESSION_EV_DONE) {
		w->done = 1;
		w->ok = ev->done.reason == REASON_OK;
		if (!w->ok && !w->error.len)
			strbuf_addstr(&w->error, ev->done.detail ? ev->done.detail :
					       reason_name(ev->done.reason));
	}
}

/* The interpreter of this pool's kernels when they can come from a zygote (local Python). */
static const char *zygote_python(const struct daemon *d)
{
	const struct kernel_def *k = d->kopts.kernel ? kernel_find(d->kopts.kernel) : NULL;

	k = k ? k : kernel_default();
	if (d->containers || strcmp(k->name, "python"))
		return NULL;
	return d->kopts.python && *d->kopts.python ? d->kopts.python : k->interpreter;
}

/* Leave the zygote's pid in its directory (pool status, the tests). */
static void note_zygote_pid(struct daemon *d, pid_t pid)
{
	char *p = ppath(d, "zygote", "pid");
	char text[24];
	int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);

	snprintf(text, sizeof(text), "%ld\n", (long)pid);
	if (fd >= 0) {
		write_all(fd, text, strlen(text));
		close(fd);
	}
	free(p);
}

/*
 * Keep a zygote that fits the pool: a new one when it died, failed, or was started with
 * other pre-imports; after a failure not at once (its kernels start cold meanwhile).
 */
static void keep_zygote(struct daemon *d)
{
	const char *pre = d->pc->preimport ? d->pc->preimport : "";
	struct strbuf err = STRBUF_INIT;
	char *dir;

	if (!zygote_python(d))
		return;
	if (d->zygote && zygote_usable(d->zygote) && !strcmp(zygote_preimport(d->zygote), pre))
		return;
	if (d->zygote) {
		if (!zygote_usable(d->zygote)) {
			dlog(d, "the zygote (pid %ld) is gone: %s", (long)zygote_pid(d->zygote),
			     zygote_error(d->zygote));
			d->zygote_backoff = d->zygote_backoff > 0 ?
					    (d->zygote_backoff * 2 < 60 ? d->zygote_backoff * 2 : 60) : 1;
			d->zygote_after = now_monotonic() + d->zygote_backoff;
		}
		zygote_free(d->zygote);
		d->zygote = NULL;
		note_zygote_pid(d, 0);
	}
	if (now_monotonic() < d->zygote_after)
		return;
	dir = ppath(d, "zygote", NULL);
	d->zygote = zygote_start(dir, zygote_python(d), pre, &err);
	if (d->zygote) {
		dlog(d, "zygote (pid %ld) started%s%s", (long)zygote_pid(d->zygote),
		     *pre ? " with " : "", pre);
		note_zygote_pid(d, zygote_pid(d->zygote));
	} else {
		dlog(d, "cannot start a zygote: %s", err.buf);
		d->zygote_after = now_monotonic() + 60;
	}
	zygote_install(d->zygote);
	free(dir);
	strbuf_release(&err);
}

/* Let go of a kernel's session on a thread of its own. */
static void *detach_thread(void *s)
{
	session_detach(s);
	return NULL;
}

/*
 * Let go of a session off the loop: closing its inotify descriptor waits for the kernel's
 * grace period (3 to 20 ms here), which the next kernel need not wait for. Only descriptors
 * and memory go: nothing in the channel changes, so a client may lease the kernel meanwhile.
 */
static void detach_later(struct session *s)
{
	pthread_attr_t attr;
	pthread_t t;
	int rc;

	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	rc = pthread_create(&t, &attr, detach_thread, s);
	pthread_attr_destroy(&attr);
	if (rc != 0)
		session_detach(s);
}

/* Start one kernel, pre-import what is configured, and put it in ready/. */
static int spawn(struct daemon *d)
{
	struct strbuf err = STRBUF_INIT;
	struct session *s;
	const cJSON *pid;
	const char *dir, *name;
	struct pkernel *k;
	struct backend *be = NULL;
	char *entry;
	double t0 = now_monotonic(), t_open;
	int rc = -1, forked;

	keep_zygote(d);
	forked = zygote_usable(d->zygote);
	s = session_open(&d->kopts, &err);
	forked = forked && zygote_usable(d->zygote);
	t_open = now_monotonic();
	if (forked && d->zygote_backoff > 0)
		d->zygote_backoff = 0;		/* it forked one: a later failure is a fresh one */
	if (!s) {
		dlog(d, "cannot start a kernel: %s", err.buf);
		goto out;
	}
	/*
	 * Warm it fully before anyone leases it: the first completion builds IPython's
	 * completer (jedi), which the runner otherwise does in its first idle moment. A kernel
	 * forked from the zygote has jedi's caches warm already: its completer is built in its
	 * first idle moment, off the path of a sustained load.
	 */
	if (!forked) {
		cJSON *params = cJSON_CreateObject();
		struct strbuf e2 = STRBUF_INIT;
		unsigned long id;

		cJSON_AddStringToObject(params, "code", "import o");
		cJSON_AddNumberToObject(params, "cursor_pos", 8);
		id = session_request(s, "complete", params, NULL, NULL, &e2);
		if (id)
			while (session_wait(s, id) < 0)
				;
		cJSON_Delete(params);
		strbuf_release(&e2);
	}
	if (d->pc->preimport && *d->pc->preimport) {
		char *code = session_kernel(s)->preimport(d->pc->preimport);
		struct warm_outcome w = { STRBUF_INIT, 0, 0 };
		unsigned long id = session_execute(s, code, SESSION_EXEC_SILENT, 120, on_warm_event,
						   &w, &w.error);

		if (id)
			while (session_wait(s, id) < 0)
				;
		/* The kernel is offered all the same; its users learn the module is missing. */
		if (!id || !w.ok)
			dlog(d, "pre-import of '%s' failed: %s", d->pc->preimport, w.error.buf);
		free(code);
		strbuf_release(&w.error);
	}
	pid = cJSON_GetObjectItemCaseSensitive(session_kernel_info(s), "pid");
	dir = session_channel_dir(s);
	name = strrchr(dir, '/') + 1;
	if (d->containers &&
	    !(be = adopt_container(d, dir, cJSON_IsNumber(pid) ? (pid_t)pid->valueint : 0, &err))) {
		dlog(d, "cannot keep the container of kernel %s: %s", name, err.buf);
		session_close(s);
		goto out;
	}
	if (d->nk == d->alloc) {
		d->alloc = d->alloc ? 2 * d->alloc : 8;
		d->k = xrealloc(d->k, d->alloc * sizeof(*d->k));
	}
	k = &d->k[d->nk++];
	memset(k, 0, sizeof(*k));
	k->name = xstrdup(name);
	k->pid = cJSON_IsNumber(pid) ? (pid_t)pid->valueint : 0;
	k->be = be;
	watch_container(d, k);
	k->born = k->ready_since = now_monotonic();
	if (d->containers)
		session_detach(s);	/* (the engine's connection is the loop's) */
	else
		detach_later(s);
	entry = ppath(d, "ready", k->name);
	close(open(entry, O_WRONLY | O_CREAT | O_CLOEXEC, 0600));
	free(entry);
	dlog(d, "kernel %s (pid %ld) ready in %.0f ms (started in %.0f)%s", k->name, (long)k->pid,
	     (now_monotonic() - t0) * 1e3, (t_open - t0) * 1e3,
	     forked ? ", forked from the zygote" : "");
	rc = 0;
out:
	strbuf_release(&err);
	return rc;
}

/* Find a kernel of the table by name. */
static struct pkernel *find(struct daemon *d, const char *name)
{
	for (size_t i = 0; i < d->nk; i++)
		if (!strcmp(d->k[i].name, name))
			return &d->k[i];
	return NULL;
}

/* Drop kernel i from the table. */
static void drop(struct daemon *d, size_t i)
{
	if (d->k[i].be)
		d->k[i].be->ops->free(d->k[i].be);
	free(d->k[i].name);
	d->k[i] = d->k[--d->nk];
}

/*
 * Containers: drop the removed ones; replace a ready one that stopped. A leased container is
 * its client's: the daemon neither reaps nor removes it (the client reads why it ended).
 */
static void reap_containers(struct daemon *d)
{
	for (size_t i = 0; i < d->nk; ) {
		struct pkernel *k = &d->k[i];
		struct strbuf why = STRBUF_INIT;
		enum reason reason;
		char *entry;
		int ready;

		if (!k->be) {
			i++;
			continue;
		}
		if (k->dying) {
			drop(d, i);
			continue;
		}
		entry = ppath(d, "ready", k->name);
		ready = !k->client && access(entry, F_OK) == 0;
		free(entry);
		if (ready && k->be->ops->reap(k->be, &reason, &why)) {
			destroy(d, k, why.buf);
			strbuf_release(&why);
			drop(d, i);
			continue;
		}
		if (ready)
			watch_container(d, k);
		strbuf_release(&why);
		i++;
	}
}

/* Reap exited kernels: leave their status for an adopting client, drop them. */
static void reap(struct daemon *d)
{
	int status;
	pid_t pid;

	if (d->containers)
		reap_containers(d);
	while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
		if (zygote_reaped(d->zygote, pid))
			continue;	/* told and replaced at the next spawn */
		for (size_t i = 0; i < d->nk; i++) {
			struct pkernel *k = &d->k[i];
			char *p, text[16];

			if (k->pid != pid)
				continue;
			p = xasprintf("%s/kernels/%s/exit_status", d->dir, k->name);
			snprintf(text, sizeof(text), "%d", status);
			{
				int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
				if (fd >= 0) {
					write_all(fd, text, strlen(text));
					close(fd);
				}
			}
			free(p);
			if (!k->dying && !k->client) {
				struct strbuf why = STRBUF_INIT;
				backend_describe_status(status, NULL, &why);
				destroy(d, k, why.buf);
				strbuf_release(&why);
			}
			drop(d, i);
			break;
		}
	}
}

/* Bring the table in line with ready/ and leased/: new leases, releases, dead clients. */
static void sync_leases(struct daemon *d)
{
	char *leased = ppath(d, "leased", NULL);
	DIR *dir = opendir(leased);
	struct dirent *de;

	for (size_t i = 0; i < d->nk; i++) {
		struct pkernel *k = &d->k[i];
		char *p;

		if (k->client) {
			k->client = -k->client;		/* unseen until found below */
		} else if (!k->dying) {
			/*
			 * Not in ready/ (looked at before leased/, so a lease cannot slip between):
			 * leased since, and maybe released already, before we saw it.
			 */
			p = ppath(d, "ready", k->name);
			if (access(p, F_OK) < 0 && errno == ENOENT)
				k->client = -1;
			free(p);
		}
	}
	while (dir && (de = readdir(dir))) {
		char *dot = strrchr(de->d_name, '.'), *name;
		pid_t client;
		struct pkernel *k;

		if (de->d_name[0] == '.' || !dot)
			continue;
		client = (pid_t)atol(dot + 1);
		name = xstrndup(de->d_name, (size_t)(dot - de->d_name));
		k = find(d, name);
		if (client == getpid()) {
			/* our own health-check lease, left by a crash of the check: put it back */
		} else if (!process_alive(client)) {
			char *p = ppath(d, "leased", de->d_name);
			unlink(p);
			free(p);
			if (k && !k->dying) {
				destroy(d, k, "its client died");
			} else if (!k) {
				p = ppath(d, "kernels", name);
				channel_remove_dir(p);
				free(p);
			}
		} else if (k) {
			if (k->client == 0 || k->client == -1)
				dlog(d, "kernel %s leased to pid %ld", k->name, (long)client);
			k->client = client;
		}
		free(name);
	}
	if (dir)
		closedir(dir);
	free(leased);
	for (size_t i = 0; i < d->nk; i++) {
		struct pkernel *k = &d->k[i];
		if (k->client < 0 && !k->dying) {
			/* The client gave the kernel up: it ends it; make sure, and clean up. */
			k->client = 0;
			destroy(d, k, "released by its client");
		}
	}
}

/* The number of clients waiting for a kernel. */
static int waiting_clients(struct daemon *d)
{
	char *want = ppath(d, POOL_WANT_DIR, NULL);
	DIR *dir = opendir(want);
	struct dirent *de;
	int n = 0;

	while (dir && (de = readdir(dir))) {
		if (de->d_name[0] == '.')
			continue;
		if (process_alive((pid_t)atol(de->d_name))) {
			n++;
		} else {
			char *p = ppath(d, POOL_WANT_DIR, de->d_name);
			unlink(p);
			free(p);
		}
	}
	if (dir)
		closedir(dir);
	free(want);
	return n;
}

/* Ping a ready kernel through its channel; 0 when it answered. */
static int ping(struct daemon *d, struct pkernel *k)
{
	char *from = ppath(d, "ready", k->name);
	char *to = xasprintf("%s/leased/%s.%ld", d->dir, k->name, (long)getpid());
	char *chan = ppath(d, "kernels", k->name);
	struct strbuf err = STRBUF_INIT;
	struct session *s = NULL;
	cJSON *params = NULL;
	unsigned long id = 0;
	double deadline = now_monotonic() + 5;
	int rc = -1;

	if (rename(from, to) < 0) {
		rc = 0;		/* a client took it meanwhile: not ours to check */
		goto out;
	}
	s = session_attach(&d->kopts, chan, &err);
	if (!s)
		goto back;
	params = cJSON_CreateObject();
	cJSON_AddStringToObject(params, "code", "pass");
	id = session_request(s, "is_complete", params, NULL, NULL, &err);
	while (id && session_pending(s, id) && now_monotonic() < deadline &&
	       session_state(s) != SESSION_DEAD) {
		struct pollfd pfd = { .fd = session_fd(s), .events = POLLIN };
		poll(&pfd, 1, 100);
		session_dispatch(s);
	}
	if (id && !session_pending(s, id) && session_state(s) == SESSION_IDLE)
		rc = 0;
	session_detach(s);
back:
	if (rename(to, from) < 0)
		unlink(to);
out:
	cJSON_Delete(params);
	strbuf_release(&err);
	free(from);
	free(to);
	free(chan);
	return rc;
}

/* Apply the pool's policies once: retire, check, refill. */
static void maintain(struct daemon *d)
{
	const struct pool_config *pc = d->pc;
	double now = now_monotonic();
	int ready, leased, want;

	reap(d);
	sync_leases(d);
	count(d, &ready, &leased);
	for (size_t i = 0; i < d->nk; i++) {
		struct pkernel *k = &d->k[i];

		if (k->dying || k->client)
			continue;
		if (pc->max_age > 0 && now - k->born > pc->max_age) {
			destroy(d, k, "older than max-age");
			ready--;
		} else if (pc->idle_timeout > 0 && ready > pc->min_size &&
			   now - k->ready_since > pc->idle_timeout) {
			destroy(d, k, "idle past idle-timeout");
			ready--;
		}
	}
	if (pc->health_interval > 0 && now >= d->next_health) {
		d->next_health = now + pc->health_interval;
		for (size_t i = 0; i < d->nk; i++) {
			struct pkernel *k = &d->k[i];
			if (!k->dying && !k->client && ping(d, k) < 0) {
				destroy(d, k, "it stopped answering");
				ready--;
			}
		}
	}
	want = pc->min_size;
	{
		int waiting = waiting_clients(d);
		if (waiting > want)
			want = waiting;
	}
	if (ready < want && ready + leased < pc->max_size && now >= d->spawn_after) {
		/* A kernel that cannot start (no image, no interpreter) is retried, slower and slower. */
		if (spawn(d) < 0) {
			d->backoff = d->backoff > 0 ? (d->backoff * 2 < 30 ? d->backoff * 2 : 30) : 0.5;
			d->spawn_after = now_monotonic() + d->backoff;
		} else {
			d->backoff = 0;
		}
	}
}

/* Remove what a previous daemon left: ready entries, dead leases, unowned channels. */
static void clean_leftovers(struct daemon *d)
{
	static const char *const subdirs[] = { "ready", "kernels" };
	struct daemon probe = *d;

	probe.nk = 0;
	probe.k = NULL;
	sync_leases(&probe);		/* drops leases whose clients died */
	if (d->containers) {
		/* A crashed daemon's containers carry its pid: they are a dead process's now. */
		struct strbuf out = STRBUF_INIT, err = STRBUF_INIT;
		int n = backend_gc(d->backend, d->kopts.sandbox.host, &out, &err);

		if (n < 0)
			dlog(d, "cannot remove a previous daemon's containers: %s", err.buf);
		else if (n > 0)
			dlog(d, "removed %d container%s a previous daemon left", n, n == 1 ? "" : "s");
		strbuf_release(&out);
		strbuf_release(&err);
	}
	for (size_t i = 0; i < ARRAY_SIZE(subdirs); i++) {
		char *path = ppath(d, subdirs[i], NULL);
		DIR *dir = opendir(path);
		struct dirent *de;

		while (dir && (de = readdir(dir))) {
			char *p, *pattern;
			int leased = 0;

			if (de->d_name[0] == '.')
				continue;
			if (i == 1) {
				/* keep the channel of a kernel a live client still holds */
				char *ld = ppath(d, "leased", NULL);
				DIR *l = opendir(ld);
				struct dirent *le;
				pattern = xasprintf("%s.", de->d_name);
				while (l && (le = readdir(l)))
					leased |= !strncmp(le->d_name, pattern, strlen(pattern));
				if (l)
					closedir(l);
				free(ld);
				free(pattern);
			}
			if (leased)
				continue;
			p = xasprintf("%s/%s", path, de->d_name);
			channel_remove_dir(p);
			free(p);
		}
		if (dir)
			closedir(dir);
		free(path);
	}
}

/* Write daemon.json: who serves the pool and how. */
static void write_info(struct daemon *d)
{
	const struct kernel_def *k;
	cJSON *o = cJSON_CreateObject();
	char *text, *path = ppath(d, "daemon.json", NULL), *tmp = xasprintf("%s.tmp", path);
	int fd;

	cJSON_AddNumberToObject(o, "pid", getpid());
	cJSON_AddNumberToObject(o, "started", now_wall());
	cJSON_AddNumberToObject(o, "min_size", d->pc->min_size);
	cJSON_AddNumberToObject(o, "max_size", d->pc->max_size);
	cJSON_AddBoolToObject(o, "prewarm", d->pc->prewarm);
	cJSON_AddNumberToObject(o, "idle_timeout", d->pc->idle_timeout);
	cJSON_AddNumberToObject(o, "max_age", d->pc->max_age);
	cJSON_AddNumberToObject(o, "health_interval", d->pc->health_interval);
	cJSON_AddStringToObject(o, "preimport", d->pc->preimport ? d->pc->preimport : "");
	cJSON_AddStringToObject(o, "backend", d->backend);
	k = d->kopts.kernel ? kernel_find(d->kopts.kernel) : NULL;
	cJSON_AddStringToObject(o, "kernel", (k ? k : kernel_default())->name);
	if (d->kopts.sandbox.host)
		cJSON_AddStringToObject(o, "host", d->kopts.sandbox.host);
	text = cJSON_Print(o);
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd >= 0) {
		write_all(fd, text, strlen(text));
		close(fd);
		rename(tmp, path);
	}
	cJSON_free(text);
	cJSON_Delete(o);
	free(path);
	free(tmp);
}

int pool_serve(const char *pool_dir, const struct pool_config *pc,
	       const struct session_opts *kernel_opts, FILE *log, struct strbuf *err)
{
	static const char *const subdirs[] = { "kernels", "ready", "leased", POOL_WANT_DIR,
					       "zygote" };
	struct daemon d = { 0 };
	const struct backend_ops *ops;
	char *lock = NULL, *kernels = NULL, *leased = NULL, *ready = NULL;
	sigset_t mask, old;
	int lockfd = -1, sfd = -1, ifd = -1, epfd = -1, rc = -1;
	int started = 0;

	d.dir = pool_dir;
	d.pc = pc;
	d.log = log;
	d.kopts = *kernel_opts;
	d.epfd = -1;
	d.backend = d.kopts.backend ? d.kopts.backend : BACKEND_DEFAULT;
	ops = backend_find(d.backend, err);
	if (!ops)
		return -1;
	/* Kernels that are not our children (containers) are watched by adopting them. */
	d.containers = !(ops->flags & BACKEND_CHILD_KERNELS);
	if (pc->min_size < 0 || pc->max_size < 1 || pc->min_size > pc->max_size) {
		strbuf_addf(err, "pool sizes: need 0 <= min (%d) <= max (%d) and max >= 1",
			    pc->min_size, pc->max_size);
		return -1;
	}
	for (size_t i = 0; i < ARRAY_SIZE(subdirs); i++) {
		char *p = ppath(&d, subdirs[i], NULL);
		int bad = wall_own_dir(p, 1, err) < 0;	/* ours and 0700, or a clear error */

		free(p);
		if (bad)
			return -1;
	}
	lock = ppath(&d, "daemon.lock", NULL);
	lockfd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (lockfd < 0 || flock(lockfd, LOCK_EX | LOCK_NB) < 0) {
		strbuf_addf(err, "the pool '%s' is already served by another daemon (see 'cellbox pool status')",
			    pool_dir);
		goto out;
	}
	kernels = ppath(&d, "kernels", NULL);
	d.kopts.runtime_dir = kernels;
	d.kopts.keep_channel = 1;
	clean_leftovers(&d);
	write_info(&d);

	sigemptyset(&mask);
	sigaddset(&mask, SIGCHLD);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGHUP);
	sigprocmask(SIG_BLOCK, &mask, &old);
	sfd = signalfd(-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC);
	ifd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	leased = ppath(&d, "leased", NULL);
	ready = ppath(&d, "ready", NULL);
	if (ifd >= 0) {
		char *want = ppath(&d, POOL_WANT_DIR, NULL);
		inotify_add_watch(ifd, leased, IN_CREATE | IN_MOVED_TO | IN_DELETE | IN_MOVED_FROM);
		inotify_add_watch(ifd, ready, IN_MOVED_FROM | IN_DELETE);
		inotify_add_watch(ifd, want, IN_CREATE);
		free(want);
	}
	epfd = epoll_create1(EPOLL_CLOEXEC);
	d.epfd = epfd;
	if (sfd < 0 || epfd < 0) {
		strbuf_addf(err, "cannot set up the daemon's descriptors: %s", strerror(errno));
		goto out;
	}
	{
		struct epoll_event ev = { .events = EPOLLIN };
		ev.data.fd = sfd;
		epoll_ctl(epfd, EPOLL_CTL_ADD, sfd, &ev);
		if (ifd >= 0) {
			ev.data.fd = ifd;
			epoll_ctl(epfd, EPOLL_CTL_ADD, ifd, &ev);
		}
	}
	dlog(&d, "serving '%s' (pid %ld): min %d, max %d%s", pool_dir, (long)getpid(),
	     pc->min_size, pc->max_size, pc->prewarm ? "" : ", no pre-warming");
	d.next_health = now_monotonic() + pc->health_interval;
	while (!d.stop) {
		struct epoll_event evs[4];
		struct signalfd_siginfo si;
		int ready_n, leased_n, n, timeout = 1000;
		char buf[4096];

		/* Without pre-warming, the first kernel waits for the first client. */
		if (pc->prewarm || started || waiting_clients(&d)) {
			started = 1;
			maintain(&d);
		} else {
			reap(&d);
		}
		count(&d, &ready_n, &leased_n);
		if (started && ready_n < pc->min_size && ready_n + leased_n < pc->max_size) {
			double wait = d.spawn_after - now_monotonic();

			/* more kernels to start: come straight back, or when the back-off ends */
			timeout = wait <= 0 ? 0 : wait < 1 ? (int)(wait * 1000) + 1 : 1000;
		}
		n = epoll_wait(epfd, evs, ARRAY_SIZE(evs), timeout);
		(void)n;
		while (read(sfd, &si, sizeof(si)) == sizeof(si))
			if (si.ssi_signo != SIGCHLD) {
				dlog(&d, "stopping on signal %u", si.ssi_signo);
				d.stop = 1;
			}
		if (ifd >= 0)
			while (read(ifd, buf, sizeof(buf)) > 0)
				;
	}
	/*
	 * Ready kernels go; leased ones die with us too (PR_SET_PDEATHSIG) once we exit, and so
	 * do leased containers, removed here: a pool's kernels do not outlive its daemon.
	 */
	for (size_t i = 0; i < d.nk; i++)
		if (!d.k[i].dying && (!d.k[i].client || d.k[i].be))
			destroy(&d, &d.k[i], "the daemon stops");
	zygote_free(d.zygote);
	d.zygote = NULL;
	while (waitpid(-1, NULL, WNOHANG) > 0)
		;
	sigprocmask(SIG_SETMASK, &old, NULL);
	rc = 0;
out:
	zygote_free(d.zygote);
	while (d.nk)
		drop(&d, 0);
	free(d.k);
	if (epfd >= 0)
		close(epfd);
	if (ifd >= 0)
		close(ifd);
	if (sfd >= 0)
		close(sfd);
	if (lockfd >= 0) {
		char *info = ppath(&d, "daemon.json", NULL);
		if (rc == 0)
			unlink(info);
		free(info);
		close(lockfd);
	}
	free(lock);
	free(kernels);
	free(leased);
	free(ready);
	return rc;
}

/* Seconds since a file was last changed, or -1. */
static double age_of(const char *path)
{
	struct stat st;

	if (stat(path, &st) < 0)
		return -1;
	return now_wall() - ((double)st.st_mtim.tv_sec + (double)st.st_mtim.tv_nsec / 1e9);
}

/* The pid of a pooled kernel as this machine sees it, or 0. */
static long kernel_pid(const char *pool_dir, const char *name)
{
	struct strbuf text = STRBUF_INIT;
	char *dir = xasprintf("%s/kernels/%s", pool_dir, name);
	char *p = xasprintf("%s/kernel/ready", dir);
	cJSON *ready = NULL;
	long pid;

	if (strbuf_read_file(&text, p, 4096) == 0)
		ready = cJSON_Parse(text.buf);
	pid = backend_kernel_pid(dir, ready);
	cJSON_Delete(ready);
	strbuf_release(&text);
	free(p);
	free(dir);
	return pid;
}

/*
 * Add "alive" to a kernel's status, as its backend tells (its process, or its container,
 * then also named as "container").
 */
static void add_liveness(cJSON *k, const char *pool_dir, const char *name, const char *backend,
			 const char *host, pid_t pid)
{
	struct strbuf id = STRBUF_INIT;
	struct sandbox_opts sb = { .host = host };
	char *dir = xasprintf("%s/kernels/%s", pool_dir, name);
	struct kernel_handle h = { .channel_dir = dir, .pid = pid, .sandbox = &sb };
	int running = backend_running(backend ? backend : BACKEND_DEFAULT, &h, &id) == 1;

	if (id.len)
		cJSON_AddStringToObject(k, "container", id.buf);
	cJSON_AddBoolToObject(k, "alive", running);
	strbuf_release(&id);
	free(dir);
}

cJSON *pool_status(const char *pool_dir, struct strbuf *err)
{
	static const char *const kinds[] = { "ready", "leased" };
	cJSON *o = cJSON_CreateObject(), *info;
	const char *backend, *host;
	struct stat st;

	if (stat(pool_dir, &st) < 0) {
		strbuf_addf(err, "no pool at '%s' (start one with 'cellbox pool serve')", pool_dir);
		cJSON_Delete(o);
		return NULL;
	}
	cJSON_AddStringToObject(o, "pool", pool_dir);
	info = pool_info(pool_dir);
	cJSON_AddBoolToObject(o, "daemon_alive", pool_daemon_alive(pool_dir));
	cJSON_AddItemToObject(o, "daemon", info ? info : cJSON_CreateNull());
	backend = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(info, "backend"));
	host = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(info, "host"));
	for (size_t i = 0; i < ARRAY_SIZE(kinds); i++) {
		char *dpath = xasprintf("%s/%s", pool_dir, kinds[i]);
		cJSON *arr = cJSON_AddArrayToObject(o, kinds[i]);
		DIR *dir = opendir(dpath);
		struct dirent *de;

		while (dir && (de = readdir(dir))) {
			cJSON *k;
			char *name, *dot, *rp;
			long pid;

			if (de->d_name[0] == '.')
				continue;
			dot = i == 1 ? strrchr(de->d_name, '.') : NULL;
			name = dot ? xstrndup(de->d_name, (size_t)(dot - de->d_name)) : xstrdup(de->d_name);
			pid = kernel_pid(pool_dir, name);
			rp = xasprintf("%s/kernels/%s/kernel/ready", pool_dir, name);
			k = cJSON_CreateObject();
			cJSON_AddStringToObject(k, "name", name);
			cJSON_AddNumberToObject(k, "pid", (double)pid);
			add_liveness(k, pool_dir, name, backend, host, (pid_t)pid);
			cJSON_AddNumberToObject(k, "age", age_of(rp));
			if (dot) {
				pid_t client = (pid_t)atol(dot + 1);
				cJSON_AddNumberToObject(k, "client", client);
				cJSON_AddBoolToObject(k, "client_alive", process_alive(client));
			}
			cJSON_AddItemToArray(arr, k);
			free(rp);
			free(name);
		}
		if (dir)
			closedir(dir);
		free(dpath);
	}
	return o;
}
