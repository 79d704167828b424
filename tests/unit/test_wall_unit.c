/*
 * Unit tests of what reads the kernel's side: the event reader, the wall's file checks (links,
 * FIFOs, sizes, ownership) on real files, and the channel's taking of plots and copy-out
 * files. The channel's parts and wake-up: test_channel_unit.c.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "channel.h"
#include "util.h"
#include "wall.h"
#include "../tap.h"

static int lines_seen;
static char last_line[64];
static size_t dropped;

static int count_line(const char *line, size_t len, void *data)
{
	(void)data;
	lines_seen++;
	if (!line) {
		dropped = len;
		return 0;
	}
	snprintf(last_line, sizeof(last_line), "%.*s", (int)len, line);
	return 0;
}

static void test_event_reader(void)
{
	char path[] = "/tmp/cellbox-unit-XXXXXX";
	int fd = mkstemp(path);
	struct event_reader r;
	char big[300];

	CHECK(fd >= 0);
	channel_reader_init(&r, open(path, O_RDWR | O_CLOEXEC), 256);
	CHECK(channel_reader_poll(&r, 1 << 20, count_line, NULL) == 0);
	CHECK(write(fd, "{\"a\":1}\n{\"b\"", 12) == 12);
	CHECK(channel_reader_poll(&r, 1 << 20, count_line, NULL) == 1);
	CHECK_STR(last_line, "{\"a\":1}");
	CHECK(write(fd, ":2}\n", 4) == 4);	/* the rest of a half-written line */
	CHECK(channel_reader_poll(&r, 1 << 20, count_line, NULL) == 1);
	CHECK_STR(last_line, "{\"b\":2}");
	memset(big, 'x', sizeof(big));
	CHECK(write(fd, big, sizeof(big)) == (ssize_t)sizeof(big));
	CHECK(write(fd, "\nok\n", 4) == 4);
	lines_seen = 0;
	channel_reader_poll(&r, 1 << 20, count_line, NULL);
	CHECK(lines_seen == 2 && dropped == sizeof(big));
	CHECK_STR(last_line, "ok");
	/* A budget: one poll reads at most that much, and says there is more. */
	for (int i = 0; i < 100; i++)
		CHECK(write(fd, "{\"c\":3}\n", 8) == 8);
	lines_seen = 0;
	channel_reader_poll(&r, 64, count_line, NULL);
	CHECK(r.more && lines_seen < 100);
	while (r.more)
		channel_reader_poll(&r, 64, count_line, NULL);
	CHECK(lines_seen == 100);
	/* Truncated under us: noticed, and what is appended after that is read. */
	CHECK(ftruncate(fd, 0) == 0);
	CHECK(lseek(fd, 0, SEEK_SET) == 0);
	channel_reader_poll(&r, 1 << 20, count_line, NULL);
	CHECK(r.truncated);
	CHECK(write(fd, "{\"d\":4}\n", 8) == 8);
	channel_reader_poll(&r, 1 << 20, count_line, NULL);
	CHECK_STR(last_line, "{\"d\":4}");
	channel_reader_release(&r);
	close(fd);
	unlink(path);
}

static void test_event_reader_punch(void)
{
	char path[] = "/tmp/cellbox-unit-XXXXXX";
	int fd = mkstemp(path);
	struct event_reader r;
	char line[1024];
	struct stat st;

	CHECK(fd >= 0);
	memset(line, 'y', sizeof(line));
	line[sizeof(line) - 1] = '\n';
	for (int i = 0; i < 4096; i++)	/* 4 MB of lines */
		CHECK(write(fd, line, sizeof(line)) == (ssize_t)sizeof(line));
	channel_reader_init(&r, open(path, O_RDWR | O_CLOEXEC), 4096);
	lines_seen = 0;
	while (channel_reader_poll(&r, 1 << 20, count_line, NULL) > 0)
		;
	CHECK(lines_seen == 4096);
	/* What was read no longer takes disk space (where punching works: ext4, tmpfs). */
	CHECK(fstat(fd, &st) == 0);
	CHECK(st.st_size == 4096 * 1024);
	CHECK((long long)st.st_blocks * 512 < (1 << 20) + 65536);
	channel_reader_release(&r);
	close(fd);
	unlink(path);
}

/* Make a file `name` in `dir` with `text`. */
static void make_file(const char *dir, const char *name, const char *text)
{
	char *p = xasprintf("%s/%s", dir, name);
	int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0600);

	CHECK(fd >= 0 && fsutil_write_all(fd, text, strlen(text)) == 0);
	close(fd);
	free(p);
}

