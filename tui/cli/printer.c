#include "printer.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "outputs.h"

void printer_init(struct printer *p, unsigned flags, const char *channel_dir,
		  const char *plots_dir)
{
	memset(p, 0, sizeof(*p));
	p->flags = flags;
	p->out = stdout;
	p->err = stderr;
	p->channel_dir = channel_dir;
	p->plots_dir = plots_dir;
	p->out_at_bol = 1;
	sanitize_init(&p->san_out, flags & PRINTER_COLOR ? SAN_KEEP_SGR : 0);
	sanitize_init(&p->san_err, flags & PRINTER_COLOR ? SAN_KEEP_SGR : 0);
	sanitize_init(&p->san_keep, 0);
	strbuf_init(&p->stdout_text, 0);
	strbuf_init(&p->stderr_text, 0);
	p->collect_max = PRINTER_COLLECT_MAX;
	strbuf_init(&p->clean, 0);
}

void printer_reset(struct printer *p)
{
	strbuf_reset(&p->stdout_text);
	strbuf_reset(&p->stderr_text);
	p->collect_cut = 0;
	p->stdout_bytes = p->stderr_bytes = 0;
	for (size_t i = 0; i < p->nplots; i++) {
		free(p->plots[i].path);
		free(p->plots[i].base64);
	}
	p->nplots = 0;
	cJSON_Delete(p->error);
	p->error = NULL;
	free((char *)p->done.detail);
	memset(&p->done, 0, sizeof(p->done));
	p->done_seen = 0;
	sanitize_reset(&p->san_out);
	sanitize_reset(&p->san_err);
	sanitize_reset(&p->san_keep);
}

void printer_release(struct printer *p)
{
	printer_reset(p);
	free(p->plots);
	strbuf_release(&p->stdout_text);
	strbuf_release(&p->stderr_text);
	strbuf_release(&p->clean);
	sanitize_release(&p->san_out);
	sanitize_release(&p->san_err);
	sanitize_release(&p->san_keep);
}

/* Write kernel text to one of the streams, sanitised. */
static void emit(struct printer *p, int to_err, const char *text, size_t len)
{
	struct strbuf *clean = &p->clean;
	FILE *f = to_err ? p->err : p->out;
	FILE *copy = to_err ? p->stderr_copy : p->stdout_copy;

	if (copy)
		fwrite(text, 1, len, copy);
	*(to_err ? &p->stderr_bytes : &p->stdout_bytes) += len;
	if (p->flags & PRINTER_COLLECT) {
		struct strbuf *kept = to_err ? &p->stderr_text : &p->stdout_text;
		size_t room = kept->len < p->collect_max ? p->collect_max - kept->len : 0;

		const char *keep = text;
		size_t n = len;

		if (to_err) {
			/* Tracebacks come coloured: JSON is for programs, as MCP's (no SGR). */
			strbuf_reset(&p->clean);
			sanitize_feed(&p->san_keep, text, len, &p->clean);
			keep = p->clean.buf;
			n = p->clean.len;
		}
		if (n > room) {
			/* Cut at a character boundary: the JSON is text. */
			while (room && ((unsigned char)keep[room] & 0xc0) == 0x80)
				room--;
			p->collect_cut = 1;
		}
		strbuf_add(kept, keep, n > room ? room : n);
	}
	if (p->flags & PRINTER_QUIET)
		return;
	strbuf_reset(clean);
	sanitize_feed(to_err ? &p->san_err : &p->san_out, text, len, clean);
	if (clean->len) {
		fwrite(clean->buf, 1, clean->len, f);
		if (!to_err)
			p->out_at_bol = clean->buf[clean->len - 1] == '\n';
	}
	fflush(f);
}

/* Write text of our own (prompts, notes) to stdout. */
static void emit_own(struct printer *p, const char *text)
{
	if (p->flags & PRINTER_QUIET)
		return;
	fputs(text, p->out);
	if (*text)
		p->out_at_bol = text[strlen(text) - 1] == '\n';
}

/* Start our own output on a fresh line. */
static void fresh_line(struct printer *p)
{
	if (!p->out_at_bol)
		emit_own(p, "\n");
}

