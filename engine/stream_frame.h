#ifndef CELLBOX_STREAM_FRAME_H
#define CELLBOX_STREAM_FRAME_H

/*
 * The frames of the channel over a stream (kernels/PROTOCOL.md, "The channel over a stream"):
 * one long-lived connection of the engine (the container's attach) between the host and the
 * relay inside the sandbox (kernels/relay/relay.c), which keeps the channel's files there and
 * carries them across. Shared by both ends; header only, no state.
 *
 * A frame is a 16-byte head, then `name_len` bytes of name, then `data_len` bytes of data:
 *
 *	byte 0		type (below)
 *	byte 1		flags (STREAM_LAST)
 *	bytes 2-3	name_len, big-endian, <= STREAM_MAX_NAME
 *	bytes 4-7	data_len, big-endian, <= STREAM_MAX_DATA
 *	bytes 8-15	offset, big-endian: where in the file the data goes (or a number)
 *
 * A name is a path relative to the channel ("host/commands/<id>.json", "kernel/log",
 * "kernel/plots/3.png"): one to three components of [A-Za-z0-9._-], none starting with a dot.
 * Request ids travel in the names, as they do in the files.
 *
 * Host -> relay (the container's stdin):
 *	W  write host file `name`: `data` at `offset` (0 starts it afresh); STREAM_LAST puts it
 *	   in place (a temporary, then rename, as the host writes every host file). Writing
 *	   host/commands/... wakes the runner.
 *	D  remove host file `name`; host/commands/<id>.json takes the request's results file
 *	   in the sandbox with it.
 *	K  wake the runner (a byte on its stdin)
 *	S  start the runner (after the runner's file is written)
 *	P  ping: the relay answers P with the same offset (latency, liveness)
 *	H  hello from a new host end (a pooled kernel taken over by another process): the relay
 *	   sends every kernel file again from offset 0 (what went while no host was attached
 *	   was lost; what the host has is written again, the same bytes)
 *
 * Relay -> host (the container's stdout, inside the engine's own multiplexing):
 *	A  kernel file `name` has `data` at `offset` (appended: the host's copy is that long)
 *	T  kernel file `name` was cut to `offset` bytes
 *	X  kernel file `name` was removed
 *	P  the answer to a ping
 */

#include <stddef.h>
#include <stdint.h>

#define STREAM_HEAD 16
#define STREAM_MAX_NAME 255
#define STREAM_MAX_DATA (1u << 20)
/* Files the kernel may make in plots/ and out/ (the host refuses one more: stream_pump.c). */
#define STREAM_MAX_ENTRIES 10000
#define STREAM_LAST 0x01

enum stream_type {
	STREAM_WRITE = 'W',
	STREAM_DELETE = 'D',
	STREAM_WAKE = 'K',
	STREAM_START = 'S',
	STREAM_PING = 'P',
	STREAM_HELLO = 'H',
	STREAM_APPEND = 'A',
	STREAM_TRUNCATE = 'T',
	STREAM_REMOVED = 'X',
};

struct stream_head {
	unsigned char type, flags;
	unsigned name_len;
	uint32_t data_len;
	uint64_t offset;
};

/* Encode `h` into 16 bytes at `out`. */
static inline void stream_head_put(unsigned char *out, const struct stream_head *h)
{
	out[0] = h->type;
	out[1] = h->flags;
	out[2] = (unsigned char)(h->name_len >> 8);
	out[3] = (unsigned char)h->name_len;
	for (int i = 0; i < 4; i++)
		out[4 + i] = (unsigned char)(h->data_len >> (24 - 8 * i));
	for (int i = 0; i < 8; i++)
		out[8 + i] = (unsigned char)(h->offset >> (56 - 8 * i));
}

/* Decode 16 bytes at `in`; 0, or -1 when a length is over its cap. */
static inline int stream_head_get(const unsigned char *in, struct stream_head *h)
{
	h->type = in[0];
	h->flags = in[1];
	h->name_len = (unsigned)in[2] << 8 | in[3];
	h->data_len = 0;
	for (int i = 0; i < 4; i++)
		h->data_len = h->data_len << 8 | in[4 + i];
	h->offset = 0;
	for (int i = 0; i < 8; i++)
		h->offset = h->offset << 8 | in[8 + i];
	return h->name_len <= STREAM_MAX_NAME && h->data_len <= STREAM_MAX_DATA ? 0 : -1;
}

/*
 * Whether `name` (`len` bytes, not terminated) is a channel name as above, below `top`
 * ("host/" or "kernel/"): 1 or 0.
 */
static inline int stream_name_ok(const char *name, size_t len, const char *top)
{
	size_t tl = 0, parts = 0, start;

	while (top[tl])
		tl++;
	if (len <= tl || len > STREAM_MAX_NAME)
		return 0;
	for (size_t i = 0; i < tl; i++)
		if (name[i] != top[i])
			return 0;
	start = tl;
	for (size_t i = tl; i <= len; i++) {
		if (i == len || name[i] == '/') {
			if (i == start || name[start] == '.' || ++parts > 2)
				return 0;
			start = i + 1;
			continue;
		}
		{
			char c = name[i];
			if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
			      (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-'))
				return 0;
		}
	}
	return 1;
}

#endif
