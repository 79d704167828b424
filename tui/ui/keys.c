/* Keys from the terminal: bracketed paste, modifyOtherKeys, kitty's CSI u, Alt and Esc. */
#include "keys.h"

#include <stdlib.h>
#include <string.h>

/*
 * On: bracketed paste (2004), xterm's modifyOtherKeys at level 1 (modified Enter and the like
 * get sequences; plain keys stay as they are), kitty's progressive enhancement flag 1 pushed.
 * Off: the same in reverse. A terminal that knows none of them ignores them.
 */
const char keys_enable[] = "\x1b[?2004h\x1b[>4;1m\x1b[>1u";
const char keys_disable[] = "\x1b[<u\x1b[>4;0m\x1b[?2004l";

/* curses' codes for the keys a CSI sequence may name (curses.h's values, as it has them). */
enum {
	CK_DOWN = 0402, CK_UP = 0403, CK_LEFT = 0404, CK_RIGHT = 0405, CK_HOME = 0406,
	CK_END = 0550, CK_SF = 0520, CK_SR = 0521, CK_DC = 0512,
};

void keys_init(struct keys *k)
{
	memset(k, 0, sizeof(*k));
	strbuf_init(&k->paste, 0);
	strbuf_set_max(&k->paste, KEYS_PASTE_MAX + 8);
}

void keys_release(struct keys *k)
{
	struct key_event ev;

	while (keys_next(k, &ev))
		free(ev.text);
	strbuf_release(&k->paste);
}

/* Queue one decoded key (dropped when the queue is full: the caller drains it each feed). */
static void emit(struct keys *k, int is_key, wint_t ch, unsigned mods, char *text)
{
	struct key_event *ev;

	if (k->qlen == KEYS_QUEUE) {
		free(text);
		return;
	}
	ev = &k->q[(k->qhead + k->qlen++) % KEYS_QUEUE];
	ev->is_key = is_key;
	ev->ch = ch;
	ev->mods = mods;
	ev->text = text;
}

int keys_next(struct keys *k, struct key_event *ev)
{
	if (!k->qlen)
		return 0;
	*ev = k->q[k->qhead];
	k->qhead = (k->qhead + 1) % KEYS_QUEUE;
	k->qlen--;
	return 1;
}

/* Append one pasted character as UTF-8, '\r' and "\r\n" as '\n'. */
static void paste_add(struct keys *k, wint_t ch)
{
	char mb[8];
	size_t n;

	if (ch == '\n' && k->cr) {
		k->cr = 0;
		return;
	}
	k->cr = ch == '\r';
	if (ch == '\r')
		ch = '\n';
	if (ch < 0x80) {
		mb[0] = (char)ch;
		n = 1;
	} else {
		mbstate_t st;
		memset(&st, 0, sizeof(st));
		n = wcrtomb(mb, (wchar_t)ch, &st);
		if (n == (size_t)-1)
			return;
	}
	if (k->paste.len + n > KEYS_PASTE_MAX || strbuf_add(&k->paste, mb, n) < 0)
		k->paste_dropped += n;
}

/* The paste is over: hand its text on. */
static void paste_end(struct keys *k)
{
	for (int i = 0; i < k->nend; i++)
		paste_add(k, k->end[i]);
	k->nend = 0;
	k->in_paste = 0;
	k->cr = 0;
	emit(k, 1, KEYS_PASTE, 0, strbuf_detach(&k->paste, NULL));
	strbuf_set_max(&k->paste, KEYS_PASTE_MAX + 8);
	k->paste_dropped = 0;
}

/* One character inside a paste: text, or part of the ESC [201~ that ends it. */
static void paste_feed(struct keys *k, wint_t ch)
{
	static const wint_t endseq[] = { 27, '[', '2', '0', '1', '~' };

	if (ch == endseq[k->nend]) {
		k->end[k->nend++] = ch;
		if (k->nend == (int)ARRAY_SIZE(endseq)) {
			k->nend = 0;
			paste_end(k);
		}
		return;
	}
	for (int i = 0; i < k->nend; i++)	/* it was text after all */
		paste_add(k, k->end[i]);
	k->nend = 0;
	if (ch == endseq[0]) {
		k->end[k->nend++] = ch;
		return;
	}
	paste_add(k, ch);
}

/* The numbers of a CSI sequence's parameters ("27;5;13"): up to `max`, -1 when absent. */
static int csi_params(const wint_t *s, int n, long *out, int max)
{
	int count = 0;
	long v = -1;

	for (int i = 0; i < n; i++) {
		if (s[i] >= '0' && s[i] <= '9') {
			v = (v < 0 ? 0 : v) * 10 + (long)(s[i] - '0');
			if (v > 0x10ffff)
				return -1;
		} else if (s[i] == ';') {
			if (count == max)
				return -1;
			out[count++] = v;
			v = -1;
		} else if (s[i] == ':') {
			/* kitty's sub-fields (shifted key, event type): the first one counts */
			while (i + 1 < n && s[i + 1] != ';')
				i++;
		} else {
			return -1;
		}
	}
	if (count == max)
		return -1;
	out[count++] = v;
	return count;
}

