/* Unit tests of the history store's bound: pruning, and how often it is done. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "history.h"
#include "util.h"
#include "../tap.h"

static char state[] = "/tmp/cellbox-unit-history-XXXXXX";

/* A stored session `name` with `cells` lines, in the sessions directory. */
static void make_session(const char *name, int cells)
{
	char *base = history_sessions_dir(), *dir = xasprintf("%s/%s", base, name);
	char *path = xasprintf("%s/history.jsonl", dir);
	FILE *f;

	CHECK(fsutil_mkdir_p(dir) == 0);
	f = fopen(path, "w");
	CHECK(f != NULL);
	for (int i = 0; f && i < cells; i++)
		fprintf(f, "{\"session\":\"%s\",\"execution_count\":%d,\"code\":\"x\"}\n", name, i + 1);
	if (f)
		fclose(f);
	free(path);
	free(dir);
	free(base);
}

/* Whether the stored session `name` is there. */
static int stored(const char *name)
{
	char *base = history_sessions_dir(), *dir = xasprintf("%s/%s", base, name);
	struct stat st;
	int there = stat(dir, &st) == 0;

	free(dir);
	free(base);
	return there;
}

/* Open and close a session with a bound of `max` cells; its id is written to `id`. */
static void one_session(size_t max, char *id, size_t idlen)
{
	struct strbuf err = STRBUF_INIT;
	struct history *h = history_open(max, 0, &err);

	CHECK(h != NULL);
	if (h)
		snprintf(id, idlen, "%s", history_session_id(h));
	history_close(h);
	strbuf_release(&err);
}

/* Set the prune stamp's time to `ago` seconds before now (negative: in the future). */
static void stamp_age(long ago)
{
	char *base = history_sessions_dir(), *path = xasprintf("%s/../history-pruned", base);
	struct timespec ts[2] = { { .tv_sec = time(NULL) - ago }, { .tv_sec = time(NULL) - ago } };

	CHECK(utimensat(AT_FDCWD, path, ts, 0) == 0);
	free(path);
	free(base);
}

/* The oldest sessions go while more cells than the bound are stored; never the new one. */
static void test_prune_bound(void)
{
	char id[64];

	for (int i = 1; i <= 5; i++) {
		char name[32];
		snprintf(name, sizeof(name), "20200101-00000%d-1", i);
		make_session(name, 2);
	}
	one_session(4, id, sizeof(id));
	CHECK(stored(id));
	CHECK(stored("20200101-000005-1") && stored("20200101-000004-1"));
	CHECK(!stored("20200101-000003-1") && !stored("20200101-000002-1") &&
	      !stored("20200101-000001-1"));
}

/* Pruning again within HISTORY_PRUNE_EVERY is left to a later session. */
/* Sessions one process opens at once each have their own directory and id (an MCP server's). */
static void test_ids_apart(void)
{
	struct strbuf err = STRBUF_INIT;
	struct history *h[3];

	for (int i = 0; i < 3; i++) {
		h[i] = history_open(0, 0, &err);
		CHECK(h[i] != NULL);
	}
	if (h[0] && h[1] && h[2]) {
		size_t n = strlen(history_session_id(h[0]));

		CHECK(strcmp(history_session_id(h[0]), history_session_id(h[1])) != 0);
		CHECK(strcmp(history_session_id(h[1]), history_session_id(h[2])) != 0);
		CHECK(strcmp(history_dir(h[0]), history_dir(h[1])) != 0);
		CHECK(strcmp(history_path(h[1]), history_path(h[2])) != 0);
		/* in one second (as they almost always are): the same stamp and pid, then -2, -3 */
		if (!strncmp(history_session_id(h[0]), history_session_id(h[2]), n)) {
			CHECK_STR(history_session_id(h[1]) + n, "-2");
			CHECK_STR(history_session_id(h[2]) + n, "-3");
		}
	}
	for (int i = 0; i < 3; i++)
		history_close(h[i]);
	strbuf_release(&err);
}

