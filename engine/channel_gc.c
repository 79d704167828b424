/*
 * A channel removed: one by its path (our tmpfs unmounted first), one a container's label
 * names (only below our runtime directory), and the gc of the channels dead processes left.
 * The channel's release, recreation, the pool and the docker family's gc call it.
 */
#include "channel.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
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
		if (channel_kept(path)) {	/* handed over: its keeper lives */
			free(path);
			continue;
		}
		channel_remove_dir(path);
		if (out)
			strbuf_addf(out, "removed channel %s of process %ld\n", path, pid);
		free(path);
		removed++;
	}
	closedir(d);
	return removed;
}

int channel_keep(const char *dir, struct strbuf *err)
{
	char *path = xasprintf("%s/" CHANNEL_KEEPER_FILE, dir), text[24];
	int n = snprintf(text, sizeof(text), "%ld\n", (long)getpid());
	int rc = fsutil_write_atomic(path, text, (size_t)n, 0600, err);

	free(path);
	return rc;
}

int channel_kept(const char *dir)
{
	char *path = xasprintf("%s/" CHANNEL_KEEPER_FILE, dir), text[24];
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	struct stat st;
	ssize_t n = -1;
	long pid = 0;

	free(path);
	if (fd < 0)
		return 0;
	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == geteuid())
		n = read(fd, text, sizeof(text) - 1);
	close(fd);
	if (n > 0) {
		text[n] = '\0';
		pid = strtol(text, NULL, 10);
	}
	return pid > 0 && (kill((pid_t)pid, 0) == 0 || errno != ESRCH);
}

/* Whether directory `fd` is ours alone to change: our uid, no write for group or others. */
static int ours_alone(int fd)
{
	struct stat st;

	return fstat(fd, &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == geteuid() &&
	       !(st.st_mode & 022);
}

/* Unmount our tmpfs on `<at>/<name>/kernel` and remove `<at>/<name>`, nothing followed. */
static int remove_channel_at(int at, const char *name)
{
	int fd = openat(at, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	struct stat top, st;
	char path[64];

	if (fd < 0)
		return -1;
	if (fstat(fd, &top) < 0 || top.st_uid != geteuid()) {
		close(fd);
		return -1;
	}
	if (fstatat(fd, "kernel", &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode) &&
	    st.st_dev != top.st_dev) {
		/* The very directory we hold: its path through our descriptor, not a name again. */
		snprintf(path, sizeof(path), "/proc/self/fd/%d/kernel", fd);
		umount2(path, MNT_DETACH | UMOUNT_NOFOLLOW);
	}
	close(fd);
	return fsutil_remove_tree_at(at, name, REMOVE_TREE_DEPTH);
}

int channel_remove_labelled(const char *root, const char *dir, long pid)
{
	size_t n = root ? strlen(root) : 0;
	const char *p;
	int fd, rc = -1;

	while (n > 1 && root[n - 1] == '/')
		n--;
	if (!n || root[0] != '/' || !dir || strncmp(dir, root, n) || dir[n] != '/')
		return -1;
	{
		char *top = xstrndup(root, n);

		/* The runtime directory as configured (links on its way are the admin's). */
		fd = open(top, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		free(top);
	}
	if (fd < 0)
		return -1;
	for (p = dir + n + 1;;) {
		size_t len = strcspn(p, "/");
		char part[256];
		int next;

		if (!ours_alone(fd) || !len || len >= sizeof(part))
			break;
		memcpy(part, p, len);
		part[len] = '\0';
		if (!strcmp(part, ".") || !strcmp(part, ".."))
			break;
		if (!p[len]) {
			/* The channel itself: a channel's name, of the label's process. */
			if (channel_owner_pid(part) == pid && pid > 0)
				rc = remove_channel_at(fd, part) < 0 ? -1 : 0;
			break;
		}
		/* A directory on the way (the pool's): never a link, ours alone. */
		next = openat(fd, part, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		close(fd);
		fd = next;
		if (fd < 0)
			break;
		p += len + 1;
	}
	if (fd >= 0)
		close(fd);
	return rc;
}