/* Deliver the key with unicode code `code` and modifier parameter `mod` (1 + bits). */
static void code_key(struct keys *k, long code, long mod)
{
	unsigned mods = 0, m = mod > 1 ? (unsigned)(mod - 1) : 0;

	if (m & 1)
		mods |= KEYMOD_SHIFT;
	if (m & 2)
		mods |= KEYMOD_ALT;
	if (m & 4)
		mods |= KEYMOD_CTRL;
	if (code == 57414)		/* kitty's keypad Enter */
		code = '\r';
	if (code <= 0 || code > 0x10ffff || (code >= 57344 && code <= 63743))
		return;			/* nothing, or a key of kitty's own we have no use for */
	if (code == 13 || code == 10)
		code = '\r';
	if ((mods & KEYMOD_CTRL) && ((code >= 'a' && code <= 'z') || (code >= 'A' && code <= 'Z'))) {
		code &= 0x1f;		/* the control character, as every other way sends it ... */
		mods &= ~(unsigned)KEYMOD_CTRL;	/* ... Shift kept: Ctrl-Shift-Z redoes */
	} else if ((mods & KEYMOD_CTRL) && code >= '[' && code <= '_') {
		code &= 0x1f;		/* Ctrl-_ needs Shift on most keyboards: not told */
		mods &= ~(unsigned)(KEYMOD_CTRL | KEYMOD_SHIFT);
	}
	emit(k, 0, (wint_t)code, mods, NULL);
}

/* A complete CSI sequence ESC [ params final: decode it, or give back what it was. */
static void csi_done(struct keys *k)
{
	const wint_t *p = k->seq + 2;
	int n = k->nseq - 3;
	wint_t final = k->seq[k->nseq - 1];
	long v[4];
	int c = csi_params(p, n, v, 4);

	if (c < 0)
		return;			/* not one of ours (or malformed): dropped */
	if (final == '~' && c == 1 && v[0] == 200) {
		k->in_paste = 1;
		k->nend = 0;
		k->cr = 0;
		strbuf_reset(&k->paste);
		return;
	}
	if (final == '~' && c == 3 && v[0] == 27) {
		code_key(k, v[2], v[1]);
		return;
	}
	if (final == 'u') {
		code_key(k, v[0], c > 1 ? v[1] : 1);
		return;
	}
	if (strchr("ABCDHF", (int)final) && (c == 2 || (c == 1 && v[0] < 0))) {
		static const struct { char final; int key, shifted; } arrows[] = {
			{ 'A', CK_UP, CK_SR }, { 'B', CK_DOWN, CK_SF }, { 'C', CK_RIGHT, CK_RIGHT },
			{ 'D', CK_LEFT, CK_LEFT }, { 'H', CK_HOME, CK_HOME }, { 'F', CK_END, CK_END },
		};
		long mod = c == 2 ? v[1] : 1;
		for (size_t i = 0; i < ARRAY_SIZE(arrows); i++)
			if (arrows[i].final == (char)final) {
				int shift = mod > 1 && ((mod - 1) & 1);
				unsigned m = mod > 1 ? (unsigned)(mod - 1) & (KEYMOD_ALT | KEYMOD_CTRL) : 0;
				/* Shift-Up/Down are curses' scroll keys; the others keep their Shift */
				if (shift && arrows[i].shifted == arrows[i].key)
					m |= KEYMOD_SHIFT;
				emit(k, 1, (wint_t)(shift ? arrows[i].shifted : arrows[i].key), m, NULL);
			}
		return;
	}
	if (final == '~' && c == 2 && v[0] == 3 && v[1] >= 1 && v[1] <= 16) {
		emit(k, 1, CK_DC, (unsigned)(v[1] - 1) & (KEYMOD_SHIFT | KEYMOD_ALT | KEYMOD_CTRL), NULL);
		return;
	}
	/* Anything else (focus reports, keys we have no use for): dropped. */
}

/* Give back a sequence that turned out not to be one: Esc, then its characters. */
static void seq_giveback(struct keys *k)
{
	int n = k->nseq;

	k->nseq = 0;
	if (!n)
		return;
	if (n == 1) {
		emit(k, 0, 27, 0, NULL);
		return;
	}
	/* ESC x: Alt+x; longer: Alt+'[' and the rest as they came */
	emit(k, 0, k->seq[1], KEYMOD_ALT | KEYMOD_ESC, NULL);
	for (int i = 2; i < n; i++)
		emit(k, 0, k->seq[i], 0, NULL);
}

void keys_feed(struct keys *k, int is_key, wint_t ch)
{
	if (k->in_paste) {
		if (!is_key)
			paste_feed(k, ch);
		return;
	}
	if (!k->nseq) {
		if (!is_key && ch == 27)
			k->seq[k->nseq++] = ch;
		else
			emit(k, is_key, ch, 0, NULL);
		return;
	}
	if (is_key) {			/* ESC, then a key curses knew: Alt+key */
		k->nseq = 0;
		emit(k, 1, ch, KEYMOD_ALT | KEYMOD_ESC, NULL);
		return;
	}
	if (k->nseq == 1) {
		if (ch == '[') {
			k->seq[k->nseq++] = ch;
		} else if (ch == 27) {
			emit(k, 0, 27, 0, NULL);	/* Esc, and a new ESC begins */
		} else {
			k->nseq = 0;
			emit(k, 0, ch, KEYMOD_ALT | KEYMOD_ESC, NULL);
		}
		return;
	}
	/* Inside ESC [ ...: parameter and intermediate bytes, then a final byte. */
	if (ch >= 0x20 && ch <= 0x3f && k->nseq < KEYS_SEQ_MAX - 1) {
		k->seq[k->nseq++] = ch;
		return;
	}
	if (ch >= 0x40 && ch <= 0x7e) {
		k->seq[k->nseq++] = ch;
		csi_done(k);
		k->nseq = 0;
		return;
	}
	/* Not a sequence after all (a control character, or too long): give back, go on. */
	seq_giveback(k);
	keys_feed(k, 0, ch);
}

int keys_pending(const struct keys *k)
{
	return k->in_paste ? 2 : k->nseq ? 1 : 0;
}

void keys_flush(struct keys *k)
{
	if (k->in_paste)
		paste_end(k);
	else
		seq_giveback(k);
}