static void test_wall_open(void)
{
	char dir[] = "/tmp/cellbox-unit-wall-XXXXXX";
	struct strbuf why = STRBUF_INIT, got = STRBUF_INIT;
	char *p, *q;
	int at, fd;

	CHECK(mkdtemp(dir) != NULL);
	at = open(dir, O_RDONLY | O_DIRECTORY);
	make_file(dir, "plain", "0123456789");
	fd = wall_open(at, "plain", geteuid(), 100, &why);
	CHECK(fd >= 0);
	CHECK(wall_read(fd, 100, &got, &why) == 0);
	CHECK_STR(got.buf, "0123456789");
	close(fd);
	/* Each rule, and the words that say which. */
	CHECK(wall_open(at, "plain", geteuid(), 5, &why) < 0);
	CHECK(strstr(why.buf, "over its cap") != NULL);
	strbuf_reset(&why);
	CHECK(wall_open(at, "plain", geteuid() + 1, 100, &why) < 0);
	CHECK(strstr(why.buf, "belongs to uid") != NULL);
	strbuf_reset(&why);
	p = xasprintf("%s/plain", dir);
	q = xasprintf("%s/link", dir);
	CHECK(symlink(p, q) == 0);
	CHECK(wall_open(at, "link", geteuid(), 100, &why) < 0);
	CHECK(strstr(why.buf, "a symbolic link") != NULL);
	strbuf_reset(&why);
	free(q);
	q = xasprintf("%s/hard", dir);
	CHECK(link(p, q) == 0);
	CHECK(wall_open(at, "hard", geteuid(), 100, &why) < 0);
	CHECK(strstr(why.buf, "2 links") != NULL);
	strbuf_reset(&why);
	free(q);
	q = xasprintf("%s/fifo", dir);
	CHECK(mkfifo(q, 0600) == 0);
	CHECK(wall_open(at, "fifo", geteuid(), 100, &why) < 0);	/* at once, no writer needed */
	CHECK(strstr(why.buf, "a FIFO") != NULL);
	strbuf_reset(&why);
	CHECK(wall_open(at, "../plain", geteuid(), 100, &why) < 0);
	CHECK(wall_open(at, "missing", geteuid(), 100, &why) < 0);
	CHECK(strstr(why.buf, "does not exist") != NULL);
	free(p);
	free(q);
	close(at);
	fsutil_remove_tree(dir);
	CHECK(access(dir, F_OK) < 0);
	strbuf_release(&why);
	strbuf_release(&got);
}

static void test_remove_tree_no_follow(void)
{
	char outside[] = "/tmp/cellbox-unit-out-XXXXXX", dir[] = "/tmp/cellbox-unit-rm-XXXXXX";
	char *sub, *link_path, *kept;

	CHECK(mkdtemp(outside) != NULL && mkdtemp(dir) != NULL);
	make_file(outside, "precious", "keep me");
	sub = xasprintf("%s/sub", dir);
	CHECK(mkdir(sub, 0700) == 0);
	link_path = xasprintf("%s/sub/to-outside", dir);
	CHECK(symlink(outside, link_path) == 0);	/* a link to a directory, inside the tree */
	fsutil_remove_tree(dir);
	CHECK(access(dir, F_OK) < 0);
	kept = xasprintf("%s/precious", outside);
	CHECK(access(kept, F_OK) == 0);			/* not followed */
	/* A tree that is itself a link (a channel a kernel swapped): the link goes, not its target. */
	CHECK(mkdir(dir, 0700) == 0);
	free(link_path);
	link_path = xasprintf("%s/channel", dir);
	CHECK(symlink(outside, link_path) == 0);
	fsutil_remove_tree(link_path);
	CHECK(access(link_path, F_OK) < 0 && errno == ENOENT);
	CHECK(access(kept, F_OK) == 0);
	fsutil_remove_tree(dir);
	fsutil_remove_tree(outside);
	free(sub);
	free(link_path);
	free(kept);
}

