/* cellbox mcp: sessions behind handles, the calls queued on them, a cell's ExecutionResult. */
#include "mcp.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "egress_list.h"
#include "files.h"
#include "pool_lease.h"

/* Without a memory setting, a client may ask for this much at most. */
#define MEMORY_LIMIT_DEFAULT (1ull << 30)

/* ---- sessions -------------------------------------------------------------------------- */

void mcp_session_new_handle(char *out, size_t size)
{
	unsigned char r[8];

	if (getrandom(r, sizeof(r), 0) != (ssize_t)sizeof(r)) {
		double t = clock_now() * 1e9;
		unsigned long long x = (unsigned long long)t ^ ((unsigned long long)getpid() << 32);

		memcpy(r, &x, sizeof(r));
	}
	snprintf(out, size, "s-%02x%02x%02x%02x%02x%02x%02x%02x", r[0], r[1], r[2], r[3], r[4],
		 r[5], r[6], r[7]);
}

/* Whether `name` is one of the comma-separated `list`. */
static int listed(const char *list, const char *name)
{
	size_t n = strlen(name);

	for (const char *p = list; p && *p; p += strcspn(p, ","), p += *p == ',') {
		p += strspn(p, " ");
		if (!strncmp(p, name, n) && (!p[n] || p[n] == ',' || p[n] == ' '))
			return 1;
	}
	return 0;
}

int mcp_backend_allowed(const struct cellbox_config *cfg, const char *backend)
{
	const char *configured = cfg->session.backend ? cfg->session.backend : BACKEND_DEFAULT;

	return !strcmp(backend, configured) || listed(cfg->mcp.backends, backend);
}

/* The memory a client asks for, in bytes (0: the server's); -1 with `err` when refused. */
static int asked_memory(const struct mcp_server *srv, const cJSON *v, unsigned long long *out,
			struct strbuf *err)
{
	unsigned long long limit = srv->cfg->session.memory ? srv->cfg->session.memory :
				   MEMORY_LIMIT_DEFAULT;

	*out = 0;
	if (!v)
		return 0;
	if (cJSON_IsNumber(v)) {
		if (v->valuedouble < 0 || v->valuedouble > 1e18) {
			strbuf_addf(err, "memory %g is not a size", v->valuedouble);
			return -1;
		}
		*out = (unsigned long long)v->valuedouble;
	} else if (parse_size(v->valuestring, out) < 0) {
		strbuf_addf(err, "memory '%.50s' is not a size such as 512m or 1g", v->valuestring);
		return -1;
	}
	if (*out > limit) {
		strbuf_addf(err, "memory %llu MB is above the server's limit of %llu MB", *out >> 20,
			    limit >> 20);
		return -1;
	}
	return 0;
}

/* Kernel state changes: a fresh kernel numbers its plots from 1 again. */
void mcp_session_state(struct session *s, enum session_state state, const char *msg, void *data)
{
	struct mcp_session *ms = data;

	(void)s;
	if (state == SESSION_STARTING || state == SESSION_IDLE)
		ms->nplots = 0;
	if (msg)
		fprintf(stderr, "cellbox mcp: session %s: %s\n", ms->oneshot ? "(one-shot)" :
			ms->handle, msg);
}

unsigned long mcp_session_count(const struct mcp_server *srv)
{
	unsigned long n = 0;

	for (const struct mcp_session *ms = srv->sessions; ms; ms = ms->next)
		n += !ms->parent;	/* a context shares its parent's sandbox */
	return n;
}

void mcp_session_keep(struct mcp_server *srv, struct mcp_session *ms)
{
	struct mcp_session **tail;

	for (tail = &srv->sessions; *tail; tail = &(*tail)->next)
		;
	*tail = ms;
}

/*
 * Whether a client may ask for `network`: none, the server's own, or (when the server's is an
 * allow-list) a list the server's covers: narrower, never wider.
 */
