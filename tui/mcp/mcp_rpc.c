/* cellbox mcp: JSON-RPC framing, the two protocol revisions, the method table. */
#include "mcp.h"
#include "numconv.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Revisions `initialize` can settle on, newest first; 2026-07-28 is per request. */
static const char *const legacy_versions[] = {
	MCP_LATEST_LEGACY_VERSION, "2025-06-18", "2025-03-26", "2024-11-05",
};
/* Revisions a request may name in its _meta. */
static const char *const modern_versions[] = { MCP_MODERN_VERSION };

/* How long a client may keep a list result (2026-07-28's ttlMs), by method. */
#define TTL_STATIC 300000	/* the tools and templates never change while we run */

static const char instructions[] =
	"Run Python in sandboxed IPython kernels. execute_code runs code once in a fresh sandbox "
	"(a warm one from a pool when one runs) and returns its output, exit code and every plot "
	"as an image. For state that lasts, session_open returns a handle: pass it to "
	"session_run (variables, imports and files persist between calls), file_put, file_get, "
	"session_history, session_interrupt, session_restart and session_close; session_list "
	"shows the open ones. Plots are also resources: "
	"cellbox://sessions/<handle>/plots/<n>.png. Sessions and their sandboxes end when the "
	"client disconnects.";

/* ---- writing --------------------------------------------------------------------------- */

void mcp_server_init(struct mcp_server *srv, const struct cellbox_config *cfg, int out_fd)
{
	memset(srv, 0, sizeof(*srv));
	srv->cfg = cfg;
	srv->out_fd = out_fd;
	srv->max_message = cfg->mcp.max_message ? (size_t)cfg->mcp.max_message : 64u << 20;
	srv->output_max = cfg->mcp.output_max ? (size_t)cfg->mcp.output_max : 1u << 20;
	srv->file_max = cfg->mcp.file_max ? (size_t)cfg->mcp.file_max : 16u << 20;
	srv->max_sessions = cfg->mcp.max_sessions ? (unsigned long)cfg->mcp.max_sessions : 8;
	mcp_reader_init(&srv->rd, srv->max_message);
}

void mcp_server_release(struct mcp_server *srv)
{
	mcp_reader_release(&srv->rd);
	mcp_policies_release(srv);
	free(srv->legacy_version);
}

int mcp_send(struct mcp_server *srv, cJSON *msg)
{
	char *text;
	size_t len;
	int rc = 0;

	if (srv->client_gone) {
		cJSON_Delete(msg);
		return -1;
	}
	text = cJSON_PrintUnformatted(msg);
	len = strlen(text);
	if (len > srv->max_message) {
		/* Never send what the client may refuse: an answer says why instead. */
		int answer = cJSON_GetObjectItemCaseSensitive(msg, "result") != NULL;
		cJSON *id = cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(msg, "id"), 1);
		char why[160];

		snprintf(why, sizeof(why), "the %s would be %zu bytes, above mcp-max-message "
			 "(%zu bytes)", answer ? "answer" : "message", len, srv->max_message);
		fprintf(stderr, "cellbox mcp: %s%s\n", why, answer ? "" : ": not sent");
		cJSON_free(text);
		cJSON_Delete(msg);
		if (answer)
			mcp_respond_error(srv, id, MCP_INTERNAL_ERROR, why, NULL);
		cJSON_Delete(id);
		return 0;
	}
	text[len] = '\n';	/* cJSON's buffer has the NUL's byte: print it as the newline */
	if (fsutil_write_all(srv->out_fd, text, len + 1) < 0) {
		fprintf(stderr, "cellbox mcp: the client is gone (%s)\n", strerror(errno));
		srv->client_gone = 1;
		rc = -1;
	}
	cJSON_free(text);
	cJSON_Delete(msg);
	return rc;
}

/* A message with jsonrpc and id set (id NULL: null). */
static cJSON *new_message(const cJSON *id)
{
	cJSON *msg = cJSON_CreateObject();

	cJSON_AddStringToObject(msg, "jsonrpc", "2.0");
	cJSON_AddItemToObject(msg, "id", id ? cJSON_Duplicate(id, 1) : cJSON_CreateNull());
	return msg;
}

