/*
 * cellbox mcp: named sessions (named.h, issue 27). session_open with a name starts a host
 * process that owns the session, so that it outlives this server; session_attach joins one
 * (this server's before a restart, or one a person started with `cellbox repl --name`);
 * session_close detaches from one unless asked to end it.
 *
 * An attached session runs with the settings it was started with, which need not be this
 * server's: the server checks each of its cells against its own policy before the host gets
 * it, and refuses a session of a backend it may not run.
 */
#include "mcp.h"
#include "named.h"
#include "named_setup.h"
#include "policy.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int mcp_named_check(const char *name, struct strbuf *err)
{
	if (named_name_ok(name))
		return 0;
	strbuf_addf(err, "'%.80s' cannot name a session: a name is 1 to %d of A-Z a-z 0-9 . _ - "
		    "and does not start with '.'", name, NAMED_NAME_MAX);
	return -1;
}

struct session *mcp_named_start(struct mcp_server *srv, const struct session_opts *so,
				const char *policy, const char *name, struct mcp_session *ms,
				struct strbuf *err)
{
	/*
	 * The host opens its session as setup_open() opens the settings' (named_setup.h): the
	 * server's settings with what this session_open asked for. The host is a fork of this
	 * process and keeps this copy, which lives on the stack under it.
	 */
	struct cellbox_config cfg = *srv->cfg;
	char dflt_pool[] = "default", *pol = policy ? xstrdup(policy) : NULL;
	struct session *s;

	cfg.session = *so;
	cfg.session.pool_dir = NULL;
	cfg.pool = so->pool_dir != NULL;
	if (!cfg.pool_name)
		cfg.pool_name = dflt_pool;
	if (pol && !srv->policy)
		cfg.policy = pol;	/* mcp_policy_for() checked it: a name, not a path */
	s = named_setup_open(&cfg, name, 1, NULL, 0, mcp_session_state, ms, NULL, err);
	free(pol);
	return s;
}

int mcp_named_block(struct mcp_session *ms, struct mcp_call *call)
{
	struct policy_verdict v = { 0 };
	struct event_store st = EVENT_STORE_INIT;
	struct session_event ev = { 0 };
	char *detail;

	if (!session_named(ms->s) || !ms->policy)
		return 0;
	policy_check(ms->policy, call->code, strlen(call->code), &v);
	if (!v.blocked) {
		policy_verdict_release(&v);
		return 0;
	}
	/* As session.c ends a cell its policy blocks: the verdict as an error, then done. */
	if (event_decode_made(&st, policy_error_event(ms->policy, &v), 0, &ev) == 0)
		mcp_cell_event(ms->s, &ev, call);
	detail = xasprintf("blocked by security policy '%s'", ms->policy->name);
	memset(&ev, 0, sizeof(ev));
	ev.type = SESSION_EV_DONE;
	ev.done.status = SESSION_STATUS_ERROR;
	ev.done.execution_count = -1;
	ev.done.reason = REASON_BLOCKED;
	ev.done.detail = detail;
	usage_clear(&ev.done.usage);
	mcp_cell_event(ms->s, &ev, call);
	free(detail);
	event_store_release(&st);
	policy_verdict_release(&v);
	return 1;
}

void mcp_named_describe(cJSON *o, const char *name)
{
	char *attach = xasprintf("cellbox attach %s", name);

	cJSON_AddStringToObject(o, "name", name);
	cJSON_AddStringToObject(o, "attach", attach);
	free(attach);
}

/* Attach to named session `name` as a new session of this server's; NULL with `err`. */
static struct mcp_session *attach(struct mcp_server *srv, const char *name, int read_only,
				  struct strbuf *err)
{
	struct mcp_session *ms;

	if (mcp_session_count(srv) >= srv->max_sessions) {
		strbuf_addf(err, "too many sessions: %lu are open (mcp-max-sessions); close one "
			    "with session_close", mcp_session_count(srv));
		return NULL;
	}
	for (ms = srv->sessions; ms; ms = ms->next)
		if (session_named(ms->s) && !strcmp(session_named(ms->s), name)) {
			strbuf_addf(err, "session '%s' is attached already, as %s", name, ms->handle);
			return NULL;
		}
	ms = xcalloc(1, sizeof(*ms));
	ms->policy = srv->policy;
	ms->timeout = srv->cfg->timeout;
	mcp_session_new_handle(ms->handle, sizeof(ms->handle));
	ms->s = named_setup_open(srv->cfg, name, 0, NULL, read_only, mcp_session_state, ms, NULL,
				 err);
	if (!ms->s) {
		free(ms);
		return NULL;
	}
	if (!mcp_backend_allowed(srv->cfg, session_backend_name(ms->s))) {
		strbuf_addf(err, "session '%s' runs on the %s backend, which this server may not "
			    "run (its backend setting and mcp-backends)", name,
			    session_backend_name(ms->s));
		session_close(ms->s);
		free(ms);
		return NULL;
	}
	ms->created = ms->used = clock_wall();
	mcp_session_keep(srv, ms);
	fprintf(stderr, "cellbox mcp: session %s attached to '%s'%s\n", ms->handle, name,
		read_only ? " (read-only)" : "");
	return ms;
}

