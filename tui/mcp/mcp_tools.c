/* cellbox mcp: the tools (their schemas: mcp_schemas.h) and the handlers that start them. */
#include "mcp.h"
#include "mcp_schemas.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- handlers -------------------------------------------------------------------------- */

const char *mcp_arg_str(const cJSON *args, const char *name)
{
	return cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(args, name));
}

/* The session named by args.handle, or NULL with `err` set. */
static struct mcp_session *arg_session(struct mcp_server *srv, const cJSON *args,
				       struct strbuf *err)
{
	return mcp_session_find(srv, mcp_arg_str(args, "handle"), err);
}

/*
 * The timeout a cell gets: the argument (0 or absent: `dflt`), never above the server's
 * timeout setting when it has one. -1 with `err` when asked for more.
 */
static int cell_timeout(struct mcp_server *srv, const cJSON *args, double dflt, double *out,
			struct strbuf *err)
{
	const cJSON *t = cJSON_GetObjectItemCaseSensitive(args, "timeout");
	double limit = srv->cfg->timeout, want = cJSON_IsNumber(t) ? t->valuedouble : 0;

	if (want <= 0)
		want = dflt;
	if (limit > 0 && (want <= 0 || want > limit)) {
		if (want > limit) {
			strbuf_addf(err, "timeout %g s is above the server's limit of %g s", want,
				    limit);
			return -1;
		}
		want = limit;
	}
	*out = want;
	return 0;
}

/* Whether `name` looks like a pip requirement (a name, extras, a version spec). */
static int library_ok(const char *name)
{
	size_t n = strlen(name);

	if (!n || n > 200 || name[0] == '-')
		return 0;
	return strspn(name, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
			    "._-[],<>=!~") == n;
}

/* execute_code: a fresh sandbox (its libraries installed first) runs the code, then goes. */
static int t_execute_code(struct mcp_server *srv, struct mcp_call *call, const cJSON *args,
			  struct strbuf *err)
{
	const char *language = mcp_arg_str(args, "language");
	const cJSON *libs = cJSON_GetObjectItemCaseSensitive(args, "libraries"), *lib;
	const struct kernel_def *k = NULL;
	struct strbuf set = STRBUF_INIT;
	double timeout;

	/* (Another Jupyter kernel through the bridge: not for MCP's clients, not tested there.) */
	if (language && (!(k = kernel_find(language)) || kernel_bridged(k))) {
		strbuf_addf(err, "language '%.50s': there is no such kernel (there are: ", language);
		kernel_list(err, 0);
		strbuf_addch(err, ')');
		return -1;
	}
	if (k && !k->pip && cJSON_GetArraySize(libs) > 0) {
		strbuf_addf(err, "libraries are pip packages: the %s kernel cannot take them", k->name);
		return -1;
	}
	if (cell_timeout(srv, args, 0, &timeout, err) < 0)
		return -1;
	cJSON_ArrayForEach(lib, libs) {
		if (!library_ok(lib->valuestring)) {
			strbuf_addf(err, "libraries: '%.200s' is not a package name", lib->valuestring);
			strbuf_release(&set);
			return -1;
		}
		strbuf_addf(&set, "%s%s", set.len ? "," : "", lib->valuestring);
	}
	call->ms = mcp_session_open(srv, NULL, set.len ? set.buf : NULL, k ? k->name : NULL, 1,
				    err);
	strbuf_release(&set);
	if (!call->ms)
		return -1;
	call->kind = MCP_CALL_CELL;
	call->code = xstrdup(mcp_arg_str(args, "code"));
	call->timeout = timeout;
	mcp_call_queue(srv, call);
	return 1;
}

