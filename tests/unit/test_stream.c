/*
 * The pump of the channel over a stream (engine/stream.h), which takes the relay's bytes
 * (hostile: the kernel's) and writes the local channel's kernel part (the sync of the host
 * part: test_stream_sync.c). It is fed on a temporary channel with frames made here (and the engine's 8-byte stream heads), including ones no relay of
 * ours would send: refused names, heads over their caps, writes past a file's end or cap,
 * links and FIFOs planted where the pump writes, a stream cut at every byte.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fsutil.h"
#include "stream.h"
#include "stream_frame.h"
#include "util.h"
#include "../tap.h"

/* A temporary channel: kernel/ (ready, log), its results/ plots/ out/, and host/. */
struct chan {
	char *dir;
	int kernel, results, plots, out, host;
	struct stream_pump p;
	struct strbuf err;
};

static void chan_open(struct chan *c, int muxed)
{
	static const char *const dirs[] = { "kernel", "kernel/results", "kernel/plots",
					    "kernel/out", "host", "host/commands", "host/files" };
	const char *base = getenv("TMPDIR");

	c->dir = xasprintf("%s/cellbox-stream-XXXXXX", base && *base ? base : "/tmp");
	if (!mkdtemp(c->dir)) {
		perror("mkdtemp");
		exit(1);
	}
	for (size_t i = 0; i < ARRAY_SIZE(dirs); i++) {
		char *p = xasprintf("%s/%s", c->dir, dirs[i]);
		CHECK(mkdir(p, 0700) == 0);
		free(p);
	}
	c->kernel = open(c->dir, O_RDONLY | O_DIRECTORY);
	c->kernel = openat(c->kernel, "kernel", O_RDONLY | O_DIRECTORY);
	c->results = openat(c->kernel, "results", O_RDONLY | O_DIRECTORY);
	c->plots = openat(c->kernel, "plots", O_RDONLY | O_DIRECTORY);
	c->out = openat(c->kernel, "out", O_RDONLY | O_DIRECTORY);
	c->host = openat(c->kernel, "../host", O_RDONLY | O_DIRECTORY);
	/* the host makes ready and log, as the session does */
	close(openat(c->kernel, "ready", O_WRONLY | O_CREAT, 0600));
	close(openat(c->kernel, "log", O_WRONLY | O_CREAT, 0600));
	stream_pump_init(&c->p, c->kernel, c->results, c->plots, c->out, muxed);
	strbuf_init(&c->err, 0);
}

static void chan_close(struct chan *c)
{
	stream_pump_release(&c->p);
	strbuf_release(&c->err);
	close(c->kernel);
	close(c->results);
	close(c->plots);
	close(c->out);
	close(c->host);
	fsutil_remove_tree(c->dir);
	free(c->dir);
}

/* One frame, name of `nlen` bytes (may hold anything: a NUL, 256 bytes). */
static void frame(struct strbuf *sb, int type, const char *name, size_t nlen, uint64_t off,
		  const char *data, size_t len)
{
	unsigned char head[STREAM_HEAD];
	struct stream_head h = { .type = (unsigned char)type, .name_len = (unsigned)nlen,
				 .data_len = (uint32_t)len, .offset = off };

	stream_head_put(head, &h);
	strbuf_add(sb, head, sizeof(head));
	strbuf_add(sb, name, nlen);
	strbuf_add(sb, data, len);
}

/* An A frame of a string. */
static void append(struct strbuf *sb, const char *name, uint64_t off, const char *text)
{
	stream_frame_add(sb, STREAM_APPEND, 0, name, off, text, strlen(text));
}

/* The engine's head of a part of stream `kind` (1 stdout, 2 stderr), then the part. */
static void mux(struct strbuf *sb, int kind, const void *data, size_t len)
{
	unsigned char h[8] = { (unsigned char)kind, 0, 0, 0, (unsigned char)(len >> 24),
			       (unsigned char)(len >> 16), (unsigned char)(len >> 8),
			       (unsigned char)len };

	strbuf_add(sb, h, sizeof(h));
	strbuf_add(sb, data, len);
}

