/* Unit tests of the notebook's pure parts: the key decoder, the notebook model, markdown. */
#include <errno.h>
#include <fcntl.h>
#include <locale.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "keys.h"
#include "markdown.h"
#include "notebook.h"
#include "../tap.h"

/* ---- keys ---- */

/* Feed a string of characters (no curses codes). */
static void feed(struct keys *k, const char *s)
{
	for (const unsigned char *p = (const unsigned char *)s; *p; p++)
		keys_feed(k, 0, *p);
}

/* The next key, or a zeroed one. */
static struct key_event next(struct keys *k)
{
	struct key_event ev = { 0 };

	if (!keys_next(k, &ev))
		memset(&ev, 0, sizeof(ev));
	return ev;
}

static void test_keys_paste(void)
{
	struct keys k;
	struct key_event ev;

	keys_init(&k);
	feed(&k, "a\x1b[200~def f():\r    return 1\r\n\r\x1b[20x\x1b[201~b");
	ev = next(&k);
	CHECK(!ev.is_key && ev.ch == 'a');
	ev = next(&k);
	CHECK(ev.is_key && ev.ch == KEYS_PASTE);
	/* \r and \r\n are newlines; an ESC that is not the end stays in the text */
	CHECK_STR(ev.text, "def f():\n    return 1\n\n\x1b[20x");
	free(ev.text);
	ev = next(&k);
	CHECK(!ev.is_key && ev.ch == 'b');
	CHECK(!keys_next(&k, &ev));
	/* A paste cut off (no end) is pending, then ends when flushed. */
	feed(&k, "\x1b[200~x = 1");
	CHECK(keys_pending(&k) == 2);
	CHECK(!keys_next(&k, &ev));
	keys_flush(&k);
	ev = next(&k);
	CHECK(ev.ch == KEYS_PASTE && ev.text && !strcmp(ev.text, "x = 1"));
	free(ev.text);
	/* A paste of many characters above the cap keeps the cap. */
	feed(&k, "\x1b[200~");
	for (size_t i = 0; i < KEYS_PASTE_MAX + 100; i++)
		keys_feed(&k, 0, 'y');
	feed(&k, "\x1b[201~");
	ev = next(&k);
	CHECK(ev.ch == KEYS_PASTE && ev.text && strlen(ev.text) == KEYS_PASTE_MAX);
	free(ev.text);
	keys_release(&k);
}

static void test_keys_modified(void)
{
	struct keys k;
	struct key_event ev;

	keys_init(&k);
	/* xterm modifyOtherKeys: Shift-Enter, Ctrl-Enter */
	feed(&k, "\x1b[27;2;13~\x1b[27;5;13~");
	ev = next(&k);
	CHECK(!ev.is_key && ev.ch == '\r' && ev.mods == KEYMOD_SHIFT);
	ev = next(&k);
	CHECK(!ev.is_key && ev.ch == '\r' && ev.mods == KEYMOD_CTRL);
	/* kitty: Shift-Enter, Ctrl-q as its control character, Esc, Alt-x, a plain key */
	feed(&k, "\x1b[13;2u\x1b[113;5u\x1b[27u\x1b[120;3u\x1b[97u");
	ev = next(&k);
	CHECK(ev.ch == '\r' && ev.mods == KEYMOD_SHIFT);
	ev = next(&k);
	CHECK(ev.ch == 0x11 && ev.mods == 0);
	ev = next(&k);
	CHECK(ev.ch == 27 && ev.mods == 0);
	ev = next(&k);
	CHECK(ev.ch == 'x' && ev.mods == KEYMOD_ALT);
	ev = next(&k);
	CHECK(ev.ch == 'a' && ev.mods == 0);
	/* kitty's sub-fields and the keypad Enter */
	feed(&k, "\x1b[57414;2:1u");
	ev = next(&k);
	CHECK(ev.ch == '\r' && ev.mods == KEYMOD_SHIFT);
	/* an arrow with Shift curses did not know: the scroll key */
	feed(&k, "\x1b[1;2A");
	ev = next(&k);
	CHECK(ev.is_key && ev.ch == 0521);
	/* Ctrl-Shift-Z (tmux, kitty) keeps its Shift; Ctrl-_ does not need it */
	feed(&k, "\x1b[90;6u\x1b[122;6u\x1b[95;6u\x1b[122;5u");
	ev = next(&k);
	CHECK(ev.ch == 0x1a && ev.mods == KEYMOD_SHIFT);
	ev = next(&k);
	CHECK(ev.ch == 0x1a && ev.mods == KEYMOD_SHIFT);
	ev = next(&k);
	CHECK(ev.ch == 0x1f && ev.mods == 0);
	ev = next(&k);
	CHECK(ev.ch == 0x1a && ev.mods == 0);
	/* Ctrl-Left, Shift-Right, Alt-Left, Ctrl-Delete with their modifiers */
	feed(&k, "\x1b[1;5D\x1b[1;2C\x1b[1;3D\x1b[3;5~");
	ev = next(&k);
	CHECK(ev.is_key && ev.ch == 0404 && ev.mods == KEYMOD_CTRL);
	ev = next(&k);
	CHECK(ev.is_key && ev.ch == 0405 && ev.mods == KEYMOD_SHIFT);
	ev = next(&k);
	CHECK(ev.is_key && ev.ch == 0404 && ev.mods == KEYMOD_ALT);
	ev = next(&k);
	CHECK(ev.is_key && ev.ch == 0512 && ev.mods == KEYMOD_CTRL);
	/* unknown sequences (focus in) are dropped */
	feed(&k, "\x1b[I");
	CHECK(!keys_next(&k, &ev));
	keys_release(&k);
}