cJSON *mcp_session_description(const struct mcp_session *ms)
{
	cJSON *o = cJSON_CreateObject();
	const cJSON *info = session_kernel_info(ms->s);
	const char *python = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(info, "python"));
	const char *ipython = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(info,
										    "ipython"));

	cJSON_AddStringToObject(o, "handle", ms->handle);
	cJSON_AddStringToObject(o, "backend", session_backend_name(ms->s));
	cJSON_AddBoolToObject(o, "pooled", session_pooled(ms->s));
	cJSON_AddStringToObject(o, "python", python ? python : "");
	cJSON_AddStringToObject(o, "ipython", ipython ? ipython : "");
	cJSON_AddNumberToObject(o, "timeout", ms->timeout);
	cJSON_AddNumberToObject(o, "memory", (double)ms->memory);
	if (ms->network)
		cJSON_AddStringToObject(o, "network", ms->network);
	else
		cJSON_AddNullToObject(o, "network");
	if (ms->policy)
		cJSON_AddStringToObject(o, "policy", ms->policy->name);
	else
		cJSON_AddNullToObject(o, "policy");
	return o;
}

/* session_open: a persistent session behind a new handle. */
static int t_session_open(struct mcp_server *srv, struct mcp_call *call, const cJSON *args,
			  struct strbuf *err)
{
	struct mcp_session *ms = mcp_session_open(srv, args, NULL, NULL, 0, err);
	cJSON *o;
	char *text;

	if (!ms)
		return -1;
	o = mcp_session_description(ms);
	if (session_named(ms->s))
		mcp_named_describe(o, session_named(ms->s));
	text = xasprintf("session %s is open (%s%s, IPython %s on Python %s); pass handle \"%s\" "
			 "to session_run%s%s%s%s%s", ms->handle, session_backend_name(ms->s),
			 session_pooled(ms->s) ? ", from the pool" : "",
			 cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, "ipython")),
			 cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, "python")),
			 ms->handle, session_named(ms->s) ? ". It is the named session '" : "",
			 session_named(ms->s) ? session_named(ms->s) : "",
			 session_named(ms->s) ? "': it outlives this server (session_attach joins it "
						"again); a person joins it with: cellbox attach " : "",
			 session_named(ms->s) ? session_named(ms->s) : "",
			 session_named(ms->s) ? "; session_close only detaches unless end is true" :
						"");
	mcp_call_succeed(call, text, o);
	free(text);
	return 0;
}

/* session_run: a cell in a session; calls on one session run in the order they came. */
static int t_session_run(struct mcp_server *srv, struct mcp_call *call, const cJSON *args,
			 struct strbuf *err)
{
	struct mcp_session *ms = mcp_context_target(srv, mcp_arg_str(args, "handle"),
						    mcp_arg_str(args, "context"), err);

	if (!ms || cell_timeout(srv, args, ms->timeout, &call->timeout, err) < 0)
		return -1;
	if (session_read_only(ms->s)) {
		strbuf_addf(err, "session %s is attached read-only (session_attach with read_only): "
			    "it runs nothing; nothing ran", ms->handle);
		return -1;
	}
	call->ms = ms;
	call->kind = MCP_CALL_CELL;
	call->code = xstrdup(mcp_arg_str(args, "code"));
	if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(args, "clear_plots")))
		call->flags |= SESSION_EXEC_CLEAR_PLOTS;
	mcp_call_queue(srv, call);
	return 1;
}

/* session_interrupt: KeyboardInterrupt in the running cell, if one runs. */
static int t_session_interrupt(struct mcp_server *srv, struct mcp_call *call,
			       const cJSON *args, struct strbuf *err)
{
	struct mcp_session *ms = arg_session(srv, args, err);
	cJSON *o;
	int hit;

	if (!ms)
		return -1;
	hit = ms->running && ms->running->kind == MCP_CALL_CELL && session_interrupt(ms->s) == 0;
	o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "handle", ms->handle);
	cJSON_AddBoolToObject(o, "interrupted", hit);
	mcp_call_succeed(call, hit ? "interrupted the running cell" : "no cell was running", o);
	return 0;
}

/* session_restart: a fresh kernel in the same sandbox settings; state is gone. */
static int t_session_restart(struct mcp_server *srv, struct mcp_call *call,
			     const cJSON *args, struct strbuf *err)
{
	struct mcp_session *ms = arg_session(srv, args, err);
	cJSON *o;

	if (!ms)
		return -1;
	if (session_restart(ms->s, err) < 0)
		return -1;
	ms->nplots = 0;
	o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "handle", ms->handle);
	cJSON_AddStringToObject(o, "state", session_state_name(session_state(ms->s)));
	mcp_call_succeed(call, "the kernel was restarted: variables and imports are gone", o);
	return 0;
}

