#include "history.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cellfile.h"
#include "kernel.h"

struct history {
	char *id, *dir, *path, *plots;
	int fd;
	/* The pruning of older sessions, run beside the session and joined at close. */
	pthread_t pruner;
	int pruning;
	size_t max_entries;
	double max_age_days;
	unsigned long long plots_cap;	/* history-plots-size; 0: none */
	long long last_at;	/* where the last history_append() wrote its line; -1: nowhere */
	size_t last_len;
};

/*
 * Whether this session prunes: the stamp `history-pruned` beside the sessions directory is
 * missing or older than HISTORY_PRUNE_EVERY (or in the future: the clock moved). A session
 * that prunes touches it first, so that the runs of the next interval leave the work to the
 * one after.
 */
static int prune_due(const char *base)
{
	const char *slash = strrchr(base, '/');
	char *path = xasprintf("%.*s/history-pruned", slash ? (int)(slash - base) : 1,
			       slash ? base : ".");
	time_t now = time(NULL);
	struct stat st;
	int fd, due = 1;

	if (lstat(path, &st) == 0 && S_ISREG(st.st_mode) && st.st_mtime <= now &&
	    now - st.st_mtime < HISTORY_PRUNE_EVERY)
		due = 0;
	if (due) {
		fd = open(path, O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
		if (fd >= 0) {
			futimens(fd, NULL);
			close(fd);
		}
	}
	free(path);
	return due;
}

/* Prune older sessions off the caller's path (it reads every stored session's file). */
static void *prune_thread(void *data)
{
	const struct history *h = data;

	history_prune(h->max_entries, h->max_age_days, h->id);
	return NULL;
}

struct history *history_open(size_t max_entries, double max_age_days, struct strbuf *err)
{
	struct history *h = xcalloc(1, sizeof(*h));
	char *base = history_sessions_dir();
	char stamp[32];
	time_t t = time(NULL);
	struct tm tm;

	localtime_r(&t, &tm);
	strftime(stamp, sizeof(stamp), "%Y%m%d-%H%M%S", &tm);
	h->fd = -1;
	h->last_at = -1;
	if (fsutil_mkdir_p(base) < 0) {
		strbuf_addf(err, "cannot create '%s': %s", base, strerror(errno));
		goto fail;
	}
	/*
	 * The session's own directory, made here and not found: two sessions one process opens
	 * in one second (an MCP server's) take STAMP-PID and STAMP-PID-2.
	 */
	for (int n = 1;; n++) {
		free(h->id);
		free(h->dir);
		h->id = n == 1 ? xasprintf("%s-%ld", stamp, (long)getpid())
			       : xasprintf("%s-%ld-%d", stamp, (long)getpid(), n);
		h->dir = xasprintf("%s/%s", base, h->id);
		if (mkdir(h->dir, 0700) == 0)
			break;
		if (errno != EEXIST || n == 1000) {
			strbuf_addf(err, "cannot create '%s': %s", h->dir, strerror(errno));
			goto fail;
		}
	}
	h->path = xasprintf("%s/history.jsonl", h->dir);
	h->plots = xasprintf("%s/plots", h->dir);
	h->fd = open(h->path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
	if (h->fd < 0) {
		strbuf_addf(err, "cannot open '%s': %s", h->path, strerror(errno));
		goto fail;
	}
	if ((max_entries || max_age_days > 0) && prune_due(base)) {
		h->max_entries = max_entries;
		h->max_age_days = max_age_days;
		h->pruning = pthread_create(&h->pruner, NULL, prune_thread, h) == 0;
		if (!h->pruning)
			history_prune(max_entries, max_age_days, h->id);
	}
	free(base);
	return h;
fail:
	free(base);
	history_close(h);
	return NULL;
}

int history_append(struct history *h, const struct history_cell *c, struct strbuf *err)
{
	cJSON *e = cJSON_CreateObject();
	char *line;
	size_t len;
	ssize_t n;
	int rc = 0;

	cJSON_AddStringToObject(e, "session", h->id);
	if (c->execution_count >= 0)
		cJSON_AddNumberToObject(e, "execution_count", c->execution_count);
	else
		cJSON_AddNullToObject(e, "execution_count");
	cJSON_AddStringToObject(e, "code", c->code ? c->code : "");
	cJSON_AddStringToObject(e, "status", c->status ? c->status : "aborted");
	if (c->reason)
		cJSON_AddStringToObject(e, "reason", c->reason);
	cJSON_AddNumberToObject(e, "duration", c->duration);
	cJSON_AddNumberToObject(e, "time", c->time ? c->time : clock_wall());
	if (c->kernel && strcmp(c->kernel, kernel_default()->name))
		cJSON_AddStringToObject(e, "kernel", c->kernel);
	cJSON_AddItemToObject(e, "outputs", c->outputs ? cJSON_Duplicate(c->outputs, 1)
						       : cJSON_CreateArray());
	line = cJSON_PrintUnformatted(e);
	cJSON_Delete(e);
	h->last_at = -1;
	len = strlen(line);
	line[len] = '\n';	/* cJSON leaves room for the NUL: the newline takes its place */
	/* One write(): a reader sees the whole line or a torn tail it skips. */
	do
		n = write(h->fd, line, len + 1);
	while (n < 0 && errno == EINTR);
	if (n != (ssize_t)(len + 1)) {
		strbuf_addf(err, "cannot append to '%s': %s", h->path,
			    n < 0 ? strerror(errno) : "short write");
		rc = -1;
	} else {
		/* O_APPEND: the offset is the file's end, just after this line */
		off_t end = lseek(h->fd, 0, SEEK_CUR);
		if (end >= (off_t)(len + 1)) {
			h->last_at = (long long)end - (long long)(len + 1);
			h->last_len = len + 1;
		}
	}
	cJSON_free(line);
	return rc;
}

long long history_last_at(const struct history *h, size_t *len)
{
	*len = h ? h->last_len : 0;
	return h ? h->last_at : -1;
}

cJSON *history_read_entry(const struct history *h, long long at, size_t len, struct strbuf *err)
{
	struct strbuf sb = STRBUF_INIT;
	struct stat st;
	cJSON *e = NULL;
	const cJSON *id;
	int fd;

	if (at < 0 || len < 2 || len > HISTORY_ENTRY_MAX) {
		strbuf_addf(err, "the history keeps no such entry (%zu bytes; at most %zu are read)",
			    len, HISTORY_ENTRY_MAX);
		return NULL;
	}
	fd = open(h->path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) ||
	    (long long)st.st_size < at + (long long)len) {
		strbuf_addf(err, "cannot read '%s': %s", h->path,
			    fd < 0 ? strerror(errno) : "not the file this session wrote");
		goto out;
	}
	strbuf_set_max(&sb, len + 1);
	while (sb.len < len) {	/* in pieces: pread() may give less than asked */
		size_t want = len - sb.len < 65536 ? len - sb.len : 65536;
		ssize_t n;
		if (strbuf_grow(&sb, want) < 0) {
			strbuf_addf(err, "the history entry is over %zu bytes", HISTORY_ENTRY_MAX);
			goto out;
		}
		n = pread(fd, sb.buf + sb.len, want, (off_t)(at + (long long)sb.len));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			strbuf_addf(err, "cannot read '%s': %s", h->path,
				    n < 0 ? strerror(errno) : "it is shorter than it was");
			goto out;
		}
		sb.len += (size_t)n;
		sb.buf[sb.len] = '\0';
	}
	e = sb.buf[len - 1] == '\n' ? cJSON_ParseWithLength(sb.buf, len - 1) : NULL;
	id = cJSON_GetObjectItemCaseSensitive(e, "session");
	if (!cJSON_IsObject(e) || !cJSON_IsString(id) || strcmp(id->valuestring, h->id)) {
		cJSON_Delete(e);
		e = NULL;
		strbuf_addf(err, "'%s' does not hold the entry this session wrote there", h->path);
	}
out:
	if (fd >= 0)
		close(fd);
	strbuf_release(&sb);
	return e;
}

