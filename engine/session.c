/*
 * The session's API (session.h): opened (started, prepared and launched, attached, pooled),
 * its commands (execute, request, input), dispatch and wait, interrupts and restarts, the
 * accessors, and its end (close, detach). It calls its parts through session_int.h.
 */
#include "session.h"
#include "session_int.h"

#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "backend.h"
#include "numconv.h"
#include "request.h"
#include "wall.h"

/* Put the policy's import hook in place and wait for it; -1 with `err` when it failed. */
static int install_policy(struct session *s, struct strbuf *err)
{
	unsigned long id;

	free(s->policy_error);
	s->policy_error = NULL;
	id = session_send_policy(s, err);
	if (!id)
		return err->len ? -1 : 0;
	s->policy_waiting = 1;
	while (session_wait(s, id) < 0)
		;
	s->policy_waiting = 0;
	if (s->policy_error || s->state == SESSION_DEAD) {
		strbuf_addstr(err, s->policy_error ? s->policy_error : "the kernel died");
		return -1;
	}
	return 0;
}

/* Close a session that could not open, as a dead one; NULL, for its opener to return. */
static struct session *abandon(struct session *s)
{
	s->state = SESSION_DEAD;
	session_close(s);
	return NULL;
}

struct session *session_open(const struct session_opts *opts, struct strbuf *err)
{
	struct session *s = session_new(opts, err);
	int pooled = 0;

	if (!s)
		return NULL;
	if (opts->pool_dir) {
		pooled = session_open_pooled(s, opts, err);
		if (pooled < 0)
			return abandon(s);
		if (pooled && install_policy(s, err) < 0)
			return abandon(s);
		if (pooled)
			return s;
	}
	if (session_new_channel(s, err) < 0 || session_start_kernel(s, err) < 0 ||
	    install_policy(s, err) < 0)
		return abandon(s);
	return s;
}

struct session *session_prepare(const struct session_opts *opts, struct strbuf *err)
{
	struct session *s;

	if (opts->pool_dir || opts->policy) {
		strbuf_addstr(err, "session_prepare: no pool, no policy (session_open does those)");
		return NULL;
	}
	s = session_new(opts, err);
	if (!s)
		return NULL;
	if (session_new_channel(s, err) < 0 || session_prepare_kernel(s, err) < 0)
		return abandon(s);
	return s;
}

int session_launch(struct session *s, struct strbuf *err)
{
	int rc = session_launch_kernel(s, err);

	if (rc < 0)
		s->state = SESSION_DEAD;
	session_arm_timer(s);
	return rc;
}

struct session *session_begin(const struct session_opts *opts, struct strbuf *err)
{
	struct session *s = session_prepare(opts, err);

	if (s && session_launch(s, err) < 0) {
		session_close(s);
		return NULL;
	}
	return s;
}

int session_started(struct session *s, struct strbuf *err)
{
	uint64_t ticks;
	int rc;

	if (s->state != SESSION_STARTING)
		return s->state == SESSION_DEAD || s->state == SESSION_CLOSED ? -1 : 1;
	if (!s->timer_off && read(s->timerfd, &ticks, sizeof(ticks)) < 0 && errno != EAGAIN)
		ticks = 0;
	rc = session_kernel_ready(s, err);
	if (rc > 0)
		session_set_state(s, SESSION_IDLE, NULL);
	else if (rc < 0)
		s->state = SESSION_DEAD;
	session_arm_timer(s);
	return rc;
}

const char *session_pool_note(const struct session *s)
{
	return s->pool_note;
}

int session_pooled(const struct session *s)
{
	return s->lease.entry != NULL;
}

struct session *session_attach(const struct session_opts *opts, const char *channel_dir,
			       struct strbuf *err)
{
	struct session *s = session_new(opts, err);

	if (s && session_adopt_kernel(s, channel_dir, err) < 0) {
		session_detach(s);
		return NULL;
	}
	return s;
}

