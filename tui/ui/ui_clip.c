/*
 * The editor's clipboard: one text, what Alt-W copied, Ctrl-X (or Ctrl-W at a selection) cut
 * or a kill (Ctrl-K, Ctrl-U, the word kills) took last, as readline's kill ring of one; Ctrl-V
 * pastes it (Ctrl-Y is redo). A copy or a cut goes to the terminal's clipboard too, with OSC 52
 * (ESC ] 52 ; c ; BASE64 BEL), when the osc52 setting says so. `auto` sends it only where the
 * terminal is known to take it: tmux (it keeps the text as a paste buffer when its
 * set-clipboard option is on, and passes it on to the terminal outside; else it drops it), and
 * kitty, xterm, WezTerm, iTerm2, foot, ghostty and mintty; a terminal we know nothing of might
 * print the escape. Inside tmux the escape goes to tmux itself, never through its passthrough.
 * At most CLIP_OSC52_MAX bytes go to the terminal; a bigger copy stays the editor's.
 */
#include "ui.h"

#include "base64.h"

/* Whether copies go to the terminal's clipboard (the osc52 setting, and the terminal). */
static int osc52_on(const struct ui *ui)
{
	if (ui->cfg->osc52 != CONFIG_OSC52_AUTO)
		return ui->cfg->osc52 == CONFIG_OSC52_ON;
	if (ui->gfx.tc.tmux)
		return 1;
	switch (ui->gfx.tc.term) {
	case TERMCAP_TERM_KITTY:
	case TERMCAP_TERM_WEZTERM:
	case TERMCAP_TERM_ITERM2:
	case TERMCAP_TERM_GHOSTTY:
	case TERMCAP_TERM_FOOT:
	case TERMCAP_TERM_MINTTY:
	case TERMCAP_TERM_XTERM:
		return 1;
	default:
		return 0;
	}
}

int ui_clip_send(struct ui *ui, const char *text, size_t len)
{
	if (!len || len > CLIP_OSC52_MAX || !osc52_on(ui))
		return 0;
	strbuf_reset(&ui->clip_out);
	strbuf_addstr(&ui->clip_out, "\x1b]52;c;");
	base64_encode(text, len, &ui->clip_out);
	strbuf_addch(&ui->clip_out, '\a');
	return 1;
}

void ui_clip_flush(struct ui *ui)
{
	if (!ui->clip_out.len)
		return;
	fsutil_write_all(1, ui->clip_out.buf, ui->clip_out.len);
	strbuf_reset(&ui->clip_out);
}

/* Characters (code points) in s[0..len). */
static size_t chars(const char *s, size_t len)
{
	size_t n = 0;

	for (size_t i = 0; i < len; i++)
		n += ((unsigned char)s[i] & 0xc0) != 0x80;
	return n;
}

void ui_clip_copy(struct ui *ui, int cut)
{
	struct edbuf *e = &ui->editor.ed;
	struct strbuf *clip = &ui->editor.clip;
	size_t from, to;
	int sent;

	if (!edbuf_selection(e, &from, &to)) {
		ui_message(ui, "nothing selected (Shift and the arrows select)");
		return;
	}
	strbuf_reset(clip);
	strbuf_add(clip, e->text.buf + from, to - from);
	if (cut)
		edbuf_cut_selection(e);
	else
		edbuf_unmark(e);	/* as Emacs's M-w: the copy ends the selection */
	sent = ui_clip_send(ui, clip->buf, clip->len);
	ui_message(ui, "%s %zu characters%s", cut ? "cut" : "copied", chars(clip->buf, clip->len),
		   sent ? " (to the terminal's clipboard too)" :
		   clip->len > CLIP_OSC52_MAX ? " (too big for the terminal's clipboard)" : "");
}

void ui_clip_paste(struct ui *ui)
{
	const struct strbuf *clip = &ui->editor.clip;

	if (!clip->len)
		ui_message(ui, "nothing to paste (Alt-W copies, Ctrl-X cuts, Ctrl-K kills)");
	else if (edbuf_insert(&ui->editor.ed, clip->buf, clip->len) < 0)
		ui_message(ui, "the cell is too big");
}
