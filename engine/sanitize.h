#ifndef CELLBOX_SANITIZE_H
#define CELLBOX_SANITIZE_H

/*
 * Kernel output must never reach the terminal raw (a cell can print anything: title changes,
 * clipboard writes through OSC 52, cursor movement). The sanitiser is a byte-stream filter with
 * state, so a sequence split across two chunks is still recognised. It keeps text, newline, tab
 * and carriage return; keeps SGR colour sequences when SAN_KEEP_SGR is set; drops every other
 * control character and escape sequence (CSI, OSC, DCS/SOS/PM/APC strings, two-byte escapes,
 * C1 controls encoded in UTF-8).
 */

#include <stddef.h>
#include "util.h"

enum {
	SAN_KEEP_SGR = 1 << 0,	/* pass ESC [ ... m through */
};

struct sanitizer {
	unsigned flags;
	int state;
	struct strbuf seq;	/* parameters of the CSI sequence being read */
};

void sanitize_init(struct sanitizer *san, unsigned flags);
void sanitize_release(struct sanitizer *san);
/* Forget a sequence in progress (at the end of a cell). */
void sanitize_reset(struct sanitizer *san);
/* Filter `len` bytes of `in`, appending what is safe to show to `out`. */
void sanitize_feed(struct sanitizer *san, const char *in, size_t len, struct strbuf *out);
/* One-shot convenience: filter a whole string. */
void sanitize_str(const char *in, size_t len, unsigned flags, struct strbuf *out);

#endif