/* The ttlMs a list result of `method` gets in revision 2026-07-28; -1: not cacheable. */
static int cache_ttl(const char *method)
{
	static const struct { const char *method; int ttl; } ttls[] = {
		{ "tools/list", TTL_STATIC },
		{ "resources/templates/list", TTL_STATIC },
		{ "server/discover", TTL_STATIC },
		{ "resources/list", 0 },	/* plots come and go */
		{ "resources/read", 0 },
		{ "prompts/list", TTL_STATIC },
	};

	for (size_t i = 0; method && i < ARRAY_SIZE(ttls); i++)
		if (!strcmp(ttls[i].method, method))
			return ttls[i].ttl;
	return -1;
}

void mcp_respond(struct mcp_server *srv, const cJSON *id, int modern, const char *method,
		 cJSON *result)
{
	cJSON *msg = new_message(id);
	int ttl = cache_ttl(method);

	if (modern) {
		if (!cJSON_GetObjectItemCaseSensitive(result, "resultType"))
			cJSON_AddStringToObject(result, "resultType", "complete");
		if (ttl >= 0 && !cJSON_GetObjectItemCaseSensitive(result, "ttlMs")) {
			cJSON_AddNumberToObject(result, "ttlMs", ttl);
			cJSON_AddStringToObject(result, "cacheScope", "private");
		}
	}
	cJSON_AddItemToObject(msg, "result", result);
	mcp_send(srv, msg);
}

void mcp_respond_error(struct mcp_server *srv, const cJSON *id, int code, const char *msg,
		       cJSON *data)
{
	cJSON *m = new_message(id), *e = cJSON_AddObjectToObject(m, "error");

	cJSON_AddNumberToObject(e, "code", code);
	cJSON_AddStringToObject(e, "message", msg);
	if (data)
		cJSON_AddItemToObject(e, "data", data);
	mcp_send(srv, m);
}

void mcp_notify_progress(struct mcp_server *srv, const cJSON *token, double progress,
			 const char *message)
{
	cJSON *m = cJSON_CreateObject(), *p;

	cJSON_AddStringToObject(m, "jsonrpc", "2.0");
	cJSON_AddStringToObject(m, "method", "notifications/progress");
	p = cJSON_AddObjectToObject(m, "params");
	cJSON_AddItemToObject(p, "progressToken", cJSON_Duplicate(token, 1));
	cJSON_AddNumberToObject(p, "progress", progress);
	if (message)
		cJSON_AddStringToObject(p, "message", message);
	mcp_send(srv, m);
}

void mcp_reply_error(struct mcp_reply *rep, int code, const char *fmt, ...)
{
	va_list ap;

	rep->code = code;
	strbuf_reset(&rep->msg);
	va_start(ap, fmt);
	strbuf_vaddf(&rep->msg, fmt, ap);
	va_end(ap);
}

/* ---- methods --------------------------------------------------------------------------- */

/* The server's name and version. */
static cJSON *server_info(void)
{
	cJSON *info = cJSON_CreateObject();

	cJSON_AddStringToObject(info, "name", "cellbox");
	cJSON_AddStringToObject(info, "title", "cellbox: sandboxed IPython sessions");
	cJSON_AddStringToObject(info, "version", CELLBOX_VERSION);
	return info;
}

/* What this server offers. */
static cJSON *capabilities(void)
{
	cJSON *caps = cJSON_CreateObject(), *c;

	c = cJSON_AddObjectToObject(caps, "tools");
	cJSON_AddFalseToObject(c, "listChanged");
	c = cJSON_AddObjectToObject(caps, "resources");
	cJSON_AddFalseToObject(c, "subscribe");
	cJSON_AddFalseToObject(c, "listChanged");
	return caps;
}

/* initialize (2025-11-25 and older): settle on a revision the client offers. */
static void m_initialize(struct mcp_server *srv, const struct mcp_req *req,
			 struct mcp_reply *rep)
{
	const cJSON *want = cJSON_GetObjectItemCaseSensitive(req->params, "protocolVersion");
	const char *version = MCP_LATEST_LEGACY_VERSION;

