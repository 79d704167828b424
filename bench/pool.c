/*
 * Session-ready time: session_open() from a warm pool against a cold start, on the local or
 * docker backend. Prints one JSON object per case: {"case", "n", "median_ms", "p90_ms"}.
 * Usage: bench_pool POOL_DIR N PYTHON [BACKEND] (bench/pool.py starts the daemon).
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "session.h"
#include "stats.h"
#include "util.h"

/* Wait until the daemon has a warm kernel in ready/ (the refill is not what we time). */
static void wait_warm(const char *pool_dir)
{
	char *ready = xasprintf("%s/ready", pool_dir);

	for (int found = 0; !found; ) {
		DIR *d = opendir(ready);
		struct dirent *de;

		while (d && (de = readdir(d)))
			found |= de->d_name[0] != '.';
		if (d)
			closedir(d);
		if (!found)
			usleep(10000);
	}
	free(ready);
}

/* Open and close `n` sessions, timing session_open(). */
static void measure(const char *name, struct session_opts *so, int n)
{
	double *t = xmalloc(sizeof(double) * (size_t)n);
	struct strbuf err = STRBUF_INIT;

	for (int i = 0; i < n; i++) {
		double t0;
		struct session *s;

		if (so->pool_dir)
			wait_warm(so->pool_dir);
		t0 = clock_now();
		s = session_open(so, &err);

		if (!s || (so->pool_dir && !session_pooled(s))) {
			fprintf(stderr, "bench_pool: %s: %s\n", name,
				s ? session_pool_note(s) : err.buf);
			exit(1);
		}
		t[i] = (clock_now() - t0) * 1e3;
		session_close(s);
	}
	stats_print_case(name, t, n, 3);
	free(t);
	strbuf_release(&err);
}

int main(int argc, char **argv)
{
	struct session_opts so = { 0 };
	int n = argc > 2 ? atoi(argv[2]) : 20;

	if (argc < 2) {
		fprintf(stderr, "usage: bench_pool POOL_DIR [N] [PYTHON] [BACKEND]\n");
		return 2;
	}
	so.python = argc > 3 ? argv[3] : "/usr/bin/python3";
	so.backend = argc > 4 ? argv[4] : "local";
	measure("cold", &so, n);
	so.pool_dir = argv[1];
	so.pool_strategy = POOL_FAIL_FAST;
	measure("pooled", &so, n);
	return 0;
}
