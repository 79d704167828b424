/* The wall: checked access to what a kernel can write, safe host writes and removal. */
#include "wall.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const unsigned char png_signature[8] = { 0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n' };

void wall_describe_size(struct strbuf *sb, unsigned long long n)
{
	if (n >= (1ull << 30) && n % (1ull << 30) == 0)
		strbuf_addf(sb, "%llu GB", n >> 30);
	else if (n >= (1ull << 20))
		strbuf_addf(sb, "%llu MB", (n + (1ull << 19)) >> 20);
	else if (n >= 1024)
		strbuf_addf(sb, "%llu KB", (n + 512) >> 10);
	else
		strbuf_addf(sb, "%llu bytes", n);
}

const char *wall_kind(const struct stat *st)
{
	switch (st->st_mode & S_IFMT) {
	case S_IFREG: return "a regular file";
	case S_IFDIR: return "a directory";
	case S_IFLNK: return "a symbolic link";
	case S_IFIFO: return "a FIFO";
	case S_IFSOCK: return "a socket";
	case S_IFCHR: return "a character device";
	case S_IFBLK: return "a block device";
	default: return "of an unknown kind";
	}
}

int wall_name_ok(const char *name)
{
	return name && *name && !strchr(name, '/') && strcmp(name, ".") && strcmp(name, "..");
}

int wall_check(int fd, uid_t uid, off_t max, struct strbuf *why)
{
	struct stat st;

	if (fstat(fd, &st) < 0) {
		strbuf_addf(why, "cannot be checked: %s", strerror(errno));
		return -1;
	}
	if (!S_ISREG(st.st_mode)) {
		strbuf_addf(why, "is %s, not a regular file", wall_kind(&st));
		return -1;
	}
	if (st.st_nlink != 1) {
		strbuf_addf(why, "has %lu links (a hard link), not one", (unsigned long)st.st_nlink);
		return -1;
	}
	if (st.st_uid != uid) {
		strbuf_addf(why, "belongs to uid %u, not to the kernel's uid %u", (unsigned)st.st_uid,
			    (unsigned)uid);
		return -1;
	}
	if (st.st_size > max) {
		strbuf_addstr(why, "is ");
		wall_describe_size(why, (unsigned long long)st.st_size);
		strbuf_addstr(why, ", over its cap of ");
		wall_describe_size(why, (unsigned long long)max);
		return -1;
	}
	return 0;
}

int wall_open(int dirfd, const char *name, uid_t uid, off_t max, struct strbuf *why)
{
	struct stat st;
	int fd, flags;

	if (!wall_name_ok(name)) {
		strbuf_addstr(why, "is not a plain name");
		return -1;
	}
	fd = openat(dirfd, name, WALL_OPEN_FLAGS);
	if (fd < 0) {
		int e = errno;

		/* O_NOFOLLOW gives ELOOP for a link; say what it is rather than the errno. */
		if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && !S_ISREG(st.st_mode))
			strbuf_addf(why, "is %s, not a regular file", wall_kind(&st));
		else if (e == ENOENT)
			strbuf_addstr(why, "does not exist");
		else
			strbuf_addf(why, "cannot be opened: %s", strerror(e));
		return -1;
	}
	if (wall_check(fd, uid, max, why) < 0) {
		close(fd);
		return -1;
	}
	flags = fcntl(fd, F_GETFL);
	if (flags >= 0)
		fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
	return fd;
}

int wall_read(int fd, size_t max, struct strbuf *out, struct strbuf *why)
{
	size_t start = out->len;
	off_t off = 0;

	for (;;) {
		ssize_t n;

		if (strbuf_grow(out, 65536) < 0) {
			strbuf_addf(why, "cannot be read: %s", strerror(errno));
			return -1;
		}
		n = pread(fd, out->buf + out->len, out->alloc - out->len - 1, off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			strbuf_addf(why, "cannot be read: %s", strerror(errno));
			return -1;
		}
		if (n == 0)
			break;
		out->len += (size_t)n;
		out->buf[out->len] = '\0';
		off += n;
		if (out->len - start > max) {
			out->len = start;
			out->buf[start] = '\0';
			strbuf_addstr(why, "grew past its cap of ");
			wall_describe_size(why, max);
			strbuf_addstr(why, " while it was read");
			return -1;
		}
	}
	return 0;
}

