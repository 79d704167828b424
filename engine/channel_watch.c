/*
 * The channel's watches: inotify on its directories and their drain (a part of the channel
 * removed or moved is noticed there).
 */
#include "channel.h"
#include "channel_int.h"

#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* Watch what a descriptor names (the path of /proc/self/fd/N is that very directory). */
int channel_watch_fd(const struct channel *ch, int fd, uint32_t mask)
{
	char path[64];

	if (ch->notify_fd < 0 || fd < 0)
		return -1;
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	return inotify_add_watch(ch->notify_fd, path, mask | IN_ONLYDIR);
}

static const char *const layout[] = { "host", "kernel", "plots", "commands", "files", "runner.zip",
				      "runner.R", "wake", "results", "out", "ready", "log", NULL };

/* Whether `name` is an entry of the channel's layout. */
static int in_layout(const char *name)
{
	for (size_t i = 0; layout[i]; i++)
		if (!strcmp(layout[i], name))
			return 1;
	return 0;
}

/* Start watching the host's own directories (the kernel part is watched by its reset). */
void channel_watch_host(struct channel *ch)
{
	ch->notify_fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	ch->wd[WD_DIR] = channel_watch_fd(ch, ch->dir_fd, LOST_MASK);
	ch->wd[WD_HOST] = channel_watch_fd(ch, ch->host_fd, LOST_MASK);
}

int channel_drain(struct channel *ch)
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
		for (char *p = buf; p < buf + n;) {
			const struct inotify_event *ev = (const struct inotify_event *)p;
			int ours = 0;

			for (size_t i = 0; i < ARRAY_SIZE(ch->wd); i++)
				ours |= ch->wd[i] >= 0 && ch->wd[i] == ev->wd;
			if (ours && (ev->mask & (IN_DELETE_SELF | IN_MOVE_SELF | IN_UNMOUNT)))
				ch->lost = 1;
			if (ours && ev->wd != ch->wd[WD_RESULTS] && ev->len &&
			    (ev->mask & (IN_DELETE | IN_MOVED_FROM)) && in_layout(ev->name))
				ch->lost = 1;
			p += sizeof(*ev) + ev->len;
		}
		/* Room left for the longest event: the queue was empty (no read for EAGAIN). */
		if ((size_t)n <= sizeof(buf) - sizeof(struct inotify_event) - NAME_MAX - 1)
			break;
	}
	return count;
}
