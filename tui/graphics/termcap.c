#include "termcap.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

#include "numconv.h"
#include "util.h"

const char termcap_queries[] = "\x1b[?1;1;0S\x1b[?2;1;0S\x1b[14t\x1b[16t"
			       "\x1b_Gi=31,s=1,v=1,a=q,t=d,f=24;AAAA\x1b\\"
			       "\x1b[>q\x1b]11;?\x1b\\\x1b[c";
const char termcap_queries_short[] = "\x1b[?1;1;0S\x1b[?2;1;0S\x1b[14t\x1b[16t\x1b[>q\x1b[c";

#define MAX_PARAMS 32
#define REPLY_MAX 4096		/* more than any honest set of answers */

/* The value of one hex colour component of 1 to 4 digits, scaled to 0..255; -1 if bad. */
static int hex_component(const char *s, size_t n)
{
	unsigned long v = 0, max = 0;

	if (n < 1 || n > 4)
		return -1;
	for (size_t i = 0; i < n; i++) {
		int c = s[i], d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10
			: c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
		if (d < 0)
			return -1;
		v = v * 16 + (unsigned long)d;
		max = max * 16 + 15;
	}
	return (int)((v * 255 + max / 2) / max);
}

/* Parse an X11 colour answer, "rgb:R/G/B" (or "rgba:R/G/B/A"); 0, or -1 when it is not one. */
static int parse_rgb(const char *s, size_t n, unsigned char rgb[3])
{
	size_t i = 0;

	if (n > 4 && !memcmp(s, "rgb:", 4))
		i = 4;
	else if (n > 5 && !memcmp(s, "rgba:", 5))
		i = 5;
	else
		return -1;
	for (int k = 0; k < 3; k++) {
		size_t start = i;
		int v;

		while (i < n && s[i] != '/')
			i++;
		v = hex_component(s + start, i - start);
		if (v < 0 || (k < 2 && i >= n))
			return -1;
		rgb[k] = (unsigned char)v;
		i++;			/* the '/' */
	}
	return 0;
}

/* Act on one complete string (DCS, OSC, APC): `kind` is its introducer's second byte. */
static void on_string(struct termcap_reply *r, int kind, const char *s, size_t n)
{
	if (kind == '_' && n >= 6 && !memcmp(s, "Gi=31;", 6)) {
		/* The kitty query's answer: OK, or an error (a terminal that speaks it too). */
		r->kitty = n == 8 && !memcmp(s + 6, "OK", 2);
	} else if (kind == 'P' && n >= 2 && s[0] == '>' && s[1] == '|') {
		size_t k = 0;

		for (size_t i = 2; i < n && k + 1 < sizeof(r->version); i++)
			if (s[i] >= 0x20 && s[i] < 0x7f)
				r->version[k++] = s[i];
		r->version[k] = '\0';
	} else if (kind == ']' && n > 3 && !memcmp(s, "11;", 3)) {
		unsigned char rgb[3];

		if (parse_rgb(s + 3, n - 3, rgb) == 0) {
			memcpy(r->bg_rgb, rgb, 3);
			r->bg = 1;
		}
	}
}

/* Act on one complete CSI sequence. */
static int on_csi(struct termcap_reply *r, int private, const int *p, int n, int final)
{
	if (final == 'c' && private == '?') {
		r->da1 = 1;
		/* p[0] is the device class (62..65, or 1 for a VT100); attributes follow. */
		for (int i = 1; i < n; i++)
			if (p[i] == 4)
				r->sixel = 1;
		return 1;
	}
	if (final == 'S' && private == '?' && n >= 3 && p[1] == 0) {
		if (p[0] == 1 && p[2] > 0)
			r->color_registers = p[2];
		else if (p[0] == 2 && n >= 4 && p[2] > 0 && p[3] > 0)
			r->sixel_max_w = p[2], r->sixel_max_h = p[3];
		return 0;
	}
	if (final == 't' && !private && n >= 3 && p[1] > 0 && p[2] > 0) {
		if (p[0] == 6)
			r->cell_h = p[1], r->cell_w = p[2];
		else if (p[0] == 4)
			r->area_h = p[1], r->area_w = p[2];
	}
	return 0;
}

