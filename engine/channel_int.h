#ifndef CELLBOX_CHANNEL_INT_H
#define CELLBOX_CHANNEL_INT_H

/*
 * What the files of the channel share. Internal: included by channel.c, channel_queue.c and
 * channel_watch.c. channel.c is the channel's layout: its two one-way parts made, attached,
 * reset, recreated and released. channel_queue.c is the queue's files: the host's writes and
 * the results files. channel_watch.c is what inotify tells: the watches on the channel's
 * directories and their drain (a part removed or moved loses the channel). channel_read.c,
 * the reading of the kernel part (ready, log, results, plots), and channel_gc.c, a channel's
 * removal and the gc of dead processes' channels, need neither.
 *
 * Include channel.h before it (struct channel): it does not include channel.h itself, as
 * channel.c, channel.h's own file, includes it (no include circle).
 */

#include <stdint.h>
#include "util.h"
#include <sys/inotify.h>

struct channel;

/* Which of struct channel's wd[] watches what. */
enum { WD_DIR, WD_HOST, WD_KERNEL, WD_RESULTS, WD_COUNT };
/*
 * What says the channel lost a part: a watched directory moved or deleted, or one of the
 * entries of its layout removed or renamed away (a directory we hold open is deleted for
 * inotify only when we close it, so its parent's IN_DELETE is what shows).
 */
#define LOST_MASK (IN_DELETE_SELF | IN_MOVE_SELF | IN_DELETE | IN_MOVED_FROM)
/*
 * results/: a write is what tells of events (IN_MODIFY). Not IN_CLOSE_WRITE: the runner's
 * close after its done, and our own close of each results file (we open it read-write), woke
 * the host once more per request for nothing.
 */
#define RESULTS_MASK (IN_MODIFY | IN_MOVE_SELF | IN_DELETE_SELF)

/* Watch what a descriptor names (the path of /proc/self/fd/N is that very directory). */
int channel_watch_fd(const struct channel *ch, int fd, uint32_t mask);
/* Start watching the host's own directories (the kernel part is watched by its reset). */
void channel_watch_host(struct channel *ch);
/* Give a descriptor of ours, just made, to the kernel's user (channel_queue.c). 0 or -1. */
int channel_give(const struct channel *ch, int fd, const char *shown, struct strbuf *err);

#endif
