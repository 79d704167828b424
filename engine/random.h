#ifndef CELLBOX_RANDOM_H
#define CELLBOX_RANDOM_H

/*
 * Names no one can guess: request ids, session names, temporary files beside a target
 * (fsutil.h) or in a channel (wall.h). The bytes come from the kernel (getrandom).
 */

#include <stddef.h>

/* `n` random bytes (at most 64), as 2n lowercase hex digits and a NUL into `hex`. */
void random_hex(char *hex, size_t n);

#endif
