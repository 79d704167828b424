#ifndef CELLBOX_BENCH_STATS_H
#define CELLBOX_BENCH_STATS_H

/*
 * The benchmarks' timings: sorted, and a case printed as the one JSON line the bench
 * scripts read ({"case", "n", "median_ms", "p90_ms"}).
 */

/* Sort the `n` times in `t`, smallest first. */
void stats_sort(double *t, int n);

/* Sort the `n` times (ms) in `t` and print the case `name`: its median and p90, with
 * `decimals` digits after the point. */
void stats_print_case(const char *name, double *t, int n, int decimals);

#endif
