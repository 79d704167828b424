#ifndef CELLBOX_CLOCK_H
#define CELLBOX_CLOCK_H

/* Clocks as seconds in a double: for timeouts (monotonic) and for records (wall). */

/* Seconds on the monotonic clock. */
double now_monotonic(void);
/* Seconds since the epoch. */
double now_wall(void);

#endif
