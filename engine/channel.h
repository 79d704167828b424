#ifndef CELLBOX_CHANNEL_H
#define CELLBOX_CHANNEL_H

/*
 * The file-based command/result queue between host and runner (kernels/PROTOCOL.md),
 * built as the sandbox's wall (wall.h): a directory in two one-way parts.
 *
 *	<channel>/            the host's (0700), never shown to a container as a whole
 *	  host/               host -> kernel: the runner, commands/, files/ (copy-in), wake; a
 *	                      container sees it read-only; only the host writes it
 *	  kernel/             kernel -> host: ready, log, results/, plots/, out/ (copy-out); the
 *	                      only part a kernel can write. Its top is the host's (the kernel
 *	                      cannot add, remove or swap entries there); results/, plots/, out/
 *	                      and the files ready and log are the kernel's. When cellbox may
 *	                      mount (root), it is a tmpfs the size of the quota: what the kernel
 *	                      writes can never take more of the host than that.
 *	  plots/              the host's checked copies of the kernel's plots and artifacts (what
 *	                      consumers read)
 *	  container, pid, exit_status   the backends' own notes
 *
 * The host opens every directory of the kernel part once, as a descriptor, and touches entries
 * there only through wall.h. It makes each request's results/<id>.jsonl itself (O_EXCL) and
 * reads it through the descriptor it made, so no name the kernel could plant is ever opened
 * for results. inotify wakes the host (the channel says notify_fd == -1 when it cannot, and
 * the session polls); a kernel that removes or moves part of the channel is noticed in
 * channel_drain().
 *
 * A runner that cannot use inotify (R's) may be woken through `host/wake`, a FIFO the host
 * makes and holds open (read-write, so it never blocks and never gets SIGPIPE); channel_wake()
 * writes one byte to it (kernels/PROTOCOL.md, "Waking the runner"). The local backend uses
 * it; a container is woken by a byte on its stdin instead (backend wake()), since a FIFO is not
 * shared with every runtime's sandbox (gVisor's).
 */

#include <stddef.h>
#include <sys/types.h>
#include "util.h"

struct wall_pending;

struct channel {
	char *dir;		/* absolute path of the channel directory; stable for its life */
	char *host_dir, *kernel_dir;	/* absolute paths of its two parts: dir/host and
					   dir/kernel, or a context's inside `within`'s */
	/*
	 * A context's channel (channel_create_within): the channel of the sandbox it runs in,
	 * and the name of its parts there (ctx-<dir's name>); NULL for every other channel.
	 */
	char *within, *part;
	int dir_fd, host_fd, commands_fd, files_fd, shown_fd;	/* the host's directories */
	int kernel_fd, results_fd, plots_fd, out_fd;	/* the kernel part; -1 before a reset */
	int ready_fd, log_fd;	/* kernel/ready and kernel/log, made by the host */
	int notify_fd;		/* inotify descriptor (non-blocking), or -1: poll instead */
	int wd[4];		/* our watches: the channel, host/, kernel/, results/ (-1: none) */
	uid_t uid;		/* the kernel's user: owner of everything in the kernel part */
	int wake_fd;		/* host/wake, read-write and non-blocking, or -1 */
	gid_t gid;
	int other_user;		/* the kernel is another uid than ours: its part is given to it */
	int mounted;		/* kernel/ is a tmpfs of ours, `quota` bytes big */
	unsigned long long quota;	/* bytes the session's kernels may put on the host; 0 = none */
	/*
	 * Bytes the host wrote out of the kernel part in this session: each plot or artifact
	 * taken, times `copies`, and each copy-out written to a host path. Summed over every
	 * kernel of the session (a reset or a restart keeps it; a plot replaced or a name reused
	 * still counts: its earlier copies may live on elsewhere), so it only grows.
	 */
	unsigned long long copied;
	unsigned copies;	/* host copies of each plot taken: its own in plots/ and the front
				   ends' (the history's, a --plots directory's); 0 means 1 */
	int over;		/* a plot was refused for the quota: the kernel is to be stopped
				   (a reset clears it; `copied` stays) */
	int taken;		/* files taken into plots/: the next is named taken + 1 (the
				   host's numbers, for every kernel of the session: a reset or a
				   restart keeps them, so no copy is ever named again) */
	int lost;		/* part of the channel was removed or moved (by a local kernel) */
};