/* Whether directory `path` holds anything (a session's plots/: made by some front ends first). */
static int has_entries(const char *path)
{
	DIR *d = opendir(path);
	struct dirent *de;
	int any = 0;

	while (d && !any && (de = readdir(d)))
		any = strcmp(de->d_name, ".") && strcmp(de->d_name, "..");
	if (d)
		closedir(d);
	return any;
}

void history_set_plots_cap(struct history *h, unsigned long long bytes)
{
	h->plots_cap = bytes;
}

void history_close(struct history *h)
{
	if (!h)
		return;
	if (h->pruning)
		pthread_join(h->pruner, NULL);
	/* A session that copied plots may have taken the store past its cap: the oldest go. */
	if (h->plots_cap && h->plots && has_entries(h->plots))
		history_prune_plots(h->plots_cap);
	if (h->fd >= 0)
		close(h->fd);
	free(h->id);
	free(h->dir);
	free(h->path);
	free(h->plots);
	free(h);
}

const char *history_session_id(const struct history *h) { return h->id; }
const char *history_dir(const struct history *h) { return h->dir; }
const char *history_path(const struct history *h) { return h->path; }
const char *history_plots_dir(const struct history *h) { return h->plots; }

int history_parse(const char *text, size_t len, const char *name, history_fn fn, void *data,
		  struct strbuf *warn)
{
	const char *p = text, *end = text + len;
	int lineno = 0, count = 0;

	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		cJSON *e;

