/* Pooled mode, making kernels: the zygote, several starts in flight, warming, ready/. */
#include "pool_int.h"
#include "pool_daemon.h"

#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "backend.h"
#include "channel.h"
#include "kernel.h"
#include "zygote.h"

/* How far a kernel in flight is. */
enum spawn_stage {
	SPAWN_CREATED,		/* a spare: its container created, not started (containers) */
	SPAWN_STARTING,		/* waiting for its ready file */
	SPAWN_WARMING,		/* a cold kernel's first completion builds its completer */
	SPAWN_PREIMPORT,	/* importing the pool's --preimport */
	SPAWN_DONE,
};

/* What a warming cell said: its error, and whether it ended well. */
struct warm_outcome {
	struct strbuf error;
	int done, ok;
};

struct pspawn {
	struct session *s;
	enum spawn_stage stage;
	unsigned long id;	/* the warming request in flight, 0 for none */
	struct warm_outcome w;
	double t0, t_open;	/* begun; its ready file seen */
	int forked;		/* forked from the zygote */
	int fd;			/* session_fd(s), in the loop's epoll set */
	int engine;		/* where it is placed (daemon.eng), -1: the pool's one engine */
};

int pool_spawn_on(const struct daemon *d, int e)
{
	int n = 0;

	for (size_t i = 0; i < d->nsp; i++)
		n += d->sp[i]->engine == e;
	return n;
}

/*
 * The kernel options for a kernel placed on engine `e` (-1: the pool's own). 0, or -1 when
 * the pool has engines and none has room.
 */
static int placed_opts(struct daemon *d, struct session_opts *o, int *e)
{
	*o = d->kopts;
	*e = -1;
	if (!d->neng)
		return 0;
	*e = pool_engine_pick(d);
	if (*e < 0)
		return -1;
	o->sandbox.host = d->eng[*e].host;
	return 0;
}

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
	char *p = pool_path(d, "zygote", "pid");
	char text[24];
	int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);

	snprintf(text, sizeof(text), "%ld\n", (long)pid);
	if (fd >= 0) {
		fsutil_write_all(fd, text, strlen(text));
		close(fd);
	}
	free(p);
}

/*
 * Keep a zygote that fits the pool: a new one when it died, failed, or was started with
 * other pre-imports; after a failure not at once (its kernels start cold meanwhile).
 */
