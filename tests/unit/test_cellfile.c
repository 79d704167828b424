/* Unit tests of cell files, the outputs collector and the history store's reader. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cellfile.h"
#include "history.h"
#include "outputs.h"
#include "util.h"
#include "../tap.h"

/* Parse percent text; the cells array. */
static cJSON *percent(const char *text, cJSON **nb)
{
	*nb = cellfile_parse_percent(text, strlen(text));
	return cJSON_GetObjectItemCaseSensitive(*nb, "cells");
}

/* Source of cell i, joined (static buffer freed at the next call). */
static const char *src(const cJSON *cells, int i)
{
	static char *last;
	free(last);
	last = cellfile_join(cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(cells, i), "source"));
	return last;
}

static const char *meta_str(const cJSON *cells, int i, const char *key)
{
	const cJSON *md = cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(cells, i), "metadata");
	return cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(md, key));
}

static void test_percent_markers(void)
{
	cJSON *nb, *cells;

	/* No markers: one code cell. */
	cells = percent("x = 1\ny = 2\n", &nb);
	CHECK(cJSON_GetArraySize(cells) == 1);
	CHECK_STR(src(cells, 0), "x = 1\ny = 2");
	cJSON_Delete(nb);

	/* # %% and #%%, blank lines between cells dropped, text before the first marker. */
	cells = percent("import os\n\n# %%\na = 1\n\n\n#%%\nb = 2\n", &nb);
	CHECK(cJSON_GetArraySize(cells) == 3);
	CHECK_STR(src(cells, 0), "import os");
	CHECK_STR(src(cells, 1), "a = 1");
	CHECK_STR(src(cells, 2), "b = 2");
	cJSON_Delete(nb);

	/* A commented cell magic is not a marker; "# %%%" still is. */
	cells = percent("# %%\n# %%time\nx = 1\n# %%% deep\ny\n", &nb);
	CHECK(cJSON_GetArraySize(cells) == 2);
	CHECK_STR(src(cells, 0), "%%time\nx = 1");
	CHECK_STR(meta_str(cells, 1, "title"), "deep");
	cJSON_Delete(nb);

	/* Titles, cell types, key=value and JSON metadata. */
	cells = percent("# %% Intro [markdown]\n# # Head\n# text\n#\n"
			"# %% [md]\n# more\n"
			"# %% [raw]\n# raw text\n"
			"# %% load data tags=[\"raises-exception\", \"x\"] slideshow={\"a\": 1}\n1/0\n"
			"# %% {\"tags\": [\"skip-execution\"]}\nwhile True: pass\n", &nb);
	CHECK(cJSON_GetArraySize(cells) == 5);
	CHECK_STR(cellfile_cell_type(cJSON_GetArrayItem(cells, 0)), "markdown");
	CHECK_STR(meta_str(cells, 0, "title"), "Intro");
	CHECK_STR(src(cells, 0), "# Head\ntext\n");
	CHECK_STR(cellfile_cell_type(cJSON_GetArrayItem(cells, 1)), "markdown");
	CHECK_STR(cellfile_cell_type(cJSON_GetArrayItem(cells, 2)), "raw");
	CHECK_STR(src(cells, 2), "raw text");
	CHECK_STR(meta_str(cells, 3, "title"), "load data");
	CHECK(cellfile_has_tag(cJSON_GetArrayItem(cells, 3), "raises-exception"));
	CHECK(cellfile_has_tag(cJSON_GetArrayItem(cells, 3), "x"));
	CHECK(cellfile_has_tag(cJSON_GetArrayItem(cells, 4), "skip-execution"));
	CHECK(!cellfile_has_tag(cJSON_GetArrayItem(cells, 4), "x"));
	cJSON_Delete(nb);
}

static void test_percent_header_magics(void)
{
	cJSON *nb, *cells;

	/* The YAML header is not a cell; commented magics come back; CRLF is fine. */
	cells = percent("# ---\r\n# jupyter:\r\n#   kernelspec:\r\n#     name: python3\r\n# ---\r\n\r\n"
			"# %%\r\n# %matplotlib inline\r\n# !ls\r\n# a comment\r\n  # %time x\r\nx = 1\r\n",
			&nb);
	CHECK(cJSON_GetArraySize(cells) == 1);
	CHECK_STR(src(cells, 0), "%matplotlib inline\n!ls\n# a comment\n  %time x\nx = 1");
	cJSON_Delete(nb);

	/* An empty file and an empty cell. */
	cells = percent("", &nb);
	CHECK(cJSON_GetArraySize(cells) == 0);
	cJSON_Delete(nb);
	cells = percent("# %%\n# %%\nx\n", &nb);
	CHECK(cJSON_GetArraySize(cells) == 2);
	CHECK_STR(src(cells, 0), "");
	cJSON_Delete(nb);
}