static int feed(struct chan *c, const struct strbuf *sb)
{
	return stream_pump_feed(&c->p, sb->buf, sb->len, &c->err);
}

/* What kernel file `name` (below kernel/) holds, or "<none>"; the caller frees it. */
static char *kfile(struct chan *c, const char *name)
{
	struct strbuf sb = STRBUF_INIT;
	char *path = xasprintf("%s/kernel/%s", c->dir, name);

	if (strbuf_read_file(&sb, path, 1 << 20) < 0) {
		strbuf_reset(&sb);
		strbuf_addstr(&sb, "<none>");
	}
	free(path);
	return strbuf_detach(&sb, NULL);
}

#define CHECK_KFILE(c, name, want)                                                           \
	do {                                                                                 \
		char *got_ = kfile((c), (name));                                             \
		CHECK_STR(got_, (want));                                                     \
		free(got_);                                                                  \
	} while (0)

/* Whether kernel file `name` exists (as anything, links not followed). */
static int kexists(struct chan *c, const char *name)
{
	struct stat st;

	return fstatat(c->kernel, name, &st, AT_SYMLINK_NOFOLLOW) == 0;
}

/* ready and log are appended to as the relay says, at the host's length. */
static void test_append_top(void)
{
	struct chan c;
	struct strbuf s = STRBUF_INIT;

	chan_open(&c, 0);
	append(&s, "kernel/ready", 0, "1\n");
	append(&s, "kernel/log", 0, "hello ");
	append(&s, "kernel/log", 6, "world");
	CHECK(feed(&c, &s) == 0);
	CHECK_KFILE(&c, "ready", "1\n");
	CHECK_KFILE(&c, "log", "hello world");
	CHECK(c.p.frames == 3);
	strbuf_release(&s);
	chan_close(&c);
}

/* A results file the host made is appended to; one it has not made (or removed) is not made. */
static void test_append_results(void)
{
	struct chan c;
	struct strbuf s = STRBUF_INIT;

	chan_open(&c, 0);
	close(openat(c.results, "r1.jsonl", O_WRONLY | O_CREAT, 0600));
	append(&s, "kernel/results/r1.jsonl", 0, "{\"a\":1}\n");
	append(&s, "kernel/results/r2.jsonl", 0, "{\"b\":2}\n");
	CHECK(feed(&c, &s) == 0);
	CHECK_KFILE(&c, "results/r1.jsonl", "{\"a\":1}\n");
	CHECK(!kexists(&c, "results/r2.jsonl"));
	strbuf_release(&s);
	chan_close(&c);
}

/* plots/ and out/ files are made by an A at offset 0, and only then. */
static void test_create_plots_out(void)
{
	struct chan c;
	struct strbuf s = STRBUF_INIT;

	chan_open(&c, 0);
	append(&s, "kernel/plots/1.png", 0, "PNG");
	append(&s, "kernel/plots/1.png", 3, "!");
	append(&s, "kernel/plots/2.png", 5, "late");
	append(&s, "kernel/out/a.csv", 0, "x,y\n");
	append(&s, "kernel/out/b.csv", 1, "x");
	CHECK(feed(&c, &s) == 0);
	CHECK_KFILE(&c, "plots/1.png", "PNG!");
	CHECK_KFILE(&c, "out/a.csv", "x,y\n");
	CHECK(!kexists(&c, "plots/2.png"));
	CHECK(!kexists(&c, "out/b.csv"));
	CHECK(c.p.entries == 2);
	strbuf_release(&s);
	chan_close(&c);
}

