/* The running session: its state and timer, events, quota, commands, interrupts, its end. */
#include "session.h"
#include "session_int.h"

#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "backend.h"
#include "numconv.h"
#include "request.h"
#include "wall.h"

#define REAP_INTERVAL 0.100		/* without an exit descriptor */
#define READ_BUDGET (4u << 20)		/* bytes of events one dispatch reads; then it yields */
#define USAGE_INTERVAL 0.05		/* seconds between counts of a channel without a tmpfs */


/* Tell the front end about a state change. */
void session_set_state(struct session *s, enum session_state state, const char *msg)
{
	if (state == SESSION_DEAD && msg) {
		free(s->death);
		s->death = xstrdup(msg);
	}
	s->state = state;
	if (s->opts.on_state && (msg || state == SESSION_DEAD))
		s->opts.on_state(s, state, msg, s->opts.state_data);
}

/* Arm the timer for the nearest deadline (and the polling fallbacks). */
void session_arm_timer(struct session *s)
{
	struct itimerspec its = { 0 };
	double when = 0, now = now_monotonic(), interval = 0;

	if (s->head && s->head->deadline && !s->head->stop)
		when = s->head->deadline;
	if (s->head && s->head->blocked)
		when = now;	/* a cell the policy blocked ends at the next dispatch */
	if (s->kill_at && (!when || s->kill_at < when))
		when = s->kill_at;
	if (s->more)
		when = now;	/* a results file has more: read on at once */
	if (s->state == SESSION_STARTING && s->start_deadline &&
	    (!when || s->start_deadline < when))
		when = s->start_deadline;	/* session_started() says it timed out */
	if (s->ch.notify_fd < 0)
		interval = POLL_INTERVAL;
	else if (s->be && s->be->ops->exit_fd(s->be) < 0)
		interval = REAP_INTERVAL;
	if (interval && s->state != SESSION_DEAD) {
		its.it_interval.tv_nsec = (long)(interval * 1e9);
		if (!when || when > now + interval)
			when = now + interval;
	}
	if (when) {
		if (when <= now)
			when = now + 1e-6;
		when = seconds_clamp(when);	/* a deadline of now + 1e300: the same as none */
		its.it_value.tv_sec = (time_t)when;
		its.it_value.tv_nsec = (long)((when - (double)(time_t)when) * 1e9);
	} else if (s->timer_off) {
		return;		/* disarmed already: no call per dispatch and per cell for it */
	}
	s->timer_off = !when;
	timerfd_settime(s->timerfd, TFD_TIMER_ABSTIME, &its, NULL);
}

/* Take the finished head off the queue; the next request starts its clock. */
static void pop_head(struct session *s)
{
	struct request *r = s->head;

	s->head = r->next;
	if (!s->head)
		s->tail = NULL;
	else if (s->head->timeout)
		s->head->deadline = now_monotonic() + s->head->timeout;
	/* Its files go, off the round trip: the command and answers (ours), the results. */
	session_spend(s, r);
	if (s->state == SESSION_BUSY && !s->head)
		s->state = SESSION_IDLE;
}

/* End every queued request with `reason` (the kernel went away). */
static void abort_all(struct session *s, enum reason reason, const char *ename,
		      const char *evalue, const char *detail)
{
	while (s->head) {
		request_abort(s, s->head, reason, ename, evalue, detail);
		pop_head(s);
	}
	s->kill_at = 0;
}

/* Read new events of the head request (and of the ones after it once it is done). */
static int read_events(struct session *s)
{
	struct request_reader rd = {
		.s = s, .ch = &s->ch, .be = s->be, .output_limit = s->opts.output_limit,
		.interrupt_grace = s->opts.interrupt_grace, .kill_at = &s->kill_at,
	};

	s->more = 0;
	while (s->head) {
		struct request *r = s->head;

		if (r->blocked) {
			s->kill_at = 0;
			request_end_blocked(s, r, s->opts.policy->name);
			rd.events += 2;
			pop_head(s);
			continue;
		}
		if (!request_read(&rd, r, READ_BUDGET)) {
			s->more = r->rd.more;
			break;
		}
		pop_head(s);
	}
	return rd.events;
}

/* The kernel is gone: finish what it left, say why, and mark the session dead. */
static void kernel_died(struct session *s, enum reason reason, const char *why)
{
	read_events(s);		/* what it wrote before it went */
	abort_all(s, reason, "KernelDied", why, why);
	channel_clear_queue(&s->ch);
	session_set_state(s, SESSION_DEAD, why);
}

