#include "event.h"

#include "base64.h"
#include "numconv.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

static const char *const event_names[] = {
	[SESSION_EV_STREAM] = "stream",
	[SESSION_EV_DISPLAY] = "display",
	[SESSION_EV_RESULT] = "result",
	[SESSION_EV_ERROR] = "error",
	[SESSION_EV_INPUT_REQUEST] = "input_request",
	[SESSION_EV_REPLY] = "reply",
	[SESSION_EV_DONE] = "done",
	[SESSION_EV_CLEAR_OUTPUT] = "clear_output",
	[SESSION_EV_ARTIFACT] = "artifact",
	[SESSION_EV_NEXT_INPUT] = "set_next_input",
	[SESSION_EV_OTHER] = "other",
};

static const char *const status_names[] = {
	[SESSION_STATUS_OK] = "ok",
	[SESSION_STATUS_ERROR] = "error",
	[SESSION_STATUS_ABORTED] = "aborted",
};

const char *event_type_name(enum session_event_type type)
{
	return (unsigned)type < ARRAY_SIZE(event_names) ? event_names[type] : "other";
}

const char *event_status_name(enum session_status status)
{
	return (unsigned)status < ARRAY_SIZE(status_names) ? status_names[status] : "error";
}

/* Map the protocol's type name to the enum. */
static enum session_event_type type_of(const char *name)
{
	for (size_t i = 0; i < SESSION_EV_OTHER; i++)
		if (!strcmp(event_names[i], name))
			return (enum session_event_type)i;
	return SESSION_EV_OTHER;
}

/* A string member, or NULL. */
static const char *str_of(const cJSON *o, const char *key)
{
	return cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, key));
}

/* A whole-number member in int range, or `dflt`. */
static int int_of(const cJSON *o, const char *key, int dflt)
{
	long long n;

	return json_integer(cJSON_GetObjectItemCaseSensitive(o, key), INT_MIN, INT_MAX, &n) ?
		       (int)n : dflt;
}

/* An object member, or NULL. */
static const cJSON *object_of(const cJSON *o, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
	return cJSON_IsObject(v) ? v : NULL;
}

/* The string items of array member `key`, kept in the store; returns how many. */
static size_t strings_of(struct event_store *st, const cJSON *o, const char *key,
			 const char *const **out)
{
	const cJSON *arr = cJSON_GetObjectItemCaseSensitive(o, key), *item;
	size_t n = 0, want = cJSON_IsArray(arr) ? (size_t)cJSON_GetArraySize(arr) : 0;

	if (want + 1 > st->alloc) {
		st->alloc = want + 1;
		st->strings = xrealloc(st->strings, st->alloc * sizeof(*st->strings));
	}
	if (want)
		cJSON_ArrayForEach(item, arr)
			if (cJSON_IsString(item) && n < want)
				st->strings[n++] = item->valuestring;
	st->strings[n] = NULL;
	*out = st->strings;
	return n;
}

/*
 * A file's description (plot member, artifact event), decoded into the store: its name stays
 * the kernel's word (st->named) until the session checks it and takes the file.
 */
static const struct session_plot *file_of(struct event_store *st, const cJSON *p)
{
	memset(&st->plot, 0, sizeof(st->plot));
	st->named = str_of(p, "path");
	st->plot.index = int_of(p, "index", 0);
	st->plot.format = str_of(p, "format");
	st->plot.width = int_of(p, "width", 0);
	st->plot.height = int_of(p, "height", 0);
	return &st->plot;
}

/* A display's or result's plot member; NULL when there is none. */
static const struct session_plot *plot_of(struct event_store *st, const cJSON *o)
{
	const cJSON *p = object_of(o, "plot");

	return p ? file_of(st, p) : NULL;
}

/* Fill a display or result. */
static void rich_of(struct event_store *st, const cJSON *o, struct session_ev_rich *r, int result)
{
	r->data = object_of(o, "data");
	r->text = str_of(r->data, "text/plain");
	r->metadata = object_of(o, "metadata");
	r->execution_count = result ? int_of(o, "execution_count", -1) : -1;
	r->plot = plot_of(st, o);
	r->display_id = result ? NULL : str_of(o, "display_id");
	r->update = !result && cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, "update"));
	r->pager = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, "pager"));
}

void event_store_release(struct event_store *st)
{
	cJSON_Delete(st->json);
	free(st->strings);
	memset(st, 0, sizeof(*st));
}

