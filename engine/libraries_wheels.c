/*
 * A wheelhouse's wheels, read once by the host: their SHA-256 digests (what the libraries'
 * cache is keyed by) and, for an install, a private copy of exactly the bytes hashed, which
 * is what the setup reads (libraries_int.h).
 *
 * A wheelhouse is a directory the user names; its files may be another user's. So every
 * wheel is opened O_NOFOLLOW|O_NONBLOCK (no link is followed, no FIFO blocks us), must be a
 * regular file of a bounded size, and its name must be a plain wheel file name; other
 * entries (sdists, links, directories) are not offered to pip.
 */
#include "libraries_int.h"
#include "fsutil.h"
#include "sha256.h"
#include "util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAX_WHEELS 1024
#define MAX_WHEEL_SIZE (1ull << 30)		/* 1 GiB a wheel */
#define MAX_TOTAL_SIZE (8ull << 30)		/* 8 GiB the wheelhouse */

/* A plain wheel file name: [A-Za-z0-9._+-], not hidden, ending in .whl, under 256 bytes. */
static int wheel_name(const char *s)
{
	size_t n = strlen(s);

	if (n < 5 || n > 255 || s[0] == '.' || strcmp(s + n - 4, ".whl"))
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') ||
		      (s[i] >= '0' && s[i] <= '9') || strchr("._+-", s[i])))
			return 0;
	return 1;
}

static int by_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Hash the wheel `name` of `dfd` (and copy it into `sfd` when >= 0); -1 with `err`. */
static int read_wheel(int dfd, int sfd, const char *name, char hex[65],
		      unsigned long long *total, struct strbuf *err)
{
	static char buf[1 << 16];
	struct sha256 c;
	struct stat st;
	unsigned long long size = 0;
	int fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC), out = -1;
	int rc = -1;
	ssize_t n;

	if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		strbuf_addf(err, "libraries: the wheel '%s' is not a regular file%s%s", name,
			    fd < 0 ? ": " : "", fd < 0 ? strerror(errno) : "");
		goto out;
	}
	if (sfd >= 0) {
		out = openat(sfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
		if (out < 0 || fchmod(out, 0644) < 0) {
			strbuf_addf(err, "libraries: cannot copy the wheel '%s': %s", name,
				    strerror(errno));
			goto out;
		}
	}
	sha256_init(&c);
	while ((n = read(fd, buf, sizeof(buf))) != 0) {
		if (n < 0) {
			if (errno == EINTR)
				continue;
			strbuf_addf(err, "libraries: cannot read the wheel '%s': %s", name,
				    strerror(errno));
			goto out;
		}
		size += (unsigned long long)n;
		*total += (unsigned long long)n;
		if (size > MAX_WHEEL_SIZE || *total > MAX_TOTAL_SIZE) {
			strbuf_addf(err, "libraries: the wheelhouse is too large (a wheel of at most "
				    "1 GiB, 8 GiB in all): '%s'", name);
			goto out;
		}
		sha256_update(&c, buf, (size_t)n);
		if (out >= 0 && fsutil_write_all(out, buf, (size_t)n) < 0) {
			strbuf_addf(err, "libraries: cannot copy the wheel '%s': %s", name,
				    strerror(errno));
			goto out;
		}
	}
	sha256_hex(&c, hex);
	rc = 0;
out:
	if (fd >= 0)
		close(fd);
	if (out >= 0 && close(out) < 0 && rc == 0) {
		strbuf_addf(err, "libraries: cannot copy the wheel '%s': %s", name, strerror(errno));
		rc = -1;
	}
	return rc;
}

int libraries_wheels(const char *dir, const char *stage, char digest[65], struct strbuf *err)
{
	int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC), sfd = -1, rc = -1;
	char **names = NULL;
	size_t n = 0;
	unsigned long long total = 0;
	struct strbuf list = STRBUF_INIT;
	struct sha256 c;
	struct dirent *de;
	DIR *d = NULL;

	if (dfd < 0 || !(d = fdopendir(dup(dfd)))) {
		strbuf_addf(err, "libraries: cannot read the wheelhouse '%s': %s", dir,
			    strerror(errno));
		goto out;
	}
	while ((de = readdir(d))) {
		if (!wheel_name(de->d_name))
			continue;
		if (n == MAX_WHEELS) {
			strbuf_addf(err, "libraries: more than %d wheels in '%s'", MAX_WHEELS, dir);
			goto out;
		}
		names = xrealloc(names, (n + 1) * sizeof(*names));
		names[n++] = xstrdup(de->d_name);
	}
	if (n)
		qsort(names, n, sizeof(*names), by_name);
	if (stage && (sfd = open(stage, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0) {
		strbuf_addf(err, "libraries: cannot open '%s': %s", stage, strerror(errno));
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		char hex[65];

		if (read_wheel(dfd, sfd, names[i], hex, &total, err) < 0)
			goto out;
		strbuf_addf(&list, "%s  %s\n", hex, names[i]);
	}
	sha256_init(&c);
	sha256_update(&c, list.buf, list.len);
	sha256_hex(&c, digest);
	rc = 0;
out:
	if (d)
		closedir(d);
	if (dfd >= 0)
		close(dfd);
	if (sfd >= 0)
		close(sfd);
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
	strbuf_release(&list);
	return rc;
}

char *libraries_wheels_stage(const char *dir, const char *wheelhouse, const char *want,
			     struct strbuf *err)
{
	char *stage = xasprintf("%s/wheels-XXXXXX", dir), got[65];

	if (fsutil_mkdir_p(dir) < 0 || !mkdtemp(stage) || chmod(stage, 0755) < 0) {
		strbuf_addf(err, "libraries: cannot make a directory in '%s': %s", dir,
			    strerror(errno));
		free(stage);
		return NULL;
	}
	if (libraries_wheels(wheelhouse, stage, got, err) < 0 || strcmp(got, want)) {
		if (!err->len)
			strbuf_addf(err, "libraries: the wheelhouse '%s' changed while it was read; "
				    "try again", wheelhouse);
		fsutil_remove_tree(stage);
		free(stage);
		return NULL;
	}
	return stage;
}