int termcap_parse(struct termcap_reply *r, const char *buf, size_t len)
{
	const unsigned char *s = (const unsigned char *)buf;
	size_t i = 0;
	int sentinel = 0;

	memset(r, 0, sizeof(*r));
	while (i < len) {
		int p[MAX_PARAMS], n = 0, private = 0, have = 0;
		long cur = 0;

		if (s[i] == 0x1b && i + 1 < len && s[i + 1] == '[') {
			i += 2;
		} else if (s[i] == 0x9b) {
			i += 1;
		} else if (s[i] == 0x1b && i + 1 < len && s[i + 1] && strchr("P]_^X", s[i + 1])) {
			/* A string (DCS, OSC, APC, ...): up to ST or BEL; unfinished = wait for more. */
			int kind = s[i + 1];
			size_t start = i + 2, end = 0;

			for (i += 2; i < len; i++) {
				if (s[i] == 0x07 || s[i] == 0x9c) {
					end = i++;
					break;
				}
				if (s[i] == 0x1b && i + 1 < len && s[i + 1] == '\\') {
					end = i;
					i += 2;
					break;
				}
			}
			if (end)
				on_string(r, kind, buf + start, end - start);
			continue;
		} else {
			i++;
			continue;
		}
		if (i < len && s[i] >= 0x3c && s[i] <= 0x3f)
			private = s[i++];
		for (; i < len && s[i] >= 0x30 && s[i] <= 0x3f; i++) {
			if (s[i] >= '0' && s[i] <= '9') {
				if (cur < 1000000)
					cur = cur * 10 + (s[i] - '0');
				have = 1;
			} else if (s[i] == ';' || s[i] == ':') {
				if (n < MAX_PARAMS)
					p[n++] = (int)cur;
				cur = 0;
				have = 0;
			} else {
				private = -1;	/* a marker in the middle: not ours */
			}
		}
		if (have || n)
			if (n < MAX_PARAMS)
				p[n++] = (int)cur;
		while (i < len && s[i] >= 0x20 && s[i] <= 0x2f) {
			private = -1;		/* intermediates: not a reply we asked for */
			i++;
		}
		if (i >= len)
			break;			/* incomplete: wait for more */
		if (s[i] >= 0x40 && s[i] <= 0x7e && private != -1)
			sentinel |= on_csi(r, private, p, n, s[i]);
		i++;
	}
	return sentinel;
}

static const struct {
	const char *prefix;		/* of the XTVERSION answer */
	enum termcap_term term;
} term_names[] = {
	{ "kitty(", TERMCAP_TERM_KITTY },
	{ "WezTerm", TERMCAP_TERM_WEZTERM },
	{ "iTerm2", TERMCAP_TERM_ITERM2 },
	{ "ghostty", TERMCAP_TERM_GHOSTTY },
	{ "foot(", TERMCAP_TERM_FOOT },
	{ "mintty", TERMCAP_TERM_MINTTY },
	{ "XTerm(", TERMCAP_TERM_XTERM },
	{ "tmux", TERMCAP_TERM_TMUX },
};

enum termcap_term termcap_term_of(const char *version)
{
	for (size_t i = 0; version && i < ARRAY_SIZE(term_names); i++)
		if (!strncasecmp(version, term_names[i].prefix, strlen(term_names[i].prefix)))
			return term_names[i].term;
	return TERMCAP_TERM_OTHER;
}

int termcap_is_light(const unsigned char rgb[3])
{
	return 2126 * rgb[0] + 7152 * rgb[1] + 722 * rgb[2] > 10000 * 255 / 2;
}

/* The terminal the environment names (outside tmux only: see termcap.h). */
static enum termcap_term term_of_env(void)
{
	const char *prog = getenv("TERM_PROGRAM"), *lc = getenv("LC_TERMINAL");
	const char *term = getenv("TERM");

	if (prog && !strcmp(prog, "iTerm.app"))
		return TERMCAP_TERM_ITERM2;
	if (lc && !strcmp(lc, "iTerm2"))
		return TERMCAP_TERM_ITERM2;
	if (prog && !strcmp(prog, "WezTerm"))
		return TERMCAP_TERM_WEZTERM;
	if (prog && !strcmp(prog, "mintty"))
		return TERMCAP_TERM_MINTTY;
	if (prog && !strcmp(prog, "ghostty"))
		return TERMCAP_TERM_GHOSTTY;
	if (term && !strcmp(term, "xterm-kitty"))
		return TERMCAP_TERM_KITTY;
	return TERMCAP_TERM_OTHER;
}

/*
 * The background from COLORFGBG ("fg;bg" or "fg;default;bg", as rxvt and Konsole set it):
 * 1 light, 0 dark, -1 when it says nothing.
 */
static int light_of_colorfgbg(void)
{
	const char *v = getenv("COLORFGBG"), *last;
	char *end;
	long bg;

	if (!v || !(last = strrchr(v, ';')))
		return -1;
	bg = strtol(last + 1, &end, 10);
	if (end == last + 1 || *end || bg < 0 || bg > 15)
		return -1;
	return bg == 7 || bg >= 9;	/* white, and the bright colours but black */
}

