/*
 * The relay's stream taken on the host: the engine's multiplexing undone, the relay's frames
 * read and the kernel part of the local channel written as they say (stream.h). The input is
 * hostile; every rule of what may be written is here.
 */
#include "stream.h"
#include "stream_frame.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

void stream_pump_init(struct stream_pump *p, int kernel_fd, int results_fd, int plots_fd,
		      int out_fd, int muxed)
{
	memset(p, 0, sizeof(*p));
	p->kernel_fd = kernel_fd;
	p->results_fd = results_fd;
	p->plots_fd = plots_fd;
	p->out_fd = out_fd;
	p->muxed = muxed;
	p->mux_stream = 1;
	strbuf_init(&p->frame, 0);
	strbuf_init(&p->notes, 0);
	strbuf_set_max(&p->notes, STREAM_NOTES_MAX);
}

void stream_pump_release(struct stream_pump *p)
{
	strbuf_release(&p->frame);
	strbuf_release(&p->notes);
}

enum where { AT_TOP, AT_RESULTS, AT_PLOTS, AT_OUT };

/*
 * The directory and entry of kernel name `name` (checked by stream_name_ok): -1 for a name
 * the relay may not write ("kernel/x", "kernel/plots/a/b").
 */
static int resolve(const struct stream_pump *p, const char *name, enum where *where,
		   const char **entry)
{
	static const struct { const char *dir; enum where where; } dirs[] = {
		{ "kernel/results/", AT_RESULTS }, { "kernel/plots/", AT_PLOTS },
		{ "kernel/out/", AT_OUT },
	};

	if (!strcmp(name, "kernel/ready") || !strcmp(name, "kernel/log")) {
		*where = AT_TOP;
		*entry = name + 7;
		return p->kernel_fd;
	}
	for (size_t i = 0; i < ARRAY_SIZE(dirs); i++) {
		size_t n = strlen(dirs[i].dir);
		if (!strncmp(name, dirs[i].dir, n) && !strchr(name + n, '/')) {
			*where = dirs[i].where;
			*entry = name + n;
			return dirs[i].where == AT_RESULTS ? p->results_fd :
			       dirs[i].where == AT_PLOTS ? p->plots_fd : p->out_fd;
		}
	}
	return -1;
}

/* A: `len` bytes of kernel file `name` at `off`. */
static int take_append(struct stream_pump *p, const char *name, uint64_t off, const void *data,
		       size_t len, struct strbuf *err)
{
	enum where where;
	const char *entry;
	int dfd = resolve(p, name, &where, &entry), fd, made = 0;
	struct stat st;

	if (dfd < 0) {
		strbuf_addstr(err, "the relay wrote outside the kernel's files");
		return -1;
	}
	fd = openat(dfd, entry, O_WRONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0 && errno == ENOENT) {
		/* results files and the top's are the host's to make: one it removed is done */
		if (where == AT_RESULTS || where == AT_TOP || off != 0)
			return 0;
		if (p->entries >= STREAM_MAX_ENTRIES) {
			strbuf_addf(err, "the kernel made more than %d files", STREAM_MAX_ENTRIES);
			return -1;
		}
		fd = openat(dfd, entry, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_NONBLOCK |
			    O_CLOEXEC, 0600);
		made = fd >= 0;
	}
	if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_nlink != 1) {
		if (fd >= 0)
			close(fd);
		strbuf_addstr(err, "a kernel file of the channel is not a plain file of the host's");
		return -1;
	}
	p->entries += (unsigned)made;
	if (off > (uint64_t)st.st_size || off + len > STREAM_MAX_FILE) {
		close(fd);
		strbuf_addf(err, "the relay wrote past the end of a kernel file (or past %llu MB)",
			    STREAM_MAX_FILE >> 20);
		return -1;
	}
	while (len) {
		ssize_t n = pwrite(fd, data, len, (off_t)off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			int e = n < 0 ? errno : ENOSPC;
			close(fd);
			p->full = e == ENOSPC || e == EDQUOT;
			strbuf_addf(err, "the kernel's files could not be kept on the host (%s%s)",
				    strerror(e), e == ENOSPC ? ": over the channel quota" : "");
			return -1;
		}
		data = (const char *)data + n;
		len -= (size_t)n;
		off += (uint64_t)n;
	}
	close(fd);
	return 0;
}

/* T: kernel file `name` cut to `off`; X: removed (plots/ and out/ only). */
static int take_cut(struct stream_pump *p, int type, const char *name, uint64_t off,
		    struct strbuf *err)
{
	enum where where;
	const char *entry;
	int dfd = resolve(p, name, &where, &entry), fd;
	struct stat st;