int mcp_tool_session_attach(struct mcp_server *srv, struct mcp_call *call, const cJSON *args,
			    struct strbuf *err)
{
	const char *name = mcp_arg_str(args, "name");
	int read_only = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(args, "read_only"));
	struct mcp_session *ms;
	cJSON *o;
	char *text;

	if (mcp_named_check(name, err) < 0 || !(ms = attach(srv, name, read_only, err)))
		return -1;
	o = mcp_session_description(ms);
	mcp_named_describe(o, name);
	cJSON_AddBoolToObject(o, "read_only", read_only);
	text = xasprintf("attached to session '%s' as %s (%s%s); pass handle \"%s\" to "
			 "session_run. session_close detaches (the session runs on); a person "
			 "joins it with: cellbox attach %s", name, ms->handle,
			 session_backend_name(ms->s), read_only ? ", read-only: it runs nothing" : "",
			 ms->handle, name);
	mcp_call_succeed(call, text, o);
	free(text);
	return 0;
}

/*
 * After a fork through a memory checkpoint `from`'s host was replaced (named_setup_fork):
 * its handle attached again to the session made again, or said to be dead when it cannot.
 */
static void reattach(struct mcp_server *srv, struct mcp_session *from, const char *name)
{
	struct strbuf why = STRBUF_INIT;
	struct session *s = named_setup_open(srv->cfg, name, 0, NULL, 0, mcp_session_state, from,
					     NULL, &why);

	if (s) {
		session_close(from->s);
		from->s = s;
	}
	strbuf_release(&why);
}

int mcp_tool_session_fork(struct mcp_server *srv, struct mcp_call *call, const cJSON *args,
			  struct strbuf *err)
{
	struct mcp_session *from = mcp_session_find(srv, cJSON_GetStringValue(
		cJSON_GetObjectItemCaseSensitive(args, "handle")), err), *ms;
	const char *asked = mcp_arg_str(args, "name");
	char *made = asked ? NULL : named_generate(), *text, *said, *self = NULL;
	const char *name = asked ? asked : made;
	struct named_forked f;
	int rc = -1;
	cJSON *o;

	if (!from || mcp_named_check(name, err) < 0)
		goto out;
	if (!session_named(from->s)) {
		strbuf_addf(err, "session %s has no name: only a named session can be forked "
			    "(session_open with a name)", from->handle);
		goto out;
	}
	if (session_read_only(from->s)) {
		strbuf_addf(err, "session %s is attached read-only: it cannot fork", from->handle);
		goto out;
	}
	if (mcp_session_count(srv) >= srv->max_sessions) {
		strbuf_addf(err, "too many sessions: %lu are open (mcp-max-sessions); close one "
			    "with session_close", mcp_session_count(srv));
		goto out;
	}
	self = xstrdup(session_named(from->s));
	if (named_setup_fork(srv->cfg, self, name, NULL, &f, err) < 0)
		goto out;
	if (f.kind == NAMED_FORK_MEMORY)
		reattach(srv, from, self);
	if (!(ms = attach(srv, name, 0, err)))
		goto out;
	ms->policy = from->policy;
	ms->timeout = from->timeout;
	o = mcp_session_description(ms);
	mcp_named_describe(o, name);
	cJSON_AddStringToObject(o, "forked_from", self);
	cJSON_AddStringToObject(o, "fork", f.kind == NAMED_FORK_RERUN ? "rerun" :
				f.kind == NAMED_FORK_MEMORY ? "memory" : "process");
	if (f.kind == NAMED_FORK_RERUN)
		cJSON_AddNumberToObject(o, "rerun_cells", (double)f.cells);
	said = named_forked_text(self, name, &f);
	text = xasprintf("%s; attached as %s: pass handle \"%s\" to session_run. A person joins "
			 "it with: cellbox attach %s", said, ms->handle, ms->handle, name);
	mcp_call_succeed(call, text, o);
	free(said);
	free(text);
	rc = 0;
out:
	free(self);
	free(made);
	return rc;
}

int mcp_tool_session_close(struct mcp_server *srv, struct mcp_call *call, const cJSON *args,
			   struct strbuf *err)
{
	struct mcp_session *ms = mcp_session_find(srv, cJSON_GetStringValue(
		cJSON_GetObjectItemCaseSensitive(args, "handle")), err);
	int end = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(args, "end"));
	char *name, *runtime;
	cJSON *o;
	char *text;

	if (!ms)
		return -1;
	name = session_named(ms->s) ? xstrdup(session_named(ms->s)) : NULL;
	o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "handle", ms->handle);
	cJSON_AddBoolToObject(o, "closed", 1);
	mcp_session_close(srv, ms);
	if (!name) {
		mcp_call_succeed(call, "closed", o);
		return 0;
	}
	cJSON_AddStringToObject(o, "name", name);
	runtime = session_runtime_dir(srv->cfg->session.runtime_dir);
	if (end && (!runtime || named_kill(runtime, name, err) < 0)) {
		if (!err->len)
			strbuf_addstr(err, "no runtime directory");
		text = xasprintf("detached from session '%s', but could not end it: %s", name,
				 err->buf);
		strbuf_reset(err);
		mcp_call_fail(call, "%s", text);
		cJSON_Delete(o);
	} else {
		cJSON_AddBoolToObject(o, "ended", end);
		text = end ? xasprintf("session '%s' ended: its kernel is gone", name) :
		       xasprintf("detached from session '%s': it runs on (session_attach with name "
				 "\"%s\", or cellbox attach %s; session_close with end: true, or "
				 "cellbox kill %s, ends it)", name, name, name, name);
		mcp_call_succeed(call, text, o);
	}
	free(text);
	free(runtime);
	free(name);
	return 0;
}
