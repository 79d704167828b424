/* Unit tests of the TUI's pure parts: editor buffer, highlighter, SGR, themes, output model. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "edbuf.h"
#include "highlight.h"
#include "outmodel.h"
#include "sgr.h"
#include "theme.h"
#include "vi.h"
#include "../tap.h"

static void test_edbuf(void)
{
	struct edbuf e;
	long at;

	/* R's editor settings: two spaces after an opening bracket, removed as one level */
	edbuf_init(&e);
	e.indent = "  ";
	e.openers = "{([";
	edbuf_insert(&e, "f <- function(x) {", 18);
	edbuf_newline(&e, 1);
	CHECK_STR(e.text.buf, "f <- function(x) {\n  ");
	edbuf_insert(&e, "y <- 1:", 7);
	edbuf_newline(&e, 1);
	CHECK_STR(e.text.buf, "f <- function(x) {\n  y <- 1:\n  ");
	CHECK(edbuf_backspace(&e));
	CHECK_STR(e.text.buf, "f <- function(x) {\n  y <- 1:\n");
	edbuf_release(&e);

	edbuf_init(&e);
	edbuf_insert(&e, "if x:", 5);
	edbuf_newline(&e, 1);
	CHECK_STR(e.text.buf, "if x:\n    ");
	CHECK(edbuf_line(&e) == 1 && edbuf_col(&e) == 4 && edbuf_lines(&e) == 2);
	edbuf_insert(&e, "y = 1", 5);
	edbuf_newline(&e, 1);
	CHECK_STR(e.text.buf, "if x:\n    y = 1\n    ");
	CHECK(edbuf_backspace(&e));		/* a whole indent level */
	CHECK_STR(e.text.buf, "if x:\n    y = 1\n");
	CHECK(edbuf_up(&e) && edbuf_line(&e) == 1);
	CHECK(edbuf_up(&e) && edbuf_line(&e) == 0);
	CHECK(!edbuf_up(&e));			/* first line: the caller walks history */
	edbuf_end(&e);
	CHECK(edbuf_col(&e) == 5);
	CHECK(edbuf_down(&e) && edbuf_col(&e) == 5);	/* the goal column is kept */
	CHECK(edbuf_down(&e) && edbuf_col(&e) == 0);
	CHECK(!edbuf_down(&e));
	/* UTF-8: movement and deletion by character. */
	edbuf_set(&e, "h\xc3\xa9\xe2\x82\xac");
	CHECK(edbuf_col(&e) == 3 && edbuf_cursor_cp(&e) == 3);
	CHECK(edbuf_left(&e) && e.cur == 3);
	CHECK(edbuf_backspace(&e));
	CHECK_STR(e.text.buf, "h\xe2\x82\xac");
	CHECK(edbuf_cp_to_byte(&e, 2) == 4);
	edbuf_home(&e);
	CHECK(edbuf_delete(&e));
	CHECK_STR(e.text.buf, "\xe2\x82\xac");
	/* Kill, replace, brackets. */
	edbuf_set(&e, "foo(bar[1], {2})");
	CHECK(edbuf_match_bracket(&e, &at) == 3 && at == 15);
	e.cur = 7;
	CHECK(edbuf_match_bracket(&e, &at) == 9 && at == 7);
	e.cur = 1;
	CHECK(edbuf_match_bracket(&e, &at) == -1 && at == -1);
	edbuf_set(&e, "(()");
	e.cur = 0;
	CHECK(edbuf_match_bracket(&e, &at) == -1 && at == 0);
	edbuf_set(&e, "import nu");
	edbuf_replace(&e, 7, 9, "numpy");
	CHECK_STR(e.text.buf, "import numpy");
	CHECK(e.cur == 12);
	e.cur = 6;
	edbuf_kill_right(&e);
	CHECK_STR(e.text.buf, "import");
	edbuf_kill_left(&e);
	CHECK_STR(e.text.buf, "");
	edbuf_newline(&e, 0);
	CHECK_STR(e.text.buf, "\n");
	edbuf_release(&e);
}