/* Make a channel below the runtime directory `root` (checked: wall_own_dir). 0 or -1. */
int channel_create(struct channel *ch, const char *root, struct strbuf *err);
/*
 * Make the channel of a context (context.h) in a running sandbox whose channel is `within`
 * (one of ours, below `root` too): its top below `root` as any channel's (the host's notes
 * and plots/), its two parts inside `within`'s, which that sandbox sees already (a
 * container's mounts): `within`/host/ctx-NAME, made here, and `within`/kernel/ctx-NAME,
 * made by each channel_reset_kernel() in `within`'s kernel part as it is then (a sandbox
 * started again has a new one), never a tmpfs of its own: the sandbox's quota is shared.
 * Both are the host's entries in directories only the host writes, so the sandbox's kernels
 * cannot put anything of theirs at those names. 0 or -1 with `err`.
 */
int channel_create_within(struct channel *ch, const char *root, const char *within,
			  struct strbuf *err);
/*
 * Take over an existing channel (a pooled kernel's, made by another process of ours) with its
 * kernel part as it is. 0 or -1 with `err` set.
 */
int channel_attach(struct channel *ch, const char *dir, struct strbuf *err);
/* Close everything; with `remove`, delete the channel (its tmpfs unmounted first; without,
   the kernel part stays as it is, mounted, for a kernel that lives on). */
void channel_release(struct channel *ch, int remove);
/* Remove a channel directory by its path, its tmpfs unmounted first (gc, the pool). */
void channel_remove_dir(const char *dir);
/*
 * Remove channel `dir` that a dead container's label names, only when it is below runtime
 * directory `root` (textually, `root` as configured), every directory from `root` down ours
 * alone (our uid, no write for others) and reached without following a link, and its name a
 * channel's of process `pid`. 0 when removed, -1 when refused or not there: a label is the
 * word of whoever made the container (or of its image), not ours.
 */
int channel_remove_labelled(const char *root, const char *dir, long pid);
/*
 * Remove the channels below runtime directory `root` whose cellbox process is gone (a kill -9
 * leaves its channel; its local kernel died with it). Returns how many; `out` (may be NULL)
 * gets a line each.
 */
int channel_gc(const char *root, struct strbuf *out);
/*
 * A channel whose kernel was handed to another process than the one its name says (`:detach`
 * of an unnamed session: its named session's host): channel_keep() leaves our pid in its
 * CHANNEL_KEEPER_FILE (0 or -1); channel_kept() is 1 while the process that note names lives
 * (the note ours, a regular file, never followed), and the gc of channels and of containers
 * leaves such a channel and its container alone.
 */
#define CHANNEL_KEEPER_FILE "keeper"
int channel_keep(const char *dir, struct strbuf *err);
int channel_kept(const char *dir);
/* The absolute path of `rel` inside the channel (caller frees). */
char *channel_path(const struct channel *ch, const char *rel);

/* The kernel runs as `uid`:`gid` (a container user): its part is made theirs. */
void channel_set_owner(struct channel *ch, uid_t uid, gid_t gid);
/*
 * (Re)make the kernel part, fresh and empty, before a kernel starts: what an earlier kernel
 * left goes; with `mount` and a quota set, it is a tmpfs of the quota's size when cellbox may
 * mount one (else the quota is kept by watching, channel_usage()). 0 or -1 with `err`.
 */
int channel_reset_kernel(struct channel *ch, int mount, struct strbuf *err);
/* Remake a channel the kernel removed (a local kernel can): same path, empty. 0 or -1. */
int channel_recreate(struct channel *ch, struct strbuf *err);

/*
 * Write a host file (`rel`: "runner.zip", "commands/<id>.json", "files/<name>") atomically:
 * an unguessable temporary name (O_EXCL | O_NOFOLLOW), then rename. 0 or -1 with `err`.
 */
int channel_write(const struct channel *ch, const char *rel, const void *data, size_t len,
		  struct strbuf *err);
/*
 * Tell a runner that waits on host/wake that there is something for it (a command, an input
 * answer, an interrupt). Never blocks; a full FIFO already says so. Returns 0 or -1.
 */
int channel_wake(const struct channel *ch);
/*
 * A command file in two steps (wall_write_begin/end): channel_command_begin() makes its
 * temporary file in commands/ ahead of time; channel_command_end() writes it and names it
 * commands/`name` (0, or -1 with `err`), or with `name` NULL removes it.
 */
int channel_command_begin(const struct channel *ch, struct wall_pending *p, struct strbuf *err);
int channel_command_end(const struct channel *ch, struct wall_pending *p, const char *name,
			const void *data, size_t len, struct strbuf *err);
/* Remove a host file (`rel` as above); a missing one is fine. */
void channel_unlink(const struct channel *ch, const char *rel);
/* Remove every file in commands/ and files/ (before a restarted runner serves). */
void channel_clear_queue(const struct channel *ch);

