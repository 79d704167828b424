/*
 * The history store's plots, capped: history-plots-size bytes of plot copies in all the
 * stored sessions together. Past it the oldest go first (the oldest session's, in the order
 * they were written), each leaving a marker "<n>.<ext>.dropped" beside where it was, a line of
 * text that says why; history_entry_cell() and the history's readers show that note in place
 * of the plot, and the cell keeps its code and its other outputs. The records themselves
 * (history.jsonl) are never rewritten: a live session appends to its own.
 */
#include "history.h"
#include "wall.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define DROPPED_SUFFIX ".dropped"
#define PLOTS_SCAN_MAX 1000000	/* plot files looked at in one prune */

/* One plot copy in the store. */
struct stored_plot {
	size_t session;		/* the session's place, oldest first */
	struct timespec mtime;
	unsigned long long bytes;	/* its disk blocks */
	char *name;		/* its name in the session's plots/ */
};

/* Oldest first: by session, then by when it was written, then by name. */
static int cmp_plot(const void *a, const void *b)
{
	const struct stored_plot *x = a, *y = b;

	if (x->session != y->session)
		return x->session < y->session ? -1 : 1;
	if (x->mtime.tv_sec != y->mtime.tv_sec)
		return x->mtime.tv_sec < y->mtime.tv_sec ? -1 : 1;
	if (x->mtime.tv_nsec != y->mtime.tv_nsec)
		return x->mtime.tv_nsec < y->mtime.tv_nsec ? -1 : 1;
	return strcmp(x->name, y->name);
}

/* Whether `name` is a marker of ours. */
static int is_marker(const char *name)
{
	size_t n = strlen(name), s = strlen(DROPPED_SUFFIX);

	return n > s && !strcmp(name + n - s, DROPPED_SUFFIX);
}

/* Add the plot files of one session's plots/ (regular files, never followed) to `v`. */
static void scan_session(int dir, size_t session, struct stored_plot **v, size_t *n,
			 size_t *alloc, unsigned long long *total)
{
	int dup_fd = dup(dir);
	DIR *d = dup_fd >= 0 ? fdopendir(dup_fd) : NULL;
	struct dirent *de;

	if (!d) {
		if (dup_fd >= 0)
			close(dup_fd);
		return;
	}
	while ((de = readdir(d)) && *n < PLOTS_SCAN_MAX) {
		struct stat st;

		if (de->d_name[0] == '.' || is_marker(de->d_name) ||
		    fstatat(dir, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISREG(st.st_mode))
			continue;
		if (*n == *alloc) {
			*alloc = *alloc ? 2 * *alloc : 64;
			*v = xrealloc(*v, *alloc * sizeof(**v));
		}
		(*v)[(*n)++] = (struct stored_plot){ .session = session, .mtime = st.st_mtim,
			.bytes = (unsigned long long)st.st_blocks * 512, .name = xstrdup(de->d_name) };
		*total += (unsigned long long)st.st_blocks * 512;
	}
	closedir(d);
}

/* Drop plot `name` of directory `dir`, leaving its marker with the note. */
static void drop_plot(int dir, const char *name, unsigned long long cap)
{
	char *marker = xasprintf("%s" DROPPED_SUFFIX, name);
	struct strbuf note = STRBUF_INIT;
	int fd;

	if (unlinkat(dir, name, 0) < 0 && errno != ENOENT)
		goto out;
	strbuf_addstr(&note, "the history's plots passed history-plots-size (");
	wall_describe_size(&note, cap);
	strbuf_addstr(&note, "): this plot, among the oldest, was dropped\n");
	fd = openat(dir, marker, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd >= 0) {
		fsutil_write_all(fd, note.buf, note.len);
		close(fd);
	}
out:
	strbuf_release(&note);
	free(marker);
}

int history_prune_plots(unsigned long long cap)
{
	char **list, *base;
	struct stored_plot *v = NULL;
	size_t n = 0, alloc = 0, nsessions = 0;
	unsigned long long total = 0;
	int *dirs, dropped = 0;

	if (!cap)
		return 0;
	list = history_sessions();
	base = history_sessions_dir();
	while (list[nsessions])
		nsessions++;
	dirs = xcalloc(nsessions + 1, sizeof(*dirs));
	for (size_t i = 0; i < nsessions; i++) {
		char *path = xasprintf("%s/%s/plots", base, list[i]);

		dirs[i] = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (dirs[i] >= 0)
			scan_session(dirs[i], i, &v, &n, &alloc, &total);
		free(path);
	}
	if (total > cap) {
		qsort(v, n, sizeof(*v), cmp_plot);
		for (size_t i = 0; i < n && total > cap; i++) {
			drop_plot(dirs[v[i].session], v[i].name, cap);
			total -= v[i].bytes;
			dropped++;
		}
	}
	for (size_t i = 0; i < n; i++)
		free(v[i].name);
	free(v);
	for (size_t i = 0; i < nsessions; i++)
		if (dirs[i] >= 0)
			close(dirs[i]);
	free(dirs);
	history_free_list(list);
	free(base);
	return dropped;
}

char *history_plot_dropped(const char *plot)
{
	struct strbuf note = STRBUF_INIT;
	char *marker;
	struct stat st;

	if (!plot || lstat(plot, &st) == 0 || errno != ENOENT)
		return NULL;
	marker = xasprintf("%s" DROPPED_SUFFIX, plot);
	if (strbuf_read_file(&note, marker, 512) < 0 || !note.len) {
		strbuf_release(&note);
		free(marker);
		return NULL;
	}
	free(marker);
	while (note.len && note.buf[note.len - 1] == '\n')
		note.buf[--note.len] = '\0';
	return strbuf_detach(&note, NULL);
}