static void test_percent_write(void)
{
	cJSON *nb, *again;
	struct strbuf out = STRBUF_INIT;
	const char *text = "# %% [markdown]\n# # T\n\n# %% tags=[\"a\"]\n%time x = 1\nprint(x)\n";

	nb = cellfile_parse_percent(text, strlen(text));
	strbuf_init(&out, 0);
	cellfile_write_percent(nb, &out);
	CHECK_STR(out.buf, "# %% [markdown]\n# # T\n\n# %% tags=[\"a\"]\n# %time x = 1\nprint(x)\n");
	again = cellfile_parse_percent(out.buf, out.len);
	CHECK_STR(src(cJSON_GetObjectItemCaseSensitive(again, "cells"), 1), "%time x = 1\nprint(x)");
	cJSON_Delete(nb);
	cJSON_Delete(again);
	strbuf_release(&out);
}

/* Make a notebook with nbformat itself (the real one) and check read -> write is exact. */
static void test_ipynb_roundtrip(void)
{
	char dir[] = "/tmp/cellbox-unit-nb-XXXXXX";
	char *path, *cmd;
	struct strbuf in = STRBUF_INIT, out = STRBUF_INIT, err = STRBUF_INIT;
	cJSON *nb;

	CHECK(mkdtemp(dir) != NULL);
	path = xasprintf("%s/ref.ipynb", dir);
	cmd = xasprintf("%s - '%s' <<'PY'\n"
		"import sys, nbformat\n"
		"from nbformat.v4 import new_notebook, new_code_cell, new_markdown_cell, new_raw_cell, new_output\n"
		"nb = new_notebook(metadata={'kernelspec': {'name': 'python3', 'display_name': 'Python 3'},\n"
		"    'z': [1, 2.5, -3e-05, None, True, {}], 'a': 'quote \" back \\\\ tab \\t ctl \\x01 é €'})\n"
		"nb.cells = [new_markdown_cell('# Title\\n\\nünï\\r\\nline\\u2028x'), new_raw_cell(''),\n"
		"  new_code_cell('print(1)\\nx', execution_count=3, metadata={'tags': ['t']}, outputs=[\n"
		"    new_output('stream', name='stdout', text='1\\n2'),\n"
		"    new_output('execute_result', data={'text/plain': 'a\\nb', 'image/png': 'iVBORw0K',\n"
		"        'application/json': {'k': [1]}, 'text/html': '<b>x</b>'}, execution_count=3),\n"
		"    new_output('error', ename='E', evalue='v', traceback=['\\x1b[31mred\\x1b[0m'])]),\n"
		"  new_code_cell('')]\n"
		"nbformat.write(nb, sys.argv[1])\n"
		"PY", TEST_PYTHON, path);
	CHECK(system(cmd) == 0);
	CHECK(strbuf_read_file(&in, path, 1 << 20) == 0);
	nb = cellfile_parse_ipynb(in.buf, in.len, path, &err);
	CHECK(nb != NULL);
	cellfile_write_ipynb(nb, &out);
	CHECK(in.len == out.len && !memcmp(in.buf, out.buf, in.len));
	if (in.len != out.len || memcmp(in.buf, out.buf, in.len)) {
		tap_note("expected:");
		tap_note(in.buf);
		tap_note("got:");
		tap_note(out.buf);
	}
	cJSON_Delete(nb);
	unlink(path);
	rmdir(dir);
	free(path);
	free(cmd);
	strbuf_release(&in);
	strbuf_release(&out);
	strbuf_release(&err);
}

/* Numbers past a double's range read as infinities; what is written reads back as them. */
static void test_ipynb_huge_numbers(void)
{
	const char *text = "{\"cells\": [], \"metadata\": {\"big\": 1e999, \"neg\": -55E00040080237960648, "
		"\"long\": 5500040080240080237960648}, \"nbformat\": 4, \"nbformat_minor\": 5}";
	struct strbuf out = STRBUF_INIT, err = STRBUF_INIT;
	cJSON *nb = cellfile_parse_ipynb(text, strlen(text), "nb.ipynb", &err), *again = NULL;
	const cJSON *meta;

	CHECK(nb != NULL);
	if (!nb)
		return;
	cellfile_write_ipynb(nb, &out);
	CHECK(strstr(out.buf, "\"big\": 1e999,") != NULL);
	CHECK(strstr(out.buf, "\"neg\": -1e999") != NULL);
	CHECK(strstr(out.buf, "\"long\": 5.500040080240081e+24") != NULL);
	again = cellfile_parse_ipynb(out.buf, out.len, "again.ipynb", &err);
	CHECK(again != NULL);
	if (!again)
		tap_note(err.buf);
	meta = cJSON_GetObjectItemCaseSensitive(again, "metadata");
	CHECK(isinf(cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(meta, "big"))));
	CHECK(cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(meta, "neg")) < 0);
	cJSON_Delete(again);
	cJSON_Delete(nb);
	strbuf_release(&out);
	strbuf_release(&err);
}

