/* Pooled mode, the daemon's loop: serving, health, reaping, retiring (pool_int.h). */
#include "pool_int.h"
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
#include <stdint.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/file.h>
#include <sys/inotify.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "backend.h"
#include "channel.h"
#include "egress_list.h"
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
	pc->ready_fd = -1;
}

void pool_log(struct daemon *d, const char *fmt, ...)
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

char *pool_path(const struct daemon *d, const char *a, const char *b)
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

static int removals;	/* containers being removed on threads of their own */
static int removed_fd = -1;	/* an eventfd in the loop's set: a removal ended */

/* Remove a container and free its backend, on a thread. */
static void *remove_thread(void *be)
{
	struct backend *b = be;

	uint64_t one = 1;

	b->ops->kill(b);
	b->ops->free(b);
	__atomic_sub_fetch(&removals, 1, __ATOMIC_SEQ_CST);
	if (removed_fd >= 0 && write(removed_fd, &one, sizeof(one)) < 0)
		return NULL;	/* (the loop wakes within a second anyway) */
	return NULL;
}

/*
 * Remove a container off the loop: it takes 100 ms or more, which neither a waiting client
 * nor the next kernel should wait for. While the daemon stops, at once.
 */
static void remove_container(struct daemon *d, struct backend *be)
{
	int fd = be->ops->exit_fd(be);
	pthread_attr_t attr;
	pthread_t t;
	int rc = -1;

	if (fd >= 0 && d->epfd >= 0)
		epoll_ctl(d->epfd, EPOLL_CTL_DEL, fd, NULL);
	if (!d->stop) {
		__atomic_add_fetch(&removals, 1, __ATOMIC_SEQ_CST);
		pthread_attr_init(&attr);
		pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
		rc = pthread_create(&t, &attr, remove_thread, be);
		pthread_attr_destroy(&attr);
		if (rc != 0)
			__atomic_sub_fetch(&removals, 1, __ATOMIC_SEQ_CST);
	}
	if (rc != 0) {
		be->ops->kill(be);
		be->ops->free(be);
	}
}

/* Wait (up to `seconds`) for the containers still being removed. */
static void wait_removals(double seconds)
{
	double until = clock_now() + seconds;

	while (__atomic_load_n(&removals, __ATOMIC_SEQ_CST) > 0 && clock_now() < until)
		usleep(10000);
}

/* Kill a kernel and remove its entry and channel; it is dropped once reaped. */
void pool_destroy(struct daemon *d, struct pkernel *k, const char *why)
{
	char *p;

	pool_log(d, "retiring kernel %s (pid %ld): %s", k->name, (long)k->pid, why);
	if (k->be) {
		remove_container(d, k->be);	/* dropped at the next reap */
		k->be = NULL;
	} else if (k->pid > 0) {
		kill(-k->pid, SIGKILL);
		kill(k->pid, SIGKILL);
	}
	p = pool_path(d, "ready", k->name);
	unlink(p);
	free(p);
	p = pool_path(d, "kernels", k->name);
	channel_remove_dir(p);
	free(p);
	k->dying = 1;
}

void pool_watch_container(struct daemon *d, struct pkernel *k)
{
	struct epoll_event ev = { .events = EPOLLIN | EPOLLONESHOT };
	int fd = k->be ? k->be->ops->exit_fd(k->be) : -1;

	if (fd < 0 || d->epfd < 0)
		return;
	ev.data.fd = fd;
	if (epoll_ctl(d->epfd, EPOLL_CTL_MOD, fd, &ev) < 0)
		epoll_ctl(d->epfd, EPOLL_CTL_ADD, fd, &ev);
}

struct pkernel *pool_add_kernel(struct daemon *d, const char *name, pid_t pid,
				struct backend *be)
{
	struct pkernel *k;

	if (d->nk == d->alloc) {
		d->alloc = d->alloc ? 2 * d->alloc : 8;
		d->k = xrealloc(d->k, d->alloc * sizeof(*d->k));
	}
	k = &d->k[d->nk++];
	memset(k, 0, sizeof(*k));
	k->name = xstrdup(name);
	k->pid = pid;
	k->be = be;
	k->born = k->ready_since = clock_now();
	k->engine = -1;
	return k;
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

