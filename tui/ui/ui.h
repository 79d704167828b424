#ifndef CELLBOX_UI_H
#define CELLBOX_UI_H

/*
 * The full-screen UI's private header: what its files share. Not an API: only the files of
 * tui/ui/ include it (the command line sees tui.h).
 *
 *	tui.c		the poll loop and key routing (focused pane, then the others), tui_run()
 *	ui_screen.c	curses start, terminal query and theme choice at start, resize, signals
 *	ui_draw.c	colours, drawing primitives, the layout and the frame
 *	ui_output.c	the output pane: laying out cells (In/Out, streams, plots), scrolling
 *	ui_editor.c	the editor pane: text, Enter (is_complete), Tab (completion), history
 *	ui_clip.c	the editor's clipboard: copy, cut, paste, and OSC 52 to the terminal's
 *	vi.c		vi mode's command table, motions and operators (pure: vi.h)
 *	ui_side.c	the side pane (its tabs: history, plots, variables) and the status line
 *	ui_vars.c	the side pane's variables: the listing asked of the kernel, the value
 *	ui_overlay.c	overlays as a stack of records: pager, menu, one-line prompts, plot viewer
 *	ui_plots.c	plot placement: reserved rows, one write of graphics a frame, hiding
 *	ui_kernel.c	kernel events -> the output model; running a cell, restart, death
 *	ui_rich.c	a display's or result's text: markdown, HTML (html.c) or text/plain
 *	ui_outpager.c	a cell's whole output read back from the history store, in a pager
 *	ui_commands.c	the command table (Ctrl-O) and its handlers, the help text
 *	keytab.c	the key table: each key's mode, command or action and help (dispatch, F1)
 *	ui_notebook.c	notebook mode: the view of a notebook's cells, laid out where they show
 *	ui_nbout.c	a cell's nbformat outputs as the output pane draws them, images decoded
 *	ui_nbfile.c	saving, quitting with unsaved changes, autosave, the recovery question
 *	ui_nbkeys.c	notebook mode's keys: command mode and edit mode, find
 *	ui_nbrun.c	notebook mode's runs: a queue of cells, their events, run all/above/below
 *
 * Panes are rectangles of the screen with a draw function and a key handler that returns
 * PANE_* flags, as htop's Panel does; keys go to the open overlay first, then to the keys
 * that work everywhere, then to the focused pane and the other panes for what it leaves. Each
 * of those asks the key table (keytab.c) for its mode's row of the key; a pane keeps its own
 * state in its own struct (output_pane, editor_pane, side_pane, status_line, nbview).
 */

#include <curses.h>
#include <wchar.h>

#include "cellcmd.h"
#include "config.h"
#include "msg.h"
#include "reason.h"
#include "session.h"
#include "setup.h"
#include "table.h"
#include "tui.h"
#include "edbuf.h"
#include "graphics.h"
#include "keys.h"
#include "notebook.h"
#include "outmodel.h"
#include "outputs.h"
#include "record.h"
#include "sgr.h"
#include "theme.h"
#include "varlist.h"
#include "vi.h"

#ifndef CELLBOX_THEMES_DIR
#define CELLBOX_THEMES_DIR "/usr/local/share/cellbox/themes"
#endif

#define OUT_CELL_MAX (256u << 10)	/* output bytes kept per cell on screen */
#define OUT_TOTAL_MAX (8u << 20)	/* output bytes kept on screen in all */
#define HIST_MAX 10000			/* cells kept for Up/Down and Ctrl-R */
#define SIDE_WIDTH 28
#define PLACES_MAX 64			/* plots drawn in one frame */
#define TUI_QUERY_MS 500		/* the wait for the terminal's answers */
#define OVERLAYS_MAX 8			/* overlays open on top of each other */

#undef CTRL
#define CTRL(c) ((c) & 0x1f)

/* What a key handler (or a command) did. */
enum {
	PANE_HANDLED = 1 << 0,	/* the key was taken */
	PANE_REDRAW = 1 << 1,	/* the screen must be drawn again */
	PANE_QUIT = 1 << 2,	/* leave the UI */
};

struct ui;