static void test_keys_alt_esc(void)
{
	struct keys k;
	struct key_event ev;

	keys_init(&k);
	feed(&k, "\x1b\r");		/* Alt-Enter as terminals send it (or Esc, Enter) */
	ev = next(&k);
	CHECK(ev.ch == '\r' && ev.mods == (KEYMOD_ALT | KEYMOD_ESC));
	feed(&k, "\x1b");		/* a lone Esc: pending until the wait is over */
	CHECK(keys_pending(&k) == 1);
	CHECK(!keys_next(&k, &ev));
	keys_flush(&k);
	ev = next(&k);
	CHECK(ev.ch == 27 && !ev.mods);
	feed(&k, "\x1b\x1b");		/* Esc, then an ESC that may start something */
	ev = next(&k);
	CHECK(ev.ch == 27);
	CHECK(keys_pending(&k) == 1);
	keys_flush(&k);
	ev = next(&k);
	CHECK(ev.ch == 27);
	keys_feed(&k, 0, 27);		/* ESC then a curses key: Alt + that key */
	keys_feed(&k, 1, 0403);
	ev = next(&k);
	CHECK(ev.is_key && ev.ch == 0403 && ev.mods == (KEYMOD_ALT | KEYMOD_ESC));
	/* A sequence broken by a control character gives back what it held. */
	feed(&k, "\x1b[12\x01");
	ev = next(&k);
	CHECK(ev.ch == '[' && ev.mods == (KEYMOD_ALT | KEYMOD_ESC));
	ev = next(&k);
	CHECK(ev.ch == '1');
	ev = next(&k);
	CHECK(ev.ch == '2');
	ev = next(&k);
	CHECK(ev.ch == 1);
	keys_release(&k);
}

/* Random input never crashes the decoder, and every paste it hands out is within the cap. */
static void test_keys_fuzz(void)
{
	static const char alphabet[] = "\x1b[]~;:u0123456789Ax\r\n\x7f";
	struct keys k;
	struct key_event ev;
	unsigned seed = 12345;
	size_t events = 0;

	keys_init(&k);
	for (int i = 0; i < 200000; i++) {
		seed = seed * 1103515245u + 12345u;
		if ((seed >> 16) % 97 == 0)
			keys_feed(&k, 1, 0402 + (seed >> 8) % 8);
		else if ((seed >> 16) % 89 == 0)
			keys_flush(&k);
		else if ((seed >> 16) % 83 == 0)
			feed(&k, "\x1b[200~");
		else
			keys_feed(&k, 0, (unsigned char)alphabet[(seed >> 16) % (sizeof(alphabet) - 1)]);
		while (keys_next(&k, &ev)) {
			events++;
			if (ev.text && strlen(ev.text) > KEYS_PASTE_MAX)
				CHECK(!"a paste past the cap");
			free(ev.text);
		}
	}
	printf("# %zu keys decoded from random input\n", events);
	CHECK(events > 1000);
	keys_release(&k);
}

