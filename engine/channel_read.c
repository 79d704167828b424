/*
 * Reading the channel's kernel part: its ready file and log, results files, plots, copy-out
 * files, its size.
 */
#include "channel.h"
#include "wall.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#define READY_MAX (64 << 10)		/* bytes of a ready file */
#define PLOT_MAX (32 << 20)		/* bytes of one plot */
#define FILE_MAX (64 << 20)		/* bytes of one artifact (savefig's, a plotly page) */
#define PLOT_SIDE 16384			/* pixels on a side */
#define PLOT_PIXELS 100000000ull	/* pixels in all */
#define PLOT_INDEX_MAX 1000000
#define SCAN_MAX 4096			/* entries counted in one directory of the kernel part */
#define PUNCH_STEP (1 << 20)		/* punch what was read out of a results file in steps */

/*
 * The file a kernel names: "plots/<digits>.<ext>" (ext: 1 to 8 letters or digits) ->
 * "<digits>.<ext>", with *ext at its extension; NULL otherwise.
 */
static const char *plot_name(const char *rel, const char **ext)
{
	const char *name;
	size_t digits, len;

	if (!rel || strncmp(rel, "plots/", 6))
		return NULL;
	name = rel + 6;
	digits = strspn(name, "0123456789");
	if (!digits || digits > 7 || name[digits] != '.')
		return NULL;
	*ext = name + digits + 1;
	len = strspn(*ext, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789");
	return len && len <= 8 && !(*ext)[len] ? name : NULL;
}

int channel_take_file(struct channel *ch, const char *rel, int *index, int *w, int *h,
		      struct strbuf *data, struct strbuf *why)
{
	const char *ext = NULL, *name = plot_name(rel, &ext);
	char shown_name[32];
	unsigned long long charge;
	int fd = -1, rc = -1, png;
	off_t max;

	if (!name) {
		strbuf_addstr(why, "is not a file of the kernel's plots/");
		return CHANNEL_BAD_NAME;
	}
	if (ch->taken >= PLOT_INDEX_MAX) {
		strbuf_addf(why, "would be the session's file %d, past the most it keeps (%d)",
			    ch->taken + 1, PLOT_INDEX_MAX);
		return -1;
	}
	png = !strcmp(ext, "png");
	max = png ? PLOT_MAX : FILE_MAX;
	fd = wall_open(ch->plots_fd, name, ch->uid, max, why);
	if (fd < 0 || wall_read(fd, (size_t)max, data, why) < 0)
		goto out;
	if (png && wall_png_check(data->buf, data->len, PLOT_SIDE, PLOT_PIXELS, w, h, why) < 0)
		goto out;
	snprintf(shown_name, sizeof(shown_name), "%d.%s", ch->taken + 1, ext);
	/* Every copy counts, for the session: a name reused or a kernel restarted resets nothing. */
	charge = (unsigned long long)data->len * (ch->copies ? ch->copies : 1);
	if (ch->quota && ch->copied + charge > ch->quota) {
		ch->over = 1;
		strbuf_addstr(why, "would take what the session's kernels put on the host past the "
			      "channel quota of ");
		wall_describe_size(why, ch->quota);
		goto out;
	}
	if (wall_write_at(ch->shown_fd, shown_name, data->buf, data->len, 0644, shown_name, why) < 0)
		goto out;
	ch->copied += charge;
	*index = ++ch->taken;
	rc = 0;
out:
	if (fd >= 0)
		close(fd);
	if (rc < 0)
		strbuf_reset(data);
	return rc;
}

int channel_take_out(struct channel *ch, const char *name, size_t max, const char *dst,
		     struct strbuf *data, struct strbuf *err)
{
	struct strbuf why = STRBUF_INIT;
	size_t cap = max ? max : ch->quota ? (size_t)ch->quota : (size_t)1 << 40;
	size_t total = 0;
	int in = -1, out = -1, rc = -1;
	char buf[65536];

	if (!dst && !data)
		goto out;
	/* A copy to a host path stays there: at most what is left of the session's quota. */
	if (dst && ch->quota && cap > ch->quota - (ch->copied < ch->quota ? ch->copied : ch->quota))
		cap = (size_t)(ch->quota - (ch->copied < ch->quota ? ch->copied : ch->quota));
	/* One byte past the cap is let through, to be seen: the helper copies no more. */
	in = wall_open(ch->out_fd, name, ch->uid, (off_t)cap + 1, &why);
	if (in < 0) {
		strbuf_addf(err, "the sandbox's copy is refused: it %s", why.buf);
		goto out;
	}
	if (!dst) {
		if (wall_read(in, cap + 1, data, &why) < 0) {
			strbuf_reset(data);
			strbuf_addf(err, "the sandbox's copy is refused: it %s", why.buf);
			goto out;
		}
		if (data->len > cap) {
			strbuf_reset(data);
			strbuf_addf(err, "the sandbox's copy is larger than %zu bytes", cap);
			goto out;
		}
		rc = 0;
		goto out;
	}
	out = open(dst, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOCTTY, 0644);
	if (out < 0) {
		strbuf_addf(err, "cannot write '%s': %s", dst, strerror(errno));
		goto out;
	}
	for (;;) {
		ssize_t n = read(in, buf, sizeof(buf));

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			strbuf_addf(err, "cannot read the sandbox's copy: %s", strerror(errno));
			goto out;
		}
		if (n == 0)
			break;
		total += (size_t)n;
		if (total > cap) {
			strbuf_addf(err, "the sandbox's copy is larger than %zu bytes%s", cap,
				    max || !ch->quota ? "" : " (what is left of the channel quota)");
			goto out;
		}
		ch->copied += (size_t)n;
		if (fsutil_write_all(out, buf, (size_t)n) < 0) {
			strbuf_addf(err, "cannot write '%s': %s", dst, strerror(errno));
			goto out;
		}
	}
	if (close(out) < 0) {
		out = -1;
		strbuf_addf(err, "cannot write '%s': %s", dst, strerror(errno));
		goto out;
	}
	out = -1;
	rc = 0;
out:
	if (in >= 0)
		close(in);
	if (out >= 0)
		close(out);
	if (ch->out_fd >= 0 && wall_name_ok(name))
		fsutil_remove_tree_at(ch->out_fd, name, REMOVE_TREE_DEPTH);
	strbuf_release(&why);
	return rc;
}

