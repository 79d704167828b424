#include "outputs.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void outputs_init(struct outputs *o, const char *channel_dir, unsigned flags,
		  const char *plots_dir, size_t limit)
{
	memset(o, 0, sizeof(*o));
	o->flags = flags;
	o->channel_dir = channel_dir;
	o->plots_dir = plots_dir;
	o->limit = limit ? limit : OUTPUTS_LIMIT;
	o->list = cJSON_CreateArray();
	o->execution_count = -1;
	strbuf_init(&o->stream, 0);
}

void outputs_release(struct outputs *o)
{
	cJSON_Delete(o->list);
	strbuf_release(&o->stream);
	free(o->detail);
	free(o->plot_note);
	o->list = NULL;
	o->detail = o->plot_note = NULL;
}

void outputs_collapse(struct strbuf *t)
{
	size_t w = 0, line = 0;

	/* `.*\r(?=[^\n])`: a line restarts at its last '\r' that is followed by more of it. */
	for (size_t r = 0; r < t->len; r++) {
		char c = t->buf[r];
		if (c == '\r' && r + 1 < t->len && t->buf[r + 1] != '\n') {
			w = line;
			continue;
		}
		t->buf[w++] = c;
		if (c == '\n')
			line = w;
	}
	t->len = w;
	t->buf[w] = '\0';
	/* `[^\n]\b` until nothing changes: a backspace eats the character before it. */
	w = 0;
	for (size_t r = 0; r < t->len; r++) {
		char c = t->buf[r];
		if (c == '\b' && w && t->buf[w - 1] != '\n') {
			w--;
			continue;
		}
		t->buf[w++] = c;
	}
	t->len = w;
	t->buf[w] = '\0';
}

/* Close the stream output being merged. */
static void flush_stream(struct outputs *o)
{
	cJSON *out;

	if (!o->stream_name[0])
		return;
	outputs_collapse(&o->stream);
	out = cJSON_CreateObject();
	cJSON_AddStringToObject(out, "name", o->stream_name);
	cJSON_AddStringToObject(out, "output_type", "stream");
	cJSON_AddStringToObject(out, "text", o->stream.buf);
	cJSON_AddItemToArray(o->list, out);
	strbuf_reset(&o->stream);
	o->stream_name[0] = '\0';
}

/* Count `len` more bytes against the limit; how many of them may be kept. */
static size_t take_bytes(struct outputs *o, size_t len)
{
	size_t room = o->bytes < o->limit ? o->limit - o->bytes : 0;

	if (len > room) {
		len = room;
		o->truncated = 1;
	}
	o->bytes += len;
	return len;
}

/* Merge stream text into the open stream output of the same name. */
static void on_stream(struct outputs *o, const struct session_ev_stream *ev)
{
	const char *name = ev->name, *text = ev->text;
	size_t len = ev->len, keep;
	int was_truncated = o->truncated;

	if (ev->stream == SESSION_STREAM_OTHER)
		return;
	if (strcmp(o->stream_name, name)) {
		flush_stream(o);
		snprintf(o->stream_name, sizeof(o->stream_name), "%s", name);
	}
	keep = take_bytes(o, len);
	/* Cut at a character boundary. */
	while (keep < len && keep && ((unsigned char)text[keep] & 0xc0) == 0x80)
		keep--;
	strbuf_add(&o->stream, text, keep);
	if (o->truncated && !was_truncated)
		strbuf_addf(&o->stream, "\n[cellbox: output truncated: more than %zu bytes]\n",
			    o->limit);
}