/* ---- notebook ---- */

static char tmpdir[64];

/* A fresh temporary directory for one test. */
static const char *scratch(void)
{
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/cellbox-nb-unit-XXXXXX");
	if (!mkdtemp(tmpdir))
		abort();
	return tmpdir;
}

/* Remove the scratch directory (a few files, no subdirectories). */
static void scratch_done(void)
{
	char *cmd = xasprintf("rm -rf '%s'", tmpdir);
	if (system(cmd) != 0)
		(void)0;
	free(cmd);
}

/* Read a whole file. */
static char *slurp(const char *path)
{
	struct strbuf sb = STRBUF_INIT;

	if (strbuf_read_file(&sb, path, 1 << 24) < 0)
		return NULL;
	return strbuf_detach(&sb, NULL);
}

/* Write a whole file. */
static void spit(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	fputs(text, f);
	fclose(f);
}

/* Make a notebook with nbformat itself; its path. */
static char *nbformat_notebook(const char *dir)
{
	char *path = xasprintf("%s/ref.ipynb", dir);
	char *cmd = xasprintf("%s - '%s' <<'PY'\n"
		"import sys, nbformat\n"
		"from nbformat.v4 import new_notebook, new_code_cell, new_markdown_cell, new_output\n"
		"nb = new_notebook(metadata={'kernelspec': {'name': 'python3', 'display_name': 'P'}})\n"
		"nb.cells = [new_markdown_cell('# Title\\n\\n*text*'),\n"
		"  new_code_cell('x = 1', execution_count=1),\n"
		"  new_code_cell('print(x)', execution_count=2, outputs=[\n"
		"    new_output('stream', name='stdout', text='1\\n')]),\n"
		"  new_code_cell('x + 1', execution_count=3, outputs=[\n"
		"    new_output('execute_result', data={'text/plain': '2'}, execution_count=3)])]\n"
		"nbformat.write(nb, sys.argv[1])\n"
		"PY", TEST_PYTHON, path);
	if (system(cmd) != 0)
		CHECK(!"nbformat made the notebook");
	free(cmd);
	return path;
}

static void test_notebook_ipynb(void)
{
	const char *dir = scratch();
	char *path = nbformat_notebook(dir), *before = slurp(path), *after, *cmd;
	struct notebook nb;
	struct strbuf err = STRBUF_INIT, out = STRBUF_INIT;

	notebook_init(&nb);
	CHECK(notebook_open(&nb, path, &err) == 0);
	CHECK(nb.format == NB_IPYNB && nb.ncells == 4);
	CHECK_STR(notebook_cell_type(nb.cells[0]), "markdown");
	CHECK(notebook_cell_count(nb.cells[3]) == 3);
	CHECK(!notebook_cell_changed(nb.cells[3]));
	/* Unchanged: byte for byte what nbformat wrote. */
	notebook_serialize(&nb, &out);
	CHECK_STR(out.buf, before);
	CHECK(notebook_save(&nb, NULL, 0, &err) == 0);
	after = slurp(path);
	CHECK_STR(after, before);
	free(after);
	/* Edit cell 3, give it outputs as a run would, save: nbformat reads and validates it. */
	notebook_set_source(&nb, 2, "print(x * 10)\n");
	CHECK(notebook_cell_changed(nb.cells[2]));
	CHECK(nb.dirty);
	{
		cJSON *outs = cJSON_Parse("[{\"name\": \"stdout\", \"output_type\": \"stream\", "
					  "\"text\": \"10\\n\"}]");
		notebook_set_outputs(&nb, 2, outs, 4);
	}
	CHECK(!notebook_cell_changed(nb.cells[2]));
	CHECK(notebook_save(&nb, NULL, 0, &err) == 0);
	CHECK(!nb.dirty);
	cmd = xasprintf("%s -c \"import nbformat, sys; nb = nbformat.read(sys.argv[1], 4); "
			"nbformat.validate(nb); c = nb.cells[2]; "
			"assert c.source == 'print(x * 10)\\n', c.source; "
			"assert c.outputs[0].text == '10\\n'; assert c.execution_count == 4\" '%s'",
			TEST_PYTHON, path);
	CHECK(system(cmd) == 0);
	free(cmd);
	/* Someone else changes the file: the save is refused, then forced. */
	sleep(0);
	spit(path, before);
	{
		struct timespec ts[2] = { { 0, UTIME_NOW }, { time(NULL) + 5, 0 } };
		utimensat(AT_FDCWD, path, ts, 0);
	}
	notebook_set_source(&nb, 1, "x = 2");
	strbuf_reset(&err);
	CHECK(notebook_save(&nb, NULL, 0, &err) == -2);
	CHECK(strstr(err.buf, "changed on disk") != NULL);
	CHECK(notebook_save(&nb, NULL, 1, &err) == 0);
	notebook_release(&nb);
	strbuf_release(&err);
	strbuf_release(&out);
	free(before);
	free(path);
	scratch_done();
}