/* The selection: a Shift-motion from an anchor; typing, Backspace, Enter replace it, one step. */
static void test_edbuf_selection(void)
{
	struct edbuf e;
	struct strbuf clip = STRBUF_INIT;
	size_t from, to;

	edbuf_init(&e);
	e.kills = &clip;
	edbuf_set(&e, "total = 10");
	CHECK(!edbuf_selection(&e, &from, &to));
	edbuf_home(&e);
	edbuf_mark(&e);
	CHECK(!edbuf_selection(&e, &from, &to));	/* an anchor at the cursor: nothing */
	edbuf_word_right(&e);
	edbuf_mark(&e);					/* a second mark keeps the anchor */
	CHECK(edbuf_selection(&e, &from, &to) && from == 0 && to == 5);
	CHECK(edbuf_cut_selection(&e));
	CHECK_STR(e.text.buf, " = 10");
	CHECK_STR(clip.buf, "total");			/* a cut is a kill */
	CHECK(!edbuf_selection(&e, &from, &to) && !edbuf_cut_selection(&e));
	CHECK(edbuf_undo(&e));
	CHECK_STR(e.text.buf, "total = 10");
	CHECK(!edbuf_selection(&e, &from, &to));	/* undo ends the selection */
	/* Typing at a selection replaces it: one step with the characters typed after it. */
	edbuf_end(&e);
	edbuf_mark(&e);
	edbuf_left(&e);
	edbuf_left(&e);
	CHECK(edbuf_selection(&e, &from, &to) && from == 8 && to == 10);
	edbuf_insert(&e, "4", 1);
	edbuf_insert(&e, "2", 1);
	CHECK_STR(e.text.buf, "total = 42");
	CHECK(!edbuf_selection(&e, &from, &to));
	CHECK(edbuf_undo(&e));
	CHECK_STR(e.text.buf, "total = 10");
	/* Backspace and Delete delete it, and are no kill; a paste replaces it. */
	edbuf_home(&e);
	edbuf_mark(&e);
	edbuf_right(&e);
	CHECK(edbuf_backspace(&e));
	CHECK_STR(e.text.buf, "otal = 10");
	CHECK_STR(clip.buf, "total");
	edbuf_end(&e);
	edbuf_mark(&e);
	edbuf_home(&e);					/* the anchor after the cursor */
	CHECK(edbuf_selection(&e, &from, &to) && from == 0 && to == 9);
	CHECK(edbuf_insert(&e, "a = 1\nb = 2", 11) == 0);
	CHECK_STR(e.text.buf, "a = 1\nb = 2");
	/* Across lines, with multibyte characters; Enter replaces it too. */
	edbuf_set(&e, "x = 'h\xc3\xa9'\ny");
	e.cur = 4;
	edbuf_mark(&e);
	CHECK(edbuf_down(&e) && e.cur == 11);
	CHECK(edbuf_selection(&e, &from, &to) && from == 4 && to == 11);
	edbuf_newline(&e, 0);
	CHECK_STR(e.text.buf, "x = \n");
	CHECK(edbuf_undo(&e));
	CHECK_STR(e.text.buf, "x = 'h\xc3\xa9'\ny");
	/* An edit elsewhere (a kill) drops the anchor, and fills the clipboard. */
	e.cur = 0;
	edbuf_mark(&e);
	edbuf_end(&e);
	edbuf_kill_right(&e);
	CHECK_STR(clip.buf, "\n");
	CHECK(!edbuf_selection(&e, &from, &to));
	edbuf_release(&e);
	strbuf_release(&clip);
}

/* Feed `keys` to vi mode, one character each; the last result. */
static enum vi_result vi_keys(struct vi *v, struct edbuf *e, struct strbuf *reg, const char *keys)
{
	enum vi_result r = VI_PASS;

	for (const char *k = keys; *k; k++)
		r = vi_key(v, e, reg, (wint_t)(unsigned char)*k);
	return r;
}