static void test_wall_own_dir(void)
{
	char base[] = "/tmp/cellbox-unit-own-XXXXXX";
	struct strbuf err = STRBUF_INIT;
	char *p, *q;

	CHECK(mkdtemp(base) != NULL);
	p = xasprintf("%s/a/b/c", base);
	CHECK(wall_own_dir(p, 1, &err) == 0);		/* made, with its parents */
	tap_note(err.buf);
	CHECK(wall_own_dir(p, 0, &err) == 0);		/* and accepted as it is */
	CHECK(chmod(p, 0755) == 0);
	CHECK(wall_own_dir(p, 1, &err) < 0);
	CHECK(strstr(err.buf, "has mode 0755") != NULL);
	strbuf_reset(&err);
	CHECK(chmod(p, 0700) == 0);
	q = xasprintf("%s/link", base);
	CHECK(symlink(p, q) == 0);
	CHECK(wall_own_dir(q, 1, &err) < 0);		/* the directory itself may not be a link */
	CHECK(strstr(err.buf, "symbolic link") != NULL);
	strbuf_reset(&err);
	if (geteuid() == 0) {
		/* Another user's: refused, not used (what /tmp/cellbox-UID made first looks like). */
		CHECK(chown(p, 4242, 4242) == 0);
		CHECK(wall_own_dir(p, 1, &err) < 0);
		CHECK(strstr(err.buf, "belongs to uid 4242") != NULL);
		strbuf_reset(&err);
		CHECK(chown(p, 0, 0) == 0);
		/* A parent others may write (and not sticky): refused. */
		free(q);
		q = xasprintf("%s/a", base);
		CHECK(chmod(q, 0777) == 0);
		CHECK(wall_own_dir(p, 1, &err) < 0);
		CHECK(strstr(err.buf, "may be written by others") != NULL);
		CHECK(chmod(q, 01777) == 0);			/* sticky, as /tmp: fine */
		strbuf_reset(&err);
		CHECK(wall_own_dir(p, 1, &err) == 0);
	}
	fsutil_remove_tree(base);
	free(p);
	free(q);
	strbuf_release(&err);
}

static void test_wall_png(void)
{
	static const unsigned char ok[33] = {
		0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n', 0, 0, 0, 13, 'I', 'H', 'D', 'R',
		0, 0, 2, 0x80, 0, 0, 1, 0xe0, 8, 2, 0, 0, 0,
	};
	unsigned char bad[33];
	struct strbuf why = STRBUF_INIT;
	int w, h;

	CHECK(wall_png_check(ok, sizeof(ok), 16384, 100000000ull, &w, &h, &why) == 0);
	CHECK(w == 640 && h == 480);
	CHECK(wall_png_check("GIF89a", 6, 16384, 100000000ull, &w, &h, &why) < 0);
	CHECK(strstr(why.buf, "no PNG signature") != NULL);
	memcpy(bad, ok, sizeof(bad));
	bad[18] = 0xff;		/* 65 million pixels wide */
	strbuf_reset(&why);
	CHECK(wall_png_check(bad, sizeof(bad), 16384, 100000000ull, &w, &h, &why) < 0);
	CHECK(strstr(why.buf, "outside") != NULL);
	memcpy(bad, ok, sizeof(bad));
	bad[12] = 'X';
	strbuf_reset(&why);
	CHECK(wall_png_check(bad, sizeof(bad), 16384, 100000000ull, &w, &h, &why) < 0);
	strbuf_release(&why);
}

/*
 * The one check of a file a kernel names (plots, artifacts): channel_take_file(). Events hand
 * on the kernel's name unchecked (event.h), the UI and the printer no longer look for "..":
 * so this alone must refuse a parent or absolute path, a link, a FIFO, a hard link, a lie
 * about the format, and hand on exactly the bytes it checked.
 */
