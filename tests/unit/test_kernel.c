/*
 * Unit tests of `cellbox kernel`'s reading of a front end's bytes (tui/kernel/): the
 * connection file, the wire parser (signatures, caps, malformed frames) and a message through
 * real ZMQ sockets (inproc) both ways, signed and checked.
 */
#include <stdio.h>
#include <string.h>
#include <zmq.h>

#include "jupyter_int.h"
#include "sha256.h"
#include "../tap.h"

static const char key[] = "a0436f6c-1916-498b-8eb9-e81ab9368e84";
static const char header[] = "{\"msg_id\":\"m1\",\"session\":\"s\",\"username\":\"u\","
			     "\"msg_type\":\"kernel_info_request\",\"version\":\"5.3\"}";

/* The hex signature of four parts with `k`. */
static void sign4(const char *k, const char *const parts[4], char mac[65])
{
	struct sha256_hmac h;

	sha256_hmac_init(&h, k, strlen(k));
	for (int i = 0; i < 4; i++)
		sha256_hmac_update(&h, parts[i], strlen(parts[i]));
	sha256_hmac_hex(&h, mac);
}

/* Frames: `nids` identities, the delimiter, `sig`, four parts. */
static size_t frames(struct jupyter_frame *f, size_t nids, const char *sig,
		     const char *const parts[4])
{
	size_t n = 0;

	for (size_t i = 0; i < nids; i++)
		f[n++] = (struct jupyter_frame){ "id", 2 };
	f[n++] = (struct jupyter_frame){ "<IDS|MSG>", 9 };
	f[n++] = (struct jupyter_frame){ sig, strlen(sig) };
	for (int i = 0; i < 4; i++)
		f[n++] = (struct jupyter_frame){ parts[i], strlen(parts[i]) };
	return n;
}

static void test_connection_file(void)
{
	static const char good[] = "{\"shell_port\": 5001, \"iopub_port\": 5002, \"stdin_port\": "
		"5003, \"control_port\": 5004, \"hb_port\": 5005, \"ip\": \"127.0.0.1\", \"key\": "
		"\"k\", \"transport\": \"tcp\", \"signature_scheme\": \"hmac-sha256\"}";
	static const char *const bad[] = {
		"", "[]", "{\"ip\": \"127.0.0.1\"}",
		"{\"shell_port\": 1, \"iopub_port\": 2, \"stdin_port\": 3, \"control_port\": 4, "
		"\"hb_port\": 70000, \"ip\": \"h\"}",
		"{\"shell_port\": 1, \"iopub_port\": 2, \"stdin_port\": 3, \"control_port\": 4, "
		"\"hb_port\": 5, \"ip\": \"h\", \"key\": \"k\", \"signature_scheme\": \"hmac-md5\"}",
		"{\"shell_port\": 1, \"iopub_port\": 2, \"stdin_port\": 3, \"control_port\": 4, "
		"\"hb_port\": 5, \"ip\": \"h\", \"transport\": \"udp\"}",
	};
	struct jupyter_conn c;
	struct strbuf err = STRBUF_INIT;
	char ep[300];

	CHECK(jupyter_conn_parse(good, strlen(good), &c, &err) == 0);
	CHECK(c.keylen == 1 && c.ports[JUPYTER_HB] == 5005);
	jupyter_conn_endpoint(&c, JUPYTER_CONTROL, ep, sizeof(ep));
	CHECK_STR(ep, "tcp://127.0.0.1:5004");
	snprintf(c.transport, sizeof(c.transport), "ipc");
	jupyter_conn_endpoint(&c, JUPYTER_SHELL, ep, sizeof(ep));
	CHECK_STR(ep, "ipc://127.0.0.1-5001");
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		strbuf_reset(&err);
		CHECK(jupyter_conn_parse(bad[i], strlen(bad[i]), &c, &err) < 0 && err.len);
	}
	strbuf_release(&err);
}

