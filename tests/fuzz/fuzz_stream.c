/*
 * libFuzzer target: the pump of the channel over a stream (engine/stream_pump.c), which takes
 * the relay's bytes (the kernel's: hostile) and writes the local channel's kernel part. Each
 * input is fed to a fresh pump on a temporary channel (made once, emptied after each input)
 * in chunks, and again whole to a second channel; both must end the same, and within the
 * pump's rules: only regular files, only in plots/ and out/ made, no results file made, no
 * file past STREAM_MAX_FILE, nothing outside the kernel part, the notes under their cap.
 *
 * An input: byte 0 flags (bit 0: the engine's 8-byte heads come first), bytes 1-4 the sizes
 * of the chunks, in turn (0: the rest at once), then the stream. Seeds: stream_seeds.py.
 * Built with -Dfuzz=true; run by scripts/fuzz.
 */
#include <dirent.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fsutil.h"
#include "stream.h"
#include "stream_frame.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *const sub[] = { "results", "plots", "out" };

struct chan {
	char path[64];
	int top, host, kernel, dir[3];	/* the channel, host/, kernel/{results,plots,out} */
};

static struct chan chans[2];
static int made;

static void fail(const char *what)
{
	fprintf(stderr, "fuzz_stream: %s\n", what);
	abort();
}

/* At the end of the run (not after a crash: the files are then the reproducer's witness). */
static void chans_remove(void)
{
	fsutil_remove_tree(chans[0].path);
	fsutil_remove_tree(chans[1].path);
}

