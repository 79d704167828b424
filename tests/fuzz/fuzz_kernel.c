/*
 * libFuzzer target for what `cellbox kernel` reads from a Jupyter front end: the frames of a
 * message (one frame a line of the input) through the wire parser, unsigned and signed with a
 * key (a frame "SIGN" is replaced by the right signature, so the JSON behind it is reached as
 * a front end with the key would send it), the content members the handlers read, a
 * history_request's reply, and the input as a connection file. Built by scripts/fuzz (meson
 * -Dfuzz=true), seeds in corpus/kernel/.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "jupyter_int.h"
#include "sha256.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Frames of the input, one a line; a frame "SIGN" becomes the signature of the four after. */
static size_t split(const char *text, size_t len, struct jupyter_frame *f, const char *key,
		    char mac[65])
{
	size_t n = 0, start = 0;

	for (size_t i = 0; i <= len && n < JUPYTER_MAX_FRAMES; i++)
		if (i == len || text[i] == '\n') {
			f[n++] = (struct jupyter_frame){ text + start, i - start };
			start = i + 1;
		}
	for (size_t i = 0; i + 4 < n; i++)
		if (f[i].len == 4 && !memcmp(f[i].data, "SIGN", 4)) {
			struct sha256_hmac h;

			sha256_hmac_init(&h, key, strlen(key));
			for (size_t k = 1; k <= 4; k++)
				sha256_hmac_update(&h, f[i + k].data, f[i + k].len);
			sha256_hmac_hex(&h, mac);
			f[i] = (struct jupyter_frame){ mac, 64 };
			break;
		}
	return n;
}

/* What the handlers read of a message, and a history reply from a few cells. */
static void read_fields(const struct jupyter_msg *m)
{
	static struct jupyter_cell cells[] = {
		{ 1, "1+2", "3" }, { 2, "print(1)", NULL }, { 3, "1+2", "3" },
	};
	struct jupyter_kernel k = { .history = cells, .nhistory = 3 };
	const cJSON *c = m->content;
	cJSON *reply;

	(void)jupyter_str(c, "code", "");
	(void)jupyter_bool(c, "silent", 0);
	(void)jupyter_int(c, "cursor_pos", -1);
	reply = jupyter_exec_history(&k, c);
	cJSON_Delete(reply);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const keys[] = { "", "fuzz-key" };
	struct jupyter_frame f[JUPYTER_MAX_FRAMES];
	struct jupyter_conn conn;
	struct strbuf err = STRBUF_INIT;
	char mac[65];

	for (size_t i = 0; i < 2; i++) {
		struct jupyter_wire w = { .key = keys[i], .keylen = strlen(keys[i]) };
		struct jupyter_msg m;
		size_t n = split((const char *)data, size, f, keys[i], mac);

		strbuf_reset(&err);
		if (jupyter_wire_parse(&w, f, n, &m, &err) == 0) {
			read_fields(&m);
			jupyter_msg_release(&m);
		}
	}
	strbuf_reset(&err);
	jupyter_conn_parse((const char *)data, size, &conn, &err);
	strbuf_release(&err);
	return 0;
}
