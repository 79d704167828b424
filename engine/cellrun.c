/* Helper cells: a silent, trusted cell of the host's own, waited for, its error kept. */
#include "cellrun.h"

struct cellrun {
	struct strbuf error;
};

/* Keep the error of the helper cell. */
static void on_cellrun_event(struct session *s, const struct session_event *ev, void *data)
{
	struct cellrun *c = data;

	(void)s;
	if (ev->type == SESSION_EV_ERROR && !c->error.len)
		strbuf_addf(&c->error, "%s%s%s", ev->error.ename ? ev->error.ename : "",
			    ev->error.ename && ev->error.evalue ? ": " : "",
			    ev->error.evalue ? ev->error.evalue :
			    ev->error.ename ? "" : "the helper cell failed");
}

int cellrun_silent(struct session *s, const char *code, struct strbuf *err)
{
	struct cellrun c = { STRBUF_INIT };
	unsigned long id = session_execute(s, code, SESSION_EXEC_SILENT | SESSION_EXEC_TRUSTED, 0,
					   on_cellrun_event, &c, err);
	int rc = -1;

	if (!id)
		goto out;
	while (session_wait(s, id) < 0)
		;
	if (c.error.len) {
		strbuf_addstr(err, c.error.buf);
		goto out;
	}
	rc = 0;
out:
	strbuf_release(&c.error);
	return rc;
}
