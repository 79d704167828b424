/*
 * `cellbox tui`: the full-screen split-pane interface (ncursesw), its poll loop and key
 * routing. The files of the UI are listed in ui.h.
 *
 * One poll loop multiplexes the keyboard, SIGWINCH (through a self-pipe) and the session's
 * descriptor, so the screen stays live while a cell runs. Keys go to the open overlay first,
 * then to the keys that work everywhere, then to the focused pane (each reads the key table,
 * keytab.c, for its mode); handlers return PANE_* flags (HANDLED, REDRAW, QUIT), as htop's
 * ScreenManager has them.
 */
#include "ui.h"
#include "highlight.h"
#include "kernel.h"
#include "named_setup.h"

#include <errno.h>
#include <stdint.h>
#include <locale.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* Keys that work wherever the focus is (Ctrl-R, Ctrl-C, Ctrl-D: in a notebook, its own). */
static int global_key(struct ui *ui, int is_key, wint_t ch)
{
	return keytab_run(ui, KM_GLOBAL | (ui->nbv ? 0 : KM_CONSOLE), is_key, ch);
}

/*
 * Hand a key to the top overlay, the keys that work everywhere, then the focused pane and
 * the others for what it leaves (the output pane scrolls while the editor has the focus).
 */
static int ui_key(struct ui *ui, int is_key, wint_t ch)
{
	const struct key_binding *kb;
	int rc;

	if (is_key && ch == KEY_RESIZE)
		return PANE_REDRAW;
	free(ui->status.message);
	ui->status.message = NULL;
	/* Quitting works everywhere, over an overlay too (as F1 says). */
	kb = keytab_find(KM_GLOBAL, is_key, ch, ui->key_mods);
	if (kb && kb->command && !strcmp(kb->command, "quit"))
		return keytab_do(ui, kb);
	rc = ui_overlay_key(ui, is_key, ch);
	if (rc & PANE_HANDLED)
		return rc;
	rc = ui_vi_key(ui, is_key, ch);		/* vi mode's normal mode: Ctrl-R redoes */
	if (rc & PANE_HANDLED)
		return rc;
	rc = global_key(ui, is_key, ch);
	if (rc & PANE_HANDLED)
		return rc;
	for (int k = 0; k < P_COUNT; k++) {
		int i = k == 0 ? ui->focus : k <= ui->focus ? k - 1 : k;
		struct pane *p = &ui->panes[i];
		if (p->visible && p->key) {
			rc = p->key(ui, p, is_key, ch);
			if (rc & PANE_HANDLED)
				return rc;
		}
	}
	return PANE_REDRAW;
}

/* Hand one key with its modifiers to the handlers. */
static int ui_key_mods(struct ui *ui, int is_key, wint_t ch, unsigned mods)
{
	int flags;

	ui->key_mods = mods;
	flags = ui_key(ui, is_key, ch);
	ui->key_mods = 0;
	return flags;
}

/*
 * Hand the decoded keys to the handlers; the OR of their flags. An ESC and a key in one read
 * is Alt and the key where that does something here, else Esc and then the key (Esc j in a
 * notebook cell over ssh, or in tmux with escape-time 0): prompt_toolkit's rule.
 */
static int handle_keys(struct ui *ui)
{
	struct key_event ev;
	int flags = 0;

	while (!(flags & PANE_QUIT) && keys_next(&ui->keys, &ev)) {
		ui->paste = ev.text;
		if ((ev.mods & KEYMOD_ESC) && !keytab_alt_bound(ui, ev.is_key, ev.ch)) {
			flags |= ui_key_mods(ui, 0, 27, 0);
			if (!(flags & PANE_QUIT))
				flags |= ui_key_mods(ui, ev.is_key, ev.ch,
						     ev.mods & ~(unsigned)(KEYMOD_ALT | KEYMOD_ESC));
		} else {
			flags |= ui_key_mods(ui, ev.is_key, ev.ch, ev.mods);
		}
		ui->paste = NULL;
		free(ev.text);
	}
	return flags;
}

