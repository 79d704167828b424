/* The output pane's model: executed cells and their bounded, sanitised output. */
#include "outmodel.h"

#include <stdlib.h>
#include <string.h>

void outmodel_init(struct outmodel *m, size_t cell_max)
{
	memset(m, 0, sizeof(*m));
	m->cell_max = cell_max;
}

/* What a chunk holds. */
static void chunk_release(struct out_chunk *ch)
{
	strbuf_release(&ch->text);
	free(ch->display_id);
	ch->display_id = NULL;
}

void outmodel_cell_free(struct out_cell *c)
{
	if (!c)
		return;
	for (size_t i = 0; i < c->nchunks; i++)
		chunk_release(&c->chunks[i]);
	for (int k = 0; k < 2; k++)
		if (c->san[k]) {
			sanitize_release(c->san[k]);
			free(c->san[k]);
		}
	free(c->chunks);
	free(c->code);
	free(c);
}

void outmodel_clear(struct outmodel *m)
{
	for (size_t i = 0; i < m->ncells; i++)
		outmodel_cell_free(m->cells[i]);
	m->ncells = 0;
}

void outmodel_release(struct outmodel *m)
{
	outmodel_clear(m);
	free(m->cells);
	m->cells = NULL;
	m->cells_alloc = 0;
}

struct out_cell *outmodel_cell_new(unsigned long id, const char *code)
{
	struct out_cell *c = xcalloc(1, sizeof(*c));

	c->id = id;
	c->code = code ? xstrdup(code) : NULL;
	c->hist_at = -1;
	return c;
}

struct out_cell *outmodel_add(struct outmodel *m, unsigned long id, const char *code)
{
	struct out_cell *c = outmodel_cell_new(id, code);

	if (m->ncells == m->cells_alloc) {
		m->cells_alloc = m->cells_alloc ? 2 * m->cells_alloc : 64;
		m->cells = xrealloc(m->cells, m->cells_alloc * sizeof(*m->cells));
	}
	m->cells[m->ncells++] = c;
	return c;
}

struct out_cell *outmodel_find(const struct outmodel *m, unsigned long id)
{
	for (size_t i = m->ncells; i-- > 0;)
		if (m->cells[i]->id == id)
			return m->cells[i];
	return NULL;
}

/* Drop every chunk and the streams' partial state: the cell shows no output. */
static void drop_output(struct out_cell *c)
{
	for (size_t i = 0; i < c->nchunks; i++)
		chunk_release(&c->chunks[i]);
	c->nchunks = 0;
	for (int k = 0; k < 2; k++)
		if (c->san[k]) {
			sanitize_release(c->san[k]);
			free(c->san[k]);
			c->san[k] = NULL;
		}
	c->stored = c->dropped = 0;
	c->clear_pending = 0;
	c->rows_width = 0;
}

void outmodel_cell_clear(struct out_cell *c, int wait)
{
	if (wait)
		c->clear_pending = 1;
	else
		drop_output(c);
}

/* The chunk to append `kind` to: the last one when it has that kind, else a new one. */
static struct out_chunk *chunk_for(struct out_cell *c, enum out_kind kind, int merge)
{
	struct out_chunk *ch;

	if (merge && c->nchunks && c->chunks[c->nchunks - 1].kind == kind &&
	    !c->chunks[c->nchunks - 1].display_id)
		return &c->chunks[c->nchunks - 1];
	if (c->nchunks == c->chunks_alloc) {
		c->chunks_alloc = c->chunks_alloc ? 2 * c->chunks_alloc : 4;
		c->chunks = xrealloc(c->chunks, c->chunks_alloc * sizeof(*c->chunks));
	}
	ch = &c->chunks[c->nchunks++];
	memset(ch, 0, sizeof(*ch));
	ch->kind = kind;
	strbuf_init(&ch->text, 0);
	return ch;
}

