#include "channel.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

/* Make a name no other channel on this machine has: pid, a counter and random bits. */
static char *channel_name(void)
{
	static unsigned counter;
	unsigned rnd = 0;
	int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);

	if (fd >= 0) {
		if (read(fd, &rnd, sizeof(rnd)) != sizeof(rnd))
			rnd = (unsigned)now_wall();
		close(fd);
	}
	return xasprintf("%ld-%u-%08x", (long)getpid(), counter++, rnd);
}

/* Watch the channel and its results/ with inotify; on failure the session polls. */
static void channel_watch(struct channel *ch)
{
	char *results;

	ch->notify_fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	if (ch->notify_fd < 0)
		return;
	results = channel_path(ch, "results");
	if (inotify_add_watch(ch->notify_fd, ch->dir, IN_MOVED_TO | IN_CLOSE_WRITE) < 0 ||
	    inotify_add_watch(ch->notify_fd, results, IN_MODIFY | IN_CREATE | IN_MOVED_TO) < 0) {
		close(ch->notify_fd);
		ch->notify_fd = -1;
	}
	free(results);
}

/*
 * Hold the channel's `wake` FIFO open: read-write (it never blocks, never raises SIGPIPE) and
 * not following a link. Whatever else is there (the kernel may replace it) is not used.
 */
static void open_wake(struct channel *ch)
{
	char *path = channel_path(ch, "wake");
	struct stat st;

	ch->wake_fd = open(path, O_RDWR | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC);
	if (ch->wake_fd >= 0 && (fstat(ch->wake_fd, &st) < 0 || !S_ISFIFO(st.st_mode))) {
		close(ch->wake_fd);
		ch->wake_fd = -1;
	}
	free(path);
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

int channel_attach(struct channel *ch, const char *dir, struct strbuf *err)
{
	struct stat st;

	ch->notify_fd = -1;
	ch->wake_fd = -1;
	ch->dir = NULL;
	if (stat(dir, &st) < 0) {
		strbuf_addf(err, "cannot use channel '%s': %s", dir, strerror(errno));
		return -1;
	}
	if (!S_ISDIR(st.st_mode)) {
		strbuf_addf(err, "cannot use channel '%s': not a directory", dir);
		return -1;
	}
	ch->dir = xstrdup(dir);
	/* A container user's channel (channel_set_owner): what we write must be theirs too. */
	ch->chown = st.st_uid != geteuid() || st.st_gid != getegid();
	ch->uid = st.st_uid;
	ch->gid = st.st_gid;
	channel_watch(ch);
	open_wake(ch);
	return 0;
}

int channel_create(struct channel *ch, const char *root, struct strbuf *err)
{
	static const char *const subdirs[] = { "commands", "results", "plots" };
	char *name = NULL;

	ch->dir = NULL;
	ch->notify_fd = -1;
	ch->wake_fd = -1;
	ch->chown = 0;
	if (mkdir_p(root) < 0) {
		strbuf_addf(err, "cannot create '%s': %s", root, strerror(errno));
		return -1;
	}
	name = channel_name();
	ch->dir = xasprintf("%s/%s", root, name);
	free(name);
	if (mkdir(ch->dir, 0700) < 0) {
		strbuf_addf(err, "cannot create '%s': %s", ch->dir, strerror(errno));
		goto fail;
	}
	for (size_t i = 0; i < ARRAY_SIZE(subdirs); i++) {
		char *p = channel_path(ch, subdirs[i]);
		int rc = mkdir(p, 0700);
		if (rc < 0)
			strbuf_addf(err, "cannot create '%s': %s", p, strerror(errno));
		free(p);
		if (rc < 0)
			goto fail;
	}
	{
		char *p = channel_path(ch, "wake");
		int rc = mkfifo(p, 0600);
		if (rc < 0)
			strbuf_addf(err, "cannot create '%s': %s", p, strerror(errno));
		free(p);
		if (rc < 0)
			goto fail;
	}

	channel_watch(ch);
	open_wake(ch);
	return 0;
fail:
	remove_tree(ch->dir);
	free(ch->dir);
	ch->dir = NULL;
	return -1;
}

void channel_release(struct channel *ch, int remove)
{
	if (ch->notify_fd >= 0)
		close(ch->notify_fd);
	ch->notify_fd = -1;
	if (ch->dir && remove)
		remove_tree(ch->dir);
	/* After the directory went: a runner that sees the FIFO's last writer go looks for it. */
	if (ch->wake_fd >= 0)
		close(ch->wake_fd);
	ch->wake_fd = -1;
	free(ch->dir);
	ch->dir = NULL;
}

char *channel_path(const struct channel *ch, const char *rel)
{
	return xasprintf("%s/%s", ch->dir, rel);
}

int channel_write(const struct channel *ch, const char *rel, const void *data, size_t len,
		  struct strbuf *err)
{
	char *path = channel_path(ch, rel);
	char *tmp = xasprintf("%s.tmp", path);
	int fd, rc = -1;

	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0) {
		strbuf_addf(err, "cannot write '%s': %s", tmp, strerror(errno));
		goto out;
	}
	if (ch->chown && fchown(fd, ch->uid, ch->gid) < 0) {
		strbuf_addf(err, "cannot give '%s' to uid %u: %s", tmp, (unsigned)ch->uid,
			    strerror(errno));
		close(fd);
		unlink(tmp);
		goto out;
	}
	if (write_all(fd, data, len) < 0) {
		strbuf_addf(err, "cannot write '%s': %s", tmp, strerror(errno));
		close(fd);
		unlink(tmp);
		goto out;
	}
	close(fd);
	if (rename(tmp, path) < 0) {
		strbuf_addf(err, "cannot rename '%s': %s", tmp, strerror(errno));
		unlink(tmp);
		goto out;
	}
	rc = 0;
out:
	free(tmp);
	free(path);
	return rc;
}

