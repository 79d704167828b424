#include "termcap.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

#include "util.h"

const char termcap_queries[] = "\x1b[?1;1;0S\x1b[?2;1;0S\x1b[14t\x1b[16t\x1b[c";

#define MAX_PARAMS 32
#define REPLY_MAX 4096		/* more than any honest set of answers */

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
		} else if (s[i] == 0x1b && i + 1 < len && strchr("P]_^X", s[i + 1])) {
			/* A string (DCS, OSC, ...): skip to ST or BEL. */
			for (i += 2; i < len; i++) {
				if (s[i] == 0x07 || s[i] == 0x9c) {
					i++;
					break;
				}
				if (s[i] == 0x1b && i + 1 < len && s[i + 1] == '\\') {
					i += 2;
					break;
				}
			}
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
	int own = 0, rc = -1, sentinel = 0;
	double start = now_monotonic(), deadline = start + timeout_ms / 1000.0;

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
	if (write_all(fd, termcap_queries, sizeof(termcap_queries) - 1) < 0)
		goto done;
	while (!sentinel && got.len < REPLY_MAX) {
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		double left = deadline - now_monotonic();
		char chunk[512];
		ssize_t n;

		if (left <= 0)
			break;
		n = poll(&pfd, 1, (int)(left * 1000) + 1);
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
	tc->waited = now_monotonic() - start;
	if (own)
		close(fd);
	strbuf_release(&got);
	return rc;
}
