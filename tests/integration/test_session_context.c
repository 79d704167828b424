/*
 * Contexts (engine/context.h context_open()) on the real runner: a context shares its
 * session's files and not its variables; a named kernel there is not, a context's context and
 * a ninth context are refused; a parent closed first lets its contexts run on and close on
 * their own; a context's death takes only itself. `test_session_context NAME` runs one.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "context.h"
#include "session.h"
#include "util.h"
#include "../harness.h"

#ifndef TEST_PYTHON
#define TEST_PYTHON "/usr/bin/python3"
#endif

/* What a cell printed, and how it ended. */
struct cell_out {
	struct strbuf out;
	enum reason reason;
};

static void on_event(struct session *s, const struct session_event *ev, void *data)
{
	struct cell_out *c = data;

	(void)s;
	if (ev->type == SESSION_EV_STREAM)
		strbuf_add(&c->out, ev->stream.text, ev->stream.len);
	else if (ev->type == SESSION_EV_ERROR)
		strbuf_addf(&c->out, "<%s>", ev->error.ename);
	else if (ev->type == SESSION_EV_DONE)
		c->reason = ev->done.reason;
}

/* Run `code` in `s`; what it printed (caller frees) and why it ended. */
static char *cell(struct session *s, const char *code, enum reason *reason)
{
	struct cell_out c = { STRBUF_INIT, REASON_OK };
	struct strbuf err = STRBUF_INIT;
	unsigned long id = session_execute(s, code, 0, 30, on_event, &c, &err);

	CHECK(id != 0);
	while (id && session_wait(s, id) < 0)
		;
	if (reason)
		*reason = c.reason;
	strbuf_release(&err);
	return strbuf_detach(&c.out, NULL);
}

static struct session *open_local(char *dir)
{
	struct session_opts so = { 0 };

	so.python = TEST_PYTHON;
	so.cwd = dir;
	return open_checked(&so);
}

/* Two kernels, one directory: a file crosses, a variable does not. */
static void test_share_file_not_variable(void)
{
	char dir[] = "/tmp/cellbox-ctx-XXXXXX";
	struct strbuf err = STRBUF_INIT;
	struct session *s, *c;
	char *out;

	CHECK(mkdtemp(dir) != NULL);
	s = open_local(dir);
	if (!s)
		return;
	c = context_open(s, NULL, NULL, NULL, &err);
	CHECK(c != NULL);
	if (!c) {
		tap_note(err.buf);
		goto out;
	}
	CHECK(context_count(s) == 1);
	free(cell(s, "x = 1; open('f.txt', 'w').write('shared')", NULL));
	out = cell(c, "print(open('f.txt').read()); print(x)", NULL);
	CHECK_STR(out, "shared\n<NameError>");
	free(out);
	free(cell(c, "x = 2", NULL));
	out = cell(s, "print(x)", NULL);
	CHECK_STR(out, "1\n");
	free(out);
	/* a kernel there is not; a context's context */
	CHECK(context_open(s, "cobol", NULL, NULL, &err) == NULL);
	CHECK(strstr(err.buf, "no kernel 'cobol'") != NULL);
	strbuf_reset(&err);
	CHECK(context_open(c, NULL, NULL, NULL, &err) == NULL);
	CHECK(strstr(err.buf, "no contexts of its own") != NULL);
	session_close(c);
	CHECK(context_count(s) == 0);
out:
	session_close(s);
	strbuf_release(&err);
	{
		char *f = xasprintf("%s/f.txt", dir);

		unlink(f);
		free(f);
	}
	rmdir(dir);
}

/* At most SESSION_CONTEXTS_MAX; the parent closed first; a context that dies. */
static void test_cap_parent_first_death(void)
{
	struct session *ctx[SESSION_CONTEXTS_MAX] = { 0 };
	struct strbuf err = STRBUF_INIT;
	char dir[] = "/tmp/cellbox-ctx-XXXXXX";
	enum reason why;
	struct session *s;
	char *out;

	CHECK(mkdtemp(dir) != NULL);
	s = open_local(dir);
	if (!s)
		return;
	for (int i = 0; i < SESSION_CONTEXTS_MAX; i++) {
		ctx[i] = context_open(s, NULL, NULL, NULL, &err);
		CHECK(ctx[i] != NULL);
		if (!ctx[i])
			tap_note(err.buf);
	}
	CHECK(context_count(s) == SESSION_CONTEXTS_MAX);
	CHECK(context_open(s, NULL, NULL, NULL, &err) == NULL);
	CHECK(strstr(err.buf, "too many contexts") != NULL);
	/* a context that dies takes only itself */
	free(cell(ctx[0], "import os; os._exit(3)", &why));
	CHECK(why == REASON_KERNEL_DIED);
	out = cell(s, "print('alive')", NULL);
	CHECK_STR(out, "alive\n");
	free(out);
	session_close(ctx[0]);
	strbuf_reset(&err);
	ctx[0] = context_open(s, NULL, NULL, NULL, &err);	/* its place is free */
	CHECK(ctx[0] != NULL);
	if (!ctx[0])
		tap_note(err.buf);
	/* the parent first: the contexts run on, then close on their own */
	session_close(s);
	out = cell(ctx[1], "print('on')", NULL);
	CHECK_STR(out, "on\n");
	free(out);
	for (int i = 0; i < SESSION_CONTEXTS_MAX; i++)
		session_close(ctx[i]);
	strbuf_release(&err);
	rmdir(dir);
}

static const struct tap_test tests[] = {
	{ "share_file_not_variable", test_share_file_not_variable },
	{ "cap_parent_first_death", test_cap_parent_first_death },
};

int main(int argc, char **argv)
{
	return tap_main(argc, argv, tests, ARRAY_SIZE(tests));
}
