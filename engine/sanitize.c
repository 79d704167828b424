#include "sanitize.h"

#include <string.h>

enum {
	S_GROUND,
	S_C2,		/* saw 0xC2: a C1 control may follow */
	S_ESC,		/* saw ESC */
	S_ESC_INTER,	/* ESC followed by intermediates */
	S_CSI,
	S_CSI_SKIP,	/* CSI too long or not SGR: skip to its final byte */
	S_STRING,	/* OSC, DCS, SOS, PM, APC: skip to BEL or ST */
	S_STRING_ESC,	/* ESC inside a string: '\' ends it */
};

#define CSI_MAX 64

void sanitize_init(struct sanitizer *san, unsigned flags)
{
	san->flags = flags;
	san->state = S_GROUND;
	strbuf_init(&san->seq, 0);
}

void sanitize_release(struct sanitizer *san)
{
	strbuf_release(&san->seq);
}

void sanitize_reset(struct sanitizer *san)
{
	san->state = S_GROUND;
	strbuf_reset(&san->seq);
}

/* Whether the collected CSI parameters make a plain SGR sequence. */
static int sgr_params(const struct strbuf *seq)
{
	for (size_t i = 0; i < seq->len; i++) {
		char c = seq->buf[i];
		if (!((c >= '0' && c <= '9') || c == ';' || c == ':'))
			return 0;
	}
	return 1;
}

void sanitize_feed(struct sanitizer *san, const char *in, size_t len, struct strbuf *out)
{
	const unsigned char *s = (const unsigned char *)in;
	size_t run = 0;		/* start of a run of plain bytes to copy at once */

	strbuf_grow(out, len);
	for (size_t i = 0; i < len; i++) {
		unsigned char c = s[i];

		switch (san->state) {
		case S_GROUND:
			if (c >= 0x20 && c != 0x7f && c != 0xc2)
				continue;
			if (c == '\n' || c == '\t' || c == '\r')
				continue;
			strbuf_add(out, s + run, i - run);
			run = i + 1;
			if (c == 0x1b)
				san->state = S_ESC;
			else if (c == 0xc2)
				san->state = S_C2;
			/* other C0 controls and DEL are dropped */
			continue;
		case S_C2:
			san->state = S_GROUND;
			if (c >= 0x80 && c <= 0x9f) {
				run = i + 1;	/* drop the C1 control */
				continue;
			}
			strbuf_addch(out, 0xc2);
			run = i;
			i--;		/* look at this byte again in the ground state */
			continue;
		case S_ESC:
			if (c == '[') {
				strbuf_reset(&san->seq);
				san->state = S_CSI;
			} else if (c == ']' || c == 'P' || c == 'X' || c == '^' || c == '_') {
				san->state = S_STRING;
			} else if (c >= 0x20 && c <= 0x2f) {
				san->state = S_ESC_INTER;
			} else if (c == 0x1b) {
				san->state = S_ESC;
			} else if (c < 0x20) {
				san->state = S_GROUND;	/* a stray ESC: keep what follows */
				run = i;
				i--;
				continue;
			} else {
				san->state = S_GROUND;
			}
			run = i + 1;
			continue;
		case S_ESC_INTER:
			if (c < 0x20 || c > 0x2f)
				san->state = S_GROUND;
			run = i + 1;
			continue;
		case S_CSI:
		case S_CSI_SKIP:
			run = i + 1;
			if (c >= 0x40 && c <= 0x7e) {
				if (san->state == S_CSI && c == 'm' &&
				    (san->flags & SAN_KEEP_SGR) && sgr_params(&san->seq)) {
					strbuf_add(out, "\x1b[", 2);
					strbuf_add(out, san->seq.buf, san->seq.len);
					strbuf_addch(out, 'm');
				}
				san->state = S_GROUND;
			} else if (c == 0x1b) {
				san->state = S_ESC;
			} else if (c < 0x20 || c > 0x7e) {
				san->state = S_GROUND;	/* malformed: drop what we had */
			} else if (san->state == S_CSI) {
				if (san->seq.len >= CSI_MAX)
					san->state = S_CSI_SKIP;
				else
					strbuf_addch(&san->seq, c);
			}
			continue;
		case S_STRING:
			run = i + 1;
			if (c == 0x07)
				san->state = S_GROUND;
			else if (c == 0x1b)
				san->state = S_STRING_ESC;
			continue;
		case S_STRING_ESC:
			run = i + 1;
			san->state = c == '\\' ? S_GROUND : (c == 0x1b ? S_STRING_ESC : S_STRING);
			continue;
		}
	}
	if (san->state == S_GROUND && run < len)
		strbuf_add(out, s + run, len - run);
}

void sanitize_str(const char *in, size_t len, unsigned flags, struct strbuf *out)
{
	struct sanitizer san;

	sanitize_init(&san, flags);
	sanitize_feed(&san, in, len, out);
	if (san.state == S_C2)
		strbuf_addch(out, 0xc2);
	sanitize_release(&san);
}