/* Where a key works (a row of the key table has one; the dispatch asks for some). */
enum key_mode {
	KM_GLOBAL = 1 << 0,	/* everywhere, before the panes */
	KM_CONSOLE = 1 << 1,	/* everywhere but in a notebook (there the notebook's) */
	KM_EDITOR = 1 << 2,	/* the editor: the console's, notebook mode's edit mode */
	KM_OUTPUT = 1 << 3,	/* the output pane (what the editor leaves) */
	KM_NB = 1 << 4,		/* notebook mode, both modes */
	KM_NB_COMMAND = 1 << 5,	/* notebook command mode */
	KM_NB_EDIT = 1 << 6,	/* notebook edit mode, before the editor's keys */
	KM_NOTE = 1 << 7,	/* no key: a line of the console's help */
	KM_NB_NOTE = 1 << 8,	/* no key: a line of notebook mode's help (a heading: keys "") */
	KM_SIDE = 1 << 9,	/* the side pane when it has the focus (its variables) */
};

#define KB_PLAIN (1u << 8)	/* key_binding.mods: without Shift, Alt or Ctrl */
#define KB_ALL (1u << 9)	/* key_binding.mods: all of them held (Ctrl-Shift-Left) */

/*
 * A row of the key table (keytab.c): a key in a mode, what it runs (one of the commands of
 * ui_commands.c by name, or an action with its argument) and its line of F1's help, as a tmux
 * key binding has a key table, a command and a note.
 */
struct key_binding {
	unsigned mode;		/* enum key_mode */
	int is_key;		/* ch is a curses KEY_* code, not a character */
	wint_t ch;
	unsigned mods;		/* KEYMOD_*: any of them held; 0: whatever is held; KB_PLAIN, KB_ALL */
	int twice;		/* the key pressed twice (d d, 0 0, i i) */
	const char *command;	/* a command line run as Ctrl-O would (NULL: fn) */
	int (*fn)(struct ui *ui, int arg);	/* PANE_* flags, never 0 */
	int arg;
	const char *keys;	/* F1's line: the keys as written (NULL: the line above's) */
	const char *help;	/* ... and what they do */
};

struct pane {
	const char *name;
	int x, y, w, h;
	int visible;
	void (*draw)(struct ui *ui, struct pane *p);
	int (*key)(struct ui *ui, struct pane *p, int is_key, wint_t ch);
};

enum { P_OUTPUT, P_EDITOR, P_SIDE, P_STATUS, P_NOTEBOOK, P_COUNT };

/* The kinds of overlay (ui_overlay.c has a record of each: draw, keys, cursor). */
enum overlay {
	OV_NONE, OV_PAGER, OV_MENU, OV_SEARCH, OV_PROMPT, OV_INPUT, OV_PLOT,
	OV_FIND,		/* notebook: `/` looks for text in the cells */
	OV_RECOVER,		/* notebook: a recovery file is there, what to do with it */
	OV_OUTPUT,		/* a cell's whole output, from the history (ui_outpager.c) */
	OV_COUNT
};

/* Notebook mode (ui_notebook.c, ui_nbkeys.c, ui_nbrun.c): the open notebook, how it shows. */
struct nbview {
	struct notebook nb;
	size_t sel;		/* the selected cell */
	size_t top;		/* the first cell drawn ... */
	int top_row;		/* ... of which this many rows are above the pane */
	int editing;		/* edit mode: the selected cell's source is in ui->editor.ed */
	wint_t prefix;		/* the first key of a two-key command (d d, 0 0, i i) */
	char *find;		/* what `/` looked for last */
	struct outmodel views;	/* only its cell_max: each cell keeps its own view */
	struct outputs out;	/* the running cell's outputs as nbformat has them */
	int outputs_open;
	char *running_code;	/* what the running cell sent (its "ran" mark, the history) */
	unsigned long queue_seq;	/* the order cells were queued in */
	int next_image;		/* the plot index of the next image read from the file (< 0) */
	int quit_armed;		/* Ctrl-Q with unsaved changes: a second one quits */
	int cursor_y, cursor_x;	/* where edit mode's cursor was drawn */
	int follow;		/* the view keeps the selection in sight (not after a page key) */
	int relayout;		/* a cell drew more or fewer rows than laid out: draw again */
};

/* A captured plot: its file and its decoded image (NULL when it could not be read). */
struct ui_plot {
	int index, w, h;	/* index: the UI's number (ui.plot_seq; < 0 a file's image) */
	char *path;		/* the file in the channel, for the eyes (open it by `rel`) */
	char *rel;		/* the session's checked copy ("plots/<n>.png"): outputs_open_file() */
	char *dir;		/* ... in this channel: its session's (the UI's, or a context's) */
	struct graphics_image *img;
};

/* Where a frame draws a plot: screen rows y.. of the image fitted to cols x rows, cropped. */
struct ui_plot_place {
	struct graphics_image *img;
	int y, x, cols, rows, crop_row, crop_rows;
};

