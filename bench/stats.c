/* The benchmarks' timings (stats.h). */
#include "stats.h"

#include <stdio.h>
#include <stdlib.h>

/* Compare doubles for qsort. */
static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

void stats_sort(double *t, int n)
{
	qsort(t, (size_t)n, sizeof(double), cmp_double);
}

void stats_print_case(const char *name, double *t, int n, int decimals)
{
	stats_sort(t, n);
	printf("{\"case\": \"%s\", \"n\": %d, \"median_ms\": %.*f, \"p90_ms\": %.*f}\n", name, n,
	       decimals, t[n / 2], decimals, t[n * 9 / 10]);
	fflush(stdout);
}
