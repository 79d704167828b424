/*
 * The channel's layout: its two one-way parts, host writes, the kernel part. Its watches and
 * their drain are channel_watch.c (channel_int.h), its removal and gc channel_gc.c.
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

#define READY_MAX (64 << 10)		/* bytes of a ready file */
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

/* Open the host's directories of the channel in `ch->dir_fd`. */
static int open_host_part(struct channel *ch, int make, struct strbuf *err)
{
	static const struct { const char *name; mode_t mode; size_t off; int parent_host; } dirs[] = {
		{ "host", 0755, offsetof(struct channel, host_fd), 0 },
		{ "commands", 0755, offsetof(struct channel, commands_fd), 1 },
		{ "files", 0755, offsetof(struct channel, files_fd), 1 },
		{ "plots", 0700, offsetof(struct channel, shown_fd), 0 },
	};

	for (size_t i = 0; i < ARRAY_SIZE(dirs); i++) {
		int at = dirs[i].parent_host ? ch->host_fd : ch->dir_fd;
		int *fd = (int *)((char *)ch + dirs[i].off);
		char *shown = xasprintf("%s/%s%s", ch->dir, dirs[i].parent_host ? "host/" : "",
					dirs[i].name);

		*fd = make ? make_dir_at(at, dirs[i].name, dirs[i].mode, shown, err) :
			     open_dir_at(at, dirs[i].name, shown, err);
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

int channel_create(struct channel *ch, const char *root, struct strbuf *err)
{
	char *name = NULL;
	int root_fd = -1;

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
	ch->dir_fd = make_dir_at(root_fd, name, 0700, ch->dir, err);
	if (ch->dir_fd < 0 || open_host_part(ch, 1, err) < 0)
		goto fail;
	/* A runner that cannot watch the channel waits on host/wake (readable to the kernel). */
	if (mkfifoat(ch->host_fd, "wake", 0644) < 0 || fchmodat(ch->host_fd, "wake", 0644, 0) < 0) {
		strbuf_addf(err, "cannot create '%s/host/wake': %s", ch->dir, strerror(errno));
		goto fail;
	}
	open_wake(ch);
	channel_watch_host(ch);
	close(root_fd);
	free(name);
	return 0;
fail:
	channel_release(ch, 0);
	fsutil_remove_tree_at(root_fd, name, REMOVE_TREE_DEPTH);
	close(root_fd);
	free(name);
	return -1;
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
	char *shown = xasprintf("%s/kernel", ch->dir);
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
	struct stat st;

	memset(ch, 0, sizeof(*ch));
	channel_blank(ch);
	ch->dir = xstrdup(dir);
	ch->dir_fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (ch->dir_fd < 0) {
		strbuf_addf(err, "cannot use channel '%s': %s", dir, strerror(errno));
		goto fail;
	}
	if (fstat(ch->dir_fd, &st) < 0 || st.st_uid != geteuid() || (st.st_mode & 077)) {
		strbuf_addf(err, "cannot use channel '%s': it is not ours alone", dir);
		goto fail;
	}
	if (open_host_part(ch, 0, err) < 0)
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
	char *path;

	if (!ch->mounted)
		return;
	path = channel_path(ch, "kernel");
	umount2(path, MNT_DETACH | UMOUNT_NOFOLLOW);
	free(path);
	ch->mounted = 0;
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
	/* After the directory went: a runner that sees the FIFO's last writer go looks for it. */
	close_fd(&ch->wake_fd);
	lastclose(ch->notify_fd);	/* last: a grandchild's copy holds only this one */
	ch->notify_fd = -1;
	free(ch->dir);
	ch->dir = NULL;
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

/* Give a descriptor of ours, just made, to the kernel's user. */
static int give(const struct channel *ch, int fd, const char *shown, struct strbuf *err)
{
	if (ch->other_user && fchown(fd, ch->uid, ch->gid) < 0) {
		strbuf_addf(err, "cannot give '%s' to uid %u: %s", shown, (unsigned)ch->uid,
			    strerror(errno));
		return -1;
	}
	return 0;
}

/* Mount a tmpfs of the quota's size on kernel/; 0 when it is there, -1 when we may not. */
static int mount_kernel(struct channel *ch)
{
	char *path = channel_path(ch, "kernel"), opts[96];
	int rc;

	snprintf(opts, sizeof(opts), "size=%llu,nr_inodes=%llu,mode=0755", ch->quota + TMPFS_SLACK,
		 ch->quota / 4096 + 1024);
	rc = mount("cellbox", path, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, opts);
	free(path);
	if (rc == 0)
		ch->mounted = 1;
	return rc;
}

int channel_reset_kernel(struct channel *ch, int mount_it, struct strbuf *err)
{
	static const char *const dirs[] = { "results", "plots", "out" };
	char *shown = channel_path(ch, "kernel");
	int fd = -1, rc = -1;

	close_kernel_part(ch);
	unmount_kernel(ch);
	ch->over = 0;		/* `copied` stays: it is the session's, not this kernel's */
	if (fsutil_remove_tree_at(ch->dir_fd, "kernel", REMOVE_TREE_DEPTH) < 0) {
		strbuf_addf(err, "cannot clear '%s'", shown);
		goto out;
	}
	if (mkdirat(ch->dir_fd, "kernel", 0755) < 0) {
		strbuf_addf(err, "cannot create '%s': %s", shown, strerror(errno));
		goto out;
	}
	if (mount_it && ch->quota)
		mount_kernel(ch);	/* when we may not (not root): the quota is kept by watching */
	ch->kernel_fd = open_dir_at(ch->dir_fd, "kernel", shown, err);
	if (ch->kernel_fd < 0 || fchmod(ch->kernel_fd, 0755) < 0)
		goto out;
	for (size_t i = 0; i < ARRAY_SIZE(dirs); i++) {
		int *slot = i == 0 ? &ch->results_fd : i == 1 ? &ch->plots_fd : &ch->out_fd;

		*slot = make_dir_at(ch->kernel_fd, dirs[i], 0700, dirs[i], err);
		if (*slot < 0 || give(ch, *slot, dirs[i], err) < 0)
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
		if (give(ch, fd, name, err) < 0)
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
	free(shown);
	return rc;
}

int channel_recreate(struct channel *ch, struct strbuf *err)
{
	char *dir = ch->dir, *slash = strrchr(dir, '/');
	char *root = xstrndup(dir, (size_t)(slash - dir));
	int root_fd, rc = -1;

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
	if (ch->dir_fd < 0 || open_host_part(ch, 1, err) < 0)
		goto out;
	channel_watch_host(ch);
	channel_drain(ch);
	ch->lost = 0;
	rc = 0;
out:
	free(root);
	return rc;
}

/* The host directory and name that `rel` means; NULL when it is not a host file. */
static const char *host_target(const struct channel *ch, const char *rel, int *fd)
{
	if (!strncmp(rel, "commands/", 9)) {
		*fd = ch->commands_fd;
		rel += 9;
	} else if (!strncmp(rel, "files/", 6)) {
		*fd = ch->files_fd;
		rel += 6;
	} else {
		*fd = ch->host_fd;
	}
	return wall_name_ok(rel) ? rel : NULL;
}

int channel_write(const struct channel *ch, const char *rel, const void *data, size_t len,
		  struct strbuf *err)
{
	int fd;
	const char *name = host_target(ch, rel, &fd);
	char *shown = xasprintf("%s/host/%s", ch->dir, rel);
	int rc;

	if (!name || fd < 0) {
		strbuf_addf(err, "cannot write '%s': not a file of the channel's host part", shown);
		free(shown);
		return -1;
	}
	rc = wall_write_at(fd, name, data, len, 0644, shown, err);
	free(shown);
	return rc;
}

int channel_command_begin(const struct channel *ch, struct wall_pending *p, struct strbuf *err)
{
	char *shown = xasprintf("%s/host/commands", ch->dir);
	int rc = -1;

	p->fd = -1;
	if (ch->commands_fd >= 0)
		rc = wall_write_begin(ch->commands_fd, 0644, 4096, p, shown, err);
	free(shown);
	return rc;
}

int channel_command_end(const struct channel *ch, struct wall_pending *p, const char *name,
			const void *data, size_t len, struct strbuf *err)
{
	char *shown = name ? xasprintf("%s/host/commands/%s", ch->dir, name) : NULL;
	int rc;

	if (name && !wall_name_ok(name)) {
		strbuf_addf(err, "cannot write '%s': not a file of the channel's host part", shown);
		name = NULL;
	}
	rc = wall_write_end(ch->commands_fd, p, name, data, len, shown, err);
	free(shown);
	return rc;
}

void channel_unlink(const struct channel *ch, const char *rel)
{
	int fd;
	const char *name = host_target(ch, rel, &fd);

	if (name && fd >= 0)
		unlinkat(fd, name, 0);
}

/* Remove every entry of one of our directories. */
static void clear_at(int fd)
{
	DIR *d;
	struct dirent *de;
	int dup_fd = fd >= 0 ? dup(fd) : -1;

	if (dup_fd < 0)
		return;
	d = fdopendir(dup_fd);
	if (!d) {
		close(dup_fd);
		return;
	}
	rewinddir(d);
	while ((de = readdir(d)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
			fsutil_remove_tree_at(fd, de->d_name, REMOVE_TREE_DEPTH);
	closedir(d);
}

void channel_clear_queue(const struct channel *ch)
{
	clear_at(ch->commands_fd);
	clear_at(ch->files_fd);
}

int channel_results_create(const struct channel *ch, const char *name, struct strbuf *err)
{
	char *file = xasprintf("%s.jsonl", name);
	int fd = -1;

	if (ch->results_fd < 0 || !wall_name_ok(file)) {
		strbuf_addf(err, "cannot make the results file of request '%s'", name);
		goto out;
	}
	fd = openat(ch->results_fd, file, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0) {
		strbuf_addf(err, "cannot create '%s/kernel/results/%s': %s", ch->dir, file,
			    strerror(errno));
		goto out;
	}
	if (give(ch, fd, file, err) < 0) {
		close_fd(&fd);
		unlinkat(ch->results_fd, file, 0);
	}
out:
	free(file);
	return fd;
}

void channel_results_remove(const struct channel *ch, const char *name)
{
	char *file = xasprintf("%s.jsonl", name);

	if (ch->results_fd >= 0 && wall_name_ok(file))
		fsutil_remove_tree_at(ch->results_fd, file, REMOVE_TREE_DEPTH);
	free(file);
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
