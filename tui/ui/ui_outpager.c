/*
 * The output pager: the whole output of a console cell, read back from the history store,
 * in a view over the whole screen (`:output [N]`, F9). The output pane keeps the first
 * 256 KiB of a cell (outmodel's cell_max); the history keeps up to HISTORY_OUTPUT_LIMIT
 * (4 MiB) of its text, so this is where the rest is read.
 *
 * The cell's line of history.jsonl is read by history_read_entry() (its offset and length
 * noted when it was appended; at most HISTORY_ENTRY_MAX, in 64 KiB pieces), its outputs made
 * text as the output pane makes them (streams, tracebacks, results and displays through
 * ui_rich_bundle), sanitised (no SGR: the pager draws plain text), at most OUTPAGER_MAX bytes,
 * and the entry freed. The view keeps that text and an index of its screen rows (4 bytes a
 * row, made again when the width changes), so a frame draws only the rows it shows. `/`
 * looks for text (one pass, from the row after the top, then from the start), `n` again.
 */
#include "ui.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <wchar.h>

#include "cellfile.h"

/* Text the pager keeps: the history's cap, and room for what it said past it. */
#define OUTPAGER_MAX (HISTORY_OUTPUT_LIMIT + ((size_t)64 << 10))

struct outpager {
	char *title;
	struct strbuf text;	/* sanitised, no escapes */
	uint32_t *rows;		/* where each screen row starts in text */
	size_t nrows, top;
	int width;		/* the width rows[] was made for */
	int cut;		/* the text was cut at OUTPAGER_MAX */
	int typing;		/* `/` was pressed: keys go to the query until Enter or Esc */
	struct strbuf query;	/* what `/` looks for (n: the next one) */
	const char *note;	/* said under the text until the next key ("not found") */
};

/* The output text of a history entry's outputs, as the output pane shows them. */
static void entry_text(const struct ui *ui, const cJSON *entry, struct strbuf *raw)
{
	const cJSON *o;

	cJSON_ArrayForEach(o, cJSON_GetObjectItemCaseSensitive(entry, "outputs")) {
		const char *type = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o,
									"output_type"));
		const cJSON *data = cJSON_GetObjectItemCaseSensitive(o, "data"), *l;
		char *text = NULL;

		if (!type)
			continue;
		if (!strcmp(type, "stream")) {
			text = cellfile_join(cJSON_GetObjectItemCaseSensitive(o, "text"));
		} else if (!strcmp(type, "error")) {
			struct strbuf sb = STRBUF_INIT;
			cJSON_ArrayForEach(l, cJSON_GetObjectItemCaseSensitive(o, "traceback"))
				if (cJSON_IsString(l))
					strbuf_addf(&sb, "%s\n", l->valuestring);
			text = strbuf_detach(&sb, NULL);
		} else if (cJSON_IsObject(data)) {
			const cJSON *plain = cJSON_GetObjectItemCaseSensitive(data, "text/plain");
			char *p = plain ? cellfile_join(plain) : NULL;
			text = ui_rich_bundle(ui, data, p && *p ? p : NULL);
			if (!text && cJSON_GetObjectItemCaseSensitive(data, "image/png"))
				text = xstrdup("[plot]\n");
			free(p);
		}
		if (text && strbuf_addstr(raw, text) < 0) {	/* full: as much as fits */
			size_t room = raw->max > raw->len + 1 ? raw->max - raw->len - 1 : 0;
			strbuf_add(raw, text, room < strlen(text) ? room : strlen(text));
			free(text);
			return;
		}
		free(text);
	}
}

/* Note that a screen row starts at `at`. */
static void row_add(struct outpager *op, size_t *alloc, size_t at)
{
	if (op->nrows == *alloc) {
		*alloc *= 2;
		op->rows = xrealloc(op->rows, *alloc * sizeof(*op->rows));
	}
	op->rows[op->nrows++] = (uint32_t)at;
}

