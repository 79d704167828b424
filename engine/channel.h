#ifndef CELLBOX_CHANNEL_H
#define CELLBOX_CHANNEL_H

/*
 * The file-based command/result queue between host and runner (kernels/PROTOCOL.md).
 *
 * A channel is a directory: commands/ (host -> runner), results/ (runner -> host), plots/,
 * plus `ready`, `log` and `runner.py`. Whole files are written as tmp + rename; the runner
 * appends result events a line at a time and the host reads them incrementally with an
 * event_reader. The host is woken by inotify on the channel and results directories; where
 * inotify is not available the channel says so (notify_fd == -1) and the session polls.
 *
 * The runner may be woken the same way: `wake` is a FIFO the host makes and holds open
 * (read-write, so it never blocks and never gets SIGPIPE); channel_wake() writes one byte to it.
 * A runner that cannot use inotify blocks in a read of it (kernels/PROTOCOL.md, "Waking the
 * runner").
 */

#include <stddef.h>
#include <sys/types.h>
#include "util.h"

struct channel {
	char *dir;		/* absolute path of the channel directory */
	int notify_fd;		/* inotify descriptor (non-blocking), or -1: poll instead */
	int wake_fd;		/* the `wake` FIFO, read-write and non-blocking, or -1 */
	int chown;		/* files written get `uid`:`gid` (a container user) */
	uid_t uid;
	gid_t gid;
};

/*
 * Make a new, empty channel directory below `root` (created 0700 if missing) with
 * commands/, results/ and plots/, and start watching it. Returns 0 or -1 with `err` set.
 */
int channel_create(struct channel *ch, const char *root, struct strbuf *err);
/*
 * Take over an existing channel directory (a pooled kernel's) and start watching it. When the
 * directory belongs to another user (a container's, channel_set_owner), files written get
 * that owner. Returns 0 or -1 with `err` set.
 */
int channel_attach(struct channel *ch, const char *dir, struct strbuf *err);
/* Stop watching; with `remove` set, delete the directory and everything in it. */
void channel_release(struct channel *ch, int remove);
/* The absolute path of `rel` inside the channel (caller frees). */
char *channel_path(const struct channel *ch, const char *rel);
/* Write a whole file atomically (tmp + rename). Returns 0 or -1 with `err` set. */
int channel_write(const struct channel *ch, const char *rel, const void *data, size_t len,
		  struct strbuf *err);
/*
 * Give the channel to another user (the kernel's, in a container): the directories and
 * files so far, and every file channel_write() makes from now on. Returns 0 or -1 with `err`.
 */
int channel_set_owner(struct channel *ch, uid_t uid, gid_t gid, struct strbuf *err);
/*
 * Tell a runner that waits on the `wake` FIFO that there is something for it (a command, an
 * input answer, an interrupt). Never blocks; a full FIFO already says so. Returns 0 or -1.
 */
int channel_wake(const struct channel *ch);
/* Read and discard pending inotify events; returns how many were read. */
int channel_drain(const struct channel *ch);
/* Remove every file in commands/ and results/ (before a restarted runner serves). */
void channel_clear_queue(const struct channel *ch);

/*
 * Incremental reader of one results/<id>.jsonl file. The file may not exist yet; each poll
 * reads what was appended since the last one and hands out complete lines. A line longer
 * than `max_line` is dropped whole and reported as a NULL line with its length.
 */
typedef int (*event_line_fn)(const char *line, size_t len, void *data);

struct event_reader {
	int fd;			/* -1 until the file could be opened */
	char *path;
	struct strbuf pending;	/* bytes after the last complete line */
	size_t max_line;
	size_t skipped;		/* > 0 while dropping an oversized line */
};

void event_reader_init(struct event_reader *r, const char *path, size_t max_line);
void event_reader_release(struct event_reader *r);
/*
 * Read what is new and call `fn(line, len, data)` for each complete line, without its
 * newline. `fn` returns nonzero to stop reading (for example after the final event).
 * Returns the number of lines delivered, or -1 on a read error other than a missing file.
 */
int event_reader_poll(struct event_reader *r, event_line_fn fn, void *data);

#endif
