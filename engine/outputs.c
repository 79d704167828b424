#include "outputs.h"
#include "wall.h"

#include <errno.h>
#include <stdint.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* A plot shown in an output of the cell, kept by reference for the copy shape. */
struct outputs_copy_plot {
	cJSON *output;		/* in the cell's list */
	int index, k, width, height;	/* its copy: outputs_copy_name(index, k) */
	cJSON *png, *cellbox;	/* while the copy shape is lent (outputs_copy_shape) */
};

/* outputs_share(): what the copy shape needs beside the one collection. */
struct outputs_copy {
	const char *plots_dir;
	size_t limit, bytes;		/* the bytes a copy-shape collector would have counted */
	struct outputs_copy_plot *plots;	/* the plot outputs of the cell's list */
	size_t nplots, plots_alloc;
	char *plot_note;		/* an error copying a plot, or NULL */
	struct outputs *fork;		/* the shapes parted: the copy shape collected apart */
	cJSON *forked;			/* the fork's list of the cell finished last */
	const cJSON *finished;		/* the list outputs_finish() gave last, no event since */
};

static void copy_free(struct outputs *o);

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

/* Forget the display ids of outputs in `list` (NULL: all). */
static void forget_displays(struct outputs *o, const cJSON *list)
{
	size_t w = 0;

	for (size_t r = 0; r < o->ndisplays; r++) {
		if (!list || o->displays[r].list == list)
			free(o->displays[r].id);
		else
			o->displays[w++] = o->displays[r];
	}
	o->ndisplays = w;
}