int wall_write_begin(int dirfd, mode_t mode, size_t reserve, struct wall_pending *p,
		     const char *shown, struct strbuf *err)
{
	memcpy(p->tmp, ".tmp-", 5);
	random_hex(p->tmp + 5, 16);
	p->fd = openat(dirfd, p->tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
	if (p->fd < 0) {
		strbuf_addf(err, "cannot write '%s': %s", shown, strerror(errno));
		return -1;
	}
	if (fchmod(p->fd, mode) < 0) {
		strbuf_addf(err, "cannot write '%s': %s", shown, strerror(errno));
		wall_write_end(dirfd, p, NULL, NULL, 0, NULL, NULL);
		return -1;
	}
	/* What the write will need, now (on a tmpfs a write into a new file allocates a page). */
	if (reserve)
		fallocate(p->fd, FALLOC_FL_KEEP_SIZE, 0, (off_t)reserve);
	return 0;
}

int wall_write_end(int dirfd, struct wall_pending *p, const char *name, const void *data,
		   size_t len, const char *shown, struct strbuf *err)
{
	int rc = -1;

	if (p->fd < 0)
		return -1;
	if (!name)
		goto out;
	if (fsutil_write_all(p->fd, data, len) < 0) {
		strbuf_addf(err, "cannot write '%s': %s", shown, strerror(errno));
		goto out;
	}
	rc = close(p->fd);
	p->fd = -1;
	if (rc < 0) {
		strbuf_addf(err, "cannot write '%s': %s", shown, strerror(errno));
		goto out;
	}
	rc = renameat(dirfd, p->tmp, dirfd, name);
	if (rc < 0)
		strbuf_addf(err, "cannot rename into '%s': %s", shown, strerror(errno));
out:
	if (p->fd >= 0)
		close(p->fd);
	p->fd = -1;
	if (rc < 0)
		unlinkat(dirfd, p->tmp, 0);
	return rc;
}

int wall_write_at(int dirfd, const char *name, const void *data, size_t len, mode_t mode,
		  const char *shown, struct strbuf *err)
{
	struct wall_pending p;

	if (wall_write_begin(dirfd, mode, 0, &p, shown, err) < 0)
		return -1;
	return wall_write_end(dirfd, &p, name, data, len, shown, err);
}

/* Check one existing component of a runtime directory's path; 0 or -1 with `err`. */
static int check_component(const char *p, int final, const char *whole, struct strbuf *err)
{
	struct stat st;

	if (lstat(p, &st) < 0) {
		strbuf_addf(err, "cannot use '%s': %s", p, strerror(errno));
		return -1;
	}
	if (S_ISLNK(st.st_mode)) {
		/* A link nobody else can change is as good as its target (/var/run). */
		if (final || (st.st_uid != 0 && st.st_uid != geteuid())) {
			strbuf_addf(err, "'%s' is a symbolic link%s: refusing to use it for '%s'", p,
				    final ? "" : " of another user", whole);
			return -1;
		}
		if (stat(p, &st) < 0) {
			strbuf_addf(err, "cannot use '%s': %s", p, strerror(errno));
			return -1;
		}
	}
	if (!S_ISDIR(st.st_mode)) {
		strbuf_addf(err, "'%s' is %s, not a directory", p, wall_kind(&st));
		return -1;
	}
	if (final) {
		if (st.st_uid != geteuid()) {
			strbuf_addf(err, "'%s' belongs to uid %u, not to us (uid %u): refusing to use "
				    "it (remove it, or set runtime-dir to a directory of ours)", p,
				    (unsigned)st.st_uid, (unsigned)geteuid());
			return -1;
		}
		if (st.st_mode & 077) {
			strbuf_addf(err, "'%s' has mode %04o: only its owner may use it (chmod 700 "
				    "'%s')", p, (unsigned)(st.st_mode & 07777), p);
			return -1;
		}
		return 0;
	}
	if (st.st_uid != 0 && st.st_uid != geteuid()) {
		strbuf_addf(err, "'%s' (above '%s') belongs to uid %u: refusing to use it", p, whole,
			    (unsigned)st.st_uid);
		return -1;
	}
	if ((st.st_mode & 022) && !(st.st_mode & S_ISVTX)) {
		strbuf_addf(err, "'%s' (above '%s') may be written by others: refusing to use it", p,
			    whole);
		return -1;
	}
	return 0;
}

int wall_own_dir(const char *path, int make, struct strbuf *err)
{
	char *p = xstrdup(path);
	size_t len = strlen(p);
	int rc = -1;

	while (len > 1 && p[len - 1] == '/')
		p[--len] = '\0';
	if (*p != '/') {
		strbuf_addf(err, "'%s' is not an absolute path", path);
		goto out;
	}
	for (char *s = p + 1;; s++) {
		int final = *s == '\0';

		if (*s != '/' && !final)
			continue;
		*s = '\0';
		if (make && mkdir(p, 0700) < 0 && errno != EEXIST) {
			strbuf_addf(err, "cannot create '%s': %s", p, strerror(errno));
			goto out;
		}
		if (check_component(p, final, path, err) < 0)
			goto out;
		if (final)
			break;
		*s = '/';
	}
	rc = 0;
out:
	free(p);
	return rc;
}

int wall_own_dir_open(const char *path, int make, struct strbuf *err)
{
	struct stat st;
	int fd;

	if (wall_own_dir(path, make, err) < 0)
		return -1;
	fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		strbuf_addf(err, "cannot open '%s': %s", path, strerror(errno));
		return -1;
	}
	/* What was opened is what was checked (not something swapped in since) */
	if (fstat(fd, &st) < 0 || !S_ISDIR(st.st_mode) || st.st_uid != geteuid() ||
	    (st.st_mode & 077)) {
		strbuf_addf(err, "'%s' changed while it was checked: refusing to use it", path);
		close(fd);
		return -1;
	}
	return fd;
}

/* A big-endian 32-bit number. */
static unsigned long be32(const unsigned char *p)
{
	return (unsigned long)p[0] << 24 | (unsigned long)p[1] << 16 | (unsigned long)p[2] << 8 | p[3];
}

int wall_png_check(const void *data, size_t len, unsigned max_side, unsigned long long max_pixels,
		   int *w, int *h, struct strbuf *why)
{
	const unsigned char *p = data;
	unsigned long width, height;

	if (len < 33 || memcmp(p, png_signature, 8)) {
		strbuf_addstr(why, "is not a PNG (no PNG signature)");
		return -1;
	}
	if (be32(p + 8) != 13 || memcmp(p + 12, "IHDR", 4)) {
		strbuf_addstr(why, "is not a PNG (its first chunk is not IHDR)");
		return -1;
	}
	width = be32(p + 16);
	height = be32(p + 20);
	if (!width || !height || width > max_side || height > max_side ||
	    (unsigned long long)width * height > max_pixels) {
		strbuf_addf(why, "is a PNG of %lux%lu pixels, outside 1..%u a side and %llu in all",
			    width, height, max_side, max_pixels);
		return -1;
	}
	*w = (int)width;
	*h = (int)height;
	return 0;
}
