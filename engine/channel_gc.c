/*
 * A channel removed: one by its path (our tmpfs unmounted first), and the gc of the channels
 * dead processes left. The channel's release, recreation and the pool call it.
 */
#include "channel.h"

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

void channel_remove_dir(const char *dir)
{
	char *kernel = xasprintf("%s/kernel", dir);
	struct stat top, st;

	/* A tmpfs of ours sits on kernel/ when the two are on different devices. */
	if (lstat(dir, &top) == 0 && S_ISDIR(top.st_mode) && lstat(kernel, &st) == 0 &&
	    S_ISDIR(st.st_mode) && st.st_dev != top.st_dev)
		umount2(kernel, MNT_DETACH | UMOUNT_NOFOLLOW);
	fsutil_remove_tree(dir);
	free(kernel);
}

/* The pid a channel's name starts with ("<pid>-<n>-<hex>"), or 0 when it is no channel's. */
static long channel_owner_pid(const char *name)
{
	char *end;
	long pid = strtol(name, &end, 10);
	unsigned long n;

	if (end == name || *end != '-' || pid <= 0)
		return 0;
	n = strtoul(end + 1, &end, 10);
	(void)n;
	if (*end != '-' || strlen(end + 1) != 16 || strspn(end + 1, "0123456789abcdef") != 16)
		return 0;
	return pid;
}

int channel_gc(const char *root, struct strbuf *out)
{
	struct dirent *de;
	DIR *d = opendir(root);
	int removed = 0;

	if (!d)
		return 0;
	while ((de = readdir(d))) {
		long pid = channel_owner_pid(de->d_name);
		struct stat st;
		char *path;

		/* Only a dead process's: a live one (or one that reused the pid) keeps its own. */
		if (!pid || pid == getpid() || kill((pid_t)pid, 0) == 0 || errno != ESRCH)
			continue;
		if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
		    !S_ISDIR(st.st_mode) || st.st_uid != geteuid())
			continue;
		path = xasprintf("%s/%s", root, de->d_name);
		channel_remove_dir(path);
		if (out)
			strbuf_addf(out, "removed channel %s of process %ld\n", path, pid);
		free(path);
		removed++;
	}
	closedir(d);
	return removed;
}