/* vi mode: motions, operators with counts, the register, undo, what is not vi's. */
static void test_vi(void)
{
	struct edbuf e;
	struct strbuf reg = STRBUF_INIT;
	struct vi v;
	char pending[32];

	edbuf_init(&e);
	vi_init(&v);
	CHECK(v.mode == VI_INSERT);
	CHECK(vi_key(&v, &e, &reg, 'x') == VI_PASS);	/* insert mode: the editor types it */
	edbuf_set(&e, "alpha beta.gamma  delta");
	CHECK(vi_key(&v, &e, &reg, 27) == VI_TAKEN && v.mode == VI_NORMAL);
	CHECK(e.cur == 22);				/* onto the last character */
	vi_keys(&v, &e, &reg, "0w");
	CHECK(e.cur == 6);
	vi_keys(&v, &e, &reg, "w");
	CHECK(e.cur == 10);				/* '.' is a word of its own */
	vi_keys(&v, &e, &reg, "2w");
	CHECK(e.cur == 18);
	vi_keys(&v, &e, &reg, "b");
	CHECK(e.cur == 11);
	vi_keys(&v, &e, &reg, "e");
	CHECK(e.cur == 15);
	vi_keys(&v, &e, &reg, "$");
	CHECK(e.cur == 22);
	vi_keys(&v, &e, &reg, "^");
	CHECK(e.cur == 0);
	/* Operators: dw, d2w, cw (to the word's end), x with a count, D, p. */
	CHECK(vi_keys(&v, &e, &reg, "dw") == VI_TAKEN);
	CHECK_STR(e.text.buf, "beta.gamma  delta");
	CHECK_STR(reg.buf, "alpha ");
	vi_keys(&v, &e, &reg, "d2w");
	CHECK_STR(e.text.buf, "gamma  delta");
	vi_keys(&v, &e, &reg, "cw");
	CHECK(v.mode == VI_INSERT);
	CHECK_STR(e.text.buf, "  delta");		/* the blanks after the word stay */
	edbuf_insert(&e, "g", 1);
	vi_key(&v, &e, &reg, 27);
	vi_keys(&v, &e, &reg, "$3x");			/* x stops at the line's end */
	CHECK_STR(e.text.buf, "g  delt");
	vi_keys(&v, &e, &reg, "0lD");
	CHECK_STR(e.text.buf, "g");
	CHECK_STR(reg.buf, "  delt");
	vi_keys(&v, &e, &reg, "p");
	CHECK_STR(e.text.buf, "g  delt");
	CHECK(e.cur == 6);				/* on the last character put */
	vi_keys(&v, &e, &reg, "u");
	CHECK_STR(e.text.buf, "g");
	vi_keys(&v, &e, &reg, "\x12");			/* Ctrl-R */
	CHECK_STR(e.text.buf, "g  delt");
	/* Lines: dd with a count, yy, p below, P above, gg, G, j with its column. */
	edbuf_set(&e, "one\n  two\nthree\nfour");
	vi_keys(&v, &e, &reg, "gg");
	CHECK(e.cur == 0);
	vi_keys(&v, &e, &reg, "j");
	CHECK(e.cur == 4);				/* column 0 of line 2, as vi keeps it */
	vi_keys(&v, &e, &reg, "2dd");
	CHECK_STR(e.text.buf, "one\nfour");
	CHECK_STR(reg.buf, "  two\nthree\n");
	vi_keys(&v, &e, &reg, "kp");
	CHECK_STR(e.text.buf, "one\n  two\nthree\nfour");
	CHECK(e.cur == 6);				/* on the first non-blank put */
	vi_keys(&v, &e, &reg, "Gyy");
	vi_keys(&v, &e, &reg, "ggP");
	CHECK_STR(e.text.buf, "four\none\n  two\nthree\nfour");
	vi_keys(&v, &e, &reg, "3G");
	CHECK(edbuf_line(&e) == 2);
	vi_keys(&v, &e, &reg, "Gdd");			/* the last line: the newline before it goes */
	CHECK_STR(e.text.buf, "four\none\n  two\nthree");
	vi_keys(&v, &e, &reg, "cc");
	CHECK_STR(e.text.buf, "four\none\n  two\n");
	CHECK(v.mode == VI_INSERT);
	vi_key(&v, &e, &reg, 27);
	/* o, O keep the indent; A, I; Enter runs; Esc with nothing half typed is not vi's. */
	edbuf_set(&e, "if x:\n    y");
	vi_key(&v, &e, &reg, 27);
	vi_keys(&v, &e, &reg, "O");
	CHECK_STR(e.text.buf, "if x:\n    \n    y");
	CHECK(e.cur == 10 && v.mode == VI_INSERT);
	vi_key(&v, &e, &reg, 27);
	vi_keys(&v, &e, &reg, "ggA");
	CHECK(e.cur == 5);
	vi_key(&v, &e, &reg, 27);
	CHECK(vi_key(&v, &e, &reg, '\r') == VI_RUN);
	CHECK(vi_key(&v, &e, &reg, 27) == VI_PASS);
	/* Half typed: the status line shows it; Esc forgets it; junk is dropped. */
	vi_keys(&v, &e, &reg, "2d3");
	vi_pending(&v, pending, sizeof(pending));
	CHECK_STR(pending, "2d3");
	CHECK(vi_key(&v, &e, &reg, 27) == VI_TAKEN);
	vi_pending(&v, pending, sizeof(pending));
	CHECK_STR(pending, "");
	CHECK(vi_keys(&v, &e, &reg, "dz") == VI_TAKEN);	/* no such motion: nothing */
	CHECK_STR(e.text.buf, "if x:\n    \n    y");
	CHECK(vi_keys(&v, &e, &reg, "0yw") == VI_YANKED);
	CHECK_STR(reg.buf, "if ");
	edbuf_release(&e);
	strbuf_release(&reg);
}