/* A name that is not a kernel file's the relay may write stops the stream; nothing made. */
static void test_names_refused(void)
{
	static const struct { const char *name; size_t len; } names[] = {
		{ "kernel/x", 8 }, { "kernel/plots/a/b", 16 }, { "kernel/plots/../x", 17 },
		{ "kernel/../host/x", 16 }, { "../x", 4 }, { "kernel/.hidden", 14 },
		{ "kernel/plots/.hidden", 20 }, { "host/commands/x", 15 }, { "", 0 },
		{ "kernel/plots/\xc3\xa9", 15 }, { "kernel/plots/a\0b", 16 },
		{ "kernel/results", 14 }, { "kernel/plots/", 13 }, { "/kernel/log", 11 },
		{ "kernel//log", 11 }, { "kernel/plots/a b", 16 },
	};
	char big[300];

	for (size_t i = 0; i <= ARRAY_SIZE(names); i++) {
		struct chan c;
		struct strbuf s = STRBUF_INIT;
		const char *name = i < ARRAY_SIZE(names) ? names[i].name : big;
		size_t len = i < ARRAY_SIZE(names) ? names[i].len : 256;
		int rc;

		if (i == ARRAY_SIZE(names)) {	/* 256 bytes, one past the cap */
			memcpy(big, "kernel/plots/", 13);
			memset(big + 13, 'a', sizeof(big) - 13);
		}
		chan_open(&c, 0);
		frame(&s, STREAM_APPEND, name, len, 0, "x", 1);
		rc = feed(&c, &s);
		CHECK(rc == -1);
		if (rc != -1)
			printf("# taken: name %zu '%.*s'\n", i, (int)len, name);
		CHECK(c.err.len > 0);
		CHECK(!kexists(&c, "x") && !kexists(&c, "plots/a") && !kexists(&c, "../x"));
		CHECK(!kexists(&c, "../host/commands/x") && !kexists(&c, "plots/.hidden"));
		strbuf_release(&s);
		chan_close(&c);
	}
}

/* A head with a length over its cap is refused before its body is waited for. */
static void test_head_caps(void)
{
	for (int i = 0; i < 2; i++) {
		struct chan c;
		unsigned char head[STREAM_HEAD];
		struct stream_head h = { .type = STREAM_APPEND,
					 .name_len = i ? 10 : STREAM_MAX_NAME + 1,
					 .data_len = i ? STREAM_MAX_DATA + 1 : 1 };

		chan_open(&c, 0);
		stream_head_put(head, &h);
		CHECK(stream_pump_feed(&c.p, head, sizeof(head), &c.err) == -1);
		CHECK(strstr(c.err.buf, "caps") != NULL);
		chan_close(&c);
	}
}

/* A type the relay does not send (an unknown one, or the host's own W) stops the stream. */
static void test_unknown_type(void)
{
	static const int types[] = { 'Z', 0, STREAM_WRITE, STREAM_DELETE, STREAM_START };

	for (size_t i = 0; i < ARRAY_SIZE(types); i++) {
		struct chan c;
		struct strbuf s = STRBUF_INIT;

		chan_open(&c, 0);
		frame(&s, types[i], "kernel/log", 10, 0, "x", 1);
		CHECK(feed(&c, &s) == -1);
		CHECK_KFILE(&c, "log", "");
		strbuf_release(&s);
		chan_close(&c);
	}
}

/* After a broken frame the pump takes nothing more, even good frames in a later feed. */
static void test_broken_stays(void)
{
	struct chan c;
	struct strbuf s = STRBUF_INIT;

	chan_open(&c, 0);
	frame(&s, 'Z', "kernel/log", 10, 0, "x", 1);
	CHECK(feed(&c, &s) == -1);
	strbuf_reset(&s);
	append(&s, "kernel/log", 0, "after");
	CHECK(feed(&c, &s) == -1);
	CHECK_KFILE(&c, "log", "");
	strbuf_release(&s);
	chan_close(&c);

	chan_open(&c, 1);	/* and a broken engine head */
	strbuf_init(&s, 0);
	mux(&s, 3, "abc", 3);
	CHECK(feed(&c, &s) == -1);
	strbuf_reset(&s);
	CHECK(stream_pump_feed(&c.p, "zz", 2, &c.err) == -1);
	CHECK(c.p.notes.len == 0);
	strbuf_release(&s);
	chan_close(&c);
}