void pool_keep_zygote(struct daemon *d)
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
			pool_log(d, "the zygote (pid %ld) is gone: %s", (long)zygote_pid(d->zygote),
				 zygote_error(d->zygote));
			d->zygote_backoff = d->zygote_backoff > 0 ?
					    (d->zygote_backoff * 2 < 60 ? d->zygote_backoff * 2 : 60) : 1;
			d->zygote_after = clock_now() + d->zygote_backoff;
		}
		zygote_free(d->zygote);
		d->zygote = NULL;
		note_zygote_pid(d, 0);
	}
	if (clock_now() < d->zygote_after)
		return;
	dir = pool_path(d, "zygote", NULL);
	d->zygote = zygote_start(dir, zygote_python(d), pre, &err);
	if (d->zygote) {
		pool_log(d, "zygote (pid %ld) started%s%s", (long)zygote_pid(d->zygote),
			 *pre ? " with " : "", pre);
		note_zygote_pid(d, zygote_pid(d->zygote));
	} else {
		pool_log(d, "cannot start a zygote: %s", err.buf);
		d->zygote_after = clock_now() + 60;
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

/* Take over the container of the kernel in channel `dir` (the daemon's own watch on it). */
static struct backend *adopt_container(struct daemon *d, const char *dir, pid_t pid,
				       struct strbuf *err)
{
	struct kernel_handle k = { .channel_dir = dir, .pid = pid, .sandbox = &d->kopts.sandbox,
				   .watch = 1 };

	return backend_adopt(d->backend, &k, err);
}

/* Add a kernel to the flight list. */
static void add_spawn(struct daemon *d, struct pspawn *sp)
{
	if (d->nsp == d->spalloc) {
		d->spalloc = d->spalloc ? 2 * d->spalloc : 8;
		d->sp = xrealloc(d->sp, d->spalloc * sizeof(*d->sp));
	}
	d->sp[d->nsp++] = sp;
}

/* Let the loop wait on a kernel that starts. */
static void watch_spawn(struct daemon *d, struct pspawn *sp)
{
	struct epoll_event ev = { .events = EPOLLIN };

	sp->fd = session_fd(sp->s);
	ev.data.fd = sp->fd;
	epoll_ctl(d->epfd, EPOLL_CTL_ADD, sp->fd, &ev);
}

/* The name of a kernel in flight (its channel's). */
static const char *spawn_name(const struct pspawn *sp)
{
	return strrchr(session_channel_dir(sp->s), '/') + 1;
}

/* A spare to start, or NULL. */
static struct pspawn *take_spare(struct daemon *d)
{
	for (size_t i = 0; i < d->nsp; i++)
		if (d->sp[i]->stage == SPAWN_CREATED)
			return d->sp[i];
	return NULL;
}

/* Take kernel i out of the flight list (its session closed when it is still ours). */
static void drop_spawn(struct daemon *d, size_t i);

int pool_spawn_begin(struct daemon *d)
{
	struct strbuf err = STRBUF_INIT;
	struct pspawn *sp = take_spare(d);
	struct session_opts o;
	int forked, e;

	if (sp) {
		/* a container created ahead: only its start is left */
		sp->t0 = clock_now();
		sp->stage = SPAWN_STARTING;
		if (session_launch(sp->s, &err) < 0) {
			pool_log(d, "cannot start a kernel: %s", err.buf);
			pool_engine_failed(d, sp->engine, err.buf);
			for (size_t i = 0; i < d->nsp; i++)
				if (d->sp[i] == sp)
					drop_spawn(d, i);
			strbuf_release(&err);
			return -1;
		}
		watch_spawn(d, sp);
		pool_log(d, "starting kernel %s, created ahead (%zu in flight)", spawn_name(sp),
			 pool_spawn_in_flight(d));
		strbuf_release(&err);
		return 0;
	}
	if (placed_opts(d, &o, &e) < 0) {
		pool_log(d, "no engine has room for a kernel");
		return -1;
	}
	pool_keep_zygote(d);
	forked = zygote_usable(d->zygote);
	sp = xcalloc(1, sizeof(*sp));
	sp->fd = -1;
	sp->engine = e;
	sp->t0 = clock_now();
	sp->s = session_begin(&o, &err);
	sp->forked = forked && zygote_usable(d->zygote);
	if (sp->forked && d->zygote_backoff > 0)
		d->zygote_backoff = 0;		/* it forked one: a later failure is a fresh one */
	if (!sp->s) {
		pool_log(d, "cannot start a kernel: %s", err.buf);
		pool_engine_failed(d, e, err.buf);
		strbuf_release(&err);
		free(sp);
		return -1;
	}
	strbuf_init(&sp->w.error, 0);
	sp->stage = SPAWN_STARTING;
	watch_spawn(d, sp);
	add_spawn(d, sp);
	pool_log(d, "starting kernel %s%s (%zu in flight)", spawn_name(sp),
		 sp->forked ? " from the zygote" : "", pool_spawn_in_flight(d));
	strbuf_release(&err);
	return 0;
}

int pool_spawn_prepare(struct daemon *d)
{
	struct strbuf err = STRBUF_INIT;
	struct session_opts o;
	struct pspawn *sp;
	int e;

	if (placed_opts(d, &o, &e) < 0)
		return 0;	/* no engine has room: no spare */
	sp = xcalloc(1, sizeof(*sp));
	sp->fd = -1;
	sp->engine = e;
	sp->s = session_prepare(&o, &err);
	if (!sp->s) {
		pool_log(d, "cannot create a kernel's container: %s", err.buf);
		pool_engine_failed(d, e, err.buf);
		strbuf_release(&err);
		free(sp);
		return -1;
	}
	strbuf_init(&sp->w.error, 0);
	sp->stage = SPAWN_CREATED;
	add_spawn(d, sp);
	pool_log(d, "created kernel %s ahead", spawn_name(sp));
	strbuf_release(&err);
	return 0;
}

size_t pool_spawn_in_flight(const struct daemon *d)
{
	size_t n = 0;

	for (size_t i = 0; i < d->nsp; i++)
		n += d->sp[i]->stage != SPAWN_CREATED;
	return n;
}

size_t pool_spawn_spares(const struct daemon *d)
{
	return d->nsp - pool_spawn_in_flight(d);
}

/*
 * Send the next warming request, if any: a cold kernel's first completion builds IPython's
 * completer (jedi), which the runner otherwise does in its first idle moment (a kernel
 * forked from the zygote has jedi's caches warm already: its completer is built in its first
 * idle moment, off the path of a sustained load); then the pool's --preimport.
 */
static void next_stage(struct daemon *d, struct pspawn *sp)
{
	for (;;) {
		sp->id = 0;
		if (sp->stage == SPAWN_STARTING) {
			sp->stage = SPAWN_WARMING;
			if (!sp->forked) {
				cJSON *params = cJSON_CreateObject();

				cJSON_AddStringToObject(params, "code", "import o");
				cJSON_AddNumberToObject(params, "cursor_pos", 8);
				sp->id = session_request(sp->s, "complete", params, NULL, NULL,
							 &sp->w.error);
				cJSON_Delete(params);
				strbuf_reset(&sp->w.error);
			}
		} else if (sp->stage == SPAWN_WARMING) {
			sp->stage = SPAWN_PREIMPORT;
			if (d->pc->preimport && *d->pc->preimport &&
			    session_kernel(sp->s)->preimport) {
				char *code = session_kernel(sp->s)->preimport(d->pc->preimport);

				sp->id = session_execute(sp->s, code, SESSION_EXEC_SILENT, 120,
							 on_warm_event, &sp->w, &sp->w.error);
				free(code);
				/* Offered all the same: its users learn the module is missing. */
				if (!sp->id)
					pool_log(d, "pre-import of '%s' failed: %s", d->pc->preimport,
						 sp->w.error.buf);
			}
		} else {
			if (d->pc->preimport && *d->pc->preimport && sp->w.done && !sp->w.ok)
				pool_log(d, "pre-import of '%s' failed: %s", d->pc->preimport,
					 sp->w.error.buf);
			sp->stage = SPAWN_DONE;
			return;
		}
		if (sp->id)
			return;
	}
}

/* Put a warm kernel into the table and ready/. 0, or -1 (logged) when it cannot be kept. */
static int finish(struct daemon *d, struct pspawn *sp)
{
	struct strbuf err = STRBUF_INIT;
	const cJSON *pid = cJSON_GetObjectItemCaseSensitive(session_kernel_info(sp->s), "pid");
	const char *dir = session_channel_dir(sp->s), *name = strrchr(dir, '/') + 1;
	pid_t kpid = cJSON_IsNumber(pid) ? (pid_t)pid->valueint : 0;
	struct backend *be = NULL;
	struct pkernel *k;
	char *entry;

	if (d->containers && !(be = adopt_container(d, dir, kpid, &err))) {
		pool_log(d, "cannot keep the container of kernel %s: %s", name, err.buf);
		strbuf_release(&err);
		return -1;
	}
	k = pool_add_kernel(d, name, kpid, be);
	k->engine = sp->engine;
	pool_watch_container(d, k);
	pool_log(d, "kernel %s (pid %ld) ready in %.0f ms (started in %.0f)%s", k->name,
		 (long)k->pid, (clock_now() - sp->t0) * 1e3, (sp->t_open - sp->t0) * 1e3,
		 sp->forked ? ", forked from the zygote" : "");
	/* out of the loop's set first: the detaching thread closes the descriptor */
	epoll_ctl(d->epfd, EPOLL_CTL_DEL, sp->fd, NULL);
	sp->fd = -1;
	if (d->containers)
		session_detach(sp->s);	/* (the engine's connection is the loop's) */
	else
		detach_later(sp->s);
	sp->s = NULL;
	entry = pool_path(d, "ready", k->name);
	close(open(entry, O_WRONLY | O_CREAT | O_CLOEXEC, 0600));
	free(entry);
	strbuf_release(&err);
	return 0;
}

/* Move one kernel in flight on: 1 when it is ready (in ready/), 0 not yet, -1 it failed. */
static int step(struct daemon *d, struct pspawn *sp)
{
	struct strbuf err = STRBUF_INIT;
	int rc = 0;

	if (sp->stage == SPAWN_STARTING) {
		rc = session_started(sp->s, &err);
		if (rc < 0) {
			pool_log(d, "cannot start a kernel: %s", err.buf);
			pool_engine_failed(d, sp->engine, err.buf);
		}
		if (rc <= 0)
			goto out;
		sp->t_open = clock_now();
		next_stage(d, sp);
		rc = 0;
	}
	while (sp->stage != SPAWN_DONE) {
		if (sp->id) {
			session_dispatch(sp->s);
			if (session_pending(sp->s, sp->id))
				break;
		}
		next_stage(d, sp);
	}
	if (sp->stage == SPAWN_DONE) {
		if (session_state(sp->s) == SESSION_DEAD) {
			pool_log(d, "kernel %s died while warming",
				 strrchr(session_channel_dir(sp->s), '/') + 1);
			rc = -1;
		} else {
			rc = finish(d, sp) < 0 ? -1 : 1;
		}
	}
out:
	strbuf_release(&err);
	return rc;
}

static void drop_spawn(struct daemon *d, size_t i)
{
	struct pspawn *sp = d->sp[i];

	if (sp->fd >= 0)
		epoll_ctl(d->epfd, EPOLL_CTL_DEL, sp->fd, NULL);
	if (sp->s) {
		char *dir = xstrdup(session_channel_dir(sp->s));

		session_close(sp->s);	/* kills it; the channel is kept (keep_channel) ... */
		channel_remove_dir(dir);	/* ... and goes here */
		free(dir);
	}
	strbuf_release(&sp->w.error);
	free(sp);
	d->sp[i] = d->sp[--d->nsp];
}

int pool_spawn_poll(struct daemon *d, int *made)
{
	int failed = 0;

	*made = 0;
	for (size_t i = 0; i < d->nsp; ) {
		struct pspawn *sp = d->sp[i];
		int rc;

		if (sp->stage == SPAWN_CREATED) {
			i++;
			continue;
		}
		rc = step(d, sp);
		if (rc == 0) {
			i++;
			continue;
		}
		if (rc > 0)
			(*made)++;
		else
			failed++;
		drop_spawn(d, i);
	}
	return failed;
}

void pool_spawn_abort_all(struct daemon *d)
{
	while (d->nsp)
		drop_spawn(d, 0);
	free(d->sp);
	d->sp = NULL;
	d->spalloc = 0;
}