/* session_list: the open sessions. */
static int t_session_list(struct mcp_server *srv, struct mcp_call *call, const cJSON *args,
			  struct strbuf *err)
{
	cJSON *o = cJSON_CreateObject(), *list = cJSON_AddArrayToObject(o, "sessions");
	struct strbuf text = STRBUF_INIT;
	double now = clock_wall();

	(void)args, (void)err;
	for (struct mcp_session *ms = srv->sessions; ms; ms = ms->next) {
		cJSON *e;

		if (ms->oneshot || ms->parent)	/* contexts: context_list */
			continue;
		e = cJSON_CreateObject();
		cJSON_AddStringToObject(e, "handle", ms->handle);
		cJSON_AddStringToObject(e, "backend", session_backend_name(ms->s));
		cJSON_AddStringToObject(e, "state", session_state_name(session_state(ms->s)));
		cJSON_AddBoolToObject(e, "pooled", session_pooled(ms->s));
		cJSON_AddNumberToObject(e, "cells", (double)ms->cells_run);
		cJSON_AddNumberToObject(e, "plots", (double)ms->nplots);
		cJSON_AddNumberToObject(e, "age", now - ms->created);
		cJSON_AddNumberToObject(e, "idle", now - ms->used);
		if (session_named(ms->s))
			cJSON_AddStringToObject(e, "name", session_named(ms->s));
		else
			cJSON_AddNullToObject(e, "name");
		cJSON_AddBoolToObject(e, "read_only", session_read_only(ms->s));
		cJSON_AddItemToArray(list, e);
		strbuf_addf(&text, "%s  %-7s %-5s %lu cell%s, %zu plot%s", ms->handle,
			    session_backend_name(ms->s), session_state_name(session_state(ms->s)),
			    ms->cells_run, ms->cells_run == 1 ? "" : "s", ms->nplots,
			    ms->nplots == 1 ? "" : "s");
		if (session_named(ms->s))
			strbuf_addf(&text, ", named '%s'%s", session_named(ms->s),
				    session_read_only(ms->s) ? " (read-only)" : "");
		strbuf_addch(&text, '\n');
	}
	mcp_call_succeed(call, text.len ? text.buf : "no sessions are open", o);
	strbuf_release(&text);
	return 0;
}

/* session_history: the cells the session ran, oldest first. */
static int t_session_history(struct mcp_server *srv, struct mcp_call *call,
			     const cJSON *args, struct strbuf *err)
{
	struct mcp_session *ms = arg_session(srv, args, err);
	struct strbuf text = STRBUF_INIT;
	cJSON *o, *cells;

	if (!ms)
		return -1;
	o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "handle", ms->handle);
	cells = cJSON_AddArrayToObject(o, "cells");
	for (size_t i = 0; i < ms->ncells; i++) {
		const struct mcp_cell *c = &ms->cells[i];
		cJSON *e = cJSON_CreateObject();

		if (c->execution_count >= 0)
			cJSON_AddNumberToObject(e, "execution_count", c->execution_count);
		else
			cJSON_AddNullToObject(e, "execution_count");
		cJSON_AddStringToObject(e, "code", c->code);
		cJSON_AddStringToObject(e, "status", event_status_name(c->status));
		cJSON_AddStringToObject(e, "outcome", reason_name(c->reason));
		cJSON_AddNumberToObject(e, "duration", c->duration);
		cJSON_AddItemToArray(cells, e);
		if (c->execution_count >= 0)
			strbuf_addf(&text, "In [%d]: ", c->execution_count);
		else
			strbuf_addstr(&text, "In [ ]: ");
		strbuf_addf(&text, "%s%s", c->code, *c->code &&
			    c->code[strlen(c->code) - 1] == '\n' ? "" : "\n");
		if (c->reason != REASON_OK)
			strbuf_addf(&text, "  (%s)\n", reason_name(c->reason));
	}
	mcp_call_succeed(call, text.len ? text.buf : "no cells yet", o);
	strbuf_release(&text);
	return 0;
}