/* The class string of one line, one letter per byte: t k b s n c d m. */
static char *classes(const char *line, int *state)
{
	static char out[256];
	unsigned char cls[256];
	size_t len = strlen(line);

	*state = highlight_line(line, len, *state, cls);
	for (size_t i = 0; i < len; i++)
		out[i] = "tkbsncdm"[cls[i]];
	out[len] = '\0';
	return out;
}

static void test_highlight(void)
{
	int st = HL_STATE_NORMAL;

	CHECK_STR(classes("def f(x): return 42  # hi", &st), "kkktttttttkkkkkktnnttcccc");
	CHECK(st == HL_STATE_NORMAL);
	CHECK_STR(classes("print('a#b', 1.5e3)", &st), "bbbbbtsssssttnnnnnt");
	CHECK_STR(classes("x = f\"{y}\" + rb'z'", &st), "ttttsssssstttsssss");
	CHECK_STR(classes("s = \"\"\"open", &st), "ttttsssssss");
	CHECK(st == HL_STATE_TRIPLE_DOUBLE);
	CHECK_STR(classes("still \"\"\" + len", &st), "ssssssssstttbbb");
	CHECK(st == HL_STATE_NORMAL);
	CHECK_STR(classes("@dataclass", &st), "dddddddddd");
	CHECK_STR(classes("%timeit x", &st), "mmmmmmmmm");
	CHECK_STR(classes("!ls", &st), "mmm");
	CHECK_STR(classes("obj.print", &st), "ttttttttt");	/* an attribute, not the builtin */
	CHECK_STR(classes("Trueish", &st), "ttttttt");
	CHECK(!strcmp(highlight_class_name(HL_KEYWORD), "keyword"));
}

static void test_highlight_r(void)
{
	int st = HL_STATE_NORMAL;

	highlight_set_language("R");
	CHECK_STR(classes("f <- function(x) x + 1L  # hi", &st), "tttttkkkkkkkkttttttttnnttcccc");
	CHECK(st == HL_STATE_NORMAL);
	CHECK_STR(classes("print('a#b'); is.na(NA)", &st), "bbbbbtssssstttttttttkkt");
	CHECK_STR(classes("x %in% y; my.var$print(2e-3)", &st), "ttbbbbtttttttttttttttttnnnnt");
	/* a string spans lines */
	CHECK_STR(classes("s <- \"open", &st), "tttttsssss");
	CHECK(st != HL_STATE_NORMAL);
	CHECK_STR(classes("still\" + TRUE", &st), "sssssstttkkkk");
	CHECK(st == HL_STATE_NORMAL);
	/* raw strings, with dashes, may hold quotes and span lines */
	CHECK_STR(classes("r\"(a\"b)\" 1", &st), "sssssssstn");
	CHECK_STR(classes("x <- R'--[", &st), "tttttsssss");
	CHECK(st != HL_STATE_NORMAL);
	CHECK_STR(classes("]' ]-' ]--' F", &st), "ssssssssssstk");
	CHECK(st == HL_STATE_NORMAL);
	CHECK_STR(classes("`my var` <- 0x1F", &st), "ttttttttttttnnnn");
	/* no IPython magics in R: % and ! are operators */
	CHECK_STR(classes("!ok", &st), "ttt");
	highlight_set_language("python");
	CHECK_STR(classes("%timeit x", &st), "mmmmmmmmm");
}

