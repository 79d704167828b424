/*
 * Unit tests of what graphics learns from the terminal: the reply parser (recorded answers of
 * xterm and kitty, partial and noisy replies, a fuzz of them), the environment's hints, and the
 * mode and block kind chosen from them.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "graphics.h"
#include "termcap.h"
#include "util.h"
#include "../tap.h"

/*
 * What Debian's xterm 379 answers to termcap_queries, recorded: as a VT340 (white background)
 * and as a VT420 (the answers before XTVERSION and OSC 11 were asked). kitty 0.26.5's answers,
 * recorded under Xvfb.
 */
static const char xterm_vt340[] =
	"\x1b[?1;0;1024S\x1b[?2;0;600;520S\x1bP>|XTerm(379)\x1b\\\x1b]11;rgb:ffff/ffff/ffff\x1b\\"
	"\x1b[?63;1;2;4;6;9;15;16;22;28c";
static const char kitty_0265[] =
	"\x1b[4;391;640t\x1b[6;17;8t\x1b_Gi=31;OK\x1b\\\x1bP>|kitty(0.26.5)\x1b\\"
	"\x1b]11;rgb:0000/0000/0000\x1b\\\x1b[?62;c";
static const char xterm_vt420[] =
	"\x1b[?1;3S\x1b[?2;3S\x1b[?64;1;2;6;9;15;16;17;18;21;22;28c";

static void test_parse_xterm(void)
{
	struct termcap_reply r;

	CHECK(termcap_parse(&r, xterm_vt340, strlen(xterm_vt340)) == 1);
	CHECK(r.da1 && r.sixel);
	CHECK(r.color_registers == 1024);
	CHECK(r.sixel_max_w == 600 && r.sixel_max_h == 520);
	CHECK(r.cell_w == 0 && r.area_w == 0);	/* xterm keeps window ops off by default */
	CHECK_STR(r.version, "XTerm(379)");
	CHECK(r.bg && r.bg_rgb[0] == 255 && r.bg_rgb[1] == 255 && r.bg_rgb[2] == 255);
	CHECK(!r.kitty);

	CHECK(termcap_parse(&r, xterm_vt420, strlen(xterm_vt420)) == 1);
	CHECK(r.da1 && !r.sixel);
	CHECK(r.color_registers == 0 && r.sixel_max_w == 0);	/* "3" = error, no value */
	CHECK(!r.bg && !r.version[0]);
}

static void test_parse_kitty(void)
{
	struct termcap_reply r;
	const char *s;

	CHECK(termcap_parse(&r, kitty_0265, strlen(kitty_0265)) == 1);
	CHECK(r.kitty && !r.sixel && r.da1);
	CHECK(r.cell_w == 8 && r.cell_h == 17 && r.area_w == 640 && r.area_h == 391);
	CHECK_STR(r.version, "kitty(0.26.5)");
	CHECK(termcap_term_of(r.version) == TERMCAP_TERM_KITTY);
	CHECK(r.bg && !r.bg_rgb[0] && !r.bg_rgb[1] && !r.bg_rgb[2]);
	/* An error answer is not support; nor is an answer to another id. */
	s = "\x1b_Gi=31;EINVAL:bad\x1b\\\x1b[?62c";
	CHECK(termcap_parse(&r, s, strlen(s)) == 1 && !r.kitty);
	s = "\x1b_Gi=32;OK\x1b\\\x1b[?62c";
	CHECK(termcap_parse(&r, s, strlen(s)) == 1 && !r.kitty);
}

