/* Unit tests of cell files and the history store's reader (the outputs collector: test_outputs.c). */
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
	{ "notebook_metadata", test_notebook_metadata },
	{ "history_parse", test_history_parse },
	{ "fuzz_parsers", test_fuzz_parsers },
};

int main(int argc, char **argv)
{
	return tap_main(argc, argv, tests, ARRAY_SIZE(tests));
}
