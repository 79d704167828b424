/* The editor buffer's undo and redo: the steps kept, taken back and forth (edbuf.h). */
#include "edbuf.h"
#include "edbuf_int.h"

#include <stdlib.h>
#include <string.h>

/* Forget the oldest step. */
static void drop_oldest(struct edbuf_steps *s)
{
	s->bytes -= s->v[0].len;
	free(s->v[0].text);
	memmove(s->v, s->v + 1, (s->n - 1) * sizeof(*s->v));
	s->n--;
}

void edbuf_steps_clear(struct edbuf_steps *s)
{
	for (size_t i = 0; i < s->n; i++)
		free(s->v[i].text);
	free(s->v);
	memset(s, 0, sizeof(*s));
}

void edbuf_steps_push(struct edbuf_steps *s, const struct edbuf *e)
{
	struct edbuf_step *st;

	while (s->n && (s->n >= EDBUF_UNDO_STEPS || s->bytes + e->text.len > EDBUF_UNDO_BYTES))
		drop_oldest(s);
	if (s->n == s->alloc) {
		s->alloc = s->alloc ? 2 * s->alloc : 16;
		s->v = xrealloc(s->v, s->alloc * sizeof(*s->v));
	}
	st = &s->v[s->n++];
	st->text = xmalloc(e->text.len + 1);
	memcpy(st->text, e->text.buf, e->text.len + 1);
	st->len = e->text.len;
	st->cur = e->cur;
	s->bytes += st->len;
}

/* Make the newest step of `from` the text, the text the newest of `to`. */
static int steps_swap(struct edbuf *e, struct edbuf_steps *from, struct edbuf_steps *to)
{
	struct edbuf_step *st;

	if (!from->n)
		return 0;
	edbuf_steps_push(to, e);
	st = &from->v[--from->n];
	from->bytes -= st->len;
	strbuf_reset(&e->text);
	strbuf_add(&e->text, st->text, st->len);
	e->cur = st->cur <= e->text.len ? st->cur : e->text.len;
	free(st->text);
	e->goal = -1;
	e->group = G_NONE;
	e->anchor = -1;
	return 1;
}

int edbuf_undo(struct edbuf *e)
{
	return steps_swap(e, &e->undo, &e->redo);
}

int edbuf_redo(struct edbuf *e)
{
	return steps_swap(e, &e->redo, &e->undo);
}
