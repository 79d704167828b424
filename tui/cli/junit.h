#ifndef CELLBOX_JUNIT_H
#define CELLBOX_JUNIT_H

/*
 * A JUnit XML report of a replay (`replay --junit FILE`), as pytest's junitxml and nbval
 * write one: a <testsuite> per cell file, a <testcase> per code cell (classname the file,
 * name as the transcript names the cell: "In [3] (x = f(2))"), with <failure> when the cell
 * raised or its outputs differ under --check, <skipped/> when it did not run. Every text is
 * outside text (the kernel's tracebacks, the file's lines): XML-escaped, terminal escapes and
 * other control characters removed, bytes that are not UTF-8 replaced by U+FFFD.
 *
 *	struct junit_suite s;
 *	junit_init(&s, "analysis.ipynb");
 *	junit_add(&s, "In [1] (x = 1)", 0.01, JUNIT_PASSED, NULL, NULL);
 *	junit_add(&s, "In [2] (1 / 0)", 0.02, JUNIT_FAILED, "ZeroDivisionError: ...", tb);
 *	junit_write(&s, &xml);				// one <testsuite>
 *	junit_save("report.xml", xml.buf, 0, &err);	// with <?xml ...?>, tmp + rename
 */

#include <cjson/cJSON.h>
#include "util.h"

enum junit_status { JUNIT_PASSED, JUNIT_FAILED, JUNIT_SKIPPED, JUNIT_ERROR };

struct junit_case {
	char *name;
	double time;
	enum junit_status status;
	char *message;		/* failure / skipped / error: the one line */
	char *text;		/* failure / error: the traceback or the difference */
};

struct junit_suite {
	char *name;
	double time;		/* the whole replay's seconds */
	struct junit_case *cases;
	size_t n, alloc;
};

void junit_init(struct junit_suite *s, const char *name);
void junit_release(struct junit_suite *s);
/* Add a test case (message and text may be NULL); returns it, for more text later. */
struct junit_case *junit_add(struct junit_suite *s, const char *name, double time,
			     enum junit_status status, const char *message, const char *text);
/* Append `text` to a case's text (a new line between), and make it a failure. */
void junit_fail(struct junit_case *c, const char *message, const char *text);
/* Append the suite as one <testsuite> element with its tests, failures, errors, skipped, time. */
void junit_write(const struct junit_suite *s, struct strbuf *out);
/*
 * Write `xml` (one or more <testsuite> elements) to `path` as tmp + rename, after the XML
 * declaration; `many`: inside <testsuites>. -1 with `err`.
 */
int junit_save(const char *path, const char *xml, int many, struct strbuf *err);

/*
 * replay's cells as test cases (replay_junit.c): a cell that ran (failed: its error's name and
 * value, its traceback; else passed), one that did not (skipped, with why), one that could not
 * end (an error); and the report written: `path` whole, or a lone <testsuite> for
 * replay_jobs.c to gather (`fragment`); a replay that ran nothing (`ready` 0) gets an error
 * case. -1 after saying why the file could not be written.
 */
struct outputs;
void replay_junit_ran(struct junit_suite *js, int shown, int index, const char *src,
		      double time, int failed, const struct outputs *out, const cJSON *outs);
void replay_junit_skip(struct junit_suite *js, int index, const char *src, const char *why);
void replay_junit_stopped(struct junit_suite *js, int shown, int index, const char *src,
			  const char *why);
int replay_junit_finish(struct junit_suite *js, const char *path, int fragment, int rc,
			int ready);
/*
 * replay_jobs.c's gathering: append file `file`'s <testsuite> from `fragment` (at most
 * REPLAY_JUNIT_MAX bytes), or, when it wrote none, a suite of one error case saying `status`.
 */
#define REPLAY_JUNIT_MAX ((size_t)256 << 20)
void replay_junit_gather(struct strbuf *all, const char *fragment, const char *file,
			 const char *status, int rc, double seconds);

#endif
