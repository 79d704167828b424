/*
 * Unit tests of the channel's parts (channel.h): its layout made, written, reset, lost and
 * made again; a context's parts inside a sandbox's channel; its wake-up FIFO against a
 * kernel's tricks. What it takes out of the kernel part: test_wall_unit.c.
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

static void test_channel(void)
{
	struct channel ch;
	struct strbuf err = STRBUF_INIT, text = STRBUF_INIT;
	char root[] = "/tmp/cellbox-unit-root-XXXXXX";
	struct stat st;
	char *p;
	int fd;

	CHECK(mkdtemp(root) != NULL);
	CHECK(channel_create(&ch, root, &err) == 0);
	tap_note(err.buf);
	CHECK(ch.notify_fd >= 0);
	CHECK(channel_reset_kernel(&ch, 0, &err) == 0);
	tap_note(err.buf);
	CHECK(channel_write(&ch, "commands/1.json", "{}", 2, &err) == 0);
	p = channel_path(&ch, "host/commands/1.json");
	CHECK(strbuf_read_file(&text, p, 1024) == 0);
	CHECK_STR(text.buf, "{}");
	CHECK(stat(p, &st) == 0 && (st.st_mode & 0777) == 0644);
	free(p);
	/* No temporary left behind, and none of a guessable name was ever made. */
	CHECK(channel_write(&ch, "../escape", "x", 1, &err) < 0);
	CHECK(channel_write(&ch, "commands/a/b", "x", 1, &err) < 0);
	fd = channel_results_create(&ch, "0000000001-ab", &err);
	CHECK(fd >= 0);
	CHECK(channel_results_create(&ch, "0000000001-ab", &err) < 0);	/* O_EXCL */
	p = channel_path(&ch, "kernel/results/0000000001-ab.jsonl");
	CHECK(access(p, F_OK) == 0);
	free(p);
	{
		char *rp = channel_path(&ch, "kernel/results/0000000001-ab.jsonl");
		int w = open(rp, O_WRONLY | O_APPEND);
		CHECK(w >= 0 && write(w, "x\n", 2) == 2);
		close(w);
		free(rp);
	}
	CHECK(channel_drain(&ch) > 0);	/* inotify saw it */
	CHECK(!ch.lost);
	close(fd);
	channel_results_remove(&ch, "0000000001-ab");
	channel_clear_queue(&ch);
	p = channel_path(&ch, "host/commands/1.json");
	CHECK(access(p, F_OK) < 0);
	free(p);
	/* A kernel that removes part of its channel is noticed. */
	p = channel_path(&ch, "kernel/results");
	CHECK(rmdir(p) == 0);
	free(p);
	channel_drain(&ch);
	CHECK(ch.lost);
	CHECK(channel_recreate(&ch, &err) == 0);
	CHECK(channel_reset_kernel(&ch, 0, &err) == 0);
	CHECK(!ch.lost);
	p = xstrdup(ch.dir);
	channel_release(&ch, 1);
	CHECK(access(p, F_OK) < 0);
	free(p);
	rmdir(root);
	strbuf_release(&err);
	strbuf_release(&text);
}

/*
 * A context's channel in a sandbox's (channel_create_within): its parts are the host's
 * directories in the sandbox's channel's parts, remade by each reset in its kernel part as it
 * is then, and gone with it; a `within` that is not ours alone, or whose part is a link, is
 * refused.
 */
