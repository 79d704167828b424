#ifndef CELLBOX_KEYS_H
#define CELLBOX_KEYS_H

/*
 * Keys from the terminal, decoded from what curses hands over. curses turns the sequences its
 * terminfo knows (arrows, F-keys) into KEY_* codes; everything else arrives as characters and
 * is decoded here:
 *
 *	ESC [200~ text ESC [201~	bracketed paste (mode 2004): one paste event with the text
 *	ESC [27;MOD;CODE~		xterm's modifyOtherKeys: CODE with modifiers
 *	ESC [CODE;MODu, ESC [CODEu	the kitty keyboard protocol (flag 1, "disambiguate")
 *	ESC [1;MODA ...			arrows with modifiers curses did not know
 *	ESC + a key			Alt + that key (KEYMOD_ALT | KEYMOD_ESC: maybe Esc, key)
 *	ESC and nothing after it	Esc (the caller waits a little, then calls keys_flush)
 *
 * so that Shift-Enter and Ctrl-Enter can be told from Enter where the terminal says so. A
 * Ctrl-letter is delivered as its control character (Ctrl-Q is 0x11) whatever way it came.
 * Pasted text is kept as it was typed ('\r' and "\r\n" become '\n'), at most KEYS_PASTE_MAX
 * bytes. Everything here comes from outside: a sequence that is cut off or malformed is
 * given back as the keys it was made of, never trusted. No terminal code.
 */

#include <stddef.h>
#include <wchar.h>
#include "util.h"

#define KEYS_PASTE_MAX ((size_t)1 << 20)
#define KEYS_SEQ_MAX 32
#define KEYS_QUEUE 64

/* A key code of our own, next to curses' KEY_* (which are below 01000). */
#define KEYS_PASTE 0x1000	/* is_key: a bracketed paste, its text in key_event.text */

enum {
	KEYMOD_SHIFT = 1 << 0,
	KEYMOD_ALT = 1 << 1,
	KEYMOD_CTRL = 1 << 2,
	/*
	 * With KEYMOD_ALT: the Alt was an ESC before the key, in the same read. That may have
	 * been Esc pressed and then the key (tmux with escape-time 0, ssh): the dispatch takes it
	 * as Alt only where Alt and that key do something (tui.c), as prompt_toolkit does.
	 */
	KEYMOD_ESC = 1 << 3,
};

struct key_event {
	int is_key;		/* ch is a curses KEY_* code (or KEYS_PASTE), not a character */
	wint_t ch;
	unsigned mods;		/* KEYMOD_* beyond what ch says */
	char *text;		/* KEYS_PASTE: the pasted text (the caller frees it); else NULL */
};

struct keys {
	wint_t seq[KEYS_SEQ_MAX];	/* the escape sequence being read */
	int nseq;
	int in_paste;
	wint_t end[8];			/* a possible end of paste being read */
	int nend;
	int cr;				/* the paste's last character was '\r' */
	struct strbuf paste;
	size_t paste_dropped;		/* bytes of the paste past KEYS_PASTE_MAX */
	struct key_event q[KEYS_QUEUE];
	int qhead, qlen;
};

void keys_init(struct keys *k);
void keys_release(struct keys *k);
/* Feed one item from curses' get_wch(): a KEY_* code (is_key) or a character. */
void keys_feed(struct keys *k, int is_key, wint_t ch);
/*
 * Whether more input is expected to finish what was fed: 1 after a lone ESC or inside a
 * sequence (wait a few milliseconds), 2 inside a paste (wait longer), else 0.
 */
int keys_pending(const struct keys *k);
/* Nothing more came: a lone ESC is Esc, a cut-off sequence its keys, an open paste ends. */
void keys_flush(struct keys *k);
/* Take the next decoded key; 0 when there is none. */
int keys_next(struct keys *k, struct key_event *ev);

/* The escapes that turn on (and off) bracketed paste, modifyOtherKeys and kitty's keys. */
extern const char keys_enable[], keys_disable[];

#endif
