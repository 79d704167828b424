#ifndef CELLBOX_TAP_H
#define CELLBOX_TAP_H

/*
 * A tiny TAP producer for the C tests: CHECK() records one assertion, the test functions
 * are listed in a table, and `prog NAME` runs only the test called NAME (meson registers
 * each test of the table separately, reading the names from the table itself: write it as
 * `static const struct tap_test tests[] = {`, one `{ "name", fn },` a line, then `};`).
 * Output is TAP, read by `meson test`.
 */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct tap_test {
	const char *name;
	void (*fn)(void);
};

static int tap_count, tap_failed;

#define CHECK(cond) tap_check(!!(cond), #cond, __FILE__, __LINE__)
#define CHECK_STR(a, b) tap_check_str((a), (b), #a, __FILE__, __LINE__)

static inline void tap_check(int ok, const char *what, const char *file, int line)
{
	tap_count++;
	printf("%sok %d - %s:%d %s\n", ok ? "" : "not ", tap_count, file, line, what);
	if (!ok)
		tap_failed++;
	fflush(stdout);
}

static inline void tap_check_str(const char *a, const char *b, const char *what,
				 const char *file, int line)
{
	int ok = a && b && !strcmp(a, b);
	tap_check(ok, what, file, line);
	if (!ok)
		printf("# got      '%s'\n# expected '%s'\n", a ? a : "(null)", b ? b : "(null)");
}

/* Print text as TAP diagnostics, every line behind '# '. */
static inline void tap_note(const char *text)
{
	while (text && *text) {
		const char *nl = strchr(text, '\n');
		int len = nl ? (int)(nl - text) : (int)strlen(text);
		printf("# %.*s\n", len, text);
		text += len + (nl ? 1 : 0);
	}
}

static inline int tap_main(int argc, char **argv, const struct tap_test *tests, size_t n)
{
	int ran = 0;

	for (size_t i = 0; i < n; i++) {
		if (argc > 1 && strcmp(argv[1], tests[i].name))
			continue;
		printf("# %s\n", tests[i].name);
		tests[i].fn();
		ran++;
	}
	if (!ran) {
		printf("Bail out! no test called '%s'\n", argc > 1 ? argv[1] : "");
		return 1;
	}
	printf("1..%d\n", tap_count);
	return tap_failed ? 1 : 0;
}

#endif
