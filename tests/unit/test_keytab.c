/*
 * The full-screen UI's key table: every row is reached by the dispatch and shown by F1, the
 * keys name the commands they run, and the manual page lists what F1 lists.
 */
#include <stdlib.h>
#include <string.h>

#include "ui.h"
#include "../tap.h"

/* Every row reached by the dispatch, shown by F1, its command one of the commands. */
static void test_keytab_check(void)
{
	struct strbuf err = STRBUF_INIT;

	CHECK(keytab_check(&err) == 0);
	if (err.len)
		printf("# %s", err.buf);
	strbuf_release(&err);
}

/* Add a row as "left\tright\n". */
static void add_row(void *data, const char *left, const char *right)
{
	strbuf_addf(data, "%s\t%s\n", left, right);
}

/* The manual page's rows (tui_help_rows) are F1's: the console's keys, the notebook's. */
static void test_man_rows(void)
{
	struct strbuf man = STRBUF_INIT, console = STRBUF_INIT, nb = STRBUF_INIT;
	const char *c, *n;

	ui_help_rows(add_row, &man);
	keytab_rows(0, add_row, &console);
	keytab_rows(1, add_row, &nb);
	c = strstr(man.buf, console.buf);
	n = strstr(man.buf, nb.buf);
	CHECK(c && n && c < n);			/* in F1's order, the console first */
	CHECK(strstr(console.buf, "F1\tthis help\n") != NULL);
	CHECK(strstr(console.buf, "Ctrl-Q, Ctrl-D\tquit (Ctrl-D on an empty cell)\n") != NULL);
	CHECK(strstr(nb.buf, "d d\tdelete the cell (z brings it back)\n") != NULL);
	CHECK(strstr(man.buf, "save-plot N FILE\t") != NULL);	/* and the commands */
	strbuf_release(&man);
	strbuf_release(&console);
	strbuf_release(&nb);
}

/* Keys whose action is a command name the command (Ctrl-O's table), not code of their own. */
static void test_bound_commands(void)
{
	const struct key_binding *kb;

	kb = keytab_find(KM_GLOBAL, 1, KEY_F(1), 0);
	CHECK(kb && kb->command && !strcmp(kb->command, "help"));
	kb = keytab_find(KM_GLOBAL, 1, KEY_F(6), 0);
	CHECK(kb && kb->command && !strcmp(kb->command, "restart"));
	kb = keytab_find(KM_GLOBAL, 0, CTRL('q'), 0);
	CHECK(kb && kb->command && !strcmp(kb->command, "quit"));
	/* Modifiers: Shift-Enter runs in a notebook, a plain Enter edits. */
	kb = keytab_find(KM_NB, 0, '\r', KEYMOD_SHIFT);
	CHECK(kb && kb->arg == NB_RUN_NEXT);
	CHECK(keytab_find(KM_NB, 0, '\r', 0) == NULL);
	kb = keytab_find(KM_NB_COMMAND, 0, '\r', 0);
	CHECK(kb && kb->arg == NB_EDIT);
	/* Ctrl-R searches the history in the console and in a notebook; it does not run. */
	CHECK(keytab_find(KM_GLOBAL, 0, CTRL('r'), 0) == NULL);
	CHECK(keytab_find(KM_CONSOLE, 0, CTRL('r'), 0) != NULL);
	kb = keytab_find(KM_NB, 0, CTRL('r'), 0);
	CHECK(kb && kb->fn != keytab_find(KM_NB, 1, KEY_F(5), 0)->fn);
	/* Undo and redo: Ctrl-Z, Ctrl-Y (Ctrl-Shift-Z, Ctrl-Alt-_); Ctrl-V pastes */
	kb = keytab_find(KM_EDITOR, 0, CTRL('z'), KEYMOD_SHIFT);
	CHECK(kb && kb->arg == keytab_find(KM_EDITOR, 0, CTRL('_'), KEYMOD_ALT)->arg);
	CHECK(kb->arg == keytab_find(KM_EDITOR, 0, CTRL('y'), 0)->arg);
	CHECK(kb->arg != keytab_find(KM_EDITOR, 0, CTRL('v'), 0)->arg);
	CHECK(kb->arg != keytab_find(KM_EDITOR, 0, CTRL('z'), 0)->arg);
	CHECK(keytab_find(KM_EDITOR, 0, CTRL('z'), 0)->arg ==
	      keytab_find(KM_EDITOR, 0, CTRL('_'), 0)->arg);
	/* Shift selects; Ctrl-Shift by words (both held), Ctrl alone moves a word. */
	kb = keytab_find(KM_EDITOR, 1, KEY_LEFT, KEYMOD_SHIFT | KEYMOD_CTRL);
	CHECK(kb && kb != keytab_find(KM_EDITOR, 1, KEY_LEFT, KEYMOD_SHIFT));
	CHECK(kb != keytab_find(KM_EDITOR, 1, KEY_LEFT, KEYMOD_CTRL));
	CHECK(keytab_find(KM_EDITOR, 1, KEY_SLEFT, 0)->arg ==
	      keytab_find(KM_EDITOR, 1, KEY_LEFT, KEYMOD_SHIFT)->arg);
	CHECK(keytab_find(KM_EDITOR, 1, KEY_LEFT, 0)->arg !=
	      keytab_find(KM_EDITOR, 1, KEY_LEFT, KEYMOD_SHIFT)->arg);
}

static const struct tap_test tests[] = {
	{ "keytab_check", test_keytab_check },
	{ "keytab_man_rows", test_man_rows },
	{ "keytab_commands", test_bound_commands },
};

int main(int argc, char **argv)
{
	return tap_main(argc, argv, tests, ARRAY_SIZE(tests));
}