/* Append sanitised text, letting a lone '\r' rewind to the start of the line. */
static void add_text(struct strbuf *sb, const char *s, size_t len)
{
	for (size_t i = 0; i < len; i++) {
		if (s[i] == '\r') {
			if (i + 1 < len && s[i + 1] == '\n')
				continue;
			while (sb->len > 0 && sb->buf[sb->len - 1] != '\n')
				sb->len--;
			sb->buf[sb->len] = '\0';
			continue;
		}
		strbuf_addch(sb, s[i]);
	}
}

void outmodel_cell_append(struct outmodel *m, struct out_cell *c, enum out_kind kind,
		     const char *text, size_t len)
{
	struct strbuf clean = STRBUF_INIT;
	int stream = kind == OUT_STDOUT || kind == OUT_STDERR;
	size_t room;
	struct out_chunk *ch;

	if (c->clear_pending && kind != OUT_INFO)
		drop_output(c);
	if (stream) {
		int k = kind == OUT_STDERR;
		if (!c->san[k]) {
			c->san[k] = xmalloc(sizeof(*c->san[k]));
			sanitize_init(c->san[k], SAN_KEEP_SGR);
		}
		sanitize_feed(c->san[k], text, len, &clean);
	} else {
		sanitize_str(text, len, SAN_KEEP_SGR, &clean);
	}
	/* Streams fill the cell's budget; a result or error gets a budget of its own. */
	room = stream ? (c->stored < m->cell_max ? m->cell_max - c->stored : 0) : m->cell_max;
	if (clean.len > room) {
		size_t keep = room;
		while (keep > 0 && (clean.buf[keep] & 0xc0) == 0x80)
			keep--;		/* do not cut a character in half */
		c->dropped += clean.len - keep;
		clean.len = keep;
		clean.buf[keep] = '\0';
	}
	if (clean.len) {
		ch = chunk_for(c, kind, stream);
		add_text(&ch->text, clean.buf, clean.len);
		if (stream)
			c->stored += clean.len;
	}
	c->rows_width = 0;
	strbuf_release(&clean);
}

void outmodel_cell_tag(struct out_cell *c, size_t at, const char *display_id)
{
	if (at < c->nchunks && !c->chunks[at].display_id)
		c->chunks[at].display_id = xstrdup(display_id);
}

void outmodel_cell_display(struct outmodel *m, struct out_cell *c, const char *display_id,
		      const char *text, size_t len)
{
	struct strbuf clean = STRBUF_INIT;
	struct out_chunk *ch;

	if (c->clear_pending)
		drop_output(c);
	sanitize_str(text, len < m->cell_max ? len : m->cell_max, SAN_KEEP_SGR, &clean);
	ch = chunk_for(c, OUT_STDOUT, 0);
	add_text(&ch->text, clean.buf, clean.len);
	ch->display_id = xstrdup(display_id);
	c->rows_width = 0;
	strbuf_release(&clean);
}

/* Call `fn` on every chunk shown with `display_id`; returns how many. */
static size_t each_shown(struct outmodel *m, const char *display_id,
			 void (*fn)(struct out_chunk *ch, const void *arg), const void *arg)
{
	size_t n = 0;

	for (size_t i = 0; i < m->ncells; i++) {
		struct out_cell *c = m->cells[i];

		for (size_t k = 0; k < c->nchunks; k++)
			if (c->chunks[k].display_id && !strcmp(c->chunks[k].display_id, display_id)) {
				fn(&c->chunks[k], arg);
				c->rows_width = 0;
				n++;
			}
	}
	return n;
}

/* An update's text in place of a chunk's (already sanitised). */
static void ui_put_text(struct out_chunk *ch, const void *arg)
{
	const struct strbuf *clean = arg;

	ch->kind = OUT_STDOUT;
	strbuf_reset(&ch->text);
	strbuf_add(&ch->text, clean->buf, clean->len);
}