/* An A past the host's end of the file (a hole) is refused. */
static void test_offset_past_end(void)
{
	struct chan c;
	struct strbuf s = STRBUF_INIT;

	chan_open(&c, 0);
	append(&s, "kernel/plots/a", 0, "abc");
	append(&s, "kernel/plots/a", 3, "d");
	CHECK(feed(&c, &s) == 0);
	strbuf_reset(&s);
	append(&s, "kernel/plots/a", 5, "x");
	CHECK(feed(&c, &s) == -1);
	CHECK(strstr(c.err.buf, "past the end") != NULL);
	CHECK_KFILE(&c, "plots/a", "abcd");
	strbuf_release(&s);
	chan_close(&c);
}

/* No file grows past STREAM_MAX_FILE (a sparse one just under it, as if the relay sent it). */
static void test_file_cap(void)
{
	struct chan c;
	struct strbuf s = STRBUF_INIT;
	int fd;
	struct stat st;

	chan_open(&c, 0);
	fd = openat(c.plots, "big", O_WRONLY | O_CREAT, 0600);
	CHECK(fd >= 0 && ftruncate(fd, (off_t)STREAM_MAX_FILE - 2) == 0);
	close(fd);
	append(&s, "kernel/plots/big", STREAM_MAX_FILE - 2, "ab");
	CHECK(feed(&c, &s) == 0);
	strbuf_reset(&s);
	append(&s, "kernel/plots/big", STREAM_MAX_FILE, "c");
	CHECK(feed(&c, &s) == -1);
	CHECK(fstatat(c.plots, "big", &st, 0) == 0 && (uint64_t)st.st_size == STREAM_MAX_FILE);
	strbuf_release(&s);
	chan_close(&c);

	/* an offset near 2^64: no wrap around the cap */
	chan_open(&c, 0);
	strbuf_init(&s, 0);
	append(&s, "kernel/log", UINT64_MAX, "x");
	CHECK(feed(&c, &s) == -1);
	CHECK_KFILE(&c, "log", "");
	strbuf_release(&s);
	chan_close(&c);
}

/* At most STREAM_MAX_ENTRIES files made in plots/ and out/; a removal makes room. */
static void test_entries_cap(void)
{
	struct chan c;
	struct strbuf s = STRBUF_INIT;
	char name[64];

	chan_open(&c, 0);
	for (int i = 0; i < STREAM_MAX_ENTRIES; i++) {
		snprintf(name, sizeof(name), "kernel/%s/%d", i % 2 ? "out" : "plots", i);
		stream_frame_add(&s, STREAM_APPEND, 0, name, 0, NULL, 0);
	}
	CHECK(feed(&c, &s) == 0);
	CHECK(c.p.entries == STREAM_MAX_ENTRIES);
	strbuf_reset(&s);
	append(&s, "kernel/plots/one-more", 0, "x");
	CHECK(feed(&c, &s) == -1);
	CHECK(strstr(c.err.buf, "more than") != NULL);
	CHECK(!kexists(&c, "plots/one-more"));
	chan_close(&c);

	chan_open(&c, 0);	/* the same count with X between */
	strbuf_reset(&s);
	for (int i = 0; i < STREAM_MAX_ENTRIES; i++) {
		snprintf(name, sizeof(name), "kernel/plots/%d", i);
		stream_frame_add(&s, STREAM_APPEND, 0, name, 0, NULL, 0);
	}
	stream_frame_add(&s, STREAM_REMOVED, 0, "kernel/plots/7", 0, NULL, 0);
	append(&s, "kernel/plots/one-more", 0, "x");
	CHECK(feed(&c, &s) == 0);
	CHECK_KFILE(&c, "plots/one-more", "x");
	strbuf_release(&s);
	chan_close(&c);
}

static void on_alarm(int sig)
{
	(void)sig;
	static const char msg[] = "not ok - the pump blocked\n";
	if (write(1, msg, sizeof(msg) - 1) < 0)
		_exit(2);
	_exit(1);
}

/*
 * A link, FIFO, directory or hard link where the pump writes (as if one got there): never
 * followed, never waited on; the A refused, what it points at untouched.
 */
