#ifndef CELLBOX_IPYCOLORS_H
#define CELLBOX_IPYCOLORS_H

/*
 * IPython's colour scheme, matched to the terminal: tracebacks and `obj?` help in IPython's
 * default scheme (Linux) are made for a dark background; on a light one LightBG is
 * readable. The scheme is set with a silent cell (%colors) queued before the user's cells;
 * its events go nowhere.
 */

#include "session.h"
#include "util.h"

/* The scheme for a background: LightBG when `light` is 1, else Linux. */
const char *ipycolors_for_background(int light);
/*
 * Queue the silent cell that sets `scheme` (one of theme_ipython_scheme_valid's; anything
 * else is refused). Returns 0, or -1 with `err`.
 */
int ipycolors_apply(struct session *s, const char *scheme, struct strbuf *err);

#endif
