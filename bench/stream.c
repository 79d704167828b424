/*
 * One container session's warm round trips, for bench/remote.py: `pass`, and a cell that
 * shows a prepared 100 KB PNG (its plot file crosses the channel before the event naming it),
 * on the engine and channel the environment names (DOCKER_HOST and its TLS settings, or
 * CELLBOX_BENCH_HOST; CELLBOX_BENCH_CHANNEL shared|stream; CELLBOX_BENCH_RUNTIME). Prints one
 * JSON object per case ({"case", "n", "median_ms", "p90_ms"}), and the stream's own round trip
 * to the relay (session_latency) as the case "ping".
 *
 *	bench_stream [N]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "session.h"
#include "stats.h"
#include "util.h"

static int plots_seen;

static void count(struct session *s, const struct session_event *ev, void *data)
{
	(void)s, (void)data;
	if (ev->type == SESSION_EV_DISPLAY)
		plots_seen++;
}

/* Run `code` once and wait for its end; its time in ms. */
static double once(struct session *s, const char *code)
{
	struct strbuf err = STRBUF_INIT;
	double t0 = clock_now();
	unsigned long id = session_execute(s, code, 0, 0, count, NULL, &err);

	if (!id) {
		fprintf(stderr, "bench_stream: %s\n", err.buf);
		exit(1);
	}
	while (session_wait(s, id) < 0)
		;
	strbuf_release(&err);
	return (clock_now() - t0) * 1e3;
}

static void measure(struct session *s, const char *name, const char *code, int n, int plots)
{
	double *t = xmalloc(sizeof(double) * (size_t)n);

	for (int i = -5; i < n; i++) {
		double ms;

		plots_seen = 0;
		ms = once(s, code);
		if (plots_seen != plots) {
			fprintf(stderr, "bench_stream: %s: %d displays, expected %d\n", name,
				plots_seen, plots);
			exit(1);
		}
		if (i >= 0)
			t[i] = ms;
	}
	stats_print_case(name, t, n, 3);
	free(t);
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 100;
	struct session_opts so = { 0 };
	struct strbuf err = STRBUF_INIT;
	struct session *s;
	double ping;

	if (n < 1)
		n = 1;
	so.backend = "docker";
	so.sandbox.host = getenv("CELLBOX_BENCH_HOST");
	so.sandbox.channel = getenv("CELLBOX_BENCH_CHANNEL");
	so.sandbox.runtime = getenv("CELLBOX_BENCH_RUNTIME");
	s = session_open(&so, &err);
	if (!s) {
		fprintf(stderr, "bench_stream: %s\n", err.buf);
		return 1;
	}
	/* A PNG of about 100 KB (noise compresses badly), made once in the kernel. */
	once(s, "import io, numpy as np, matplotlib; matplotlib.use('Agg')\n"
		"import matplotlib.pyplot as plt\n"
		"from IPython.display import Image, display\n"
		"f = plt.figure(figsize=(2.25, 2.25), dpi=100)\n"
		"plt.imshow(np.random.default_rng(1).random((225, 225, 3)))\n"
		"plt.axis('off'); b = io.BytesIO(); f.savefig(b, format='png'); plt.close(f)\n"
		"png = b.getvalue()\n");
	measure(s, "pass", "pass", n, 0);
	measure(s, "plot 100 KB", "display(Image(png))", n, 1);
	/* the stream's thread pings every 5 s it is quiet: the last answer, taken at rest */
	nanosleep(&(struct timespec){ .tv_sec = 5, .tv_nsec = 500 * 1000 * 1000 }, NULL);
	ping = session_latency(s);
	printf("{\"case\": \"ping\", \"n\": 1, \"median_ms\": %.3f, \"p90_ms\": %.3f}\n", ping, ping);
	session_close(s);
	strbuf_release(&err);
	return 0;
}
