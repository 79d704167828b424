/* replay --junit: the replayed cells as test cases of a junit_suite (junit.h). */
#include "replay_jobs.h"

#include <stdlib.h>
#include <string.h>

#include "junit.h"
#include "outputs.h"

/* A cell's test name: "In [3] (first line)", or "cell 5 (first line)" when it did not run. */
static void replay_junit_name(struct strbuf *name, int shown, int index, const char *src)
{
	struct strbuf line = STRBUF_INIT;
	const char *first = cli_first_line(src, 60, &line, NULL);

	if (shown > 0)
		strbuf_addf(name, "In [%d] (%s)", shown, first);
	else
		strbuf_addf(name, "cell %d (%s)", index, first);
	strbuf_release(&line);
}

/* Add the cell that ran: failed (its error's name and value, its traceback) or passed. */
void replay_junit_ran(struct junit_suite *js, int shown, int index, const char *src,
		      double time, int failed, const struct outputs *out, const cJSON *outs)
{
	struct strbuf name = STRBUF_INIT, msg = STRBUF_INIT, tb = STRBUF_INIT;
	const cJSON *o, *line;

	replay_junit_name(&name, shown, index, src);
	cJSON_ArrayForEach(o, outs) {
		const char *type = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, "output_type"));
		const char *ename, *evalue;

		if (!type || strcmp(type, "error"))
			continue;
		ename = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, "ename"));
		evalue = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, "evalue"));
		strbuf_reset(&msg);
		strbuf_addf(&msg, "%s: %s", ename ? ename : "error", evalue ? evalue : "");
		cJSON_ArrayForEach(line, cJSON_GetObjectItemCaseSensitive(o, "traceback"))
			if (cJSON_IsString(line))
				strbuf_addf(&tb, "%s\n", line->valuestring);
	}
	if (failed && !msg.len)
		strbuf_addf(&msg, "the cell ended %s%s%s", out->status, out->detail ? ": " : "",
			    out->detail ? out->detail : "");
	junit_add(js, name.buf, time, failed ? JUNIT_FAILED : JUNIT_PASSED,
		  failed ? msg.buf : NULL, failed ? tb.buf : NULL);
	strbuf_release(&name);
	strbuf_release(&msg);
	strbuf_release(&tb);
}

/* Add a code cell that did not run, with why. */
void replay_junit_skip(struct junit_suite *js, int index, const char *src, const char *why)
{
	struct strbuf name = STRBUF_INIT;

	replay_junit_name(&name, 0, index, src);
	junit_add(js, name.buf, 0, JUNIT_SKIPPED, why, NULL);
	strbuf_release(&name);
}

/* Add the cell that could not end (the kernel would not take it, a signal stopped replay). */
void replay_junit_stopped(struct junit_suite *js, int shown, int index, const char *src,
			  const char *why)
{
	struct strbuf name = STRBUF_INIT;

	replay_junit_name(&name, shown, index, src);
	junit_add(js, name.buf, 0, JUNIT_ERROR, why, NULL);
	strbuf_release(&name);
}

/* Write the report: one <testsuite> (a fragment for replay_jobs.c when `fragment`). */
int replay_junit_finish(struct junit_suite *js, const char *path, int fragment, int rc,
			int ready)
{
	struct strbuf xml = STRBUF_INIT, err = STRBUF_INIT;
	int ok;

	if (!ready && !js->n) {
		struct strbuf m = STRBUF_INIT;
		strbuf_addf(&m, "nothing ran (exit %d): see the messages", rc);
		junit_add(js, "replay", 0, JUNIT_ERROR, m.buf, NULL);
		strbuf_release(&m);
	}
	junit_write(js, &xml);
	ok = fragment ? fsutil_write_atomic(path, xml.buf, xml.len, 0600, &err)
		      : junit_save(path, xml.buf, 0, &err);
	if (ok < 0)
		msg_error("--junit: %s", err.buf);
	strbuf_release(&xml);
	strbuf_release(&err);
	return ok;
}

void replay_junit_gather(struct strbuf *all, const char *fragment, const char *file,
			 const char *status, int rc, double seconds)
{
	struct strbuf one = STRBUF_INIT;

	if (strbuf_read_file(&one, fragment, REPLAY_JUNIT_MAX) == 0 && one.len) {
		strbuf_add(all, one.buf, one.len);
	} else {
		/* It ended before writing one (stopped, not run, bad file): a suite saying so. */
		struct junit_suite js;
		char *why = xasprintf("no report: %s (exit %d)", status, rc);

		junit_init(&js, file);
		junit_add(&js, "replay", seconds, JUNIT_ERROR, why, NULL);
		junit_write(&js, all);
		junit_release(&js);
		free(why);
	}
	strbuf_release(&one);
}