struct session *session_take_over(struct session *from, session_state_fn on_state,
				  void *data, struct strbuf *err)
{
	struct session_opts o = from->opts;
	struct session *s;

	o.on_state = on_state;
	o.state_data = data;
	s = session_attach(&o, from->ch.dir, err);
	/* The channel's name is the giver's, who leaves: gc is to leave it to us. */
	if (s && channel_keep(from->ch.dir, err) < 0) {
		session_detach(s);
		return NULL;
	}
	/* Its cells kept go on under their ids: ours are numbered on from the giver's. */
	if (s && from->next_id > s->next_id)
		s->next_id = from->next_id;
	if (s) {
		s->keep = from->keep;
		from->keep = NULL;
	}
	return s;
}

int session_gc(const char *configured, struct strbuf *out)
{
	char *root = session_runtime_dir(configured), *old;
	struct strbuf why = STRBUF_INIT;
	int n = channel_gc(root, out);

	/* Where channels went before /dev/shm was preferred: swept too, when it is ours. */
	old = xasprintf("/tmp/cellbox-%ld", (long)getuid());
	if (!configured && strcmp(old, root) && access(old, F_OK) == 0 &&
	    wall_own_dir(old, 0, &why) == 0)
		n += channel_gc(old, out);
	strbuf_release(&why);
	free(old);
	free(root);
	return n;
}

int session_dispatch(struct session *s)
{
	if (s->named)
		return named_client_dispatch(s->named);
	struct strbuf why = STRBUF_INIT;
	enum reason reason;
	uint64_t ticks;
	double now;
	int events;

	if (s->state == SESSION_CLOSED)
		return 0;
	channel_drain(&s->ch);
	/* (A disarmed timer has no expiry: timerfd_settime() cleared it.) */
	if (!s->timer_off && read(s->timerfd, &ticks, sizeof(ticks)) < 0 && errno != EAGAIN)
		ticks = 0;
	events = session_read_events(s);
	if (s->state != SESSION_DEAD && s->ch.lost) {
		session_kernel_stopped(s, REASON_CHANNEL_LOST,
			       "channel removed by the kernel: the kernel was stopped (a restart "
			       "makes the channel again)");
		goto out;
	}
	if (s->state != SESSION_DEAD && s->be->ops->reap(s->be, &reason, &why)) {
		session_kernel_died(s, reason, why.buf);
		goto out;
	}
	if (session_over_quota(s))
		goto out;
	now = clock_now();
	if (s->kill_at && now >= s->kill_at) {
		session_kill_and_restart(s);
	} else if (s->head && s->head->deadline && !s->head->stop &&
		   now >= s->head->deadline) {
		s->head->stop = REASON_TIMEOUT;
		session_interrupt_kernel(s);
	}
out:
	session_arm_timer(s);
	strbuf_release(&why);
	return events;
}

unsigned long session_execute(struct session *s, const char *code, unsigned flags,
			      double timeout, session_event_fn fn, void *data, struct strbuf *err)
{
	if (s->named)
		return named_client_execute(s->named, code, flags, timeout, fn, data, err);
	cJSON *cmd = cJSON_CreateObject(), *blocked = NULL;
	unsigned long id;

	/* The policy reads the cell before anything of it reaches the kernel. */
	if (s->opts.policy && !(flags & SESSION_EXEC_TRUSTED)) {
		struct policy_verdict v;

		policy_check(s->opts.policy, code, strlen(code), &v);
		if (v.blocked)
			blocked = policy_error_event(s->opts.policy, &v);
		policy_verdict_release(&v);
	}
	if (flags & SESSION_EXEC_TRUSTED)
		cJSON_AddBoolToObject(cmd, "trusted", 1);
	cJSON_AddStringToObject(cmd, "kind", "execute");
	cJSON_AddStringToObject(cmd, "code", code);
	cJSON_AddBoolToObject(cmd, "silent", !!(flags & SESSION_EXEC_SILENT));
	cJSON_AddBoolToObject(cmd, "allow_stdin", !!(flags & SESSION_EXEC_ALLOW_STDIN));
	cJSON_AddBoolToObject(cmd, "clear_plots", !!(flags & SESSION_EXEC_CLEAR_PLOTS));
	if (!s->keep || (flags & SESSION_EXEC_SILENT))	/* (a host keeps no silent cell) */
		return session_submit(s, cmd, 1, timeout, fn, data, blocked, err);
	session_keep_wrap(s, code, &fn, &data);
	id = session_submit(s, cmd, 1, timeout, fn, data, blocked, err);
	session_keep_sent(s, data, id);
	return id;
}

