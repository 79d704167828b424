#include "fsutil.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "alloc.h"
#include "strbuf.h"

/* Write all of `len` bytes. */
int write_all(int fd, const void *buf, size_t len)
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
int mkdir_p(const char *path)
{
	char *p = xstrdup(path);
	int rc = 0;

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
	free(p);
	return rc;
}

/* Remove `name` in `at` and all below it, never following a link. */
int remove_tree_at(int at, const char *name, int max_depth)
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
		    remove_tree_at(dirfd(d), de->d_name, max_depth - 1) < 0)
			rc = -1;
	closedir(d);
	if (unlinkat(at, name, AT_REMOVEDIR) < 0 && errno != ENOENT)
		rc = -1;
	return rc;
}

/* Remove `path` and all below it, never following a link. */
void remove_tree(const char *path)
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
		remove_tree_at(at, slash + 1, REMOVE_TREE_DEPTH);
		close(at);
	}
	free(copy);
}