/* The screen rows of the text at `width` columns: a row ends at a newline or the width. */
static void index_rows(struct outpager *op, int width)
{
	const char *s = op->text.buf;
	size_t len = op->text.len, alloc = 1024, i = 0;
	int col = 0;

	free(op->rows);
	op->rows = xmalloc(alloc * sizeof(*op->rows));
	op->nrows = 0;
	row_add(op, &alloc, 0);
	while (i < len) {
		wchar_t wc;
		size_t n;
		int cw;

		if (s[i] == '\n') {
			if (++i < len)
				row_add(op, &alloc, i);
			col = 0;
			continue;
		}
		n = ui_decode(s + i, len - i, &wc);
		cw = wc == L'\t' ? 1 : ui_char_width(&wc);
		if (col + cw > width && col > 0) {
			row_add(op, &alloc, i);
			col = 0;
		}
		col += cw;
		i += n;
	}
	op->width = width;
}

static void outpager_free(struct ui *ui)
{
	struct outpager *op = ui->opg;

	if (!op)
		return;
	free(op->title);
	strbuf_release(&op->text);
	strbuf_release(&op->query);
	free(op->rows);
	free(op);
	ui->opg = NULL;
}

void ui_outpager_release(struct ui *ui)
{
	outpager_free(ui);
}

int ui_outpager_open(struct ui *ui, const struct out_cell *c, struct strbuf *msg)
{
	struct strbuf raw = STRBUF_INIT;
	struct outpager *op;
	cJSON *entry;

	if (!ui->rec.h) {
		strbuf_addstr(msg, "no history is recorded (history-size is 0): the output pane "
			      "has all there is");
		return -1;
	}
	if (c->hist_at < 0) {
		strbuf_addstr(msg, c->done ? "the history did not record this cell"
				   : "the cell is still running: its output is recorded when done");
		return -1;
	}
	entry = history_read_entry(ui->rec.h, c->hist_at, c->hist_len, msg);
	if (!entry)
		return -1;
	strbuf_set_max(&raw, OUTPAGER_MAX);
	entry_text(ui, entry, &raw);
	cJSON_Delete(entry);
	outpager_free(ui);
	op = xcalloc(1, sizeof(*op));
	op->cut = raw.len + 1 >= OUTPAGER_MAX;
	strbuf_init(&op->text, 0);
	strbuf_init(&op->query, 0);
	strbuf_set_max(&op->query, 256);
	sanitize_str(raw.buf, raw.len, SAN_NO_CR, &op->text);
	strbuf_release(&raw);
	if (op->cut)
		strbuf_addf(&op->text, "\n[the pager keeps %zu bytes: the rest is not shown]\n",
			    OUTPAGER_MAX);
	op->title = c->count > 0 ? xasprintf("output of In [%d]", c->count)
				 : xstrdup("output of the cell");
	ui->opg = op;
	index_rows(op, COLS - 2 > 1 ? COLS - 2 : 1);
	ui_overlay_push(ui, OV_OUTPUT);
	return 0;
}

/* The row holding byte `at` of the text. */
static size_t row_of(const struct outpager *op, size_t at)
{
	size_t lo = 0, hi = op->nrows;

	while (hi - lo > 1) {
		size_t mid = lo + (hi - lo) / 2;
		if (op->rows[mid] <= at)
			lo = mid;
		else
			hi = mid;
	}
	return lo;
}

/* The query's next place after the top row's start (one pass over the text): its row on top. */
static void find_next(struct outpager *op)
{
	size_t from = op->top + 1 < op->nrows ? op->rows[op->top + 1] : op->text.len;
	const char *hit;

	op->note = NULL;
	if (!op->query.len)
		return;
	hit = memmem(op->text.buf + from, op->text.len - from, op->query.buf, op->query.len);
	if (!hit && from > 0)	/* from the start again, as less does with its wrap */
		hit = memmem(op->text.buf, from, op->query.buf, op->query.len);
	if (hit)
		op->top = row_of(op, (size_t)(hit - op->text.buf));
	else
		op->note = "not found";
}

