#include "record.h"

#include "msg.h"

void record_open(struct record *r, const struct cellbox_config *cfg, struct session *s)
{
	struct strbuf err = STRBUF_INIT;

	r->h = NULL;
	r->kernel = session_kernel(s)->name;
	if (!cfg->history_size || session_named(s))
		return;		/* a named session's host records it, once */
	r->h = history_open((size_t)cfg->history_size, cfg->history_days, &err);
	if (!r->h) {
		msg_error("warning: no history is recorded: %s", err.buf);
	} else {
		outputs_init(&r->out, session_channel_dir(s), OUTPUTS_COPY_PLOTS,
			     history_plots_dir(r->h), HISTORY_OUTPUT_LIMIT);
		history_set_plots_cap(r->h, cfg->history_plots_size);
		session_add_copies(s, 1);	/* the history's copy of each plot */
	}
	strbuf_release(&err);
}

void record_event(struct record *r, struct session *s, const struct session_event *ev)
{
	if (!r->h)
		return;
	r->out.channel_dir = session_channel_dir(s);
	outputs_event(&r->out, ev);
}

void record_cell(struct record *r, const char *code)
{
	cJSON *outs;

	if (!r->h)
		return;
	outs = outputs_finish(&r->out);
	record_append(r, code, &r->out, outs);
	cJSON_Delete(outs);
}

void record_share(struct record *r, struct outputs *o)
{
	if (r->h)
		outputs_share(o, history_plots_dir(r->h), HISTORY_OUTPUT_LIMIT);
}

/* A cell to append, while its outputs are lent in the history's shape. */
struct append {
	struct record *r;
	const char *code;
	const struct outputs *o;
	struct strbuf *err;
};

/* Append the cell with `outs`, its outputs in the history's shape. */
static int append(const cJSON *outs, void *data)
{
	const struct append *a = data;
	const struct outputs *o = a->o;
	struct history_cell c = { 0 };

	c.execution_count = o->execution_count;
	c.code = a->code;
	c.status = o->status[0] ? o->status : "aborted";
	c.reason = o->detail;
	c.duration = o->duration;
	c.outputs = outs;
	c.kernel = a->r->kernel;
	return history_append(a->r->h, &c, a->err);
}

void record_append(struct record *r, const char *code, struct outputs *o, cJSON *outputs)
{
	struct strbuf err = STRBUF_INIT;
	struct append a = { r, code, o, &err };

	if (!r->h)
		return;
	if (outputs_copy_shape(o, outputs, append, &a) < 0) {
		msg_error("warning: history recording stopped: %s", err.buf);
		record_close(r);
		if (o != &r->out)
			outputs_share(o, NULL, 0);	/* no more plots copied for it */
	}
	strbuf_release(&err);
}

void record_close(struct record *r)
{
	if (!r->h)
		return;
	outputs_release(&r->out);
	history_close(r->h);
	r->h = NULL;
}