/* Print text as stdout output ending with a newline. */
static void emit_line(struct printer *p, const char *text)
{
	size_t len = strlen(text);

	emit(p, 0, text, len);
	if (!len || text[len - 1] != '\n')
		emit(p, 0, "\n", 1);
}

/* Keep a plot or artifact for printer_json(). */
static void collect_plot(struct printer *p, struct printer_plot *pl)
{
	if (!(p->flags & PRINTER_COLLECT)) {
		free(pl->path);
		free(pl->base64);
		return;
	}
	if (p->nplots == p->plots_alloc) {
		p->plots_alloc = p->plots_alloc ? 2 * p->plots_alloc : 4;
		p->plots = xrealloc(p->plots, p->plots_alloc * sizeof(*p->plots));
	}
	p->plots[p->nplots++] = *pl;
}

/*
 * Describe a plot or artifact file from an event and copy it to plots_dir when asked. The
 * session checked the kernel's file once and hands its bytes on (event.h): they are written
 * or kept from there, the file is not read again. -1 when the copy cannot be written.
 */
static int take_file(struct printer *p, const struct session_plot *desc, const char *what,
		     struct printer_plot *pl)
{
	const char *fmt = desc->format;
	struct strbuf err = STRBUF_INIT;
	int rc = 0;

	memset(pl, 0, sizeof(*pl));
	pl->index = desc->index;
	pl->width = desc->width;
	pl->height = desc->height;
	snprintf(pl->format, sizeof(pl->format), "%s", fmt && strlen(fmt) < 8 ? fmt : "png");
	strbuf_init(&err, 0);
	if (p->plots_dir) {
		size_t dir = strlen(p->plots_dir);
		char *dst;

		while (dir > 1 && p->plots_dir[dir - 1] == '/')
			dir--;		/* --plots out/: out/plot-1.png, not out//plot-1.png */
		dst = xasprintf("%.*s%splot-%d.%s", (int)dir, p->plots_dir,
				dir && p->plots_dir[dir - 1] == '/' ? "" : "/", pl->index, desc->ext);
		if (outputs_save_file(desc->data, desc->len, dst, &err) < 0) {
			free(dst);
			rc = -1;
		} else {
			pl->path = dst;
		}
	} else {
		pl->path = xasprintf("%s/%s", p->channel_dir, desc->path);
	}
	if (rc < 0) {
		struct strbuf clean = STRBUF_INIT;	/* the reason may name the kernel's file */
		fprintf(p->err, "cellbox: %s %d not shown: %s\n", what, pl->index,
			sanitize_cstr(err.buf, SAN_NO_CR, &clean));
		strbuf_release(&clean);
	} else if (p->flags & PRINTER_COLLECT) {
		struct strbuf b64 = STRBUF_INIT;
		base64_encode(desc->data, desc->len, &b64);
		pl->base64 = strbuf_detach(&b64, NULL);
	}
	strbuf_release(&err);
	return rc;
}

/* An artifact (a file the cell saved): its line, and kept for printer_json(). */
static void on_artifact(struct printer *p, const struct session_ev_artifact *ev)
{
	const char *name = ev->name;
	struct printer_plot pl;
	struct strbuf line = STRBUF_INIT, clean = STRBUF_INIT;
	struct sanitizer san;

	if (take_file(p, ev->file, "artifact", &pl) < 0)
		return;
	strbuf_init(&line, 0);
	strbuf_init(&clean, 0);
	strbuf_addf(&line, "[artifact %d: ", pl.index);
	if (name)
		strbuf_addf(&line, "%s, ", name);
	for (const char *f = pl.format; *f; f++)
		strbuf_addch(&line, *f >= 'a' && *f <= 'z' ? *f - 32 : *f);
	if (pl.width && pl.height)
		strbuf_addf(&line, " %dx%d", pl.width, pl.height);
	strbuf_addf(&line, ", %s %s]\n", p->plots_dir ? "saved to" : "at", pl.path);
	/* The name comes from the kernel: no escapes from it reach the terminal. */
	sanitize_init(&san, 0);
	sanitize_feed(&san, line.buf, line.len, &clean);
	sanitize_release(&san);
	fresh_line(p);
	emit_own(p, clean.buf);
	fflush(p->out);
	strbuf_release(&line);
	strbuf_release(&clean);
	collect_plot(p, &pl);
}