/* Stop a kernel that broke the channel's rules (its quota, its channel) and end its cells. */
static void kernel_stopped(struct session *s, enum reason reason, const char *why)
{
	s->be->ops->kill(s->be);
	s->more = 0;
	abort_all(s, reason, "KernelStopped", why, why);
	channel_clear_queue(&s->ch);
	session_set_state(s, SESSION_DEAD, why);
}

/* Whether the kernel keeps more on the host than its quota allows (then it is stopped). */
static int over_quota(struct session *s)
{
	struct strbuf why = STRBUF_INIT;
	unsigned long long used;
	double now;

	if (!s->ch.quota || s->state == SESSION_DEAD)
		return 0;
	/*
	 * A tmpfs of ours is one fstatfs(); without one, the count walks the kernel part, so it is
	 * done at most every USAGE_INTERVAL, and for a confined kernel also after each done and
	 * before each command. A local kernel is not confined (it can fill the disk without its
	 * channel): its count is only the interval's, off the round trip.
	 */
	now = now_monotonic();
	if (!s->ch.mounted && now - s->usage_at < USAGE_INTERVAL &&
	    (s->state != SESSION_IDLE || !s->be || !(s->be->ops->flags & BACKEND_SANDBOX)))
		return 0;
	s->usage_at = now;
	used = channel_usage(&s->ch);
	if (used <= s->ch.quota)
		return 0;
	strbuf_addstr(&why, "channel quota exceeded: the kernel kept more than its quota of ");
	wall_describe_size(&why, s->ch.quota);
	strbuf_addstr(&why, " on the host (channel-quota); it was stopped");
	kernel_stopped(s, REASON_QUOTA_EXCEEDED, why.buf);
	strbuf_release(&why);
	return 1;
}

/*
 * Tell the runner that something is there for it (a command, an input answer, an interrupt):
 * the backend's wake-up (a container's stdin) or the host/wake FIFO of a runner that asked for
 * it; a runner that watches the channel with inotify needs neither.
 */
static void wake_kernel(struct session *s)
{
	if (s->be->ops->wake)
		s->be->ops->wake(s->be);
	if (s->wake)
		channel_wake(&s->ch);
}

/* SIGINT to the kernel, and a wake-up for a runner blocked waiting for one. */
static int interrupt_kernel(struct session *s)
{
	int rc = s->be->ops->signal(s->be, SIGINT);

	wake_kernel(s);
	return rc;
}

/* Kill an unresponsive kernel, end its requests and start a fresh one. */
static void kill_and_restart(struct session *s)
{
	struct request *r = s->head;
	struct strbuf msg = STRBUF_INIT, err = STRBUF_INIT;
	int timed_out = r && r->stop == REASON_TIMEOUT;

	s->be->ops->kill(s->be);
	s->kill_at = 0;
	if (r) {
		if (timed_out && !r->is_execute)
			strbuf_addf(&msg, "the kernel did not answer within %g s and ignored the "
				    "interrupt for %g s: the kernel was killed and restarted",
				    r->timeout, s->opts.interrupt_grace);
		else if (timed_out)
			strbuf_addf(&msg, "the cell timed out after %g s and ignored the interrupt for %g s: "
				    "the kernel was killed and restarted", r->timeout,
				    s->opts.interrupt_grace);
		else
			strbuf_addf(&msg, "the cell ignored the interrupt for %g s: "
				    "the kernel was killed and restarted", s->opts.interrupt_grace);
		request_abort(s, r, timed_out ? REASON_TIMEOUT_KILLED : REASON_INTERRUPT_KILLED,
			      timed_out ? "TimeoutError" : "KeyboardInterrupt", msg.buf,
			      timed_out ? "timeout: kernel restarted" : "interrupt: kernel restarted");
		pop_head(s);
	}
	abort_all(s, REASON_RESTARTED, "KernelRestarted", "the kernel was restarted", "restart");
	session_set_state(s, SESSION_STARTING, "restarting the kernel");
	if (session_start_kernel(s, &err) < 0)
		session_set_state(s, SESSION_DEAD, err.buf);
	else
		session_set_state(s, SESSION_IDLE, "kernel restarted");
	if (s->state == SESSION_IDLE && !session_send_policy(s, &err) && err.len)
		session_set_state(s, s->state, err.buf);	/* queued first: no cell runs before it */
	strbuf_release(&msg);
	strbuf_release(&err);
}

