/*
 * Whether a session's kernel may be handed to another process now, and its release to
 * outlive us (session.h: session_hand_over): what `:detach` of an unnamed session asks
 * before its kernel goes to a named session's host that this process forks
 * (named_setup_handover). The taker adopts it from its channel (session_take_over, as a
 * pool's is adopted); the giver lets go of it (session_detach).
 */
#include "session.h"
#include "session_int.h"
#include "backend.h"

#include <string.h>

/* Whether `s` is a context or has one open (context.h): a host takes one kernel, not a family. */
static int in_family(const struct session *s)
{
	if (s->parent)
		return 1;
	for (int i = 0; i < SESSION_CONTEXTS_MAX; i++)
		if (s->contexts[i])
			return 1;
	return 0;
}

int session_hand_over(struct session *s, struct strbuf *err)
{
	if (s->named)
		strbuf_addstr(err, "it is a named session already");
	else if (!s->be || s->state == SESSION_DEAD || s->state == SESSION_CLOSED)
		strbuf_addstr(err, "its kernel is not running");
	else if (s->state != SESSION_IDLE || s->head)
		strbuf_addstr(err, "a cell is running or queued: detach once it ends (or interrupt "
			      "it)");
	else if ((s->be->ops->flags & BACKEND_CHILD_KERNELS) && !s->be->ops->release)
		/* its init has PR_SET_PDEATHSIG: it dies with this process, whoever adopts it */
		strbuf_addf(err, "the %s backend's kernel is a child of this process and ends with "
			    "it: start the session with --name NAME to leave it running later",
			    s->be->ops->name);
	else if (in_family(s))
		strbuf_addstr(err, "the session has contexts (:context): remove them first");
	else if (s->lease.entry)
		strbuf_addstr(err, "its kernel is a pool's, which ends it with the lease");
	else if (s->opts.sandbox.network && !strncmp(s->opts.sandbox.network, "allow:", 6))
		strbuf_addstr(err, "its network goes through this process's egress proxy");
	else if (!s->be->ops->release || s->be->ops->release(s->be, err) == 0)
		return 0;
	return -1;
}