/* Parse `text` as a notebook and return the error text (static). */
static const char *ipynb_error(const char *text)
{
	static struct strbuf err;
	cJSON *nb;

	strbuf_release(&err);
	strbuf_init(&err, 0);
	nb = cellfile_parse_ipynb(text, strlen(text), "nb.ipynb", &err);
	cJSON_Delete(nb);
	return nb ? NULL : err.buf;
}

static void test_ipynb_bad(void)
{
	const char *e;

	e = ipynb_error("{\n \"cells\": [\n  {,\n");
	CHECK(e && strstr(e, "nb.ipynb:3:") && strstr(e, "not valid JSON"));
	e = ipynb_error("{\"nbformat\": 3, \"nbformat_minor\": 0, \"cells\": [], \"metadata\": {}}");
	CHECK(e && strstr(e, "nbformat 3 is not supported"));
	e = ipynb_error("{\"nbformat\": 4, \"nbformat_minor\": 5, \"metadata\": {}}");
	CHECK(e && strstr(e, "cells is missing"));
	e = ipynb_error("{\"nbformat\": 4, \"nbformat_minor\": 5, \"metadata\": {}, \"cells\": "
			"[{\"cell_type\": \"code\", \"metadata\": {}, \"source\": \"x\"}]}");
	CHECK(e && strstr(e, "cell 1: outputs is missing"));
	{
		const char *old = "{\"nbformat\": 4, \"nbformat_minor\": 2, \"metadata\": {}, \"cells\": "
				  "[{\"cell_type\": \"code\", \"metadata\": {}, \"source\": \"x\", \"outputs\": []}]}";
		struct strbuf err = STRBUF_INIT;
		cJSON *nb = cellfile_parse_ipynb(old, strlen(old), "old.ipynb", &err);
		const cJSON *cell = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(nb, "cells"), 0);
		CHECK(nb != NULL);
		CHECK(cJSON_GetObjectItemCaseSensitive(nb, "nbformat_minor")->valueint == 5);
		CHECK(strlen(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(cell, "id"))) == 8);
		CHECK(cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(cell, "execution_count")));
		cJSON_Delete(nb);
		strbuf_release(&err);
	}
	{
		/* An output whose data is a list, not a mapping (found by fuzz_ipynb): written
		 * back as it came, its items have no names to look at. */
		const char *odd = "{\"nbformat\": 4, \"nbformat_minor\": 5, \"metadata\": {}, \"cells\": "
				  "[{\"cell_type\": \"code\", \"metadata\": {}, \"source\": \"x\", "
				  "\"execution_count\": 1, \"outputs\": [{\"output_type\": \"stream\", "
				  "\"name\": \"stdout\", \"data\": [\"a\\nb\"]}]}]}";
		struct strbuf err = STRBUF_INIT, out = STRBUF_INIT;
		cJSON *nb = cellfile_parse_ipynb(odd, strlen(odd), "odd.ipynb", &err);
		CHECK(nb != NULL);
		if (nb) {
			cellfile_write_ipynb(nb, &out);
			CHECK(strstr(out.buf, "\"a\\nb\"") != NULL);
		}
		cJSON_Delete(nb);
		strbuf_release(&err);
		strbuf_release(&out);
	}
	e = ipynb_error("[1, 2]");
	CHECK(e && strstr(e, "not a notebook"));
	e = ipynb_error("{\"nbformat\": 4, \"nbformat_minor\": 5, \"metadata\": {}, \"cells\": "
			"[{\"cell_type\": \"markdown\", \"metadata\": {}, \"source\": [\"x\"]}]}");
	CHECK(e == NULL);
}

/* Feed one event (its members in `json`, the type apart) to the collector. */
static void feed(struct outputs *o, enum session_event_type type, const char *json)
{
	struct event_store st = EVENT_STORE_INIT;
	struct session_event ev;
	char *line = xasprintf("{\"type\":\"%s\",%s", event_type_name(type), json + 1);

	CHECK(event_decode(&st, line, strlen(line), 1, &ev) == 0 && ev.type == type);
	outputs_event(o, &ev);
	event_store_release(&st);
	free(line);
}

