#include "pool.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
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
#include "session.h"

#define WANT_DIR "want"

char *pool_dir_path(const char *runtime_dir, const char *name)
{
	return xasprintf("%s/pool/%s", runtime_dir, name && *name ? name : "default");
}

int pool_strategy_parse(const char *s, enum pool_strategy *out)
{
	if (!strcmp(s, "wait"))
		*out = POOL_WAIT;
	else if (!strcmp(s, "fail-fast") || !strcmp(s, "fail_fast"))
		*out = POOL_FAIL_FAST;
	else if (!strcmp(s, "temporary"))
		*out = POOL_TEMPORARY;
	else
		return -1;
	return 0;
}

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

/* Whether a live daemon holds the pool's lock. */
static int daemon_alive(const char *pool_dir)
{
	char *path = xasprintf("%s/daemon.lock", pool_dir);
	int fd = open(path, O_RDONLY | O_CLOEXEC), alive = 0;

	free(path);
	if (fd < 0)
		return 0;
	if (flock(fd, LOCK_SH | LOCK_NB) < 0 && errno == EWOULDBLOCK)
		alive = 1;
	close(fd);
	return alive;
}

/* Whether process `pid` runs (a zombie that nobody reaped yet does not). */
static int pid_alive(pid_t pid)
{
	struct strbuf stat = STRBUF_INIT;
	char *path, *paren;
	int alive;

	if (pid <= 0 || (kill(pid, 0) < 0 && errno != EPERM))
		return 0;
	path = xasprintf("/proc/%ld/stat", (long)pid);
	alive = strbuf_read_file(&stat, path, 4096) < 0 || !(paren = strrchr(stat.buf, ')')) ||
		paren[1] != ' ' || paren[2] != 'Z';
	free(path);
	strbuf_release(&stat);
	return alive;
}

/* Take any ready kernel by renaming its entry; 1 when one was taken. */
static int try_take(const char *pool_dir, struct pool_lease *lease)
{
	char *ready = xasprintf("%s/ready", pool_dir);
	DIR *d = opendir(ready);
	struct dirent *de;
	int taken = 0;

	while (d && !taken && (de = readdir(d))) {
		char *from, *to;

		if (de->d_name[0] == '.')
			continue;
		from = xasprintf("%s/%s", ready, de->d_name);
		to = xasprintf("%s/leased/%s.%ld", pool_dir, de->d_name, (long)getpid());
		if (rename(from, to) == 0) {
			lease->entry = to;
			lease->channel_dir = xasprintf("%s/kernels/%s", pool_dir, de->d_name);
			taken = 1;
		} else {
			free(to);
		}
		free(from);
	}
	if (d)
		closedir(d);
	free(ready);
	return taken;
}

int pool_lease(const char *pool_dir, enum pool_strategy strategy, double timeout,
	       struct pool_lease *lease, struct strbuf *err)
{
	char *ready = NULL, *want = NULL;
	double deadline = now_monotonic() + timeout;
	int fd = -1, rc = -1;