static void test_planted(void)
{
	static const char *const kinds[] = { "symlink", "dangling", "fifo", "fifo-read", "dir",
					     "hardlink" };

	signal(SIGALRM, on_alarm);
	alarm(10);
	for (size_t i = 0; i < ARRAY_SIZE(kinds); i++) {
		struct chan c;
		struct strbuf s = STRBUF_INIT;
		char *victim, *fifo;
		int rd = -1;
		char buf[8];

		chan_open(&c, 0);
		victim = xasprintf("%s/victim", c.dir);
		fifo = xasprintf("%s/kernel/plots/p", c.dir);
		close(open(victim, O_WRONLY | O_CREAT, 0600));
		switch (i) {
		case 0: CHECK(symlinkat(victim, c.plots, "p") == 0); break;
		case 1: CHECK(symlinkat("../nothing-here", c.plots, "p") == 0); break;
		case 2: CHECK(mkfifo(fifo, 0600) == 0); break;
		case 3:
			CHECK(mkfifo(fifo, 0600) == 0);
			rd = open(fifo, O_RDONLY | O_NONBLOCK);
			break;
		case 4: CHECK(mkdirat(c.plots, "p", 0700) == 0); break;
		case 5: CHECK(link(victim, fifo) == 0); break;
		}
		append(&s, "kernel/plots/p", 0, "owned");
		CHECK(feed(&c, &s) == -1);
		CHECK(strstr(c.err.buf, "not a plain file") != NULL);
		CHECK_KFILE(&c, "../victim", "");
		CHECK(!kexists(&c, "nothing-here"));
		if (rd >= 0) {
			CHECK(read(rd, buf, sizeof(buf)) <= 0);
			close(rd);
		}
		/* T and X on it: no block, nothing followed (X takes the link itself) */
		stream_pump_release(&c.p);
		stream_pump_init(&c.p, c.kernel, c.results, c.plots, c.out, 0);
		strbuf_reset(&s);
		stream_frame_add(&s, STREAM_TRUNCATE, 0, "kernel/plots/p", 0, NULL, 0);
		stream_frame_add(&s, STREAM_REMOVED, 0, "kernel/plots/p", 0, NULL, 0);
		CHECK(feed(&c, &s) == 0);
		CHECK(access(victim, F_OK) == 0);
		CHECK(i == 4 || !kexists(&c, "plots/p"));
		free(victim);
		free(fifo);
		strbuf_release(&s);
		chan_close(&c);
	}
	alarm(0);
	{	/* T on a results file cuts only it, not through a link to the victim */
		struct chan c;
		struct strbuf s = STRBUF_INIT;
		char *victim;

		chan_open(&c, 0);
		victim = xasprintf("%s/victim", c.dir);
		CHECK(fsutil_write_atomic(victim, "keep", 4, 0600, NULL) == 0);
		CHECK(symlinkat(victim, c.results, "r.jsonl") == 0);
		stream_frame_add(&s, STREAM_TRUNCATE, 0, "kernel/results/r.jsonl", 0, NULL, 0);
		CHECK(feed(&c, &s) == 0);
		CHECK_KFILE(&c, "../victim", "keep");
		free(victim);
		strbuf_release(&s);
		chan_close(&c);
	}
}

/* X removes in plots/ and out/ only; ready, log and results files stay. */
static void test_remove(void)
{
	static const char *const names[] = { "kernel/ready", "kernel/log",
					     "kernel/results/r.jsonl", "kernel/plots/a",
					     "kernel/out/b" };
	struct chan c;
	struct strbuf s = STRBUF_INIT;

	chan_open(&c, 0);
	close(openat(c.results, "r.jsonl", O_WRONLY | O_CREAT, 0600));
	append(&s, "kernel/plots/a", 0, "a");
	append(&s, "kernel/out/b", 0, "b");
	for (size_t i = 0; i < ARRAY_SIZE(names); i++)
		stream_frame_add(&s, STREAM_REMOVED, 0, names[i], 0, NULL, 0);
	stream_frame_add(&s, STREAM_REMOVED, 0, "kernel/plots/never", 0, NULL, 0);
	CHECK(feed(&c, &s) == 0);
	CHECK(kexists(&c, "ready") && kexists(&c, "log") && kexists(&c, "results/r.jsonl"));
	CHECK(!kexists(&c, "plots/a") && !kexists(&c, "out/b"));
	CHECK(kexists(&c, "plots") && kexists(&c, "out"));
	CHECK(c.p.entries == 0);
	strbuf_release(&s);
	chan_close(&c);
}