/* Inline plots: the terminal's capabilities and what the frames drew (graphics.h). */
struct plot_frames {
	enum graphics_mode gwant, gmode;
	enum blocks_kind blocks;	/* block characters (resolved from the setting) */
	struct termcap tc;
	struct ui_plot_place placed[PLACES_MAX], shown[PLACES_MAX];
	int nplaced, nshown;		/* this frame's plots, the plots on the terminal now */
	struct strbuf gbuf;		/* the frame's graphics bytes */
	size_t gbytes;			/* graphics bytes written so far */
};

/* The output pane's own state: where it is scrolled to. */
struct output_pane {
	int scroll;			/* rows scrolled back from the bottom */
	int follow;			/* the newest output stays in view */
};

/* The editor pane's own state: the cell being written, its history, Enter's and Tab's asks. */
struct editor_pane {
	struct edbuf ed;		/* the console's cell; in a notebook, the cell being edited */
	/* History of this session's cells. */
	char **hist;
	size_t nhist, hist_alloc;
	size_t hist_pos;		/* == nhist: the cell being written */
	char *hist_saved;		/* the cell being written while walking history */
	/* The kernel's answers the editor waits for (is_complete for Enter, complete for Tab). */
	unsigned long is_complete_id, complete_id;
	char *is_complete_text;		/* the text is_complete was asked about */
	/* Tab's completions (the menu overlay shows them). */
	char **menu;
	size_t nmenu, menu_sel, comp_from, comp_to;
	/* What was copied, cut or killed last (Ctrl-V pastes it; ed.kills points here). */
	struct strbuf clip;
	struct vi vi;			/* editing-mode = vi: its mode, half-typed commands */
};

/* The side pane's tabs. */
enum side_tab { SIDE_HISTORY, SIDE_PLOTS, SIDE_VARS, SIDE_TABS };

/* The side pane's own state. */
struct side_pane {
	size_t plot_sel;		/* the gallery's plot (an index into ui->plots) */
	enum side_tab tab;
	int back_focus;			/* the pane that had the focus before the side pane */
	/* The variables tab (ui_vars.c): the listing, asked again after each cell. */
	struct varlist vars;
	size_t var_sel, var_top;
	int vars_current;		/* the listing is as the last cell left the names */
	int vars_asked;			/* a listing came (or failed) since the kernel started */
	unsigned long vars_req, value_req;	/* the requests in flight (0: none) */
	struct strbuf vars_out, value_out;	/* their stdout, capped */
	char *vars_note;		/* why there is no listing (the policy refused it ...) */
	char *value_name;		/* the name whose value is asked for (shown) */
	char *vars_error, *value_error;	/* the error each request raised */
};

/* The status line's own state. */
struct status_line {
	char *message;			/* one line shown until the next key */
	int spinner;			/* the busy spinner's step ... */
	double spin_at;			/* ... and when it last moved */
	/* What the sandbox uses (usage.h), measured by the host: */
	struct usage last;		/* the last cell's, from its done event ... */
	int has_last;			/* ... once a cell has ended */
	struct usage_sample live;	/* the counters at the last look while a cell runs */
	double cpu_pct;			/* CPU% between the last two looks; -1 before two */
	long long memory;		/* bytes in use at the last look; -1 when not read */
};

/* Overlays: a stack, the top one on screen last and first to get keys; what they show. */
struct overlay_stack {
	enum overlay ovs[OVERLAYS_MAX];
	int nov;
	enum overlay ov;		/* the top one's kind (OV_NONE when none is open) */
	struct strbuf pager;
	char *pager_title;
	int pager_top;
	struct strbuf line;		/* the search or command being typed */
	long search_hit;
	unsigned long input_id;		/* the cell whose input() is being answered */
	char *input_prompt;
};