static void test_take_file_hostile(void)
{
	static const unsigned char png[33] = {
		0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n', 0, 0, 0, 13, 'I', 'H', 'D', 'R',
		0, 0, 2, 0x80, 0, 0, 1, 0xe0, 8, 2, 0, 0, 0,
	};
	static const char *const bad_names[] = {
		"plots/../x.png", "plots/../../plots/1.png", "plots/sub/1.png", "plots/../ready",
		"../plots/1.png", "plots/../../x.png", "/etc/passwd",
		"plots/1.png/..", "plots/./1.png", "plots/1", "plots/.png", "plots/1.png ",
		"results/1.png", "", NULL,
	};
	struct channel ch;
	struct strbuf err = STRBUF_INIT, why = STRBUF_INIT, data = STRBUF_INIT;
	char root[] = "/tmp/cellbox-unit-take-XXXXXX";
	char *plots, *p, *q;
	int w = 0, h = 0, fd, index = 0;

	CHECK(mkdtemp(root) != NULL);
	CHECK(channel_create(&ch, root, &err) == 0 && channel_reset_kernel(&ch, 0, &err) == 0);
	tap_note(err.buf);
	plots = channel_path(&ch, "kernel/plots");
	p = xasprintf("%s/1.png", plots);
	fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	CHECK(fd >= 0 && fsutil_write_all(fd, png, sizeof(png)) == 0);
	close(fd);
	free(p);
	/* The good one: taken once, its bytes handed on, the host's copy made, numbered 1. */
	CHECK(channel_take_file(&ch, "plots/1.png", &index, &w, &h, &data, &why) == 0);
	CHECK(index == 1);
	tap_note(why.buf);
	CHECK(data.len == sizeof(png) && !memcmp(data.buf, png, sizeof(png)));
	CHECK(w == 640 && h == 480);
	p = channel_path(&ch, "plots/1.png");
	CHECK(access(p, R_OK) == 0);
	free(p);
	/* Good PNGs where a name with ".." or a directory would reach: beside plots/, in the host's
	   copies, in a subdirectory. */
	p = channel_path(&ch, "kernel/x.png");
	fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	CHECK(fd >= 0 && fsutil_write_all(fd, png, sizeof(png)) == 0);
	close(fd);
	free(p);
	p = xasprintf("%s/sub", plots);
	CHECK(mkdir(p, 0700) == 0);
	free(p);
	p = xasprintf("%s/sub/1.png", plots);
	fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	CHECK(fd >= 0 && fsutil_write_all(fd, png, sizeof(png)) == 0);
	close(fd);
	free(p);
	for (size_t i = 0; i < ARRAY_SIZE(bad_names); i++) {
		strbuf_reset(&why);
		strbuf_reset(&data);
		CHECK(channel_take_file(&ch, bad_names[i], &index, &w, &h, &data, &why) ==
		      CHANNEL_BAD_NAME);
		CHECK(why.len > 0 && data.len == 0);
		if (why.len == 0)
			tap_note(bad_names[i] ? bad_names[i] : "(null)");
	}
	/* A symlink (to the good plot, or out of the channel), a FIFO, a hard link. */
	p = xasprintf("%s/2.png", plots);
	CHECK(symlink("1.png", p) == 0);
	free(p);
	p = xasprintf("%s/3.png", plots);
	CHECK(symlink("/etc/passwd", p) == 0);
	free(p);
	p = xasprintf("%s/4.png", plots);
	CHECK(mkfifo(p, 0600) == 0);	/* would block a reader that opened it plainly */
	free(p);
	p = xasprintf("%s/1.png", plots);
	q = xasprintf("%s/5.png", plots);
	CHECK(link(p, q) == 0);
	free(p);
	free(q);
	p = xasprintf("%s/6.png", plots);
	fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	CHECK(fd >= 0 && fsutil_write_all(fd, "GIF89a", 6) == 0);	/* says PNG, is not */
	close(fd);
	free(p);
	for (int n = 2; n <= 6; n++) {
		char name[32];

		snprintf(name, sizeof(name), "plots/%d.png", n);
		strbuf_reset(&why);
		strbuf_reset(&data);
		CHECK(channel_take_file(&ch, name, &index, &w, &h, &data, &why) < 0);
		CHECK(why.len > 0 && data.len == 0);
		tap_note(why.buf);
		snprintf(name, sizeof(name), "plots/%d.png", n);
		p = channel_path(&ch, name);
		CHECK(access(p, F_OK) < 0);	/* no host copy of a refused file */
		free(p);
	}
	/*
	 * The copies are named by the host's count, whatever the kernel's file is called: the
	 * same file taken again (a kernel naming an earlier index, a restarted one counting from
	 * 1) is copy 2, and copy 1 stays as it was.
	 */
	CHECK(index == 1);	/* (nothing refused counted) */
	strbuf_reset(&why);
	strbuf_reset(&data);
	p = channel_path(&ch, "plots/1.png");
	CHECK(truncate(p, 0) == 0);	/* copy 1 marked: an overwrite would fill it again */
	q = xasprintf("%s/5.png", plots);
	CHECK(unlink(q) == 0);		/* (the hard link: 1.png has one link again) */
	free(q);
	CHECK(channel_take_file(&ch, "plots/1.png", &index, &w, &h, &data, &why) == 0);
	CHECK(index == 2);
	{
		struct stat st;

		CHECK(stat(p, &st) == 0 && st.st_size == 0);
		free(p);
		p = channel_path(&ch, "plots/2.png");
		CHECK(stat(p, &st) == 0 && st.st_size == (off_t)sizeof(png));
	}
	free(p);
	free(plots);
	channel_release(&ch, 1);
	rmdir(root);
	strbuf_release(&err);
	strbuf_release(&why);
	strbuf_release(&data);
}

