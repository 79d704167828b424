#ifndef CELLBOX_FSUTIL_H
#define CELLBOX_FSUTIL_H

/*
 * File-system helpers (git's wrapper.c and lockfile.c): write all of a buffer, make and
 * remove directory trees without following links.
 */

#include <stddef.h>
#include <sys/types.h>

struct strbuf;

/* Write all of `len` bytes, retrying short writes and EINTR. */
int write_all(int fd, const void *buf, size_t len);
/* mkdir -p with mode 0700 for each made component. */
int mkdir_p(const char *path);
/*
 * rm -rf below and including `path`, never following a symbolic link: each level is opened
 * O_NOFOLLOW | O_DIRECTORY relative to the one above, so a link planted anywhere inside (or
 * swapped in while it runs) is removed, never followed. Errors are ignored.
 */
void remove_tree(const char *path);
/* The same for `name` in directory `dirfd`, at most `max_depth` levels; 0, or -1 when
   something remains. */
int remove_tree_at(int dirfd, const char *name, int max_depth);
#define REMOVE_TREE_DEPTH 64

#endif
