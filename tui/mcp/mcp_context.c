/*
 * cellbox mcp: contexts (mcp.h, docs/mcp.md "Contexts"): context_create, context_list,
 * context_remove, and session_run's `context`. A context is an mcp_session of its own behind a
 * handle of its own, whose session the engine started in its parent's sandbox
 * (context_open()); the parent holds it by name.
 */
#include "mcp.h"
#include "context.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Context `name` of session `parent`, or NULL. */
static struct mcp_session *context_find(struct mcp_server *srv, const struct mcp_session *parent,
					const char *name)
{
	for (struct mcp_session *ms = srv->sessions; name && ms; ms = ms->next)
		if (ms->parent == parent && !strcmp(ms->context, name))
			return ms;
	return NULL;
}

struct mcp_session *mcp_context_target(struct mcp_server *srv, const char *handle,
				       const char *context, struct strbuf *err)
{
	struct mcp_session *ms = mcp_session_find(srv, handle, err), *c;

	if (!ms || !context)
		return ms;
	c = context_find(srv, ms, context);
	if (!c)
		strbuf_addf(err, "session %s has no context '%.40s' (context_list shows them)",
			    ms->handle, context);
	return c;
}

/* A context's entry (context_create's answer, context_list's items). */
static cJSON *describe(const struct mcp_session *c)
{
	cJSON *o = cJSON_CreateObject();

	cJSON_AddStringToObject(o, "context", c->context);
	cJSON_AddStringToObject(o, "language", session_kernel(c->s)->name);
	cJSON_AddStringToObject(o, "state", session_state_name(session_state(c->s)));
	cJSON_AddStringToObject(o, "context_handle", c->handle);
	return o;
}

int mcp_tool_context_create(struct mcp_server *srv, struct mcp_call *call, const cJSON *args,
			    struct strbuf *err)
{
	struct mcp_session *parent = mcp_session_find(srv, mcp_arg_str(args, "handle"), err), *c;
	const char *language = mcp_arg_str(args, "language");
	struct session *s;
	cJSON *o;
	char *text;

	if (!parent)
		return -1;
	if (parent->parent) {
		strbuf_addf(err, "%s is a context: make contexts in its session, %s",
			    parent->handle, parent->parent->handle);
		return -1;
	}
	c = xcalloc(1, sizeof(*c));
	s = context_open(parent->s, language, mcp_session_state, c, err);
	if (!s) {
		free(c);
		return -1;
	}
	c->s = s;
	c->parent = parent;
	c->policy = parent->policy;
	c->timeout = parent->timeout;
	c->memory = parent->memory;
	c->network = parent->network ? xstrdup(parent->network) : NULL;
	mcp_session_new_handle(c->handle, sizeof(c->handle));
	snprintf(c->context, sizeof(c->context), "%s-%u", session_kernel(s)->name,
		 ++parent->context_seq);
	c->created = c->used = clock_wall();
	mcp_session_keep(srv, c);
	fprintf(stderr, "cellbox mcp: session %s: context %s open (%s)\n", parent->handle,
		c->context, c->handle);
	o = describe(c);
	cJSON_AddStringToObject(o, "handle", parent->handle);
	text = xasprintf("context %s is open in the sandbox of session %s (its files shared, its "
			 "variables its own); run there with session_run and context \"%s\"",
			 c->context, parent->handle, c->context);
	mcp_call_succeed(call, text, o);
	free(text);
	return 0;
}

int mcp_tool_context_list(struct mcp_server *srv, struct mcp_call *call, const cJSON *args,
			  struct strbuf *err)
{
	struct mcp_session *parent = mcp_session_find(srv, mcp_arg_str(args, "handle"), err);
	struct strbuf text = STRBUF_INIT;
	cJSON *o, *list;

	if (!parent)
		return -1;
	o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "handle", parent->handle);
	list = cJSON_AddArrayToObject(o, "contexts");
	for (struct mcp_session *c = srv->sessions; c; c = c->next) {
		if (c->parent != parent)
			continue;
		cJSON_AddItemToArray(list, describe(c));
		strbuf_addf(&text, "%s  %-6s %s\n", c->context, session_kernel(c->s)->name,
			    session_state_name(session_state(c->s)));
	}
	mcp_call_succeed(call, text.len ? text.buf : "the session has no contexts", o);
	strbuf_release(&text);
	return 0;
}

int mcp_tool_context_remove(struct mcp_server *srv, struct mcp_call *call, const cJSON *args,
			    struct strbuf *err)
{
	struct mcp_session *c = mcp_context_target(srv, mcp_arg_str(args, "handle"),
						   mcp_arg_str(args, "context"), err);
	cJSON *o;
	char *text;

	if (!c)
		return -1;
	o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "handle", c->parent->handle);
	cJSON_AddStringToObject(o, "context", c->context);
	cJSON_AddBoolToObject(o, "removed", 1);
	text = xasprintf("context %s removed: its kernel is gone (the sandbox's files stay)",
			 c->context);
	mcp_session_close(srv, c);
	mcp_call_succeed(call, text, o);
	free(text);
	return 0;
}