/*
 * Bytes of the entries of one directory of the kernel part (one level, bounded), read with
 * getdents64() on the descriptor we hold: counted before every cell and after each one, so
 * no dup(), fdopendir() and close() each time, and no stat of "." and ".." (the directories
 * themselves are entries of kernel/, counted there).
 */
static unsigned long long dir_usage(int fd, int *too_many)
{
	char buf[8192] __attribute__((aligned(__alignof__(struct dirent64))));
	unsigned long long bytes = 0;
	ssize_t got;
	int n = 0;

	if (fd < 0 || lseek(fd, 0, SEEK_SET) < 0)
		return 0;
	while ((got = getdents64(fd, buf, sizeof(buf))) > 0) {
		for (ssize_t off = 0; off < got;) {
			const struct dirent64 *de = (const struct dirent64 *)(buf + off);
			const char *name = de->d_name;
			struct stat st;

			off += de->d_reclen;
			if (name[0] == '.' && (!name[1] || (name[1] == '.' && !name[2])))
				continue;
			if (++n > SCAN_MAX) {
				*too_many = 1;
				return bytes;
			}
			if (fstatat(fd, name, &st, AT_SYMLINK_NOFOLLOW) == 0)
				bytes += (unsigned long long)st.st_blocks * 512;
		}
	}
	return bytes;
}

unsigned long long channel_usage(const struct channel *ch)
{
	unsigned long long bytes = ch->copied;
	int too_many = 0;
	struct statfs sf;

	if (ch->kernel_fd < 0)
		return bytes;
	if (ch->mounted && fstatfs(ch->kernel_fd, &sf) == 0)
		return bytes + (unsigned long long)(sf.f_blocks - sf.f_bfree) * (unsigned long long)sf.f_bsize;
	bytes += dir_usage(ch->kernel_fd, &too_many) + dir_usage(ch->results_fd, &too_many) +
		 dir_usage(ch->plots_fd, &too_many) + dir_usage(ch->out_fd, &too_many);
	/* More entries than we count is itself more than a kernel may keep. */
	return too_many && ch->quota ? ch->quota + 1 : bytes;
}

void channel_reader_init(struct event_reader *r, int fd, size_t max_line)
{
	memset(r, 0, sizeof(*r));
	r->fd = fd;
	strbuf_init(&r->pending, 0);
	r->max_line = max_line;
}

void channel_reader_release(struct event_reader *r)
{
	if (r->fd >= 0)
		close(r->fd);
	r->fd = -1;
	strbuf_release(&r->pending);
}