		lineno++;
		if (!nl) {
			/* No newline: the writer died in the middle of this line. */
			strbuf_addf(warn, "%s:%d: incomplete last line skipped\n", name, lineno);
			break;
		}
		e = cJSON_ParseWithLength(p, (size_t)(nl - p));
		if (!cJSON_IsObject(e) ||
		    !cJSON_IsString(cJSON_GetObjectItemCaseSensitive(e, "code"))) {
			if (nl > p)
				strbuf_addf(warn, "%s:%d: corrupt line skipped\n", name, lineno);
		} else {
			count++;
			if (fn && fn(e, data)) {
				cJSON_Delete(e);
				break;
			}
		}
		cJSON_Delete(e);
		p = nl + 1;
	}
	return count;
}

struct iter_ctx {
	history_fn fn;
	void *data;
	int stopped;
};

/* Pass an entry on and remember whether the caller asked to stop. */
static int iter_one(const cJSON *entry, void *data)
{
	struct iter_ctx *c = data;

	if (c->fn && c->fn(entry, c->data))
		c->stopped = 1;
	return c->stopped;
}

int history_iter(const char *session, history_fn fn, void *data, struct strbuf *warn)
{
	char **list = history_sessions(), *base = history_sessions_dir();
	struct iter_ctx ctx = { fn, data, 0 };
	int total = 0;

	for (size_t i = 0; list[i] && !ctx.stopped; i++) {
		struct strbuf text = STRBUF_INIT;
		char *path;

		if (session && strcmp(session, list[i]))
			continue;
		path = xasprintf("%s/%s/history.jsonl", base, list[i]);
		if (strbuf_read_file(&text, path, (size_t)1 << 30) == 0)
			total += history_parse(text.buf, text.len, path, iter_one, &ctx, warn);
		else if (errno != ENOENT)
			strbuf_addf(warn, "cannot read '%s': %s\n", path, strerror(errno));
		free(path);
		strbuf_release(&text);
	}
	history_free_list(list);
	free(base);
	return total;
}

/* Count the lines of a file (its stored cells). */
static size_t count_lines(const char *path)
{
	char buf[65536];
	size_t n = 0;
	ssize_t got;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return 0;
	while ((got = read(fd, buf, sizeof(buf))) > 0)
		for (ssize_t i = 0; i < got; i++)
			n += buf[i] == '\n';
	close(fd);
	return n;
}

