/*
 * Pooled mode, the daemon as a process: which process serves a pool (the holder of its
 * daemon.lock, never a pid read from a file), signalling it through a pidfd, and the daemon's
 * log opened inside a checked pool directory (pool_daemon.h).
 */
#include "pool_daemon.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>

/* Open `name` in the pool (dirfd) never following a link: a regular file of ours, one link. */
static int open_ours(int dirfd, const char *name, int flags, struct strbuf *err)
{
	struct stat st;
	int fd = openat(dirfd, name, flags | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC, 0600);

	if (fd < 0) {
		strbuf_addf(err, "cannot open the pool's %s: %s", name, strerror(errno));
		return -1;
	}
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid() ||
	    st.st_nlink != 1) {
		strbuf_addf(err, "the pool's %s is not a regular file of ours with one link: "
			    "refusing it", name);
		close(fd);
		return -1;
	}
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
	return fd;
}

int pool_log_open(int dirfd, struct strbuf *err)
{
	return open_ours(dirfd, "daemon.log", O_WRONLY | O_CREAT | O_APPEND, err);
}

/*
 * The process holding an exclusive flock on the file `st` is: /proc/locks names it
 * ("1: FLOCK  ADVISORY  WRITE PID MAJ:MIN:INODE 0 EOF"); 0 when none does.
 */
static pid_t flock_holder(const struct stat *st)
{
	FILE *f = fopen("/proc/locks", "re");
	char line[256], want[64];
	pid_t pid = 0;

	if (!f)
		return 0;
	snprintf(want, sizeof(want), "%02x:%02x:%lu", major(st->st_dev), minor(st->st_dev),
		 (unsigned long)st->st_ino);
	while (!pid && fgets(line, sizeof(line), f)) {
		char kind[16], mode[16], dev[64];
		long p;

		if (strstr(line, "->") ||
		    sscanf(line, "%*d: %15s %*s %15s %ld %63s", kind, mode, &p, dev) != 4)
			continue;
		if (!strcmp(kind, "FLOCK") && !strcmp(mode, "WRITE") && !strcmp(dev, want) && p > 0)
			pid = (pid_t)p;
	}
	fclose(f);
	return pid;
}

pid_t pool_daemon_pid(int dirfd)
{
	struct stat st;
	int fd = openat(dirfd, "daemon.lock", O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	pid_t pid = 0;

	if (fd < 0)
		return 0;
	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == geteuid())
		pid = flock_holder(&st);
	close(fd);
	return pid;
}

/* The real uid of process `pid` (its /proc status), or -1. */
static long process_uid(pid_t pid)
{
	struct strbuf text = STRBUF_INIT;
	char *path = xasprintf("/proc/%ld/status", (long)pid);
	const char *u;
	long uid = -1;

	if (strbuf_read_file(&text, path, 1 << 16) == 0 && (u = strstr(text.buf, "\nUid:")))
		uid = strtol(u + 5, NULL, 10);
	strbuf_release(&text);
	free(path);
	return uid;
}

int pool_daemon_signal(int dirfd, int sig, pid_t *pid, struct strbuf *err)
{
	pid_t holder = pool_daemon_pid(dirfd);
	int pidfd;

	*pid = holder;
	if (!holder) {
		strbuf_addstr(err, "no process holds the pool's lock");
		return -1;
	}
	pidfd = (int)syscall(SYS_pidfd_open, holder, 0);
	if (pidfd < 0) {
		strbuf_addf(err, "cannot open process %ld: %s", (long)holder, strerror(errno));
		return -1;
	}
	/*
	 * With the pidfd held, the pid cannot name another process: check that it is ours and
	 * still the lock's holder (not a process that took the number since), then signal it.
	 */
	if (process_uid(holder) != (long)geteuid() || pool_daemon_pid(dirfd) != holder) {
		strbuf_addf(err, "process %ld is not this pool's daemon of ours: not signalled",
			    (long)holder);
		close(pidfd);
		return -1;
	}
	if (syscall(SYS_pidfd_send_signal, pidfd, sig, NULL, 0) < 0) {
		strbuf_addf(err, "cannot signal process %ld: %s", (long)holder, strerror(errno));
		close(pidfd);
		return -1;
	}
	return pidfd;
}
