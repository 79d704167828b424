#include "record.h"

#include "msg.h"

void record_open(struct record *r, const struct cellbox_config *cfg, struct session *s)
{
	struct strbuf err = STRBUF_INIT;

	r->h = NULL;
	r->kernel = session_kernel(s)->name;
	if (!cfg->history_size)
		return;
	r->h = history_open((size_t)cfg->history_size, cfg->history_days, &err);
	if (!r->h) {
		msg_error("warning: no history is recorded: %s", err.buf);
	} else {
		outputs_init(&r->out, session_channel_dir(s), OUTPUTS_COPY_PLOTS,
			     history_plots_dir(r->h), HISTORY_OUTPUT_LIMIT);
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
	struct strbuf err = STRBUF_INIT;
	struct history_cell c = { 0 };
	cJSON *outs;

	if (!r->h)
		return;
	outs = outputs_finish(&r->out);
	c.execution_count = r->out.execution_count;
	c.code = code;
	c.status = r->out.status[0] ? r->out.status : "aborted";
	c.reason = r->out.detail;
	c.duration = r->out.duration;
	c.outputs = outs;
	c.kernel = r->kernel;
	if (history_append(r->h, &c, &err) < 0) {
		msg_error("warning: history recording stopped: %s", err.buf);
		record_close(r);
	}
	cJSON_Delete(outs);
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
