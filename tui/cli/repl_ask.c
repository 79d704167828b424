/*
 * What the REPL asks its kernel and waits for (repl_ask.h): whether a cell is complete, and
 * the completions at readline's cursor.
 */
#include "cli.h"
#include "repl_ask.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <readline/readline.h>

#include "sanitize.h"

/* What a synchronous request's reply said, copied out of the event. */
struct reply_ctx {
	int seen;
	char *status, *indent;		/* is_complete */
	char **matches;			/* complete */
	size_t nmatches;
	int cursor_start;
};

static void on_reply(struct session *s, const struct session_event *ev, void *data)
{
	struct reply_ctx *ctx = data;

	(void)s;
	if (ev->type == SESSION_EV_DONE && ev->done.reason == REASON_TIMEOUT_KILLED)
		msg_error("the kernel did not answer within %g s and ignored the interrupt: "
			  "it was killed and restarted", SESSION_REQUEST_TIMEOUT);
	if (ev->type != SESSION_EV_REPLY || ctx->seen)
		return;
	ctx->seen = 1;
	ctx->status = ev->reply.status ? xstrdup(ev->reply.status) : NULL;
	ctx->indent = ev->reply.indent ? xstrdup(ev->reply.indent) : NULL;
	ctx->matches = xcalloc(ev->reply.nmatches + 1, sizeof(*ctx->matches));
	for (size_t i = 0; i < ev->reply.nmatches; i++)
		ctx->matches[i] = xstrdup(ev->reply.matches[i]);
	ctx->nmatches = ev->reply.nmatches;
	ctx->cursor_start = ev->reply.cursor_start;
}

/* Forget a reply. */
static void reply_release(struct reply_ctx *ctx)
{
	free(ctx->status);
	free(ctx->indent);
	for (size_t i = 0; i < ctx->nmatches; i++)
		free(ctx->matches[i]);
	free(ctx->matches);
	memset(ctx, 0, sizeof(*ctx));
}

/* Send a request and wait for its reply (ctx->seen is 0 when none came). */
static void ask(struct session *s, const char *kind, const cJSON *params, struct reply_ctx *ctx)
{
	struct strbuf err = STRBUF_INIT;
	unsigned long id;

	memset(ctx, 0, sizeof(*ctx));
	id = session_request(s, kind, params, on_reply, ctx, &err);
	if (id)
		cli_wait(s, id);
	strbuf_release(&err);
}

/*
 * Asked without the newline of the cell's last line: with one, IPython takes an indented
 * block as ended, and `if x:` / `    a = 1` would run before its `else:` came.
 */
char *repl_ask_is_complete(struct session *s, const char *code, char **indent, int whole)
{
	cJSON *params = cJSON_CreateObject();
	struct reply_ctx reply;
	size_t len = strlen(code);
	char *status, *typed;

	while (!whole && len && code[len - 1] == '\n')
		len--;
	typed = xstrndup(code, len);
	cJSON_AddStringToObject(params, "code", typed);
	free(typed);
	ask(s, "is_complete", params, &reply);
	cJSON_Delete(params);
	status = xstrdup(reply.status ? reply.status : "complete");
	/* The line is pre-filled with it: only blanks, or nothing. */
	if (indent)
		*indent = xstrdup(reply.indent && strlen(reply.indent) <= 256 &&
				  !reply.indent[strspn(reply.indent, " \t")] ? reply.indent : "");
	reply_release(&reply);
	return status;
}

/* Byte offset of code point `cp` in `s` (clamped to the end). */
static size_t byte_of_codepoint(const char *s, long cp)
{
	size_t i = 0;

	while (s[i] && cp > 0) {
		i++;
		while ((s[i] & 0xc0) == 0x80)
			i++;
		cp--;
	}
	return i;
}

/* Number of code points in s[0..n). */
static long codepoints(const char *s, size_t n)
{
	long cp = 0;

	for (size_t i = 0; i < n; i++)
		if ((s[i] & 0xc0) != 0x80)
			cp++;
	return cp;
}

static struct session *completion_session;
static const struct strbuf *completion_cell;	/* the lines of the cell before this one */
static char **completion_list;
static size_t completion_count, completion_next;

/* readline's generator over the matches fetched in complete(). */
static char *completion_generator(const char *text, int state)
{
	(void)text;
	if (!state)
		completion_next = 0;
	if (completion_next < completion_count)
		return xstrdup(completion_list[completion_next++]);
	return NULL;
}

/* Ask the kernel for completions at the cursor. */
static char **complete(const char *text, int start, int end)
{
	struct strbuf code = STRBUF_INIT;
	cJSON *params = cJSON_CreateObject();
	struct reply_ctx reply;
	size_t prefix_len, kstart;

	(void)text, (void)end;
	rl_attempted_completion_over = 1;
	for (size_t k = 0; k < completion_count; k++)
		free(completion_list[k]);
	completion_count = 0;
	if (completion_cell)
		strbuf_add(&code, completion_cell->buf, completion_cell->len);
	prefix_len = code.len;
	strbuf_add(&code, rl_line_buffer, (size_t)rl_point);
	cJSON_AddStringToObject(params, "code", code.buf);
	cJSON_AddNumberToObject(params, "cursor_pos", (double)codepoints(code.buf, code.len));
	ask(completion_session, "complete", params, &reply);
	cJSON_Delete(params);
	/* Where the kernel's replacement starts, as a byte offset in this line. */
	kstart = byte_of_codepoint(code.buf, reply.cursor_start > 0 ? reply.cursor_start : 0);
	kstart = kstart > prefix_len ? kstart - prefix_len : 0;
	completion_list = xrealloc(completion_list, (reply.nmatches + 1) * sizeof(char *));
	for (size_t k = 0; k < reply.nmatches; k++) {
		const char *s = reply.matches[k];
		struct strbuf one = STRBUF_INIT;

		if (s[strcspn(s, "\n\t")] || !sanitize_is_clean(s, strlen(s), SAN_NO_CR))
			continue;	/* the kernel's: shown and inserted only as plain text */
		/* readline replaces line[start..]; the kernel replaces line[kstart..]. */
		if (kstart < (size_t)start) {
			size_t skip = (size_t)start - kstart;
			if (strncmp(s, rl_line_buffer + kstart, skip))
				continue;
			strbuf_addstr(&one, s + skip);
		} else {
			strbuf_add(&one, rl_line_buffer + start, kstart - (size_t)start);
			strbuf_addstr(&one, s);
		}
		completion_list[completion_count++] = strbuf_detach(&one, NULL);
	}
	reply_release(&reply);
	strbuf_release(&code);
	rl_completion_append_character = '\0';
	if (!completion_count)
		return NULL;
	return rl_completion_matches(text, completion_generator);
}

void repl_ask_completion(struct session *s, const struct strbuf *cell)
{
	completion_session = s;
	completion_cell = cell;
	rl_attempted_completion_function = s ? complete : NULL;
	if (s)
		return;
	for (size_t k = 0; k < completion_count; k++)
		free(completion_list[k]);
	free(completion_list);
	completion_list = NULL;
	completion_count = 0;
}