/* A named session's files are its host's: file_put and file_get cannot reach them. */
static int named_files(const struct mcp_session *ms, const char *tool, struct strbuf *err)
{
	if (!session_named(ms->s))
		return 0;
	strbuf_addf(err, "%s: session %s is the named session '%s', whose files are its host "
		    "process's: a file cannot be copied into or out of a named session (a cell "
		    "can write or print one)", tool, ms->handle, session_named(ms->s));
	return -1;
}

/* file_put: bytes into the sandbox. */
static int t_file_put(struct mcp_server *srv, struct mcp_call *call, const cJSON *args,
		      struct strbuf *err)
{
	call->ms = arg_session(srv, args, err);
	if (!call->ms || named_files(call->ms, "file_put", err) < 0)
		return -1;
	return mcp_file_put(srv, call, mcp_arg_str(args, "path"), mcp_arg_str(args, "base64"), err);
}

/* file_get: bytes out of the sandbox. */
static int t_file_get(struct mcp_server *srv, struct mcp_call *call, const cJSON *args,
		      struct strbuf *err)
{
	call->ms = arg_session(srv, args, err);
	if (!call->ms || named_files(call->ms, "file_get", err) < 0)
		return -1;
	return mcp_file_get(srv, call, mcp_arg_str(args, "path"), err);
}

