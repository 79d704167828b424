/*
 * The channel's layout: its two one-way parts made, attached, reset, recreated and released.
 * Its queue's files are channel_queue.c, its watches channel_watch.c (channel_int.h), the
 * reading of its kernel part channel_read.c, its removal and gc channel_gc.c.
 */
#include "channel.h"
#include "channel_int.h"
#include "lastclose.h"
#include "wall.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#define TMPFS_SLACK (1ull << 20)	/* the tmpfs holds the quota and this much more */


/* Close a descriptor member and mark it closed. */
static void close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

/* Every descriptor of a channel closed, nothing else set. */
static void channel_blank(struct channel *ch)
{
	int *fds[] = { &ch->dir_fd, &ch->host_fd, &ch->commands_fd, &ch->files_fd, &ch->shown_fd,
		       &ch->kernel_fd, &ch->results_fd, &ch->plots_fd, &ch->out_fd, &ch->ready_fd,
		       &ch->log_fd, &ch->notify_fd, &ch->wake_fd };

	for (size_t i = 0; i < ARRAY_SIZE(fds); i++)
		*fds[i] = -1;
	for (size_t i = 0; i < ARRAY_SIZE(ch->wd); i++)
		ch->wd[i] = -1;
}

/* Make a name no other channel on this machine has: pid, a counter and random bits. */
static char *channel_name(void)
{
	static unsigned counter;
	char rnd[17];

	random_hex(rnd, 8);
	return xasprintf("%ld-%u-%s", (long)getpid(), counter++, rnd);
}