static void test_notebook_percent(void)
{
	const char *dir = scratch();
	const char *text =
		"# ---\n# jupyter:\n#   kernelspec:\n#     name: python3\n# ---\n\n"
		"import os\n\n"
		"# %% Load the data [markdown] tags=[\"intro\"]\n# # Heading\n# Some *text*\n\n\n"
		"#%%\n%time x = 1\n!ls\n"
		"# %% {\"k\": 1}\nprint(x)\n";
	char *path = xasprintf("%s/cells.py", dir), *got;
	struct notebook nb;
	struct strbuf err = STRBUF_INIT, out = STRBUF_INIT;

	spit(path, text);
	notebook_init(&nb);
	CHECK(notebook_open(&nb, path, &err) == 0);
	CHECK(nb.format == NB_PERCENT && nb.ncells == 4);
	CHECK_STR(nb.cells[2]->source, "%time x = 1\n!ls");
	/* Unchanged: the same bytes, header, markers and blank lines included. */
	notebook_serialize(&nb, &out);
	CHECK_STR(out.buf, text);
	/* Change one cell: the others stay as they were. */
	notebook_set_source(&nb, 3, "print(x + 1)");
	strbuf_reset(&out);
	notebook_serialize(&nb, &out);
	CHECK(strstr(out.buf, "# %% Load the data [markdown] tags=[\"intro\"]\n# # Heading\n") != NULL);
	/* the changed one keeps its marker line as it was; its lines are written anew */
	CHECK(strstr(out.buf, "#%%\n%time x = 1\n!ls\n# %% {\"k\": 1}\nprint(x + 1)\n") != NULL);
	notebook_set_type(&nb, 3, "markdown");	/* another type: another marker line */
	strbuf_reset(&out);
	notebook_serialize(&nb, &out);
	CHECK(strstr(out.buf, "!ls\n\n# %% [markdown] k=1\n# print(x + 1)\n") != NULL);
	notebook_set_type(&nb, 3, "code");
	CHECK(!strncmp(out.buf, text, 60));
	/* Move the text before the first marker down: it gets a marker of its own. */
	notebook_move(&nb, 0, +1);
	strbuf_reset(&out);
	notebook_serialize(&nb, &out);
	CHECK(strstr(out.buf, "# %%\nimport os\n") != NULL);
	CHECK(notebook_save(&nb, NULL, 0, &err) == 0);
	got = slurp(path);
	CHECK_STR(got, out.buf);
	free(got);
	/* After the save, what was written is the text cells are kept from. */
	strbuf_reset(&out);
	notebook_serialize(&nb, &out);
	got = slurp(path);
	CHECK_STR(out.buf, got);
	free(got);
	notebook_release(&nb);
	strbuf_release(&err);
	strbuf_release(&out);
	free(path);
	scratch_done();
}

