/*
 * The host part of the channel over a stream framed for the relay (stream_sync_scan,
 * engine/stream.h): the runner, files/, commands/ in that order, then only what changed (W)
 * or went (D); FIFOs and links in host/ skipped, a file over its cap refused, a file longer
 * than a frame's data in several frames. (The pump: test_stream.c.)
 */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fsutil.h"
#include "stream.h"
#include "stream_frame.h"
#include "util.h"
#include "../tap.h"

/* A temporary channel's host/ (commands/, files/). */
struct chan {
	char *dir;
	int host;
	struct strbuf err;
};

static void chan_open(struct chan *c)
{
	const char *base = getenv("TMPDIR");
	char *p;

	c->dir = xasprintf("%s/cellbox-sync-XXXXXX", base && *base ? base : "/tmp");
	if (!mkdtemp(c->dir)) {
		perror("mkdtemp");
		exit(1);
	}
	p = xasprintf("%s/host", c->dir);
	CHECK(mkdir(p, 0700) == 0);
	c->host = open(p, O_RDONLY | O_DIRECTORY);
	free(p);
	CHECK(mkdirat(c->host, "commands", 0700) == 0 && mkdirat(c->host, "files", 0700) == 0);
	strbuf_init(&c->err, 0);
}

static void chan_close(struct chan *c)
{
	strbuf_release(&c->err);
	close(c->host);
	fsutil_remove_tree(c->dir);
	free(c->dir);
}

/* Put `text` in host file `name` (below host/). */
static void hput(struct chan *c, const char *name, const char *text, size_t len)
{
	char *path = xasprintf("%s/host/%s", c->dir, name);
	CHECK(fsutil_write_atomic(path, text, len, 0600, NULL) == 0);
	free(path);
}

/* The frames in `sb` as "TYPE name@offset+len[L]" lines. */
static void list_frames(const struct strbuf *sb, struct strbuf *out)
{
	for (size_t at = 0; at + STREAM_HEAD <= sb->len;) {
		struct stream_head h;

		if (stream_head_get((const unsigned char *)sb->buf + at, &h) < 0) {
			strbuf_addstr(out, "BAD");
			return;
		}
		strbuf_addf(out, "%c %.*s@%llu+%u%s\n", h.type, (int)h.name_len,
			    sb->buf + at + STREAM_HEAD, (unsigned long long)h.offset, h.data_len,
			    h.flags & STREAM_LAST ? "L" : "");
		at += STREAM_HEAD + h.name_len + h.data_len;
	}
}

static int scan(struct stream_sync *y, struct chan *c, size_t max, struct strbuf *list)
{
	struct strbuf out = STRBUF_INIT;
	int n;

	strbuf_reset(list);
	strbuf_reset(&c->err);
	n = stream_sync_scan(y, c->host, max, &out, &c->err);
	list_frames(&out, list);
	strbuf_release(&out);
	return n;
}

/* The host part framed: the runner, files/, commands/; then only what changed or went. */
static void test_sync(void)
{
	struct chan c;
	struct stream_sync y;
	struct strbuf l = STRBUF_INIT;
	char *big = xmalloc(STREAM_MAX_DATA + 10);
	char *p;

	chan_open(&c);
	stream_sync_init(&y);
	hput(&c, "commands/1.json", "{}", 2);
	hput(&c, "files/a", "abc", 3);
	hput(&c, "runner.zip", "PK", 2);
	p = xasprintf("%s/host/wake", c.dir);
	CHECK(mkfifo(p, 0600) == 0);
	free(p);
	p = xasprintf("%s/host/files/fifo", c.dir);
	CHECK(mkfifo(p, 0600) == 0);
	free(p);
	CHECK(symlinkat("/etc/passwd", c.host, "link") == 0);
	CHECK(symlinkat("/etc/passwd", c.host, "files/link") == 0);
	CHECK(scan(&y, &c, 1 << 20, &l) == 3);
	CHECK_STR(l.buf, "W host/runner.zip@0+2L\nW host/files/a@0+3L\nW host/commands/1.json@0+2L\n");
	CHECK(scan(&y, &c, 1 << 20, &l) == 0);
	CHECK_STR(l.buf, "");
	hput(&c, "files/a", "abcdef", 6);
	CHECK(scan(&y, &c, 1 << 20, &l) == 1);
	CHECK_STR(l.buf, "W host/files/a@0+6L\n");
	CHECK(unlinkat(c.host, "commands/1.json", 0) == 0);
	CHECK(scan(&y, &c, 1 << 20, &l) == 1);
	CHECK_STR(l.buf, "D host/commands/1.json@0+0\n");
	CHECK(scan(&y, &c, 1 << 20, &l) == 0);
	/* a file over one frame's data goes in chunks, the last one LAST */
	memset(big, 'b', STREAM_MAX_DATA + 10);
	hput(&c, "files/big", big, STREAM_MAX_DATA + 10);
	CHECK(scan(&y, &c, 4u << 20, &l) == 1);	/* one file, two frames */
	CHECK_STR(l.buf, "W host/files/big@0+1048576\nW host/files/big@1048576+10L\n");
	/* an empty file is one LAST frame */
	hput(&c, "files/empty", "", 0);
	scan(&y, &c, 4u << 20, &l);
	CHECK_STR(l.buf, "W host/files/empty@0+0L\n");
	/* a file over max_file is an error */
	hput(&c, "files/z", "0123456789abcdef", 16);
	CHECK(scan(&y, &c, 10, &l) == -1);
	CHECK(strstr(c.err.buf, "host/files/z") != NULL);
	stream_sync_release(&y);
	strbuf_release(&l);
	free(big);
	chan_close(&c);
}

static const struct tap_test tests[] = {
	{ "scan", test_sync },
};

int main(int argc, char **argv)
{
	return tap_main(argc, argv, tests, ARRAY_SIZE(tests));
}