static void test_sgr(void)
{
	struct sgr_attr a;

	sgr_reset(&a);
	CHECK(sgr_take("\x1b[1;31mx", 8, &a) == 7);
	CHECK(a.fg == 1 && a.bg == SGR_DEFAULT && (a.flags & SGR_BOLD));
	CHECK(sgr_take("\x1b[38;5;208;48;5;17m", 19, &a) == 19);
	CHECK(a.fg == 208 && a.bg == 17);
	CHECK(sgr_take("\x1b[38;2;255;0;0m", 15, &a) == 15 && a.fg == 196);
	CHECK(sgr_take("\x1b[94;4m", 7, &a) == 7 && a.fg == 12 && (a.flags & SGR_UNDERLINE));
	CHECK(sgr_take("\x1b[39;49;22m", 11, &a) == 11);
	CHECK(a.fg == SGR_DEFAULT && a.bg == SGR_DEFAULT && !(a.flags & SGR_BOLD));
	CHECK(sgr_take("\x1b[m", 3, &a) == 3 && a.flags == 0);
	CHECK(sgr_take("\x1b[2J", 4, &a) == 0);		/* not SGR */
	CHECK(sgr_take("\x1b[31", 4, &a) == 0);		/* cut off */
	CHECK(sgr_take("\x1b[38;5;999m", 11, &a) == 11 && a.fg == SGR_DEFAULT);
	CHECK(sgr_rgb_to_256(0, 0, 0) == 16);
	CHECK(sgr_rgb_to_256(128, 128, 128) == 244);
	CHECK(sgr_to_8(196) == 1 && sgr_to_8(9) == 1 && sgr_to_8(SGR_DEFAULT) == SGR_DEFAULT);
	CHECK(sgr_to_8(21) == 4 && sgr_to_16(231) == 15 && sgr_to_8(3) == 3);
}

/* Sanitised output keeps SGR for the SGR parser and drops every other sequence. */
static void test_output(void)
{
	struct outmodel m;
	struct out_cell *c;
	const char *hostile = "\x1b]0;HACKED\x07\x1b]52;c;aGk=\x07\x1b[2J\x1b[H\x1b[31mred\x1b[0m ok\n";

	outmodel_init(&m, 64);
	c = outmodel_add(&m, 7, "print(1)");
	CHECK(outmodel_find(&m, 7) == c && !outmodel_find(&m, 8));
	outmodel_cell_append(&m, c, OUT_STDOUT, hostile, strlen(hostile));
	CHECK(c->nchunks == 1);
	CHECK_STR(c->chunks[0].text.buf, "\x1b[31mred\x1b[0m ok\n");
	/* A sequence split over two events is still caught. */
	outmodel_cell_append(&m, c, OUT_STDOUT, "a\x1b]0;T", 6);
	outmodel_cell_append(&m, c, OUT_STDOUT, "ITLE\x07" "b\n", 7);
	CHECK_STR(c->chunks[0].text.buf, "\x1b[31mred\x1b[0m ok\nab\n");
	/* Carriage return rewinds the line. */
	outmodel_cell_append(&m, c, OUT_STDOUT, "10%\r50%\r\n", 9);
	CHECK(strstr(c->chunks[0].text.buf, "ab\n50%\n") != NULL);
	outmodel_cell_append(&m, c, OUT_STDERR, "warn\n", 5);
	CHECK(c->nchunks == 2 && c->chunks[1].kind == OUT_STDERR);
	/* Past the bound: dropped, counted, marked. */
	outmodel_cell_append(&m, c, OUT_STDOUT, "0123456789012345678901234567890123456789", 40);
	CHECK(c->stored <= 64 && c->dropped > 0);
	outmodel_cell_append(&m, c, OUT_ERROR, "Traceback\n", 10);	/* errors still show */
	outmodel_cell_finish(c, 0.5);
	CHECK(c->done && c->chunks[c->nchunks - 1].kind == OUT_TRUNCATED);
	CHECK(strstr(c->chunks[c->nchunks - 1].text.buf, "truncated") != NULL);
	CHECK(c->chunks[c->nchunks - 2].kind == OUT_ERROR);
	outmodel_cell_plot(&m, c, 3, 640, 480);
	CHECK_STR(c->chunks[c->nchunks - 1].text.buf, "[plot 3: 640x480 PNG]\n");
	CHECK(outmodel_bytes(&m) > 0);
	/* Past the total budget the oldest finished cells lose their output, not their code. */
	{
		struct out_cell *c2 = outmodel_add(&m, 8, "2");
		outmodel_cell_append(&m, c2, OUT_STDOUT, "fresh\n", 6);
		outmodel_cell_finish(c2, 0);
		CHECK(outmodel_trim(&m, 10) > 0);
		CHECK(c->nchunks == 1 && c->chunks[0].kind == OUT_TRUNCATED);
		CHECK(strstr(c->chunks[0].text.buf, "dropped to save memory") != NULL);
		CHECK_STR(c->code, "print(1)");
		CHECK_STR(c2->chunks[0].text.buf, "fresh\n");
		CHECK(outmodel_trim(&m, 1 << 20) == 0);
	}
	outmodel_release(&m);
}

