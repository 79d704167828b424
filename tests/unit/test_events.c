/* Unit tests of the event decoder (event.h) and the reason table (reason.h). */
#include <stdlib.h>
#include <string.h>

#include "event.h"
#include "reason.h"
#include "util.h"
#include "../tap.h"

/* Decode `line` into `ev` with a store of the test's; -1 when it is not an event. */
static int decode(struct event_store *st, const char *line, struct session_event *ev)
{
	return event_decode(st, line, strlen(line), 7, ev);
}

static void test_decode(void)
{
	struct event_store st = EVENT_STORE_INIT;
	struct session_event ev;

	CHECK(decode(&st, "{\"type\":\"stream\",\"name\":\"stderr\",\"text\":\"a\\u00e9\\n\"}", &ev) == 0);
	CHECK(ev.type == SESSION_EV_STREAM && ev.id == 7 && ev.stream.stream == SESSION_STDERR);
	CHECK_STR(ev.stream.text, "a\xc3\xa9\n");
	CHECK(ev.stream.len == 4);

	CHECK(decode(&st, "{\"type\":\"display\",\"data\":{\"text/plain\":\"<Figure>\"},"
		      "\"plot\":{\"index\":3,\"path\":\"plots/3.png\",\"format\":\"png\","
		      "\"width\":640,\"height\":480}}", &ev) == 0);
	CHECK(ev.type == SESSION_EV_DISPLAY && ev.display.plot);
	CHECK_STR(ev.display.text, "<Figure>");
	CHECK(ev.display.plot->index == 3 && ev.display.plot->width == 640 &&
	      ev.display.plot->height == 480);
	CHECK(!ev.display.plot->path);	/* the session names its checked copy */
	CHECK_STR(st.named, "plots/3.png");
	CHECK_STR(ev.display.plot->format, "png");
	CHECK(!ev.display.pager && ev.display.execution_count == -1);

	CHECK(decode(&st, "{\"type\":\"result\",\"execution_count\":12,"
		      "\"data\":{\"text/plain\":\"42\",\"text/html\":\"<b>42</b>\"}}", &ev) == 0);
	CHECK(ev.type == SESSION_EV_RESULT && ev.result.execution_count == 12 && !ev.result.plot);
	CHECK_STR(ev.result.text, "42");
	CHECK(cJSON_GetArraySize(ev.result.data) == 2);

	CHECK(decode(&st, "{\"type\":\"error\",\"ename\":\"ValueError\",\"evalue\":\"bad\","
		      "\"traceback\":[\"line 1\",\"line 2\"]}", &ev) == 0);
	CHECK(ev.type == SESSION_EV_ERROR && ev.error.ntraceback == 2);
	CHECK_STR(ev.error.ename, "ValueError");
	CHECK_STR(ev.error.traceback[1], "line 2");

	CHECK(decode(&st, "{\"type\":\"input_request\",\"prompt\":\"name? \",\"password\":true}",
		     &ev) == 0);
	CHECK(ev.type == SESSION_EV_INPUT_REQUEST && ev.input.password);
	CHECK_STR(ev.input.prompt, "name? ");

	CHECK(decode(&st, "{\"type\":\"reply\",\"matches\":[\"os\",\"operator\"],"
		      "\"cursor_start\":7,\"cursor_end\":8}", &ev) == 0);
	CHECK(ev.type == SESSION_EV_REPLY && ev.reply.nmatches == 2 && ev.reply.cursor_start == 7);
	CHECK_STR(ev.reply.matches[1], "operator");
	CHECK(!ev.reply.status && ev.reply.cleared == -1);

	CHECK(decode(&st, "{\"type\":\"done\",\"status\":\"ok\",\"execution_count\":3,"
		      "\"duration\":0.25}", &ev) == 0);
	CHECK(ev.type == SESSION_EV_DONE && ev.done.status == SESSION_STATUS_OK);
	CHECK(ev.done.execution_count == 3 && ev.done.duration == 0.25);
	CHECK(ev.done.reason == REASON_OK && !ev.done.detail);
	CHECK(decode(&st, "{\"type\":\"done\",\"status\":\"aborted\"}", &ev) == 0);
	CHECK(ev.done.status == SESSION_STATUS_ABORTED && ev.done.reason == REASON_ERROR);
	CHECK(ev.done.execution_count == -1);

	CHECK(decode(&st, "{\"type\":\"set_next_input\",\"text\":\"# %load a.py\\nx = 1\\n\","
		      "\"replace\":true}", &ev) == 0);
	CHECK(ev.type == SESSION_EV_NEXT_INPUT && ev.next_input.replace);
	CHECK_STR(ev.next_input.text, "# %load a.py\nx = 1\n");

	CHECK(decode(&st, "{\"type\":\"telepathy\"}", &ev) == 0 && ev.type == SESSION_EV_OTHER);
	event_store_release(&st);
}

