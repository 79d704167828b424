/*
 * Warm round-trip latency of the cellbox engine on the local backend: submit a cell, wait
 * for its done event. Prints one JSON object per case: {"case", "n", "median_ms", "p90_ms"}.
 * bench/roundtrip.py runs this next to jupyter_client and prints the ratio; with a third
 * argument `r`, the R kernel's cases (bench/roundtrip_r.py, next to IRkernel).
 *
 *	bench_roundtrip SCALE INTERPRETER [KERNEL]		(SCALE 0: the start alone)
 *
 * CELLBOX_BENCH_BACKEND=docker (or podman) runs the session in a container instead (the
 * kernel image of this build; INTERPRETER is then unused).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "session.h"
#include "stats.h"
#include "util.h"

static size_t bytes_seen;

static void count(struct session *s, const struct session_event *ev, void *data)
{
	(void)s, (void)data;
	if (ev->type == SESSION_EV_STREAM)
		bytes_seen += ev->stream.len;
}

/* Time `n` round trips of `code` after `warm` unmeasured ones. */
static void measure(struct session *s, const char *name, const char *code, int n, int warm,
		    size_t expect_bytes)
{
	double *t = xmalloc(sizeof(double) * (size_t)n);
	struct strbuf err = STRBUF_INIT;

	for (int i = -warm; i < n; i++) {
		double t0 = clock_now();
		unsigned long id;

		bytes_seen = 0;
		id = session_execute(s, code, 0, 0, count, NULL, &err);
		if (!id) {
			fprintf(stderr, "roundtrip: %s\n", err.buf);
			exit(1);
		}
		while (session_wait(s, id) < 0)
			;
		if (bytes_seen != expect_bytes) {
			fprintf(stderr, "roundtrip: %s: got %zu bytes, expected %zu\n", name,
				bytes_seen, expect_bytes);
			exit(1);
		}
		if (i >= 0)
			t[i] = (clock_now() - t0) * 1e3;
	}
	stats_print_case(name, t, n, 4);
	free(t);
	strbuf_release(&err);
}

int main(int argc, char **argv)
{
	struct session_opts so = { 0 };
	struct strbuf err = STRBUF_INIT;
	struct session *s;
	int scale = argc > 1 ? atoi(argv[1]) : 1;
	double t0 = clock_now();

	so.python = argc > 2 ? argv[2] : "/usr/bin/python3";
	so.kernel = argc > 3 ? argv[3] : NULL;
	so.backend = getenv("CELLBOX_BENCH_BACKEND");
	s = session_open(&so, &err);
	if (!s) {
		fprintf(stderr, "roundtrip: %s\n", err.buf);
		return 1;
	}
	/* CELLBOX_BENCH_KEEP=1: the executes kept as the UI's and the REPL's are (session.h) */
	if (getenv("CELLBOX_BENCH_KEEP") && !strcmp(getenv("CELLBOX_BENCH_KEEP"), "1"))
		session_keep_cells(s);
	printf("{\"case\": \"start\", \"n\": 1, \"median_ms\": %.4f, \"p90_ms\": %.4f}\n",
	       (clock_now() - t0) * 1e3, (clock_now() - t0) * 1e3);
	if (scale == 0) {	/* the start alone */
		session_close(s);
		strbuf_release(&err);
		return 0;
	}
	if (so.kernel && !strcmp(so.kernel, "r")) {
		measure(s, "NULL", "NULL", 500 * scale, 50, 0);
		measure(s, "cat(1)", "cat('1\\n')", 500 * scale, 50, 2);
		measure(s, "cat 1 MB", "cat(strrep('x', 2^20), '\\n', sep = '')", 30 * scale, 3,
			(1 << 20) + 1);
	} else {
		measure(s, "pass", "pass", 1000 * scale, 50, 0);
		measure(s, "print(1)", "print(1)", 500 * scale, 50, 2);
		measure(s, "two prints", "print(1); print(2)", 500 * scale, 50, 4);
		measure(s, "print 1 MB", "print('x' * (1 << 20))", 30 * scale, 3, (1 << 20) + 1);
	}
	session_close(s);
	strbuf_release(&err);
	return 0;
}