static void test_theme(void)
{
	struct theme t;
	struct strbuf err = STRBUF_INIT;
	int c;

	CHECK(theme_parse_color("red", &c) == 0 && c == 1);
	CHECK(theme_parse_color("bright-blue", &c) == 0 && c == 12);
	CHECK(theme_parse_color("color208", &c) == 0 && c == 208);
	CHECK(theme_parse_color("#ff0000", &c) == 0 && c == 196);
	CHECK(theme_parse_color("default", &c) == 0 && c == SGR_DEFAULT);
	CHECK(theme_parse_color("color256", &c) < 0 && theme_parse_color("mauve", &c) < 0);
	theme_init(&t);
	CHECK(theme_parse(&t, "# a theme\nnormal = white on black\n"
			      "status-busy = black on #ffff00 bold  # trailing comment\n"
			      "syntax-keyword = color208 underline\n", "t", &err) == 0);
	CHECK_STR(t.name, "t");
	CHECK(t.style[TH_NORMAL].fg == 7 && t.style[TH_NORMAL].bg == 0);
	CHECK(t.style[TH_STATUS_BUSY].fg == 0 && t.style[TH_STATUS_BUSY].bg == 226);
	CHECK(t.style[TH_STATUS_BUSY].attrs == SGR_BOLD);
	CHECK(t.style[TH_SYNTAX_KEYWORD].bg == 0);	/* default bg: normal's */
	CHECK(t.style[TH_ERROR].fg == 7);		/* left out: like normal */
	theme_degrade(&t, 8);
	CHECK(t.style[TH_SYNTAX_KEYWORD].fg < 8 && t.style[TH_STATUS_BUSY].bg == 3);
	theme_degrade(&t, 0);
	CHECK(t.style[TH_STATUS_BUSY].fg == SGR_DEFAULT);
	CHECK(t.style[TH_STATUS_BUSY].attrs & SGR_REVERSE);	/* still stands out */
	CHECK(theme_parse(&t, "normal = white\nbogus = red\n", "bad", &err) < 0);
	CHECK_STR(err.buf, "bad:2: unknown element 'bogus'");
	strbuf_reset(&err);
	CHECK(theme_parse(&t, "error = red on\n", "bad", &err) < 0);
	CHECK(strstr(err.buf, "bad:1: error: 'on' needs a colour") != NULL);
	strbuf_reset(&err);
	CHECK(theme_parse(&t, "error = red blue\n", "bad", &err) < 0);
	CHECK(strstr(err.buf, "'blue' is not a colour or attribute") != NULL);
	strbuf_reset(&err);
	CHECK(theme_parse(&t, theme_builtin_dark, "dark", &err) == 0);
	/* Every shipped theme parses, and is found by name in a directory list. */
	{
		const char *dirs[] = { "/nonexistent", THEMES_DIR, NULL };
		const char *names[] = { "dark", "light", "high-contrast", "monochrome" };
		for (size_t i = 0; i < 4; i++) {
			strbuf_reset(&err);
			CHECK(theme_load(&t, names[i], dirs, &err) == 0);
			CHECK_STR(t.name, names[i]);
			if (err.len)
				tap_note(err.buf);
		}
		strbuf_reset(&err);
		CHECK(theme_load(&t, "nope", dirs, &err) < 0);
		CHECK_STR(err.buf, "no theme called 'nope'");
	}
	theme_release(&t);
	strbuf_release(&err);
}


/* clear_output: at once, or (wait) just before the next output; a partial line goes too. */
static void test_output_clear(void)
{
	struct outmodel m;
	struct out_cell *c;

	outmodel_init(&m, 64);
	c = outmodel_add(&m, 1, "loop");
	outmodel_cell_append(&m, c, OUT_STDOUT, "step 1\npart\x1b]0;", 15);
	outmodel_cell_plot(&m, c, 0, 10, 10);
	outmodel_cell_clear(c, 0);
	CHECK(c->nchunks == 0 && c->stored == 0);
	outmodel_cell_append(&m, c, OUT_STDOUT, "T\x07step 2\n", 9);	/* the cut OSC is forgotten */
	CHECK(c->nchunks == 1);
	CHECK_STR(c->chunks[0].text.buf, "Tstep 2\n");
	/* wait: the old output stays until something new comes, then only that shows. */
	outmodel_cell_clear(c, 1);
	CHECK(c->nchunks == 1);
	outmodel_cell_append(&m, c, OUT_STDERR, "step 3\n", 7);
	CHECK(c->nchunks == 1 && c->chunks[0].kind == OUT_STDERR);
	CHECK_STR(c->chunks[0].text.buf, "step 3\n");
	outmodel_cell_clear(c, 1);
	outmodel_cell_plot(&m, c, 2, 10, 10);		/* a figure is an output too */
	CHECK(c->nchunks == 1 && c->chunks[0].kind == OUT_PLOT && c->chunks[0].plot_index == 2);
	/* A note of the host's (the cell's end) is not an output: a pending clear waits on. */
	outmodel_cell_clear(c, 1);
	outmodel_cell_append(&m, c, OUT_INFO, "[interrupted]\n", 14);
	CHECK(c->nchunks == 2 && c->chunks[0].kind == OUT_PLOT);
	outmodel_release(&m);
}

