/* The Jupyter wire protocol's framing and signing (messaging spec 5.3): jupyter.h. */
#include "jupyter.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <zmq.h>

#include "random.h"
#include "sha256.h"

static const char delimiter[] = "<IDS|MSG>";

/* The four signed parts, in order. */
enum { PART_HEADER, PART_PARENT, PART_METADATA, PART_CONTENT, NPARTS };

/* The hex HMAC of the four parts with our key. */
static void sign(const struct jupyter_wire *w, const struct jupyter_frame *parts, char out[65])
{
	struct sha256_hmac h;

	sha256_hmac_init(&h, w->key, w->keylen);
	for (int i = 0; i < NPARTS; i++)
		sha256_hmac_update(&h, parts[i].data, parts[i].len);
	sha256_hmac_hex(&h, out);
}

void jupyter_msg_release(struct jupyter_msg *m)
{
	for (size_t i = 0; i < m->nids; i++)
		strbuf_release(&m->ids[i]);
	cJSON_Delete(m->header);
	cJSON_Delete(m->parent);
	cJSON_Delete(m->metadata);
	cJSON_Delete(m->content);
	memset(m, 0, sizeof(*m));
}

int jupyter_wire_parse(const struct jupyter_wire *w, const struct jupyter_frame *f, size_t n,
		       struct jupyter_msg *m, struct strbuf *err)
{
	cJSON **dicts[NPARTS] = { &m->header, &m->parent, &m->metadata, &m->content };
	const struct jupyter_frame *parts;
	size_t d;
	char mac[65];

	memset(m, 0, sizeof(*m));
	for (d = 0; d < n; d++)
		if (f[d].len == sizeof(delimiter) - 1 && !memcmp(f[d].data, delimiter, f[d].len))
			break;
	if (d == n) {
		strbuf_addstr(err, "no <IDS|MSG> delimiter");
		return JUPYTER_NOT_A_MESSAGE;
	}
	if (d > JUPYTER_MAX_IDS) {
		strbuf_addf(err, "%zu routing identities (at most %d)", d, JUPYTER_MAX_IDS);
		return JUPYTER_NOT_A_MESSAGE;
	}
	if (n - d - 1 < 1 + NPARTS) {
		strbuf_addf(err, "%zu frames after the delimiter (need %d)", n - d - 1, 1 + NPARTS);
		return JUPYTER_NOT_A_MESSAGE;
	}
	parts = f + d + 2;
	if (w->keylen) {
		sign(w, parts, mac);
		if (f[d + 1].len != 64 || !sha256_equal(mac, f[d + 1].data, 64)) {
			strbuf_addstr(err, "bad signature");
			return JUPYTER_BAD_SIGNATURE;
		}
	}
	for (int i = 0; i < NPARTS; i++) {
		*dicts[i] = cJSON_ParseWithLength(parts[i].data, parts[i].len);
		if (!cJSON_IsObject(*dicts[i])) {
			strbuf_addf(err, "part %d is not a JSON object", i + 1);
			goto bad;
		}
	}
	m->type = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(m->header, "msg_type"));
	if (!m->type || !cJSON_IsString(cJSON_GetObjectItemCaseSensitive(m->header, "msg_id"))) {
		strbuf_addstr(err, "the header has no msg_type or msg_id");
		goto bad;
	}
	for (size_t i = 0; i < d; i++) {
		if (f[i].len > JUPYTER_MAX_ID_LEN) {
			strbuf_addstr(err, "a routing identity is too long");
			goto bad;
		}
		strbuf_init(&m->ids[i], f[i].len + 1);
		strbuf_add(&m->ids[i], f[i].data, f[i].len);
		m->nids++;
	}
	return 0;
bad:
	jupyter_msg_release(m);
	return JUPYTER_NOT_A_MESSAGE;
}

int jupyter_wire_recv(const struct jupyter_wire *w, void *sock, struct jupyter_msg *m,
		      struct strbuf *err)
{
	zmq_msg_t parts[JUPYTER_MAX_FRAMES], extra;
	struct jupyter_frame f[JUPYTER_MAX_FRAMES];
	size_t n = 0, dropped = 0;
	int more = 1, rc;