static void test_notebook_edit(void)
{
	struct notebook nb;
	struct strbuf err = STRBUF_INIT;
	const char *dir = scratch();
	char *path = xasprintf("%s/new.ipynb", dir), *cmd;

	notebook_init(&nb);
	CHECK(notebook_open(&nb, path, &err) == 1);	/* no such file: a new notebook */
	CHECK(nb.ncells == 1 && nb.is_new);
	notebook_set_source(&nb, 0, "a = 1");
	CHECK(notebook_insert(&nb, 1, "code", "b = 2") == 1);
	CHECK(notebook_insert(&nb, 0, "markdown", "# Top") == 0);
	CHECK(nb.ncells == 3);
	CHECK_STR(nb.cells[1]->source, "a = 1");
	/* delete, undo */
	notebook_delete(&nb, 1);
	CHECK(nb.ncells == 2 && !strcmp(nb.cells[1]->source, "b = 2"));
	CHECK(notebook_undelete(&nb) == 1);
	CHECK_STR(nb.cells[1]->source, "a = 1");
	CHECK(notebook_undelete(&nb) == -1);
	/* move */
	CHECK(notebook_move(&nb, 2, -1) == 1);
	CHECK_STR(nb.cells[1]->source, "b = 2");
	CHECK(notebook_move(&nb, 0, -1) == 0);
	/* types: code -> markdown drops outputs, back to code gets them again */
	notebook_set_outputs(&nb, 1, cJSON_Parse("[]"), 7);
	notebook_set_type(&nb, 1, "markdown");
	CHECK(!cJSON_GetObjectItemCaseSensitive(nb.cells[1]->json, "outputs"));
	notebook_set_type(&nb, 1, "raw");
	notebook_set_type(&nb, 1, "code");
	CHECK(cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(nb.cells[1]->json, "outputs")));
	CHECK(notebook_cell_count(nb.cells[1]) == 0);
	/* copy / cut / paste: fresh ids */
	notebook_copy(&nb, 2, 0);
	CHECK(notebook_paste(&nb, 3) == 1 && nb.ncells == 4);
	CHECK_STR(nb.cells[3]->source, "a = 1");
	CHECK(strcmp(cJSON_GetObjectItemCaseSensitive(nb.cells[3]->json, "id")->valuestring,
		     cJSON_GetObjectItemCaseSensitive(nb.cells[2]->json, "id")->valuestring));
	notebook_copy(&nb, 0, 1);
	CHECK(nb.ncells == 3 && !strcmp(nb.cells[0]->source, "b = 2"));
	/* find, wrapping around, case-insensitive */
	CHECK(notebook_find(&nb, 0, +1, "A = ") == 1);
	CHECK(notebook_find(&nb, 1, +1, "a = 1") == 2);
	CHECK(notebook_find(&nb, 2, +1, "a = 1") == 1);
	CHECK(notebook_find(&nb, 1, -1, "B =") == 0);
	CHECK(notebook_find(&nb, 1, -1, "nowhere") == -1);
	/* deleting every cell leaves an empty one */
	while (nb.ncells > 1)
		notebook_delete(&nb, 0);
	notebook_delete(&nb, 0);
	CHECK(nb.ncells == 1 && !*nb.cells[0]->source);
	notebook_set_source(&nb, 0, "z = 26");
	CHECK(notebook_save(&nb, NULL, 0, &err) == 0);
	cmd = xasprintf("%s -c \"import nbformat, sys; nb = nbformat.read(sys.argv[1], 4); "
			"nbformat.validate(nb); assert nb.cells[0].source == 'z = 26'\" '%s'",
			TEST_PYTHON, path);
	CHECK(system(cmd) == 0);
	free(cmd);
	notebook_release(&nb);
	strbuf_release(&err);
	free(path);
	scratch_done();
}

static void test_notebook_recovery(void)
{
	const char *dir = scratch();
	char *path = nbformat_notebook(dir), *rec, *before = slurp(path);
	struct notebook nb, again;
	struct strbuf err = STRBUF_INIT;
	struct stat st;

	notebook_init(&nb);
	CHECK(notebook_open(&nb, path, &err) == 0);
	CHECK(!notebook_has_recovery(&nb));
	notebook_set_source(&nb, 1, "x = 'unsaved'");
	CHECK(notebook_autosave(&nb, &err) == 0);
	rec = notebook_recovery_path(&nb);
	CHECK(lstat(rec, &st) == 0 && (st.st_mode & 0777) == 0600);
	/* "a crash": the notebook is opened again, the recovery file is there and newer */
	notebook_init(&again);
	CHECK(notebook_open(&again, path, &err) == 0);
	CHECK_STR(again.cells[1]->source, "x = 1");
	CHECK(notebook_has_recovery(&again));
	CHECK(notebook_recover(&again, &err) == 0);
	CHECK_STR(again.cells[1]->source, "x = 'unsaved'");
	CHECK(again.dirty && !strcmp(again.path, path));
	/* the file itself is untouched until a save, which removes the recovery file */
	{
		char *now = slurp(path);
		CHECK_STR(now, before);
		free(now);
	}
	CHECK(notebook_save(&again, NULL, 0, &err) == 0);
	CHECK(lstat(rec, &st) < 0 && errno == ENOENT);
	CHECK(!notebook_has_recovery(&again));
	notebook_release(&again);
	notebook_release(&nb);
	strbuf_release(&err);
	free(rec);
	free(before);
	free(path);
	scratch_done();
}