void termcap_fill(struct termcap *tc, const struct termcap_reply *r, int fd)
{
	struct winsize ws;
	const char *ct = getenv("COLORTERM"), *tmux = getenv("TMUX");
	int have_ws = fd >= 0 && ioctl(fd, TIOCGWINSZ, &ws) == 0 && ws.ws_row && ws.ws_col;

	memset(tc, 0, sizeof(*tc));
	if (r)
		tc->r = *r;
	tc->rows = have_ws ? ws.ws_row : 24;
	tc->cols = have_ws ? ws.ws_col : 80;
	tc->tmux = tmux && *tmux;
	tc->truecolor = ct && (!strcmp(ct, "truecolor") || !strcmp(ct, "24bit"));
	tc->term = termcap_term_of(tc->r.version);
	if (tc->term == TERMCAP_TERM_OTHER && !tc->tmux)
		tc->term = term_of_env();
	tc->iterm = !tc->tmux && (tc->term == TERMCAP_TERM_ITERM2 ||
				  tc->term == TERMCAP_TERM_WEZTERM ||
				  tc->term == TERMCAP_TERM_MINTTY);
	tc->sextants = !tc->tmux && (tc->term == TERMCAP_TERM_KITTY ||
				     tc->term == TERMCAP_TERM_WEZTERM ||
				     tc->term == TERMCAP_TERM_GHOSTTY ||
				     tc->term == TERMCAP_TERM_FOOT);
	tc->light = tc->r.bg ? termcap_is_light(tc->r.bg_rgb) : light_of_colorfgbg();
	if (tc->r.cell_w > 0 && tc->r.cell_h > 0) {
		tc->cell_w = tc->r.cell_w, tc->cell_h = tc->r.cell_h;
		tc->cell_source = TERMCAP_CELL_CSI16;
	} else if (tc->r.area_w >= tc->cols && tc->r.area_h >= tc->rows) {
		tc->cell_w = tc->r.area_w / tc->cols, tc->cell_h = tc->r.area_h / tc->rows;
		tc->cell_source = TERMCAP_CELL_CSI14;
	} else if (have_ws && ws.ws_xpixel >= ws.ws_col && ws.ws_ypixel >= ws.ws_row) {
		tc->cell_w = ws.ws_xpixel / ws.ws_col, tc->cell_h = ws.ws_ypixel / ws.ws_row;
		tc->cell_source = TERMCAP_CELL_WINSZ;
	} else {
		tc->cell_w = 10, tc->cell_h = 20;
		tc->cell_source = TERMCAP_CELL_GUESS;
	}
}

int termcap_query(struct termcap *tc, int fd, int timeout_ms)
{
	struct termios saved, raw;
	struct strbuf got = STRBUF_INIT;
	struct termcap_reply r = { 0 };
	const char *term, *q;
	int own = 0, rc = -1, sentinel = 0;
	double start = clock_now(), deadline = start + timeout_ms / 1000.0;

	if (fd < 0) {
		fd = open("/dev/tty", O_RDWR | O_NOCTTY | O_CLOEXEC);
		own = fd >= 0;
	}
	/* A background job must not touch the tty: tcsetattr would stop it with SIGTTOU. */
	if (fd < 0 || !isatty(fd) || tcgetpgrp(fd) != getpgrp() || tcgetattr(fd, &saved) < 0) {
		termcap_fill(tc, NULL, fd);
		goto out;
	}
	raw = saved;
	raw.c_lflag &= ~(ICANON | ECHO);
	raw.c_cc[VMIN] = 0;
	raw.c_cc[VTIME] = 0;
	if (tcsetattr(fd, TCSANOW, &raw) < 0) {
		termcap_fill(tc, NULL, fd);
		goto out;
	}
	rc = 0;
	term = getenv("TERM");
	q = term && !strcmp(term, "linux") ? termcap_queries_short : termcap_queries;
	if (fsutil_write_all(fd, q, strlen(q)) < 0)
		goto done;
	while (!sentinel && got.len < REPLY_MAX) {
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		double left = deadline - clock_now();
		char chunk[512];
		ssize_t n;

		if (left <= 0)
			break;
		n = poll(&pfd, 1, wait_ms(left));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		n = read(fd, chunk, sizeof(chunk));
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n <= 0)
			break;
		strbuf_add(&got, chunk, (size_t)n);
		sentinel = termcap_parse(&r, got.buf, got.len);
	}
done:
	/* Answers that come late must not end up as the user's input. */
	if (!sentinel)
		tcflush(fd, TCIFLUSH);
	tcsetattr(fd, TCSANOW, &saved);
	termcap_fill(tc, &r, fd);
out:
	tc->waited = clock_now() - start;
	if (own)
		close(fd);
	strbuf_release(&got);
	return rc;
}
