#include "sanitize.h"

#include <string.h>

enum {
	S_GROUND,
	S_UTF8,		/* inside a UTF-8 character split across chunks (san->u8) */
	S_ESC,		/* saw ESC */
	S_ESC_INTER,	/* ESC followed by intermediates */
	S_CSI,
	S_CSI_SKIP,	/* CSI too long or not SGR: skip to its final byte */
	S_STRING,	/* OSC, DCS, SOS, PM, APC: skip to BEL or ST */
	S_STRING_ESC,	/* ESC inside a string: '\' ends it */
};

#define CSI_MAX 64
#define REPLACEMENT "\xef\xbf\xbd"	/* U+FFFD */

void sanitize_init(struct sanitizer *san, unsigned flags)
{
	memset(san, 0, sizeof(*san));
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
	san->u8_len = san->u8_need = 0;
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

/* Bytes of the UTF-8 character `lead` starts (0: not a lead byte). */
static unsigned utf8_need(unsigned char lead)
{
	if (lead >= 0xc2 && lead <= 0xdf)
		return 2;
	if (lead >= 0xe0 && lead <= 0xef)
		return 3;
	if (lead >= 0xf0 && lead <= 0xf4)
		return 4;
	return 0;
}

/* Whether `c` may be byte `pos` (1..3) of the character `lead` starts: no overlong forms, */
/* no surrogates, nothing past U+10FFFF. */
static int utf8_cont(unsigned char lead, unsigned pos, unsigned char c)
{
	if (pos == 1) {
		if (lead == 0xe0)
			return c >= 0xa0 && c <= 0xbf;
		if (lead == 0xed)
			return c >= 0x80 && c <= 0x9f;
		if (lead == 0xf0)
			return c >= 0x90 && c <= 0xbf;
		if (lead == 0xf4)
			return c >= 0x80 && c <= 0x8f;
	}
	return c >= 0x80 && c <= 0xbf;
}

/* A whole character: a C1 control (U+0080..U+009F, C2 80..9F) is not text. */
static int utf8_is_c1(const unsigned char *ch)
{
	return ch[0] == 0xc2 && ch[1] <= 0x9f;
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
			if (c < 0x80) {
				if (c >= 0x20 && c != 0x7f)
					continue;
				if (c == '\n' || c == '\t' || (c == '\r' && !(san->flags & SAN_NO_CR)))
					continue;
				strbuf_add(out, s + run, i - run);
				run = i + 1;
				if (c == 0x1b)
					san->state = S_ESC;
				/* other C0 controls and DEL are dropped */
				continue;
			}
			/* The common characters first: two bytes past C1, three without a limit. */
			if (c > 0xc2 && c <= 0xdf && i + 1 < len && (s[i + 1] & 0xc0) == 0x80) {
				i++;
				continue;
			}
			if (c >= 0xe1 && c <= 0xef && c != 0xed && i + 2 < len &&
			    (s[i + 1] & 0xc0) == 0x80 && (s[i + 2] & 0xc0) == 0x80) {
				i += 2;
				continue;
			}
			{
				unsigned need = utf8_need(c), k = 1;

				while (k < need && i + k < len && utf8_cont(c, k, s[i + k]))
					k++;
				if (k == need && !utf8_is_c1(s + i)) {
					i += need - 1;		/* a whole character: text */
					continue;
				}
				strbuf_add(out, s + run, i - run);
				if (need && i + k == len && k < need) {
					/* cut by the chunk's end: wait for the rest */
					memcpy(san->u8, s + i, k);
					san->u8_len = k;
					san->u8_need = need;
					san->state = S_UTF8;
					run = len;
					i = len - 1;
					continue;
				}
				if (k != need || !need)
					strbuf_add(out, REPLACEMENT, 3);	/* not UTF-8 */
				/* else a C1 control: dropped */
				run = i + k;
				i += k - 1;
			}
			continue;
		case S_UTF8:
			if (utf8_cont(san->u8[0], san->u8_len, c)) {
				san->u8[san->u8_len++] = c;
				run = i + 1;
				if (san->u8_len == san->u8_need) {
					if (!utf8_is_c1(san->u8))
						strbuf_add(out, san->u8, san->u8_len);
					san->state = S_GROUND;
				}
				continue;
			}
			strbuf_add(out, REPLACEMENT, 3);
			san->state = S_GROUND;
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
			} else if (c < 0x20 || c >= 0x80) {
				san->state = S_GROUND;	/* a stray ESC: keep what follows */
				run = i;
				i--;
				continue;
			} else {
				san->state = S_GROUND;	/* ESC and one final byte: dropped */
			}
			run = i + 1;
			continue;
		case S_ESC_INTER:
			if (c < 0x20 || c >= 0x7f) {
				san->state = S_GROUND;	/* malformed: keep what follows */
				run = i;
				i--;
				continue;
			}
			if (c > 0x2f)
				san->state = S_GROUND;	/* the final byte */
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
				san->state = S_GROUND;	/* malformed: drop what we had, keep what follows */
				run = i;
				i--;
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

void sanitize_finish(struct sanitizer *san, struct strbuf *out)
{
	if (san->state == S_UTF8)
		strbuf_add(out, REPLACEMENT, 3);
	sanitize_reset(san);
}

void sanitize_str(const char *in, size_t len, unsigned flags, struct strbuf *out)
{
	struct sanitizer san;

	sanitize_init(&san, flags);
	sanitize_feed(&san, in, len, out);
	sanitize_finish(&san, out);
	sanitize_release(&san);
}

const char *sanitize_cstr(const char *in, unsigned flags, struct strbuf *out)
{
	strbuf_reset(out);
	if (in)
		sanitize_str(in, strlen(in), flags, out);
	return out->buf;
}

int sanitize_is_clean(const char *s, size_t len, unsigned flags)
{
	struct strbuf out = STRBUF_INIT;
	int same;

	sanitize_str(s, len, flags, &out);
	same = out.len == len && !memcmp(out.buf, s, len);
	strbuf_release(&out);
	return same;
}