static int network_check(const char *network, const char *config_net, struct strbuf *err)
{
	struct egress_list *asked, *given;
	int rc = -1;

	if (!strcmp(network, "none") || !strcmp(network, config_net))
		return 0;
	if (!egress_is_list(network) || !egress_is_list(config_net)) {
		strbuf_addf(err, "network '%.50s' is not allowed: the server's network is '%.200s' "
			    "(its network setting); a client may only ask for none%s", network,
			    config_net, egress_is_list(config_net) ? " or a narrower allow-list" : "");
		return -1;
	}
	asked = xcalloc(1, sizeof(*asked));
	given = xcalloc(1, sizeof(*given));
	if (egress_list_parse(network, asked, err) < 0 ||
	    egress_list_parse(config_net, given, err) < 0)
		goto out;
	if (!egress_narrows(asked, given)) {
		strbuf_addf(err, "network '%.200s' is not allowed: it reaches past the server's "
			    "allow-list '%.200s' (a client may narrow it, never widen it)", network,
			    config_net);
		goto out;
	}
	rc = 0;
out:
	free(asked);
	free(given);
	return rc;
}

struct mcp_session *mcp_session_open(struct mcp_server *srv, const cJSON *args,
				     const char *libraries, const char *kernel, int oneshot,
				     struct strbuf *err)
{
	const struct cellbox_config *cfg = srv->cfg;
	const char *backend = mcp_arg_str(args, "backend");
	const char *policy = mcp_arg_str(args, "policy");
	const char *network = mcp_arg_str(args, "network");
	const char *name = mcp_arg_str(args, "name");
	const cJSON *timeout = cJSON_GetObjectItemCaseSensitive(args, "timeout");
	const char *configured = cfg->session.backend ? cfg->session.backend : BACKEND_DEFAULT;
	const char *config_net = cfg->session.sandbox.network ? cfg->session.sandbox.network : "none";
	struct mcp_session *ms = NULL;
	struct session_opts so = cfg->session;
	const struct kernel_def *kd;
	char *runtime = NULL, *pool = NULL, *serves = NULL;
	unsigned long long memory;

	if (mcp_session_count(srv) >= srv->max_sessions) {
		strbuf_addf(err, "too many sessions: %lu are open (mcp-max-sessions); close one "
			    "with session_close", mcp_session_count(srv));
		goto fail;
	}
	if (name && mcp_named_check(name, err) < 0)
		goto fail;
	if (backend && !mcp_backend_allowed(cfg, backend)) {
		strbuf_addf(err, "backend '%.50s' is not allowed: this server runs %s kernels "
			    "(its mcp-backends setting names the others a client may ask for)",
			    backend, configured);
		goto fail;
	}
	if (backend && !backend_find(backend, err))
		goto fail;
	so.backend = backend ? backend : configured;
	so.pool_dir = NULL;
	if (kernel)
		so.kernel = kernel;
	if (asked_memory(srv, cJSON_GetObjectItemCaseSensitive(args, "memory"), &memory, err) < 0)
		goto fail;
	if (memory)
		so.memory = memory;
	if (network && network_check(network, config_net, err) < 0)
		goto fail;
	if (network)
		so.sandbox.network = network;
	if (mcp_policy_for(srv, policy, &so.policy, err) < 0)
		goto fail;
	ms = xcalloc(1, sizeof(*ms));
	ms->oneshot = oneshot;
	ms->policy = so.policy;
	ms->memory = memory;
	ms->network = network ? xstrdup(network) : NULL;
	if (cJSON_IsNumber(timeout) && timeout->valuedouble > 0) {
		if (cfg->timeout > 0 && timeout->valuedouble > cfg->timeout) {
			strbuf_addf(err, "timeout %g s is above the server's limit of %g s",
				    timeout->valuedouble, cfg->timeout);
			goto fail;
		}
		ms->timeout = timeout->valuedouble;
	} else {
		ms->timeout = cfg->timeout;
	}
	if (!oneshot)
		mcp_session_new_handle(ms->handle, sizeof(ms->handle));
	/*
	 * Installed (once) as --libraries installs them, before the sandbox starts; a named
	 * session's host does that itself, as it copies the files in.
	 */
	kd = so.kernel ? kernel_find(so.kernel) : kernel_default();
	if (!name && kd && kd->pip && mcp_libraries_prepare(srv, ms, &so, libraries, err) < 0)
		goto fail;
	so.on_state = mcp_session_state;
	so.state_data = ms;
	/*
	 * A warm kernel when a pool of this backend runs (or `pool` says so), unless the client
	 * asked for limits or libraries of its own: a pooled kernel has the daemon's.
	 */
	runtime = session_runtime_dir(so.runtime_dir);
	pool = pool_dir_path(runtime, cfg->pool_name ? cfg->pool_name : "default");
	serves = pool_backend(pool);
	if (!backend && !kernel && !memory && !network && !(libraries && *libraries) &&
	    (cfg->pool || (serves && !strcmp(serves, so.backend) && pool_daemon_alive(pool))))
		so.pool_dir = pool;
	if (name) {
		ms->s = mcp_named_start(srv, &so, policy, name, ms, err);
		if (!ms->s)
			goto fail;
		goto opened;
	}
	ms->s = session_open(&so, err);
	if (!ms->s) {
		struct strbuf msg = STRBUF_INIT;

		strbuf_addf(&msg, "cannot start the kernel (%s): %s", so.backend, err->buf);
		strbuf_reset(err);
		strbuf_addstr(err, msg.buf);
		strbuf_release(&msg);
		goto fail;
	}
	if (session_pool_note(ms->s))
		fprintf(stderr, "cellbox mcp: note: %s\n", session_pool_note(ms->s));
	if (mcp_libraries_verify(srv, ms->s, err) < 0) {
		/* The pool serves another set: a kernel of its own has the right one. */
		fprintf(stderr, "cellbox mcp: note: %s; starting a fresh kernel\n", err->buf);
		strbuf_reset(err);
		session_close(ms->s);
		so.pool_dir = NULL;
		ms->s = session_open(&so, err);
		if (!ms->s)
			goto fail;
	}
	for (size_t i = 0; i < cfg->copy_in.n; i++) {
		char *src, *dst;
		int rc;

		files_parse_spec(cfg->copy_in.items[i], &src, &dst);
		rc = files_copy_in(ms->s, src, dst, err);
		free(src);
		free(dst);
		if (rc < 0)
			goto fail;
	}
opened:
	ms->created = ms->used = clock_wall();
	mcp_session_keep(srv, ms);
	if (!oneshot)
		fprintf(stderr, "cellbox mcp: session %s open (%s%s%s%s)\n", ms->handle, so.backend,
			session_pooled(ms->s) ? ", pooled" : "", name ? ", named " : "",
			name ? name : "");
	free(runtime);
	free(pool);
	free(serves);
	return ms;
fail:
	if (ms) {
		session_close(ms->s);
		free(ms->network);
		free(ms->image);
		free(ms->python);
		free(ms);
	}
	free(runtime);
	free(pool);
	free(serves);
	return NULL;
}