int session_dispatch(struct session *s)
{
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
	events = read_events(s);
	if (s->state != SESSION_DEAD && s->ch.lost) {
		kernel_stopped(s, REASON_CHANNEL_LOST,
			       "channel removed by the kernel: the kernel was stopped (a restart "
			       "makes the channel again)");
		goto out;
	}
	if (s->state != SESSION_DEAD && s->be->ops->reap(s->be, &reason, &why)) {
		kernel_died(s, reason, why.buf);
		goto out;
	}
	if (over_quota(s))
		goto out;
	now = now_monotonic();
	if (s->kill_at && now >= s->kill_at) {
		kill_and_restart(s);
	} else if (s->head && s->head->deadline && !s->head->stop &&
		   now >= s->head->deadline) {
		s->head->stop = REASON_TIMEOUT;
		interrupt_kernel(s);
		s->kill_at = now + s->opts.interrupt_grace;
	}
out:
	session_arm_timer(s);
	strbuf_release(&why);
	return events;
}

/*
 * Write a command file and queue the request. With `blocked` (the policy's error event, taken
 * over) nothing is written: the request is ended by the host at the next dispatch.
 */
unsigned long session_submit(struct session *s, cJSON *cmd, int is_execute, double timeout,
			     session_event_fn fn, void *data, cJSON *blocked, struct strbuf *err)
{
	struct request *r;
	char *text, *rel;
	int rc;

	if (s->state != SESSION_DEAD && s->state != SESSION_CLOSED)
		over_quota(s);		/* a kernel over its quota is stopped before it gets more */
	if (s->state == SESSION_DEAD || s->state == SESSION_CLOSED) {
		strbuf_addstr(err, "the kernel is not running (restart it)");
		cJSON_Delete(cmd);
		cJSON_Delete(blocked);
		return 0;
	}
	r = session_new_request(s, is_execute, timeout, fn, data, blocked != NULL, err);
	if (!r) {
		cJSON_Delete(cmd);
		cJSON_Delete(blocked);
		return 0;
	}
	r->blocked = blocked;
	cJSON_AddStringToObject(cmd, "id", r->name);
	text = cJSON_PrintUnformatted(cmd);
	cJSON_Delete(cmd);
	rel = xasprintf("commands/%s.json", r->name);
	rc = blocked ? 0 : session_write_command(s, rel, text, err);
	free(rel);
	cJSON_free(text);
	if (rc < 0) {
		channel_results_remove(&s->ch, r->name);
		request_free(r);
		return 0;
	}
	if (!s->head) {
		s->head = r;
		if (timeout)
			r->deadline = now_monotonic() + timeout;
	} else {
		s->tail->next = r;
	}
	s->tail = r;
	if (s->state == SESSION_IDLE)
		s->state = SESSION_BUSY;
	if (!blocked)
		wake_kernel(s);
	session_arm_timer(s);
	/* While the kernel runs it: the finished requests' files go, the next one's are made. */
	session_tidy(s);
	session_make_spare(s);
	return r->id;
}

unsigned long session_execute(struct session *s, const char *code, unsigned flags,
			      double timeout, session_event_fn fn, void *data, struct strbuf *err)
{
	cJSON *cmd = cJSON_CreateObject(), *blocked = NULL;

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
	return session_submit(s, cmd, 1, timeout, fn, data, blocked, err);
}

unsigned long session_request(struct session *s, const char *kind, const cJSON *params,
			      session_event_fn fn, void *data, struct strbuf *err)
{
	cJSON *cmd = params ? cJSON_Duplicate(params, 1) : cJSON_CreateObject();

	cJSON_DeleteItemFromObjectCaseSensitive(cmd, "kind");
	cJSON_DeleteItemFromObjectCaseSensitive(cmd, "id");
	cJSON_AddStringToObject(cmd, "kind", kind);
	return session_submit(s, cmd, 0, SESSION_REQUEST_TIMEOUT, fn, data, NULL, err);
}

int session_input_reply(struct session *s, unsigned long id, const char *value,
			struct strbuf *err)
{
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
	rel = xasprintf("commands/%s.%d.input", r->name, r->inputs);
	rc = channel_write(&s->ch, rel, text, strlen(text), err);
	free(rel);
	cJSON_free(text);
	if (rc == 0)
		wake_kernel(s);
	return rc;
}

