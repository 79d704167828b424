#ifndef CELLBOX_NUMCONV_H
#define CELLBOX_NUMCONV_H

/*
 * Doubles to integers without undefined behaviour. cJSON keeps every number as a double and
 * cellbox keeps seconds as doubles; a double outside an integer type's range (1e300, an
 * infinity, a NaN) cast to that type is undefined behaviour in C, not a large value. So what
 * came from outside (an MCP client's id, a notebook's counts, dockerd's replies, a timeout
 * such as `--timeout 1e300`) becomes an integer here, and nowhere by a bare cast.
 */

#include <cjson/cJSON.h>

/*
 * Whether `v` is a JSON number that is a whole number in [lo, hi]; `*out` (when not NULL)
 * then holds it. 1e300, 1.5 and a string are not.
 */
static inline int json_integer(const cJSON *v, long long lo, long long hi, long long *out)
{
	double d;
	long long n;

	if (!cJSON_IsNumber(v))
		return 0;
	d = v->valuedouble;
	if (!(d > -9.2e18 && d < 9.2e18))	/* inside long long's range; false for a NaN */
		return 0;
	n = (long long)d;
	if ((double)n != d || n < lo || n > hi)
		return 0;
	if (out)
		*out = n;
	return 1;
}

/* The furthest a time in seconds is kept as it is: about 3000 years, as a deadline or as
   seconds since the epoch (a time_t, gmtime() still works). A timeout past it is none. */
#define SECONDS_FAR 1e11

/*
 * Milliseconds for poll() or epoll_wait() to wait `left` seconds: 0 when nothing is left,
 * else rounded up (so a wait never ends just before its deadline), at most a day (callers
 * loop and look at their deadline again).
 */
static inline int wait_ms(double left)
{
	if (!(left > 0))
		return 0;
	if (left > 86400)
		return 86400 * 1000;
	return (int)(left * 1000) + 1;
}

/* `t` seconds within [0, SECONDS_FAR], for a time_t or a timespec (a NaN becomes 0). */
static inline double seconds_clamp(double t)
{
	return t > SECONDS_FAR ? SECONDS_FAR : t > 0 ? t : 0;
}

#endif
