/* What a named session's host keeps of its cells (named_keep.h). */
#include "named_keep.h"

#include <stdlib.h>
#include <string.h>

#include "util.h"

void named_keep_init(struct named_keep *k)
{
	memset(k, 0, sizeof(*k));
	k->rerun = cJSON_CreateArray();
}

char *named_keep_ev_line(unsigned long id, const struct session_event *ev, size_t *len)
{
	cJSON *m = cJSON_CreateObject();
	char *text;
	size_t n;

	cJSON_AddStringToObject(m, "t", "ev");
	cJSON_AddNumberToObject(m, "id", (double)id);
	cJSON_AddItemToObject(m, "ev", event_to_json(ev));
	text = cJSON_PrintUnformatted(m);
	cJSON_Delete(m);
	n = strlen(text);
	text = xrealloc(text, n + 2);
	text[n++] = '\n';
	text[n] = 0;
	*len = n;
	return text;
}

void named_keep_take(struct named_keep *k, struct session *s)
{
	struct named_keep *from = session_keep_take(s);

	if (!from)
		return;
	named_keep_release(k);
	*k = *from;
	free(from);
}

void named_keep_release(struct named_keep *k)
{
	while (k->cells) {
		struct hcell *c = k->cells;

		k->cells = c->next;
		named_keep_cell_free(c);
	}
	cJSON_Delete(k->rerun);
	memset(k, 0, sizeof(*k));
}

void named_keep_add(struct named_keep *k, struct hcell *c)
{
	if (k->last)
		k->last->next = c;
	else
		k->cells = c;
	k->last = c;
	k->ncells++;
	k->log_bytes += strlen(c->code);
}

void named_keep_restart(struct named_keep *k)
{
	cJSON_Delete(k->rerun);
	k->rerun = cJSON_CreateArray();
	k->rerun_cells = 0;
	k->rerun_bytes = 0;
	k->rerun_over = 0;
}

void named_keep_cell_free(struct hcell *c)
{
	free(c->code);
	strbuf_release(&c->log);
	free(c);
}

void named_keep_trim(struct named_keep *k)
{
	while (k->cells && k->cells->done &&
	       (k->ncells > NAMED_LOG_CELLS || k->log_bytes > NAMED_LOG_BYTES)) {
		struct hcell *c = k->cells;

		k->cells = c->next;
		if (!k->cells)
			k->last = NULL;
		k->ncells--;
		k->log_bytes -= c->log.len + strlen(c->code);
		named_keep_cell_free(c);
	}
}

void named_keep_line(struct named_keep *k, struct hcell *c, const char *line, size_t len,
		     int done)
{
	static const char cut[] = "cellbox: the rest of this cell's output is not kept for "
				  "front ends that attach later\n";

	if (!c->cut && !done && c->log.len + len > NAMED_CELL_LOG_MAX) {
		cJSON *m = cJSON_CreateObject(), *ev = cJSON_CreateObject();
		char *text;

		c->cut = 1;
		cJSON_AddStringToObject(m, "t", "ev");
		cJSON_AddNumberToObject(m, "id", (double)c->id);
		cJSON_AddStringToObject(ev, "type", "stream");
		cJSON_AddStringToObject(ev, "name", "stderr");
		cJSON_AddStringToObject(ev, "text", cut);
		cJSON_AddItemToObject(m, "ev", ev);
		text = cJSON_PrintUnformatted(m);
		strbuf_addstr(&c->log, text);
		strbuf_addch(&c->log, '\n');
		k->log_bytes += strlen(text) + 1;
		cJSON_free(text);
		cJSON_Delete(m);
	}
	if (c->cut && !done)
		return;
	strbuf_add(&c->log, line, len);
	k->log_bytes += len;
}

void named_keep_rerun(struct named_keep *k, const char *code, const struct session_event *ev)
{
	cJSON *o;

	if (k->rerun_over)
		return;
	k->rerun_bytes += strlen(code);
	if (k->rerun_cells >= NAMED_RERUN_CELLS ||
	    k->rerun_bytes > NAMED_RERUN_BYTES) {
		k->rerun_over = 1;
		return;
	}
	o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "code", code);
	cJSON_AddStringToObject(o, "status", event_status_name(ev->done.status));
	cJSON_AddItemToArray(k->rerun, o);
	k->rerun_cells++;
}
