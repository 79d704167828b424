/*
 * The screen: curses started in raw mode with our own signal handling (SIGWINCH and the
 * signals that end the UI go through a self-pipe to the poll loop), the terminal asked about
 * graphics before curses owns it, the theme chosen and fitted to its colours, resizes.
 */
#include "ui.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

static int wake_fd = -1;

/* Wake the poll loop: 'w' a window size change, 'i' SIGINT, 'q' SIGTERM or SIGHUP. */
static void on_signal(int sig)
{
	int saved = errno;
	char c = sig == SIGWINCH ? 'w' : sig == SIGINT ? 'i' : 'q';

	if (write(wake_fd, &c, 1) < 0)
		(void)0;
	errno = saved;
}

/*
 * Load theme `name` (`auto`: light or dark by the terminal's background) and fit it to the
 * terminal; -1 with `msg`.
 */
int ui_set_theme(struct ui *ui, const char *name, struct strbuf *msg)
{
	struct theme t;

	theme_init(&t);
	if (theme_load(&t, theme_resolve(name, ui->gfx.tc.light),
		       (const char *const *)ui->themes_dirs, msg) < 0) {
		theme_release(&t);
		return -1;
	}
	theme_degrade(&t, ui->ncolors);
	theme_release(&ui->theme);
	ui->theme = t;
	ui_colors_reset(ui);
	ui_match_kernel_colors(ui);
	return 0;
}

/* The directories themes are looked up in, first match wins. */
void ui_themes_dirs(struct ui *ui)
{
	const char *xdg = getenv("XDG_CONFIG_HOME"), *home = getenv("HOME");
	char exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	int k = 0;

	if (xdg && *xdg)
		ui->themes_dirs[k++] = xasprintf("%s/cellbox/themes", xdg);
	else if (home)
		ui->themes_dirs[k++] = xasprintf("%s/.config/cellbox/themes", home);
	if (n > 0) {
		char *slash;
		exe[n] = '\0';
		slash = strrchr(exe, '/');
		if (slash)
			*slash = '\0';
		/* The build tree (build/tui/cellbox next to build/themes) and a relocated install. */
		ui->themes_dirs[k++] = xasprintf("%s/../themes", exe);
		ui->themes_dirs[k++] = xasprintf("%s/../share/cellbox/themes", exe);
	}
	ui->themes_dirs[k++] = xstrdup(CELLBOX_THEMES_DIR);
	ui->themes_dirs[k] = NULL;
}

/*
 * Keys with modifiers the terminfo entry names (kLFT5 is Ctrl-Left): curses would hand them
 * over as codes of its own, made up at run time, that say nothing about the modifiers. Where
 * the sequence is xterm's (ESC [1;mD, ESC [3;m~), curses is told to leave it alone, so that
 * keys.c decodes it as the key and its modifiers, the same on every terminal.
 */
static void ui_modified_keys(void)
{
	static const char *const names[] = { "kLFT", "kRIT", "kHOM", "kEND", "kDC", "kUP", "kDN" };

	for (size_t i = 0; i < ARRAY_SIZE(names); i++)
		for (int m = 3; m <= 8; m++) {
			char name[16];
			const char *seq;
			int code;

			snprintf(name, sizeof(name), "%s%d", names[i], m);
			seq = tigetstr(name);
			if (!seq || seq == (char *)-1 || strncmp(seq, "\x1b[", 2) ||
			    strspn(seq + 2, "0123456789;") + 3 != strlen(seq))
				continue;	/* not ESC [ digits final: not keys.c's */
			code = key_defined(seq);
			if (code > 0)
				keyok(code, FALSE);
		}
}

/* Start curses: raw keys, our own SIGWINCH, colours as far as the terminal goes. */
int ui_screen_start(struct ui *ui, const char *theme_name)
{
	struct sigaction sa;
	struct strbuf err = STRBUF_INIT;
	const char *nc = getenv("NO_COLOR");

	if (pipe2(ui->wake, O_CLOEXEC | O_NONBLOCK) < 0) {
		msg_error("cannot make a pipe: %s", strerror(errno));
		return -1;
	}
	wake_fd = ui->wake[1];
	/*
	 * Ask the terminal before curses owns it: termcap sets and restores raw mode itself.
	 * The background decides the theme `auto`, so that asks too.
	 */
	if (ui->gfx.gwant != GRAPHICS_NONE || !strcmp(theme_name, "auto"))
		termcap_query(&ui->gfx.tc, -1, TUI_QUERY_MS);
	else
		termcap_fill(&ui->gfx.tc, NULL, 1);
	if (!initscr()) {
		msg_error("cannot start the screen (TERM='%s')", getenv("TERM"));
		return -1;
	}
	raw();
	noecho();
	nonl();
	keypad(stdscr, TRUE);
	nodelay(stdscr, TRUE);
	set_escdelay(25);
	ui_modified_keys();
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = SA_RESTART;
	sigaction(SIGWINCH, &sa, NULL);
	/* Leave through the loop, so the terminal is restored and the kernel stopped. */
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);	/* a SIGINT from outside: as Ctrl-C on a running cell */
	ui->ncolors = 0;
	if (has_colors() && !(nc && *nc)) {
		start_color();
		use_default_colors();
		ui->ncolors = COLORS >= 256 ? 256 : COLORS >= 16 ? 16 : COLORS >= 8 ? 8 : 0;
	}
	ui->gfx.gmode = graphics_choose(ui->gfx.gwant, &ui->gfx.tc, ui->ncolors > 0);
	if (ui->gfx.gmode == GRAPHICS_BLOCKS && !ui->ncolors)
		ui->gfx.gmode = GRAPHICS_NONE;	/* half-blocks are colours or nothing */
	blocks_kind_parse(ui->cfg->blocks, &ui->gfx.blocks);
	ui->gfx.blocks = graphics_blocks_choose(ui->gfx.blocks, &ui->gfx.tc);
	if (ui_set_theme(ui, theme_name, &err) < 0) {
		/* A missing theme is not worth refusing to start: fall back to the built-in one. */
		theme_release(&ui->theme);
		theme_init(&ui->theme);
		theme_parse(&ui->theme, theme_builtin_dark, "dark", NULL);
		theme_degrade(&ui->theme, ui->ncolors);
		ui_colors_reset(ui);
		ui_message(ui, "theme: %s (using the built-in dark theme)", err.buf);
	}
	strbuf_release(&err);
	return 0;
}

/* Ask the terminal again after a resize (the font, so the cell size, may have changed). */
void ui_graphics_requery(struct ui *ui)
{
	struct termcap tc;

	if (!ui_plots_drawn(ui))
		return;
	if (termcap_query(&tc, -1, TUI_QUERY_MS) == 0 && (tc.r.da1 || !ui->gfx.tc.r.da1))
		ui->gfx.tc = tc;
}

/* Apply a new window size. */
void ui_screen_resize(void)
{
	struct winsize ws;

	if (ioctl(1, TIOCGWINSZ, &ws) == 0 && ws.ws_row > 0 && ws.ws_col > 0)
		resize_term(ws.ws_row, ws.ws_col);
}