struct ui {
	struct cellbox_config *cfg;
	struct session *s;		/* the current context's session (ui_context.c) */
	/* Contexts: `main` the session's own kernel once a :context was asked for, else NULL. */
	struct {
		struct session *main;
		struct session *s[SESSION_CONTEXTS_MAX];
		char name[SESSION_CONTEXTS_MAX][24];	/* "python-1", "r-2" */
		int cur;			/* the current slot, -1: main */
		unsigned seq;			/* the last number given */
	} ctx;
	struct record rec;		/* this session's cells into the history store */
	struct outmodel out;		/* the console's cells, as the output pane shows them */
	/* The panes (keys go to `focus` first) and each pane's own state. */
	struct pane panes[P_COUNT];
	int focus;			/* the pane keys go to first (P_EDITOR) */
	struct output_pane outpane;
	struct editor_pane editor;
	struct side_pane side;
	struct status_line status;
	struct nbview *nbv;		/* notebook mode; NULL: the console */
	struct overlay_stack ovl;
	struct outpager *opg;		/* the output pager's view while open (ui_outpager.c) */
	struct theme theme;
	char kernel_scheme[16];		/* IPython's colour scheme the kernel has */
	int ncolors;			/* 0 = no colour (NO_COLOR or a monochrome terminal) */
	char *themes_dirs[5];
	/* Kernel and cells. */
	size_t npending;		/* the user's cells submitted and not done: ui_cell_running() */
	int exec_count;
	double last_duration;
	char *dead_reason;
	int restarting;
	/* Plots, for the side pane. */
	struct ui_plot *plots;
	size_t nplots, plots_alloc;
	int plot_seq;			/* the last plot's number: the UI's, one series for every
					   context (a kernel's own index may repeat another's) */
	struct plot_frames gfx;		/* inline plots on this terminal (ui_plots.c) */
	struct strbuf clip_out;		/* an OSC 52 copy, written after the next frame */
	struct keys keys;		/* escape sequences and pastes being decoded */
	unsigned key_mods;		/* KEYMOD_* of the key being handled */
	char *paste;			/* the text of a KEYS_PASTE key being handled */
	int quit;			/* leave at the next turn (set where PANE_QUIT cannot be returned) */
	int quit_running_armed;		/* Ctrl-Q with a cell running: a second one quits */
	int tty_gone;			/* stdin hung up or failed (EIO): leave as after a signal */
	int bang;			/* the command being run was given with '!' (':w!', ':q!') */
	int kernel_cols;		/* the width the kernel was told (COLUMNS); 0: not yet */
	double t_start, t_first_frame;	/* when the UI started and drew its first frame */
	int wake[2];			/* SIGWINCH self-pipe */
	/* Colour pairs handed out so far. */
	struct { short fg, bg; } pairs[1024];
	int npairs;
};

/* What a theme element looks like on this terminal. */
struct look {
	attr_t attr;
	short pair;
};

/* Lays out wrapped text, drawing the rows that fall inside the pane. */
struct lay {
	struct ui *ui;
	int x, width;
	int row, col;		/* position in the cell's own rows */
	int base_y;		/* screen row of the cell's row 0 */
	int top, bottom;	/* screen rows that may be drawn */
	int draw;
};

/* ---- ui_draw.c: colours, primitives, layout and the frame ---- */

