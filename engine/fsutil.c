#include "fsutil.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "alloc.h"
#include "random.h"
#include "strbuf.h"

/* Write all of `len` bytes. */
int fsutil_write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;

	while (len) {
		ssize_t n = write(fd, p, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -1;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* Make a directory and those above it that are missing. */
int fsutil_mkdir_p(const char *path)
{
	char *p;
	struct stat st;
	int rc = 0;

	if (!*path) {
		errno = ENOENT;
		return -1;
	}
	p = xstrdup(path);

	for (char *s = p + 1; ; s++) {
		if (*s == '/' || *s == '\0') {
			char saved = *s;
			*s = '\0';
			if (mkdir(p, 0700) < 0 && errno != EEXIST) {
				rc = -1;
				break;
			}
			*s = saved;
			if (!saved)
				break;
		}
	}
	if (rc == 0 && stat(p, &st) < 0) {
		rc = -1;
	} else if (rc == 0 && !S_ISDIR(st.st_mode)) {
		errno = ENOTDIR;	/* a file of that name was there: found now, not at its use */
		rc = -1;
	}
	free(p);
	return rc;
}

/* Remove `name` in `at` and all below it, never following a link. */
int fsutil_remove_tree_at(int at, const char *name, int max_depth)
{
	struct dirent *de;
	DIR *d;
	int fd, rc = 0;

	if (!*name || strchr(name, '/') || !strcmp(name, ".") || !strcmp(name, ".."))
		return -1;
	if (unlinkat(at, name, 0) == 0 || errno == ENOENT)
		return 0;
	if ((errno != EISDIR && errno != EPERM) || max_depth <= 0)
		return -1;
	/* A directory: open it without following a link, relative to the level above. */
	fd = openat(at, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? 0 : -1;
	d = fdopendir(fd);
	if (!d) {
		close(fd);
		return -1;
	}
	while ((de = readdir(d)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, "..") &&
		    fsutil_remove_tree_at(dirfd(d), de->d_name, max_depth - 1) < 0)
			rc = -1;
	closedir(d);
	if (unlinkat(at, name, AT_REMOVEDIR) < 0 && errno != ENOENT)
		rc = -1;
	return rc;
}

/* Remove `path` and all below it, never following a link. */
void fsutil_remove_tree(const char *path)
{
	char *copy = xstrdup(path), *slash;
	int at;

	while (strlen(copy) > 1 && copy[strlen(copy) - 1] == '/')
		copy[strlen(copy) - 1] = '\0';
	slash = strrchr(copy, '/');
	if (!slash || !slash[1]) {
		free(copy);
		return;
	}
	*slash = '\0';
	at = open(slash == copy ? "/" : copy, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (at >= 0) {
		fsutil_remove_tree_at(at, slash + 1, REMOVE_TREE_DEPTH);
		close(at);
	}
	free(copy);
}

/* ---- replacing a file as a whole ---- */

/* How many fresh names to draw when one is taken (O_EXCL) before giving up. */
#define ATOMIC_TRIES 8

/* Create the temporary that will replace `path`. */
int fsutil_atomic_begin(struct fsutil_atomic *a, const char *path, mode_t mode,
			struct strbuf *err)
{
	char rnd[17];

	a->fd = -1;
	a->tmp = NULL;
	for (int tries = 0; a->fd < 0 && tries < ATOMIC_TRIES; tries++) {
		random_hex(rnd, 8);
		free(a->tmp);
		a->tmp = xasprintf("%s.tmp-%s", path, rnd);
		a->fd = open(a->tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
		if (a->fd < 0 && errno != EEXIST)
			break;
	}
	if (a->fd < 0) {
		strbuf_addf(err, "cannot write '%s': %s", path, strerror(errno));
		free(a->tmp);
		a->tmp = NULL;
		return -1;
	}
	a->path = xstrdup(path);
	return 0;
}

/* Sync the directory that holds `path`, so the rename into it lasts; best effort. */
static void sync_dir_of(const char *path)
{
	const char *slash = strrchr(path, '/');
	char *dir = slash ? xstrndup(path, slash == path ? 1 : (size_t)(slash - path))
			  : xstrdup(".");
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (fd >= 0) {
		fsync(fd);
		close(fd);
	}
	free(dir);
}

/* Sync the temporary and rename it over its target. */
int fsutil_atomic_commit(struct fsutil_atomic *a, struct strbuf *err)
{
	int fd = a->fd, rc = -1, e = 0;

	if (fd < 0 || !a->tmp) {
		strbuf_addf(err, "cannot write '%s': nothing is pending",
			    a->path ? a->path : "(none)");
		goto out;
	}
	a->fd = -1;
	if (fsync(fd) < 0) {
		strbuf_addf(err, "cannot write '%s': %s", a->path, strerror(errno));
		close(fd);
		goto out;
	}
	if (close(fd) < 0) {
		strbuf_addf(err, "cannot write '%s': %s", a->path, strerror(errno));
		goto out;
	}
	if (renameat2(AT_FDCWD, a->tmp, AT_FDCWD, a->path, a->keep ? RENAME_NOREPLACE : 0) < 0) {
		e = errno;
		strbuf_addf(err, "cannot write '%s': %s", a->path, strerror(errno));
		goto out;
	}
	free(a->tmp);
	a->tmp = NULL;		/* renamed: nothing left to remove */
	sync_dir_of(a->path);
	rc = 0;
out:
	fsutil_atomic_rollback(a);
	if (e)
		errno = e;	/* EEXIST for a target kept */
	return rc;
}

/* Remove the temporary and forget the replacement. */
void fsutil_atomic_rollback(struct fsutil_atomic *a)
{
	if (a->fd >= 0)
		close(a->fd);
	if (a->tmp)
		unlink(a->tmp);
	free(a->tmp);
	free(a->path);
	a->fd = -1;
	a->tmp = a->path = NULL;
}

/* Write `data` as `path`: over it, or only where nothing is (`keep`). */
static int write_whole(const char *path, const void *data, size_t len, mode_t mode, int keep,
		       struct strbuf *err)
{
	struct fsutil_atomic a = FSUTIL_ATOMIC_INIT;

	a.keep = keep;
	if (fsutil_atomic_begin(&a, path, mode, err) < 0)
		return -1;
	if (fsutil_write_all(a.fd, data, len) < 0) {
		strbuf_addf(err, "cannot write '%s': %s", path, strerror(errno));
		fsutil_atomic_rollback(&a);
		return -1;
	}
	return fsutil_atomic_commit(&a, err);
}

int fsutil_write_atomic(const char *path, const void *data, size_t len, mode_t mode,
			struct strbuf *err)
{
	return write_whole(path, data, len, mode, 0, err);
}

int fsutil_write_new(const char *path, const void *data, size_t len, mode_t mode,
		     struct strbuf *err)
{
	return write_whole(path, data, len, mode, 1, err);
}