/*
 * Make results/<name>.jsonl for a request (O_EXCL, given to the kernel's user) and return a
 * descriptor on it for reading (and for punching what was read), or -1 with `err`.
 */
int channel_results_create(const struct channel *ch, const char *name, struct strbuf *err);
/* Remove results/<name>.jsonl (whatever is there by that name now). */
void channel_results_remove(const struct channel *ch, const char *name);

/*
 * The kernel's ready line: 1 with it in `out` when kernel/ready holds a complete line, 0 when
 * not yet, -1 with `err` when it is over its cap.
 */
int channel_read_ready(const struct channel *ch, struct strbuf *out, struct strbuf *err);
/* The size of kernel/log now (where a kernel's part of it starts). */
off_t channel_log_size(const struct channel *ch);
/* Append the last `max` bytes of kernel/log written since `from` to `out`. */
void channel_log_tail(const struct channel *ch, off_t from, size_t max, struct strbuf *out);

/*
 * Check the kernel's plot or artifact `rel` ("plots/<n>.<ext>") and copy it into the host's
 * plots/ as "<index>.<ext>", *index set to the host's number for it (ch->taken + 1): never the
 * index the kernel gives, which would let it name an earlier copy again, or a restarted
 * kernel count from 1 over the first one's copies. The file must be a regular file with one
 * link, the kernel's, within its cap (a plot 32 MB, an artifact 64 MB) and the quota: its
 * bytes times `copies` are added to `copied`, and a file that would take `copied` past the
 * quota is refused and sets `over` (one kernel file taken many times is so counted once per
 * copy made); a PNG (".png") must also pass wall_png_check(), and sets *w, *h (left as they
 * are for other formats). This is the one place a name or file the kernel gives is checked:
 * consumers get the bytes read here (`data`, emptied on failure) and never read the kernel's
 * file again. 0, or -1 with `why` saying why it was refused; CHANNEL_BAD_NAME when `rel` is
 * not such a name (then a message should not quote it: it is the kernel's words, not a file
 * of its).
 */
enum { CHANNEL_BAD_NAME = -2 };
int channel_take_file(struct channel *ch, const char *rel, int *index, int *w, int *h,
		      struct strbuf *data, struct strbuf *why);
/*
 * Take the kernel's out/<name> (a helper cell's copy, files.h) by the same rules, of at most
 * `max` bytes (0: the channel quota): into `data`, or with `dst` set into that host path (its
 * bytes then added to `copied`, and at most what is left of the quota taken); then remove it.
 * With neither, only remove it. 0 or -1 with `err`.
 */
int channel_take_out(struct channel *ch, const char *name, size_t max, const char *dst,
		     struct strbuf *data, struct strbuf *err);

/*
 * Bytes the session's kernels have put on the host: the kernel part now (one fstatfs() on our
 * tmpfs, else a bounded walk of its four directories) and `copied`.
 */
unsigned long long channel_usage(const struct channel *ch);

/*
 * Read and discard pending inotify events; returns how many were read. Sets ch->lost when a
 * directory of the channel was removed or moved.
 */
int channel_drain(struct channel *ch);

/*
 * Incremental reader of one results file through the descriptor the host made for it
 * (channel_results_create; the reader owns it). Each poll reads what was appended since the
 * last one, at most `budget` bytes, and hands out complete lines. A line longer than
 * `max_line` is dropped whole and reported as a NULL line with its length. What was read is
 * punched out of the file, so a long output does not stay on the host's disk.
 */
typedef int (*event_line_fn)(const char *line, size_t len, void *data);

struct event_reader {
	int fd;			/* -1 once released */
	struct strbuf pending;	/* bytes after the last complete line */
	size_t max_line;
	size_t skipped;		/* > 0 while dropping an oversized line */
	off_t pos, punched;	/* bytes read; bytes punched out of the file */
	unsigned long long bytes;	/* bytes read in all */
	int more;		/* the last poll stopped at its budget: poll again */
	int truncated;		/* the file shrank under us (the kernel truncated it) */
};

void channel_reader_init(struct event_reader *r, int fd, size_t max_line);
void channel_reader_release(struct event_reader *r);
/*
 * Read what is new (at most `budget` bytes) and call `fn(line, len, data)` for each complete
 * line, without its newline. `fn` returns nonzero to stop reading (after the final event).
 * Returns the number of lines delivered, or -1 on a read error.
 */
int channel_reader_poll(struct event_reader *r, size_t budget, event_line_fn fn, void *data);

#endif