/* Outputs as Jupyter makes them: display ids and updates, clear_output, artifacts. */
static void test_decode_outputs(void)
{
	struct event_store st = EVENT_STORE_INIT;
	struct session_event ev;

	CHECK(decode(&st, "{\"type\":\"display\",\"data\":{\"text/plain\":\"two\"},"
		      "\"metadata\":{\"isolated\":true},\"display_id\":\"d1\",\"update\":true}",
		      &ev) == 0);
	CHECK(ev.type == SESSION_EV_DISPLAY && ev.display.update && ev.display.metadata);
	CHECK_STR(ev.display.display_id, "d1");
	CHECK(decode(&st, "{\"type\":\"display\",\"data\":{}}", &ev) == 0);
	CHECK(!ev.display.display_id && !ev.display.update);

	CHECK(decode(&st, "{\"type\":\"result\",\"execution_count\":2,\"data\":{},"
		      "\"plot\":{\"index\":4,\"path\":\"plots/4.png\",\"width\":5,\"height\":6}}",
		      &ev) == 0);
	CHECK(ev.type == SESSION_EV_RESULT && ev.result.plot && ev.result.plot->index == 4);
	CHECK(!ev.result.plot->path);
	CHECK_STR(st.named, "plots/4.png");
	CHECK(!ev.result.display_id && !ev.result.update);

	CHECK(decode(&st, "{\"type\":\"clear_output\",\"wait\":true}", &ev) == 0);
	CHECK(ev.type == SESSION_EV_CLEAR_OUTPUT && ev.clear.wait);
	CHECK(decode(&st, "{\"type\":\"clear_output\"}", &ev) == 0);
	CHECK(ev.type == SESSION_EV_CLEAR_OUTPUT && !ev.clear.wait);
	CHECK_STR(event_type_name(SESSION_EV_CLEAR_OUTPUT), "clear_output");

	CHECK(decode(&st, "{\"type\":\"artifact\",\"index\":7,\"path\":\"plots/7.svg\","
		      "\"format\":\"svg\",\"width\":0,\"height\":0,\"name\":\"out.svg\"}", &ev) == 0);
	CHECK(ev.type == SESSION_EV_ARTIFACT && ev.artifact.file && ev.artifact.file->index == 7);
	CHECK(!ev.artifact.file->path);
	CHECK_STR(st.named, "plots/7.svg");
	CHECK_STR(ev.artifact.file->format, "svg");
	CHECK_STR(ev.artifact.name, "out.svg");
	CHECK_STR(event_type_name(SESSION_EV_ARTIFACT), "artifact");
	event_store_release(&st);
}

/*
 * What a hostile kernel may send: wrong types, paths out of the channel, huge numbers. A path
 * is never a decoded event's: only the session's check (channel_take_file, test_wall_unit.c)
 * turns the kernel's name into one.
 */