void ui_outpager_draw(struct ui *ui)
{
	struct outpager *op = ui->opg;
	int h = LINES - 1, inner = COLS - 2;
	struct look lk = ui_look_of(ui, TH_OVERLAY, NULL);
	char title[256];

	if (!op || h < 3 || COLS < 10)
		return;
	if (op->width != inner)
		index_rows(op, inner);
	if (op->top + (size_t)(h - 2) > op->nrows)
		op->top = op->nrows > (size_t)(h - 2) ? op->nrows - (size_t)(h - 2) : 0;
	snprintf(title, sizeof(title), " %s (history) \u00b7 rows %zu-%zu/%zu \u00b7 PgUp/PgDn "
		 "Home/End \u00b7 / n find \u00b7 q closes ", op->title, op->top + 1,
		 op->top + (size_t)(h - 2) < op->nrows ? op->top + (size_t)(h - 2) : op->nrows,
		 op->nrows);
	ui_draw_box(ui, 0, 0, h, COLS, title);
	for (int y = 0; y < h - 2 && op->top + (size_t)y < op->nrows; y++) {
		size_t at = op->rows[op->top + (size_t)y];
		size_t end = op->top + (size_t)y + 1 < op->nrows ? op->rows[op->top + (size_t)y + 1]
								   : op->text.len;
		int col = 0;
		while (at < end && op->text.buf[at] != '\n' && col < inner) {
			wchar_t wc;
			size_t n = ui_decode(op->text.buf + at, end - at, &wc);
			if (wc == L'\t')
				wc = L' ';
			ui_put_wc(1 + y, 1 + col, wc, lk);
			col += ui_char_width(&wc);
			at += n;
		}
	}
	if (op->typing || op->note) {	/* on the bottom border: the query, or what it found */
		char line[300];
		snprintf(line, sizeof(line), " %s%s ", op->typing ? "/" : op->note,
			 op->typing ? op->query.buf : "");
		ui_put_text(h - 1, 2, inner - 2, line, lk);
	}
}

int ui_outpager_key(struct ui *ui, int is_key, wint_t ch)
{
	struct outpager *op = ui->opg;
	size_t page = LINES > 4 ? (size_t)(LINES - 3) : 1;

	if (!op) {
		ui_overlay_close(ui, OV_OUTPUT);
		return PANE_HANDLED | PANE_REDRAW;
	}
	op->note = NULL;
	if (op->typing) {	/* the query: printable characters, Backspace, Enter, Esc */
		if (!is_key && (ch == '\r' || ch == '\n')) {
			op->typing = 0;
			find_next(op);
		} else if (!is_key && (ch == 27 || ch == CTRL('c'))) {
			op->typing = 0;
		} else if ((is_key && ch == KEY_BACKSPACE) || (!is_key && (ch == 127 || ch == 8))) {
			while (op->query.len &&
			       ((unsigned char)op->query.buf[--op->query.len] & 0xc0) == 0x80)
				;
			op->query.buf[op->query.len] = '\0';
		} else if (!is_key && ch >= ' ' && ch != 127) {
			char u[8];
			size_t n = wcrtomb(u, (wchar_t)ch, &(mbstate_t){ 0 });
			if (n != (size_t)-1)
				strbuf_add(&op->query, u, n);	/* past its cap: not added */
		}
		return PANE_HANDLED | PANE_REDRAW;
	}
	if (!is_key && ch == '/') {
		op->typing = 1;
		strbuf_reset(&op->query);
	} else if (!is_key && ch == 'n') {
		find_next(op);
	} else if ((is_key && ch == KEY_UP) || (!is_key && ch == 'k'))
		op->top -= op->top > 0;
	else if ((is_key && ch == KEY_DOWN) || (!is_key && ch == 'j'))
		op->top++;
	else if ((is_key && ch == KEY_PPAGE) || (!is_key && ch == 'b'))
		op->top = op->top > page ? op->top - page : 0;
	else if ((is_key && ch == KEY_NPAGE) || (!is_key && ch == ' '))
		op->top += page;
	else if ((is_key && ch == KEY_HOME) || (!is_key && ch == 'g'))
		op->top = 0;
	else if ((is_key && ch == KEY_END) || (!is_key && ch == 'G'))
		op->top = op->nrows;	/* the draw keeps the last page in view */
	else if (!is_key && (ch == 'q' || ch == 27 || ch == CTRL('c'))) {
		ui_overlay_close(ui, OV_OUTPUT);
		outpager_free(ui);
	}
	return PANE_HANDLED | PANE_REDRAW;
}