static void test_parse_strings(void)
{
	struct termcap_reply r;
	char long_version[200];
	const char *s;

	/* OSC 11 ended by BEL, 2-digit and 1-digit components, rgba. */
	s = "\x1b]11;rgb:fd/f6/e3\x07\x1b[?62c";
	CHECK(termcap_parse(&r, s, strlen(s)) == 1 && r.bg);
	CHECK(r.bg_rgb[0] == 0xfd && r.bg_rgb[1] == 0xf6 && r.bg_rgb[2] == 0xe3);
	s = "\x1b]11;rgba:f/8/0/f\x1b\\\x1b[?62c";
	CHECK(termcap_parse(&r, s, strlen(s)) == 1 && r.bg);
	CHECK(r.bg_rgb[0] == 255 && r.bg_rgb[1] == 136 && r.bg_rgb[2] == 0);
	/* Not colours: no background. */
	s = "\x1b]11;rgb:12345/0/0\x07\x1b]11;rgb:zz/0/0\x07\x1b]11;#ffffff\x07\x1b]10;rgb:f/f/f\x07"
	    "\x1b]11;rgb:1/2\x07\x1b[?62c";
	CHECK(termcap_parse(&r, s, strlen(s)) == 1 && !r.bg);
	/* XTVERSION keeps printable ASCII, cut to fit. */
	s = "\x1bP>|Wez\x01Term\t 2024\x1b\\\x1b[?62c";
	CHECK(termcap_parse(&r, s, strlen(s)) == 1);
	CHECK_STR(r.version, "WezTerm 2024");
	CHECK(termcap_term_of(r.version) == TERMCAP_TERM_WEZTERM);
	memset(long_version, 'x', sizeof(long_version));
	memcpy(long_version, "\x1bP>|", 4);
	memcpy(long_version + sizeof(long_version) - 7, "\x1b\\\x1b[?6c", 7);
	CHECK(termcap_parse(&r, long_version, sizeof(long_version)) == 1);
	CHECK(strlen(r.version) == TERMCAP_VERSION_MAX - 1);
	/* An unfinished string holds back what follows: no sentinel yet. */
	s = "\x1bP>|iTerm2 3.5\x1b[?62c";
	CHECK(termcap_parse(&r, s, strlen(s)) == 0 && !r.version[0]);
	CHECK(termcap_term_of("iTerm2 3.5.0") == TERMCAP_TERM_ITERM2);
	CHECK(termcap_term_of("tmux 3.3a") == TERMCAP_TERM_TMUX);
	CHECK(termcap_term_of("") == TERMCAP_TERM_OTHER && termcap_term_of(NULL) == TERMCAP_TERM_OTHER);
}

/* Unset what the test's own terminal would tell termcap_fill. */
static void clean_env(void)
{
	static const char *const vars[] = { "TMUX", "TERM_PROGRAM", "LC_TERMINAL", "COLORFGBG",
					    "COLORTERM" };

	for (size_t i = 0; i < ARRAY_SIZE(vars); i++)
		unsetenv(vars[i]);
	setenv("TERM", "xterm-256color", 1);
}

static void test_background(void)
{
	struct termcap tc;
	struct termcap_reply r = { .da1 = 1, .bg = 1, .bg_rgb = { 253, 246, 227 } };
	static const unsigned char white[3] = { 255, 255, 255 }, black[3] = { 0, 0, 0 };
	static const unsigned char grey[3] = { 100, 100, 100 }, yellow[3] = { 200, 200, 0 };

	CHECK(termcap_is_light(white) && !termcap_is_light(black));
	CHECK(!termcap_is_light(grey) && termcap_is_light(yellow));
	clean_env();
	termcap_fill(&tc, &r, -1);
	CHECK(tc.light == 1);			/* solarized light */
	r.bg_rgb[0] = 0, r.bg_rgb[1] = 43, r.bg_rgb[2] = 54;
	setenv("COLORFGBG", "0;15", 1);		/* the answer beats the variable */
	termcap_fill(&tc, &r, -1);
	CHECK(tc.light == 0);
	termcap_fill(&tc, NULL, -1);
	CHECK(tc.light == 1);			/* no answer: COLORFGBG, light on white */
	setenv("COLORFGBG", "15;default;0", 1);
	termcap_fill(&tc, NULL, -1);
	CHECK(tc.light == 0);
	setenv("COLORFGBG", "default;default", 1);
	termcap_fill(&tc, NULL, -1);
	CHECK(tc.light == -1);
	unsetenv("COLORFGBG");
	termcap_fill(&tc, NULL, -1);
	CHECK(tc.light == -1);
}

static void test_terminal_program(void)
{
	struct termcap tc;
	struct termcap_reply r = { .da1 = 1 };

	clean_env();
	strcpy(r.version, "iTerm2 3.5.0");
	termcap_fill(&tc, &r, -1);
	CHECK(tc.term == TERMCAP_TERM_ITERM2 && tc.iterm && !tc.sextants);
	strcpy(r.version, "kitty(0.26.5)");
	termcap_fill(&tc, &r, -1);
	CHECK(tc.term == TERMCAP_TERM_KITTY && !tc.iterm && tc.sextants);
	/* No XTVERSION: the environment. */
	r.version[0] = '\0';
	setenv("LC_TERMINAL", "iTerm2", 1);
	termcap_fill(&tc, &r, -1);
	CHECK(tc.iterm);
	setenv("TMUX", "/tmp/tmux-0/default,1,0", 1);	/* inside tmux it is not trusted */
	termcap_fill(&tc, &r, -1);
	CHECK(!tc.iterm && tc.tmux && tc.term == TERMCAP_TERM_OTHER);
	strcpy(r.version, "tmux 3.3a");
	termcap_fill(&tc, &r, -1);
	CHECK(tc.term == TERMCAP_TERM_TMUX && !tc.iterm && !tc.sextants);
	clean_env();
	setenv("TERM_PROGRAM", "WezTerm", 1);
	r.version[0] = '\0';
	termcap_fill(&tc, &r, -1);
	CHECK(tc.iterm && tc.sextants);
	clean_env();
}