static void test_notebook_two_steps(void)
{
	const char *dir = scratch();
	char *path = nbformat_notebook(dir), *before = slurp(path);
	char *bad = xasprintf("%s/bad.ipynb", dir), *old = xasprintf("%s/old.ipynb", dir);
	struct notebook nb;
	struct strbuf err = STRBUF_INIT, out = STRBUF_INIT;

	notebook_init(&nb);
	CHECK(notebook_open_first(&nb, path, 2, &err) == 0);
	CHECK(nb.ncells == 2 && notebook_total(&nb) == 4);
	CHECK(notebook_open_rest(&nb, &err) == 0);
	CHECK(nb.ncells == 4 && notebook_total(&nb) == 4);
	notebook_serialize(&nb, &out);
	CHECK_STR(out.buf, before);
	notebook_release(&nb);
	/* A bad cell further down: the first cells open, the rest says what is wrong. */
	spit(bad, "{\"cells\": [{\"cell_type\": \"code\", \"execution_count\": null, \"id\": "
		  "\"a\", \"metadata\": {}, \"outputs\": [], \"source\": \"x = 1\"}, "
		  "{\"metadata\": {}, \"source\": \"y\"}], \"metadata\": {}, \"nbformat\": 4, "
		  "\"nbformat_minor\": 5}");
	notebook_init(&nb);
	CHECK(notebook_open_first(&nb, bad, 1, &err) == 0);
	CHECK(nb.ncells == 1 && notebook_total(&nb) == 2);
	CHECK(notebook_open_rest(&nb, &err) == -1);
	CHECK(strstr(err.buf, "cell 2: cell_type is missing") != NULL);
	notebook_release(&nb);
	strbuf_reset(&err);
	CHECK(notebook_open(&nb, bad, &err) == -1);	/* the same, in one step */
	CHECK(strstr(err.buf, "cell 2: cell_type is missing") != NULL);
	notebook_release(&nb);
	/* nbformat 4.4 without ids: the ids come, the notebook becomes 4.5, as nbformat has it */
	spit(old, "{\"cells\": [{\"cell_type\": \"markdown\", \"metadata\": {}, \"source\": "
		  "\"# t\"}], \"metadata\": {}, \"nbformat\": 4, \"nbformat_minor\": 4}");
	notebook_init(&nb);
	CHECK(notebook_open_first(&nb, old, 0, &err) == 0);
	CHECK(notebook_open_rest(&nb, &err) == 0);
	CHECK(cJSON_GetObjectItemCaseSensitive(nb.root, "nbformat_minor")->valuedouble == 5);
	CHECK(cJSON_GetObjectItemCaseSensitive(nb.cells[0]->json, "id") != NULL);
	notebook_release(&nb);
	strbuf_release(&err);
	strbuf_release(&out);
	free(before);
	free(path);
	free(bad);
	free(old);
	scratch_done();
}

/* Mutated notebooks: the cell scan never crashes, its spans stay in the text, and when the
   whole parse takes the text, the two-step open finds the same cells. */