static void test_channel_within(void)
{
	struct channel sb, ctx;
	struct strbuf err = STRBUF_INIT;
	char root[] = "/tmp/cellbox-unit-root-XXXXXX";
	struct stat st;
	char *p, *link_dir, *other;
	int fd;

	CHECK(mkdtemp(root) != NULL);
	CHECK(channel_create(&sb, root, &err) == 0 && channel_reset_kernel(&sb, 0, &err) == 0);
	CHECK(channel_create_within(&ctx, root, sb.dir, &err) == 0);
	tap_note(err.buf);
	CHECK(channel_reset_kernel(&ctx, 0, &err) == 0);
	tap_note(err.buf);
	p = xasprintf("%s/host/%s", sb.dir, ctx.part);
	CHECK_STR(ctx.host_dir, p);
	CHECK(lstat(p, &st) == 0 && S_ISDIR(st.st_mode) && (st.st_mode & 0777) == 0755);
	free(p);
	p = xasprintf("%s/kernel/%s", sb.dir, ctx.part);
	CHECK_STR(ctx.kernel_dir, p);
	CHECK(lstat(p, &st) == 0 && S_ISDIR(st.st_mode));
	free(p);
	/* its queue and results go there, and its top (a channel's own) holds no part */
	CHECK(channel_write(&ctx, "commands/1.json", "{}", 2, &err) == 0);
	p = xasprintf("%s/commands/1.json", ctx.host_dir);
	CHECK(access(p, F_OK) == 0);
	free(p);
	fd = channel_results_create(&ctx, "0000000001-ab", &err);
	CHECK(fd >= 0);
	close(fd);
	p = xasprintf("%s/results/0000000001-ab.jsonl", ctx.kernel_dir);
	CHECK(access(p, F_OK) == 0);
	free(p);
	p = channel_path(&ctx, "kernel");
	CHECK(access(p, F_OK) < 0);
	free(p);
	/* the sandbox's kernel part made again (its kernel restarted): the next reset remakes it */
	CHECK(channel_reset_kernel(&sb, 0, &err) == 0);
	CHECK(access(ctx.kernel_dir, F_OK) < 0);
	CHECK(channel_reset_kernel(&ctx, 0, &err) == 0);
	CHECK(access(ctx.kernel_dir, F_OK) == 0);
	/* released, its parts go; the sandbox's stay */
	link_dir = xstrdup(ctx.host_dir);
	other = xstrdup(ctx.kernel_dir);
	channel_release(&ctx, 1);
	CHECK(access(link_dir, F_OK) < 0 && access(other, F_OK) < 0);
	CHECK(access(sb.host_dir, F_OK) == 0 && access(sb.kernel_dir, F_OK) == 0);
	free(link_dir);
	free(other);
	/* a `within` whose host part is a link, or that is not ours alone: refused */
	p = xasprintf("%s/fake", root);
	CHECK(mkdir(p, 0700) == 0);
	link_dir = xasprintf("%s/host", p);
	CHECK(symlink(sb.host_dir, link_dir) == 0);
	strbuf_reset(&err);
	CHECK(channel_create_within(&ctx, root, p, &err) < 0);
	tap_note(err.buf);
	CHECK(unlink(link_dir) == 0 && chmod(p, 0755) == 0);
	strbuf_reset(&err);
	CHECK(channel_create_within(&ctx, root, p, &err) < 0);
	CHECK(strstr(err.buf, "not ours alone") != NULL);
	CHECK(rmdir(p) == 0);
	free(link_dir);
	free(p);
	channel_release(&sb, 1);
	rmdir(root);
	strbuf_release(&err);
}

/*
 * A pooled kernel's channel is attached after the kernel ran. host/wake is read-only to a
 * container's kernel, but a local kernel (the same user) can replace it: a symlink to a host
 * FIFO or a regular file in its place is never written.
 */
static void test_channel_wake_hostile(void)
{
	struct channel ch;
	struct strbuf err = STRBUF_INIT;
	char root[] = "/tmp/cellbox-unit-root-XXXXXX";
	char *dir, *wake, *victim;
	struct stat st;
	int vfd;

	CHECK(mkdtemp(root) != NULL);
	CHECK(channel_create(&ch, root, &err) == 0);
	CHECK(ch.wake_fd >= 0);
	CHECK(channel_wake(&ch) == 0);		/* our own FIFO takes the byte */
	dir = xstrdup(ch.dir);
	wake = channel_path(&ch, "host/wake");
	victim = xasprintf("%s/host-fifo", root);
	channel_release(&ch, 0);
	/* The kernel part a runner makes, so that the channel can be attached. */
	{
		static const char *const parts[] = { "kernel", "kernel/results", "kernel/plots",
						     "kernel/out" };
		for (size_t i = 0; i < sizeof(parts) / sizeof(parts[0]); i++) {
			char *p = xasprintf("%s/%s", dir, parts[i]);
			CHECK(mkdir(p, 0700) == 0);
			free(p);
		}
	}

	/* A symlink to a FIFO of the host's: not followed, nothing written into it. */
	CHECK(mkfifo(victim, 0600) == 0);
	vfd = open(victim, O_RDWR | O_NONBLOCK);
	CHECK(vfd >= 0);
	CHECK(unlink(wake) == 0);
	CHECK(symlink(victim, wake) == 0);
	CHECK(channel_attach(&ch, dir, &err) == 0);
	CHECK(ch.wake_fd < 0);
	CHECK(channel_wake(&ch) < 0);
	{
		char b;
		CHECK(read(vfd, &b, 1) < 0 && errno == EAGAIN);
	}
	channel_release(&ch, 0);

	/* A regular file: not used as the FIFO, nothing written into it. */
	CHECK(unlink(wake) == 0);
	close(open(wake, O_WRONLY | O_CREAT | O_EXCL, 0600));
	CHECK(channel_attach(&ch, dir, &err) == 0);
	CHECK(ch.wake_fd < 0);
	CHECK(channel_wake(&ch) < 0);
	CHECK(stat(wake, &st) == 0 && st.st_size == 0);
	channel_release(&ch, 1);

	close(vfd);
	unlink(victim);
	rmdir(root);
	free(dir);
	free(wake);
	free(victim);
	strbuf_release(&err);
}

static const struct tap_test tests[] = {
	{ "channel", test_channel },
	{ "channel_within", test_channel_within },
	{ "channel_wake_hostile", test_channel_wake_hostile },
};

int main(int argc, char **argv)
{
	return tap_main(argc, argv, tests, ARRAY_SIZE(tests));
}