struct mcp_session *mcp_session_find(struct mcp_server *srv, const char *handle,
				     struct strbuf *err)
{
	for (struct mcp_session *ms = srv->sessions; handle && ms; ms = ms->next)
		if (!ms->oneshot && !strcmp(ms->handle, handle))
			return ms;
	strbuf_addf(err, "no session '%.60s' (session_list shows the open ones; a session ends "
		    "with session_close or the connection)", handle ? handle : "");
	return NULL;
}

void mcp_session_close(struct mcp_server *srv, struct mcp_session *ms)
{
	struct mcp_session **p, *ctx;

	/* Its contexts first: they live in its sandbox. */
	do {
		for (ctx = srv->sessions; ctx && ctx->parent != ms; ctx = ctx->next)
			;
		if (ctx)
			mcp_session_close(srv, ctx);
	} while (ctx);

	for (struct mcp_call *c = srv->calls; c; c = c->next)
		if (c->ms == ms && c->state == MCP_CALL_QUEUED)
			mcp_call_fail(c, "the session %s was closed before this call ran",
				      ms->handle[0] ? ms->handle : "(one-shot)");
	session_close(ms->s);	/* a running call hears its done event (closed) here */
	for (struct mcp_call *c = srv->calls; c; c = c->next) {
		/* A named session's front end only detaches: its host runs the cell on. */
		if (c->ms == ms && c->state == MCP_CALL_RUNNING)
			mcp_call_fail(c, "the session %s was detached while this cell ran: it runs on "
				      "in its host (session_attach to see the session again)",
				      ms->handle);
		if (c->ms == ms)
			c->ms = NULL;
	}
	for (p = &srv->sessions; *p && *p != ms; p = &(*p)->next)
		;
	if (*p)
		*p = ms->next;
	if (!ms->oneshot)
		fprintf(stderr, "cellbox mcp: session %s closed\n", ms->handle);
	for (size_t i = 0; i < ms->ncells; i++)
		free(ms->cells[i].code);
	free(ms->cells);
	free(ms->plots);
	free(ms->network);
	free(ms->image);
	free(ms->python);
	free(ms);
}