/* Make out/`name` in the kernel part with `len` bytes of 'x'; its path. */
static char *make_out(struct channel *ch, const char *name, size_t len)
{
	char *rel = xasprintf("kernel/out/%s", name), *p = channel_path(ch, rel);
	char *bytes = xmalloc(len + 1);
	int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0600);

	memset(bytes, 'x', len);
	CHECK(fd >= 0 && fsutil_write_all(fd, bytes, len) == 0);
	if (fd >= 0)
		close(fd);
	free(bytes);
	free(rel);
	return p;
}

/* Put `trick` at out/x, as a kernel could in place of its copy; the path. */
static char *plant_out(struct channel *ch, const char *trick)
{
	char *p, *q;

	if (!strcmp(trick, "cap and one"))
		return make_out(ch, "x", 4);	/* what the helper copies of a larger file */
	if (!strcmp(trick, "huge"))
		return make_out(ch, "x", 4096);
	if (!strcmp(trick, "hard link")) {
		p = make_out(ch, "x", 2);
		q = channel_path(ch, "kernel/mine");
		unlink(q);
		CHECK(link(p, q) == 0);
		free(q);
		return p;
	}
	p = channel_path(ch, "kernel/out/x");
	if (!strcmp(trick, "symlink"))
		CHECK(symlink("/etc/passwd", p) == 0);
	else if (!strcmp(trick, "fifo"))
		CHECK(mkfifo(p, 0600) == 0);	/* would block a reader that opened it plainly */
	else
		CHECK(mkdir(p, 0700) == 0);
	return p;
}

/*
 * The copy a helper cell leaves in out/ (files.h: file_get, --copy-out): channel_take_out()
 * takes it within its cap, into memory or onto a host path, and refuses what a kernel may put
 * in its place: more bytes than the cap, a symlink, a FIFO (without blocking), a hard link, a
 * directory. Taken or refused, the name is gone afterwards and nothing reached the host path.
 */
static void test_take_out_hostile(void)
{
	static const char *const tricks[] = { "cap and one", "huge", "symlink", "fifo",
					      "hard link", "directory" };
	struct channel ch;
	struct strbuf err = STRBUF_INIT, data = STRBUF_INIT, back = STRBUF_INIT;
	char root[] = "/tmp/cellbox-unit-out-XXXXXX";
	char *p, *dst;

	CHECK(mkdtemp(root) != NULL);
	CHECK(channel_create(&ch, root, &err) == 0 && channel_reset_kernel(&ch, 0, &err) == 0);
	tap_note(err.buf);
	dst = xasprintf("%s/taken", root);
	/* The good one, exactly the cap: into memory, then onto a host path. */
	for (int to_path = 0; to_path <= 1; to_path++) {
		p = make_out(&ch, "good", 3);
		strbuf_reset(&data);
		CHECK(channel_take_out(&ch, "good", 3, to_path ? dst : NULL, &data, &err) == 0);
		tap_note(err.buf);
		if (to_path)
			CHECK(strbuf_read_file(&data, dst, 64) == 0);
		CHECK_STR(data.buf, "xxx");
		CHECK(access(p, F_OK) < 0);
		free(p);
		unlink(dst);
	}
	for (size_t i = 0; i < ARRAY_SIZE(tricks); i++) {
		for (int to_path = 0; to_path <= 1; to_path++) {
			p = plant_out(&ch, tricks[i]);
			strbuf_reset(&err);
			strbuf_reset(&data);
			CHECK(channel_take_out(&ch, "x", 3, to_path ? dst : NULL,
					       to_path ? NULL : &data, &err) < 0);
			CHECK(err.len > 0 && data.len == 0);
			if (!err.len)
				tap_note(tricks[i]);
			tap_note(err.buf);
			CHECK(access(p, F_OK) < 0);	/* removed, and never followed */
			strbuf_reset(&back);
			if (strbuf_read_file(&back, dst, 1 << 20) == 0)
				CHECK(back.len == 0);	/* opened at most, nothing written */
			unlink(dst);
			free(p);
		}
	}
	CHECK(access("/etc/passwd", R_OK) == 0);
	free(dst);
	channel_release(&ch, 1);
	rmdir(root);
	strbuf_release(&err);
	strbuf_release(&data);
	strbuf_release(&back);
}

static const struct tap_test tests[] = {
	{ "event_reader", test_event_reader },
	{ "wall_open", test_wall_open },
	{ "remove_tree_no_follow", test_remove_tree_no_follow },
	{ "wall_own_dir", test_wall_own_dir },
	{ "wall_png", test_wall_png },
	{ "event_reader_punch", test_event_reader_punch },
	{ "take_file_hostile", test_take_file_hostile },
	{ "take_out_hostile", test_take_out_hostile },
};

int main(int argc, char **argv)
{
	return tap_main(argc, argv, tests, ARRAY_SIZE(tests));
}