static void test_ipynb_scan_fuzz(void)
{
	const char *seed =
		"{\"cells\": [{\"cell_type\": \"code\", \"execution_count\": 1, \"id\": \"ab\", "
		"\"metadata\": {\"tags\": [\"t\"]}, \"outputs\": [{\"name\": \"stdout\", "
		"\"output_type\": \"stream\", \"text\": [\"a]\\n\"]}], \"source\": [\"x {\\n\", "
		"\"y\\\"\"]}, {\"cell_type\": \"markdown\", \"id\": \"cd\", \"metadata\": {}, "
		"\"source\": \"# t\"}], \"metadata\": {\"cells\": []}, \"nbformat\": 4, "
		"\"nbformat_minor\": 5}";
	const char *dir = scratch();
	char *path = xasprintf("%s/fuzz.ipynb", dir);
	unsigned seed_r = 99;
	int whole = 0, same = 0;

	for (int i = 0; i < 4000; i++) {
		struct strbuf text = STRBUF_INIT, err = STRBUF_INIT;
		struct cellfile_cells cells;
		cJSON *nb;
		int edits;

		strbuf_addstr(&text, seed);
		seed_r = seed_r * 1103515245u + 12345u;
		edits = 1 + (int)((seed_r >> 16) % 3);
		for (int e = 0; e < edits && text.len; e++) {
			size_t at;
			seed_r = seed_r * 1103515245u + 12345u;
			at = (seed_r >> 8) % text.len;
			if ((seed_r >> 4) % 3 == 0)
				memmove(text.buf + at, text.buf + at + 1, text.len - at), text.len--;
			else
				text.buf[at] = "{}[]\",:\\ ax0"[(seed_r >> 20) % 12];
		}
		if (cellfile_ipynb_cells(text.buf, text.len, &cells) == 0) {
			CHECK(cells.open < cells.close && cells.close < text.len);
			for (size_t k = 0; k < cells.n; k++)
				if (cells.cells[k].off + cells.cells[k].len > text.len)
					CHECK(!"a span past the text");
			cellfile_cells_release(&cells);
		}
		nb = cellfile_parse_ipynb(text.buf, text.len, "fuzz", &err);
		if (nb && (i % 4) == 0) {
			struct notebook two;
			int n = cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(nb, "cells"));
			whole++;
			spit(path, text.buf);
			notebook_init(&two);
			if (notebook_open_first(&two, path, 1, &err) == 0 &&
			    notebook_open_rest(&two, &err) == 0 &&
			    (int)two.ncells == (n ? n : 1)) {
				int k = 0, ok = 1;
				const cJSON *c;
				cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(nb, "cells")) {
					char *src = cellfile_join(cJSON_GetObjectItemCaseSensitive(c,
												    "source"));
					ok &= !strcmp(src, two.cells[k++]->source);
					free(src);
				}
				same += ok;
				if (!ok)
					printf("# differs: %s\n", text.buf);
			} else {
				printf("# two steps: %d cells of %d, '%s' for: %s\n", (int)two.ncells, n,
				       err.buf, text.buf);
			}
			notebook_release(&two);
		}
		cJSON_Delete(nb);
		strbuf_release(&text);
		strbuf_release(&err);
	}
	printf("# %d mutated notebooks parsed whole, %d of them the same in two steps\n", whole,
	       same);
	CHECK(whole > 0);
	CHECK(same == whole);
	free(path);
	scratch_done();
}

/* ---- markdown ---- */

struct mdout {
	struct strbuf text;	/* lines; a styled run starts with <h b i c l> (its styles) */
	unsigned last;		/* the style of the text before, on this line */
};

/* Collect the rendering: plain text, a newline for each line end. */
static void md_collect(void *data, const char *s, size_t len, unsigned style)
{
	struct mdout *o = data;

	if (!s) {
		strbuf_addch(&o->text, '\n');
		o->last = 0;
		return;
	}
	style &= MD_BOLD | MD_ITALIC | MD_CODE | MD_LINK | MD_URL | MD_HEADING;
	if (style == o->last) {
		strbuf_add(&o->text, s, len);
		return;
	}
	o->last = style;
	if (style)
		strbuf_addf(&o->text, "<%s%s%s%s%s>", style & MD_HEADING ? "h" : "",
			    style & MD_BOLD ? "b" : "", style & MD_ITALIC ? "i" : "",
			    style & MD_CODE ? "c" : "", style & (MD_LINK | MD_URL) ? "l" : "");
	strbuf_add(&o->text, s, len);
}

/* Render and return the collected text (static). */
static const char *md(const char *src, int width)
{
	static struct mdout o;

	strbuf_release(&o.text);
	strbuf_init(&o.text, 0);
	o.last = 0;
	markdown_render(src, width, md_collect, &o);
	return o.text.buf;
}