/* T cuts a file to its offset (never lengthens it). */
static void test_truncate(void)
{
	struct chan c;
	struct strbuf s = STRBUF_INIT;

	chan_open(&c, 0);
	append(&s, "kernel/log", 0, "hello");
	stream_frame_add(&s, STREAM_TRUNCATE, 0, "kernel/log", 2, NULL, 0);
	stream_frame_add(&s, STREAM_TRUNCATE, 0, "kernel/log", 100, NULL, 0);
	append(&s, "kernel/log", 2, "y");
	stream_frame_add(&s, STREAM_TRUNCATE, 0, "kernel/plots/none", 0, NULL, 0);
	CHECK(feed(&c, &s) == 0);
	CHECK_KFILE(&c, "log", "hey");
	CHECK(!kexists(&c, "plots/none"));
	strbuf_release(&s);
	chan_close(&c);
}

/* P records the answer's offset (whatever name it carries). */
static void test_ping(void)
{
	struct chan c;
	struct strbuf s = STRBUF_INIT;

	chan_open(&c, 0);
	stream_frame_add(&s, STREAM_PING, 0, "", 42, NULL, 0);
	CHECK(feed(&c, &s) == 0);
	CHECK(c.p.pong == 42);
	strbuf_reset(&s);
	frame(&s, STREAM_PING, "../\0x", 5, 7, "zz", 2);
	CHECK(feed(&c, &s) == 0);
	CHECK(c.p.pong == 7);
	strbuf_release(&s);
	chan_close(&c);
}

/* A stream of every kind of frame, in the engine's parts (stdout and stderr). */
static void rich_stream(struct strbuf *out)
{
	struct strbuf r = STRBUF_INIT;
	char big[70000];

	memset(big, 'q', sizeof(big));
	append(&r, "kernel/ready", 0, "1\n");
	append(&r, "kernel/log", 0, "log line\n");
	append(&r, "kernel/results/r1.jsonl", 0, "{\"type\":\"stream\"}\n");
	append(&r, "kernel/plots/1.png", 0, "\x89PNG");
	stream_frame_add(&r, STREAM_APPEND, 0, "kernel/plots/1.png", 4, big, sizeof(big));
	append(&r, "kernel/out/o.txt", 0, "out");
	stream_frame_add(&r, STREAM_TRUNCATE, 0, "kernel/out/o.txt", 1, NULL, 0);
	append(&r, "kernel/plots/2.png", 0, "gone");
	stream_frame_add(&r, STREAM_REMOVED, 0, "kernel/plots/2.png", 0, NULL, 0);
	stream_frame_add(&r, STREAM_PING, 0, "", 99, NULL, 0);
	/* cut into parts at places that do not follow the frames */
	for (size_t at = 0, k = 0; at < r.len; k++) {
		size_t n = r.len - at < 5 + 37 * k ? r.len - at : 5 + 37 * k;
		mux(out, 1, r.buf + at, n);
		at += n;
		if (k % 3 == 0)
			mux(out, 2, "warn ", 5);
	}
	mux(out, 1, "", 0);
	strbuf_release(&r);
}

/* What the channel's kernel part holds, as one string to compare. */
static void kernel_state(struct chan *c, struct strbuf *out)
{
	static const char *const names[] = { "ready", "log", "results/r1.jsonl", "plots/1.png",
					     "plots/2.png", "out/o.txt" };

	for (size_t i = 0; i < ARRAY_SIZE(names); i++) {
		char *t = kfile(c, names[i]);
		strbuf_addf(out, "%s=%zu:%s;", names[i], strlen(t), t);
		free(t);
	}
	strbuf_addf(out, "notes=%s;pong=%llu;entries=%u;frames=%llu", c->p.notes.buf,
		    (unsigned long long)c->p.pong, c->p.entries, c->p.frames);
}