/*
 * Read every key that is waiting; returns the OR of the handlers' flags. A lone ESC or a cut
 * sequence waits a little for the rest (a paste longer), then counts as what it was. A
 * terminal that hung up (POLLHUP) or fails reads (EIO) sets `tty_gone`: nothing more comes.
 */
static int read_keys(struct ui *ui)
{
	int flags = 0, r = 0, pending;
	wint_t ch;

	for (;;) {
		while (!(flags & PANE_QUIT)) {
			errno = 0;
			if ((r = get_wch(&ch)) == ERR)
				break;
			keys_feed(&ui->keys, r == KEY_CODE_YES, ch);
			flags |= handle_keys(ui);
		}
		if (r == ERR && errno == EIO)
			ui->tty_gone = 1;
		pending = keys_pending(&ui->keys);
		if (!pending || (flags & PANE_QUIT) || ui->tty_gone)
			break;
		{
			struct pollfd pfd = { .fd = 0, .events = POLLIN };
			int n = poll(&pfd, 1, pending == 2 ? 2000 : 30);
			if (n > 0 && pfd.revents & (POLLHUP | POLLERR | POLLNVAL))
				ui->tty_gone = 1;
			if (n <= 0 || ui->tty_gone) {
				keys_flush(&ui->keys);
				break;
			}
		}
	}
	return flags | handle_keys(ui);
}

/* The poll loop: keys, window size changes and kernel events. Returns 1 after a signal. */
static int ui_loop(struct ui *ui)
{
	int dirty = 1, quit = 0, signalled = 0;

	while (!quit && !ui->quit) {
		struct pollfd fds[3] = {
			{ .fd = 0, .events = POLLIN },
			{ .fd = ui->wake[0], .events = POLLIN },
			{ .fd = session_fd(ui->s), .events = POLLIN },
		};
		int timeout = ui_nbview_autosave(ui), busy = ui_cell_running(ui);
		size_t cells_before = ui->out.ncells;

		if (dirty) {
			ui_draw(ui);
			ui_kernel_set_width(ui);	/* the pane's width may have changed */
			ui_vars_refresh(ui);		/* a cell ended, the tab shows: list again */
			dirty = 0;
		}
		if (busy && (timeout < 0 || timeout > 100))
			timeout = 100;
		if (poll(fds, 3, timeout) < 0 && errno != EINTR)
			break;
		if (fds[1].revents & POLLIN) {
			char buf[64];
			ssize_t n;
			int resized = 0;
			while ((n = read(ui->wake[0], buf, sizeof(buf))) > 0)
				for (ssize_t k = 0; k < n; k++) {
					resized |= buf[k] == 'w';
					if (buf[k] == 'q')
						quit = signalled = 1;
					else if (buf[k] == 'i' && ui_cell_running(ui))
						session_interrupt(ui->s);
				}
			if (resized) {
				ui_screen_resize();
				ui_graphics_requery(ui);
				clearok(curscr, TRUE);	/* the terminal may have reflowed */
				ui_output_relayout(ui);
			}
			dirty = 1;
		}
		/* A hung-up terminal is readable for ever (POLLIN with POLLHUP), with nothing to read. */
		if (fds[0].revents & (POLLHUP | POLLERR | POLLNVAL))
			ui->tty_gone = 1;
		else if (fds[0].revents & POLLIN) {
			int flags = read_keys(ui);
			dirty |= flags & PANE_REDRAW;
			quit |= (flags & PANE_QUIT) != 0;
		}
		if (ui->tty_gone) {
			signalled = 1;
			break;	/* the terminal went away */
		}
		if (session_dispatch(ui->s) > 0 || ui->out.ncells != cells_before)
			dirty = 1;
		if (session_state(ui->s) == SESSION_DEAD && !ui->dead_reason)
			dirty = 1;
		if (busy && clock_now() - ui->status.spin_at > 0.1) {
			ui->status.spinner++;
			ui->status.spin_at = clock_now();
			dirty = 1;
		}
		if (busy != ui_cell_running(ui))
			dirty = 1;
		if (ui_status_sample(ui, busy))
			dirty = 1;
	}
	return signalled;
}