static const struct mcp_tool tools[] = {
	{ .name = "execute_code", .title = "Run code in a fresh sandbox",
	  .description = "Run Python once in a fresh sandboxed IPython kernel (a warm one when a "
			 "pool runs), then discard it. Returns stdout, stderr and the exit code as "
			 "text, the ExecutionResult as structured content, and every plot as an "
			 "image. For state that persists between calls use session_open and "
			 "session_run.",
	  .input_schema = execute_code_in, .output_schema = execution_result_out,
	  .hints = MCP_HINT_OPEN_WORLD, .run = t_execute_code },
	{ .name = "session_open", .title = "Open a persistent session",
	  .description = "Start a sandboxed IPython kernel that keeps its state (variables, "
			 "imports, files) until session_close or the end of the connection. "
			 "Returns its handle. With a name it is a named session: a host process "
			 "owns it, so it outlives the connection and this server; session_attach "
			 "joins it again, and a person with cellbox attach NAME.",
	  .input_schema = session_open_in, .output_schema = session_open_out,
	  .run = t_session_open },
	{ .name = "session_run", .title = "Run a cell in a session",
	  .description = "Run a cell in the session of `handle`, with the state earlier cells "
			 "left. Output arrives as progress notifications while it runs (when the "
			 "request has a progress token); cancelling the request interrupts the "
			 "cell. Returns the ExecutionResult and the cell's plots as images.",
	  .input_schema = session_run_in, .output_schema = session_run_out,
	  .hints = MCP_HINT_OPEN_WORLD, .run = t_session_run },
	{ .name = "session_interrupt", .title = "Interrupt a session's cell",
	  .description = "Raise KeyboardInterrupt in the cell that runs in the session (a cell "
			 "that ignores it gets its kernel restarted).",
	  .input_schema = handle_in, .output_schema = interrupt_out,
	  .run = t_session_interrupt },
	{ .name = "session_restart", .title = "Restart a session's kernel",
	  .description = "Kill the session's kernel and start a fresh one: every variable and "
			 "import is lost, the handle stays.",
	  .input_schema = handle_in, .output_schema = restart_out,
	  .hints = MCP_HINT_DESTRUCTIVE, .run = t_session_restart },
	{ .name = "session_close", .title = "Close a session",
	  .description = "End the session and remove its sandbox. A named session is only "
			 "detached from (it runs on, for session_attach or cellbox attach) unless "
			 "end is true.",
	  .input_schema = session_close_in, .output_schema = close_out,
	  .hints = MCP_HINT_DESTRUCTIVE | MCP_HINT_IDEMPOTENT, .run = mcp_tool_session_close },
	{ .name = "session_attach", .title = "Attach to a named session",
	  .description = "Join a named session by its name: one session_open made with a name "
			 "(also before this server restarted) or one a person started with "
			 "cellbox repl --name NAME. Its variables are there. Returns a handle as "
			 "session_open does; read_only watches without running anything. "
			 "session_close detaches.",
	  .input_schema = session_attach_in, .output_schema = session_open_out,
	  .run = mcp_tool_session_attach },
	{ .name = "session_fork", .title = "Fork a named session",
	  .description = "Fork the named session of `handle` into a new named session, "
			 "independent from then on. Local backend: its kernel process copied "
			 "(variables, imports, objects; files shared), made when its running cell "
			 "ends. gVisor container: through a memory checkpoint (the session is "
			 "made again from it; this handle stays attached). Other containers: its "
			 "cells re-run in a fresh kernel, fork \"rerun\", not a memory copy (what "
			 "they read from outside may differ). Returns the new session's handle as "
			 "session_attach does.",
	  .input_schema = session_fork_in, .output_schema = session_open_out,
	  .run = mcp_tool_session_fork },
	{ .name = "session_list", .title = "List the open sessions",
	  .description = "The sessions this connection opened or attached to: handle, backend, "
			 "state, cells run, plots, a named session's name.",
	  .input_schema = list_in, .output_schema = list_out,
	  .hints = MCP_HINT_READ_ONLY | MCP_HINT_IDEMPOTENT, .run = t_session_list },
	{ .name = "context_create", .title = "Start a context in a session's sandbox",
	  .description = "Start another kernel (python or r) in the sandbox of the session of "
			 "`handle`: its own variables and imports, the sandbox's files and limits "
			 "shared (e2b's code contexts). Returns its name, for session_run's "
			 "`context`; at most 8 per session.",
	  .input_schema = context_create_in, .output_schema = context_create_out,
	  .run = mcp_tool_context_create },
	{ .name = "context_list", .title = "List a session's contexts",
	  .description = "The contexts of the session of `handle`: name, language, state.",
	  .input_schema = handle_in, .output_schema = context_list_out,
	  .hints = MCP_HINT_READ_ONLY | MCP_HINT_IDEMPOTENT, .run = mcp_tool_context_list },
	{ .name = "context_remove", .title = "Remove a context",
	  .description = "End a context's kernel (its variables go; the sandbox's files stay).",
	  .input_schema = context_remove_in, .output_schema = context_remove_out,
	  .hints = MCP_HINT_DESTRUCTIVE, .run = mcp_tool_context_remove },
	{ .name = "file_put", .title = "Write a file into a session's sandbox",
	  .description = "Write bytes (base64) to a path in the session's sandbox; relative "
			 "paths are relative to the kernel's working directory. Not for a named "
			 "session (its files are its host's): that is an error.",
	  .input_schema = file_put_in, .output_schema = file_put_out,
	  .hints = MCP_HINT_DESTRUCTIVE | MCP_HINT_IDEMPOTENT, .run = t_file_put },
	{ .name = "file_get", .title = "Read a file from a session's sandbox",
	  .description = "Read a file from the session's sandbox: its bytes as base64 in the "
			 "structured content, its text as text when it is UTF-8. Not for a named "
			 "session (its files are its host's): that is an error.",
	  .input_schema = file_get_in, .output_schema = file_get_out,
	  .hints = MCP_HINT_READ_ONLY, .run = t_file_get },
	{ .name = "session_history", .title = "The cells a session ran",
	  .description = "Every cell the session ran through this connection (the last 1000), "
			 "with its execution count and outcome.",
	  .input_schema = handle_in, .output_schema = history_out,
	  .hints = MCP_HINT_READ_ONLY | MCP_HINT_IDEMPOTENT, .run = t_session_history },
};

/* The parsed schemas, per tool: [i][0] input, [i][1] output. */
static cJSON *schemas[ARRAY_SIZE(tools)][2];

const struct mcp_tool *mcp_tools(size_t *n)
{
	*n = ARRAY_SIZE(tools);
	return tools;
}

