/*
 * A kernel's files as the host reads them from a channel (the wall's rules: outputs.h), and
 * the host's copies of them written where they are kept.
 */
#include "outputs.h"
#include "wall.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Whether `rel` is `plots/<digits>.<alnum>`; *name points at `<digits>.<alnum>`. */
static int plot_name_ok(const char *rel, const char **name)
{
	const char *p;
	size_t d, e;

	if (!rel || strncmp(rel, "plots/", 6))
		return 0;
	p = rel + 6;
	d = strspn(p, "0123456789");
	if (!d || d > 12 || p[d] != '.')
		return 0;
	e = strspn(p + d + 1, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789");
	if (!e || e > 8 || p[d + 1 + e])
		return 0;
	*name = p;
	return 1;
}

int outputs_open_file(const char *channel_dir, const char *rel, size_t max, struct strbuf *err)
{
	struct strbuf why = STRBUF_INIT;
	const char *name;
	char *dir_path;
	int dir = -1, fd = -1;

	if (!plot_name_ok(rel, &name)) {
		strbuf_addf(err, "refused plot path '%s' (not plots/<n>.<ext>)", rel ? rel : "");
		return -1;
	}
	dir_path = xasprintf("%s/plots", channel_dir);
	dir = open(dir_path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dir < 0) {
		strbuf_addf(err, "cannot open '%s': %s", dir_path, strerror(errno));
		goto out;
	}
	/* The wall's own rules: the session's checked copies are ours (channel_take_file). */
	fd = wall_open(dir, name, geteuid(), max > (size_t)INT64_MAX ? INT64_MAX : (off_t)max,
		       &why);
	if (fd < 0)
		strbuf_addf(err, "refused '%s/%s': it %s", dir_path, name, why.buf);
out:
	if (dir >= 0)
		close(dir);
	free(dir_path);
	strbuf_release(&why);
	return fd;
}

int outputs_read_file(const char *channel_dir, const char *rel, size_t max, struct strbuf *sb,
		      struct strbuf *err)
{
	struct strbuf why = STRBUF_INIT;
	int fd = outputs_open_file(channel_dir, rel, max, err), rc = -1;

	if (fd < 0)
		return -1;
	strbuf_reset(sb);
	if (wall_read(fd, max, sb, &why) < 0)
		strbuf_addf(err, "refused '%s/%s': it %s", channel_dir, rel, why.buf);
	else
		rc = 0;
	close(fd);
	strbuf_release(&why);
	return rc;
}

int outputs_copy_file(const char *channel_dir, const char *rel, const char *dst,
		      struct strbuf *err)
{
	struct strbuf data = STRBUF_INIT;
	int rc = -1;

	if (outputs_read_file(channel_dir, rel, OUTPUTS_FILE_MAX, &data, err) == 0)
		rc = outputs_save_file(data.buf, data.len, dst, err);
	strbuf_release(&data);
	return rc;
}

int outputs_save_file(const void *data, size_t len, const char *dst, struct strbuf *err)
{
	return fsutil_write_atomic(dst, data, len, 0644, err);
}

char *outputs_copy_name(const char *dir, int index, int k, const char *ext)
{
	if (k > 1)
		return xasprintf("%s/%d-%d.%s", dir, index, k, ext);
	return xasprintf("%s/%d.%s", dir, index, ext);
}

int outputs_copy_new(const char *dir, int index, const char *ext, const void *data,
		     size_t len, struct strbuf *err)
{
	for (int k = 1; k <= OUTPUTS_COPY_NAMES; k++) {
		char *dst = outputs_copy_name(dir, index, k, ext);
		int rc = fsutil_write_new(dst, data, len, 0644, err), e = errno;

		free(dst);
		if (rc == 0)
			return k;
		if (e != EEXIST)
			return 0;
		strbuf_reset(err);
	}
	strbuf_addf(err, "cannot copy %d.%s to '%s': %d copies numbered %d are there", index,
		    ext, dir, OUTPUTS_COPY_NAMES, index);
	return 0;
}