	if (dfd < 0) {
		strbuf_addstr(err, "the relay named a file outside the kernel's files");
		return -1;
	}
	if (type == STREAM_REMOVED) {
		if ((where == AT_PLOTS || where == AT_OUT) && unlinkat(dfd, entry, 0) == 0 &&
		    p->entries)
			p->entries--;
		return 0;
	}
	fd = openat(dfd, entry, O_WRONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return 0;
	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && off < (uint64_t)st.st_size &&
	    ftruncate(fd, (off_t)off) < 0) {
		close(fd);
		strbuf_addf(err, "a kernel file could not be cut: %s", strerror(errno));
		return -1;
	}
	close(fd);
	return 0;
}

/* One whole frame in p->frame. */
static int take_frame(struct stream_pump *p, const struct stream_head *h, struct strbuf *err)
{
	char name[STREAM_MAX_NAME + 1];
	const char *data = p->frame.buf + STREAM_HEAD + h->name_len;

	memcpy(name, p->frame.buf + STREAM_HEAD, h->name_len);
	name[h->name_len] = '\0';
	p->frames++;
	if (h->type == STREAM_PING) {
		p->pong = h->offset;
		return 0;
	}
	if (!stream_name_ok(name, h->name_len, "kernel/")) {
		strbuf_addstr(err, "the relay sent a name that is not a channel file's");
		return -1;
	}
	switch (h->type) {
	case STREAM_APPEND:
		return take_append(p, name, h->offset, data, h->data_len, err);
	case STREAM_TRUNCATE:
	case STREAM_REMOVED:
		return take_cut(p, h->type, name, h->offset, err);
	}
	strbuf_addf(err, "the relay sent a frame of unknown type %d", h->type);
	return -1;
}

/* Take `len` bytes of the relay's own stream (the container's stdout). */
static int take_relay(struct stream_pump *p, const char *buf, size_t len, struct strbuf *err)
{
	for (;;) {
		struct stream_head h;
		size_t want = STREAM_HEAD, n;

		if (p->frame.len >= STREAM_HEAD) {
			if (stream_head_get((const unsigned char *)p->frame.buf, &h) < 0) {
				strbuf_addstr(err, "the relay sent a frame over its caps");
				return -1;
			}
			want = STREAM_HEAD + h.name_len + h.data_len;
			if (p->frame.len == want) {
				int rc = take_frame(p, &h, err);
				strbuf_reset(&p->frame);
				if (rc < 0)
					return -1;
				continue;
			}
		}
		if (!len)
			return 0;
		n = want - p->frame.len;
		if (n > len)
			n = len;
		strbuf_add(&p->frame, buf, n);
		buf += n;
		len -= n;
	}
}

/* Keep what of `len` bytes of the relay's stderr fits below the notes' cap, the first ones. */
static void take_notes(struct stream_pump *p, const char *buf, size_t len)
{
	size_t room = STREAM_NOTES_MAX - 1 - p->notes.len;	/* the cap counts the NUL */

	strbuf_add(&p->notes, buf, len < room ? len : room);
}

static int take_muxed(struct stream_pump *p, const char *buf, size_t len, struct strbuf *err)
{
	while (len) {
		size_t n;

		if (!p->mux_left) {
			n = sizeof(p->mux) - p->mux_have;
			if (n > len)
				n = len;
			memcpy(p->mux + p->mux_have, buf, n);
			p->mux_have += n;
			buf += n;
			len -= n;
			if (p->mux_have < sizeof(p->mux))
				break;
			p->mux_have = 0;
			p->mux_stream = p->mux[0];
			p->mux_left = (uint32_t)p->mux[4] << 24 | (uint32_t)p->mux[5] << 16 |
				      (uint32_t)p->mux[6] << 8 | p->mux[7];
			if (p->mux_stream != 1 && p->mux_stream != 2) {
				strbuf_addf(err, "the engine's stream has a part of kind %d",
					    p->mux_stream);
				return -1;
			}
			continue;
		}
		n = p->mux_left < len ? p->mux_left : len;
		if (p->mux_stream == 1) {
			if (take_relay(p, buf, n, err) < 0)
				return -1;
		} else {
			take_notes(p, buf, n);	/* capped: the rest is dropped */
		}
		buf += n;
		len -= n;
		p->mux_left -= (uint32_t)n;
	}
	return 0;
}

int stream_pump_feed(struct stream_pump *p, const void *data, size_t len, struct strbuf *err)
{
	int rc;

	if (p->broken) {
		strbuf_addstr(err, "the relay's stream broke the protocol before");
		return -1;
	}
	p->bytes += len;
	rc = p->muxed ? take_muxed(p, data, len, err) : take_relay(p, data, len, err);
	if (rc < 0)
		p->broken = 1;
	return rc;
}