/* Display ids: a display keeps a chunk of its own; an update, from any cell, replaces it. */
static void test_output_display(void)
{
	struct outmodel m;
	struct out_cell *c1, *c2;

	outmodel_init(&m, 64);
	c1 = outmodel_add(&m, 1, "h = display('a', display_id=True)");
	outmodel_cell_append(&m, c1, OUT_STDOUT, "before\n", 7);
	outmodel_cell_display(&m, c1, "d1", "'a'\n", 4);
	outmodel_cell_append(&m, c1, OUT_STDOUT, "after\n", 6);	/* not merged into the display */
	CHECK(c1->nchunks == 3);
	CHECK_STR(c1->chunks[1].text.buf, "'a'\n");
	outmodel_cell_plot(&m, c1, 4, 8, 8);
	outmodel_cell_tag(c1, c1->nchunks - 1, "d2");
	outmodel_cell_finish(c1, 0);
	c2 = outmodel_add(&m, 2, "h.update('b')");
	c1->rows_width = 80;
	CHECK(outmodel_update_text(&m, "d1", "'b'\x1b]0;T\x07\n", 10) == 1);
	CHECK_STR(c1->chunks[1].text.buf, "'b'\n");		/* sanitised */
	CHECK(c1->rows_width == 0);				/* laid out again */
	CHECK_STR(c1->chunks[0].text.buf, "before\n");
	CHECK_STR(c1->chunks[2].text.buf, "after\n");
	/* A text display may become a plot and back. */
	CHECK(outmodel_update_plot(&m, "d1", 5, 16, 16) == 1);
	CHECK(c1->chunks[1].kind == OUT_PLOT && c1->chunks[1].plot_index == 5);
	CHECK(outmodel_update_plot(&m, "d2", 6, 16, 16) == 1 && c1->chunks[3].plot_index == 6);
	CHECK(outmodel_update_text(&m, "nosuch", "x\n", 2) == 0);
	CHECK(c2->nchunks == 0);				/* an update shows nothing new */
	/* Cleared, a display's chunk goes with its id. */
	outmodel_cell_clear(c1, 0);
	CHECK(outmodel_update_text(&m, "d1", "x\n", 2) == 0);
	outmodel_release(&m);
}

/* Type `s` a character at a time, as the keys come. */
static void type(struct edbuf *e, const char *s)
{
	while (*s) {
		size_t n = 1;
		while (((unsigned char)s[n] & 0xc0) == 0x80)
			n++;
		edbuf_insert(e, s, n);
		s += n;
	}
}