/* Record a plot, copy it to plots_dir when asked, and print its line. */
static void on_plot(struct printer *p, const struct session_plot *plot)
{
	struct printer_plot pl;
	struct strbuf why = STRBUF_INIT;
	char *line;
	int drawn = 1;

	if (take_file(p, plot, "plot", &pl) < 0)
		return;
	line = xasprintf("[plot %d: %dx%d PNG, %s %s]\n", pl.index, pl.width, pl.height,
			 p->plots_dir ? "saved to" : "at", pl.path);
	strbuf_reset(&p->clean);
	sanitize_str(line, strlen(line), SAN_NO_CR, &p->clean);	/* the path names a kernel file */
	free(line);
	line = strbuf_detach(&p->clean, NULL);
	fresh_line(p);
	/* The bytes as checked, not what is at the path now. */
	if (!(p->flags & PRINTER_QUIET) && p->plot_hook &&
	    (drawn = p->plot_hook(p->plot_data, plot->data, plot->len, pl.path, p->out, &why)) ==
		    0) {
		p->out_at_bol = 1;
		if (!p->plots_dir || (p->flags & PRINTER_PLOTS_KEPT))
			*line = '\0';	/* drawn: the line would only repeat it */
	}
	if (drawn < 0) {	/* a PNG the decoder refused or died on: this plot's text line */
		fflush(p->out);
		fprintf(p->err, "cellbox: plot %d could not be decoded: %s\n", pl.index, why.buf);
		fflush(p->err);
	}
	strbuf_release(&why);
	emit_own(p, line);
	fflush(p->out);
	free(line);
	collect_plot(p, &pl);
}

/* Print a traceback (or "ename: evalue" when it has none) to stderr. */
static void on_error(struct printer *p, const struct session_ev_error *ev)
{
	const char *ename = ev->ename, *evalue = ev->evalue;
	cJSON *tb;

	fflush(p->out);
	if (!p->out_at_bol && !(p->flags & PRINTER_QUIET)) {
		fputc('\n', p->out);
		p->out_at_bol = 1;
	}
	for (size_t i = 0; i < ev->ntraceback; i++) {
		emit(p, 1, ev->traceback[i], strlen(ev->traceback[i]));
		emit(p, 1, "\n", 1);
	}
	if (!ev->ntraceback) {
		char *msg = xasprintf("%s: %s\n", ename ? ename : "Error", evalue ? evalue : "");
		emit(p, 1, msg, strlen(msg));
		free(msg);
	}
	cJSON_Delete(p->error);
	/* Kept for the JSON as MCP keeps it: sanitised, the colours of a traceback dropped. */
	p->error = cJSON_CreateObject();
	if (ename)
		cJSON_AddStringToObject(p->error, "ename", sanitize_cstr(ename, 0, &p->clean));
	if (evalue)
		cJSON_AddStringToObject(p->error, "evalue", sanitize_cstr(evalue, 0, &p->clean));
	tb = cJSON_AddArrayToObject(p->error, "traceback");
	for (size_t i = 0; i < ev->ntraceback; i++)
		cJSON_AddItemToArray(tb, cJSON_CreateString(sanitize_cstr(ev->traceback[i], 0,
									  &p->clean)));
	if (ev->violations)	/* a cell the security policy blocked */
		cJSON_AddItemToObject(p->error, "violations", cJSON_Duplicate(ev->violations, 1));
}

