/*
 * The queue's files in the channel: the host's writes to its host part (commands, files, the
 * runner) and the results file of each request, made by the host in the kernel part.
 */
#include "channel.h"
#include "channel_int.h"
#include "wall.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int channel_give(const struct channel *ch, int fd, const char *shown, struct strbuf *err)
{
	if (ch->other_user && fchown(fd, ch->uid, ch->gid) < 0) {
		strbuf_addf(err, "cannot give '%s' to uid %u: %s", shown, (unsigned)ch->uid,
			    strerror(errno));
		return -1;
	}
	return 0;
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
	char *shown = xasprintf("%s/%s", ch->host_dir, rel);
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
	char *shown = xasprintf("%s/commands", ch->host_dir);
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
	char *shown = name ? xasprintf("%s/commands/%s", ch->host_dir, name) : NULL;
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
		strbuf_addf(err, "cannot create '%s/results/%s': %s", ch->kernel_dir, file,
			    strerror(errno));
		goto out;
	}
	if (channel_give(ch, fd, file, err) < 0) {
		close(fd);
		fd = -1;
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