/* An update's plot in place of a chunk's. */
static void put_plot(struct out_chunk *ch, const void *arg)
{
	const int *p = arg;

	ch->kind = OUT_PLOT;
	ch->plot_index = p[0];
	ch->plot_w = p[1];
	ch->plot_h = p[2];
	strbuf_reset(&ch->text);
	strbuf_addf(&ch->text, "[plot %d: %dx%d PNG]\n", p[0], p[1], p[2]);
}

size_t outmodel_update_text(struct outmodel *m, const char *display_id, const char *text,
			    size_t len)
{
	struct strbuf clean = STRBUF_INIT;
	size_t n;

	sanitize_str(text, len < m->cell_max ? len : m->cell_max, SAN_KEEP_SGR, &clean);
	n = each_shown(m, display_id, ui_put_text, &clean);
	strbuf_release(&clean);
	return n;
}

size_t outmodel_update_plot(struct outmodel *m, const char *display_id, int index, int w,
			    int h)
{
	const int p[3] = { index, w, h };

	return each_shown(m, display_id, put_plot, p);
}

void outmodel_cell_plot(struct outmodel *m, struct out_cell *c, int index, int w, int h)
{
	struct out_chunk *ch;

	(void)m;
	if (c->clear_pending)
		drop_output(c);
	ch = chunk_for(c, OUT_PLOT, 0);
	ch->plot_index = index;
	ch->plot_w = w;
	ch->plot_h = h;
	if (index < 0)		/* an image a notebook file held, not one of the kernel's */
		strbuf_addf(&ch->text, "[image %d: %dx%d PNG]\n", -index, w, h);
	else
		strbuf_addf(&ch->text, "[plot %d: %dx%d PNG]\n", index, w, h);
	c->rows_width = 0;
}

void outmodel_cell_finish(struct out_cell *c, double duration)
{
	for (int k = 0; k < 2; k++)
		if (c->san[k]) {
			sanitize_release(c->san[k]);
			free(c->san[k]);
			c->san[k] = NULL;
		}
	if (c->dropped) {
		struct out_chunk *ch = chunk_for(c, OUT_TRUNCATED, 0);
		strbuf_addf(&ch->text, "[output truncated: %zu bytes not shown]\n", c->dropped);
	}
	c->done = 1;
	c->duration = duration;
	c->rows_width = 0;
}

size_t outmodel_bytes(const struct outmodel *m)
{
	size_t n = m->cells_alloc * sizeof(*m->cells);

	for (size_t i = 0; i < m->ncells; i++) {
		const struct out_cell *c = m->cells[i];
		n += sizeof(*c) + (c->code ? strlen(c->code) + 1 : 0) +
		     c->chunks_alloc * sizeof(*c->chunks);
		for (size_t k = 0; k < c->nchunks; k++)
			n += c->chunks[k].text.alloc;
	}
	return n;
}

size_t outmodel_trim(struct outmodel *m, size_t max)
{
	size_t total = 0, freed = 0;

	for (size_t i = 0; i < m->ncells; i++)
		for (size_t k = 0; k < m->cells[i]->nchunks; k++)
			total += m->cells[i]->chunks[k].text.len;
	for (size_t i = 0; i < m->ncells && total > max; i++) {
		struct out_cell *c = m->cells[i];
		size_t bytes = 0;

		if (!c->done || (c->nchunks == 1 && c->chunks[0].kind == OUT_TRUNCATED))
			continue;
		for (size_t k = 0; k < c->nchunks; k++) {
			bytes += c->chunks[k].text.len;
			chunk_release(&c->chunks[k]);
		}
		if (!bytes) {
			c->nchunks = 0;
			continue;
		}
		c->nchunks = 0;
		c->dropped += bytes;
		{
			struct out_chunk *ch = chunk_for(c, OUT_TRUNCATED, 0);
			strbuf_addf(&ch->text, "[output dropped to save memory: %zu bytes]\n", bytes);
		}
		c->stored = 0;
		c->rows_width = 0;
		total -= bytes;
		freed += bytes;
	}
	return freed;
}