static void test_outputs(void)
{
	struct outputs o;
	cJSON *list;
	char *text;
	struct strbuf sb = STRBUF_INIT;

	outputs_init(&o, "/nonexistent", OUTPUTS_EMBED_PNG, NULL, 64);
	feed(&o, SESSION_EV_STREAM, "{\"name\":\"stdout\",\"text\":\"10%\\r50%\"}");
	feed(&o, SESSION_EV_STREAM, "{\"name\":\"stdout\",\"text\":\"\\r100%\\nab\\bc\\n\"}");
	feed(&o, SESSION_EV_STREAM, "{\"name\":\"stderr\",\"text\":\"warn\\n\"}");
	feed(&o, SESSION_EV_STREAM, "{\"name\":\"stdout\",\"text\":\"end\\r\\n\"}");
	feed(&o, SESSION_EV_RESULT, "{\"execution_count\":4,\"data\":{\"text/plain\":\"42\"}}");
	feed(&o, SESSION_EV_ERROR, "{\"ename\":\"E\",\"evalue\":\"v\",\"traceback\":[\"t\"]}");
	feed(&o, SESSION_EV_STREAM, "{\"name\":\"stdout\",\"text\":\"0123456789012345678901234567890123456789012345678901234567890\"}");
	feed(&o, SESSION_EV_DONE, "{\"status\":\"error\",\"execution_count\":4,\"duration\":0.5}");
	list = outputs_finish(&o);
	CHECK(cJSON_GetArraySize(list) == 6);
	text = cJSON_PrintUnformatted(cJSON_GetArrayItem(list, 0));
	CHECK_STR(text, "{\"name\":\"stdout\",\"output_type\":\"stream\",\"text\":\"100%\\nac\\n\"}");
	cJSON_free(text);
	CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(list, 2), "text")),
		  "end\r\n");
	CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(list, 3), "output_type")),
		  "execute_result");
	CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(list, 4), "ename")), "E");
	CHECK(o.truncated);
	CHECK(strstr(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(list, 5), "text")),
		     "output truncated") != NULL);
	CHECK_STR(o.status, "error");
	CHECK(o.execution_count == 4 && o.duration == 0.5);
	cJSON_Delete(list);
	outputs_release(&o);

	strbuf_addstr(&sb, "a\rb\r\nx\b\by\n\bz");
	outputs_collapse(&sb);
	CHECK_STR(sb.buf, "b\r\n\by\n\bz");
	strbuf_release(&sb);
}

/* The text/plain of output `i` of a list. */
static const char *plain_of(const cJSON *list, int i)
{
	const cJSON *data = cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(list, i), "data");
	return cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(data, "text/plain"));
}

/* clear_output and display ids as nbclient applies them. */
static void test_outputs_displays(void)
{
	struct outputs o;
	cJSON *first, *second, *md;

	outputs_init(&o, "/nonexistent", OUTPUTS_EMBED_PNG | OUTPUTS_KEEP_DISPLAYS, NULL, 0);
	/* Every mime type and its metadata are kept. */
	feed(&o, SESSION_EV_DISPLAY, "{\"data\":{\"text/plain\":\"j\",\"image/jpeg\":\"/9j/\","
	     "\"application/json\":{\"a\":[1]}},\"metadata\":{\"image/jpeg\":{\"width\":40}}}");
	feed(&o, SESSION_EV_DISPLAY, "{\"display_id\":\"d\",\"data\":{\"text/plain\":\"one\"}}");
	feed(&o, SESSION_EV_STREAM, "{\"name\":\"stdout\",\"text\":\"between\\n\"}");
	feed(&o, SESSION_EV_DISPLAY, "{\"display_id\":\"d\",\"update\":true,"
	     "\"data\":{\"text/plain\":\"two\"},\"metadata\":{\"m\":1}}");
	feed(&o, SESSION_EV_DISPLAY, "{\"pager\":true,\"data\":{\"text/plain\":\"help\"}}");
	first = outputs_finish(&o);
	CHECK(cJSON_GetArraySize(first) == 3);
	CHECK(cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(
		cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(first, 0), "data"),
		"application/json")->child));
	md = cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(first, 0), "metadata");
	CHECK(cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(
		cJSON_GetObjectItemCaseSensitive(md, "image/jpeg"), "width")) == 40);
	CHECK_STR(plain_of(first, 1), "two");
	md = cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(first, 1), "metadata");
	CHECK(cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(md, "m")) == 1);

	/* The next cell: an update reaches the earlier cell's output; a new display with the
	 * same id updates the old ones too, then is shown itself. */
	feed(&o, SESSION_EV_DISPLAY, "{\"display_id\":\"d\",\"update\":true,"
	     "\"data\":{\"text/plain\":\"three\"}}");
	feed(&o, SESSION_EV_DISPLAY, "{\"display_id\":\"d\",\"data\":{\"text/plain\":\"four\"}}");
	CHECK_STR(plain_of(first, 1), "four");
	/* clear_output(wait=True): nothing goes until the next output comes. */
	feed(&o, SESSION_EV_STREAM, "{\"name\":\"stdout\",\"text\":\"0\\n\"}");
	feed(&o, SESSION_EV_CLEAR_OUTPUT, "{\"wait\":true}");
	feed(&o, SESSION_EV_DISPLAY, "{\"display_id\":\"d\",\"update\":true,"
	     "\"data\":{\"text/plain\":\"five\"}}");
	feed(&o, SESSION_EV_STREAM, "{\"name\":\"stdout\",\"text\":\"1\\n\"}");
	feed(&o, SESSION_EV_CLEAR_OUTPUT, "{\"wait\":true}");
	feed(&o, SESSION_EV_STREAM, "{\"name\":\"stdout\",\"text\":\"2\\n\"}");
	/* The cleared display of this cell is no longer updated; the earlier cell's is. */
	feed(&o, SESSION_EV_DISPLAY, "{\"display_id\":\"d\",\"update\":true,"
	     "\"data\":{\"text/plain\":\"six\"}}");
	second = outputs_finish(&o);
	CHECK(cJSON_GetArraySize(second) == 1);
	CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(
		cJSON_GetArrayItem(second, 0), "text")), "2\n");
	CHECK_STR(plain_of(first, 1), "six");
	/* clear_output() at once, and a wait that no output follows keeps what is there. */
	feed(&o, SESSION_EV_STREAM, "{\"name\":\"stdout\",\"text\":\"a\\n\"}");
	feed(&o, SESSION_EV_CLEAR_OUTPUT, "{\"wait\":false}");
	feed(&o, SESSION_EV_STREAM, "{\"name\":\"stdout\",\"text\":\"b\\n\"}");
	feed(&o, SESSION_EV_CLEAR_OUTPUT, "{\"wait\":true}");
	cJSON_Delete(second);
	second = outputs_finish(&o);
	CHECK(cJSON_GetArraySize(second) == 1);
	CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(
		cJSON_GetArrayItem(second, 0), "text")), "b\n");
	cJSON_Delete(second);
	outputs_release(&o);
	cJSON_Delete(first);

	/* Without OUTPUTS_KEEP_DISPLAYS an update reaches only the cell's own outputs. */
	outputs_init(&o, "/nonexistent", 0, NULL, 0);
	feed(&o, SESSION_EV_DISPLAY, "{\"display_id\":\"d\",\"data\":{\"text/plain\":\"one\"}}");
	first = outputs_finish(&o);
	feed(&o, SESSION_EV_DISPLAY, "{\"display_id\":\"d\",\"update\":true,"
	     "\"data\":{\"text/plain\":\"two\"}}");
	cJSON_Delete(outputs_finish(&o));
	CHECK_STR(plain_of(first, 0), "one");
	cJSON_Delete(first);
	outputs_release(&o);
}