	memset(lease, 0, sizeof(*lease));
	if (!daemon_alive(pool_dir)) {
		strbuf_addf(err, "no pool daemon serves '%s' (start one with 'cellbox pool serve')",
			    pool_dir);
		return 0;
	}
	for (;;) {
		struct pollfd pfd;
		double left;

		if (try_take(pool_dir, lease)) {
			rc = 1;
			goto out;
		}
		if (strategy == POOL_FAIL_FAST) {
			strbuf_addf(err, "pool exhausted: no free kernel in '%s'", pool_dir);
			goto out;
		}
		if (strategy == POOL_TEMPORARY) {
			strbuf_addf(err, "pool exhausted: starting a temporary kernel");
			rc = 0;
			goto out;
		}
		if (fd < 0) {
			/* Wait for a ready entry; tell the daemon someone is waiting. */
			ready = xasprintf("%s/ready", pool_dir);
			want = xasprintf("%s/" WANT_DIR "/%ld", pool_dir, (long)getpid());
			close(open(want, O_WRONLY | O_CREAT | O_CLOEXEC, 0600));
			fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
			if (fd >= 0)
				inotify_add_watch(fd, ready, IN_CREATE | IN_MOVED_TO);
			continue;	/* look again: one may have come before the watch */
		}
		left = deadline - now_monotonic();
		if (left <= 0) {
			strbuf_addf(err, "pool exhausted: no kernel became free within %g s", timeout);
			goto out;
		}
		if (!daemon_alive(pool_dir)) {
			strbuf_addf(err, "the pool daemon of '%s' stopped", pool_dir);
			rc = 0;
			goto out;
		}
		pfd.fd = fd;
		pfd.events = POLLIN;
		/* inotify, or a 10 ms poll without it; check the daemon at least every second */
		if (poll(fd >= 0 ? &pfd : NULL, fd >= 0 ? 1 : 0,
			 fd >= 0 ? (int)(left > 1 ? 1000 : left * 1000 + 1) : 10) > 0) {
			char buf[4096];
			while (read(fd, buf, sizeof(buf)) > 0)
				;
		}
	}
out:
	if (want)
		unlink(want);
	if (fd >= 0)
		close(fd);
	free(ready);
	free(want);
	return rc;
}

/* daemon.json of a pool, NULL when there is none. */
static cJSON *read_info(const char *pool_dir)
{
	struct strbuf text = STRBUF_INIT;
	char *p = xasprintf("%s/daemon.json", pool_dir);
	cJSON *info = NULL;

	if (strbuf_read_file(&text, p, 1u << 16) == 0)
		info = cJSON_Parse(text.buf);
	strbuf_release(&text);
	free(p);
	return info;
}

char *pool_backend(const char *pool_dir)
{
	cJSON *info = read_info(pool_dir);
	const char *b = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(info, "backend"));
	char *backend = b ? xstrdup(b) : NULL;

	cJSON_Delete(info);
	return backend;
}

char *pool_kernel(const char *pool_dir)
{
	cJSON *info = read_info(pool_dir);
	const char *k = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(info, "kernel"));
	char *kernel = NULL;

	if (info)	/* a daemon that did not say served python */
		kernel = xstrdup(k ? k : kernel_default()->name);
	cJSON_Delete(info);
	return kernel;
}

int pool_lease_daemon_alive(const struct pool_lease *lease)
{
	const char *slash = lease->entry ? strrchr(lease->entry, '/') : NULL;
	char *dir;
	int alive;

	if (!slash)
		return 0;
	dir = xstrndup(lease->entry, (size_t)(slash - lease->entry));	/* <pool>/leased */
	*strrchr(dir, '/') = '\0';
	alive = daemon_alive(dir);
	free(dir);
	return alive;
}

void pool_lease_release(struct pool_lease *lease)
{
	if (lease->entry)
		unlink(lease->entry);
	free(lease->entry);
	free(lease->channel_dir);
	memset(lease, 0, sizeof(*lease));
}

/* ---- the daemon ---- */

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
	FILE *log;
	int containers;		/* the kernels are containers (docker, podman) */
	int epfd;		/* the loop's epoll set: containers' wait connections join it */
	struct pkernel *k;
	size_t nk, alloc;
	double next_health;
	double spawn_after;	/* after a failed start: not before this (back-off) */
	double backoff;		/* the current back-off in seconds, 0 after a success */
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
	remove_tree(p);
	free(p);
	k->dying = 1;
}

/* Take over the container of the kernel in channel `dir` (the daemon's own watch on it). */
static struct backend *adopt_container(struct daemon *d, const char *dir, struct strbuf *err)
{
	struct strbuf id = STRBUF_INIT;
	struct backend *be = NULL;
	char *p = xasprintf("%s/" BACKEND_CONTAINER_FILE, dir);