void history_prune(size_t max_entries, double max_age_days, const char *keep)
{
	char **list = history_sessions(), *base = history_sessions_dir();
	size_t n = 0, total = 0;
	double oldest = max_age_days > 0 ? clock_wall() - max_age_days * 86400 : 0;

	while (list[n])
		n++;
	/* Newest first: keep sessions while they fit, remove every older one after that. */
	for (size_t i = n; i-- > 0;) {
		char *dir = xasprintf("%s/%s", base, list[i]);
		char *path = xasprintf("%s/history.jsonl", dir);

		struct stat st;
		int old = oldest && stat(path, &st) == 0 && (double)st.st_mtime < oldest;

		if (keep && !strcmp(keep, list[i]))
			total += count_lines(path);
		else if (old || (max_entries && total >= max_entries))
			fsutil_remove_tree(dir);
		else
			total += count_lines(path);
		free(path);
		free(dir);
	}
	history_free_list(list);
	free(base);
}

cJSON *history_entry_cell(const cJSON *entry, int embed)
{
	const char *code = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(entry, "code"));
	const cJSON *n = cJSON_GetObjectItemCaseSensitive(entry, "execution_count");
	const cJSON *outs = cJSON_GetObjectItemCaseSensitive(entry, "outputs"), *o;
	char *trimmed = xstrdup(code ? code : "");
	size_t l = strlen(trimmed);
	cJSON *cell, *list;

	while (l && trimmed[l - 1] == '\n')
		trimmed[--l] = '\0';	/* the REPL's cells end with the newline typed */
	cell = cellfile_add_cell(NULL, "code", trimmed);
	free(trimmed);

	if (cJSON_IsNumber(n))
		cJSON_ReplaceItemInObjectCaseSensitive(cell, "execution_count",
						       cJSON_CreateNumber(n->valuedouble));
	{
		/* `time` is when the cell ended (history_append), `duration` how long it ran. */
		const cJSON *t = cJSON_GetObjectItemCaseSensitive(entry, "time");
		const cJSON *d = cJSON_GetObjectItemCaseSensitive(entry, "duration");
		if (cJSON_IsNumber(t) && t->valuedouble > 0)
			cellfile_set_timing(cell, t->valuedouble - (cJSON_IsNumber(d) ? d->valuedouble : 0),
					    t->valuedouble);
	}
	list = cJSON_GetObjectItemCaseSensitive(cell, "outputs");
	cJSON_ArrayForEach(o, outs) {
		cJSON *copy = cJSON_Duplicate(o, 1);
		cJSON *meta = cJSON_GetObjectItemCaseSensitive(copy, "metadata");
		cJSON *cb = cJSON_GetObjectItemCaseSensitive(meta, "cellbox");
		const char *plot = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(cb, "plot"));
		char *dropped = history_plot_dropped(plot);

		if (dropped) {
			/* The cap took its plot: the output says so in its place. */
			cJSON *data = cJSON_CreateObject();
			char *text = xasprintf("[plot dropped: %s]", dropped);

			cJSON_AddStringToObject(data, "text/plain", text);
			cJSON_ReplaceItemInObjectCaseSensitive(copy, "data", data);
			cJSON_AddTrueToObject(cb, "dropped");
			free(text);
			free(dropped);
		} else if (plot && embed) {
			struct strbuf png = STRBUF_INIT, b64 = STRBUF_INIT;
			cJSON *data = cJSON_GetObjectItemCaseSensitive(copy, "data");
			if (strbuf_read_file(&png, plot, (size_t)256 << 20) == 0 && cJSON_IsObject(data)) {
				base64_encode(png.buf, png.len, &b64);
				cJSON_DeleteItemFromObjectCaseSensitive(data, "image/png");
				cJSON_AddStringToObject(data, "image/png", b64.buf);
			}
			cJSON_DeleteItemFromObjectCaseSensitive(meta, "cellbox");
			strbuf_release(&png);
			strbuf_release(&b64);
		}
		cJSON_AddItemToArray(list, copy);
	}
	return cell;
}