/* The plot of a "plot" event of feed_all(): its index as said, a few bytes as its data. */
static struct session_plot test_plot = {
	.path = "plots/n.png", .ext = "png", .format = "png", .width = 4, .height = 2,
	.data = (const unsigned char *)"\x89PNG-bytes", .len = 10,
};

/* Feed event lines ("type {members}", NULL-ended) to every collector of `os`. */
static void feed_all(struct outputs **os, const char *const *lines)
{
	for (; *lines; lines++) {
		struct event_store st = EVENT_STORE_INIT;
		struct session_event ev;
		size_t t = strcspn(*lines, " ");
		char *line = xasprintf("{\"type\":\"%.*s\",%s", (int)t, *lines, *lines + t + 2);

		CHECK(event_decode(&st, line, strlen(line), 1, &ev) == 0);
		if (ev.type == SESSION_EV_DISPLAY && ev.display.plot) {
			test_plot.index = ev.display.plot->index;
			ev.display.plot = &test_plot;
		}
		if (ev.type == SESSION_EV_RESULT && ev.result.plot) {
			test_plot.index = ev.result.plot->index;
			ev.result.plot = &test_plot;
		}
		for (struct outputs **o = os; *o; o++)
			outputs_event(*o, &ev);
		event_store_release(&st);
		free(line);
	}
}

/* outputs_copy_shape()'s callback: the lent list as text. */
static int print_shape(const cJSON *list, void *data)
{
	*(char **)data = cJSON_PrintUnformatted(list);
	return 0;
}

/*
 * Check that the shared collector's two shapes are the two collectors' lists, cell by cell,
 * and that it copied each cell's plot to `mine` (its plots directory; NULL: not shared).
 */