static void chan_make(struct chan *c)
{
	snprintf(c->path, sizeof(c->path), "/tmp/cellbox-fuzz-stream-XXXXXX");
	if (!mkdtemp(c->path))
		fail("mkdtemp");
	c->top = open(c->path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (c->top < 0 || mkdirat(c->top, "kernel", 0700) < 0 || mkdirat(c->top, "host", 0700) < 0)
		fail("cannot make the channel");
	c->host = openat(c->top, "host", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	c->kernel = openat(c->top, "kernel", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	for (int i = 0; i < 3; i++) {
		if (mkdirat(c->kernel, sub[i], 0700) < 0)
			fail("cannot make the channel");
		c->dir[i] = openat(c->kernel, sub[i], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	}
}

/* Back to a fresh channel: ready, log and results/r1.jsonl (the host's) empty, no more. */
static void chan_reset(struct chan *c)
{
	for (int i = 0; i < 3; i++) {
		int fd = openat(c->dir[i], ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
		struct dirent *e;

		if (!d)
			fail("cannot list the channel");
		while ((e = readdir(d)))
			if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..") &&
			    unlinkat(c->dir[i], e->d_name, 0) < 0)
				fail("cannot empty the channel");
		closedir(d);
	}
	for (int i = 0; i < 3; i++) {
		static const char *const files[] = { "ready", "log", "results/r1.jsonl" };
		int fd = openat(c->kernel, files[i], O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC,
				0600);
		if (fd < 0)
			fail("cannot make the host's kernel files");
		close(fd);
	}
}

/* Entries of directory `dfd` but . and .., sorted, into `names` (at most `max`). */
static size_t list(int dfd, char names[][STREAM_MAX_NAME + 1], size_t max)
{
	int fd = openat(dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	struct dirent *e;
	size_t n = 0;

	if (!d)
		fail("cannot list the channel");
	while ((e = readdir(d)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) {
			if (n == max)
				fail("more entries than the input could make");
			snprintf(names[n++], STREAM_MAX_NAME + 1, "%s", e->d_name);
		}
	closedir(d);
	qsort(names, n, sizeof(names[0]), (int (*)(const void *, const void *))strcmp);
	return n;
}

/* The kernel part as one string, checking the pump's rules on the way. */
static void state(struct chan *c, const struct stream_pump *p, struct strbuf *out)
{
	static char names[9000][STREAM_MAX_NAME + 1];
	static char buf[1 << 16];
	unsigned files = 0;
	size_t n = list(c->top, names, 3);

	if (n != 2 || strcmp(names[0], "host") || strcmp(names[1], "kernel"))
		fail("something was made beside kernel/");
	if (list(c->host, names, 1) != 0)
		fail("something was made in host/");
	for (int i = -1; i < 3; i++) {
		int dfd = i < 0 ? c->kernel : c->dir[i];

		n = list(dfd, names, 9000);
		if (i < 0 && n != 5)
			fail("kernel/ holds more than ready, log, results, plots and out");
		if (i == 0 && (n != 1 || strcmp(names[0], "r1.jsonl")))
			fail("a results file was made");
		for (size_t k = 0; k < n; k++) {
			struct stat st;
			int fd;
			ssize_t got;

			if (fstatat(dfd, names[k], &st, AT_SYMLINK_NOFOLLOW) < 0)
				fail("stat");
			if (i < 0 && S_ISDIR(st.st_mode))
				continue;
			if (!S_ISREG(st.st_mode) || (uint64_t)st.st_size > STREAM_MAX_FILE)
				fail("not a regular file, or past STREAM_MAX_FILE");
			files += i > 0;
			fd = openat(dfd, names[k], O_RDONLY | O_CLOEXEC);
			got = fd >= 0 ? read(fd, buf, sizeof(buf)) : -1;
			if (fd >= 0)
				close(fd);
			strbuf_addf(out, "%d/%s:%lld:", i, names[k], (long long)st.st_size);
			if (got > 0)
				strbuf_add(out, buf, (size_t)got);
			strbuf_addch(out, ';');
		}
	}
	if (files != p->entries)
		fail("the count of files made is not the files there");
	if (p->notes.len >= STREAM_NOTES_MAX)
		fail("the notes past their cap");
	strbuf_addf(out, "|%s|%llu|%llu", p->notes.buf, (unsigned long long)p->pong,
		    p->frames);
}

static int run(struct chan *c, struct stream_pump *p, int muxed, const uint8_t *chunks,
	       const uint8_t *data, size_t size, struct strbuf *err)
{
	int rc = 0;

	chan_reset(c);
	stream_pump_init(p, c->kernel, c->dir[0], c->dir[1], c->dir[2], muxed);
	for (size_t at = 0, k = 0; at < size && rc == 0; k++) {
		size_t n = chunks ? chunks[k % 4] : 0;

		if (!n || n > size - at)
			n = size - at;
		rc = stream_pump_feed(p, data + at, n, err);
		at += n;
	}
	if (rc < 0 && !err->len)
		fail("a refusal without a reason");
	if (rc < 0 && stream_pump_feed(p, "", 0, err) == 0)
		fail("a broken pump took more");
	return rc;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct stream_pump pa, pb;
	struct strbuf ea = STRBUF_INIT, eb = STRBUF_INIT, sa = STRBUF_INIT, sb = STRBUF_INIT;
	int ra, rb, muxed;

	if (size < 5)
		return 0;
	if (!made) {
		chan_make(&chans[0]);
		chan_make(&chans[1]);
		atexit(chans_remove);
		made = 1;
	}
	muxed = data[0] & 1;
	ra = run(&chans[0], &pa, muxed, data + 1, data + 5, size - 5, &ea);
	rb = run(&chans[1], &pb, muxed, NULL, data + 5, size - 5, &eb);
	state(&chans[0], &pa, &sa);
	state(&chans[1], &pb, &sb);
	if (ra != rb)
		fail("fed in chunks and whole, the pump answered differently");
	if (sa.len != sb.len || memcmp(sa.buf, sb.buf, sa.len))
		fail("fed in chunks and whole, the pump left different files");
	stream_pump_release(&pa);
	stream_pump_release(&pb);
	strbuf_release(&ea);
	strbuf_release(&eb);
	strbuf_release(&sa);
	strbuf_release(&sb);
	return 0;
}