	if (!cJSON_IsString(want)) {
		mcp_reply_error(rep, MCP_INVALID_PARAMS,
				"initialize: params.protocolVersion must be a string");
		return;
	}
	for (size_t i = 0; i < ARRAY_SIZE(legacy_versions); i++)
		if (!strcmp(want->valuestring, legacy_versions[i]))
			version = legacy_versions[i];
	free(srv->legacy_version);
	srv->legacy_version = xstrdup(version);
	rep->result = cJSON_CreateObject();
	cJSON_AddStringToObject(rep->result, "protocolVersion", version);
	cJSON_AddItemToObject(rep->result, "capabilities", capabilities());
	cJSON_AddItemToObject(rep->result, "serverInfo", server_info());
	cJSON_AddStringToObject(rep->result, "instructions", instructions);
}

/* server/discover (2026-07-28): the revisions, capabilities and who we are. */
static void m_discover(struct mcp_server *srv, const struct mcp_req *req,
		       struct mcp_reply *rep)
{
	cJSON *versions, *meta;

	(void)srv, (void)req;
	rep->result = cJSON_CreateObject();
	versions = cJSON_AddArrayToObject(rep->result, "supportedVersions");
	for (size_t i = 0; i < ARRAY_SIZE(modern_versions); i++)
		cJSON_AddItemToArray(versions, cJSON_CreateString(modern_versions[i]));
	cJSON_AddItemToObject(rep->result, "capabilities", capabilities());
	cJSON_AddStringToObject(rep->result, "instructions", instructions);
	meta = cJSON_AddObjectToObject(rep->result, "_meta");
	cJSON_AddItemToObject(meta, MCP_META_SERVER_INFO, server_info());
}

/* ping: an empty result. */
static void m_ping(struct mcp_server *srv, const struct mcp_req *req, struct mcp_reply *rep)
{
	(void)srv, (void)req;
	rep->result = cJSON_CreateObject();
}

/* tools/list: every tool, on one page. */
static void m_tools_list(struct mcp_server *srv, const struct mcp_req *req,
			 struct mcp_reply *rep)
{
	(void)srv, (void)req;
	rep->result = cJSON_CreateObject();
	cJSON_AddItemToObject(rep->result, "tools", mcp_tools_list());
}

/* prompts/list: none (clients that list everything get an empty page, not an error). */
static void m_prompts_list(struct mcp_server *srv, const struct mcp_req *req,
			   struct mcp_reply *rep)
{
	(void)srv, (void)req;
	rep->result = cJSON_CreateObject();
	cJSON_AddArrayToObject(rep->result, "prompts");
}

enum {
	M_LEGACY_ONLY = 1 << 0,	/* a method of 2025-11-25 and older */
	M_MODERN_ONLY = 1 << 1,	/* a method of 2026-07-28 */
};

struct mcp_method {
	const char *name;
	void (*fn)(struct mcp_server *srv, const struct mcp_req *req, struct mcp_reply *rep);
	unsigned flags;
};

static const struct mcp_method methods[] = {
	{ .name = "initialize", .fn = m_initialize, .flags = M_LEGACY_ONLY },
	{ .name = "server/discover", .fn = m_discover, .flags = M_MODERN_ONLY },
	{ .name = "ping", .fn = m_ping },
	{ .name = "tools/list", .fn = m_tools_list },
	{ .name = "tools/call", .fn = mcp_tools_call },
	{ .name = "resources/list", .fn = mcp_resources_list },
	{ .name = "resources/templates/list", .fn = mcp_resources_templates },
	{ .name = "resources/read", .fn = mcp_resources_read },
	{ .name = "prompts/list", .fn = m_prompts_list },
};

/* A notification: acted on when known, never answered. */
static void handle_notification(struct mcp_server *srv, const struct mcp_req *req)
{
	if (!strcmp(req->method, "notifications/cancelled")) {
		const cJSON *rid = cJSON_GetObjectItemCaseSensitive(req->params, "requestId");

		if (rid)
			mcp_call_cancel(srv, rid);
	}
	/* notifications/initialized, roots/list_changed, progress...: nothing to do */
}

/*
 * The revision of a request: 0 for one without a version in its _meta, 1 for 2026-07-28,
 * -1 after answering -32022 (or -32602 for a version that is not a string).
 */