/*
 * Start the kernel while the screen shows: what the opening prints (why it failed, a note
 * about the pool) is caught instead of written over the screen. NULL with `err`.
 */
static struct session *open_session(struct ui *ui, const struct tui_named *named,
				    struct strbuf *err)
{
	int fd = memfd_create("cellbox-open", MFD_CLOEXEC), saved = -1;
	struct strbuf note = STRBUF_INIT, why = STRBUF_INIT;
	struct session *s;

	fflush(stderr);
	if (fd >= 0 && (saved = dup(2)) >= 0)
		dup2(fd, 2);
	if (named && (named->name || named->attach))
		s = named_setup_open(ui->cfg, named->name ? named->name : named->attach,
				     named->name != NULL, &named->idle, named->read_only, ui_on_state,
				     ui, NULL, &why);
	else
		s = setup_open(ui->cfg, ui_on_state, ui, NULL, &note, &why);
	if (s && session_named(s))
		session_watch(s, ui_on_watch, ui);
	else if (s)
		session_keep_cells(s);	/* for the host of a :detach to show (session.h) */
	fflush(stderr);
	if (saved >= 0) {
		dup2(saved, 2);
		close(saved);
	}
	if (fd >= 0) {
		lseek(fd, 0, SEEK_SET);
		strbuf_read_fd(err, fd, 1 << 16);	/* what installing the libraries printed */
		close(fd);
	}
	if (!s)
		strbuf_addf(err, "cellbox: %s\n", why.buf);
	else if (note.len)
		strbuf_addf(err, "cellbox: note: %s\n", note.buf);
	while (err->len && err->buf[err->len - 1] == '\n')
		err->buf[--err->len] = '\0';
	strbuf_release(&note);
	strbuf_release(&why);
	return s;
}

#define NB_FIRST_CELLS 120	/* cells read before the first frame: more than a screen shows */

