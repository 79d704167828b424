/* The REPL's terminal line: prompts, the pre-filled indent, readline's callback reading. */
#include "repl_line.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <readline/history.h>
#include <readline/readline.h>

#include "cli.h"

static char *line_result;
static int line_done, line_eof;
static const char *line_prefill;
static const char *closer_keys, *closer_indent;

int repl_line_prompt_width(int count)
{
	return snprintf(NULL, 0, "In [%d]: ", count);
}

char *repl_line_prompt(int count, int continuation)
{
	if (!continuation)
		return xasprintf("\001\x1b[32m\002In [\001\x1b[1m\002%d\001\x1b[0;32m\002]:"
				 "\001\x1b[0m\002 ", count);
	return xasprintf("%*s...: ", repl_line_prompt_width(count) - 5, "");
}

static void on_rl_line(char *line)
{
	line_result = line;
	line_eof = line == NULL;
	line_done = 1;
	rl_callback_handler_remove();
}

/* Pre-fill the line: the kernel's indent on a continuation line, or a %load's text. */
static int insert_prefill(void)
{
	if (line_prefill && *line_prefill)
		rl_insert_text(line_prefill);
	return 0;
}

int repl_line_waiting(void)
{
	struct pollfd pfd = { .fd = 0, .events = POLLIN };
	return poll(&pfd, 1, 10) > 0 && (pfd.revents & POLLIN);
}

/*
 * A closer typed after blanks only: one indent level off first. Not in a paste (more input
 * waiting at once): a pasted line keeps its indent as pasted.
 */
static int type_closer(int count, int key)
{
	struct pollfd pfd = { .fd = 0, .events = POLLIN };
	size_t unit = closer_indent ? strlen(closer_indent) : 0;

	if (closer_keys && strchr(closer_keys, key) && unit && rl_point > 0 &&
	    strspn(rl_line_buffer, " \t") >= (size_t)rl_point &&
	    !(poll(&pfd, 1, 0) > 0 && (pfd.revents & POLLIN))) {
		int from = rl_line_buffer[rl_point - 1] == '\t' ? rl_point - 1 :
			   rl_point - (int)(unit < (size_t)rl_point ? unit : (size_t)rl_point);
		rl_delete_text(from, rl_point);
		rl_point = from;
	}
	return rl_insert(count, key);
}

void repl_line_set_closers(const char *closers, const char *indent)
{
	closer_keys = closers;
	closer_indent = indent;
	for (const char *k = closers; k && *k; k++)
		rl_bind_key((unsigned char)*k, type_closer);
}

void repl_line_remember(const char *cell)
{
	char *one = xstrdup(cell);
	size_t n = strlen(one);

	while (n && (one[n - 1] == '\n' || one[n - 1] == ' '))
		one[--n] = '\0';
	if (n) {
		HIST_ENTRY *last = history_length ? history_get(history_base + history_length - 1)
						  : NULL;
		if (!last || strcmp(last->line, one))
			add_history(one);	/* the history store keeps it for next time */
	}
	free(one);
}

static int side_fd = -1;
static void (*side_fn)(void *);
static void *side_data;

void repl_line_set_side(int fd, void (*fn)(void *), void *data)
{
	side_fd = fd;
	side_fn = fn;
	side_data = data;
}

/* What the side descriptor has, printed above the line being typed. */
static void run_side(void)
{
	rl_clear_visible_line();
	fflush(stdout);
	side_fn(side_data);
	fflush(stdout);
	rl_forced_update_display();
}

int repl_line_read(const char *prompt, const char *prefill, char **out)
{
	line_done = line_eof = 0;
	line_result = NULL;
	line_prefill = prefill;
	rl_startup_hook = insert_prefill;
	rl_callback_handler_install(prompt, on_rl_line);
	while (!line_done) {
		struct pollfd pfd[2] = { { .fd = 0, .events = POLLIN },
					 { .fd = side_fd, .events = POLLIN } };
		int n = ppoll(pfd, side_fd >= 0 ? 2 : 1, NULL, cli_wait_mask());

		if (n < 0 && errno == EINTR && cli_sigterm) {
			rl_callback_handler_remove();
			rl_startup_hook = NULL;
			return REPL_LINE_EOF;
		}
		if (n < 0 && errno == EINTR && cli_sigint) {
			cli_sigint = 0;
			rl_free_line_state();
			rl_callback_sigcleanup();
			rl_callback_handler_remove();
			fputs("^C\n", stdout);
			fflush(stdout);
			rl_startup_hook = NULL;
			return REPL_LINE_INTERRUPTED;
		}
		if (n > 0 && side_fd >= 0 && pfd[1].revents)
			run_side();
		if (n > 0 && pfd[0].revents)
			rl_callback_read_char();
	}
	rl_startup_hook = NULL;
	*out = line_result;
	return line_eof ? REPL_LINE_EOF : REPL_LINE_READ;
}