unsigned long session_request(struct session *s, const char *kind, const cJSON *params,
			      session_event_fn fn, void *data, struct strbuf *err)
{
	if (s->named)
		return named_client_request(s->named, kind, params, fn, data, err);
	cJSON *cmd = params ? cJSON_Duplicate(params, 1) : cJSON_CreateObject();

	cJSON_DeleteItemFromObjectCaseSensitive(cmd, "kind");
	cJSON_DeleteItemFromObjectCaseSensitive(cmd, "id");
	cJSON_AddStringToObject(cmd, "kind", kind);
	return session_submit(s, cmd, 0, SESSION_REQUEST_TIMEOUT, fn, data, NULL, err);
}

int session_input_reply(struct session *s, unsigned long id, const char *value,
			struct strbuf *err)
{
	if (s->named)
		return named_client_input_reply(s->named, id, value, err);
	struct request *r = s->head;
	cJSON *obj;
	char *text, *rel;
	int rc;

	while (r && r->id != id)
		r = r->next;
	if (!r || !r->inputs) {
		strbuf_addf(err, "request %lu asked for no input", id);
		return -1;
	}
	obj = cJSON_CreateObject();
	cJSON_AddStringToObject(obj, "value", value);
	text = cJSON_PrintUnformatted(obj);
	cJSON_Delete(obj);
	/*
	 * The kernel asked again, so it has the last answer: that file goes. However often a
	 * kernel asks, a request keeps one answer on the host (its files go when it ends).
	 */
	if (r->inputs > 1) {
		rel = xasprintf("commands/%s.%d.input", r->name, r->inputs - 1);
		channel_unlink(&s->ch, rel);
		free(rel);
	}
	rel = xasprintf("commands/%s.%d.input", r->name, r->inputs);
	rc = channel_write(&s->ch, rel, text, strlen(text), err);
	free(rel);
	cJSON_free(text);
	if (rc == 0)
		session_wake_kernel(s);
	return rc;
}

int session_fd(const struct session *s)
{
	if (s->named)
		return named_client_fd(s->named);
	return s->epfd;
}

int session_pending(const struct session *s, unsigned long id)
{
	if (s->named)
		return named_client_pending(s->named, id);
	for (const struct request *r = s->head; r; r = r->next)
		if (r->id == id)
			return 1;
	return 0;
}

/*
 * A wait looks for the kernel's answer SPIN_WINDOW seconds without sleeping while the answers
 * come that fast (the last wait took at most SPIN_GAP): a batch of small cells, where waking
 * from an idle core would cost 0.1-0.5 ms a round trip. A longer cell's wait sleeps at once.
 */
#define SPIN_WINDOW 0.0003
#define SPIN_GAP 0.002

int session_wait(struct session *s, unsigned long id)
{
	if (s->named)
		return named_client_wait(s->named, id);
	double start = clock_now(), spin_end = s->slow_waits ? 0 : start + SPIN_WINDOW;

	while (session_pending(s, id)) {
		struct epoll_event evs[4];
		int spin = spin_end && clock_now() < spin_end, n;

		if (!spin && s->spent)
			session_tidy(s);	/* before it sleeps: the host has nothing else to do */
		n = epoll_pwait(s->epfd, evs, ARRAY_SIZE(evs), spin ? 0 : -1,
				s->has_wait_mask ? &s->wait_mask : NULL);
		if (n < 0 && errno == EINTR)
			return -1;
		if (n == 0 && spin) {
			sched_yield();
			continue;
		}
		session_dispatch(s);
	}
	s->slow_waits = clock_now() - start > SPIN_GAP;
	return 0;
}