static void check_shapes(struct outputs *shared, struct outputs *embed, struct outputs *copy,
			 const char *const *const *cells, const char *mine)
{
	const char *theirs = copy->plots_dir;
	struct outputs *os[] = { shared, embed, copy, NULL };
	cJSON *keep = cJSON_CreateArray();	/* the lists live on (OUTPUTS_KEEP_DISPLAYS) */

	for (; *cells; cells++) {
		cJSON *a, *b, *c;
		char *ta, *tb, *tc, *lent = NULL, *after;

		feed_all(os, *cells);
		a = outputs_finish(shared), b = outputs_finish(embed), c = outputs_finish(copy);
		ta = cJSON_PrintUnformatted(a), tb = cJSON_PrintUnformatted(b);
		tc = cJSON_PrintUnformatted(c);
		CHECK(outputs_copy_shape(shared, a, print_shape, &lent) == 0);
		if (mine && theirs) {	/* the same plots, copied to a directory each */
			char *at, *cmd = xasprintf("cd %s && ls >../l1 && cd %s && ls >../l2 && "
						   "cmp -s ../l1 ../l2 && test -s ../l1 && "
						   "rm ../l1 ../l2 *.png %s/*.png", mine, theirs, mine);
			CHECK(system(cmd) == 0);
			while ((at = strstr(lent, mine)))
				memcpy(at, theirs, strlen(theirs));
			free(cmd);
		}
		after = cJSON_PrintUnformatted(a);
		CHECK_STR(ta, tb);
		CHECK_STR(lent, tc);
		CHECK_STR(after, ta);		/* put back as it was */
		cJSON_free(ta), cJSON_free(tb), cJSON_free(tc), cJSON_free(lent), cJSON_free(after);
		cJSON_AddItemToArray(keep, a), cJSON_AddItemToArray(keep, b);
		cJSON_Delete(c);
	}
	/* Updates of earlier cells reached the same outputs in both. */
	for (int i = 0; i + 1 < cJSON_GetArraySize(keep); i += 2) {
		char *ta = cJSON_PrintUnformatted(cJSON_GetArrayItem(keep, i));
		char *tb = cJSON_PrintUnformatted(cJSON_GetArrayItem(keep, i + 1));
		CHECK_STR(ta, tb);
		cJSON_free(ta), cJSON_free(tb);
	}
	outputs_release(shared), outputs_release(embed), outputs_release(copy);
	cJSON_Delete(keep);
}

/* One collection, two shapes: the same lists as an embedding and a copying collector. */
static void test_outputs_shared(void)
{
	static const char *const plots[] = {
		"stream {\"name\":\"stdout\",\"text\":\"a\\r\"}",
		"display {\"data\":{\"text/plain\":\"<Figure>\"},\"plot\":{\"path\":\"plots/1.png\",\"index\":1}}",
		"stream {\"name\":\"stdout\",\"text\":\"b\\n\"}",
		"display {\"display_id\":\"d\",\"data\":{\"text/plain\":\"one\"},"
		"\"metadata\":{\"cellbox\":1},\"plot\":{\"path\":\"plots/2.png\",\"index\":2}}",
		"display {\"display_id\":\"d\",\"update\":true,\"data\":{\"text/plain\":\"two\"},"
		"\"plot\":{\"path\":\"plots/3.png\",\"index\":3}}",
		"display {\"display_id\":\"e\",\"data\":{\"text/plain\":\"e\"},\"plot\":{\"path\":\"plots/4.png\",\"index\":4}}",
		"display {\"display_id\":\"e\",\"update\":true,\"data\":{\"text/plain\":\"no plot\"}}",
		"result {\"execution_count\":2,\"data\":{\"text/plain\":\"F\"},\"plot\":{\"path\":\"plots/5.png\",\"index\":5}}",
		"done {\"status\":\"ok\",\"execution_count\":2}", NULL,
	};
	static const char *const later[] = {	/* an earlier cell's display updated */
		"display {\"display_id\":\"d\",\"update\":true,\"data\":{\"text/plain\":\"three\"},"
		"\"plot\":{\"path\":\"plots/6.png\",\"index\":6}}",
		"stream {\"name\":\"stdout\",\"text\":\"0\\n\"}",
		"clear_output {\"wait\":true}",
		"display {\"display_id\":\"d\",\"data\":{\"text/plain\":\"four\"},\"plot\":{\"path\":\"plots/7.png\",\"index\":7}}",
		"done {\"status\":\"ok\"}", NULL,
	};
	static const char *const long_text[] = {	/* past the history's limit: forked */
		"display {\"display_id\":\"f\",\"data\":{\"text/plain\":\"f\"},\"plot\":{\"path\":\"plots/8.png\",\"index\":8}}",
		"stream {\"name\":\"stdout\",\"text\":\"0123456789012345678901234567890123456789\"}",
		"stream {\"name\":\"stderr\",\"text\":\"0123456789012345678901234567890123456789\"}",
		"display {\"display_id\":\"f\",\"update\":true,\"data\":{\"text/plain\":\"g\"},"
		"\"plot\":{\"path\":\"plots/9.png\",\"index\":9}}",
		"display {\"data\":{\"text/plain\":\"0123456789012345678901234567890123456789\","
		"\"text/html\":\"<b>\"}}",
		"done {\"status\":\"ok\"}", NULL,
	};
	static const char *const own_png[] = {	/* a plot beside an image/png: forked */
		"display {\"data\":{\"image/png\":\"AAAA\",\"text/plain\":\"p\"},"
		"\"plot\":{\"path\":\"plots/10.png\",\"index\":10}}",
		"done {\"status\":\"ok\"}", NULL,
	};
	static const char *const *const cells[] = { plots, later, long_text, own_png, plots, NULL };
	char base[] = "/tmp/cellbox-test-XXXXXX", *dir, *other;
	struct outputs shared, embed, copy;
	unsigned keep = OUTPUTS_EMBED_PNG | OUTPUTS_KEEP_DISPLAYS;

	CHECK(mkdtemp(base) != NULL);
	dir = xasprintf("%s/a", base);		/* the two of the same length */
	other = xasprintf("%s/b", base);
	for (unsigned flags = OUTPUTS_EMBED_PNG; flags <= keep; flags += OUTPUTS_KEEP_DISPLAYS) {
		/* The history's limit the smaller, and the notebook's. */
		for (size_t small = 64; small <= 96; small += 32) {
			size_t big = 1000;
			outputs_init(&shared, dir, flags, NULL, small == 64 ? big : small);
			outputs_share(&shared, dir, small == 64 ? small : big);
			outputs_init(&embed, dir, flags, NULL, small == 64 ? big : small);
			outputs_init(&copy, dir, OUTPUTS_COPY_PLOTS, other, small == 64 ? small : big);
			check_shapes(&shared, &embed, &copy, cells, dir);
		}
	}
	/* Unshared: the list as it is. */
	outputs_init(&shared, dir, OUTPUTS_EMBED_PNG, NULL, 0);
	outputs_share(&shared, dir, 0);
	outputs_share(&shared, NULL, 0);
	outputs_init(&embed, dir, OUTPUTS_EMBED_PNG, NULL, 0);
	outputs_init(&copy, dir, OUTPUTS_EMBED_PNG, NULL, 0);
	check_shapes(&shared, &embed, &copy, cells, NULL);
	fsutil_remove_tree(base);
	free(dir);
	free(other);
}

