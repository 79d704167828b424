#ifndef CELLBOX_PNGCHILD_H
#define CELLBOX_PNGCHILD_H

/*
 * A kernel's PNG decoded in a child process, so a decoder bug costs one plot, not the front
 * end. The child is a fork (no exec) that resets the signals the front end catches, keeps
 * only the pipe it answers on, sets its limits (CPU seconds, no file writes, no core, few
 * descriptors, and an address space of what it was forked with plus `memory`; under ASan,
 * whose shadow memory an address-space limit breaks, that one is left out), runs
 * pngdecode_rgb() and writes a header (its answer, width, height, or a reason) and the pixels
 * to the pipe, then _exit()s. The parent reads it under a wall-clock deadline, kills
 * (SIGKILL) and reaps the child on time-out, takes only a header within the caps followed by
 * exactly width x height x 3 bytes, and keeps of the child's reason only printable ASCII.
 *
 *	rgb = pngchild_decode(png, len, 8192, NULL, &w, &h, &why);
 *	if (!rgb)
 *		... "plot 3 could not be decoded: <why>"
 */

#include <stddef.h>
#include "util.h"

struct pngchild_limits {
	int cpu_seconds;		/* RLIMIT_CPU: SIGXCPU at this, SIGKILL a second later */
	int wall_ms;			/* the parent's deadline for the whole answer */
	size_t memory;			/* RLIMIT_AS: this much more than the fork started with */
};

/* The limits used when none are given: generous for an 8192 x 8192 plot under ASan. */
extern const struct pngchild_limits pngchild_default_limits;

/*
 * Fault injection for the tests only (a real decoder hang or crash cannot be produced on
 * demand with libpng): what the child does instead of decoding. Never set by the program.
 */
enum pngchild_fault {
	PNGCHILD_FAULT_NONE = 0,
	PNGCHILD_FAULT_SPIN,		/* burn CPU forever: the CPU limit ends it */
	PNGCHILD_FAULT_SLEEP,		/* wait forever: the parent's deadline ends it */
	PNGCHILD_FAULT_ABORT,		/* abort(): a decoder's failed assertion */
	PNGCHILD_FAULT_ALLOC,		/* touch 4 GiB: the address-space limit ends it */
	PNGCHILD_FAULT_LIE,		/* answer a size that is not the image's */
};
extern enum pngchild_fault pngchild_fault;

/* Decode `len` bytes in a child under `lim` (NULL = the defaults) to w x h RGB888 pixels (the
 * caller frees); NULL with `why`. */
unsigned char *pngchild_decode(const void *png, size_t len, int max_side,
			       const struct pngchild_limits *lim, int *w, int *h,
			       struct strbuf *why);

#endif