static void test_decode_hostile(void)
{
	static const char *const bad_paths[] = {
		"../../etc/passwd", "/etc/passwd", "plots/../../x.png", "..", "", "a/..",
	};
	struct event_store st = EVENT_STORE_INIT;
	struct session_event ev;

	CHECK(decode(&st, "not json", &ev) < 0);
	CHECK(decode(&st, "[1, 2]", &ev) < 0);
	CHECK(decode(&st, "{\"type\": 3}", &ev) < 0);
	CHECK(decode(&st, "{\"text\": \"x\"}", &ev) < 0);

	CHECK(decode(&st, "{\"type\":\"stream\",\"name\":5,\"text\":[1]}", &ev) == 0);
	CHECK(ev.stream.stream == SESSION_STREAM_OTHER && !ev.stream.name);
	CHECK_STR(ev.stream.text, "");
	CHECK(ev.stream.len == 0);

	for (size_t i = 0; i < ARRAY_SIZE(bad_paths); i++) {
		char *line = xasprintf("{\"type\":\"display\",\"plot\":{\"path\":\"%s\"}}",
				       bad_paths[i]);
		CHECK(decode(&st, line, &ev) == 0 && ev.display.plot && !ev.display.plot->path &&
		      !ev.display.plot->data);
		free(line);
	}
	for (size_t i = 0; i < ARRAY_SIZE(bad_paths); i++) {
		char *line = xasprintf("{\"type\":\"artifact\",\"path\":\"%s\",\"name\":\"x\"}",
				       bad_paths[i]);
		CHECK(decode(&st, line, &ev) == 0 && ev.artifact.file && !ev.artifact.file->path);
		free(line);
	}
	CHECK(decode(&st, "{\"type\":\"artifact\",\"path\":7,\"index\":\"7\",\"name\":[],"
		      "\"width\":1e300}", &ev) == 0);
	CHECK(ev.artifact.file && !ev.artifact.file->path && !st.named && !ev.artifact.name);
	CHECK(ev.artifact.file->index == 0 && ev.artifact.file->width == 0);
	CHECK(decode(&st, "{\"type\":\"display\",\"display_id\":5,\"update\":\"yes\","
		      "\"metadata\":[]}", &ev) == 0);
	CHECK(!ev.display.display_id && !ev.display.update && !ev.display.metadata);
	CHECK(decode(&st, "{\"type\":\"clear_output\",\"wait\":\"true\"}", &ev) == 0);
	CHECK(!ev.clear.wait);
	CHECK(decode(&st, "{\"type\":\"display\",\"plot\":{\"path\":\"plots/a..b.png\"}}", &ev) == 0);
	CHECK_STR(st.named, "plots/a..b.png");	/* the kernel's word, for the session to check */
	CHECK(decode(&st, "{\"type\":\"display\",\"plot\":\"plots/1.png\",\"data\":[\"x\"]}",
		     &ev) == 0);
	CHECK(!ev.display.plot && !ev.display.data && !ev.display.text);

	CHECK(decode(&st, "{\"type\":\"result\",\"execution_count\":1e300,\"data\":{\"text/plain\":1}}",
		     &ev) == 0);
	CHECK(ev.result.execution_count == -1 && !ev.result.text && ev.result.data);
	CHECK(decode(&st, "{\"type\":\"error\",\"ename\":{},\"traceback\":[1,\"only\",null]}",
		     &ev) == 0);
	CHECK(!ev.error.ename && ev.error.ntraceback == 1);
	CHECK_STR(ev.error.traceback[0], "only");
	CHECK(decode(&st, "{\"type\":\"done\",\"status\":\"fine\",\"duration\":-5,"
		      "\"execution_count\":\"3\"}", &ev) == 0);
	CHECK(ev.done.status == SESSION_STATUS_ERROR && ev.done.reason == REASON_ERROR);
	CHECK(ev.done.duration == 0 && ev.done.execution_count == -1);
	/* set_next_input with no text, or not a string: empty text, no replace */
	CHECK(decode(&st, "{\"type\":\"set_next_input\",\"text\":[\"x\"],\"replace\":\"yes\"}",
		     &ev) == 0);
	CHECK(ev.type == SESSION_EV_NEXT_INPUT && !ev.next_input.replace);
	CHECK_STR(ev.next_input.text, "");
	event_store_release(&st);
}

/* A policy's verdict is the host's: the kernel's error events never carry one. */
static void test_decode_violations(void)
{
	static const char line[] = "{\"type\":\"error\",\"ename\":\"SecurityViolation\","
				   "\"evalue\":\"v\",\"violations\":[{\"rule\":\"os\"}]}";
	struct event_store st = EVENT_STORE_INIT;
	struct session_event ev;

	CHECK(decode(&st, line, &ev) == 0);
	CHECK(ev.type == SESSION_EV_ERROR && !ev.error.violations);
	CHECK_STR(ev.error.ename, "SecurityViolation");
	CHECK(event_decode_made(&st, cJSON_Parse(line), 9, &ev) == 0);
	CHECK(ev.id == 9 && ev.error.violations && cJSON_GetArraySize(ev.error.violations) == 1);
	CHECK_STR(ev.error.evalue, "v");
	CHECK(event_decode_made(&st, cJSON_Parse("{\"type\":\"error\",\"violations\":{}}"), 9,
				&ev) == 0 && !ev.error.violations);	/* not an array */
	CHECK(event_decode_made(&st, cJSON_Parse("[1]"), 9, &ev) < 0);
	event_store_release(&st);
}