		if (k->dying) {
			drop(d, i);
			continue;
		}
		if (!k->be) {
			i++;
			continue;
		}
		entry = pool_path(d, "ready", k->name);
		ready = !k->client && access(entry, F_OK) == 0;
		free(entry);
		if (ready && k->be->ops->reap(k->be, &reason, &why)) {
			pool_destroy(d, k, why.buf);
			strbuf_release(&why);
			drop(d, i);
			continue;
		}
		if (ready)
			pool_watch_container(d, k);
		strbuf_release(&why);
		i++;
	}
}

/* A kernel that cannot start (no image, no interpreter) is retried, slower and slower. */
static void back_off(struct daemon *d)
{
	d->backoff = d->backoff > 0 ? (d->backoff * 2 < 30 ? d->backoff * 2 : 30) : 0.5;
	d->spawn_after = clock_now() + d->backoff;
}

/* Move the kernels in flight on; a failure backs off, a kernel made ends the back-off. */
static void progress(struct daemon *d)
{
	int made, failed = pool_spawn_poll(d, &made);

	if (failed)
		back_off(d);
	else if (made)
		d->backoff = 0;
}

/*
 * Reap exited kernels: leave their status for an adopting client, drop them. The kernels in
 * flight go first: each reaps its own child when it died starting.
 */
static void reap(struct daemon *d)
{
	int status;
	pid_t pid;

	progress(d);
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
					fsutil_write_all(fd, text, strlen(text));
					close(fd);
				}
			}
			free(p);
			if (k->client && !k->dying) {
				/*
				 * Leased: its client reads the status and lets go of it; then it is
				 * retired (its channel removed) as any released kernel is.
				 */
				k->pid = 0;
				k->reaped = 1;
				break;
			}
			if (!k->dying) {
				struct strbuf why = STRBUF_INIT;
				backend_describe_status(status, NULL, &why);
				pool_destroy(d, k, why.buf);
				strbuf_release(&why);
			}
			drop(d, i);
			break;
		}
	}
	for (size_t i = 0; i < d->nk;) {
		if (d->k[i].reaped && d->k[i].dying)
			drop(d, i);	/* retired after it was reaped: nothing left to wait for */
		else
			i++;
	}
}

/* Kernels starting or warming. */
static int flying(const struct daemon *d)
{
	return (int)pool_spawn_in_flight(d);
}

/*
 * How many more containers the pool may have: max counts every container of the daemon, the
 * ready, the leased, those starting, the spares, and those still being removed.
 */
static int room(const struct daemon *d)
{
	int ready, leased;

	count(d, &ready, &leased);
	return d->pc->max_size - (ready + leased + (int)d->nsp +
				  __atomic_load_n(&removals, __ATOMIC_SEQ_CST));
}