/* Open directory `name` in `at` without following a link; -1 with `err` naming `shown`. */
static int open_dir_at(int at, const char *name, const char *shown, struct strbuf *err)
{
	int fd = openat(at, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

	if (fd < 0)
		strbuf_addf(err, "cannot open '%s': %s", shown, strerror(errno));
	return fd;
}

/* Make directory `name` in `at` (mode `mode`, umask aside) and open it. */
static int make_dir_at(int at, const char *name, mode_t mode, const char *shown,
		       struct strbuf *err)
{
	int fd;

	if (mkdirat(at, name, mode) < 0) {
		strbuf_addf(err, "cannot create '%s': %s", shown, strerror(errno));
		return -1;
	}
	fd = open_dir_at(at, name, shown, err);
	if (fd >= 0 && fchmod(fd, mode) < 0) {
		strbuf_addf(err, "cannot set the mode of '%s': %s", shown, strerror(errno));
		close_fd(&fd);
	}
	return fd;
}

/*
 * Open the host's directories of the channel: plots/ in `ch->dir_fd`, the host part in
 * `host_at` (the top's, or for a context the host part of its sandbox's channel).
 */
static int open_host_part(struct channel *ch, int host_at, int make, struct strbuf *err)
{
	static const struct { const char *name; mode_t mode; size_t off; int parent_host; } dirs[] = {
		{ "host", 0755, offsetof(struct channel, host_fd), 0 },
		{ "commands", 0755, offsetof(struct channel, commands_fd), 1 },
		{ "files", 0755, offsetof(struct channel, files_fd), 1 },
		{ "plots", 0700, offsetof(struct channel, shown_fd), 0 },
	};

	for (size_t i = 0; i < ARRAY_SIZE(dirs); i++) {
		int at = dirs[i].parent_host ? ch->host_fd : i == 0 ? host_at : ch->dir_fd;
		const char *name = i == 0 && ch->part ? ch->part : dirs[i].name;
		int *fd = (int *)((char *)ch + dirs[i].off);
		char *shown = i == 0 ? xstrdup(ch->host_dir) : dirs[i].parent_host ?
			xasprintf("%s/%s", ch->host_dir, name) : xasprintf("%s/%s", ch->dir, name);

		*fd = make ? make_dir_at(at, name, dirs[i].mode, shown, err) :
			     open_dir_at(at, name, shown, err);
		free(shown);
		if (*fd < 0)
			return -1;
	}
	return 0;
}

/*
 * Hold the channel's host/wake FIFO open: read-write (it never blocks, never raises SIGPIPE)
 * and not following a link. It is in the host part, which the kernel cannot change.
 */
static void open_wake(struct channel *ch)
{
	struct stat st;

	ch->wake_fd = openat(ch->host_fd, "wake", O_RDWR | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC);
	if (ch->wake_fd >= 0 && (fstat(ch->wake_fd, &st) < 0 || !S_ISFIFO(st.st_mode)))
		close_fd(&ch->wake_fd);
}

int channel_wake(const struct channel *ch)
{
	static const char byte = 'w';

	if (ch->wake_fd < 0)
		return -1;
	if (write(ch->wake_fd, &byte, 1) == 1 || errno == EAGAIN)
		return 0;
	return -1;
}

/*
 * The directory holding the channel's part `which` ("host" or "kernel"): its top's, or for
 * a context's channel that part of its sandbox's channel (ours: `within` was checked when
 * the context was made, and is reached without following a link). A descriptor the caller
 * closes, or -1 with `err`.
 */
static int part_parent(const struct channel *ch, const char *which, struct strbuf *err)
{
	int wfd, fd;

	if (!ch->within)
		return fcntl(ch->dir_fd, F_DUPFD_CLOEXEC, 0);
	wfd = open(ch->within, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	fd = wfd < 0 ? -1 : openat(wfd, which, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		strbuf_addf(err, "cannot open '%s/%s' (%s): did the sandbox's session end?",
			    ch->within, which, strerror(errno));
	if (wfd >= 0)
		close(wfd);
	return fd;
}

/* Whether directory `fd` is ours alone (our uid, no access for others). */
static int ours_alone(int fd)
{
	struct stat st;

	return fstat(fd, &st) == 0 && st.st_uid == geteuid() && !(st.st_mode & 077);
}

/* channel_create() and channel_create_within() (`within` NULL for the first). */
static int create(struct channel *ch, const char *root, const char *within, struct strbuf *err)
{
	char *name = NULL;
	int root_fd = -1, host_at = -1;

	memset(ch, 0, sizeof(*ch));
	channel_blank(ch);
	ch->uid = geteuid();
	ch->gid = getegid();
	if (wall_own_dir(root, 1, err) < 0)
		return -1;
	root_fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (root_fd < 0) {
		strbuf_addf(err, "cannot open '%s': %s", root, strerror(errno));
		return -1;
	}
	name = channel_name();
	ch->dir = xasprintf("%s/%s", root, name);
	if (within) {
		int wfd = open(within, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

		if (wfd < 0 || !ours_alone(wfd)) {
			strbuf_addf(err, "cannot use the sandbox's channel '%s': %s", within,
				    wfd < 0 ? strerror(errno) : "it is not ours alone");
			if (wfd >= 0)
				close(wfd);
			goto fail;
		}
		close(wfd);
		ch->within = xstrdup(within);
		ch->part = xasprintf("ctx-%s", name);
		ch->host_dir = xasprintf("%s/host/%s", within, ch->part);
		ch->kernel_dir = xasprintf("%s/kernel/%s", within, ch->part);
	} else {
		ch->host_dir = xasprintf("%s/host", ch->dir);
		ch->kernel_dir = xasprintf("%s/kernel", ch->dir);
	}
	ch->dir_fd = make_dir_at(root_fd, name, 0700, ch->dir, err);
	if (ch->dir_fd < 0)
		goto fail;
	host_at = part_parent(ch, "host", err);
	if (host_at < 0 || open_host_part(ch, host_at, 1, err) < 0)
		goto fail;
	/* A runner that cannot watch the channel waits on host/wake (readable to the kernel). */
	if (mkfifoat(ch->host_fd, "wake", 0644) < 0 || fchmodat(ch->host_fd, "wake", 0644, 0) < 0) {
		strbuf_addf(err, "cannot create '%s/wake': %s", ch->host_dir, strerror(errno));
		goto fail;
	}
	open_wake(ch);
	channel_watch_host(ch);
	close(host_at);
	close(root_fd);
	free(name);
	return 0;
fail:
	if (host_at >= 0)
		close(host_at);
	channel_release(ch, 1);
	fsutil_remove_tree_at(root_fd, name, REMOVE_TREE_DEPTH);
	close(root_fd);
	free(name);
	return -1;
}

int channel_create(struct channel *ch, const char *root, struct strbuf *err)
{
	return create(ch, root, NULL, err);
}

int channel_create_within(struct channel *ch, const char *root, const char *within,
			  struct strbuf *err)
{
	return create(ch, root, within, err);
}

/* Open a file of the kernel part that the host made (ready, log), without following links. */
static int open_made(int at, const char *name, int flags)
{
	int fd = openat(at, name, flags | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	struct stat st;

	if (fd >= 0 && (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)))
		close_fd(&fd);
	return fd;
}

/* Open the kernel part as it is; learn its owner from results/. */
static int open_kernel_part(struct channel *ch, struct strbuf *err)
{
	char *shown = xstrdup(ch->kernel_dir);
	struct stat top, st;
	int rc = -1;

	ch->kernel_fd = open_dir_at(ch->dir_fd, "kernel", shown, err);
	if (ch->kernel_fd < 0)
		goto out;
	ch->results_fd = open_dir_at(ch->kernel_fd, "results", "results", err);
	ch->plots_fd = open_dir_at(ch->kernel_fd, "plots", "plots", err);
	ch->out_fd = open_dir_at(ch->kernel_fd, "out", "out", err);
	if (ch->results_fd < 0 || ch->plots_fd < 0 || ch->out_fd < 0)
		goto out;
	if (fstat(ch->results_fd, &st) == 0) {
		ch->uid = st.st_uid;
		ch->gid = st.st_gid;
		ch->other_user = st.st_uid != geteuid();
	}
	if (fstat(ch->dir_fd, &top) == 0 && fstat(ch->kernel_fd, &st) == 0)
		ch->mounted = top.st_dev != st.st_dev;
	ch->ready_fd = open_made(ch->kernel_fd, "ready", O_RDONLY);
	ch->log_fd = open_made(ch->kernel_fd, "log", O_RDONLY);
	ch->wd[WD_KERNEL] = channel_watch_fd(ch, ch->kernel_fd,
					     IN_MODIFY | IN_CLOSE_WRITE | LOST_MASK);
	ch->wd[WD_RESULTS] = channel_watch_fd(ch, ch->results_fd, RESULTS_MASK);
	rc = 0;
out:
	free(shown);
	return rc;
}

int channel_attach(struct channel *ch, const char *dir, struct strbuf *err)
{
	memset(ch, 0, sizeof(*ch));
	channel_blank(ch);
	ch->dir = xstrdup(dir);
	ch->host_dir = xasprintf("%s/host", dir);
	ch->kernel_dir = xasprintf("%s/kernel", dir);
	ch->dir_fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (ch->dir_fd < 0) {
		strbuf_addf(err, "cannot use channel '%s': %s", dir, strerror(errno));
		goto fail;
	}
	if (!ours_alone(ch->dir_fd)) {
		strbuf_addf(err, "cannot use channel '%s': it is not ours alone", dir);
		goto fail;
	}
	if (open_host_part(ch, ch->dir_fd, 0, err) < 0)
		goto fail;
	channel_watch_host(ch);
	if (open_kernel_part(ch, err) < 0)
		goto fail;
	open_wake(ch);
	return 0;
fail:
	channel_release(ch, 0);
	return -1;
}

/* Close the descriptors and watches of the kernel part. */
static void close_kernel_part(struct channel *ch)
{
	int *fds[] = { &ch->kernel_fd, &ch->results_fd, &ch->plots_fd, &ch->out_fd, &ch->ready_fd,
		       &ch->log_fd };

	for (size_t i = 0; i < ARRAY_SIZE(fds); i++)
		close_fd(fds[i]);
	for (int i = WD_KERNEL; i < WD_COUNT; i++) {
		if (ch->wd[i] >= 0 && ch->notify_fd >= 0)
			inotify_rm_watch(ch->notify_fd, ch->wd[i]);
		ch->wd[i] = -1;
	}
}

/* Unmount our tmpfs at kernel/ (detached: a dying container may still hold it). */
static void unmount_kernel(struct channel *ch)
{
	if (!ch->mounted)
		return;
	umount2(ch->kernel_dir, MNT_DETACH | UMOUNT_NOFOLLOW);
	ch->mounted = 0;
}

/* A context's parts go from its sandbox's channel (when that is still there). */
static void remove_parts(const struct channel *ch)
{
	static const char *const which[] = { "host", "kernel" };
	struct strbuf err = STRBUF_INIT;

	for (size_t i = 0; i < ARRAY_SIZE(which); i++) {
		int at = part_parent(ch, which[i], &err);

		if (at >= 0) {
			fsutil_remove_tree_at(at, ch->part, REMOVE_TREE_DEPTH);
			close(at);
		}
	}
	strbuf_release(&err);
}

void channel_release(struct channel *ch, int remove)
{
	close_kernel_part(ch);
	if (remove)
		unmount_kernel(ch);	/* kept, it stays: a kernel another process adopts uses it */
	close_fd(&ch->host_fd);
	close_fd(&ch->commands_fd);
	close_fd(&ch->files_fd);
	close_fd(&ch->shown_fd);
	close_fd(&ch->dir_fd);
	if (ch->dir && remove)
		channel_remove_dir(ch->dir);
	if (ch->within && remove)
		remove_parts(ch);
	/* After the directory went: a runner that sees the FIFO's last writer go looks for it. */
	close_fd(&ch->wake_fd);
	lastclose(ch->notify_fd);	/* last: a grandchild's copy holds only this one */
	ch->notify_fd = -1;
	free(ch->dir);
	free(ch->host_dir);
	free(ch->kernel_dir);
	free(ch->within);
	free(ch->part);
	ch->dir = ch->host_dir = ch->kernel_dir = ch->within = ch->part = NULL;
}

char *channel_path(const struct channel *ch, const char *rel)
{
	return xasprintf("%s/%s", ch->dir, rel);
}

void channel_set_owner(struct channel *ch, uid_t uid, gid_t gid)
{
	ch->uid = uid;
	ch->gid = gid;
	ch->other_user = uid != geteuid();
}

/* Mount a tmpfs of the quota's size on kernel/; 0 when it is there, -1 when we may not. */
static int mount_kernel(struct channel *ch)
{
	char opts[96];
	int rc;

	snprintf(opts, sizeof(opts), "size=%llu,nr_inodes=%llu,mode=0755", ch->quota + TMPFS_SLACK,
		 ch->quota / 4096 + 1024);
	rc = mount("cellbox", ch->kernel_dir, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, opts);
	if (rc == 0)
		ch->mounted = 1;
	return rc;
}

int channel_reset_kernel(struct channel *ch, int mount_it, struct strbuf *err)
{
	static const char *const dirs[] = { "results", "plots", "out" };
	const char *shown = ch->kernel_dir, *part = ch->part ? ch->part : "kernel";
	int fd = -1, rc = -1, at;

	close_kernel_part(ch);
	unmount_kernel(ch);
	ch->over = 0;		/* `copied` stays: it is the session's, not this kernel's */
	at = part_parent(ch, "kernel", err);
	if (at < 0)
		goto out;
	if (fsutil_remove_tree_at(at, part, REMOVE_TREE_DEPTH) < 0) {
		strbuf_addf(err, "cannot clear '%s'", shown);
		goto out;
	}
	if (mkdirat(at, part, 0755) < 0) {
		strbuf_addf(err, "cannot create '%s': %s", shown, strerror(errno));
		goto out;
	}
	/* A context's is in its sandbox's tmpfs, whose quota it shares. */
	if (mount_it && ch->quota && !ch->within)
		mount_kernel(ch);	/* when we may not (not root): the quota is kept by watching */
	ch->kernel_fd = open_dir_at(at, part, shown, err);
	if (ch->kernel_fd < 0 || fchmod(ch->kernel_fd, 0755) < 0)
		goto out;
	for (size_t i = 0; i < ARRAY_SIZE(dirs); i++) {
		int *slot = i == 0 ? &ch->results_fd : i == 1 ? &ch->plots_fd : &ch->out_fd;

		*slot = make_dir_at(ch->kernel_fd, dirs[i], 0700, dirs[i], err);
		if (*slot < 0 || channel_give(ch, *slot, dirs[i], err) < 0)
			goto out;
	}
	/* ready and log: ours, made with O_EXCL in a directory only we can write, then given. */
	for (int i = 0; i < 2; i++) {
		const char *name = i ? "log" : "ready";

		fd = openat(ch->kernel_fd, name, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
			    0600);
		if (fd < 0) {
			strbuf_addf(err, "cannot create '%s/%s': %s", shown, name, strerror(errno));
			goto out;
		}
		if (channel_give(ch, fd, name, err) < 0)
			goto out;
		if (i)
			ch->log_fd = fd;
		else
			ch->ready_fd = fd;
		fd = -1;
	}
	ch->wd[WD_KERNEL] = channel_watch_fd(ch, ch->kernel_fd,
					     IN_MODIFY | IN_CLOSE_WRITE | LOST_MASK);
	ch->wd[WD_RESULTS] = channel_watch_fd(ch, ch->results_fd, RESULTS_MASK);
	channel_drain(ch);	/* our own removal of the old part is no loss */
	ch->lost = 0;
	rc = 0;
out:
	if (fd >= 0)
		close(fd);
	if (at >= 0)
		close(at);
	return rc;
}

int channel_recreate(struct channel *ch, struct strbuf *err)
{
	char *dir = ch->dir, *slash = strrchr(dir, '/');
	char *root;
	int root_fd, rc = -1;

	/*
	 * A context's parts are where no kernel can remove them: its kernel part went with its
	 * sandbox's (started again), and the next reset makes it in the new one.
	 */
	if (ch->within) {
		channel_drain(ch);
		ch->lost = 0;
		return 0;
	}
	root = xstrndup(dir, (size_t)(slash - dir));
	close_kernel_part(ch);
	unmount_kernel(ch);
	lastclose(ch->notify_fd);	/* a restart need not wait for its grace period */
	ch->notify_fd = -1;
	close_fd(&ch->host_fd);
	close_fd(&ch->commands_fd);
	close_fd(&ch->files_fd);
	close_fd(&ch->shown_fd);
	close_fd(&ch->dir_fd);
	if (wall_own_dir(root, 1, err) < 0)
		goto out;
	root_fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (root_fd < 0) {
		strbuf_addf(err, "cannot open '%s': %s", root, strerror(errno));
		goto out;
	}
	/* Whatever is at the name now (a link, the kernel's own directory) goes unfollowed. */
	channel_remove_dir(dir);
	fsutil_remove_tree_at(root_fd, slash + 1, REMOVE_TREE_DEPTH);
	ch->dir_fd = make_dir_at(root_fd, slash + 1, 0700, dir, err);
	close(root_fd);
	if (ch->dir_fd < 0 || open_host_part(ch, ch->dir_fd, 1, err) < 0)
		goto out;
	channel_watch_host(ch);
	channel_drain(ch);
	ch->lost = 0;
	rc = 0;
out:
	free(root);
	return rc;
}
