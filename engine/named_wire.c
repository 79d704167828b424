/*
 * A named session's connection: lines of JSON, read and written without blocking. What the
 * other end sends is capped (NAMED_LINE_MAX a line), and so is what waits for an end that
 * does not read (NAMED_QUEUE_MAX): past either the connection is dead, never the process
 * blocked or its memory taken. See named_int.h.
 */
#include "named_int.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "util.h"

void named_conn_init(struct named_conn *c, int fd)
{
	c->fd = fd;
	strbuf_init(&c->in, 0);
	strbuf_set_max(&c->in, NAMED_LINE_MAX + 1);
	strbuf_init(&c->out, 0);
	strbuf_set_max(&c->out, NAMED_QUEUE_MAX + 1);
	c->dead = 0;
}

void named_conn_close(struct named_conn *c)
{
	if (c->fd >= 0)
		close(c->fd);
	c->fd = -1;
	c->dead = 1;
	strbuf_release(&c->in);
	strbuf_release(&c->out);
}

int named_conn_flush(struct named_conn *c)
{
	while (!c->dead && c->out.len) {
		ssize_t n = write(c->fd, c->out.buf, c->out.len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return 1;
		if (n <= 0) {
			c->dead = 1;
			break;
		}
		strbuf_remove_front(&c->out, (size_t)n);
	}
	return c->dead ? -1 : 0;
}

int named_conn_send_line(struct named_conn *c, const char *line, size_t len)
{
	if (c->dead)
		return -1;
	if (strbuf_add(&c->out, line, len) < 0) {
		c->dead = 1;		/* it has not read NAMED_QUEUE_MAX: let it go */
		return -1;
	}
	return named_conn_flush(c) < 0 ? -1 : 0;
}

int named_conn_send(struct named_conn *c, const cJSON *msg)
{
	char *text = cJSON_PrintUnformatted(msg);
	int rc;

	if (!text)
		return -1;
	rc = named_conn_send_line(c, text, strlen(text));
	if (rc == 0)
		rc = named_conn_send_line(c, "\n", 1);
	cJSON_free(text);
	return rc;
}

int named_conn_read(struct named_conn *c)
{
	char buf[65536];

	while (!c->dead) {
		ssize_t n = read(c->fd, buf, sizeof(buf));

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return 0;
		if (n <= 0 || strbuf_add(&c->in, buf, (size_t)n) < 0) {
			c->dead = 1;
			break;
		}
		if ((size_t)n < sizeof(buf))
			return 0;
	}
	return -1;
}

cJSON *named_conn_next(struct named_conn *c)
{
	for (;;) {
		char *nl = memchr(c->in.buf, '\n', c->in.len);
		cJSON *msg;

		if (!nl)
			return NULL;
		msg = cJSON_ParseWithLength(c->in.buf, (size_t)(nl - c->in.buf));
		strbuf_remove_front(&c->in, (size_t)(nl - c->in.buf) + 1);
		if (cJSON_IsObject(msg))
			return msg;
		cJSON_Delete(msg);	/* not a message: skipped */
	}
}

const char *named_str(const cJSON *o, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);

	return cJSON_IsString(v) ? v->valuestring : NULL;
}
