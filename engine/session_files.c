/*
 * The requests' files, off the round trip: the next request's results file made while the
 * kernel runs the one before, and a finished request's files removed once the next command is
 * out (or the host has nothing else to do). Each is two or three file-system calls, 5-10 us
 * each on a tmpfs here, that used to sit between a done and the next command.
 */
#include "session.h"
#include "session_int.h"

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "request.h"

/* Finished requests kept before their files are removed at once (a queue ended together). */
#define SPENT_MAX 16

/* Remove a request's files from the channel and free it. */
static void remove_request(struct session *s, struct request *r)
{
	char *rel = xasprintf("commands/%s.json", r->name);

	channel_unlink(&s->ch, rel);
	free(rel);
	/* Answers to input requests: the last two at most are there (session_input_reply). */
	for (int k = r->inputs > 2 ? r->inputs - 1 : 1; k <= r->inputs; k++) {
		rel = xasprintf("commands/%s.%d.input", r->name, k);
		channel_unlink(&s->ch, rel);
		free(rel);
	}
	channel_results_remove(&s->ch, r->name);
	request_free(r);
}

void session_spend(struct session *s, struct request *r)
{
	r->next = s->spent;
	s->spent = r;
	if (++s->n_spent >= SPENT_MAX)
		session_tidy(s);
}

void session_tidy(struct session *s)
{
	while (s->spent) {
		struct request *r = s->spent;

		s->spent = r->next;
		remove_request(s, r);
	}
	s->n_spent = 0;
}

void session_make_spare(struct session *s)
{
	struct strbuf err = STRBUF_INIT;
	struct request *r;

	if (s->spare || s->state == SESSION_DEAD || s->state == SESSION_CLOSED || !s->ch.dir)
		return;
	r = request_new(s->next_id, 0, 0, NULL, NULL);
	if (request_open(r, &s->ch, &err) < 0) {
		request_free(r);	/* the request that needs it makes it, and says why not */
	} else {
		/* the page the kernel's first events go to (the runner's write would allocate it) */
		fallocate(r->rd.fd, FALLOC_FL_KEEP_SIZE, 0, 4096);
		s->spare = r;
	}
	if (s->next_cmd.fd < 0)
		channel_command_begin(&s->ch, &s->next_cmd, &err);
	strbuf_release(&err);
}

int session_write_command(struct session *s, const char *rel, const char *text,
			  struct strbuf *err)
{
	if (s->next_cmd.fd < 0 || strncmp(rel, "commands/", 9))
		return channel_write(&s->ch, rel, text, strlen(text), err);
	return channel_command_end(&s->ch, &s->next_cmd, rel + 9, text, strlen(text), err);
}

static void drop_spare_request(struct session *s)
{
	if (!s->spare)
		return;
	remove_request(s, s->spare);
	s->spare = NULL;
}

void session_drop_spare(struct session *s)
{
	if (s->next_cmd.fd >= 0)
		channel_command_end(&s->ch, &s->next_cmd, NULL, NULL, 0, NULL);
	drop_spare_request(s);
}

struct request *session_new_request(struct session *s, int is_execute, double timeout,
				    session_event_fn fn, void *data, int blocked,
				    struct strbuf *err)
{
	struct request *r = s->spare;
	struct stat st;

	/*
	 * Not when it is for another id (ids are the names' order), and not when the kernel took
	 * its name away (a FIFO or a link in its place, which the runner would open): a new one.
	 */
	if (r && (r->id != s->next_id || blocked || fstat(r->rd.fd, &st) < 0 || st.st_nlink != 1))
		drop_spare_request(s);
	else if (r) {
		s->spare = NULL;
		s->next_id++;
		r->is_execute = is_execute;
		r->timeout = timeout;
		r->fn = fn;
		r->data = data;
		return r;
	}
	r = request_new(s->next_id++, is_execute, timeout, fn, data);
	if (!blocked && request_open(r, &s->ch, err) < 0) {
		request_free(r);
		return NULL;
	}
	return r;
}