static void test_parse(void)
{
	const char *parts[4] = { header, "{}", "{}", "{\"code\": \"1\"}" };
	struct jupyter_wire w = { .key = key, .keylen = strlen(key) };
	struct jupyter_frame f[JUPYTER_MAX_FRAMES];
	struct strbuf err = STRBUF_INIT;
	struct jupyter_msg m;
	char mac[65], forged[65];
	size_t n;

	sign4(key, parts, mac);
	n = frames(f, 2, mac, parts);
	CHECK(jupyter_wire_parse(&w, f, n, &m, &err) == 0);
	CHECK_STR(m.type, "kernel_info_request");
	CHECK(m.nids == 2 && !strcmp(m.ids[1].buf, "id"));
	jupyter_msg_release(&m);
	/* a signature of another key, one changed digit, the wrong length, none */
	sign4("another key", parts, forged);
	n = frames(f, 1, forged, parts);
	CHECK(jupyter_wire_parse(&w, f, n, &m, &err) == JUPYTER_BAD_SIGNATURE);
	memcpy(forged, mac, sizeof(mac));
	forged[63] = forged[63] == '0' ? '1' : '0';
	n = frames(f, 1, forged, parts);
	CHECK(jupyter_wire_parse(&w, f, n, &m, &err) == JUPYTER_BAD_SIGNATURE);
	n = frames(f, 1, "abc", parts);
	CHECK(jupyter_wire_parse(&w, f, n, &m, &err) == JUPYTER_BAD_SIGNATURE);
	/* the content changed under a good signature */
	parts[3] = "{\"code\": \"2\"}";
	n = frames(f, 1, mac, parts);
	CHECK(jupyter_wire_parse(&w, f, n, &m, &err) == JUPYTER_BAD_SIGNATURE);
	/* too many identities; too few parts; no delimiter */
	n = frames(f, JUPYTER_MAX_IDS + 1, mac, parts);
	CHECK(jupyter_wire_parse(&w, f, n, &m, &err) == JUPYTER_NOT_A_MESSAGE);
	n = frames(f, 0, mac, parts);
	CHECK(jupyter_wire_parse(&w, f, n - 1, &m, &err) == JUPYTER_NOT_A_MESSAGE);
	CHECK(jupyter_wire_parse(&w, f + 1, n - 1, &m, &err) == JUPYTER_NOT_A_MESSAGE);
	/* signed, but not objects, or no msg_type */
	parts[0] = "{\"msg_id\": \"x\"}";
	sign4(key, parts, mac);
	n = frames(f, 0, mac, parts);
	CHECK(jupyter_wire_parse(&w, f, n, &m, &err) == JUPYTER_NOT_A_MESSAGE);
	parts[0] = header;
	parts[2] = "[1]";
	sign4(key, parts, mac);
	n = frames(f, 0, mac, parts);
	CHECK(jupyter_wire_parse(&w, f, n, &m, &err) == JUPYTER_NOT_A_MESSAGE);
	/* without a key nothing is signed: any signature frame goes */
	w.keylen = 0;
	parts[2] = "{}";
	n = frames(f, 0, "", parts);
	CHECK(jupyter_wire_parse(&w, f, n, &m, &err) == 0);
	jupyter_msg_release(&m);
	strbuf_release(&err);
}

/* Receive every frame of one message on `s` into `out` (a NUL after each); how many. */
static int recv_all(void *s, char out[][1024], int max)
{
	int n = 0, more = 1;

	while (more && n < max) {
		int len = zmq_recv(s, out[n], 1023, 0);
		size_t sz = sizeof(more);

		if (len < 0)
			return -1;
		out[n++][len < 1023 ? len : 1023] = '\0';
		zmq_getsockopt(s, ZMQ_RCVMORE, &more, &sz);
	}
	return n;
}