void outputs_release(struct outputs *o)
{
	forget_displays(o, NULL);
	free(o->displays);
	o->displays = NULL;
	o->displays_alloc = 0;
	cJSON_Delete(o->list);
	strbuf_release(&o->stream);
	copy_free(o);
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

/* ---- outputs ---- */

/* Drop every output of the cell so far (clear_output), as nbclient does. */
static void clear_now(struct outputs *o)
{
	strbuf_reset(&o->stream);
	o->stream_name[0] = '\0';
	forget_displays(o, o->list);
	cJSON_Delete(o->list);
	o->list = cJSON_CreateArray();
	o->bytes = 0;
	o->clear_pending = 0;
	if (o->copy)
		o->copy->bytes = o->copy->nplots = 0;
}

/* A new output is coming: run a clear_output(wait=True) that waits for it. */
static void before_output(struct outputs *o)
{
	if (o->clear_pending)
		clear_now(o);
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
	before_output(o);
	if (strcmp(o->stream_name, name)) {
		flush_stream(o);
		snprintf(o->stream_name, sizeof(o->stream_name), "%s", name);
	}
	keep = take_bytes(o, len);
	if (o->copy && !o->copy->fork)
		o->copy->bytes += keep;
	/* Cut at a character boundary. */
	while (keep < len && keep && ((unsigned char)text[keep] & 0xc0) == 0x80)
		keep--;
	strbuf_add(&o->stream, text, keep);
	if (o->truncated && !was_truncated)
		strbuf_addf(&o->stream, "\n[cellbox: output truncated: more than %zu bytes]\n",
			    o->limit);
}

/* Copy a plot to `plots_dir` (outputs_copy_new): its k, the first error in *note (and 1). */
static int copy_plot(const char *plots_dir, const struct session_plot *plot, char **note)
{
	struct strbuf err = STRBUF_INIT;
	int k = 1;

	if (fsutil_mkdir_p(plots_dir) < 0) {
		if (!*note)
			*note = xasprintf("cannot create '%s': %s", plots_dir, strerror(errno));
	} else if (!(k = outputs_copy_new(plots_dir, plot->index, "png", plot->data, plot->len,
					   &err))) {
		if (!*note)
			*note = xstrdup(err.buf);
		k = 1;
	}
	strbuf_release(&err);
	return k;
}

/* metadata.cellbox of plot copy (<index>, k) in `plots_dir`: its path and size. */
static cJSON *cellbox_meta(const char *plots_dir, int index, int k, int width, int height)
{
	cJSON *cb = cJSON_CreateObject();
	char *dst = outputs_copy_name(plots_dir, index, k, "png");

	cJSON_AddStringToObject(cb, "plot", dst);
	cJSON_AddNumberToObject(cb, "width", width);
	cJSON_AddNumberToObject(cb, "height", height);
	free(dst);
	return cb;
}

/* Add a plot to a display's data, embedded or as a copied file. */
static void add_plot(struct outputs *o, const struct session_plot *plot, cJSON *data,
		     cJSON *meta)
{
	/* The session's checked bytes (event.h): no file is read again here. */
	if (o->flags & OUTPUTS_EMBED_PNG) {
		struct strbuf b64 = STRBUF_INIT;
		if (plot->len <= o->limit) {
			base64_encode(plot->data, plot->len, &b64);
			cJSON_DeleteItemFromObjectCaseSensitive(data, "image/png");
			cJSON_AddStringToObject(data, "image/png", b64.buf);
		} else if (!o->plot_note) {
			o->plot_note = xasprintf("plot %d not embedded: %zu bytes, over the limit of "
						 "%zu", plot->index, plot->len, o->limit);
		}
		strbuf_release(&b64);
	}
	if ((o->flags & OUTPUTS_COPY_PLOTS) && o->plots_dir) {
		int k = copy_plot(o->plots_dir, plot, &o->plot_note);

		cJSON_AddItemToObject(meta, "cellbox", cellbox_meta(o->plots_dir, plot->index, k,
								    plot->width, plot->height));
	}
}

/* The copy shape's part of a new bundle of `out`: its plot copied and remembered, or none. */
static void copy_bundle(struct outputs *o, cJSON *out, const struct session_plot *plot)
{
	struct outputs_copy *c = o->copy;
	size_t i = 0;
	int k;

	while (i < c->nplots && c->plots[i].output != out)
		i++;
	if (!plot) {
		if (i < c->nplots)
			c->plots[i] = c->plots[--c->nplots];
		return;
	}
	k = copy_plot(c->plots_dir, plot, &c->plot_note);
	if (i == c->nplots) {
		if (c->nplots == c->plots_alloc) {
			c->plots_alloc = c->plots_alloc ? 2 * c->plots_alloc : 8;
			c->plots = xrealloc(c->plots, c->plots_alloc * sizeof(*c->plots));
		}
		c->nplots++;
	}
	c->plots[i] = (struct outputs_copy_plot){
		.output = out, .index = plot->index, .k = k, .width = plot->width, .height = plot->height,
	};
}

/*
 * The data and metadata of a display or result event, as an output's members; `current`:
 * `out` is in the cell's own list (not an earlier cell's, OUTPUTS_KEEP_DISPLAYS).
 */
static void fill_bundle(struct outputs *o, const struct session_ev_rich *ev, cJSON *out,
			int current)
{
	const cJSON *m;
	cJSON *d = cJSON_CreateObject(), *meta;
	int copy = current && o->copy && !o->copy->fork;

	cJSON_ArrayForEach(m, ev->data) {
		size_t len = cJSON_IsString(m) ? strlen(m->valuestring) : 0;
		if (!m->string)
			continue;
		if (len && take_bytes(o, len) < len)
			continue;
		if (copy)
			o->copy->bytes += len;
		cJSON_AddItemToObject(d, m->string, cJSON_Duplicate(m, 1));
	}
	meta = ev->metadata ? cJSON_Duplicate(ev->metadata, 1) : cJSON_CreateObject();
	if (ev->plot)
		add_plot(o, ev->plot, d, meta);
	if (copy)
		copy_bundle(o, out, ev->plot);
	cJSON_DeleteItemFromObjectCaseSensitive(out, "data");
	cJSON_DeleteItemFromObjectCaseSensitive(out, "metadata");
	cJSON_AddItemToObject(out, "data", d);
	cJSON_AddItemToObject(out, "metadata", meta);
}

/* A display or update with an id: every output shown with that id gets its new bundle. */
static void update_displays(struct outputs *o, const struct session_ev_rich *ev, const char *id)
{
	for (size_t i = 0; i < o->ndisplays; i++)
		if (!strcmp(o->displays[i].id, id))
			fill_bundle(o, ev, o->displays[i].output, o->displays[i].list == o->list);
}

/* Remember that `out` was shown with display id `id`. */
static void add_display(struct outputs *o, const char *id, cJSON *out)
{
	if (o->ndisplays == o->displays_alloc) {
		o->displays_alloc = o->displays_alloc ? 2 * o->displays_alloc : 8;
		o->displays = xrealloc(o->displays, o->displays_alloc * sizeof(*o->displays));
	}
	o->displays[o->ndisplays++] = (struct outputs_display){
		.id = xstrdup(id), .output = out, .list = o->list,
	};
}

/* A result or display event as execute_result / display_data (or an update of those). */
static void on_rich(struct outputs *o, const struct session_ev_rich *ev, int result)
{
	const char *id = ev->display_id;
	cJSON *out;

	if (ev->pager)
		return;		/* `obj?` help: a pager, not an output (as in Jupyter) */
	if (id)
		update_displays(o, ev, id);
	if (ev->update)
		return;
	before_output(o);
	flush_stream(o);
	out = cJSON_CreateObject();
	fill_bundle(o, ev, out, 1);
	if (result)
		cJSON_AddNumberToObject(out, "execution_count",
					ev->execution_count >= 0 ? ev->execution_count : 0);
	cJSON_AddStringToObject(out, "output_type", result ? "execute_result" : "display_data");
	cJSON_AddItemToArray(o->list, out);
	if (id)
		add_display(o, id, out);
}

/* An error event as an error output. */
static void on_error(struct outputs *o, const struct session_ev_error *ev)
{
	const char *ename = ev->ename, *evalue = ev->evalue;
	cJSON *out, *lines;

	before_output(o);
	flush_stream(o);
	out = cJSON_CreateObject();
	cJSON_AddStringToObject(out, "ename", ename ? ename : "Error");
	cJSON_AddStringToObject(out, "evalue", evalue ? evalue : "");
	cJSON_AddStringToObject(out, "output_type", "error");
	lines = cJSON_AddArrayToObject(out, "traceback");
	for (size_t i = 0; i < ev->ntraceback; i++)
		cJSON_AddItemToArray(lines, cJSON_CreateString(ev->traceback[i]));
	cJSON_AddItemToArray(o->list, out);
}

/* clear_output(wait): now, or before the next output. */
static void on_clear(struct outputs *o, const struct session_ev_clear *ev)
{
	if (ev->wait)
		o->clear_pending = 1;
	else
		clear_now(o);
}

/* The done event: status, count, duration, reason. */
static void on_done(struct outputs *o, const struct session_ev_done *ev)
{
	flush_stream(o);
	snprintf(o->status, sizeof(o->status), "%s", event_status_name(ev->status));
	o->execution_count = ev->execution_count;
	o->duration = ev->duration;
	o->reason = ev->reason;
	o->usage = ev->usage;
	free(o->detail);
	o->detail = ev->detail ? xstrdup(ev->detail) : NULL;
}

/* ---- the copy shape of the same collection (outputs_share) ---- */

/* Forget the cell finished last (its plots, its forked list): an event of the next came. */
static void copy_forget_finished(struct outputs_copy *c)
{
	if (!c->finished)
		return;
	c->nplots = 0;
	cJSON_Delete(c->forked);
	c->forked = NULL;
	c->finished = NULL;
}

/* Stop collecting the copy shape apart. */
static void copy_unfork(struct outputs_copy *c)
{
	if (!c->fork)
		return;
	outputs_release(c->fork);
	free(c->fork);
	c->fork = NULL;
}

static void copy_free(struct outputs *o)
{
	struct outputs_copy *c = o->copy;

	if (!c)
		return;
	copy_forget_finished(c);
	copy_unfork(c);
	free(c->plots);
	free(c->plot_note);
	free(c);
	o->copy = NULL;
}

void outputs_share(struct outputs *o, const char *plots_dir, size_t limit)
{
	copy_free(o);
	if (!plots_dir)
		return;
	o->copy = xcalloc(1, sizeof(*o->copy));
	o->copy->plots_dir = plots_dir;
	o->copy->limit = limit ? limit : OUTPUTS_LIMIT;
}

/*
 * Whether event `ev` may make the two shapes part: text that may pass either limit (counted
 * for every output it would fill), or a plot whose bundle has an image/png of its own (the
 * embedded plot replaces it, the copy shape keeps it).
 */
static int shapes_part(const struct outputs *o, const struct session_event *ev)
{
	const struct session_ev_rich *rich;
	const cJSON *m;
	size_t n, shown, b = 0;

	if (ev->type == SESSION_EV_STREAM) {
		n = ev->stream.stream == SESSION_STREAM_OTHER ? 0 : ev->stream.len;
	} else if (ev->type == SESSION_EV_RESULT || ev->type == SESSION_EV_DISPLAY) {
		rich = ev->type == SESSION_EV_RESULT ? &ev->result : &ev->display;
		if (rich->pager)
			return 0;
		if (rich->plot && cJSON_GetObjectItemCaseSensitive(rich->data, "image/png"))
			return 1;
		shown = !rich->update;
		for (size_t i = 0; rich->display_id && i < o->ndisplays; i++)
			shown += !strcmp(o->displays[i].id, rich->display_id);
		cJSON_ArrayForEach(m, rich->data)	/* the bytes fill_bundle() counts */
			if (m->string && cJSON_IsString(m))
				b += strlen(m->valuestring);
		if (shown && b > SIZE_MAX / shown)
			return 1;
		n = b * shown;
	} else {
		return 0;
	}
	return n > o->limit - o->bytes || n > o->copy->limit - o->copy->bytes;
}

/* The copy shape of output `out` (a duplicate): its plot by reference made a copied one. */
static void copy_plot_output(const struct outputs_copy *c, const struct outputs_copy_plot *p,
			     cJSON *out)
{
	cJSON_DeleteItemFromObjectCaseSensitive(cJSON_GetObjectItemCaseSensitive(out, "data"),
						"image/png");
	cJSON_AddItemToObject(cJSON_GetObjectItemCaseSensitive(out, "metadata"), "cellbox",
			      cellbox_meta(c->plots_dir, p->index, p->k, p->width, p->height));
}

/* The position of `item` in `list`, or -1. */
static int index_in(const cJSON *list, const cJSON *item)
{
	int i = 0;

	for (const cJSON *e = list ? list->child : NULL; e; e = e->next, i++)
		if (e == item)
			return i;
	return -1;
}

/*
 * The shapes part from here on: a collector of the copy shape of its own takes the rest of
 * the cell, made from what was collected so far as that collector would have it.
 */
static void copy_fork(struct outputs *o)
{
	struct outputs_copy *c = o->copy;
	struct outputs *f = xmalloc(sizeof(*f));

	outputs_init(f, o->channel_dir, OUTPUTS_COPY_PLOTS, c->plots_dir, c->limit);
	cJSON_Delete(f->list);
	f->list = cJSON_Duplicate(o->list, 1);
	for (size_t i = 0; i < c->nplots; i++)
		copy_plot_output(c, &c->plots[i],
				 cJSON_GetArrayItem(f->list, index_in(o->list, c->plots[i].output)));
	strbuf_add(&f->stream, o->stream.buf, o->stream.len);
	memcpy(f->stream_name, o->stream_name, sizeof(f->stream_name));
	f->clear_pending = o->clear_pending;
	f->bytes = c->bytes;
	for (size_t i = 0; i < o->ndisplays; i++)
		if (o->displays[i].list == o->list)
			add_display(f, o->displays[i].id,
				    cJSON_GetArrayItem(f->list,
						       index_in(o->list, o->displays[i].output)));
	c->nplots = 0;
	c->fork = f;
}

/* An event, for the copy shape: nothing, or to the fork. */
static void copy_event(struct outputs *o, const struct session_event *ev)
{
	struct outputs_copy *c = o->copy;

	copy_forget_finished(c);
	if (!c->fork && shapes_part(o, ev))
		copy_fork(o);
	if (c->fork)
		outputs_event(c->fork, ev);
}

/* The cell is done: its plots (or the fork's list) wait for outputs_copy_shape(). */
static void copy_finish(struct outputs *o, const cJSON *list)
{
	struct outputs_copy *c = o->copy;

	copy_forget_finished(c);
	c->bytes = 0;
	if (c->fork) {
		c->forked = outputs_finish(c->fork);
		copy_unfork(c);
	}
	c->finished = list;
}

void outputs_event(struct outputs *o, const struct session_event *ev)
{
	if (o->copy)
		copy_event(o, ev);
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
	case SESSION_EV_CLEAR_OUTPUT:
		on_clear(o, &ev->clear);
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
	if (!(o->flags & OUTPUTS_KEEP_DISPLAYS))
		forget_displays(o, NULL);
	o->clear_pending = 0;
	list = o->list;
	o->list = cJSON_CreateArray();
	o->bytes = 0;
	if (o->copy)
		copy_finish(o, list);
	return list;
}

int outputs_copy_shape(struct outputs *o, cJSON *list,
		       int (*fn)(const cJSON *outputs, void *data), void *data)
{
	struct outputs_copy *c = o->copy;
	int rc;

	if (!c || !list || list != c->finished)
		return fn(list, data);
	if (c->forked)
		return fn(c->forked, data);
	/* Lent in place: the embedded image (appended last) out, metadata.cellbox in. */
	for (size_t i = 0; i < c->nplots; i++) {
		struct outputs_copy_plot *p = &c->plots[i];

		p->png = cJSON_DetachItemFromObjectCaseSensitive(
			cJSON_GetObjectItemCaseSensitive(p->output, "data"), "image/png");
		p->cellbox = cellbox_meta(c->plots_dir, p->index, p->k, p->width, p->height);
		cJSON_AddItemToObject(cJSON_GetObjectItemCaseSensitive(p->output, "metadata"),
				      "cellbox", p->cellbox);
	}
	rc = fn(list, data);
	for (size_t i = 0; i < c->nplots; i++) {
		struct outputs_copy_plot *p = &c->plots[i];

		cJSON_Delete(cJSON_DetachItemViaPointer(
			cJSON_GetObjectItemCaseSensitive(p->output, "metadata"), p->cellbox));
		if (p->png)
			cJSON_AddItemToObject(cJSON_GetObjectItemCaseSensitive(p->output, "data"),
					      "image/png", p->png);
		p->png = p->cellbox = NULL;
	}
	return rc;
}
