/* cellbox mcp: files in and out of a session's sandbox, plots as resources. */
#include "mcp.h"
#include "outputs.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define URI_PREFIX "cellbox://sessions/"
#define FILE_TIMEOUT 60				/* seconds a helper cell may take */

/* ---- file_put and file_get: the MCP side of files.h ------------------------------------ */

/* Check a sandbox path argument. */
static int check_path(const char *path, struct strbuf *err)
{
	if (!path || !*path || strlen(path) > 4096 || strchr(path, '\n')) {
		strbuf_addstr(err, "path must be a file name of up to 4096 bytes");
		return -1;
	}
	return 0;
}

/* Queue the helper cell of a move files.h began. */
static void queue_move(struct mcp_server *srv, struct mcp_call *call, const char *path,
		       enum mcp_call_kind kind)
{
	call->code = call->move.code;
	call->move.code = NULL;
	call->path = xstrdup(path);
	call->kind = kind;
	call->timeout = FILE_TIMEOUT;
	mcp_call_queue(srv, call);
}

int mcp_file_put(struct mcp_server *srv, struct mcp_call *call, const char *path,
		 const char *base64, struct strbuf *err)
{
	struct strbuf data = STRBUF_INIT;
	int rc = -1;

	if (check_path(path, err) < 0)
		goto out;
	strbuf_set_max(&data, srv->file_max + 1);
	if (mcp_base64_decode(base64, strlen(base64), &data) < 0) {
		if (errno == EFBIG)
			strbuf_addf(err, "the file is larger than %zu bytes (mcp-file-max)",
				    srv->file_max);
		else
			strbuf_addstr(err, "base64 is not base64");
		goto out;
	}
	if (data.len > srv->file_max) {
		strbuf_addf(err, "the file is larger than %zu bytes (mcp-file-max)", srv->file_max);
		goto out;
	}
	/* Staged until the call is freed (mcp_call_free). */
	if (files_in_begin(call->ms->s, data.buf, data.len, path, &call->move, err) < 0)
		goto out;
	call->file_size = (long long)data.len;
	queue_move(srv, call, path, MCP_CALL_FILE_PUT);
	rc = 1;
out:
	strbuf_release(&data);
	return rc;
}

int mcp_file_get(struct mcp_server *srv, struct mcp_call *call, const char *path,
		 struct strbuf *err)
{
	if (check_path(path, err) < 0 ||
	    files_out_begin(call->ms->s, path, srv->file_max, &call->move, err) < 0)
		return -1;
	queue_move(srv, call, path, MCP_CALL_FILE_GET);
	return 1;
}

void mcp_file_finish(struct mcp_server *srv, struct mcp_call *call)
{
	const struct session_ev_done *d = &call->done;
	const char *handle = call->ms ? call->ms->handle : "";
	struct strbuf b64 = STRBUF_INIT, text = STRBUF_INIT, why = STRBUF_INIT;
	cJSON *o;

	if (d->reason != REASON_OK || call->error || !call->ms) {
		const char *ename = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(call->error,
											   "ename"));
		const char *evalue = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(call->error,
											    "evalue"));

		if (ename)
			mcp_call_fail(call, "%s '%s': %s: %s", call->tool->name, call->path, ename,
				      evalue ? evalue : "");
		else
			mcp_call_fail(call, "%s '%s': %s", call->tool->name, call->path,
				      d->detail ? d->detail : reason_name(d->reason));
		return;
	}
	if (call->kind == MCP_CALL_FILE_GET &&
	    files_out_end(call->ms->s, &call->move, &call->file, NULL, &why) < 0) {
		/* The host's verdict on the kernel's copy: a regular file within the cap, or none. */
		mcp_call_fail(call, "file_get '%s': the kernel's answer was not a file of at most %zu "
			      "bytes (mcp-file-max): %s", call->path, srv->file_max, why.buf);
		goto out;
	}
	o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "handle", handle);
	cJSON_AddStringToObject(o, "path", call->path);
	if (call->kind == MCP_CALL_FILE_PUT) {
		cJSON_AddNumberToObject(o, "size", (double)call->file_size);
		strbuf_addf(&text, "wrote %lld bytes to %s", call->file_size, call->path);
		mcp_call_succeed(call, text.buf, o);
		goto out;
	}
	base64_encode(call->file.buf, call->file.len, &b64);
	cJSON_AddNumberToObject(o, "size", (double)call->file.len);
	cJSON_AddStringToObject(o, "base64", b64.buf);
	if (call->file.len && !memchr(call->file.buf, '\0', call->file.len) &&
	    utf8_valid(call->file.buf, call->file.len, NULL))
		mcp_call_succeed(call, call->file.buf, o);
	else {
		strbuf_addf(&text, "%s: %zu bytes of binary data (base64 in the structured content)",
			    call->path, call->file.len);
		mcp_call_succeed(call, text.buf, o);
	}
out:
	strbuf_release(&b64);
	strbuf_release(&text);
	strbuf_release(&why);
}