/* Add a plot to a display's data, embedded or as a copied file. */
static void add_plot(struct outputs *o, const struct session_plot *plot, cJSON *data, cJSON *meta)
{
	char *src;

	if (!plot->path)
		return;
	src = xasprintf("%s/%s", o->channel_dir, plot->path);
	if (o->flags & OUTPUTS_EMBED_PNG) {
		struct strbuf png = STRBUF_INIT, b64 = STRBUF_INIT;
		if (strbuf_read_file(&png, src, o->limit) == 0) {
			base64_encode(png.buf, png.len, &b64);
			cJSON_AddStringToObject(data, "image/png", b64.buf);
		} else if (!o->plot_note) {
			o->plot_note = xasprintf("cannot read plot '%s': %s", src, strerror(errno));
		}
		strbuf_release(&png);
		strbuf_release(&b64);
	}
	if ((o->flags & OUTPUTS_COPY_PLOTS) && o->plots_dir) {
		char *dst = xasprintf("%s/%d.png", o->plots_dir, plot->index);
		cJSON *cb = cJSON_AddObjectToObject(meta, "cellbox");
		if (mkdir_p(o->plots_dir) < 0 || copy_file(src, dst) < 0) {
			if (!o->plot_note)
				o->plot_note = xasprintf("cannot copy plot to '%s': %s", dst,
							 strerror(errno));
		}
		cJSON_AddStringToObject(cb, "plot", dst);
		cJSON_AddNumberToObject(cb, "width", plot->width);
		cJSON_AddNumberToObject(cb, "height", plot->height);
		free(dst);
	}
	free(src);
}

/* A result or display event as execute_result / display_data. */
static void on_rich(struct outputs *o, const struct session_ev_rich *ev, int result)
{
	cJSON *out = cJSON_CreateObject(), *d, *meta, *m;

	flush_stream(o);
	d = cJSON_AddObjectToObject(out, "data");
	cJSON_ArrayForEach(m, ev->data) {
		if (cJSON_IsString(m) && take_bytes(o, strlen(m->valuestring)) < strlen(m->valuestring))
			continue;
		cJSON_AddItemToObject(d, m->string, cJSON_Duplicate(m, 1));
	}
	if (result)
		cJSON_AddNumberToObject(out, "execution_count",
					ev->execution_count >= 0 ? ev->execution_count : 0);
	meta = cJSON_AddObjectToObject(out, "metadata");
	if (ev->plot)
		add_plot(o, ev->plot, d, meta);
	cJSON_AddStringToObject(out, "output_type", result ? "execute_result" : "display_data");
	cJSON_AddItemToArray(o->list, out);
}

/* An error event as an error output. */
static void on_error(struct outputs *o, const struct session_ev_error *ev)
{
	cJSON *out = cJSON_CreateObject(), *lines;

	flush_stream(o);
	cJSON_AddStringToObject(out, "ename", ev->ename ? ev->ename : "Error");
	cJSON_AddStringToObject(out, "evalue", ev->evalue ? ev->evalue : "");
	cJSON_AddStringToObject(out, "output_type", "error");
	lines = cJSON_AddArrayToObject(out, "traceback");
	for (size_t i = 0; i < ev->ntraceback; i++)
		cJSON_AddItemToArray(lines, cJSON_CreateString(ev->traceback[i]));
	cJSON_AddItemToArray(o->list, out);
}

/* The done event: status, count, duration, reason. */
static void on_done(struct outputs *o, const struct session_ev_done *ev)
{
	flush_stream(o);
	snprintf(o->status, sizeof(o->status), "%s", session_status_name(ev->status));
	o->execution_count = ev->execution_count;
	o->duration = ev->duration;
	o->reason = ev->reason;
	free(o->detail);
	o->detail = ev->detail ? xstrdup(ev->detail) : NULL;
}

void outputs_event(struct outputs *o, const struct session_event *ev)
{
	switch (ev->type) {
	case SESSION_EV_STREAM:
		on_stream(o, &ev->stream);
		break;
	case SESSION_EV_RESULT:
		on_rich(o, &ev->result, 1);
		break;
	case SESSION_EV_DISPLAY:
		on_rich(o, &ev->display, 0);
		break;
	case SESSION_EV_ERROR:
		on_error(o, &ev->error);
		break;
	case SESSION_EV_DONE:
		on_done(o, &ev->done);
		break;
	default:
		break;
	}
}

cJSON *outputs_finish(struct outputs *o)
{
	cJSON *list;

	flush_stream(o);
	list = o->list;
	o->list = cJSON_CreateArray();
	o->bytes = 0;
	return list;
}