int tui_run(struct cellbox_config *cfg, const char *file, const struct tui_named *named)
{
	struct ui ui;
	const char *theme = cfg->theme ? cfg->theme : "auto";
	struct strbuf err = STRBUF_INIT;
	int rc = EXIT_OK, screen = 0, signalled = 0;

	setlocale(LC_ALL, "");
	memset(&ui, 0, sizeof(ui));
	ui.t_start = clock_now();
	ui.cfg = cfg;
	ui.outpane.follow = 1;
	graphics_mode_parse(cfg->graphics ? cfg->graphics : "auto", &ui.gfx.gwant);
	strbuf_init(&ui.gfx.gbuf, 0);
	strbuf_init(&ui.clip_out, 0);
	outmodel_init(&ui.out, OUT_CELL_MAX);
	ui_editor_init(&ui.editor);
	keys_init(&ui.keys);
	ui_overlays_init(&ui.ovl);
	theme_init(&ui.theme);
	strcpy(ui.kernel_scheme, "Linux");
	ui_themes_dirs(&ui);
	ui.panes[P_OUTPUT] = (struct pane){ .name = "output", .visible = 1, .draw = ui_output_draw,
					    .key = ui_output_key };
	ui.panes[P_EDITOR] = (struct pane){ .name = "editor", .visible = 1, .draw = ui_editor_draw,
					    .key = ui_editor_key };
	ui.panes[P_SIDE] = (struct pane){ .name = "side", .visible = 0, .draw = ui_side_draw,
					  .key = ui_side_key };
	ui.panes[P_STATUS] = (struct pane){ .name = "status", .visible = 1, .draw = ui_status_draw };
	ui.panes[P_NOTEBOOK] = (struct pane){ .name = "notebook", .draw = ui_nbview_draw,
					      .key = ui_nbview_key };
	ui.focus = P_EDITOR;
	/* The cells of a first screen at once; the others after the first frame. */
	if (file && ui_nbview_open(&ui, file, NB_FIRST_CELLS, &err) < 0) {
		msg_error("%s", err.buf);
		rc = EXIT_USAGE;
		goto out;
	}
	/* The file's kernel, as run and replay choose it: an R notebook runs in R. */
	if (file && !cfg->session.kernel) {
		const struct kernel_def *k = kernel_for_file(file, ui.nbv ? ui.nbv->nb.root : NULL);

		if (k)
			cfg->session.kernel = xstrdup(k->name);
	}
	if (ui_screen_start(&ui, theme) < 0) {
		rc = EXIT_USAGE;
		goto out;
	}
	screen = 1;
	/* Pastes bracketed, Shift- and Ctrl-Enter told apart where the terminal can. */
	fsutil_write_all(1, keys_enable, strlen(keys_enable));
	/* The first frame before the kernel: a notebook shows while its kernel starts. */
	ui_draw(&ui);
	ui.t_first_frame = clock_now();
	if (ui.nbv && notebook_open_rest(&ui.nbv->nb, &err) < 0) {
		rc = EXIT_USAGE;	/* a cell further down is not a cell: say so, as at once */
		goto out;
	}
	ui.s = open_session(&ui, named, &err);
	if (!ui.s) {
		rc = EXIT_NO_KERNEL;
		goto out;
	}
	if (err.len)
		ui_message(&ui, "%s", err.buf);	/* a note (about the pool) */
	strbuf_reset(&err);
	ui_match_kernel_colors(&ui);	/* the theme was chosen before the kernel started */
	/* The kernel's language: its highlighting and indentation in the editor. */
	highlight_set_language(session_kernel(ui.s)->language);
	ui.editor.ed.indent = session_kernel(ui.s)->indent;
	ui.editor.ed.openers = session_kernel(ui.s)->openers;
	if (cfg->history_size) {
		/* Up, Ctrl-R and the side pane reach the cells of earlier sessions too. */
		history_iter(NULL, ui_load_hist_entry, &ui, &err);
		strbuf_reset(&err);
	}
	record_open(&ui.rec, cfg, ui.s);
	signalled = ui_loop(&ui);
	if (ui.nbv && signalled)	/* not a quit of the user's: keep what is unsaved */
		ui_nbview_autosave_now(&ui);
	else if (ui.nbv)
		notebook_discard_recovery(&ui.nbv->nb);
out:
	if (screen) {
		ui_plots_drop(&ui);	/* kitty keeps images until told */
		fsutil_write_all(1, keys_disable, strlen(keys_disable));
		endwin();
	}
	if (screen && rc != EXIT_OK && err.len)	/* why it could not go on (sanitised) */
		msg_error("%s", err.buf + (strncmp(err.buf, "cellbox: ", 9) ? 0 : 9));
	ui_nbview_close(&ui);
	strbuf_reset(&err);
	if (ui.s && session_named(ui.s) && session_state(ui.s) != SESSION_CLOSED)
		msg_error("detached from session '%s': it runs on (cellbox attach %s; cellbox kill "
			  "%s ends it)", session_named(ui.s), session_named(ui.s), session_named(ui.s));
	ui_contexts_close(&ui);
	if (setup_close(ui.s, cfg, NULL, &err) < 0)
		msg_error("%s", err.buf);
	record_close(&ui.rec);
	strbuf_release(&err);
	outmodel_release(&ui.out);
	ui_editor_release(&ui.editor);
	ui_vars_release(&ui.side);
	ui_overlays_release(&ui.ovl);
	ui_outpager_release(&ui);
	theme_release(&ui.theme);
	keys_release(&ui.keys);
	for (size_t i = 0; i < ui.nplots; i++) {
		graphics_free(ui.plots[i].img);
		ui_plot_names_free(&ui.plots[i]);
	}
	free(ui.plots);
	strbuf_release(&ui.gfx.gbuf);
	strbuf_release(&ui.clip_out);
	free(ui.status.message);
	free(ui.dead_reason);
	for (int k = 0; ui.themes_dirs[k]; k++)
		free(ui.themes_dirs[k]);
	if (ui.wake[0] > 0) {
		close(ui.wake[0]);
		close(ui.wake[1]);
	}
	return rc;
}
