#ifndef CELLBOX_WALL_H
#define CELLBOX_WALL_H

/*
 * The wall: how the host touches what a kernel can write (docs/security.md). In a container
 * backend the kernel is hostile, and every name it can write (its part of the channel) may be
 * a symbolic link, a hard link, a FIFO, a file that keeps growing or one that is swapped
 * between two looks. These functions are the only way the engine reads such names:
 *
 *	fd = wall_open(dirfd, "3.png", kernel_uid, 32 << 20, &why);	// -1: refused, `why` says
 *	wall_read(fd, 32 << 20, &bytes, &why);				// reads what fstat allowed
 *
 * Rules: an entry is opened relative to a directory descriptor the host opened itself, by a
 * single name (no '/', no ".."), with O_NOFOLLOW | O_NONBLOCK | O_NOCTTY, so a symbolic link
 * is refused and a FIFO or a device never blocks; fstat() must then show a regular file
 * with one link, owned by the kernel's uid, within its size cap. What passed is read from
 * that descriptor only, never again by name.
 *
 * Writes the host makes into directories the kernel can read use unpredictable temporary
 * names created with O_EXCL | O_NOFOLLOW and renamed into place; nothing here ever chowns
 * an entry it did not just create. Removal (fsutil.h: fsutil_remove_tree_at) never follows a link.
 *
 * Runtime directories (where channels and pools live) are checked as OpenSSH and tmux check
 * theirs: wall_own_dir() makes or accepts a directory only when it is ours and mode 0700.
 */

#include <stddef.h>
#include <sys/stat.h>
#include <sys/types.h>
#include "util.h"

/* Open flags for anything the kernel could have put there. */
#define WALL_OPEN_FLAGS (O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC)

/*
 * Open `name` in `dirfd` as a kernel-written file and check it (the rules above): returns the
 * descriptor (blocking reads restored), or -1 with `why` saying which rule it broke ("is a
 * symbolic link", "is a FIFO", "has 2 links", "belongs to uid 0, not 1000", "is 40 MB, over
 * its cap of 32 MB", "does not exist").
 */
int wall_open(int dirfd, const char *name, uid_t uid, off_t max, struct strbuf *why);
/* Check an open descriptor by the same rules; 0 or -1 with `why`. */
int wall_check(int fd, uid_t uid, off_t max, struct strbuf *why);
/* Describe what `st` is, for messages: "a regular file", "a FIFO", "a directory", ... */
const char *wall_kind(const struct stat *st);
/*
 * Read a checked descriptor from offset 0: at most `max` bytes, appended to `out`; a file
 * that grew past `max` since it was checked is refused. 0 or -1 with `why`.
 */
int wall_read(int fd, size_t max, struct strbuf *out, struct strbuf *why);

/*
 * Write `data` as `name` in `dirfd` (a directory of the host's): a temporary name no one can
 * guess, created with O_EXCL | O_NOFOLLOW and mode `mode`, then renamed over `name`.
 * 0 or -1 with `err` naming `shown` (the path as the user reads it).
 */
int wall_write_at(int dirfd, const char *name, const void *data, size_t len, mode_t mode,
		  const char *shown, struct strbuf *err);
/*
 * The same in two steps, the first ahead of time: wall_write_begin() makes the temporary file
 * (`reserve` bytes of it allocated), wall_write_end() writes it and renames it over `name`, or
 * with `name` NULL removes it. After either the pending write is over (fd -1).
 */
struct wall_pending {
	int fd;
	char tmp[40];		/* ".tmp-" and 32 random hex digits */
};
int wall_write_begin(int dirfd, mode_t mode, size_t reserve, struct wall_pending *p,
		     const char *shown, struct strbuf *err);
int wall_write_end(int dirfd, struct wall_pending *p, const char *name, const void *data,
		   size_t len, const char *shown, struct strbuf *err);
/* Whether `name` is one plain component (not empty, no '/', not "." or ".."). */
int wall_name_ok(const char *name);

/*
 * Accept the directory `path` only when it is ours: a directory (not a link), owned by our
 * effective uid, with no access for group or others; and each directory above it owned by
 * root or us and, when others may write it, sticky (/tmp). With `make`, what is missing is
 * made (mode 0700). Anything else is an error that names the directory, its owner or mode,
 * and what to do; never a silent fallback. 0 or -1 with `err`.
 */
int wall_own_dir(const char *path, int make, struct strbuf *err);
/*
 * The same, and the directory opened (O_DIRECTORY | O_NOFOLLOW, close-on-exec) and checked
 * again through the descriptor: what a caller then opens relative to it (openat, O_NOFOLLOW)
 * is in the directory that was checked. The descriptor, or -1 with `err`.
 */
int wall_own_dir_open(const char *path, int make, struct strbuf *err);

/*
 * Check PNG bytes before they are copied anywhere: the signature, an IHDR first chunk of
 * length 13, dimensions from 1 to `max_side` each and at most `max_pixels` together.
 * Sets *w, *h. 0 or -1 with `why`.
 */
int wall_png_check(const void *data, size_t len, unsigned max_side, unsigned long long max_pixels,
		   int *w, int *h, struct strbuf *why);

/* Say a byte count as limits are written: "512 KB", "64 MB", "1 GB". */
void wall_describe_size(struct strbuf *sb, unsigned long long n);

#endif