static int request_era(struct mcp_server *srv, const cJSON *id, const cJSON *meta)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(meta, MCP_META_PROTOCOL_VERSION);
	cJSON *data, *supported;
	char *msg;

	if (!v)
		return 0;
	if (!cJSON_IsString(v)) {
		mcp_respond_error(srv, id, MCP_INVALID_PARAMS, "params._meta[\""
				  MCP_META_PROTOCOL_VERSION "\"] must be a string", NULL);
		return -1;
	}
	for (size_t i = 0; i < ARRAY_SIZE(modern_versions); i++)
		if (!strcmp(v->valuestring, modern_versions[i]))
			return 1;
	data = cJSON_CreateObject();
	supported = cJSON_AddArrayToObject(data, "supported");
	for (size_t i = 0; i < ARRAY_SIZE(modern_versions); i++)
		cJSON_AddItemToArray(supported, cJSON_CreateString(modern_versions[i]));
	cJSON_AddStringToObject(data, "requested", v->valuestring);
	msg = xasprintf("unsupported protocol version '%.100s' (this server speaks %s per "
			"request, or %s and older through initialize)", v->valuestring,
			MCP_MODERN_VERSION, MCP_LATEST_LEGACY_VERSION);
	mcp_respond_error(srv, id, MCP_UNSUPPORTED_VERSION, msg, data);
	free(msg);
	return -1;
}

/* Whether `id` can be a request's id: a string or an integer. */
static int valid_id(const cJSON *id)
{
	return cJSON_IsString(id) || json_integer(id, LLONG_MIN, LLONG_MAX, NULL);
}

/* Handle a parsed message. */
static void handle_message(struct mcp_server *srv, const cJSON *msg)
{
	const cJSON *jsonrpc = cJSON_GetObjectItemCaseSensitive(msg, "jsonrpc");
	const cJSON *id = cJSON_GetObjectItemCaseSensitive(msg, "id");
	const cJSON *method = cJSON_GetObjectItemCaseSensitive(msg, "method");
	const cJSON *params = cJSON_GetObjectItemCaseSensitive(msg, "params");
	const cJSON *meta = cJSON_GetObjectItemCaseSensitive(params, "_meta");
	struct mcp_reply rep = { .msg = STRBUF_INIT };
	struct mcp_req req = { 0 };
	const struct mcp_method *m = NULL;

	if (id && !valid_id(id)) {
		mcp_respond_error(srv, NULL, MCP_INVALID_REQUEST,
				  "invalid request: the id must be a string or an integer", NULL);
		return;
	}
	if (!cJSON_IsString(jsonrpc) || strcmp(jsonrpc->valuestring, "2.0")) {
		if (id || method)
			mcp_respond_error(srv, id, MCP_INVALID_REQUEST,
					  "invalid request: \"jsonrpc\" must be \"2.0\"", NULL);
		return;
	}
	if (!method) {
		/* A response: we never ask the client anything. */
		if (!cJSON_GetObjectItemCaseSensitive(msg, "result") &&
		    !cJSON_GetObjectItemCaseSensitive(msg, "error"))
			mcp_respond_error(srv, id, MCP_INVALID_REQUEST,
					  "invalid request: no \"method\"", NULL);
		return;
	}
	if (!cJSON_IsString(method)) {
		if (id)
			mcp_respond_error(srv, id, MCP_INVALID_REQUEST,
					  "invalid request: \"method\" must be a string", NULL);
		return;
	}
	req.method = method->valuestring;
	req.id = id;
	req.params = cJSON_IsObject(params) ? params : NULL;
	if (!id) {
		handle_notification(srv, &req);
		return;
	}
	if (params && !cJSON_IsObject(params)) {
		mcp_respond_error(srv, id, MCP_INVALID_PARAMS, "params must be an object", NULL);
		return;
	}
	if (meta && !cJSON_IsObject(meta)) {
		mcp_respond_error(srv, id, MCP_INVALID_PARAMS, "params._meta must be an object",
				  NULL);
		return;
	}
	req.modern = request_era(srv, id, meta);
	if (req.modern < 0)
		return;
	req.progress_token = cJSON_GetObjectItemCaseSensitive(meta, "progressToken");
	if (req.progress_token && !valid_id(req.progress_token))
		req.progress_token = NULL;
	for (size_t i = 0; i < ARRAY_SIZE(methods); i++)
		if (!strcmp(methods[i].name, req.method))
			m = &methods[i];
	if (!m) {
		char *why = xasprintf("method not found: '%.200s'", req.method);
		mcp_respond_error(srv, id, MCP_METHOD_NOT_FOUND, why, NULL);
		free(why);
		return;
	}
	if ((m->flags & M_LEGACY_ONLY) && req.modern) {
		mcp_respond_error(srv, id, MCP_METHOD_NOT_FOUND, "method not found: 'initialize' "
				  "is not part of " MCP_MODERN_VERSION " (use server/discover)", NULL);
		return;
	}
	if ((m->flags & M_MODERN_ONLY) && !req.modern) {
		mcp_respond_error(srv, id, MCP_INVALID_PARAMS, "server/discover belongs to "
				  MCP_MODERN_VERSION ": give params._meta[\""
				  MCP_META_PROTOCOL_VERSION "\"]", NULL);
		return;
	}
	m->fn(srv, &req, &rep);
	if (rep.result)
		mcp_respond(srv, id, req.modern, req.method, rep.result);
	else if (!rep.deferred)
		mcp_respond_error(srv, id, rep.code ? rep.code : MCP_INTERNAL_ERROR,
				  rep.msg.len ? rep.msg.buf : "internal error", rep.data);
	else
		cJSON_Delete(rep.data);
	strbuf_release(&rep.msg);
}