static void test_sockets(void)
{
	const char *parts[4] = { header, "{}", "{}", "{}" };
	struct jupyter_wire w = { .key = key, .keylen = strlen(key) };
	void *ctx = zmq_ctx_new(), *router = zmq_socket(ctx, ZMQ_ROUTER);
	void *dealer = zmq_socket(ctx, ZMQ_DEALER);
	struct strbuf err = STRBUF_INIT;
	struct jupyter_msg m;
	char mac[65], got[12][1024];
	const char *sent[4];
	cJSON *c, *h, *p;
	int n;

	jupyter_wire_uuid(w.session);
	CHECK(strlen(w.session) == 36 && w.session[14] == '4');
	CHECK(zmq_bind(router, "inproc://shell") == 0);
	CHECK(zmq_connect(dealer, "inproc://shell") == 0);
	CHECK(jupyter_wire_recv(&w, router, &m, &err) == 0);	/* nothing yet */
	sign4(key, parts, mac);
	zmq_send(dealer, "<IDS|MSG>", 9, ZMQ_SNDMORE);
	zmq_send(dealer, mac, 64, ZMQ_SNDMORE);
	for (int i = 0; i < 4; i++)
		zmq_send(dealer, parts[i], strlen(parts[i]), i < 3 ? ZMQ_SNDMORE : 0);
	CHECK(jupyter_wire_recv(&w, router, &m, &err) == 1);
	CHECK(m.nids == 1);	/* the router's identity of the dealer */
	/* the answer goes back to that identity, signed, with our header and its parent */
	c = cJSON_CreateObject();
	cJSON_AddStringToObject(c, "status", "ok");
	CHECK(jupyter_wire_send(&w, router, &m, 1, "kernel_info_reply", c) == 0);
	n = recv_all(dealer, got, 12);
	CHECK(n == 6);
	if (n == 6) {
		CHECK_STR(got[0], "<IDS|MSG>");
		for (int i = 0; i < 4; i++)
			sent[i] = got[2 + i];
		sign4(key, sent, mac);
		CHECK_STR(got[1], mac);
		h = cJSON_Parse(got[2]);
		p = cJSON_Parse(got[3]);
		CHECK_STR(jupyter_str(h, "msg_type", NULL), "kernel_info_reply");
		CHECK_STR(jupyter_str(h, "session", NULL), w.session);
		CHECK_STR(jupyter_str(p, "msg_id", NULL), "m1");
		cJSON_Delete(h);
		cJSON_Delete(p);
	}
	jupyter_msg_release(&m);
	/* more frames than the cap: dropped whole, and the next message still reads */
	for (int i = 0; i < JUPYTER_MAX_FRAMES + 5; i++)
		zmq_send(dealer, "x", 1, ZMQ_SNDMORE);
	zmq_send(dealer, "x", 1, 0);
	strbuf_reset(&err);
	CHECK(jupyter_wire_recv(&w, router, &m, &err) == JUPYTER_NOT_A_MESSAGE);
	CHECK(strstr(err.buf, "frames") != NULL);
	zmq_send(dealer, "<IDS|MSG>", 9, ZMQ_SNDMORE);
	sign4(key, parts, mac);
	zmq_send(dealer, mac, 64, ZMQ_SNDMORE);
	for (int i = 0; i < 4; i++)
		zmq_send(dealer, parts[i], strlen(parts[i]), i < 3 ? ZMQ_SNDMORE : 0);
	CHECK(jupyter_wire_recv(&w, router, &m, &err) == 1);
	jupyter_msg_release(&m);
	zmq_close(dealer);
	zmq_close(router);
	zmq_ctx_term(ctx);
	strbuf_release(&err);
}

static const struct tap_test tests[] = {
	{ "connection_file", test_connection_file },
	{ "parse", test_parse },
	{ "sockets", test_sockets },
};

int main(int argc, char **argv)
{
	return tap_main(argc, argv, tests, ARRAY_SIZE(tests));
}