void session_set_sigmask(struct session *s, const sigset_t *mask)
{
	if (s->named)
		return named_client_set_sigmask(s->named, mask);
	s->has_wait_mask = mask != NULL;
	if (mask)
		s->wait_mask = *mask;
}

int session_interrupt(struct session *s)
{
	if (s->named)
		return named_client_interrupt(s->named);
	struct request *r = s->head;
	int rc;

	if (!r || s->state == SESSION_DEAD)
		return -1;
	if (r->blocked)
		return 0;	/* it never runs: it ends at the next dispatch */
	if (!r->stop)
		r->stop = REASON_INTERRUPTED;
	rc = session_interrupt_kernel(s);
	session_arm_timer(s);
	return rc;
}

int session_restart(struct session *s, struct strbuf *err)
{
	if (s->named)
		return named_client_restart(s->named, err);
	int rc;

	s->be->ops->kill(s->be);
	session_abort_all(s, REASON_RESTARTED, "KernelRestarted", "the kernel was restarted", "restart");
	rc = session_start_kernel(s, err);
	if (rc == 0)
		rc = install_policy(s, err);
	if (rc == 0)
		session_set_state(s, SESSION_IDLE, "kernel restarted");
	return rc;
}

enum session_state session_state(const struct session *s)
{
	if (s->named)
		return named_client_state(s->named);
	return s->state;
}

const char *session_channel_dir(const struct session *s)
{
	if (s->named)
		return named_client_channel_dir(s->named);
	return s->ch.dir;
}

const cJSON *session_kernel_info(const struct session *s)
{
	if (s->named)
		return named_client_kernel_info(s->named);
	return s->info;
}

int session_write_file(struct session *s, const char *rel, const void *data, size_t len,
		       struct strbuf *err)
{
	if (s->named) {
		strbuf_addstr(err, "files are copied in by the session's host, not its front ends");
		return -1;
	}
	return channel_write(&s->ch, rel, data, len, err);
}

void session_remove_file(struct session *s, const char *rel)
{
	if (s->named)
		return;
	channel_unlink(&s->ch, rel);
}

int session_take_file(struct session *s, const char *name, size_t max, const char *dst,
		      struct strbuf *data, struct strbuf *err)
{
	if (s->named) {
		strbuf_addstr(err, "files are copied out by the session's host, not its front ends");
		return -1;
	}
	return channel_take_out(&s->ch, name, max, dst, data, err);
}

void session_add_copies(struct session *s, unsigned n)
{
	if (s->named)
		return;		/* its host keeps the copies, and counts them */
	s->ch.copies = (s->ch.copies ? s->ch.copies : 1) + n;
}

int session_revive(struct session *s, struct strbuf *why, struct strbuf *err)
{
	if (s->named)
		return named_client_revive(s->named, why, err);
	if (s->state == SESSION_CLOSED)
		return -1;
	if (s->state != SESSION_DEAD)
		session_dispatch(s);	/* a death since the last request is seen now */
	if (s->state != SESSION_DEAD)
		return 0;
	strbuf_addstr(why, s->death ? s->death : "the kernel is not running");
	if (session_restart(s, err) < 0)
		return -1;
	return 1;
}

const char *session_backend_name(const struct session *s)
{
	if (s->named)
		return named_client_backend_name(s->named);
	return s->backend_name;
}

const struct sandbox_opts *session_sandbox(const struct session *s)
{
	return s->named ? NULL : &s->opts.sandbox;
}

double session_latency(const struct session *s)
{
	return s->named ? -1 : s->be && s->be->ops->latency ? s->be->ops->latency(s->be) : -1;
}

int session_usage(struct session *s, struct usage_sample *u)
{
	usage_sample_clear(u);
	if (s->named || !s->be || !s->be->ops->usage || s->state == SESSION_DEAD ||
	    s->state == SESSION_CLOSED)
		return -1;
	return s->be->ops->usage(s->be, 0, u);
}

const struct kernel_def *session_kernel(const struct session *s)
{
	if (s->named)
		return named_client_kernel(s->named);
	return s->kernel;
}

