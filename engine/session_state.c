/*
 * A session's state: set (and told to the front end), its timer armed for the nearest
 * deadline, and changed by what ends a kernel's run: its death, a broken rule (the channel's
 * quota, its channel), an interrupt it ignored (killed and restarted). See session_int.h.
 * And the states' names (session_state_name).
 */
#include "session.h"
#include "session_int.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/timerfd.h>

#include "alloc.h"
#include "backend.h"
#include "numconv.h"
#include "request.h"
#include "wall.h"

#define REAP_INTERVAL 0.100		/* without an exit descriptor */
#define USAGE_INTERVAL 0.05		/* seconds between counts of a channel without a tmpfs */

/* Tell the front end about a state change. */
void session_set_state(struct session *s, enum session_state state, const char *msg)
{
	if (state == SESSION_DEAD && msg) {
		free(s->death);
		s->death = xstrdup(msg);
	}
	s->state = state;
	session_keep_state(s, msg);
	if (s->opts.on_state && (msg || state == SESSION_DEAD))
		s->opts.on_state(s, state, msg, s->opts.state_data);
}

/* Arm the timer for the nearest deadline (and the polling fallbacks). */
void session_arm_timer(struct session *s)
{
	struct itimerspec its = { 0 };
	double when = 0, now = clock_now(), interval = 0;

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

/* The kernel is gone: finish what it left, say why, and mark the session dead. */
void session_kernel_died(struct session *s, enum reason reason, const char *why)
{
	session_read_events(s);		/* what it wrote before it went */
	session_abort_all(s, reason, "KernelDied", why, why);
	channel_clear_queue(&s->ch);
	session_set_state(s, SESSION_DEAD, why);
}

/* Stop a kernel that broke the channel's rules (its quota, its channel) and end its cells. */
void session_kernel_stopped(struct session *s, enum reason reason, const char *why)
{
	s->be->ops->kill(s->be);
	s->more = 0;
	session_abort_all(s, reason, "KernelStopped", why, why);
	channel_clear_queue(&s->ch);
	session_set_state(s, SESSION_DEAD, why);
}

/* Whether the kernel keeps more on the host than its quota allows (then it is stopped). */
int session_over_quota(struct session *s)
{
	struct strbuf why = STRBUF_INIT;
	unsigned long long used;
	double now;

	if (!s->ch.quota || s->state == SESSION_DEAD)
		return 0;
	/* What the host copied is counted as it is copied: no walk, checked every time. */
	if (s->ch.over || s->ch.copied > s->ch.quota)
		goto over;
	/*
	 * A tmpfs of ours is one fstatfs(); without one, the count walks the kernel part, so it is
	 * done at most every USAGE_INTERVAL, and for a confined kernel also after each done and
	 * before each command. A local kernel is not confined (it can fill the disk without its
	 * channel): its count is only the interval's, off the round trip.
	 */
	now = clock_now();
	if (!s->ch.mounted && now - s->usage_at < USAGE_INTERVAL &&
	    (s->state != SESSION_IDLE || !s->be || !(s->be->ops->flags & BACKEND_SANDBOX)))
		return 0;
	s->usage_at = now;
	if (channel_usage(&s->ch) <= s->ch.quota)
		return 0;
over:
	/* The session's total: its kernels' plots and files copied, and this kernel's part now. */
	used = channel_usage(&s->ch);
	strbuf_addstr(&why, "channel quota exceeded: the session's kernels put ");
	wall_describe_size(&why, used);
	if (s->ch.over) {
		strbuf_addstr(&why, ", and a plot that would take it past ");
	} else {
		strbuf_addstr(&why, " on the host, past ");
	}
	strbuf_addstr(&why, "its quota of ");
	wall_describe_size(&why, s->ch.quota);
	strbuf_addstr(&why, " (channel-quota, for the session, across restarts); the kernel was "
		      "stopped");
	session_kernel_stopped(s, REASON_QUOTA_EXCEEDED, why.buf);
	strbuf_release(&why);
	return 1;
}

/* Kill an unresponsive kernel, end its requests and start a fresh one. */
void session_kill_and_restart(struct session *s)
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
		session_pop_head(s);
	}
	session_abort_all(s, REASON_RESTARTED, "KernelRestarted", "the kernel was restarted", "restart");
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

/* The states' names, by state. */
static const char *const names[] = {
	[SESSION_STARTING] = "starting", [SESSION_IDLE] = "idle", [SESSION_BUSY] = "busy",
	[SESSION_DEAD] = "dead", [SESSION_CLOSED] = "closed",
};

const char *session_state_name(enum session_state st)
{
	return (size_t)st < ARRAY_SIZE(names) ? names[st] : "closed";
}

enum session_state session_state_named(const char *name)
{
	for (size_t i = 0; name && i < ARRAY_SIZE(names); i++)
		if (!strcmp(name, names[i]))
			return (enum session_state)i;
	return SESSION_DEAD;
}