/* Answer a message past mcp-max-message, by its id when the scan found one. */
static void handle_oversized(struct mcp_server *srv, size_t len, const struct mcp_scan *scan)
{
	cJSON *id = mcp_scan_id(scan);
	char *why;

	fprintf(stderr, "cellbox mcp: refused a message of %zu bytes (mcp-max-message is %zu)\n",
		len, srv->max_message);
	if (!id && scan->has_method && !scan->has_id)
		return;		/* a notification: never answered */
	why = xasprintf("message too large: %zu bytes, the limit is %zu (mcp-max-message)", len,
			srv->max_message);
	mcp_respond_error(srv, id, MCP_INVALID_REQUEST, why, NULL);
	free(why);
	cJSON_Delete(id);
}

void mcp_handle_line(struct mcp_server *srv, const char *line, size_t len,
		     const struct mcp_scan *scan)
{
	const char *end = NULL;
	size_t bad, k = 0;
	cJSON *msg;

	if (!line) {
		handle_oversized(srv, len, scan);
		return;
	}
	while (k < len && strchr(" \t\r", line[k]))
		k++;
	if (k == len)
		return;		/* a blank line */
	if (!utf8_valid(line, len, &bad)) {
		char why[96];
		snprintf(why, sizeof(why), "parse error: not UTF-8 (byte 0x%02x at offset %zu)",
			 (unsigned char)line[bad], bad);
		mcp_respond_error(srv, NULL, MCP_PARSE_ERROR, why, NULL);
		return;
	}
	msg = cJSON_ParseWithLengthOpts(line, len, &end, 0);
	while (msg && end && end < line + len && strchr(" \t\r", *end))
		end++;
	if (!msg || (end && end < line + len)) {
		char why[96];
		size_t at = end && end >= line ? (size_t)(end - line) : 0;

		if (!msg) {
			const char *e = cJSON_GetErrorPtr();
			at = e && e >= line && e <= line + len ? (size_t)(e - line) : 0;
		}
		snprintf(why, sizeof(why), "parse error: not JSON (at byte %zu)", at);
		cJSON_Delete(msg);
		mcp_respond_error(srv, NULL, MCP_PARSE_ERROR, why, NULL);
		return;
	}
	if (cJSON_IsArray(msg))
		mcp_respond_error(srv, NULL, MCP_INVALID_REQUEST,
				  "invalid request: batches are not supported (send one message "
				  "a line)", NULL);
	else if (!cJSON_IsObject(msg))
		mcp_respond_error(srv, NULL, MCP_INVALID_REQUEST,
				  "invalid request: a message is a JSON object", NULL);
	else
		handle_message(srv, msg);
	cJSON_Delete(msg);
}