	while (more) {
		zmq_msg_t *p = n < JUPYTER_MAX_FRAMES ? &parts[n] : &extra;

		zmq_msg_init(p);
		if (zmq_msg_recv(p, sock, n || dropped ? 0 : ZMQ_DONTWAIT) < 0) {
			int e = errno;

			zmq_msg_close(p);
			if (!n && (e == EAGAIN || e == EINTR))
				return 0;
			strbuf_addf(err, "receiving: %s", zmq_strerror(e));
			rc = JUPYTER_NOT_A_MESSAGE;
			goto out;
		}
		more = zmq_msg_more(p);
		if (p == &extra) {	/* past the cap: read to the end, then dropped */
			zmq_msg_close(p);
			dropped++;
		} else {
			n++;
		}
	}
	if (dropped) {
		strbuf_addf(err, "more than %d frames", JUPYTER_MAX_FRAMES);
		rc = JUPYTER_NOT_A_MESSAGE;
		goto out;
	}
	for (size_t i = 0; i < n; i++)
		f[i] = (struct jupyter_frame){ zmq_msg_data(&parts[i]), zmq_msg_size(&parts[i]) };
	rc = jupyter_wire_parse(w, f, n, m, err);
	if (!rc)
		rc = 1;
out:
	for (size_t i = 0; i < n; i++)
		zmq_msg_close(&parts[i]);
	return rc;
}

/* A fresh uuid4 in its text form. */
void jupyter_wire_uuid(char out[37])
{
	char h[33];

	random_hex(h, 16);
	h[12] = '4';				/* version 4 */
	h[16] = "89ab"[h[16] % 4];		/* the variant */
	snprintf(out, 37, "%.8s-%.4s-%.4s-%.4s-%.12s", h, h + 8, h + 12, h + 16, h + 20);
}

/* A header of ours: msg_id, session, username, date (ISO 8601, UTC), msg_type, version. */
static cJSON *make_header(const struct jupyter_wire *w, const char *type)
{
	cJSON *h = cJSON_CreateObject();
	struct timespec ts;
	struct tm tm;
	char id[37], date[96];

	jupyter_wire_uuid(id);
	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	snprintf(date, sizeof(date), "%04d-%02d-%02dT%02d:%02d:%02d.%06ldZ", tm.tm_year + 1900,
		 tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
		 (long)(ts.tv_nsec / 1000) % 1000000);
	cJSON_AddStringToObject(h, "msg_id", id);
	cJSON_AddStringToObject(h, "session", w->session);
	cJSON_AddStringToObject(h, "username", "cellbox");
	cJSON_AddStringToObject(h, "date", date);
	cJSON_AddStringToObject(h, "msg_type", type);
	cJSON_AddStringToObject(h, "version", "5.3");
	return h;
}

/* Send one frame; `more` when others follow. */
static int send_frame(void *sock, const void *data, size_t len, int more)
{
	return zmq_send(sock, data, len, more ? ZMQ_SNDMORE : 0) < 0 ? -1 : 0;
}

int jupyter_wire_send(const struct jupyter_wire *w, void *sock, const struct jupyter_msg *parent,
		      int to_ids, const char *type, cJSON *content)
{
	cJSON *header = make_header(w, type);
	char *text[NPARTS] = {
		cJSON_PrintUnformatted(header),
		parent && parent->header ? cJSON_PrintUnformatted(parent->header) : NULL,
		NULL,
		cJSON_PrintUnformatted(content),
	};
	struct jupyter_frame parts[NPARTS];
	char mac[65] = "", topic[80];
	int rc = 0;

	if (!text[PART_PARENT])
		text[PART_PARENT] = xstrdup("{}");
	text[PART_METADATA] = xstrdup("{}");
	for (int i = 0; i < NPARTS; i++) {
		if (!text[i])
			abort();	/* cJSON ran out of memory */
		parts[i] = (struct jupyter_frame){ text[i], strlen(text[i]) };
	}
	if (w->keylen)
		sign(w, parts, mac);
	if (to_ids && parent) {
		for (size_t i = 0; i < parent->nids && !rc; i++)
			rc = send_frame(sock, parent->ids[i].buf, parent->ids[i].len, 1);
	} else if (!to_ids) {
		snprintf(topic, sizeof(topic), "kernel.%s.%s", w->session, type);
		rc = send_frame(sock, topic, strlen(topic), 1);
	}
	if (!rc)
		rc = send_frame(sock, delimiter, sizeof(delimiter) - 1, 1);
	if (!rc)
		rc = send_frame(sock, mac, strlen(mac), 1);
	for (int i = 0; i < NPARTS && !rc; i++)
		rc = send_frame(sock, parts[i].data, parts[i].len, i + 1 < NPARTS);
	for (int i = 0; i < NPARTS; i++)
		free(text[i]);
	cJSON_Delete(header);
	cJSON_Delete(content);
	return rc;
}
