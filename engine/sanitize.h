#ifndef CELLBOX_SANITIZE_H
#define CELLBOX_SANITIZE_H

/*
 * Text cellbox did not write itself must never reach the terminal raw: kernel output (a cell
 * can print title changes, clipboard writes through OSC 52, cursor movement), input()
 * prompts, completions, the code of a file being replayed, recorded history, names from
 * files or from another user's directory. This one filter stands between all of them and the
 * terminal. It is a byte-stream filter with state, so a sequence split across two chunks is
 * still recognised. What comes out is valid UTF-8 holding only text, newline, tab and (unless
 * SAN_NO_CR) carriage return, plus SGR colour sequences when SAN_KEEP_SGR is set:
 *
 *   | input                                      | output                        |
 *   |--------------------------------------------|-------------------------------|
 *   | C0 controls but \n \t \r, DEL               | dropped                       |
 *   | ESC sequences (CSI, two-byte, intermediates)| dropped (SGR kept if asked)   |
 *   | OSC, DCS, SOS, PM, APC strings              | dropped up to BEL or ST       |
 *   | C1 controls as UTF-8 (U+0080..U+009F)       | dropped                       |
 *   | raw C1 bytes, any invalid UTF-8             | U+FFFD per maximal bad part   |
 *   | a stray ESC (before a control or non-ASCII) | dropped, what follows kept    |
 */

#include <stddef.h>
#include "util.h"

enum {
	SAN_KEEP_SGR = 1 << 0,	/* pass ESC [ digits ; : m through (for our ANSI renderers) */
	SAN_NO_CR = 1 << 1,	/* drop \r too (names, code, prompts: no overprinting a line) */
};

struct sanitizer {
	unsigned flags;
	int state;
	struct strbuf seq;	/* parameters of the CSI sequence being read */
	unsigned char u8[4];	/* a UTF-8 character split across chunks */
	unsigned u8_len, u8_need;
};

void sanitize_init(struct sanitizer *san, unsigned flags);
void sanitize_release(struct sanitizer *san);
/* Forget a sequence or a character in progress (at the end of a cell). */
void sanitize_reset(struct sanitizer *san);
/* Filter `len` bytes of `in`, appending what is safe to show to `out`. */
void sanitize_feed(struct sanitizer *san, const char *in, size_t len, struct strbuf *out);
/* End of the text: a character cut short becomes U+FFFD. The state is reset. */
void sanitize_finish(struct sanitizer *san, struct strbuf *out);
/* One-shot convenience: filter a whole string (appended to `out`). */
void sanitize_str(const char *in, size_t len, unsigned flags, struct strbuf *out);
/* A whole C string (NULL as ""), into `out` (reset first); returns out->buf, for printf. */
const char *sanitize_cstr(const char *in, unsigned flags, struct strbuf *out);
/* Whether `s[0..len)` passes the filter unchanged (with `flags`). */
int sanitize_is_clean(const char *s, size_t len, unsigned flags);

#endif