/* Note a plot a session made (again after a restart: the same index is the new one). */
void mcp_session_add_plot(struct mcp_session *ms, const struct mcp_plot *pl)
{
	for (size_t i = 0; i < ms->nplots; i++)
		if (ms->plots[i].index == pl->index) {
			ms->plots[i] = *pl;
			return;
		}
	if (ms->nplots == MCP_SESSION_PLOTS_MAX)
		return;
	if (ms->nplots == ms->plots_alloc) {
		ms->plots_alloc = ms->plots_alloc ? 2 * ms->plots_alloc : 8;
		ms->plots = xrealloc(ms->plots, ms->plots_alloc * sizeof(*ms->plots));
	}
	ms->plots[ms->nplots++] = *pl;
}

/* Keep a cell for session_history. */
void mcp_session_add_cell(struct mcp_session *ms, const struct mcp_call *call)
{
	struct mcp_cell *c;
	size_t len = strlen(call->code);

	if (ms->ncells == MCP_HISTORY_MAX) {
		free(ms->cells[0].code);
		memmove(ms->cells, ms->cells + 1, (ms->ncells - 1) * sizeof(*ms->cells));
		ms->ncells--;
	}
	if (ms->ncells == ms->cells_alloc) {
		ms->cells_alloc = ms->cells_alloc ? 2 * ms->cells_alloc : 16;
		ms->cells = xrealloc(ms->cells, ms->cells_alloc * sizeof(*ms->cells));
	}
	c = &ms->cells[ms->ncells++];
	if (len > MCP_HISTORY_CODE_MAX)
		c->code = xasprintf("%.*s\n# [cut: %zu more bytes]\n", (int)MCP_HISTORY_CODE_MAX,
				    call->code, len - MCP_HISTORY_CODE_MAX);
	else
		c->code = xstrdup(call->code);
	c->execution_count = call->done.execution_count;
	c->reason = call->done.reason;
	c->status = call->done.status;
	c->duration = call->done.duration;
	ms->cells_run++;
}

/* ---- calls ----------------------------------------------------------------------------- */

struct mcp_call *mcp_call_new(struct mcp_server *srv, const struct mcp_req *req,
			      const struct mcp_tool *tool)
{
	struct mcp_call *call = xcalloc(1, sizeof(*call));

	call->srv = srv;
	call->id = cJSON_Duplicate(req->id, 1);
	call->progress_token = req->progress_token ? cJSON_Duplicate(req->progress_token, 1) :
			       NULL;
	call->modern = req->modern;
	call->tool = tool;
	strbuf_init(&call->out, 0);
	strbuf_init(&call->err, 0);
	strbuf_init(&call->file, 0);
	strbuf_set_max(&call->out, srv->output_max + 1);
	strbuf_set_max(&call->err, srv->output_max + 1);
	sanitize_init(&call->san_out, 0);
	sanitize_init(&call->san_err, 0);
	return call;
}

void mcp_call_free(struct mcp_call *call)
{
	if (!call)
		return;
	files_move_release(call->ms ? call->ms->s : NULL, &call->move);	/* NULL: gone with it */
	cJSON_Delete(call->id);
	cJSON_Delete(call->progress_token);
	cJSON_Delete(call->error);
	cJSON_Delete(call->result);
	free(call->code);
	free(call->detail);
	free(call->plots);
	free(call->path);
	strbuf_release(&call->out);
	strbuf_release(&call->err);
	strbuf_release(&call->file);
	sanitize_release(&call->san_out);
	sanitize_release(&call->san_err);
	free(call);
}

void mcp_call_queue(struct mcp_server *srv, struct mcp_call *call)
{
	struct mcp_call **tail;

	call->state = MCP_CALL_QUEUED;
	for (tail = &srv->calls; *tail; tail = &(*tail)->next)
		;
	*tail = call;
}

/* A CallToolResult of `content` (consumed). */
cJSON *mcp_tool_result(cJSON *content, cJSON *structured, int is_error)
{
	cJSON *r = cJSON_CreateObject();

	cJSON_AddItemToObject(r, "content", content);
	if (structured)
		cJSON_AddItemToObject(r, "structuredContent", structured);
	if (is_error)
		cJSON_AddTrueToObject(r, "isError");
	return r;
}

/* A content item of text. */
cJSON *mcp_text_item(const char *text)
{
	cJSON *t = cJSON_CreateObject();

	cJSON_AddStringToObject(t, "type", "text");
	cJSON_AddStringToObject(t, "text", text);
	return t;
}