/* ---- plots as resources ---------------------------------------------------------------- */

char *mcp_plot_uri(const char *handle, int index)
{
	return xasprintf(URI_PREFIX "%s/plots/%d.png", handle, index);
}

void mcp_resources_list(struct mcp_server *srv, const struct mcp_req *req,
			struct mcp_reply *rep)
{
	cJSON *list;

	(void)req;
	rep->result = cJSON_CreateObject();
	list = cJSON_AddArrayToObject(rep->result, "resources");
	for (struct mcp_session *ms = srv->sessions; ms; ms = ms->next) {
		for (size_t i = 0; !ms->oneshot && i < ms->nplots; i++) {
			cJSON *e = cJSON_CreateObject();
			char *uri = mcp_plot_uri(ms->handle, ms->plots[i].index);
			char *name = xasprintf("plot %d of %s", ms->plots[i].index, ms->handle);
			char *desc = xasprintf("%dx%d PNG", ms->plots[i].width, ms->plots[i].height);

			cJSON_AddStringToObject(e, "uri", uri);
			cJSON_AddStringToObject(e, "name", name);
			cJSON_AddStringToObject(e, "description", desc);
			cJSON_AddStringToObject(e, "mimeType", "image/png");
			cJSON_AddItemToArray(list, e);
			free(uri);
			free(name);
			free(desc);
		}
	}
}

void mcp_resources_templates(struct mcp_server *srv, const struct mcp_req *req,
			     struct mcp_reply *rep)
{
	cJSON *list, *e;

	(void)srv, (void)req;
	rep->result = cJSON_CreateObject();
	list = cJSON_AddArrayToObject(rep->result, "resourceTemplates");
	e = cJSON_CreateObject();
	cJSON_AddStringToObject(e, "uriTemplate", URI_PREFIX "{handle}/plots/{n}.png");
	cJSON_AddStringToObject(e, "name", "plot");
	cJSON_AddStringToObject(e, "description", "plot n of a session, as its cells made them "
				"(numbered from 1; session_run's clear_plots starts again)");
	cJSON_AddStringToObject(e, "mimeType", "image/png");
	cJSON_AddItemToArray(list, e);
}

/* Parse "cellbox://sessions/<handle>/plots/<n>.png": 0 with the handle and n, else -1. */
static int parse_plot_uri(const char *uri, char *handle, size_t size, int *n)
{
	const char *h, *slash;
	char *end;
	long v;

	if (strncmp(uri, URI_PREFIX, strlen(URI_PREFIX)))
		return -1;
	h = uri + strlen(URI_PREFIX);
	slash = strchr(h, '/');
	if (!slash || (size_t)(slash - h) >= size || strncmp(slash, "/plots/", 7))
		return -1;
	memcpy(handle, h, (size_t)(slash - h));
	handle[slash - h] = '\0';
	if (slash[7] < '1' || slash[7] > '9')
		return -1;
	v = strtol(slash + 7, &end, 10);
	if (strcmp(end, ".png") || v <= 0 || v > 1000000)
		return -1;
	*n = (int)v;
	return 0;
}

void mcp_resources_read(struct mcp_server *srv, const struct mcp_req *req,
			struct mcp_reply *rep)
{
	const char *uri = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(req->params, "uri"));
	struct strbuf err = STRBUF_INIT, png = STRBUF_INIT, b64 = STRBUF_INIT;
	struct mcp_session *ms = NULL;
	char handle[24], rel[32];
	cJSON *contents, *e;
	int n = 0, known = 0;

	if (!uri) {
		mcp_reply_error(rep, MCP_INVALID_PARAMS, "resources/read: params.uri must be a "
				"string");
		return;
	}
	if (parse_plot_uri(uri, handle, sizeof(handle), &n) == 0)
		ms = mcp_session_find(srv, handle, &err);
	for (size_t i = 0; ms && i < ms->nplots; i++)
		known |= ms->plots[i].index == n;
	snprintf(rel, sizeof(rel), "plots/%d.png", n);
	if (!known || outputs_read_file(session_channel_dir(ms->s), rel, srv->file_max, &png,
					&err) < 0) {
		mcp_reply_error(rep, MCP_INVALID_PARAMS, "resource not found: '%.300s'%s%s", uri,
				err.len ? ": " : "", err.buf);
		rep->data = cJSON_CreateObject();
		cJSON_AddStringToObject(rep->data, "uri", uri);
		goto out;
	}
	base64_encode(png.buf, png.len, &b64);
	rep->result = cJSON_CreateObject();
	contents = cJSON_AddArrayToObject(rep->result, "contents");
	e = cJSON_CreateObject();
	cJSON_AddStringToObject(e, "uri", uri);
	cJSON_AddStringToObject(e, "mimeType", "image/png");
	cJSON_AddStringToObject(e, "blob", b64.buf);
	cJSON_AddItemToArray(contents, e);
out:
	strbuf_release(&err);
	strbuf_release(&png);
	strbuf_release(&b64);
}