int session_fd(const struct session *s)
{
	return s->epfd;
}

int session_pending(const struct session *s, unsigned long id)
{
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
	double start = now_monotonic(), spin_end = s->slow_waits ? 0 : start + SPIN_WINDOW;

	while (session_pending(s, id)) {
		struct epoll_event evs[4];
		int spin = spin_end && now_monotonic() < spin_end, n;

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
	s->slow_waits = now_monotonic() - start > SPIN_GAP;
	return 0;
}

void session_set_sigmask(struct session *s, const sigset_t *mask)
{
	s->has_wait_mask = mask != NULL;
	if (mask)
		s->wait_mask = *mask;
}

int session_interrupt(struct session *s)
{
	struct request *r = s->head;

	if (!r || s->state == SESSION_DEAD)
		return -1;
	if (r->blocked)
		return 0;	/* it never runs: it ends at the next dispatch */
	if (!r->stop)
		r->stop = REASON_INTERRUPTED;
	if (!s->kill_at)
		s->kill_at = now_monotonic() + s->opts.interrupt_grace;
	session_arm_timer(s);
	return interrupt_kernel(s);
}

int session_restart(struct session *s, struct strbuf *err)
{
	int rc;

	s->be->ops->kill(s->be);
	abort_all(s, REASON_RESTARTED, "KernelRestarted", "the kernel was restarted", "restart");
	rc = session_start_kernel(s, err);
	if (rc == 0)
		rc = session_install_policy(s, err);
	if (rc == 0)
		session_set_state(s, SESSION_IDLE, "kernel restarted");
	return rc;
}

enum session_state session_state(const struct session *s)
{
	return s->state;
}

const char *session_channel_dir(const struct session *s)
{
	return s->ch.dir;
}

const cJSON *session_kernel_info(const struct session *s)
{
	return s->info;
}

int session_write_file(struct session *s, const char *rel, const void *data, size_t len,
		       struct strbuf *err)
{
	return channel_write(&s->ch, rel, data, len, err);
}

void session_remove_file(struct session *s, const char *rel)
{
	channel_unlink(&s->ch, rel);
}

int session_take_file(struct session *s, const char *name, const char *dst, struct strbuf *err)
{
	return channel_take_out(&s->ch, name, dst, err);
}

int session_revive(struct session *s, struct strbuf *why, struct strbuf *err)
{
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
	return s->backend_name;
}

const struct kernel_def *session_kernel(const struct session *s)
{
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
	abort_all(s, REASON_CLOSED, NULL, NULL, "session closed");
	if (!session_request(s, "shutdown", NULL, NULL, NULL, &err))
		goto out;
	deadline = now_monotonic() + 1.0;
	while (exit_fd >= 0) {
		struct epoll_event ev;
		double left = deadline - now_monotonic();
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

/* Free what every session has, after the kernel was dealt with. */
static void session_free(struct session *s, int remove_channel)
{
	session_tidy(s);
	session_drop_spare(s);
	s->state = SESSION_CLOSED;
	if (s->ch.dir)
		channel_release(&s->ch, remove_channel);
	if (s->epfd >= 0)
		close(s->epfd);
	if (s->timerfd >= 0)
		close(s->timerfd);
	cJSON_Delete(s->info);
	free(s->backend_name);
	free(s->image);
	free(s->python);
	free(s->runtime_dir);
	free(s->cwd);
	free(s->pool_note);
	free(s->policy_error);
	free(s->death);
	free(s->runner_path);
	free(s);
}

void session_close(struct session *s)
{
	struct pool_lease lease;
	int daemon = 0;

	if (!s)
		return;
	lease = s->lease;
	if (lease.entry)
		daemon = pool_lease_daemon_alive(&lease);
	if (s->be) {
		/* A pooled kernel is never reused: no need to let it exit politely. */
		if (!s->lease.entry)
			shutdown_kernel(s);
		abort_all(s, REASON_CLOSED, NULL, NULL, "session closed");
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
	abort_all(s, REASON_CLOSED, NULL, NULL, "session detached");
	if (s->be) {
		if (s->be->ops->detach)
			s->be->ops->detach(s->be);
		s->be->ops->free(s->be);
	}
	session_free(s, 0);
}