static void test_parse_cells(void)
{
	const char *s = "\x1b[4;480;800t\x1b[6;20;10t\x1b[?62;4c";
	struct termcap_reply r;

	CHECK(termcap_parse(&r, s, strlen(s)) == 1);
	CHECK(r.cell_w == 10 && r.cell_h == 20);
	CHECK(r.area_w == 800 && r.area_h == 480);
	/* The device class is not an attribute: "?4;6c" would be odd, but 4 first is no sixel. */
	CHECK(termcap_parse(&r, "\x1b[?4;6c", 7) == 1 && !r.sixel);
	/* 8-bit CSI. */
	CHECK(termcap_parse(&r, "\x9b?65;1;4c", strlen("\x9b?65;1;4c")) == 1 && r.sixel);
}

static void test_parse_partial(void)
{
	struct termcap_reply r;
	size_t n = strlen(xterm_vt340);

	/* Every prefix: never the sentinel before the final 'c' of DA1. */
	for (size_t k = 0; k < n; k++)
		if (termcap_parse(&r, xterm_vt340, k) != 0) {
			CHECK(!"sentinel seen in a prefix");
			return;
		}
	CHECK(termcap_parse(&r, xterm_vt340, n) == 1);
}

static void test_parse_noise(void)
{
	/* Type-ahead, a DCS reply, an OSC, an SGR mouse report around the answers. */
	const char *s = "ls\r\x1bP1$r0m\x1b\\\x1b]11;rgb:0/0/0\x07\x1b[<0;3;4M"
			"\x1b[?2;0;1000;1000S\x1b[?62;22;4c";
	struct termcap_reply r;

	CHECK(termcap_parse(&r, s, strlen(s)) == 1);
	CHECK(r.sixel && r.sixel_max_w == 1000);
	/* A DCS that never ends hides everything after it. */
	CHECK(termcap_parse(&r, "\x1bPq#0\x1b[?62;4c", strlen("\x1bPq#0\x1b[?62;4c")) == 0);
	CHECK(termcap_parse(&r, "", 0) == 0 && !r.da1);
}

/*
 * Random and mutated input: no crash (the sanitizer build watches) nor over-read, the result
 * agrees with the reply it filled in, and whatever came first, a string terminator and a
 * DA1 with sixel after it are always found.
 */
static void test_parse_fuzz(void)
{
	static const char tail[] = "\x1b\\\x1b[?62;4c";	/* ST, then DA1 with sixel */
	struct termcap_reply r;
	char buf[256];
	unsigned seed = 12345;
	int ok = 1, agree = 1, found = 1, sentinels = 0;

	for (int round = 0; round < 20000; round++) {
		size_t n = (seed = seed * 1103515245 + 12345) % sizeof(buf);
		for (size_t k = 0; k < n; k++) {
			seed = seed * 1103515245 + 12345;
			if (round % 2 && k < strlen(xterm_vt340))
				buf[k] = (seed >> 16) % 7 ? xterm_vt340[k] : (char)(seed >> 8);
			else if (round % 3)
				buf[k] = "\x1b[?;0123456789cSt\x9bP\\"[(seed >> 16) % 20];
			else
				buf[k] = "\x1b[]_P\\G>|;=OK11rgb:/f0\x07c?"[(seed >> 16) % 25];
		}
		char *copy = xmalloc(n ? n : 1);	/* exact size: ASan sees an over-read */
		int rc;

		memcpy(copy, buf, n);
		rc = termcap_parse(&r, copy, n);
		agree &= (rc == 0 || rc == 1) && rc == r.da1;
		sentinels += rc;
		if (r.color_registers < 0 || r.cell_w < 0 || r.cell_h < 0 || r.sixel_max_w < 0 ||
		    strlen(r.version) >= sizeof(r.version))
			ok = 0;
		free(copy);
		copy = xmalloc(n + sizeof(tail) - 1);
		memcpy(copy, buf, n);
		memcpy(copy + n, tail, sizeof(tail) - 1);
		found &= termcap_parse(&r, copy, n + sizeof(tail) - 1) == 1 && r.da1 && r.sixel;
		free(copy);
	}
	CHECK(ok);
	CHECK(agree);		/* 1 exactly when the sentinel was seen */
	CHECK(found);		/* noise never hides a terminated reply */
	CHECK(sentinels > 0);	/* the mutated xterm answers reach the sentinel sometimes */
}