static void test_markdown(void)
{
	setlocale(LC_ALL, "C.UTF-8");
	CHECK_STR(md("# Title\n\nSome *emph* and **strong** text.", 40),
		  "<hb>Title\n\nSome <i>emph and <b>strong text.\n");
	CHECK_STR(md("Use `x = 1` here, see [the docs](https://e.org).", 80),
		  "Use <c>x = 1 here, see <l>the docs<l> (https://e.org).\n");
	CHECK_STR(md("- one\n- two\n  more\n1. first", 40),
		  "\u2022 one\n\u2022 two more\n1. first\n");
	CHECK_STR(md("```python\ndef f():\n    return 1\n```\nafter", 40),
		  "  <c>def f():\n  <c>    return 1\nafter\n");
	CHECK_STR(md("> quoted\n> text\n\n---", 10),
		  "\u2502 quoted\n\u2502 text\n\n\u2500\u2500\u2500\u2500\u2500\u2500\u2500\u2500\u2500\u2500\n");
	CHECK_STR(md("Heading\n=======\nbody", 40), "<hb>Heading\nbody\n");
	/* words wrap at the width; a list item's lines hang under its text */
	CHECK_STR(md("alpha beta gamma delta", 11), "alpha beta\ngamma delta\n");
	CHECK_STR(md("- alpha beta gamma", 12), "\u2022 alpha beta\n  gamma\n");
	/* a word longer than the line is cut */
	CHECK_STR(md("abcdefghijklmnop", 8), "abcdefgh\nijklmnop\n");
	/* not emphasis: snake_case, a lone star */
	CHECK_STR(md("snake_case_name and 2 * 3", 40), "snake_case_name and 2 * 3\n");
	CHECK_STR(md("![plot](a.png) | a | b |", 40), "<l>[image: plot] | a | b |\n");
	CHECK_STR(md("| a | b |\n|---|---|", 40), "| a | b |\n|---|---|\n");
}

/* The widest line of a rendering. */
struct mdwidth {
	int col, widest;
};

/* Count columns (every character of the fuzz alphabet and the renderer's marks is one). */
static void md_measure(void *data, const char *s, size_t len, unsigned style)
{
	struct mdwidth *w = data;

	(void)style;
	if (!s) {
		w->col = 0;
		return;
	}
	for (size_t i = 0; i < len; i++)
		w->col += ((unsigned char)s[i] & 0xc0) != 0x80;
	if (w->col > w->widest)
		w->widest = w->col;
}

/* Random markdown never crashes the renderer and never writes a line wider than asked. */
static void test_markdown_fuzz(void)
{
	static const char alphabet[] = "ab #*_`[]()!>-=|~\n\n  1.\xc3\xa9";
	unsigned seed = 7;
	char src[300];
	int over = 0;

	setlocale(LC_ALL, "C.UTF-8");
	for (int i = 0; i < 20000; i++) {
		struct mdwidth w = { 0, 0 };
		size_t n;
		int width;

		seed = seed * 1103515245u + 12345u;
		n = (seed >> 8) % (sizeof(src) - 1);
		width = 24 + (int)((seed >> 20) % 40);
		for (size_t k = 0; k < n; k++) {
			seed = seed * 1103515245u + 12345u;
			src[k] = alphabet[(seed >> 16) % (sizeof(alphabet) - 1)];
		}
		src[n] = 0;
		markdown_render(src, width, md_measure, &w);
		if (w.widest > width && over++ < 3)
			printf("# %d columns at width %d: '%s'\n", w.widest, width, src);
	}
	CHECK(over == 0);
}

static const struct tap_test tests[] = {
	{ "keys_paste", test_keys_paste },
	{ "keys_modified", test_keys_modified },
	{ "keys_alt_esc", test_keys_alt_esc },
	{ "keys_fuzz", test_keys_fuzz },
	{ "notebook_ipynb", test_notebook_ipynb },
	{ "notebook_percent", test_notebook_percent },
	{ "notebook_edit", test_notebook_edit },
	{ "notebook_recovery", test_notebook_recovery },
	{ "notebook_two_steps", test_notebook_two_steps },
	{ "ipynb_scan_fuzz", test_ipynb_scan_fuzz },
	{ "markdown", test_markdown },
	{ "markdown_fuzz", test_markdown_fuzz },
};

int main(int argc, char **argv)
{
	return tap_main(argc, argv, tests, ARRAY_SIZE(tests));
}