	if (strbuf_read_file(&id, p, 256) < 0 || !id.len)
		strbuf_addf(err, "no container id in '%s'", p);
	else
		be = backend_docker_adopt(d->kopts.backend, d->kopts.sandbox.host, id.buf, err);
	strbuf_release(&id);
	free(p);
	return be;
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
	double t0 = now_monotonic();
	int rc = -1;

	s = session_open(&d->kopts, &err);
	if (!s) {
		dlog(d, "cannot start a kernel: %s", err.buf);
		goto out;
	}
	/*
	 * Warm it fully before anyone leases it: the first completion builds IPython's
	 * completer (jedi), which the runner otherwise does in its first idle moment.
	 */
	{
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
		struct strbuf e2 = STRBUF_INIT;
		unsigned long id = session_execute(s, code, SESSION_EXEC_SILENT, 120, NULL, NULL, &e2);

		if (id)
			while (session_wait(s, id) < 0)
				;
		if (!id || session_state(s) != SESSION_IDLE)
			dlog(d, "pre-import of '%s' failed: %s", d->pc->preimport, e2.buf);
		free(code);
		strbuf_release(&e2);
	}
	pid = cJSON_GetObjectItemCaseSensitive(session_kernel_info(s), "pid");
	dir = session_channel_dir(s);
	name = strrchr(dir, '/') + 1;
	if (d->containers && !(be = adopt_container(d, dir, &err))) {
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
	session_detach(s);
	entry = ppath(d, "ready", k->name);
	close(open(entry, O_WRONLY | O_CREAT | O_CLOEXEC, 0600));
	free(entry);
	dlog(d, "kernel %s (pid %ld) ready in %.0f ms", k->name, (long)k->pid,
	     (now_monotonic() - t0) * 1e3);
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
		if (ready && k->be->ops->reap(k->be, &why)) {
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
				backend_describe_status(status, &why);
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
		} else if (!pid_alive(client)) {
			char *p = ppath(d, "leased", de->d_name);
			unlink(p);
			free(p);
			if (k && !k->dying) {
				destroy(d, k, "its client died");
			} else if (!k) {
				p = ppath(d, "kernels", name);
				remove_tree(p);
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
	char *want = ppath(d, WANT_DIR, NULL);
	DIR *dir = opendir(want);
	struct dirent *de;
	int n = 0;

	while (dir && (de = readdir(dir))) {
		if (de->d_name[0] == '.')
			continue;
		if (pid_alive((pid_t)atol(de->d_name))) {
			n++;
		} else {
			char *p = ppath(d, WANT_DIR, de->d_name);
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
		int n = backend_docker_gc(d->kopts.backend, d->kopts.sandbox.host, &out, &err);

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
			remove_tree(p);
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
	cJSON_AddStringToObject(o, "backend", d->kopts.backend ? d->kopts.backend : "local");
	{
		const struct kernel_def *k = d->kopts.kernel ? kernel_find(d->kopts.kernel) : NULL;
		cJSON_AddStringToObject(o, "kernel", (k ? k : kernel_default())->name);
	}
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
	static const char *const subdirs[] = { "kernels", "ready", "leased", WANT_DIR };
	struct daemon d = { 0 };
	char *lock = NULL, *kernels = NULL, *leased = NULL, *ready = NULL;
	sigset_t mask, old;
	int lockfd = -1, sfd = -1, ifd = -1, epfd = -1, rc = -1;
	int started = 0;

	d.dir = pool_dir;
	d.pc = pc;
	d.log = log;
	d.kopts = *kernel_opts;
	d.epfd = -1;
	d.containers = d.kopts.backend && strcmp(d.kopts.backend, "local");
	if (pc->min_size < 0 || pc->max_size < 1 || pc->min_size > pc->max_size) {
		strbuf_addf(err, "pool sizes: need 0 <= min (%d) <= max (%d) and max >= 1",
			    pc->min_size, pc->max_size);
		return -1;
	}
	for (size_t i = 0; i < ARRAY_SIZE(subdirs); i++) {
		char *p = ppath(&d, subdirs[i], NULL);
		int bad = mkdir_p(p) < 0;
		if (bad)
			strbuf_addf(err, "cannot create '%s': %s", p, strerror(errno));
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
		char *want = ppath(&d, WANT_DIR, NULL);
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
	while (waitpid(-1, NULL, WNOHANG) > 0)
		;
	sigprocmask(SIG_SETMASK, &old, NULL);
	rc = 0;
out:
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

/* The runner pid in a kernel's ready file, or 0. */
static long kernel_pid(const char *pool_dir, const char *name)
{
	struct strbuf text = STRBUF_INIT;
	char *p = xasprintf("%s/kernels/%s/ready", pool_dir, name);
	cJSON *ready = NULL;
	long pid = 0;

	if (strbuf_read_file(&text, p, 4096) == 0) {
		ready = cJSON_Parse(text.buf);
		if (cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(ready, "pid")))
			pid = cJSON_GetObjectItemCaseSensitive(ready, "pid")->valueint;
	}
	cJSON_Delete(ready);
	strbuf_release(&text);
	free(p);
	return pid;
}

/*
 * Add "alive" to a kernel's status: its process runs, or for a container backend, its
 * container (also named, "container") runs.
 */
static void add_liveness(cJSON *k, const char *pool_dir, const char *name, const char *backend,
			 const char *host, pid_t pid)
{
	struct strbuf id = STRBUF_INIT;
	char *p = xasprintf("%s/kernels/%s/" BACKEND_CONTAINER_FILE, pool_dir, name);

	if (backend && strcmp(backend, "local")) {
		int running = 0;

		if (strbuf_read_file(&id, p, 256) == 0 && id.len) {
			cJSON_AddStringToObject(k, "container", id.buf);
			running = backend_docker_running(backend, host, id.buf) == 1;
		}
		cJSON_AddBoolToObject(k, "alive", running);
	} else {
		cJSON_AddBoolToObject(k, "alive", pid_alive(pid));
	}
	strbuf_release(&id);
	free(p);
}

cJSON *pool_status(const char *pool_dir, struct strbuf *err)
{
	static const char *const kinds[] = { "ready", "leased" };
	cJSON *o = cJSON_CreateObject(), *info = NULL;
	struct strbuf text = STRBUF_INIT;
	char *p = xasprintf("%s/daemon.json", pool_dir);
	const char *backend, *host;
	struct stat st;

	if (stat(pool_dir, &st) < 0) {
		strbuf_addf(err, "no pool at '%s' (start one with 'cellbox pool serve')", pool_dir);
		cJSON_Delete(o);
		free(p);
		return NULL;
	}
	cJSON_AddStringToObject(o, "pool", pool_dir);
	if (strbuf_read_file(&text, p, 1u << 16) == 0)
		info = cJSON_Parse(text.buf);
	cJSON_AddBoolToObject(o, "daemon_alive", daemon_alive(pool_dir));
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
			rp = xasprintf("%s/kernels/%s/ready", pool_dir, name);
			k = cJSON_CreateObject();
			cJSON_AddStringToObject(k, "name", name);
			cJSON_AddNumberToObject(k, "pid", (double)pid);
			add_liveness(k, pool_dir, name, backend, host, (pid_t)pid);
			cJSON_AddNumberToObject(k, "age", age_of(rp));
			if (dot) {
				pid_t client = (pid_t)atol(dot + 1);
				cJSON_AddNumberToObject(k, "client", client);
				cJSON_AddBoolToObject(k, "client_alive", pid_alive(client));
			}
			cJSON_AddItemToArray(arr, k);
			free(rp);
			free(name);
		}
		if (dir)
			closedir(dir);
		free(dpath);
	}
	strbuf_release(&text);
	free(p);
	return o;
}