/*
 * A done's usage is the host's: the kernel's line cannot claim one; a named session's host's
 * (decoded as made) is read with its types checked, and goes back out the same.
 */
static void test_decode_usage(void)
{
	static const char line[] = "{\"type\":\"done\",\"status\":\"ok\",\"usage\":"
				   "{\"cpu_seconds\":0.5,\"peak_memory_bytes\":1048576,"
				   "\"wall_seconds\":2}}";
	struct event_store st = EVENT_STORE_INIT;
	struct session_event ev;
	cJSON *back;
	char buf[64];

	CHECK(decode(&st, line, &ev) == 0 && ev.type == SESSION_EV_DONE);
	CHECK(ev.done.usage.cpu_seconds < 0 && ev.done.usage.peak_memory_bytes < 0 &&
	      ev.done.usage.wall_seconds < 0);	/* the kernel's word is not taken */
	CHECK(event_decode_made(&st, cJSON_Parse(line), 3, &ev) == 0);
	CHECK(ev.done.usage.cpu_seconds == 0.5 && ev.done.usage.peak_memory_bytes == 1048576 &&
	      ev.done.usage.wall_seconds == 2);
	back = event_to_json(&ev);
	CHECK(cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(back, "usage"),
					       "peak_memory_bytes")->valuedouble == 1048576);
	cJSON_Delete(back);
	usage_format(&ev.done.usage, buf, sizeof(buf));
	CHECK_STR(buf, "0.50 s CPU, 1 MiB peak");
	CHECK(event_decode_made(&st, cJSON_Parse("{\"type\":\"done\",\"usage\":{\"cpu_seconds\":"
						  "\"1\",\"peak_memory_bytes\":1e300,"
						  "\"wall_seconds\":-1}}"), 3, &ev) == 0);
	CHECK(ev.done.usage.cpu_seconds < 0 && ev.done.usage.peak_memory_bytes < 0 &&
	      ev.done.usage.wall_seconds < 0);	/* a string, past any memory, negative */
	CHECK(event_decode_made(&st, cJSON_Parse("{\"type\":\"done\",\"usage\":[1]}"), 3,
				&ev) == 0 && ev.done.usage.cpu_seconds < 0);
	usage_format(&ev.done.usage, buf, sizeof(buf));
	CHECK_STR(buf, "");
	event_store_release(&st);
}