/* Decode the object in the store; `made`: the host made it (its own members count). */
static int decode(struct event_store *st, unsigned long id, int made, struct session_event *ev)
{
	const cJSON *o = st->json;
	const char *s;

	memset(ev, 0, sizeof(*ev));
	ev->id = id;
	if (!cJSON_IsObject(o) || !(s = str_of(o, "type"))) {
		cJSON_Delete(st->json);
		st->json = NULL;
		return -1;
	}
	ev->type = type_of(s);
	switch (ev->type) {
	case SESSION_EV_STREAM:
		ev->stream.name = str_of(o, "name");
		ev->stream.stream = !ev->stream.name ? SESSION_STREAM_OTHER :
				    !strcmp(ev->stream.name, "stdout") ? SESSION_STDOUT :
				    !strcmp(ev->stream.name, "stderr") ? SESSION_STDERR :
				    SESSION_STREAM_OTHER;
		ev->stream.text = str_of(o, "text");
		if (!ev->stream.text)
			ev->stream.text = "";
		ev->stream.len = strlen(ev->stream.text);
		break;
	case SESSION_EV_DISPLAY:
		rich_of(st, o, &ev->display, 0);
		break;
	case SESSION_EV_RESULT:
		rich_of(st, o, &ev->result, 1);
		break;
	case SESSION_EV_ERROR:
		ev->error.ename = str_of(o, "ename");
		ev->error.evalue = str_of(o, "evalue");
		ev->error.ntraceback = strings_of(st, o, "traceback", &ev->error.traceback);
		if (made) {
			const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, "violations");
			ev->error.violations = cJSON_IsArray(v) ? v : NULL;
		}
		break;
	case SESSION_EV_INPUT_REQUEST:
		ev->input.prompt = str_of(o, "prompt");
		if (!ev->input.prompt)
			ev->input.prompt = "";
		ev->input.password = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, "password"));
		break;
	case SESSION_EV_REPLY:
		ev->reply.status = str_of(o, "status");
		ev->reply.indent = str_of(o, "indent");
		ev->reply.nmatches = strings_of(st, o, "matches", &ev->reply.matches);
		ev->reply.cursor_start = int_of(o, "cursor_start", -1);
		ev->reply.cursor_end = int_of(o, "cursor_end", -1);
		ev->reply.found = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, "found"));
		ev->reply.data = object_of(o, "data");
		ev->reply.text = str_of(ev->reply.data, "text/plain");
		ev->reply.cleared = int_of(o, "cleared", -1);
		break;
	case SESSION_EV_DONE:
		s = str_of(o, "status");
		ev->done.status = s && !strcmp(s, "ok") ? SESSION_STATUS_OK :
				  s && !strcmp(s, "aborted") ? SESSION_STATUS_ABORTED :
				  SESSION_STATUS_ERROR;
		ev->done.execution_count = int_of(o, "execution_count", -1);
		{
			const cJSON *d = cJSON_GetObjectItemCaseSensitive(o, "duration");
			ev->done.duration = cJSON_IsNumber(d) && d->valuedouble >= 0 ?
					    d->valuedouble : 0;
		}
		ev->done.reason = ev->done.status == SESSION_STATUS_OK ? REASON_OK : REASON_ERROR;
		usage_clear(&ev->done.usage);	/* the kernel's word on it is not taken */
		if (made) {	/* a named session's host says why, as its session did */
			enum reason r;

			usage_from_json(cJSON_GetObjectItemCaseSensitive(o, "usage"),
					&ev->done.usage);
			if ((s = str_of(o, "reason")) && reason_parse(s, &r) == 0)
				ev->done.reason = r;
			ev->done.detail = str_of(o, "detail");
		}
		break;
	case SESSION_EV_CLEAR_OUTPUT:
		ev->clear.wait = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, "wait"));
		break;
	case SESSION_EV_ARTIFACT:
		ev->artifact.file = file_of(st, o);
		ev->artifact.name = str_of(o, "name");
		break;
	case SESSION_EV_NEXT_INPUT:
		ev->next_input.text = str_of(o, "text");
		if (!ev->next_input.text)
			ev->next_input.text = "";
		ev->next_input.replace = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, "replace"));
		break;
	default:
		break;
	}
	return 0;
}

int event_decode(struct event_store *st, const char *line, size_t len, unsigned long id,
		 struct session_event *ev)
{
	cJSON_Delete(st->json);
	st->json = cJSON_ParseWithLength(line, len);
	return decode(st, id, 0, ev);
}

int event_decode_made(struct event_store *st, cJSON *json, unsigned long id,
		      struct session_event *ev)
{
	cJSON_Delete(st->json);
	st->json = json;
	return decode(st, id, 1, ev);
}

/* ---- back into JSON, for a named session's front ends (event_to_json) ---- */

static void add_str(cJSON *o, const char *key, const char *v)
{
	if (v)
		cJSON_AddStringToObject(o, key, v);
}

static void add_copy(cJSON *o, const char *key, const cJSON *v)
{
	if (v)
		cJSON_AddItemToObject(o, key, cJSON_Duplicate(v, 1));
}