/* Add an entry's cell to the notebook; the first says which kernel it is for (not python). */
static int add_entry(const cJSON *entry, void *data)
{
	cJSON *cells = cJSON_GetObjectItemCaseSensitive(data, "cells");

	if (!cJSON_GetArraySize(cells)) {
		const char *k = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(entry, "kernel"));
		const struct kernel_def *kd = kernel_find(k);

		if (kd)
			kernel_describe_notebook(kd, data);
	}
	cJSON_AddItemToArray(cells, history_entry_cell(entry, 1));
	return 0;
}

/* A recorded session's text as a notebook (every entry a code cell). NULL with `err`. */
static cJSON *notebook_from_text(const char *text, const char *name, struct strbuf *err)
{
	cJSON *nb = cellfile_new_notebook();
	struct strbuf warn = STRBUF_INIT;

	history_parse(text, strlen(text), name, add_entry, nb, &warn);
	if (warn.len)
		fputs(warn.buf, stderr);
	strbuf_release(&warn);
	if (!cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(nb, "cells"))) {
		strbuf_addf(err, "%s: no recorded cells", name);
		cJSON_Delete(nb);
		return NULL;
	}
	return nb;
}

/* A recorded session's file as a notebook. */
static cJSON *load_recorded(const char *path, struct strbuf *err)
{
	struct strbuf text = STRBUF_INIT;
	cJSON *nb = NULL;

	if (cellfile_read(path, &text, err) == 0)
		nb = notebook_from_text(text.buf, path, err);
	strbuf_release(&text);
	return nb;
}

cJSON *history_load(const char *path_or_id, struct strbuf *err)
{
	size_t l = strlen(path_or_id);

	if (access(path_or_id, F_OK) < 0 && !strchr(path_or_id, '/') && *path_or_id &&
	    *path_or_id != '.') {
		char *base = history_sessions_dir();
		char *path = xasprintf("%s/%s/history.jsonl", base, path_or_id);
		cJSON *nb = NULL;
		int found = access(path, F_OK) == 0;

		if (found)
			nb = load_recorded(path, err);
		free(base);
		free(path);
		if (found)
			return nb;
	}
	if (l >= 6 && !strcmp(path_or_id + l - 6, ".jsonl"))
		return load_recorded(path_or_id, err);
	return cellfile_load(path_or_id, err);
}

cJSON *history_session_notebook(const char *session, struct strbuf *err)
{
	char **list = NULL;
	cJSON *nb = cellfile_new_notebook();
	struct strbuf warn = STRBUF_INIT;

	if (!session) {
		size_t n = 0;
		list = history_sessions();
		while (list[n])
			n++;
		if (!n) {
			strbuf_addstr(err, "the history is empty: nothing to export");
			goto out;
		}
		session = list[n - 1];
	}
	history_iter(session, add_entry, nb, &warn);
	if (!cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(nb, "cells"))) {
		strbuf_addf(err, "session '%s' has no recorded cells", session);
		goto out;
	}
	history_free_list(list);
	if (warn.len)
		fputs(warn.buf, stderr);
	strbuf_release(&warn);
	return nb;
out:
	if (warn.len)
		fputs(warn.buf, stderr);
	strbuf_release(&warn);
	history_free_list(list);
	cJSON_Delete(nb);
	return NULL;
}

int history_export(const char *session, const char *path, struct strbuf *err)
{
	const char *dot = strrchr(path, '.');
	cJSON *nb;
	int rc;

	/* The format goes by the extension: never a guess (x.txt was silently percent). */
	if (!(dot && !strchr(dot, '/') && !strcmp(dot, ".ipynb")) && !kernel_for_path(path)) {
		strbuf_addf(err, "cannot export to '%s': give FILE.ipynb (a notebook) or "
			    "FILE.py, FILE.R (a percent-format script)", path);
		return -1;
	}
	nb = history_session_notebook(session, err);
	if (!nb)
		return -1;
	rc = cellfile_save(nb, path, err);
	cJSON_Delete(nb);
	return rc;
}
