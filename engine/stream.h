#ifndef CELLBOX_STREAM_H
#define CELLBOX_STREAM_H

/*
 * The host's two halves of the channel over a stream (stream_frame.h; kernels/PROTOCOL.md,
 * "The channel over a stream"). The session keeps its channel directory on this host as ever;
 * the relay in the sandbox keeps the same files there. These two functions keep them the same:
 *
 *   stream_pump   relay -> host: takes the bytes of the container's output (the engine's
 *                 multiplexed stdout and stderr) and writes the kernel part of the local
 *                 channel as the kernel wrote its own: appended, cut, removed. What it writes
 *                 is then read by the session exactly as a local kernel's files are (the same
 *                 event reader, the same checks of plots and copy-outs, the same quota).
 *   stream_sync   host -> relay: a scan of the local host part (the runner, commands/,
 *                 files/) that turns what is new since the last scan into W frames and what
 *                 went into D frames.
 *
 * The pump's input is the relay's, which is the kernel's: hostile. It writes only below the
 * kernel part's directory descriptors, only names of stream_name_ok(), never follows a link
 * (the only files there are its own and the host's), creates files only in plots/ and out/
 * (at most STREAM_MAX_ENTRIES), appends only to results files the host made, never lets a file
 * grow past STREAM_MAX_FILE, and stops at the first frame that breaks the protocol. The
 * channel's quota bounds the whole (its tmpfs, or the session's count of the kernel part).
 */

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include "stream_frame.h"
#include "util.h"

#define STREAM_MAX_FILE (256ull << 20)
#define STREAM_NOTES_MAX 4096

struct stream_pump {
	int kernel_fd, results_fd, plots_fd, out_fd;	/* the local kernel part (not owned) */
	int muxed;		/* the engine's 8-byte stream heads come first (no TTY) */
	unsigned char mux[8];
	size_t mux_have;	/* bytes of the next mux head read */
	uint32_t mux_left;	/* bytes of the current mux payload still to come */
	int mux_stream;		/* 1 stdout, 2 stderr */
	struct strbuf frame;	/* the relay frame being read */
	struct strbuf notes;	/* the relay's stderr, capped at STREAM_NOTES_MAX */
	unsigned entries;	/* files made in plots/ and out/, less those removed */
	uint64_t pong;		/* the offset of the last ping answer */
	int full;		/* the last failure was the host's room for the kernel's files
				   (ENOSPC: the channel's tmpfs of the quota's size) */
	unsigned long long frames, bytes;	/* taken so far */
	int broken;		/* a feed failed: nothing more is taken */
};

void stream_pump_init(struct stream_pump *p, int kernel_fd, int results_fd, int plots_fd,
		      int out_fd, int muxed);
void stream_pump_release(struct stream_pump *p);
/*
 * Take `len` bytes of the container's output. 0, or -1 with `err` saying how the relay broke
 * the protocol or what could not be written (past the quota); after -1 the pump takes nothing
 * more and the stream is to be ended.
 */
int stream_pump_feed(struct stream_pump *p, const void *buf, size_t len, struct strbuf *err);

struct stream_sent;

struct stream_sync {
	struct stream_sent *v;	/* the host files sent, as they were */
	size_t n, alloc;
};

void stream_sync_init(struct stream_sync *s);
void stream_sync_release(struct stream_sync *s);
/*
 * Append to `out` the frames that bring the relay's host part up to the local one below
 * directory `host_fd` (the channel's host/): its top's regular files (the runner), files/,
 * then commands/ in name order. Files over `max_file` bytes are refused. Returns how many files
 * it sent or removed (0: nothing new; a file of more than STREAM_MAX_DATA bytes goes in several
 * frames), or -1 with `err` set.
 */
int stream_sync_scan(struct stream_sync *s, int host_fd, size_t max_file, struct strbuf *out,
		     struct strbuf *err);
/* Append one frame of `type` to `out` (a name of at most STREAM_MAX_NAME bytes). */
void stream_frame_add(struct strbuf *out, int type, int flags, const char *name,
		      uint64_t offset, const void *data, size_t len);

#endif