static void add_strings(cJSON *o, const char *key, const char *const *v, size_t n)
{
	cJSON *a = cJSON_AddArrayToObject(o, key);

	for (size_t i = 0; i < n; i++)
		cJSON_AddItemToArray(a, cJSON_CreateString(v[i] ? v[i] : ""));
}

/* A checked file's description and bytes, into `o`. */
static void add_file(cJSON *o, const struct session_plot *p)
{
	struct strbuf b = STRBUF_INIT;

	cJSON_AddNumberToObject(o, "index", p->index);
	add_str(o, "path", p->path);
	add_str(o, "ext", p->ext);
	add_str(o, "format", p->format);
	if (p->width > 0)
		cJSON_AddNumberToObject(o, "width", p->width);
	if (p->height > 0)
		cJSON_AddNumberToObject(o, "height", p->height);
	if (p->data) {
		base64_encode(p->data, p->len, &b);
		cJSON_AddStringToObject(o, "b64", b.buf);
	}
	strbuf_release(&b);
}

static void add_rich(cJSON *o, const struct session_ev_rich *r, int result)
{
	add_copy(o, "data", r->data);
	add_copy(o, "metadata", r->metadata);
	if (result && r->execution_count >= 0)
		cJSON_AddNumberToObject(o, "execution_count", r->execution_count);
	add_str(o, "display_id", r->display_id);
	if (r->update)
		cJSON_AddTrueToObject(o, "update");
	if (r->pager)
		cJSON_AddTrueToObject(o, "pager");
	if (r->plot)
		add_file(cJSON_AddObjectToObject(o, "plot"), r->plot);
}

cJSON *event_to_json(const struct session_event *ev)
{
	cJSON *o = cJSON_CreateObject();

	cJSON_AddStringToObject(o, "type", event_type_name(ev->type));
	switch (ev->type) {
	case SESSION_EV_STREAM:
		add_str(o, "name", ev->stream.name);
		cJSON_AddStringToObject(o, "text", ev->stream.text);
		break;
	case SESSION_EV_DISPLAY:
		add_rich(o, &ev->display, 0);
		break;
	case SESSION_EV_RESULT:
		add_rich(o, &ev->result, 1);
		break;
	case SESSION_EV_ERROR:
		add_str(o, "ename", ev->error.ename);
		add_str(o, "evalue", ev->error.evalue);
		add_strings(o, "traceback", ev->error.traceback, ev->error.ntraceback);
		add_copy(o, "violations", ev->error.violations);
		break;
	case SESSION_EV_INPUT_REQUEST:
		cJSON_AddStringToObject(o, "prompt", ev->input.prompt);
		if (ev->input.password)
			cJSON_AddTrueToObject(o, "password");
		break;
	case SESSION_EV_REPLY:
		add_str(o, "status", ev->reply.status);
		add_str(o, "indent", ev->reply.indent);
		if (ev->reply.nmatches)
			add_strings(o, "matches", ev->reply.matches, ev->reply.nmatches);
		if (ev->reply.cursor_start >= 0)
			cJSON_AddNumberToObject(o, "cursor_start", ev->reply.cursor_start);
		if (ev->reply.cursor_end >= 0)
			cJSON_AddNumberToObject(o, "cursor_end", ev->reply.cursor_end);
		if (ev->reply.found)
			cJSON_AddTrueToObject(o, "found");
		add_copy(o, "data", ev->reply.data);
		if (ev->reply.cleared >= 0)
			cJSON_AddNumberToObject(o, "cleared", ev->reply.cleared);
		break;
	case SESSION_EV_DONE:
		cJSON_AddStringToObject(o, "status", event_status_name(ev->done.status));
		if (ev->done.execution_count >= 0)
			cJSON_AddNumberToObject(o, "execution_count", ev->done.execution_count);
		cJSON_AddNumberToObject(o, "duration", ev->done.duration);
		cJSON_AddStringToObject(o, "reason", reason_name(ev->done.reason));
		add_str(o, "detail", ev->done.detail);
		if (ev->done.usage.wall_seconds >= 0)
			cJSON_AddItemToObject(o, "usage", usage_to_json(&ev->done.usage));
		break;
	case SESSION_EV_CLEAR_OUTPUT:
		if (ev->clear.wait)
			cJSON_AddTrueToObject(o, "wait");
		break;
	case SESSION_EV_ARTIFACT:
		add_file(o, ev->artifact.file);
		add_str(o, "name", ev->artifact.name);
		break;
	case SESSION_EV_NEXT_INPUT:
		cJSON_AddStringToObject(o, "text", ev->next_input.text);
		if (ev->next_input.replace)
			cJSON_AddTrueToObject(o, "replace");
		break;
	default:
		break;
	}
	return o;
}
