/* Unit tests of the outputs collector: events -> nbformat outputs, display ids, one collection
   shared by a notebook and the history store. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "outputs.h"
#include "util.h"
#include "../tap.h"

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

static const struct tap_test tests[] = {
	{ "outputs", test_outputs },
	{ "outputs_displays", test_outputs_displays },
	{ "outputs_shared", test_outputs_shared },
};

int main(int argc, char **argv)
{
	return tap_main(argc, argv, tests, ARRAY_SIZE(tests));
}
