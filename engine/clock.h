#ifndef CELLBOX_CLOCK_H
#define CELLBOX_CLOCK_H

/* Clocks as seconds in a double: for timeouts (monotonic) and for records (wall). */

/* Seconds on the monotonic clock. */
double clock_now(void);
/* Seconds since the epoch. */
double clock_wall(void);

#endif
