/* cellbox mcp: what the client sends, before it is JSON: lines, oversized messages, base64. */
#include "mcp.h"

#include <string.h>

/* ---- the scan of an oversized message ------------------------------------------------ */

enum {
	SCAN_START,		/* before the top-level '{' */
	SCAN_KEY_OR_END,	/* a key or '}' */
	SCAN_KEY,		/* in a key string */
	SCAN_COLON,
	SCAN_VALUE,		/* before a value */
	SCAN_STRING,		/* in a top-level string value */
	SCAN_SCALAR,		/* in a top-level number, true, false, null */
	SCAN_NESTED,		/* in an object or array value */
	SCAN_COMMA_OR_END,
	SCAN_DONE,
	SCAN_BAD,		/* not an object: nothing to learn */
};

void mcp_scan_init(struct mcp_scan *sc)
{
	memset(sc, 0, sizeof(*sc));
	sc->state = SCAN_START;
}

/* Keep a byte of the id being read (unless it is too long). */
static void scan_keep(struct mcp_scan *sc, char c)
{
	if (!sc->capture)
		return;
	if (sc->idlen < sizeof(sc->id))
		sc->id[sc->idlen++] = c;
	else
		sc->id_long = 1;
}

/* The key just read is `name`. */
static int scan_key_is(const struct mcp_scan *sc, const char *name)
{
	return sc->keylen == strlen(name) && !memcmp(sc->key, name, sc->keylen);
}

/* End the top-level value; the id is known when it was the id's. */
static void scan_value_end(struct mcp_scan *sc)
{
	if (sc->capture && !sc->id_long)
		sc->has_id = 1;
	sc->capture = 0;
	sc->state = SCAN_COMMA_OR_END;
}

/* One byte. */
static void scan_byte(struct mcp_scan *sc, char c)
{
	int ws = c == ' ' || c == '\t' || c == '\r' || c == '\n';

	switch (sc->state) {
	case SCAN_START:
		if (c == '{')
			sc->state = SCAN_KEY_OR_END;
		else if (!ws)
			sc->state = SCAN_BAD;
		break;
	case SCAN_KEY_OR_END:
		if (c == '"') {
			sc->state = SCAN_KEY;
			sc->keylen = 0;
			sc->escape = 0;
		} else if (c == '}') {
			sc->state = SCAN_DONE;
		} else if (!ws) {
			sc->state = SCAN_BAD;
		}
		break;
	case SCAN_KEY:
		if (!sc->escape && c == '"') {
			sc->state = SCAN_COLON;
			break;
		}
		sc->escape = !sc->escape && c == '\\';
		if (sc->keylen < sizeof(sc->key))
			sc->key[sc->keylen] = c;
		sc->keylen++;	/* past the buffer: matches no name */
		break;
	case SCAN_COLON:
		if (c == ':') {
			sc->state = SCAN_VALUE;
			sc->capture = scan_key_is(sc, "id");
			if (sc->capture) {
				sc->idlen = 0;
				sc->id_long = 0;
				sc->has_id = 0;
			}
			if (scan_key_is(sc, "method"))
				sc->has_method = 1;
		} else if (!ws) {
			sc->state = SCAN_BAD;
		}
		break;
	case SCAN_VALUE:
		if (ws)
			break;
		if (c == '"') {
			sc->state = SCAN_STRING;
			sc->escape = 0;
			scan_keep(sc, c);
		} else if (c == '{' || c == '[') {
			sc->capture = 0;	/* an id is never an object or array */
			sc->state = SCAN_NESTED;
			sc->depth = 1;
			sc->in_string = 0;
			sc->escape = 0;
		} else {
			sc->state = SCAN_SCALAR;
			scan_keep(sc, c);
		}
		break;
	case SCAN_STRING:
		scan_keep(sc, c);
		if (!sc->escape && c == '"')
			scan_value_end(sc);
		else
			sc->escape = !sc->escape && c == '\\';
		break;
	case SCAN_SCALAR:
		if (ws || c == ',' || c == '}') {
			scan_value_end(sc);
			scan_byte(sc, c);
		} else {
			scan_keep(sc, c);
		}
		break;
	case SCAN_NESTED:
		if (sc->in_string) {
			if (!sc->escape && c == '"')
				sc->in_string = 0;
			else
				sc->escape = !sc->escape && c == '\\';
		} else if (c == '"') {
			sc->in_string = 1;
			sc->escape = 0;
		} else if (c == '{' || c == '[') {
			sc->depth++;
		} else if ((c == '}' || c == ']') && --sc->depth == 0) {
			sc->state = SCAN_COMMA_OR_END;
		}
		break;
	case SCAN_COMMA_OR_END:
		if (c == ',')
			sc->state = SCAN_KEY_OR_END;
		else if (c == '}')
			sc->state = SCAN_DONE;
		else if (!ws)
			sc->state = SCAN_BAD;
		break;
	default:
		break;
	}
}