static void test_choose(void)
{
	struct termcap tc = { 0 };
	enum graphics_mode m = GRAPHICS_NONE;

	CHECK(graphics_mode_parse("blocks", &m) == 0 && m == GRAPHICS_BLOCKS);
	CHECK(graphics_mode_parse("sixels", &m) < 0);
	CHECK_STR(graphics_mode_name(GRAPHICS_SIXEL), "sixel");
	CHECK(graphics_choose(GRAPHICS_AUTO, &tc, 1) == GRAPHICS_NONE);	/* no answer */
	tc.r.da1 = 1;
	CHECK(graphics_choose(GRAPHICS_AUTO, &tc, 1) == GRAPHICS_BLOCKS);
	CHECK(graphics_choose(GRAPHICS_AUTO, &tc, 0) == GRAPHICS_NONE);
	tc.r.sixel = 1;
	CHECK(graphics_choose(GRAPHICS_AUTO, &tc, 0) == GRAPHICS_SIXEL);
	CHECK(graphics_choose(GRAPHICS_NONE, &tc, 1) == GRAPHICS_NONE);
	/* iTerm2's own protocol before its sixel; kitty's before both. */
	tc.iterm = 1;
	CHECK(graphics_choose(GRAPHICS_AUTO, &tc, 1) == GRAPHICS_ITERM);
	tc.r.kitty = 1;
	CHECK(graphics_choose(GRAPHICS_AUTO, &tc, 1) == GRAPHICS_KITTY);
	CHECK(graphics_choose(GRAPHICS_KITTY_UNICODE, &tc, 1) == GRAPHICS_KITTY_UNICODE);
	CHECK(graphics_mode_parse("kitty-unicode", &m) == 0 && m == GRAPHICS_KITTY_UNICODE);
	CHECK(graphics_mode_parse("iterm", &m) == 0 && m == GRAPHICS_ITERM);
	CHECK_STR(graphics_mode_name(GRAPHICS_KITTY_UNICODE), "kitty-unicode");
	CHECK(graphics_blocks_choose(BLOCKS_AUTO, &tc) == BLOCKS_QUADRANT);
	tc.sextants = 1;
	CHECK(graphics_blocks_choose(BLOCKS_AUTO, &tc) == BLOCKS_SEXTANT);
	CHECK(graphics_blocks_choose(BLOCKS_HALF, &tc) == BLOCKS_HALF);
	CHECK(graphics_mode_in_cells(GRAPHICS_SIXEL) && !graphics_mode_in_cells(GRAPHICS_KITTY));
}

static void test_fill(void)
{
	struct termcap tc;
	struct termcap_reply r = { .da1 = 1, .area_w = 800, .area_h = 480 };

	termcap_fill(&tc, &r, -1);		/* no tty: 24x80 */
	CHECK(tc.rows == 24 && tc.cols == 80);
	CHECK(tc.cell_source == TERMCAP_CELL_CSI14 && tc.cell_w == 10 && tc.cell_h == 20);
	r.cell_w = 9, r.cell_h = 18;
	termcap_fill(&tc, &r, -1);
	CHECK(tc.cell_source == TERMCAP_CELL_CSI16 && tc.cell_w == 9 && tc.cell_h == 18);
	termcap_fill(&tc, NULL, -1);
	CHECK(tc.cell_source == TERMCAP_CELL_GUESS && tc.cell_w == 10 && tc.cell_h == 20);
}

static const struct tap_test tests[] = {
	{ "parse_xterm", test_parse_xterm },
	{ "parse_kitty", test_parse_kitty },
	{ "parse_strings", test_parse_strings },
	{ "background", test_background },
	{ "terminal_program", test_terminal_program },
	{ "parse_cells", test_parse_cells },
	{ "parse_partial", test_parse_partial },
	{ "parse_noise", test_parse_noise },
	{ "parse_fuzz", test_parse_fuzz },
	{ "choose", test_choose },
	{ "fill", test_fill },
};

int main(int argc, char **argv)
{
	return tap_main(argc, argv, tests, ARRAY_SIZE(tests));
}
