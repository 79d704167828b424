#ifndef CELLBOX_FSUTIL_H
#define CELLBOX_FSUTIL_H

/*
 * File-system helpers (git's wrapper.c and lockfile.c): write all of a buffer, make and
 * remove directory trees without following links, and replace a file as a whole.
 *
 * Replacing a file (a notebook, a cell file, a plot copied out, the pool's daemon.json) goes
 * one way, git's lockfile discipline:
 *
 *	struct fsutil_atomic a = FSUTIL_ATOMIC_INIT;
 *
 *	if (fsutil_atomic_begin(&a, "nb.ipynb", 0644, err) < 0)	// the temporary, beside it
 *		return -1;
 *	if (fsutil_write_all(a.fd, text, len) < 0) {				// stream into a.fd
 *		fsutil_atomic_rollback(&a);				// removed; nb.ipynb untouched
 *		return -1;
 *	}
 *	return fsutil_atomic_commit(&a, err);				// fsync, rename, fsync dir
 *
 * or in one call, fsutil_write_atomic(). The temporary is "<path>.tmp-" and 16 random hex
 * digits (getrandom), made with O_CREAT | O_EXCL | O_NOFOLLOW, so a name planted ahead of
 * it (a link, a file) is never followed or written through: another name is drawn. The file
 * is synced before it is renamed over the target, and the directory after, so a crash leaves
 * the old content or the new, never a part. Until the rename nothing touches the target; on
 * any failure the temporary is removed.
 *
 * Channel files, which a kernel can read and reach, have their own rules (wall.h:
 * wall_write_at: relative to a directory descriptor, no fsync on the cell's path).
 */

#include <stddef.h>
#include <sys/types.h>

struct strbuf;

/* Write all of `len` bytes, retrying short writes and EINTR. */
int fsutil_write_all(int fd, const void *buf, size_t len);
/* mkdir -p with mode 0700 for each made component; -1 (ENOTDIR) when `path` is not a directory. */
int fsutil_mkdir_p(const char *path);
/*
 * rm -rf below and including `path`, never following a symbolic link: each level is opened
 * O_NOFOLLOW | O_DIRECTORY relative to the one above, so a link planted anywhere inside (or
 * swapped in while it runs) is removed, never followed. Errors are ignored.
 */
void fsutil_remove_tree(const char *path);
/* The same for `name` in directory `dirfd`, at most `max_depth` levels; 0, or -1 when
   something remains. */
int fsutil_remove_tree_at(int dirfd, const char *name, int max_depth);
#define REMOVE_TREE_DEPTH 64

/* A replacement of a file in progress (above); FSUTIL_ATOMIC_INIT when none is. */
struct fsutil_atomic {
	int fd;			/* the temporary, open for writing; -1 when none is pending */
	char *path;		/* the target */
	char *tmp;		/* the temporary beside it */
	int keep;		/* a target that is there stays: commit fails with EEXIST */
};
#define FSUTIL_ATOMIC_INIT { -1, NULL, NULL, 0 }

/*
 * Start replacing `path`: create the temporary beside it with `mode` (as open(2) takes it:
 * the umask applies) and leave it open in a->fd. 0, or -1 with `err` saying "cannot write
 * 'PATH': ..." (nothing is left behind).
 */
int fsutil_atomic_begin(struct fsutil_atomic *a, const char *path, mode_t mode,
			struct strbuf *err);
/*
 * Finish: fsync the temporary, close it, rename it over the target, fsync the directory (a
 * directory that cannot be synced is not an error: the rename is the commit). 0, or -1 with
 * `err` naming the target, which is then untouched, and the temporary removed. Either way
 * nothing is pending after it.
 */
int fsutil_atomic_commit(struct fsutil_atomic *a, struct strbuf *err);
/* Give up: close and remove the temporary; the target is untouched. Safe when none pends. */
void fsutil_atomic_rollback(struct fsutil_atomic *a);
/* Replace `path` with `len` bytes of `data` in one call (begin, write, commit). 0 or -1. */
int fsutil_write_atomic(const char *path, const void *data, size_t len, mode_t mode,
			struct strbuf *err);
/*
 * The same for a file that must be new: when `path` is there (a file, a link, anything) it
 * stays as it is, and the call fails with errno EEXIST (renameat2's RENAME_NOREPLACE).
 */
int fsutil_write_new(const char *path, const void *data, size_t len, mode_t mode,
		     struct strbuf *err);

#endif