int channel_set_owner(struct channel *ch, uid_t uid, gid_t gid, struct strbuf *err)
{
	static const char *const names[] = { ".", "commands", "results", "plots", "runner.py",
					     "runner.R", "log", "wake" };

	ch->chown = 1;
	ch->uid = uid;
	ch->gid = gid;
	for (size_t i = 0; i < ARRAY_SIZE(names); i++) {
		char *p = channel_path(ch, names[i]);
		int rc = lchown(p, uid, gid);

		if (rc < 0 && errno != ENOENT) {
			strbuf_addf(err, "cannot give '%s' to uid %u: %s", p, (unsigned)uid,
				    strerror(errno));
			free(p);
			return -1;
		}
		free(p);
	}
	return 0;
}

int channel_drain(const struct channel *ch)
{
	char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
	int count = 0;

	if (ch->notify_fd < 0)
		return 0;
	for (;;) {
		ssize_t n = read(ch->notify_fd, buf, sizeof(buf));
		if (n <= 0)
			break;
		count++;
	}
	return count;
}

/* Remove every plain file in one subdirectory of the channel. */
static void clear_dir(const struct channel *ch, const char *sub)
{
	char *path = channel_path(ch, sub);
	DIR *d = opendir(path);
	struct dirent *de;

	if (d) {
		while ((de = readdir(d))) {
			if (de->d_name[0] == '.')
				continue;
			unlinkat(dirfd(d), de->d_name, 0);
		}
		closedir(d);
	}
	free(path);
}

void channel_clear_queue(const struct channel *ch)
{
	clear_dir(ch, "commands");
	clear_dir(ch, "results");
}

void event_reader_init(struct event_reader *r, const char *path, size_t max_line)
{
	r->fd = -1;
	r->path = xstrdup(path);
	strbuf_init(&r->pending, 0);
	r->max_line = max_line;
	r->skipped = 0;
}

void event_reader_release(struct event_reader *r)
{
	if (r->fd >= 0)
		close(r->fd);
	r->fd = -1;
	free(r->path);
	r->path = NULL;
	strbuf_release(&r->pending);
}

/* Hand out the complete lines in `pending`; returns lines delivered, or -2 when stopped. */
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
			if (fn(NULL, dropped, data)) {
				start += len + 1;
				*stopped = 1;
				break;
			}
		} else if (fn(r->pending.buf + start, len, data)) {
			start += len + 1;
			*stopped = 1;
			break;
		}
		start += len + 1;
	}
	strbuf_remove_front(&r->pending, start);
	/* A partial line already over the limit: drop it and remember how much went. */
	if (!*stopped && r->pending.len > r->max_line) {
		r->skipped += r->pending.len;
		strbuf_reset(&r->pending);
	}
	return lines;
}

int event_reader_poll(struct event_reader *r, event_line_fn fn, void *data)
{
	int total = 0, stopped = 0;

	if (r->fd < 0) {
		r->fd = open(r->path, O_RDONLY | O_CLOEXEC);
		if (r->fd < 0)
			return errno == ENOENT ? 0 : -1;
	}
	while (!stopped) {
		ssize_t n;

		if (strbuf_grow(&r->pending, 256 * 1024) < 0)
			return -1;
		n = read(r->fd, r->pending.buf + r->pending.len,
			 r->pending.alloc - r->pending.len - 1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -1;
		if (n == 0)
			break;
		r->pending.len += (size_t)n;
		r->pending.buf[r->pending.len] = '\0';
		total += deliver_lines(r, fn, data, &stopped);
	}
	return total;
}