void mcp_call_fail(struct mcp_call *call, const char *fmt, ...)
{
	struct strbuf msg = STRBUF_INIT;
	cJSON *content = cJSON_CreateArray();
	va_list ap;

	va_start(ap, fmt);
	strbuf_vaddf(&msg, fmt, ap);
	va_end(ap);
	cJSON_AddItemToArray(content, mcp_text_item(msg.buf));
	cJSON_Delete(call->result);
	call->result = mcp_tool_result(content, NULL, 1);
	call->state = MCP_CALL_DONE;
	strbuf_release(&msg);
}

void mcp_call_succeed(struct mcp_call *call, const char *text, cJSON *structured)
{
	cJSON *content = cJSON_CreateArray();

	cJSON_AddItemToArray(content, mcp_text_item(text));
	cJSON_Delete(call->result);
	call->result = mcp_tool_result(content, structured, 0);
	call->state = MCP_CALL_DONE;
}

/* Hand a queued call's request to its session's kernel. */
static void call_start(struct mcp_server *srv, struct mcp_call *call)
{
	struct mcp_session *ms = call->ms;
	struct strbuf err = STRBUF_INIT;
	const char *code = call->code;
	unsigned flags = call->flags;

	(void)srv;
	if (call->kind != MCP_CALL_CELL)
		flags |= SESSION_EXEC_SILENT;
	if (call->kind == MCP_CALL_CELL && mcp_named_block(ms, call))
		return;
	if (flags & SESSION_EXEC_CLEAR_PLOTS)
		ms->nplots = 0;
	call->req = session_execute(ms->s, code, flags, call->timeout, mcp_cell_event, call, &err);
	if (!call->req) {
		if (session_read_only(ms->s))
			mcp_call_fail(call, "session %s: %s", ms->handle, err.buf);
		else if (ms->handle[0])
			mcp_call_fail(call, "session %s: %s; session_restart starts a fresh kernel",
				      ms->handle, err.buf);
		else
			mcp_call_fail(call, "%s", err.buf);
	} else {
		call->state = MCP_CALL_RUNNING;
		ms->running = call;
		ms->used = clock_wall();
	}
	strbuf_release(&err);
}

void mcp_call_cancel(struct mcp_server *srv, const cJSON *id)
{
	for (struct mcp_call *c = srv->calls; c; c = c->next) {
		if (c->cancelled || !cJSON_Compare(c->id, id, 1))
			continue;
		c->cancelled = 1;
		fprintf(stderr, "cellbox mcp: a %s call was cancelled\n", c->tool->name);
		if (c->state == MCP_CALL_QUEUED)
			c->state = MCP_CALL_DONE;
		else if (c->state == MCP_CALL_RUNNING && c->ms)
			session_interrupt(c->ms->s);
		return;
	}
}

/* Answer (or drop) the calls that are done; returns how many. */
static int answer_done(struct mcp_server *srv)
{
	struct mcp_call **p = &srv->calls;
	int n = 0;

	while (*p) {
		struct mcp_call *c = *p;
		struct mcp_session *oneshot;

		if (c->state != MCP_CALL_DONE) {
			p = &c->next;
			continue;
		}
		*p = c->next;
		oneshot = c->ms && c->ms->oneshot ? c->ms : NULL;
		if (!c->cancelled && c->result) {
			mcp_respond(srv, c->id, c->modern, "tools/call", c->result);
			c->result = NULL;
		}
		mcp_call_free(c);
		if (oneshot)
			mcp_session_close(srv, oneshot);	/* after the answer: off its path */
		n++;
		p = &srv->calls;	/* closing may have changed the list */
	}
	return n;
}

void mcp_calls_settle(struct mcp_server *srv)
{
	int again;

	do {
		answer_done(srv);
		again = 0;
		for (struct mcp_call *c = srv->calls; c; c = c->next) {
			if (c->state != MCP_CALL_QUEUED || !c->ms || c->ms->running)
				continue;
			call_start(srv, c);
			again |= c->state == MCP_CALL_DONE;
		}
	} while (again);
}

void mcp_shutdown(struct mcp_server *srv)
{
	for (struct mcp_call *c = srv->calls; c; c = c->next)
		c->cancelled = 1;	/* nobody to answer */
	while (srv->sessions)
		mcp_session_close(srv, srv->sessions);
	while (srv->calls) {
		struct mcp_call *c = srv->calls;
		srv->calls = c->next;
		mcp_call_free(c);
	}
}