static void test_prune_every(void)
{
	char id[64];

	make_session("20200101-000000-1", 4);
	one_session(4, id, sizeof(id));		/* prunes (no stamp yet): nothing over the bound */
	CHECK(stored("20200101-000000-1"));
	make_session("20190101-000000-1", 3);
	one_session(4, id, sizeof(id));
	CHECK(stored("20190101-000000-1"));	/* the stamp of the last prune is fresh */

	stamp_age(HISTORY_PRUNE_EVERY + 5);
	one_session(4, id, sizeof(id));
	CHECK(!stored("20190101-000000-1"));	/* due again: pruned */
	CHECK(stored("20200101-000000-1"));

	make_session("20180101-000000-1", 3);
	stamp_age(-3600);			/* a stamp in the future: the clock moved back */
	one_session(4, id, sizeof(id));
	CHECK(!stored("20180101-000000-1"));
}

/* A cell's line read back where it was appended (the UI's output pager); a store that
 * changed under it is refused. */
static void test_read_entry(void)
{
	struct strbuf err = STRBUF_INIT, big = STRBUF_INIT;
	struct history *h = history_open(1000, 0, &err);
	cJSON *outs = cJSON_CreateArray(), *o = cJSON_CreateObject(), *e;
	long long at1, at2;
	size_t len1, len2, len;
	char *moved;

	CHECK(h != NULL);
	if (!h)
		return;
	CHECK(history_last_at(h, &len) == -1);
	for (int i = 0; i < 100000; i++)
		strbuf_addstr(&big, "0123456789\n");
	cJSON_AddStringToObject(o, "output_type", "stream");
	cJSON_AddStringToObject(o, "name", "stdout");
	cJSON_AddStringToObject(o, "text", big.buf);
	cJSON_AddItemToArray(outs, o);
	CHECK(history_append(h, &(struct history_cell){ .execution_count = 1, .code = "a",
							.outputs = outs }, &err) == 0);
	at1 = history_last_at(h, &len1);
	CHECK(history_append(h, &(struct history_cell){ .execution_count = 2, .code = "b" },
			     &err) == 0);
	at2 = history_last_at(h, &len2);
	CHECK(at1 == 0 && len1 > big.len && at2 == (long long)len1);
	e = history_read_entry(h, at1, len1, &err);
	CHECK(e != NULL);
	CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItem(e, "code")), "a");
	o = cJSON_GetArrayItem(cJSON_GetObjectItem(e, "outputs"), 0);
	CHECK(o && strlen(cJSON_GetStringValue(cJSON_GetObjectItem(o, "text"))) == big.len);
	cJSON_Delete(e);
	e = history_read_entry(h, at2, len2, &err);
	CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItem(e, "code")), "b");
	cJSON_Delete(e);
	/* not where a line ends, past the file, over the cap: refused */
	CHECK(history_read_entry(h, at1, len1 - 1, &err) == NULL);
	tap_note(err.buf);
	strbuf_reset(&err);
	CHECK(history_read_entry(h, at2, len2 + 10, &err) == NULL);
	tap_note(err.buf);
	strbuf_reset(&err);
	CHECK(history_read_entry(h, 0, HISTORY_ENTRY_MAX + 1, &err) == NULL);
	tap_note(err.buf);
	strbuf_reset(&err);
	/* the file replaced by a link: not followed */
	moved = xasprintf("%s/moved.jsonl", state);
	CHECK(rename(history_path(h), moved) == 0);
	CHECK(symlink(moved, history_path(h)) == 0);
	CHECK(history_read_entry(h, at2, len2, &err) == NULL);
	tap_note(err.buf);
	unlink(moved);
	free(moved);
	cJSON_Delete(outs);
	history_close(h);
	strbuf_release(&err);
	strbuf_release(&big);
}

static const struct tap_test tests[] = {
	{ "read_entry", test_read_entry },
	{ "prune_bound", test_prune_bound },
	{ "prune_every", test_prune_every },
	{ "ids_apart", test_ids_apart },
};

int main(int argc, char **argv)
{
	int rc;

	if (!mkdtemp(state))
		return 1;
	setenv("XDG_STATE_HOME", state, 1);
	rc = tap_main(argc, argv, tests, ARRAY_SIZE(tests));
	fsutil_remove_tree(state);
	return rc;
}