void printer_event(struct printer *p, const struct session_event *ev)
{
	switch (ev->type) {
	case SESSION_EV_STREAM:
		emit(p, ev->stream.stream == SESSION_STDERR, ev->stream.text, ev->stream.len);
		break;
	case SESSION_EV_RESULT: {
		const char *text = ev->result.text;
		if (!text)
			break;
		fresh_line(p);
		if (p->flags & PRINTER_PROMPTS) {
			char *prompt = xasprintf("%sOut[%d]:%s%s",
						 p->flags & PRINTER_COLOR ? "\x1b[31m" : "",
						 ev->result.execution_count >= 0 ?
						 ev->result.execution_count : 0,
						 p->flags & PRINTER_COLOR ? "\x1b[0m" : "",
						 strchr(text, '\n') ? "\n" : " ");
			emit_own(p, prompt);
			free(prompt);
		}
		emit_line(p, text);
		if (ev->result.plot)
			on_plot(p, ev->result.plot);
		break;
	}
	case SESSION_EV_ARTIFACT:
		on_artifact(p, &ev->artifact);
		break;
	case SESSION_EV_DISPLAY:
		if (ev->display.plot) {
			on_plot(p, ev->display.plot);
		} else if (ev->display.text) {
			fresh_line(p);
			emit_line(p, ev->display.text);
		} else {
			fresh_line(p);
			emit_own(p, "[display without a text form]\n");
		}
		break;
	case SESSION_EV_ERROR:
		on_error(p, &ev->error);
		break;
	case SESSION_EV_DONE:
		if (p->flags & PRINTER_COLLECT)	/* a character cut short: U+FFFD */
			sanitize_finish(&p->san_keep, &p->stderr_text);
		free((char *)p->done.detail);
		p->done = ev->done;
		p->done.detail = ev->done.detail ? xstrdup(ev->done.detail) : NULL;
		p->done_seen = 1;
		break;
	default:
		break;
	}
}

cJSON *printer_json(const struct printer *p, int exit_code)
{
	cJSON *o = cJSON_CreateObject(), *plots = cJSON_CreateArray();
	const struct session_ev_done *d = p->done_seen ? &p->done : NULL;

	cJSON_AddNumberToObject(o, "exit_code", exit_code);
	cJSON_AddStringToObject(o, "stdout", p->stdout_text.buf);
	cJSON_AddStringToObject(o, "stderr", p->stderr_text.buf);
	for (size_t i = 0; i < p->nplots; i++) {
		const struct printer_plot *pl = &p->plots[i];
		cJSON *item = cJSON_CreateObject();

		cJSON_AddNumberToObject(item, "index", pl->index);
		cJSON_AddStringToObject(item, "format", pl->format);
		if (p->plots_dir)
			cJSON_AddStringToObject(item, "path", pl->path);
		else
			cJSON_AddNullToObject(item, "path");	/* the channel goes with the run */
		cJSON_AddNumberToObject(item, "width", pl->width);
		cJSON_AddNumberToObject(item, "height", pl->height);
		cJSON_AddStringToObject(item, "content_base64", pl->base64 ? pl->base64 : "");
		cJSON_AddItemToArray(plots, item);
	}
	cJSON_AddItemToObject(o, "plots", plots);
	cJSON_AddStringToObject(o, "status",
				event_status_name(d ? d->status : SESSION_STATUS_ABORTED));
	if (d && d->execution_count >= 0)
		cJSON_AddNumberToObject(o, "execution_count", d->execution_count);
	else
		cJSON_AddNullToObject(o, "execution_count");
	cJSON_AddNumberToObject(o, "duration", d ? d->duration : 0);
	/* What the cell used, measured by the host (usage.h); members not measured are null. */
	{
		struct usage none;

		usage_clear(&none);
		cJSON_AddItemToObject(o, "usage", usage_to_json(d ? &d->usage : &none));
	}
	if (p->error)
		cJSON_AddItemToObject(o, "error", cJSON_Duplicate(p->error, 1));
	else
		cJSON_AddNullToObject(o, "error");
	/* As MCP's ExecutionResult: why it ended, always; the words when the session stopped it. */
	cJSON_AddStringToObject(o, "outcome", reason_name(d ? d->reason : REASON_CLOSED));
	if (d && d->detail)
		cJSON_AddStringToObject(o, "reason", d->detail);
	else
		cJSON_AddNullToObject(o, "reason");
	if (p->collect_cut) {
		/* What was printed in all: the text above is its first collect_max bytes. */
		cJSON_AddBoolToObject(o, "truncated", 1);
		cJSON_AddNumberToObject(o, "stdout_bytes", (double)p->stdout_bytes);
		cJSON_AddNumberToObject(o, "stderr_bytes", (double)p->stderr_bytes);
	}
	return o;
}
