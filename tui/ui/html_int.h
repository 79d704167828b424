#ifndef CELLBOX_HTML_INT_H
#define CELLBOX_HTML_INT_H

/* What html.c (tokens, text flow), html_table.c (tables) and html_out.c (lines) share. */

#include "html.h"
#include "utf8.h"

/* The output: whole lines, counted against HTML_MAX_LINES. */
struct html_out {
	struct strbuf *out;
	unsigned flags;
	int width;
	int lines;
	int last_blank;		/* the last line written was empty (or none was written yet) */
	int full;		/* HTML_MAX_LINES reached: nothing more is written */
};

/* Write one line (`sgr`: NULL, or the SGR parameters it is drawn in with HTML_SGR). */
void html_out_line(struct html_out *o, const char *s, size_t len, const char *sgr);

struct html_cell {
	struct strbuf text;	/* sanitised, whitespace collapsed, at most HTML_CELL_BYTES */
	int cut;		/* text was dropped past HTML_CELL_BYTES */
	int head;		/* a <th> */
};

struct html_row {
	struct html_cell cells[HTML_MAX_COLS];
	int n;			/* cells[0..n) are in use */
	int head;		/* a header row: in <thead>, or only <th> before any other row */
};

/* A table being read: its kept rows, what the caps dropped, the cell text goes to. */
struct html_table {
	struct html_row *rows;	/* rows[nrows] is the row being read, when row_open */
	int nrows, alloc, nhead, nbody;
	int row_open, in_thead, body_seen;
	long more_rows, more_cols;
	int col;		/* the next column of the row being read */
	int span[HTML_MAX_COLS];	/* rows that a rowspan above still covers, per column */
	struct html_cell *cell;	/* where text goes; NULL: nowhere (between cells, past a cap) */
	int in_caption;
	struct strbuf caption;
};

void html_table_init(struct html_table *t);
void html_table_release(struct html_table *t);
/* <tr> (and </tr>: `open` 0). */
void html_table_row(struct html_table *t, int open);
/* <td> or <th>, with its colspan and rowspan (1 when not given). */
void html_table_cell(struct html_table *t, int head, int colspan, int rowspan);
/* </td>, </th>: text goes nowhere until the next cell. */
void html_table_end_cell(struct html_table *t);
/* Sanitised text: into the current cell (or caption), whitespace collapsed. */
void html_table_text(struct html_table *t, const char *s, size_t len);
/* Draw the table (at o->width) and forget it. */
void html_table_render(struct html_table *t, struct html_out *o);

#endif
