/*
 * :context, the UI's contexts (docs/sessions.md, "Contexts"): more kernels in the sandbox of
 * the UI's session (context_open()), each with its own variables, its files and
 * limits the sandbox's. One is current: cells, completion, the variables pane and :restart go
 * to it, and the status line names it. The others wait idle (a switch waits for the running
 * cell), so the loop polls only the current one.
 */
#include "ui.h"
#include "context.h"
#include "highlight.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The context called `name`: its slot, -1 for the session's own kernel ("main"), -2 none. */
static int context_slot(const struct ui *ui, const char *name)
{
	if (!strcmp(name, "main"))
		return -1;
	for (int i = 0; i < SESSION_CONTEXTS_MAX; i++)
		if (ui->ctx.s[i] && !strcmp(ui->ctx.name[i], name))
			return i;
	return -2;
}

/* Make context `slot` (-1: main) the current one: cells go there from now on. */
static void context_switch(struct ui *ui, int slot)
{
	ui->s = slot < 0 ? ui->ctx.main : ui->ctx.s[slot];
	ui->ctx.cur = slot;
	highlight_set_language(session_kernel(ui->s)->language);	/* the editor's */
	ui->kernel_cols = 0;		/* tell it the width */
	ui->kernel_scheme[0] = 0;	/* ... and the colours, once */
	ui_match_kernel_colors(ui);
	ui_vars_stale(ui);		/* its own names */
	free(ui->dead_reason);
	ui->dead_reason = NULL;
}

/* "main python-1* r-2": the contexts, the current one starred. */
static void context_list(const struct ui *ui, struct strbuf *msg)
{
	strbuf_addf(msg, "contexts: main%s", ui->ctx.cur < 0 ? "*" : "");
	for (int i = 0; i < SESSION_CONTEXTS_MAX; i++)
		if (ui->ctx.s[i])
			strbuf_addf(msg, " %s%s", ui->ctx.name[i], ui->ctx.cur == i ? "*" : "");
	strbuf_addstr(msg, " (:context new [python|r], :context NAME, :context rm NAME)");
}

/* :context new [python|r] */
static int context_new(struct ui *ui, const char *kernel, struct strbuf *msg)
{
	struct strbuf err = STRBUF_INIT;
	struct session *c;
	int slot = -1;

	for (int i = SESSION_CONTEXTS_MAX - 1; i >= 0; i--)
		if (!ui->ctx.s[i])
			slot = i;
	ui_message(ui, "starting a context...");
	ui_draw(ui);
	c = context_open(ui->ctx.main, kernel, ui_on_state, ui, &err);
	if (!c || slot < 0) {
		strbuf_addf(msg, "context: %s", c ? "no free slot" : err.buf);
		session_close(c);
		strbuf_release(&err);
		return -1;
	}
	strbuf_release(&err);
	ui->ctx.s[slot] = c;
	snprintf(ui->ctx.name[slot], sizeof(ui->ctx.name[slot]), "%s-%u",
		 session_kernel(c)->name, ++ui->ctx.seq);
	context_switch(ui, slot);
	strbuf_addf(msg, "context %s: a new %s kernel in this sandbox (its files shared, its "
		    "variables its own; :context main goes back)", ui->ctx.name[slot],
		    session_kernel(c)->name);
	return 0;
}

int ui_context(struct ui *ui, int argc, char **argv, struct strbuf *msg)
{
	int slot;

	if (!ui->ctx.main)
		ui->ctx.main = ui->s, ui->ctx.cur = -1;
	if (argc == 1) {
		context_list(ui, msg);
		return 0;
	}
	if (ui_cell_running(ui) || (ui->nbv && ui_nbview_busy(ui))) {
		strbuf_addstr(msg, "context: a cell runs; wait for it or interrupt it (Ctrl-C) first");
		return -1;
	}
	if (!strcmp(argv[1], "new")) {
		if (argc > 2 && strcmp(argv[2], "python") && strcmp(argv[2], "r")) {
			strbuf_addf(msg, "context: '%s' is not a kernel (python or r)", argv[2]);
			return -1;
		}
		return context_new(ui, argc > 2 ? argv[2] : NULL, msg);
	}
	if (!strcmp(argv[1], "rm")) {
		slot = argc > 2 ? context_slot(ui, argv[2]) : -2;
		if (slot < 0) {
			strbuf_addf(msg, "context rm: %s", argc < 3 ? "which one? (:context lists them)" :
				    slot == -1 ? "main is the session's own kernel" : "no such context");
			return -1;
		}
		if (ui->ctx.cur == slot)
			context_switch(ui, -1);
		session_close(ui->ctx.s[slot]);
		ui->ctx.s[slot] = NULL;
		strbuf_addf(msg, "context %s removed (its kernel is gone; the files stay)",
			    ui->ctx.name[slot]);
		return 0;
	}
	if (argc > 2 || (slot = context_slot(ui, argv[1])) == -2) {
		strbuf_addf(msg, "context: no context '%s' (:context lists them)", argv[1]);
		return -1;
	}
	context_switch(ui, slot);
	strbuf_addf(msg, "context %s", slot < 0 ? "main" : ui->ctx.name[slot]);
	return 0;
}

const char *ui_context_name(const struct ui *ui)
{
	return ui->ctx.cur >= 0 && ui->ctx.s[ui->ctx.cur] ? ui->ctx.name[ui->ctx.cur] : NULL;
}

void ui_contexts_close(struct ui *ui)
{
	if (!ui->ctx.main)
		return;
	ui->s = ui->ctx.main;
	ui->ctx.cur = -1;
	for (int i = 0; i < SESSION_CONTEXTS_MAX; i++) {
		session_close(ui->ctx.s[i]);
		ui->ctx.s[i] = NULL;
	}
}