/* Undo and redo: typing in a row is one step, other changes one each, the caps hold. */
static void test_edbuf_undo(void)
{
	struct edbuf e;

	edbuf_init(&e);
	CHECK(!edbuf_undo(&e) && !edbuf_redo(&e));
	type(&e, "x = 12");
	edbuf_newline(&e, 1);
	type(&e, "y = x \xc3\xa9");
	CHECK(edbuf_backspace(&e) && edbuf_backspace(&e));	/* two Backspaces: one step */
	CHECK_STR(e.text.buf, "x = 12\ny = x");
	CHECK(edbuf_undo(&e));
	CHECK_STR(e.text.buf, "x = 12\ny = x \xc3\xa9");
	CHECK(edbuf_undo(&e));
	CHECK_STR(e.text.buf, "x = 12\n");
	CHECK(edbuf_undo(&e));
	CHECK_STR(e.text.buf, "x = 12");
	CHECK(e.cur == 6);
	CHECK(edbuf_undo(&e));
	CHECK_STR(e.text.buf, "");
	CHECK(!edbuf_undo(&e));
	CHECK(edbuf_redo(&e) && edbuf_redo(&e));
	CHECK_STR(e.text.buf, "x = 12\n");
	/* A change drops what could be redone. */
	type(&e, "z");
	CHECK(!edbuf_redo(&e));
	/* Typing somewhere else is a step of its own. */
	e.cur = 0;
	type(&e, "#");
	CHECK_STR(e.text.buf, "#x = 12\nz");
	CHECK(edbuf_undo(&e));
	CHECK_STR(e.text.buf, "x = 12\nz");
	/* Kills, word deletes, set and replace are steps; load forgets them. */
	edbuf_end(&e);
	edbuf_kill_left(&e);
	edbuf_set(&e, "other");
	edbuf_replace(&e, 0, 2, "br");
	CHECK_STR(e.text.buf, "brher");
	CHECK(edbuf_undo(&e) && edbuf_undo(&e));
	CHECK_STR(e.text.buf, "\nz");
	CHECK(edbuf_undo(&e));
	CHECK_STR(e.text.buf, "x = 12\nz");
	edbuf_load(&e, "a new cell");
	CHECK(!edbuf_undo(&e) && !edbuf_redo(&e));
	/* The caps: at most EDBUF_UNDO_STEPS steps, the oldest dropped. */
	for (int i = 0; i < EDBUF_UNDO_STEPS + 50; i++)
		edbuf_kill_left(&e), type(&e, "ab");
	CHECK(e.undo.n <= EDBUF_UNDO_STEPS && e.undo.bytes <= EDBUF_UNDO_BYTES);
	{
		int n = 0;
		while (edbuf_undo(&e))
			n++;
		CHECK(n == EDBUF_UNDO_STEPS);
	}
	/* ... and at most EDBUF_UNDO_BYTES: big texts push the old out. */
	{
		char *big = malloc(EDBUF_MAX / 2 + 1);
		memset(big, 'q', EDBUF_MAX / 2);
		big[EDBUF_MAX / 2] = '\0';
		for (int i = 0; i < 40; i++)
			edbuf_set(&e, i % 2 ? big : "");
		CHECK(e.undo.bytes <= EDBUF_UNDO_BYTES && e.undo.n < 40);
		free(big);
	}
	edbuf_release(&e);
}

/* Word motions and deletes, as readline has them. */
static void test_edbuf_words(void)
{
	struct edbuf e;

	edbuf_init(&e);
	edbuf_set(&e, "df.plot(x_1, y)\nnext");
	e.cur = 15;				/* after ')' */
	CHECK(edbuf_word_left(&e) && e.cur == 13);	/* y */
	CHECK(edbuf_word_left(&e) && e.cur == 8);	/* x_1 */
	CHECK(edbuf_word_left(&e) && e.cur == 3);	/* plot */
	CHECK(edbuf_word_right(&e) && e.cur == 7);
	e.cur = 15;
	CHECK(edbuf_word_right(&e) && e.cur == 20);	/* over the newline: the end of next */
	CHECK(!edbuf_word_right(&e));
	e.cur = 0;
	CHECK(!edbuf_word_left(&e));
	/* Alt-D: to the end of the next word; Ctrl-Backspace: to the start of the last. */
	e.cur = 7;
	CHECK(edbuf_kill_word_right(&e));
	CHECK_STR(e.text.buf, "df.plot, y)\nnext");
	CHECK(edbuf_kill_word_left(&e, 0));
	CHECK_STR(e.text.buf, "df., y)\nnext");
	/* Ctrl-W: back to the blank before. */
	edbuf_set(&e, "print(a.b) foo.bar(1)  ");
	CHECK(edbuf_kill_word_left(&e, 1));
	CHECK_STR(e.text.buf, "print(a.b) ");
	CHECK(edbuf_undo(&e));
	CHECK_STR(e.text.buf, "print(a.b) foo.bar(1)  ");
	/* UTF-8 letters are word letters; the cursor stays on a boundary. */
	edbuf_set(&e, "caf\xc3\xa9 cr\xc3\xa8me");
	CHECK(edbuf_word_left(&e) && e.cur == 6);
	CHECK(edbuf_word_left(&e) && e.cur == 0);
	CHECK(edbuf_word_right(&e) && e.cur == 5);
	edbuf_release(&e);
}

static const struct tap_test tests[] = {
	{ "edbuf", test_edbuf },
	{ "edbuf_undo", test_edbuf_undo },
	{ "edbuf_words", test_edbuf_words },
	{ "edbuf_selection", test_edbuf_selection },
	{ "vi", test_vi },
	{ "highlight", test_highlight },
	{ "highlight_r", test_highlight_r },
	{ "sgr", test_sgr },
	{ "output", test_output },
	{ "output_clear", test_output_clear },
	{ "output_display", test_output_display },
	{ "theme", test_theme },
};

int main(int argc, char **argv)
{
	return tap_main(argc, argv, tests, ARRAY_SIZE(tests));
}