/* Ping a ready kernel through its channel; 0 when it answered. */
static int ping(struct daemon *d, struct pkernel *k)
{
	char *from = pool_path(d, "ready", k->name);
	char *to = xasprintf("%s/leased/%s.%ld", d->dir, k->name, (long)getpid());
	char *chan = pool_path(d, "kernels", k->name);
	struct strbuf err = STRBUF_INIT;
	struct session *s = NULL;
	cJSON *params = NULL;
	unsigned long id = 0;
	double deadline = clock_now() + 5;
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
	while (id && session_pending(s, id) && clock_now() < deadline &&
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
	double now = clock_now();
	int ready, leased, want;

	reap(d);
	pool_sync_leases(d);
	pool_engines_check(d);
	count(d, &ready, &leased);
	for (size_t i = 0; i < d->nk; i++) {
		struct pkernel *k = &d->k[i];

		if (k->dying || k->client)
			continue;
		if (pc->max_age > 0 && now - k->born > pc->max_age) {
			pool_destroy(d, k, "older than max-age");
			ready--;
		} else if (pc->idle_timeout > 0 && ready > pc->min_size &&
			   now - k->ready_since > pc->idle_timeout) {
			pool_destroy(d, k, "idle past idle-timeout");
			ready--;
		}
	}
	if (pc->health_interval > 0 && now >= d->next_health) {
		d->next_health = now + pc->health_interval;
		for (size_t i = 0; i < d->nk; i++) {
			struct pkernel *k = &d->k[i];
			if (!k->dying && !k->client && ping(d, k) < 0) {
				pool_destroy(d, k, "it stopped answering");
				ready--;
			}
		}
	}
	/*
	 * Keep min ready, and one more for every client waiting (it takes the first that is
	 * ready; the min stays for the next). Kernels start side by side, never past max.
	 */
	want = pc->min_size + pool_waiting_clients(d);
	while (ready + flying(d) < want && ready + leased + flying(d) < pc->max_size &&
	       clock_now() >= d->spawn_after && (!d->neng || pool_engine_pick(d) >= 0 ||
						 pool_spawn_spares(d)) &&
	       (!d->containers || pool_spawn_spares(d) || room(d) > 0))
		if (pool_spawn_begin(d) < 0)
			back_off(d);
	/* Containers: fill the room left under max with spares, one a pass (the loop comes back). */
	if (d->containers && room(d) > 0 && clock_now() >= d->spawn_after &&
	    pool_spawn_prepare(d) < 0)
		back_off(d);
}

/*
 * Take the pool's lock for this daemon's life: 0, or -1 when another daemon holds it. A
 * client asking whether a daemon serves (pool_daemon_alive()) holds it shared for an instant,
 * longer when it is descheduled on a busy machine: a refusal is believed after a second of
 * tries, never at the first (a restarted daemon was refused so while a client looked).
 */
static int take_lock(int fd)
{
	for (int n = 0; n < 100; n++) {
		if (n)
			nanosleep(&(struct timespec){ .tv_nsec = 10 * 1000 * 1000 }, NULL);
		if (flock(fd, LOCK_EX | LOCK_NB) == 0)
			return 0;
		if (errno != EWOULDBLOCK && errno != EINTR)
			return -1;
	}
	return -1;
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
	if (d.containers && egress_is_list(d.kopts.sandbox.network)) {
		/* Its proxy is the starter's, and a pooled container is handed to another. */
		strbuf_addstr(err, "a pool does not serve a network allow-list (its proxy belongs "
			      "to the process that starts the container; docs/egress.md): run "
			      "without --pool, or pool with --network none");
		return -1;
	}
	if (pc->min_size < 0 || pc->max_size < 1 || pc->min_size > pc->max_size) {
		strbuf_addf(err, "pool sizes: need 0 <= min (%d) <= max (%d) and max >= 1",
			    pc->min_size, pc->max_size);
		return -1;
	}
	for (size_t i = 0; i < ARRAY_SIZE(subdirs); i++) {
		char *p = pool_path(&d, subdirs[i], NULL);
		int bad = wall_own_dir(p, 1, err) < 0;	/* ours and 0700, or a clear error */

		free(p);
		if (bad)
			return -1;
	}
	lock = pool_path(&d, "daemon.lock", NULL);
	lockfd = open(lock, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (lockfd < 0 || take_lock(lockfd) < 0) {
		strbuf_addf(err, "the pool '%s' is already served by another daemon (see 'cellbox pool status')",
			    pool_dir);
		goto out;
	}
	kernels = pool_path(&d, "kernels", NULL);
	d.kopts.runtime_dir = kernels;
	d.kopts.keep_channel = 1;
	pool_clean_leftovers(&d);
	pool_engines_init(&d);
	pool_write_info(&d);
	if (pc->ready_fd >= 0 && write(pc->ready_fd, "1", 1) != 1)
		pool_log(&d, "cannot tell the starter that we serve: %s", strerror(errno));

	sigemptyset(&mask);
	sigaddset(&mask, SIGCHLD);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGHUP);
	sigprocmask(SIG_BLOCK, &mask, &old);
	sfd = signalfd(-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC);
	ifd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	leased = pool_path(&d, "leased", NULL);
	ready = pool_path(&d, "ready", NULL);
	if (ifd >= 0) {
		char *want = pool_path(&d, POOL_WANT_DIR, NULL);
		inotify_add_watch(ifd, leased, IN_CREATE | IN_MOVED_TO | IN_DELETE | IN_MOVED_FROM);
		inotify_add_watch(ifd, ready, IN_MOVED_FROM | IN_DELETE);
		inotify_add_watch(ifd, want, IN_CREATE);
		free(want);
	}
	epfd = epoll_create1(EPOLL_CLOEXEC);
	d.epfd = epfd;
	removed_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
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
		if (removed_fd >= 0) {
			ev.data.fd = removed_fd;
			epoll_ctl(epfd, EPOLL_CTL_ADD, removed_fd, &ev);
		}
	}
	pool_log(&d, "serving '%s' (pid %ld): min %d, max %d%s", pool_dir, (long)getpid(),
	     pc->min_size, pc->max_size, pc->prewarm ? "" : ", no pre-warming");
	d.next_health = clock_now() + pc->health_interval;
	while (!d.stop) {
		struct epoll_event evs[4];
		struct signalfd_siginfo si;
		int ready_n, leased_n, n, timeout = 1000;
		char buf[4096];

		/* Without pre-warming, the first kernel waits for the first client. */
		if (pc->prewarm || started || pool_waiting_clients(&d)) {
			started = 1;
			maintain(&d);
		} else {
			reap(&d);
		}
		count(&d, &ready_n, &leased_n);
		if (started && ((ready_n + flying(&d) < pc->min_size &&
				 ready_n + leased_n + flying(&d) < pc->max_size) ||
				(d.containers && room(&d) > 0))) {
			double wait = d.spawn_after - clock_now();

			/*
			 * More kernels to start: come straight back, or when the back-off ends.
			 * (Kernels in flight wake the loop through their sessions' descriptors.)
			 */
			timeout = wait <= 0 ? 0 : wait < 1 ? (int)(wait * 1000) + 1 : 1000;
		}
		n = epoll_wait(epfd, evs, ARRAY_SIZE(evs), timeout);
		(void)n;
		while (read(sfd, &si, sizeof(si)) == sizeof(si))
			if (si.ssi_signo != SIGCHLD) {
				pool_log(&d, "stopping on signal %u", si.ssi_signo);
				d.stop = 1;
			}
		if (ifd >= 0)
			while (read(ifd, buf, sizeof(buf)) > 0)
				;
		if (removed_fd >= 0)
			while (read(removed_fd, buf, sizeof(uint64_t)) > 0)
				;
	}
	/*
	 * Ready kernels go; leased ones die with us too (PR_SET_PDEATHSIG) once we exit, and so
	 * do leased containers, removed here: a pool's kernels do not outlive its daemon.
	 */
	for (size_t i = 0; i < d.nk; i++)
		if (!d.k[i].dying && (!d.k[i].client || d.k[i].be))
			pool_destroy(&d, &d.k[i], "the daemon stops");
	pool_spawn_abort_all(&d);
	wait_removals(60);
	zygote_free(d.zygote);
	d.zygote = NULL;
	while (waitpid(-1, NULL, WNOHANG) > 0)
		;
	sigprocmask(SIG_SETMASK, &old, NULL);
	rc = 0;
out:
	pool_spawn_abort_all(&d);
	if (removed_fd >= 0)
		close(removed_fd);
	removed_fd = -1;
	zygote_free(d.zygote);
	while (d.nk)
		drop(&d, 0);
	free(d.k);
	pool_engines_release(&d);
	if (epfd >= 0)
		close(epfd);
	if (ifd >= 0)
		close(ifd);
	if (sfd >= 0)
		close(sfd);
	if (lockfd >= 0) {
		char *info = pool_path(&d, "daemon.json", NULL);
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
