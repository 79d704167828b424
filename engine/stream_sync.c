/*
 * The host part of the channel sent to the relay (stream.h): each scan compares the local
 * host/ with what was sent and frames the difference. Host files are the host's own (the
 * kernel never writes there), so a scan trusts their names; it still opens nothing but
 * regular files, without following links.
 */
#include "stream.h"
#include "stream_frame.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct stream_sent {
	char *name;		/* "host/commands/<id>.json" */
	ino_t ino;
	off_t size;
	struct timespec mtime;
	int seen;		/* in this scan */
};

void stream_sync_init(struct stream_sync *s)
{
	memset(s, 0, sizeof(*s));
}

void stream_sync_release(struct stream_sync *s)
{
	for (size_t i = 0; i < s->n; i++)
		free(s->v[i].name);
	free(s->v);
	memset(s, 0, sizeof(*s));
}

void stream_frame_add(struct strbuf *out, int type, int flags, const char *name,
		      uint64_t offset, const void *data, size_t len)
{
	unsigned char head[STREAM_HEAD];
	struct stream_head h = { .type = (unsigned char)type, .flags = (unsigned char)flags,
				 .name_len = (unsigned)strlen(name), .data_len = (uint32_t)len,
				 .offset = offset };

	stream_head_put(head, &h);
	strbuf_add(out, head, sizeof(head));
	strbuf_addstr(out, name);
	if (len)
		strbuf_add(out, data, len);
}

static int by_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Frame regular file `entry` of `dfd` as `name`, in chunks: W ... W(LAST). */
static int send_file(int dfd, const char *entry, const char *name, const struct stat *st,
		     size_t max_file, struct strbuf *out, struct strbuf *err)
{
	static char buf[STREAM_MAX_DATA];
	int fd = openat(dfd, entry, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	uint64_t off = 0;

	if (fd < 0)
		return 0;	/* gone since the listing: the next scan says so */
	if ((size_t)st->st_size > max_file) {
		close(fd);
		strbuf_addf(err, "%s is over the %zu MB a host file may send", name, max_file >> 20);
		return -1;
	}
	for (;;) {
		ssize_t n = pread(fd, buf, sizeof(buf), (off_t)off);
		int last;

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			strbuf_addf(err, "cannot read %s: %s", name, strerror(errno));
			close(fd);
			return -1;
		}
		last = n == 0 || off + (uint64_t)n >= (uint64_t)st->st_size;
		stream_frame_add(out, STREAM_WRITE, last ? STREAM_LAST : 0, name, off, buf,
				 (size_t)n);
		off += (uint64_t)n;
		if (last || off > max_file)
			break;
	}
	close(fd);
	return 0;
}

/* Scan directory `sub` of host/ ("" for its top) and frame what is new. */
static int scan_dir(struct stream_sync *s, int host_fd, const char *sub, size_t max_file,
		    struct strbuf *out, struct strbuf *err, int *frames)
{
	int dfd = *sub ? openat(host_fd, sub, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC) :
			 openat(host_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	int lfd = dfd >= 0 ? dup(dfd) : -1, rc = 0;
	DIR *dir = lfd >= 0 ? fdopendir(lfd) : NULL;
	struct strlist names = STRLIST_INIT;
	struct dirent *e;

	if (!dir) {
		if (lfd >= 0)
			close(lfd);
		if (dfd >= 0)
			close(dfd);
		return 0;
	}
	while ((e = readdir(dir)))
		if (e->d_name[0] != '.')
			strlist_append(&names, e->d_name);
	closedir(dir);
	if (names.n)
		qsort(names.items, names.n, sizeof(*names.items), by_name);
	for (size_t i = 0; i < names.n && rc == 0; i++) {
		struct stat st;
		char name[STREAM_MAX_NAME + 1];
		struct stream_sent *t = NULL;

		if (fstatat(dfd, names.items[i], &st, AT_SYMLINK_NOFOLLOW) < 0 ||
		    !S_ISREG(st.st_mode))
			continue;	/* the wake FIFO, commands/ and files/ themselves */
		if ((size_t)snprintf(name, sizeof(name), "host/%s%s%s", sub, *sub ? "/" : "",
				     names.items[i]) >= sizeof(name) ||
		    !stream_name_ok(name, strlen(name), "host/"))
			continue;
		for (size_t k = 0; k < s->n && !t; k++)
			if (!strcmp(s->v[k].name, name))
				t = &s->v[k];
		if (t && t->ino == st.st_ino && t->size == st.st_size &&
		    t->mtime.tv_sec == st.st_mtim.tv_sec && t->mtime.tv_nsec == st.st_mtim.tv_nsec) {
			t->seen = 1;
			continue;
		}
		rc = send_file(dfd, names.items[i], name, &st, max_file, out, err);
		if (rc < 0)
			break;
		if (!t) {
			if (s->n == s->alloc) {
				s->alloc = s->alloc ? 2 * s->alloc : 16;
				s->v = xrealloc(s->v, s->alloc * sizeof(*s->v));
			}
			t = &s->v[s->n++];
			t->name = xstrdup(name);
		}
		t->ino = st.st_ino;
		t->size = st.st_size;
		t->mtime = st.st_mtim;
		t->seen = 1;
		(*frames)++;
	}
	strlist_release(&names);
	close(dfd);
	return rc;
}

int stream_sync_scan(struct stream_sync *s, int host_fd, size_t max_file, struct strbuf *out,
		     struct strbuf *err)
{
	static const char *const subs[] = { "", "files", "commands" };
	int frames = 0;

	for (size_t i = 0; i < s->n; i++)
		s->v[i].seen = 0;
	for (size_t i = 0; i < ARRAY_SIZE(subs); i++)
		if (scan_dir(s, host_fd, subs[i], max_file, out, err, &frames) < 0)
			return -1;
	for (size_t i = 0; i < s->n;) {
		if (s->v[i].seen) {
			i++;
			continue;
		}
		stream_frame_add(out, STREAM_DELETE, 0, s->v[i].name, 0, NULL, 0);
		frames++;
		free(s->v[i].name);
		s->v[i] = s->v[--s->n];
	}
	return frames;
}