const struct mcp_tool *mcp_tool_find(const char *name)
{
	for (size_t i = 0; name && i < ARRAY_SIZE(tools); i++)
		if (!strcmp(tools[i].name, name))
			return &tools[i];
	return NULL;
}

const cJSON *mcp_tool_schema(const struct mcp_tool *t, int output)
{
	size_t i = (size_t)(t - tools);

	if (!schemas[i][output]) {
		schemas[i][output] = cJSON_Parse(output ? t->output_schema : t->input_schema);
		if (!schemas[i][output]) {
			fprintf(stderr, "cellbox mcp: the %s schema of %s is not JSON\n",
				output ? "output" : "input", t->name);
			abort();
		}
	}
	return schemas[i][output];
}

cJSON *mcp_tools_list(void)
{
	cJSON *list = cJSON_CreateArray();

	for (size_t i = 0; i < ARRAY_SIZE(tools); i++) {
		const struct mcp_tool *t = &tools[i];
		cJSON *e = cJSON_CreateObject(), *a;

		cJSON_AddStringToObject(e, "name", t->name);
		cJSON_AddStringToObject(e, "title", t->title);
		cJSON_AddStringToObject(e, "description", t->description);
		cJSON_AddItemToObject(e, "inputSchema", cJSON_Duplicate(mcp_tool_schema(t, 0), 1));
		cJSON_AddItemToObject(e, "outputSchema", cJSON_Duplicate(mcp_tool_schema(t, 1), 1));
		a = cJSON_AddObjectToObject(e, "annotations");
		cJSON_AddStringToObject(a, "title", t->title);
		cJSON_AddBoolToObject(a, "readOnlyHint", !!(t->hints & MCP_HINT_READ_ONLY));
		cJSON_AddBoolToObject(a, "destructiveHint", !!(t->hints & MCP_HINT_DESTRUCTIVE));
		cJSON_AddBoolToObject(a, "idempotentHint", !!(t->hints & MCP_HINT_IDEMPOTENT));
		cJSON_AddBoolToObject(a, "openWorldHint", !!(t->hints & MCP_HINT_OPEN_WORLD));
		cJSON_AddItemToArray(list, e);
	}
	return list;
}

/* ---- tools/call ------------------------------------------------------------------------ */

void mcp_tools_call(struct mcp_server *srv, const struct mcp_req *req, struct mcp_reply *rep)
{
	const cJSON *name = cJSON_GetObjectItemCaseSensitive(req->params, "name");
	const cJSON *args = cJSON_GetObjectItemCaseSensitive(req->params, "arguments");
	struct strbuf err = STRBUF_INIT;
	const struct mcp_tool *tool;
	struct mcp_call *call;
	cJSON *empty = NULL;
	int rc;

	if (!cJSON_IsString(name)) {
		mcp_reply_error(rep, MCP_INVALID_PARAMS, "tools/call: params.name must be a string");
		return;
	}
	tool = mcp_tool_find(name->valuestring);
	if (!tool) {
		mcp_reply_error(rep, MCP_INVALID_PARAMS, "unknown tool '%.200s'", name->valuestring);
		return;
	}
	if (args && !cJSON_IsObject(args) && !cJSON_IsNull(args)) {
		mcp_reply_error(rep, MCP_INVALID_PARAMS, "tools/call: params.arguments must be an "
				"object");
		return;
	}
	if (!cJSON_IsObject(args))
		args = empty = cJSON_CreateObject();
	call = mcp_call_new(srv, req, tool);
	strbuf_addf(&err, "%s: ", tool->name);
	if (mcp_schema_check(mcp_tool_schema(tool, 0), args, "arguments", &err) < 0) {
		rc = -1;
	} else {
		strbuf_reset(&err);
		rc = tool->run(srv, call, args, &err);
	}
	if (rc < 0)
		mcp_call_fail(call, "%s", err.len ? err.buf : "failed");
	if (rc == 1) {
		rep->deferred = 1;	/* mcp_calls_settle() answers */
	} else {
		rep->result = call->result;
		call->result = NULL;
		mcp_call_free(call);
	}
	cJSON_Delete(empty);
	strbuf_release(&err);
}