/* nbclient's kernel metadata and timestamps. */
static void test_notebook_metadata(void)
{
	cJSON *nb = cellfile_new_notebook(), *cell;
	cJSON *info = cJSON_Parse("{\"kernelspec\":{\"name\":\"python3\",\"language\":\"python\","
				  "\"display_name\":\"Python 3 (ipykernel)\"},"
				  "\"language_info\":{\"name\":\"python\",\"version\":\"3.11.2\"}}");
	const cJSON *md = cJSON_GetObjectItemCaseSensitive(nb, "metadata"), *ex;
	struct strbuf t = STRBUF_INIT;

	/* A stale language_info is replaced; a kernelspec of the same language is kept. */
	cJSON_AddItemToObject((cJSON *)md, "language_info", cJSON_Parse("{\"version\":\"3.9.2\"}"));
	cJSON_AddItemToObject((cJSON *)md, "kernelspec",
			      cJSON_Parse("{\"name\":\"py\",\"language\":\"python\"}"));
	cellfile_set_kernel(nb, info);
	CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(
		cJSON_GetObjectItemCaseSensitive(md, "language_info"), "version")), "3.11.2");
	CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(
		cJSON_GetObjectItemCaseSensitive(md, "kernelspec"), "name")), "py");
	cJSON_ReplaceItemInObjectCaseSensitive((cJSON *)md, "kernelspec",
					       cJSON_Parse("{\"name\":\"ir\",\"language\":\"R\"}"));
	cellfile_set_kernel(nb, info);
	CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(
		cJSON_GetObjectItemCaseSensitive(md, "kernelspec"), "name")), "python3");

	cell = cellfile_add_cell(nb, "code", "1");
	cellfile_set_timing(cell, 1714564800.5, 1714564801.25);
	ex = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(cell, "metadata"),
					      "execution");
	CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(ex, "iopub.status.busy")),
		  "2024-05-01T12:00:00.500000Z");
	CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(ex, "shell.execute_reply")),
		  "2024-05-01T12:00:01.250000Z");
	CHECK(cJSON_GetArraySize(ex) == 4);
	cellfile_iso_time(1714564800.9999996, &t);
	CHECK_STR(t.buf, "2024-05-01T12:00:01.000000Z");
	strbuf_release(&t);
	cJSON_Delete(info);
	cJSON_Delete(nb);
}

static int count_entry(const cJSON *e, void *data)
{
	(void)e;
	(*(int *)data)++;
	return 0;
}

static void test_history_parse(void)
{
	struct strbuf warn = STRBUF_INIT;
	const char *text = "{\"code\":\"a\",\"outputs\":[]}\n"
			   "garbage\n"
			   "{\"code\":\"b\",\"outputs\":[]}\n"
			   "{\"code\":\"c\",\"out";	/* torn by a crash */
	int n = 0;

	CHECK(history_parse(text, strlen(text), "h.jsonl", count_entry, &n, &warn) == 2);
	CHECK(n == 2);
	CHECK(strstr(warn.buf, "h.jsonl:2: corrupt line skipped") != NULL);
	CHECK(strstr(warn.buf, "h.jsonl:4: incomplete last line skipped") != NULL);
	strbuf_release(&warn);
}

/* A small deterministic generator for the mutation test. */
static unsigned long long fuzz_state = 88172645463325252ULL;