/* The stream fed a byte at a time leaves what it leaves fed whole. */
static void test_byte_split(void)
{
	struct chan a, b;
	struct strbuf s = STRBUF_INIT, sa = STRBUF_INIT, sb = STRBUF_INIT;

	rich_stream(&s);
	chan_open(&a, 1);
	chan_open(&b, 1);
	close(openat(a.results, "r1.jsonl", O_WRONLY | O_CREAT, 0600));
	close(openat(b.results, "r1.jsonl", O_WRONLY | O_CREAT, 0600));
	CHECK(feed(&a, &s) == 0);
	for (size_t i = 0; i < s.len; i++)
		if (stream_pump_feed(&b.p, s.buf + i, 1, &b.err) < 0) {
			CHECK(!"a byte refused");
			break;
		}
	kernel_state(&a, &sa);
	kernel_state(&b, &sb);
	CHECK_STR(sb.buf, sa.buf);
	CHECK(strstr(sa.buf, "plots/1.png=70004:") != NULL);
	CHECK(strstr(sa.buf, "out/o.txt=1:o;") != NULL);
	CHECK(strstr(sa.buf, "pong=99;entries=2;frames=10") != NULL);
	CHECK(a.p.frame.len == 0 && b.p.frame.len == 0);
	strbuf_release(&s);
	strbuf_release(&sa);
	strbuf_release(&sb);
	chan_close(&a);
	chan_close(&b);
}

/* stderr goes to the notes, which keep their first bytes up to STREAM_NOTES_MAX. */
static void test_notes(void)
{
	struct chan c;
	struct strbuf s = STRBUF_INIT;
	char text[STREAM_NOTES_MAX + 500];

	for (size_t i = 0; i < sizeof(text); i++)
		text[i] = (char)('a' + i % 26);
	chan_open(&c, 1);
	mux(&s, 2, "start ", 6);
	mux(&s, 2, text, sizeof(text));
	mux(&s, 2, "end", 3);
	CHECK(feed(&c, &s) == 0);
	CHECK(c.p.notes.len < STREAM_NOTES_MAX);
	CHECK(c.p.notes.len >= STREAM_NOTES_MAX - 1);
	CHECK(!strncmp(c.p.notes.buf, "start abc", 9));
	CHECK(!memcmp(c.p.notes.buf + 6, text, c.p.notes.len - 6));
	CHECK(!kexists(&c, "plots/start"));
	strbuf_release(&s);
	chan_close(&c);
}

/* An engine head of a part that is neither stdout nor stderr stops the stream. */
static void test_mux_kind(void)
{
	static const int kinds[] = { 0, 3, 255 };

	for (size_t i = 0; i < ARRAY_SIZE(kinds); i++) {
		struct chan c;
		struct strbuf s = STRBUF_INIT, r = STRBUF_INIT;

		chan_open(&c, 1);
		append(&r, "kernel/log", 0, "x");
		mux(&s, kinds[i], r.buf, r.len);
		CHECK(feed(&c, &s) == -1);
		CHECK(strstr(c.err.buf, "kind") != NULL);
		CHECK_KFILE(&c, "log", "");
		strbuf_release(&s);
		strbuf_release(&r);
		chan_close(&c);
	}
}

static const struct tap_test tests[] = {
	{ "append_top", test_append_top },
	{ "append_results", test_append_results },
	{ "create_plots_out", test_create_plots_out },
	{ "names_refused", test_names_refused },
	{ "head_caps", test_head_caps },
	{ "unknown_type", test_unknown_type },
	{ "broken_stays", test_broken_stays },
	{ "offset_past_end", test_offset_past_end },
	{ "file_cap", test_file_cap },
	{ "entries_cap", test_entries_cap },
	{ "planted", test_planted },
	{ "remove", test_remove },
	{ "truncate", test_truncate },
	{ "ping", test_ping },
	{ "byte_split", test_byte_split },
	{ "notes", test_notes },
	{ "mux_kind", test_mux_kind },
};

int main(int argc, char **argv)
{
	return tap_main(argc, argv, tests, ARRAY_SIZE(tests));
}