/* Show a message in the status line until the next key (printf-style). */
void ui_message(struct ui *ui, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The look of theme element `el`, with SGR attributes `sgr` (may be NULL) on top. */
struct look ui_look_of(struct ui *ui, int el, const struct sgr_attr *sgr);
/* Forget the colour pairs (after a theme change). */
void ui_colors_reset(struct ui *ui);
/* Decode one UTF-8 character of s[0..len): its code point in *wc, its length returned. */
size_t ui_decode(const char *s, size_t len, wchar_t *wc);
/* Columns a character takes; control characters become '?'. */
int ui_char_width(wchar_t *wc);
void ui_put_wc(int y, int x, wchar_t wc, struct look l);
/* Write UTF-8 text at y, x, at most `maxw` columns; returns the columns used. */
int ui_put_text(int y, int x, int maxw, const char *s, struct look l);
void ui_fill_row(int y, int x, int w, struct look l);
/* A box with a title over its top border. */
void ui_draw_box(struct ui *ui, int y, int x, int h, int w, const char *title);
/* Place the panes for the current screen size. */
void ui_layout(struct ui *ui);
/* Draw one frame and write it to the terminal once, the plots right after. */
void ui_draw(struct ui *ui);

/* ---- ui_output.c: the output pane ---- */

int ui_lay_visible(const struct lay *l);
void ui_lay_newline(struct lay *l);
void ui_lay_put(struct lay *l, wchar_t wc, struct look lk);
void ui_lay_text(struct lay *l, const char *s, struct look lk);
void ui_lay_sgr_text(struct lay *l, const char *s, size_t len, int el);
void ui_lay_code(struct lay *l, const char *code, const char *first, const char *cont);
/* Lay out one cell: In [n] and its code, then its output. Returns its rows. */
int ui_lay_cell(struct lay *l, const struct out_cell *c);
/* Lay out a cell's output (streams, Out[n], tracebacks, plots in their reserved rows). */
void ui_lay_chunks(struct lay *l, const struct out_cell *c);
void ui_output_draw(struct ui *ui, struct pane *p);
int ui_output_key(struct ui *ui, struct pane *p, int is_key, wint_t ch);
/* Mark every cell's layout stale (a resize, a redraw benchmark). */
void ui_output_relayout(struct ui *ui);

/* ---- ui_editor.c: the editor pane and the history ---- */

/* Start / free the editor pane's state. */
void ui_editor_init(struct editor_pane *e);
void ui_editor_release(struct editor_pane *e);
int ui_editor_rows(const struct ui *ui, int screen_h);
void ui_editor_draw(struct ui *ui, struct pane *p);
int ui_editor_key(struct ui *ui, struct pane *p, int is_key, wint_t ch);
/* A new cell in the editor: its text, an undo history of its own, vi's insert mode. */
void ui_editor_load(struct ui *ui, const char *text);
/* Whether vi's keys apply now (editing-mode = vi, the cell editor has the keys). */
int ui_vi_on(const struct ui *ui);
/*
 * vi mode's keys, before the others (tui.c): Esc in insert mode, normal mode's characters,
 * Ctrl-R and Enter; 0 for a key that is not vi's here (it goes on as in emacs mode).
 */
int ui_vi_key(struct ui *ui, int is_key, wint_t ch);
void ui_hist_add(struct ui *ui, const char *code);
/* Step through the history by `dir` (-1 older, +1 newer); 0 when there is nowhere to go. */
int ui_editor_hist_walk(struct ui *ui, int dir);
/* Enter: run when the kernel says the cell is complete, else a new line. */
void ui_editor_enter(struct ui *ui);
/* Tab: indent at the start of a line, else ask the kernel for completions. */
void ui_editor_tab(struct ui *ui);
long ui_hist_search(struct ui *ui, long from);
void ui_menu_free(struct ui *ui);
void ui_menu_accept(struct ui *ui, const char *m);

/* ---- ui_clip.c: the editor's clipboard ---- */

#define CLIP_OSC52_MAX ((size_t)1 << 20)	/* bytes a copy sends to the terminal, at most */

/* Copy the selection (`cut`: and delete it); with OSC 52 on, to the terminal's too. */
void ui_clip_copy(struct ui *ui, int cut);
/* Paste the clipboard at the cursor (in place of the selection). */
void ui_clip_paste(struct ui *ui);
/* Send `len` bytes to the terminal's clipboard when OSC 52 is on; 1 when it was sent. */
int ui_clip_send(struct ui *ui, const char *text, size_t len);
/* Write what ui_clip_send queued (after the frame: past curses, as the plots are). */
void ui_clip_flush(struct ui *ui);

/* ---- ui_side.c: side pane, status line ---- */

void ui_side_draw(struct ui *ui, struct pane *p);
/* The side pane's keys (only when it has the focus). */
int ui_side_key(struct ui *ui, struct pane *p, int is_key, wint_t ch);
/* Show (1) or hide (0) the side pane; hidden, it gives the focus back. */
void ui_side_show(struct ui *ui, int on);
/* Show tab `tab` (shows the pane); the variables tab takes the focus, the others give it back. */
void ui_side_tab(struct ui *ui, enum side_tab tab);
/* The side pane's width on this screen (0: hidden or no room). */
int ui_side_width(const struct ui *ui);
void ui_status_draw(struct ui *ui, struct pane *p);
/*
 * While a cell runs (`busy`), look at the sandbox's counters every half second for the status
 * line's live CPU% and memory: 1 when it changed (redraw); idle, forget the last look.
 */
int ui_status_sample(struct ui *ui, int busy);

/* ---- ui_vars.c: the variables tab ---- */

/* The listing is out of date (a cell ended, the kernel restarted). */
void ui_vars_stale(struct ui *ui);
/* Ask the kernel for the listing when it is out of date, shown and the kernel idle. */
void ui_vars_refresh(struct ui *ui);
/* Draw the variables into rows y.. of pane `p`. */
void ui_vars_draw(struct ui *ui, struct pane *p, int y);
/* Move the selection by `by` rows (pages when +-2). */
void ui_vars_move(struct ui *ui, int by);
/* Ask for the selected variable's value; the pager shows it when it comes. */
void ui_vars_show_value(struct ui *ui);
/* Free the variables tab's state. */
void ui_vars_release(struct side_pane *sp);

/* ---- ui_overlay.c: the overlay stack ---- */

/* Start / free the overlays' state (none open). */
void ui_overlays_init(struct overlay_stack *o);
void ui_overlays_release(struct overlay_stack *o);
/* Open an overlay on top of the others. */
void ui_overlay_push(struct ui *ui, enum overlay kind);
/* Close the top overlay. */
void ui_overlay_pop(struct ui *ui);
/* Close the top overlay and open `kind` in its place. */
void ui_overlay_replace(struct ui *ui, enum overlay kind);
/* Close the overlay of `kind` wherever it is in the stack (nothing when it is not open). */
void ui_overlay_close(struct ui *ui, enum overlay kind);
/* Draw the open overlays (bottom first); the plot viewer after the panes' plots are hidden. */
void ui_overlays_draw(struct ui *ui, int cy, int cx);
/* Keys of the top overlay; 0 when none is open or it does not take the key. */
int ui_overlay_key(struct ui *ui, int is_key, wint_t ch);
/* Open the pager overlay on `text`. */
void ui_pager_open(struct ui *ui, const char *title, const char *text);

/* ---- ui_outpager.c: a cell's whole output, read back from the history store ---- */

/* Open the output pager on cell `c`'s recorded output; -1 with `msg` saying why not. */
int ui_outpager_open(struct ui *ui, const struct out_cell *c, struct strbuf *msg);
void ui_outpager_draw(struct ui *ui);
int ui_outpager_key(struct ui *ui, int is_key, wint_t ch);
void ui_outpager_release(struct ui *ui);

/* ---- ui_plots.c: plot placement ---- */

struct ui_plot *ui_plot_find(struct ui *ui, int index);
void ui_plot_request(const struct ui *ui, int cols, int rows, struct graphics_request *rq);
/* Whether plots are drawn at all (a graphics mode was chosen). */
int ui_plots_drawn(const struct ui *ui);
int ui_plot_cap_rows(const struct ui *ui);
int ui_plot_rows(struct ui *ui, const struct out_chunk *ch, int width);
void ui_plot_place(struct ui *ui, struct graphics_image *img, int y, int x, int cols, int rows,
		int height, int top, int bottom);
void ui_plot_view_draw(struct ui *ui);
void ui_plots_hide(struct ui *ui);
int ui_plots_prepare(struct ui *ui, int *cleared);
void ui_plots_write(struct ui *ui, int cleared);
/* Make the terminal drop every plot image it holds (kitty), written at once. */
void ui_plots_drop(struct ui *ui);
/* Free a plot's image, making the terminal drop it too (kitty) and the next frame differ. */
void ui_plot_image_free(struct ui *ui, struct graphics_image *img);
/* Fill `pl` for a kernel's plot numbered `index` by the UI; its names freed by the next. */
void ui_plot_add(struct ui *ui, struct ui_plot *pl, const struct session_plot *plot, int index);
void ui_plot_names_free(struct ui_plot *pl);
void ui_plots_forget(struct ui *ui);

/* ---- ui_kernel.c: kernel events and running cells ---- */

int ui_load_hist_entry(const cJSON *entry, void *data);
void ui_on_cell_event(struct session *s, const struct session_event *ev, void *data);
/* Submit the editor's text as a cell. */
void ui_run_cell(struct ui *ui);
void ui_restart_kernel(struct ui *ui);
void ui_on_state(struct session *s, enum session_state state, const char *msg, void *data);
/* Events nobody waits for. */
void ui_on_ignore(struct session *s, const struct session_event *ev, void *data);
/*
 * A named session's cells that other front ends run (and those that ran before this one
 * attached), into the output pane as cells of their own (session_watch).
 */
void ui_on_watch(struct session *s, unsigned long id, const char *code, int past,
		 const struct session_event *ev, void *data);
/* :detach: leave a named session running (PANE_QUIT), or say that this one has no name. */
int ui_detach(struct ui *ui, int argc, char **argv, struct strbuf *msg);
/* :fork [NAME]: the named session forked into a new one (session_fork), said in `msg`. */
int ui_fork(struct ui *ui, int argc, char **argv, struct strbuf *msg);

/* ---- ui_context.c: :context, more kernels in the session's sandbox ---- */

/* :context [NAME|new [python|r]|rm NAME]: list, start, switch to or remove a context. */
int ui_context(struct ui *ui, int argc, char **argv, struct strbuf *msg);
/* The current context's name for the status line; NULL for the session's own kernel. */
const char *ui_context_name(const struct ui *ui);
/* Before the session closes: its contexts are closed and ui->s is the session's again. */
void ui_contexts_close(struct ui *ui);
/* Put one event of a running cell into its view `c` (streams, results, errors, plots). */
void ui_view_event(struct ui *ui, struct outmodel *m, struct out_cell *c,
		const struct session_event *ev);
/* The view of request `id`: a cell of the output pane or of the notebook; NULL when gone. */
struct out_cell *ui_view_of_request(struct ui *ui, unsigned long id);
/* Tell the kernel the width output is drawn at (COLUMNS, pandas), when it changed. */
void ui_kernel_set_width(struct ui *ui);
/* Text the kernel sent for an editor (`%load`): controls but tabs and newlines dropped. */
char *ui_next_input_text(const char *text);
/*
 * What a display or a result shows: its markdown rendered, else its HTML as text (a table,
 * or no text/plain worth reading; ui_rich.c), else its text/plain; NULL: none. The same for
 * a bundle `data` (an nbformat output's) with text/plain `plain`.
 */
char *ui_rich_text(const struct ui *ui, const struct session_ev_rich *r);
char *ui_rich_bundle(const struct ui *ui, const cJSON *data, const char *plain);
/*
 * Whether a cell of the user's runs (or is submitted and not done), in the console or the
 * notebook: the one answer to "is a cell running" (Ctrl-C, i i, :interrupt, the spinner, a
 * SIGINT from outside, copies). Not the same as the kernel being busy (a completion of ours
 * keeps it busy too), nor as notebook cells waiting in the queue (ui_nbview_busy()).
 */
int ui_cell_running(const struct ui *ui);
/* A cell was submitted / is done (its `done` came): what ui_cell_running() counts. */
void ui_cell_started(struct ui *ui);
void ui_cell_finished(struct ui *ui);
/* Whether the kernel can take cells (not dead, not closed). */
int ui_session_usable(const struct ui *ui);
/* The same, after starting a new kernel when the last one died (the next cell waits for it). */
int ui_session_ready(struct ui *ui);
/* Give the kernel the theme's IPython colour scheme, unless it has it already. */
void ui_match_kernel_colors(struct ui *ui);

/* ---- ui_commands.c: the command table ---- */

/* Split a command line into words and run it; PANE_* flags. */
int ui_run_command(struct ui *ui, const char *line);
/* Whether `name` is one of the commands (a key table row names it). */
int ui_command_exists(const char *name);
/*
 * Whether to leave now: a first Ctrl-Q with a cell running, or with unsaved changes, only
 * says so (ui_message) and arms the next; ':q!' (ui->bang) leaves at once.
 */
int ui_may_quit(struct ui *ui);

/* ---- keytab.c: the key table ---- */

/* The first row of the modes `modes` for the key, or NULL. */
const struct key_binding *keytab_find(unsigned modes, int is_key, wint_t ch, unsigned mods);
/* Run a row's command or action; PANE_* flags. */
int keytab_do(struct ui *ui, const struct key_binding *kb);
/* Run the key's row of modes `modes` (the modifiers of ui->key_mods); 0 when there is none. */
int keytab_run(struct ui *ui, unsigned modes, int is_key, wint_t ch);
/*
 * Whether Alt and the key do something where the keys go now (a row of the focused mode's
 * chain that asks for Alt); an overlay but the completion menu has no Alt keys.
 */
int keytab_alt_bound(const struct ui *ui, int is_key, wint_t ch);
/* The help's lines of the console's keys, or of notebook mode's (`notebook`), in order. */
void keytab_rows(int notebook, void (*row)(void *data, const char *left, const char *right),
		 void *data);
/*
 * Check the table: every key row is reached by the dispatch (no row before it in the modes
 * the keys go through takes its key), F1 shows it (its line, or the line it continues), and
 * its command is one. -1 with what is wrong in `err`.
 */
int keytab_check(struct strbuf *err);

/* ---- ui_notebook.c, ui_nbkeys.c, ui_nbrun.c: notebook mode ---- */

/*
 * Open `path` in notebook mode (a missing file is made by the first save): its first `first`
 * cells now (SIZE_MAX: all), the rest with notebook_open_rest(). -1 with `err`.
 */
int ui_nbview_open(struct ui *ui, const char *path, size_t first, struct strbuf *err);
/* Leave notebook mode (back to the console). */
void ui_nbview_close(struct ui *ui);
/* ui_nbout.c: the cell's outputs (nbformat) as the output pane shows them. */
void ui_nbview_view_build(struct ui *ui, struct nb_cell *c);
/* Decode again the images of a cell that shows, when they were let go. */
void ui_nbview_view_images(struct ui *ui, struct nb_cell *c);
/* Forget the images read from the notebook's file. */
void ui_nbview_images_forget(struct ui *ui);
/* Drop the images a cell's view shows (before the view goes: a run, a delete). */
void ui_nbview_images_drop(struct ui *ui, const struct out_cell *view);
void ui_nbview_draw(struct ui *ui, struct pane *p);
int ui_nbview_key(struct ui *ui, struct pane *p, int is_key, wint_t ch);
/* The status line's part about the notebook ("name.ipynb [+] | cell 3/12 | command"). */
void ui_nbview_status(struct ui *ui, struct strbuf *sb);
/* Save (to `path`, NULL: its file); `force` writes over a file changed on disk. */
int ui_nbview_save(struct ui *ui, const char *path, int force, struct strbuf *msg);
/* Whether the UI may quit now (no unsaved changes, or the user said so twice). */
int ui_nbview_may_quit(struct ui *ui);
/* Write the recovery file when it is due; ms until it is due next (-1: nothing to do). */
int ui_nbview_autosave(struct ui *ui);
/* Write it now (the UI is leaving on a signal). */
void ui_nbview_autosave_now(struct ui *ui);
/* The overlay over a recovery file (drawn and keyed by ui_overlay.c's table). */
void ui_nbview_draw_recover(struct ui *ui);
int ui_nbview_recover_key(struct ui *ui, int is_key, wint_t ch);
/* Select cell `i` (and show it). */
void ui_nbview_select(struct ui *ui, size_t i);
/* Scroll the view by `rows` (up when negative). */
void ui_nbview_scroll(struct ui *ui, int rows);
/* Make the selected cell (in edit mode: the cursor) show. */
void ui_nbview_show_sel(struct ui *ui);
/* Leave edit mode, keeping the text in the cell. */
void ui_nbview_leave_edit(struct ui *ui);
/* What a notebook key does (the key table's actions on the notebook). */
enum nb_act {
	NB_UP, NB_DOWN, NB_FIRST, NB_LAST, NB_PAGE_UP, NB_PAGE_DOWN, NB_EDIT,
	NB_INSERT_ABOVE, NB_INSERT_BELOW, NB_DELETE, NB_UNDELETE, NB_MARKDOWN, NB_CODE, NB_RAW,
	NB_COPY, NB_CUT, NB_PASTE_BELOW, NB_PASTE_ABOVE, NB_MOVE_UP, NB_MOVE_DOWN, NB_COLLAPSE,
	NB_FIND, NB_FIND_NEXT, NB_FIND_BACK, NB_FIND_CLEAR,
	NB_LEAVE_EDIT, NB_NEWLINE, NB_EDIT_UP, NB_EDIT_DOWN,	/* edit mode */
};
/* Do `act` on the selected cell. */
void ui_nbview_act(struct ui *ui, enum nb_act act);
/* Look for the find text from the selected cell on (`dir` 1 down, -1 up). */
void ui_nbview_find_next(struct ui *ui, int dir);
/* Run cell `i` (queued behind others); `how`: what to select after. */
enum nb_run { NB_RUN_STAY, NB_RUN_NEXT, NB_RUN_INSERT };
void ui_nbview_run(struct ui *ui, enum nb_run how);
/* Queue cells [from, to) to run in order. */
void ui_nbview_run_range(struct ui *ui, size_t from, size_t to);
/* The queue is dropped (an error, an interrupt, a restart). */
void ui_nbview_drop_queue(struct ui *ui);
/* Whether a notebook cell runs or waits in the queue to (more than ui_cell_running()). */
int ui_nbview_busy(const struct ui *ui);
/* The kernel was restarted: counts start again, nothing runs. */
void ui_nbview_restarted(struct ui *ui);
/* Commands of notebook mode (rows of ui_commands.c's table). */
int ui_nbcmd_open(struct ui *ui, int argc, char **argv, struct strbuf *msg);
int ui_nbcmd_write(struct ui *ui, int argc, char **argv, struct strbuf *msg);
int ui_nbcmd_run_all(struct ui *ui, int argc, char **argv, struct strbuf *msg);
int ui_nbcmd_run_above(struct ui *ui, int argc, char **argv, struct strbuf *msg);
int ui_nbcmd_run_below(struct ui *ui, int argc, char **argv, struct strbuf *msg);
int ui_nbcmd_restart_run_all(struct ui *ui, int argc, char **argv, struct strbuf *msg);
int ui_nbcmd_clear_outputs(struct ui *ui, int argc, char **argv, struct strbuf *msg);
int ui_nbcmd_stats(struct ui *ui, int argc, char **argv, struct strbuf *msg);

/* ---- ui_screen.c: curses, the terminal, signals ---- */

void ui_themes_dirs(struct ui *ui);
int ui_screen_start(struct ui *ui, const char *theme_name);
void ui_graphics_requery(struct ui *ui);
void ui_screen_resize(void);
/*
 * Load theme `name` (`auto`: light or dark by the terminal's background) and fit it to the
 * terminal; -1 with `msg`.
 */
int ui_set_theme(struct ui *ui, const char *name, struct strbuf *msg);

#endif