static unsigned fuzz_next(void)
{
	fuzz_state ^= fuzz_state << 13;
	fuzz_state ^= fuzz_state >> 7;
	fuzz_state ^= fuzz_state << 17;
	return (unsigned)fuzz_state;
}

/* Mutate seed text: flip, insert, delete and copy bytes, biased to the syntax characters. */
static void mutate(const char *seed, struct strbuf *out)
{
	static const char syntax[] = "#% []{}\"=,:\n\r\t\\'\x01\x80\xc3\xe2";
	int edits = 1 + (int)(fuzz_next() % 8);

	strbuf_reset(out);
	strbuf_addstr(out, seed);
	for (int k = 0; k < edits && out->len; k++) {
		size_t at = fuzz_next() % out->len;
		char c = (fuzz_next() & 1) ? syntax[fuzz_next() % (sizeof(syntax) - 1)]
					   : (char)fuzz_next();
		switch (fuzz_next() % 4) {
		case 0:
			out->buf[at] = c;
			break;
		case 1: {
			struct strbuf t = STRBUF_INIT;
			strbuf_add(&t, out->buf, at);
			strbuf_addch(&t, c);
			strbuf_add(&t, out->buf + at, out->len - at);
			strbuf_reset(out);
			strbuf_add(out, t.buf, t.len);
			strbuf_release(&t);
			break;
		}
		case 2:
			memmove(out->buf + at, out->buf + at + 1, out->len - at - 1);
			out->buf[--out->len] = '\0';
			break;
		default:
			out->len = at;	/* truncate: a torn file */
			out->buf[at] = '\0';
		}
	}
}

/* Mutated inputs never crash the parsers, and whatever parses writes back parseable text. */
static void test_fuzz_parsers(void)
{
	const char *percent_seed =
		"# ---\n# jupyter:\n# ---\n# %% T [markdown] k=\"v\"\n# text\n"
		"# %% tags=[\"a\", \"b\"] {\"x\": 1}\n# %time\nx = 1\n#%%\n!ls\n";
	const char *ipynb_seed =
		"{\"cells\": [{\"cell_type\": \"code\", \"execution_count\": 1, \"id\": \"ab\", "
		"\"metadata\": {\"tags\": [\"t\"]}, \"outputs\": [{\"name\": \"stdout\", "
		"\"output_type\": \"stream\", \"text\": [\"a\\n\"]}], \"source\": [\"x\\n\", \"y\"]}, "
		"{\"cell_type\": \"markdown\", \"metadata\": {}, \"source\": \"# t\"}], "
		"\"metadata\": {}, \"nbformat\": 4, \"nbformat_minor\": 5}";
	struct strbuf in = STRBUF_INIT, out = STRBUF_INIT, err = STRBUF_INIT;
	int parsed = 0, rewritten = 0, n = 30000;

	strbuf_init(&in, 0);
	for (int i = 0; i < n; i++) {
		cJSON *nb;

		mutate(percent_seed, &in);
		nb = cellfile_parse_percent(in.buf, in.len);
		strbuf_reset(&out);
		cellfile_write_percent(nb, &out);
		cellfile_write_ipynb(nb, &out);
		cJSON_Delete(nb);
		history_parse(in.buf, in.len, "fuzz", NULL, NULL, &err);
		strbuf_reset(&err);

		mutate(ipynb_seed, &in);
		nb = cellfile_parse_ipynb(in.buf, in.len, "fuzz", &err);
		strbuf_reset(&err);
		if (nb) {
			cJSON *again;
			parsed++;
			strbuf_reset(&out);
			cellfile_write_ipynb(nb, &out);
			again = cellfile_parse_ipynb(out.buf, out.len, "again", &err);
			rewritten += again != NULL;
			cJSON_Delete(again);
			cJSON_Delete(nb);
		}
	}
	printf("# %d mutated notebooks parsed, %d of them written and read back\n", parsed, rewritten);
	CHECK(parsed > 0);
	CHECK(rewritten == parsed);
	strbuf_release(&in);
	strbuf_release(&out);
	strbuf_release(&err);
}

static const struct tap_test tests[] = {
	{ "percent_markers", test_percent_markers },
	{ "percent_header_magics", test_percent_header_magics },
	{ "percent_write", test_percent_write },
	{ "ipynb_roundtrip", test_ipynb_roundtrip },
	{ "ipynb_bad", test_ipynb_bad },
	{ "ipynb_huge_numbers", test_ipynb_huge_numbers },
	{ "outputs", test_outputs },
	{ "outputs_displays", test_outputs_displays },
	{ "outputs_shared", test_outputs_shared },
	{ "notebook_metadata", test_notebook_metadata },
	{ "history_parse", test_history_parse },
	{ "fuzz_parsers", test_fuzz_parsers },
};

int main(int argc, char **argv)
{
	return tap_main(argc, argv, tests, ARRAY_SIZE(tests));
}