/* Ask the runner to exit and give it a moment before the backend kills it. */
static void shutdown_kernel(struct session *s)
{
	struct strbuf err = STRBUF_INIT;
	int exit_fd = s->be->ops->exit_fd(s->be);
	double deadline;

	if (s->state == SESSION_DEAD || s->state == SESSION_STARTING)
		goto out;
	session_abort_all(s, REASON_CLOSED, NULL, NULL, "session closed");
	if (!session_request(s, "shutdown", NULL, NULL, NULL, &err))
		goto out;
	deadline = clock_now() + 1.0;
	while (exit_fd >= 0) {
		struct epoll_event ev;
		double left = deadline - clock_now();
		int fd = epoll_create1(EPOLL_CLOEXEC), n;

		if (left <= 0 || fd < 0) {
			if (fd >= 0)
				close(fd);
			break;
		}
		ev.events = EPOLLIN;
		ev.data.fd = exit_fd;
		epoll_ctl(fd, EPOLL_CTL_ADD, exit_fd, &ev);
		n = epoll_wait(fd, &ev, 1, wait_ms(left));
		close(fd);
		if (n > 0)
			break;
	}
out:
	s->be->ops->kill(s->be);
	strbuf_release(&err);
}

/* Untie a session from its parent and its contexts (either may close first). */
static void context_untie(struct session *s)
{
	for (int i = 0; i < SESSION_CONTEXTS_MAX; i++)
		if (s->parent && s->parent->contexts[i] == s)
			s->parent->contexts[i] = NULL;
	s->parent = NULL;
	for (int i = 0; i < SESSION_CONTEXTS_MAX; i++) {
		if (s->contexts[i])
			s->contexts[i]->parent = NULL;
		s->contexts[i] = NULL;
	}
}

void session_close(struct session *s)
{
	struct pool_lease lease;
	int daemon = 0;

	if (!s)
		return;
	context_untie(s);
	if (s->named) {		/* a front end's end: it detaches, the session runs on */
		named_client_close(s->named);
		free(s);
		return;
	}
	lease = s->lease;
	if (lease.entry)
		daemon = pool_lease_daemon_alive(&lease);
	if (s->be) {
		/* A pooled kernel is never reused: no need to let it exit politely. */
		if (!s->lease.entry)
			shutdown_kernel(s);
		session_abort_all(s, REASON_CLOSED, NULL, NULL, "session closed");
		/*
		 * Stopping a container takes 100 ms or more: a pooled one goes back to its daemon,
		 * which removes every released kernel, off our path. Without a daemon we end it.
		 */
		if (s->hand_back && s->be->ops->detach && daemon)
			s->be->ops->detach(s->be);
		s->be->ops->free(s->be);
	}
	/*
	 * A released kernel's channel goes with it: its daemon removes the channel of every
	 * kernel it retires (a tree of some forty entries: 1-10 ms here), off our path.
	 */
	session_free(s, lease.entry ? !daemon : !s->opts.keep_channel);
	if (lease.entry)
		pool_lease_release(&lease);	/* last: the daemon may now count it gone */
}

void session_detach(struct session *s)
{
	if (!s)
		return;
	if (s->named) {
		session_close(s);
		return;
	}
	session_abort_all(s, REASON_CLOSED, NULL, NULL, "session detached");
	if (s->be) {
		if (s->be->ops->detach)
			s->be->ops->detach(s->be);
		s->be->ops->free(s->be);
	}
	session_free(s, 0);
}

struct session *session_of_named(struct named_client *nc)
{
	struct session *s = xcalloc(1, sizeof(*s));

	s->named = nc;
	s->state = SESSION_IDLE;
	s->epfd = s->timerfd = -1;
	return s;
}

const char *session_named(const struct session *s)
{
	return s->named ? named_client_name(s->named) : NULL;
}

int session_read_only(const struct session *s)
{
	return s->named ? named_client_read_only(s->named) : 0;
}

void session_watch(struct session *s, session_watch_fn fn, void *data)
{
	if (s->named)
		named_client_watch(s->named, fn, data);
}