/* Mutated event lines: never a crash, and every field keeps its contract. */
static void test_decode_fuzz(void)
{
	static const char *const seeds[] = {
		"{\"type\":\"stream\",\"name\":\"stdout\",\"text\":\"hello\\n\"}",
		"{\"type\":\"display\",\"data\":{\"text/plain\":\"x\"},\"plot\":{\"index\":1,"
		"\"path\":\"plots/1.png\",\"width\":2,\"height\":3}}",
		"{\"type\":\"error\",\"ename\":\"E\",\"evalue\":\"v\",\"traceback\":[\"a\",\"b\"]}",
		"{\"type\":\"reply\",\"matches\":[\"a\",\"b\"],\"cursor_start\":0,\"cursor_end\":1}",
		"{\"type\":\"done\",\"status\":\"ok\",\"execution_count\":1,\"duration\":0.1}",
		"{\"type\":\"artifact\",\"index\":2,\"path\":\"plots/2.html\",\"format\":\"html\","
		"\"name\":\"f.html\"}",
		"{\"type\":\"display\",\"data\":{},\"display_id\":\"d\",\"update\":true}",
	};
	struct event_store st = EVENT_STORE_INIT;
	unsigned seed = 4242;
	int decoded = 0, ok = 1;

	for (int round = 0; round < 20000; round++) {
		const char *s = seeds[round % ARRAY_SIZE(seeds)];
		size_t n = strlen(s);
		char *line = xmalloc(n);	/* exact size: ASan sees an over-read */
		struct session_event ev;

		memcpy(line, s, n);
		for (int k = 0; k < 3; k++) {
			seed = seed * 1103515245 + 12345;
			line[(seed >> 8) % n] = "\"{}[],:.0a\\/"[(seed >> 20) % 12];
		}
		if (event_decode(&st, line, n, 1, &ev) == 0) {
			decoded++;
			if (ev.type == SESSION_EV_STREAM &&
			    (!ev.stream.text || ev.stream.len != strlen(ev.stream.text)))
				ok = 0;
			if (ev.type == SESSION_EV_DISPLAY && ev.display.plot &&
			    ev.display.plot->path)
				ok = 0;	/* only the session names a checked copy */
			if (ev.type == SESSION_EV_ARTIFACT &&
			    (!ev.artifact.file || (ev.artifact.file->path &&
						   (ev.artifact.file->path[0] == '/' ||
						    strstr(ev.artifact.file->path, "../")))))
				ok = 0;
			if (ev.type == SESSION_EV_ERROR)
				for (size_t i = 0; i < ev.error.ntraceback; i++)
					ok &= ev.error.traceback[i] != NULL;
			if (ev.type == SESSION_EV_REPLY)
				for (size_t i = 0; i < ev.reply.nmatches; i++)
					ok &= ev.reply.matches[i] != NULL;
		}
		free(line);
	}
	CHECK(ok);
	CHECK(decoded > 1000);	/* the sweep reached the decoder, not only the JSON parser */
	event_store_release(&st);
}

static void test_reasons(void)
{
	struct strbuf sb = STRBUF_INIT;
	enum reason r;

	CHECK(reason_exit_code(REASON_OK) == EXIT_OK);
	CHECK(reason_exit_code(REASON_ERROR) == EXIT_CELL_ERROR);
	CHECK(reason_exit_code(REASON_TIMEOUT) == EXIT_TIMEOUT);
	CHECK(reason_exit_code(REASON_TIMEOUT_KILLED) == EXIT_TIMEOUT);
	CHECK(reason_exit_code(REASON_KERNEL_DIED) == EXIT_KERNEL_DIED);
	CHECK(reason_exit_code(REASON_OOM_KILLED) == EXIT_KERNEL_DIED);
	CHECK(reason_exit_code(REASON_CHANNEL_LOST) == EXIT_KERNEL_DIED);
	CHECK(reason_exit_code(REASON_CANNOT_START) == EXIT_NO_KERNEL);
	CHECK(reason_exit_code(REASON_INTERRUPTED) == EXIT_INTERRUPTED);
	CHECK(reason_exit_code(REASON_BAD_INPUT) == EXIT_USAGE);
	CHECK(reason_exit_code(REASON_BLOCKED) == EXIT_POLICY);
	CHECK(!reason_kernel_gone(REASON_BLOCKED));
	for (int i = 0; i < REASON_COUNT; i++)
		CHECK(reason_parse(reason_name((enum reason)i), &r) == 0 && r == (enum reason)i);
	CHECK(reason_parse("nope", &r) < 0);
	CHECK_STR(reason_name(REASON_OOM_KILLED), "oom_killed");
	CHECK_STR(reason_name(REASON_COUNT), "unknown");
	reason_describe_exit_codes(", ", &sb);
	CHECK_STR(sb.buf, "0 ok, 1 the code raised, 2 bad arguments or input (nothing ran), "
		  "3 timeout, 4 the kernel died, 5 the kernel could not start, "
		  "7 the security policy blocked the code (nothing ran), 130 interrupted");
	strbuf_release(&sb);
}

static const struct tap_test tests[] = {
	{ "decode", test_decode },
	{ "decode_outputs", test_decode_outputs },
	{ "decode_hostile", test_decode_hostile },
	{ "decode_violations", test_decode_violations },
	{ "decode_usage", test_decode_usage },
	{ "decode_fuzz", test_decode_fuzz },
	{ "reasons", test_reasons },
};

int main(int argc, char **argv)
{
	return tap_main(argc, argv, tests, ARRAY_SIZE(tests));
}