void mcp_scan_feed(struct mcp_scan *sc, const char *buf, size_t len)
{
	for (size_t i = 0; i < len && sc->state != SCAN_BAD; i++)
		scan_byte(sc, buf[i]);
}

cJSON *mcp_scan_id(const struct mcp_scan *sc)
{
	cJSON *id;

	if (!sc->has_id || sc->state == SCAN_BAD)
		return NULL;
	id = cJSON_ParseWithLength(sc->id, sc->idlen);
	if (id && (cJSON_IsString(id) || cJSON_IsNumber(id)))
		return id;
	cJSON_Delete(id);
	return NULL;
}

/* ---- framing --------------------------------------------------------------------------- */

void mcp_reader_init(struct mcp_reader *r, size_t max)
{
	memset(r, 0, sizeof(*r));
	strbuf_init(&r->line, 0);
	r->max = max;
}

void mcp_reader_release(struct mcp_reader *r)
{
	strbuf_release(&r->line);
}

/* Hand out the message that just ended. */
static void reader_emit(struct mcp_reader *r, mcp_line_fn fn, void *data)
{
	if (r->oversized) {
		size_t n = r->oversized;

		r->oversized = 0;
		fn(r, NULL, n, data);
		return;
	}
	if (r->line.len && r->line.buf[r->line.len - 1] == '\r')
		r->line.buf[--r->line.len] = '\0';
	fn(r, r->line.buf, r->line.len, data);
	strbuf_reset(&r->line);
}

void mcp_reader_feed(struct mcp_reader *r, const char *buf, size_t len, mcp_line_fn fn,
		     void *data)
{
	while (len) {
		const char *nl = memchr(buf, '\n', len);
		size_t n = nl ? (size_t)(nl - buf) : len;

		if (r->oversized) {
			mcp_scan_feed(&r->scan, buf, n);
			r->oversized += n;
		} else if (r->line.len + n > r->max) {
			/* Too long to keep: scan what we have and what comes, keep nothing. */
			mcp_scan_init(&r->scan);
			mcp_scan_feed(&r->scan, r->line.buf, r->line.len);
			mcp_scan_feed(&r->scan, buf, n);
			r->oversized = r->line.len + n;
			strbuf_release(&r->line);
		} else {
			strbuf_add(&r->line, buf, n);
		}
		if (!nl)
			break;
		reader_emit(r, fn, data);
		buf += n + 1;
		len -= n + 1;
	}
}

void mcp_reader_finish(struct mcp_reader *r, mcp_line_fn fn, void *data)
{
	if (r->oversized || r->line.len)
		reader_emit(r, fn, data);
}

/* ---- base64 ---------------------------------------------------------------------------- */

/* The value of a base64 digit, or -1. */
static int b64_value(unsigned char c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	return c == '+' ? 62 : c == '/' ? 63 : -1;
}

int mcp_base64_decode(const char *text, size_t len, struct strbuf *out)
{
	unsigned long acc = 0;
	char chunk[3 * 1024];
	size_t n = 0, digits = 0, pad = 0;

	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)text[i];
		int v = b64_value(c);

		if (c == '=') {
			pad++;
			continue;
		}
		if (v < 0 || pad)
			return -1;	/* not a digit, or a digit after padding */
		acc = (acc << 6) | (unsigned long)v;
		if (++digits % 4 == 0) {
			chunk[n++] = (char)(acc >> 16);
			chunk[n++] = (char)(acc >> 8);
			chunk[n++] = (char)acc;
			acc = 0;
		}
		if (n == sizeof(chunk)) {
			if (strbuf_add(out, chunk, n) < 0)
				return -1;
			n = 0;
		}
	}
	switch (digits % 4) {
	case 1:
		return -1;
	case 2:
		chunk[n++] = (char)(acc >> 4);
		break;
	case 3:
		chunk[n++] = (char)(acc >> 10);
		chunk[n++] = (char)(acc >> 2);
		break;
	}
	if (pad > 2 || (pad && (digits + pad) % 4))
		return -1;
	return strbuf_add(out, chunk, n);
}