/* Hand out the complete lines in `pending`; returns lines delivered. */
static int deliver_lines(struct event_reader *r, event_line_fn fn, void *data, int *stopped)
{
	size_t start = 0;
	int lines = 0;

	while (start < r->pending.len) {
		char *nl = memchr(r->pending.buf + start, '\n', r->pending.len - start);
		size_t len;

		if (!nl)
			break;
		len = (size_t)(nl - (r->pending.buf + start));
		*nl = '\0';
		lines++;
		if (r->skipped || len > r->max_line) {
			size_t dropped = r->skipped + len;
			r->skipped = 0;
			*stopped = fn(NULL, dropped, data);
		} else {
			*stopped = fn(r->pending.buf + start, len, data);
		}
		start += len + 1;
		if (*stopped)
			break;
	}
	strbuf_remove_front(&r->pending, start);
	/* A partial line already over the limit: drop it and remember how much went. */
	if (!*stopped && r->pending.len > r->max_line) {
		r->skipped += r->pending.len;
		strbuf_reset(&r->pending);
	}
	return lines;
}

/* Give back the disk space of what was read (a hole); a file we may not punch stays whole. */
static void punch_read(struct event_reader *r)
{
	off_t consumed = r->pos - (off_t)r->pending.len, upto = consumed & ~(off_t)4095;

	if (upto - r->punched < PUNCH_STEP)
		return;
	if (fallocate(r->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, r->punched,
		      upto - r->punched) == 0)
		r->punched = upto;
	else
		r->punched = (off_t)1 << 62;	/* not supported here: stop trying */
}

int channel_reader_poll(struct event_reader *r, size_t budget, event_line_fn fn, void *data)
{
	size_t read_now = 0;
	int total = 0, stopped = 0;

	r->more = 0;
	if (r->fd < 0)
		return -1;
	while (!stopped) {
		size_t want;
		ssize_t n;

		if (read_now >= budget) {
			r->more = 1;
			break;
		}
		if (strbuf_grow(&r->pending, 256 * 1024) < 0)
			return -1;
		want = r->pending.alloc - r->pending.len - 1;
		if (want > budget - read_now)
			want = budget - read_now;
		n = read(r->fd, r->pending.buf + r->pending.len, want);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -1;
		if (n == 0) {
			struct stat st;

			/* Shrunk under us: appends now land before our offset. Read from its end. */
			if (fstat(r->fd, &st) == 0 && st.st_size < r->pos) {
				r->truncated = 1;
				r->pos = lseek(r->fd, st.st_size, SEEK_SET);
				strbuf_reset(&r->pending);
				r->punched = r->punched < r->pos ? r->punched : r->pos;
			}
			break;
		}
		r->pos += n;
		r->bytes += (unsigned long long)n;
		read_now += (size_t)n;
		r->pending.len += (size_t)n;
		r->pending.buf[r->pending.len] = '\0';
		total += deliver_lines(r, fn, data, &stopped);
	}
	if (r->punched < ((off_t)1 << 62))
		punch_read(r);
	return total;
}

int channel_read_ready(const struct channel *ch, struct strbuf *out, struct strbuf *err)
{
	struct strbuf why = STRBUF_INIT;
	struct stat st;
	int rc = 0;

	strbuf_reset(out);
	if (ch->ready_fd < 0 || fstat(ch->ready_fd, &st) < 0 || st.st_size == 0)
		return 0;
	if (st.st_size > READY_MAX || wall_read(ch->ready_fd, READY_MAX, out, &why) < 0) {
		strbuf_addf(err, "the kernel's ready file is refused: %s",
			    why.len ? why.buf : "it is over its cap");
		rc = -1;
	} else if (out->len && out->buf[out->len - 1] == '\n') {
		rc = 1;
	}
	strbuf_release(&why);
	return rc;
}

off_t channel_log_size(const struct channel *ch)
{
	struct stat st;

	return ch->log_fd >= 0 && fstat(ch->log_fd, &st) == 0 ? st.st_size : 0;
}

void channel_log_tail(const struct channel *ch, off_t from, size_t max, struct strbuf *out)
{
	off_t size = channel_log_size(ch), start = from;
	size_t len;

	if (size <= from)
		return;
	if ((size_t)(size - from) > max)
		start = size - (off_t)max;
	len = (size_t)(size - start);
	if (strbuf_grow(out, len) < 0)
		return;
	for (size_t got = 0; got < len;) {
		ssize_t n = pread(ch->log_fd, out->buf + out->len, len - got, start + (off_t)got);
		if (n <= 0)
			break;
		got += (size_t)n;
		out->len += (size_t)n;
	}
	out->buf[out->len] = '\0';
}
