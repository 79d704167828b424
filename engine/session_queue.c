/*
 * A session's requests in flight: submitted (the command file written, the runner woken),
 * their events read in order, the finished head taken off, all ended at once when the kernel
 * goes. See session_int.h.
 */
#include "session.h"
#include "session_int.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "numconv.h"
#include "request.h"

#define READ_BUDGET (4u << 20)		/* bytes of events one dispatch reads; then it yields */

/*
 * Request `r` reaches the head: its counters start. One that clears the plots (the kernel
 * empties its list as it begins, and counts from 1 again) makes the host name its next copy
 * 1 again too, as the seeds' clear_plots does; nothing else the kernel says resets it.
 */
static void head_begins(struct session *s, struct request *r)
{
	request_begin(r, s->be);
	if (r->clears_plots)
		s->ch.taken = 0;
}

/* Take the finished head off the queue; the next request starts its clock. */
void session_pop_head(struct session *s)
{
	struct request *r = s->head;

	s->head = r->next;
	if (!s->head)
		s->tail = NULL;
	else if (s->head->timeout)
		s->head->deadline = clock_now() + s->head->timeout;
	if (s->head)
		head_begins(s, s->head);
	/* Its files go, off the round trip: the command and answers (ours), the results. */
	session_spend(s, r);
	if (s->state == SESSION_BUSY && !s->head)
		s->state = SESSION_IDLE;
}

/* End every queued request with `reason` (the kernel went away). */
void session_abort_all(struct session *s, enum reason reason, const char *ename,
		      const char *evalue, const char *detail)
{
	while (s->head) {
		request_abort(s, s->head, reason, ename, evalue, detail);
		session_pop_head(s);
	}
	s->kill_at = 0;
}

/* Read new events of the head request (and of the ones after it once it is done). */
int session_read_events(struct session *s)
{
	struct request_reader rd = {
		.s = s, .ch = &s->ch, .be = s->be, .output_limit = s->opts.output_limit,
		.interrupt_grace = s->opts.interrupt_grace, .kill_at = &s->kill_at,
		.memory_limit = s->be->ops->flags & BACKEND_SANDBOX ? 0 : s->opts.memory,
	};

	s->more = 0;
	while (s->head) {
		struct request *r = s->head;

		if (r->blocked) {
			s->kill_at = 0;
			request_end_blocked(s, r, s->opts.policy->name);
			rd.events += 2;
			session_pop_head(s);
			continue;
		}
		if (!request_read(&rd, r, READ_BUDGET)) {
			s->more = r->rd.more;
			break;
		}
		session_pop_head(s);
	}
	return rd.events;
}

/*
 * Tell the runner that something is there for it (a command, an input answer, an interrupt):
 * the backend's wake-up (a container's stdin) or the host/wake FIFO of a runner that asked for
 * it; a runner that watches the channel with inotify needs neither.
 */
void session_wake_kernel(struct session *s)
{
	if (s->be->ops->wake)
		s->be->ops->wake(s->be);
	if (s->wake)
		channel_wake(&s->ch);
}

/*
 * SIGINT to the kernel, and a wake-up for a runner blocked waiting for one. The grace
 * (interrupt-grace) is counted from when the signal has gone: a remote engine's API call may
 * itself take a while (an ssh connection made again, a loaded machine).
 */
int session_interrupt_kernel(struct session *s)
{
	int rc = s->be->ops->signal(s->be, SIGINT);

	if (!s->kill_at)
		s->kill_at = clock_now() + s->opts.interrupt_grace;
	session_wake_kernel(s);
	return rc;
}

/*
 * Write a command file and queue the request. With `blocked` (the policy's error event, taken
 * over) nothing is written: the request is ended by the host at the next dispatch.
 */
unsigned long session_submit(struct session *s, cJSON *cmd, int is_execute, double timeout,
			     session_event_fn fn, void *data, cJSON *blocked, struct strbuf *err)
{
	struct request *r;
	const char *kind;
	char *text, *rel;
	int rc;

	if (s->state != SESSION_DEAD && s->state != SESSION_CLOSED)
		session_over_quota(s);		/* a kernel over its quota is stopped before it gets more */
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
	kind = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(cmd, "kind"));
	r->clears_plots = !blocked && ((kind && !strcmp(kind, "clear_plots")) ||
				       cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(cmd,
										"clear_plots")));
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
			r->deadline = clock_now() + timeout;
		head_begins(s, r);
	} else {
		s->tail->next = r;
	}
	s->tail = r;
	if (s->state == SESSION_IDLE)
		s->state = SESSION_BUSY;
	if (!blocked)
		session_wake_kernel(s);
	session_arm_timer(s);
	/* While the kernel runs it: the finished requests' files go, the next one's are made. */
	session_tidy(s);
	session_make_spare(s);
	return r->id;
}
