/* Pooled mode, the pool directory: leases, waiting clients, leftovers, daemon.json. */
#include "pool_int.h"
#include "pool_daemon.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend.h"
#include "channel.h"
#include "kernel.h"

/* Find a kernel of the table by name. */
static struct pkernel *find(struct daemon *d, const char *name)
{
	for (size_t i = 0; i < d->nk; i++)
		if (!strcmp(d->k[i].name, name))
			return &d->k[i];
	return NULL;
}

/* Bring the table in line with ready/ and leased/: new leases, releases, dead clients. */
void pool_sync_leases(struct daemon *d)
{
	char *leased = pool_path(d, "leased", NULL);
	DIR *dir = opendir(leased);
	struct dirent *de;

	for (size_t i = 0; i < d->nk; i++) {
		struct pkernel *k = &d->k[i];
		char *p;

		if (k->client) {
			k->client = -k->client;		/* unseen until found below */
		} else if (!k->dying) {
			/*
			 * Not in ready/ (looked at before leased/, so a lease cannot slip between):
			 * leased since, and maybe released already, before we saw it.
			 */
			p = pool_path(d, "ready", k->name);
			if (access(p, F_OK) < 0 && errno == ENOENT)
				k->client = -1;
			free(p);
		}
	}
	while (dir && (de = readdir(dir))) {
		char *dot = strrchr(de->d_name, '.'), *name;
		pid_t client;
		struct pkernel *k;

		if (de->d_name[0] == '.' || !dot)
			continue;
		client = (pid_t)atol(dot + 1);
		name = xstrndup(de->d_name, (size_t)(dot - de->d_name));
		k = find(d, name);
		if (client == getpid()) {
			/* our own health-check lease, left by a crash of the check: put it back */
		} else if (!process_alive(client)) {
			char *p = pool_path(d, "leased", de->d_name);
			unlink(p);
			free(p);
			if (k && !k->dying) {
				pool_destroy(d, k, "its client died");
			} else if (!k) {
				p = pool_path(d, "kernels", name);
				channel_remove_dir(p);
				free(p);
			}
		} else if (k) {
			if (k->client == 0 || k->client == -1)
				pool_log(d, "kernel %s leased to pid %ld", k->name, (long)client);
			k->client = client;
		}
		free(name);
	}
	if (dir)
		closedir(dir);
	free(leased);
	for (size_t i = 0; i < d->nk; i++) {
		struct pkernel *k = &d->k[i];
		if (k->client < 0 && !k->dying) {
			/* The client gave the kernel up: it ends it; make sure, and clean up. */
			k->client = 0;
			pool_destroy(d, k, "released by its client");
		}
	}
}

/* The number of clients waiting for a kernel. */
int pool_waiting_clients(struct daemon *d)
{
	char *want = pool_path(d, POOL_WANT_DIR, NULL);
	DIR *dir = opendir(want);
	struct dirent *de;
	int n = 0;

	while (dir && (de = readdir(dir))) {
		if (de->d_name[0] == '.')
			continue;
		if (process_alive((pid_t)atol(de->d_name))) {
			n++;
		} else {
			char *p = pool_path(d, POOL_WANT_DIR, de->d_name);
			unlink(p);
			free(p);
		}
	}
	if (dir)
		closedir(dir);
	free(want);
	return n;
}

/* Remove what a previous daemon left: ready entries, dead leases, unowned channels. */
void pool_clean_leftovers(struct daemon *d)
{
	static const char *const subdirs[] = { "ready", "kernels" };
	struct daemon probe = *d;

	probe.nk = 0;
	probe.k = NULL;
	pool_sync_leases(&probe);		/* drops leases whose clients died */
	/*
	 * A crashed daemon's containers carry its pid: they are a dead process's now. On each of
	 * the pool's engines (--engine), else on its one.
	 */
	for (size_t e = 0; d->containers && e < (d->pc->nengines ? d->pc->nengines : 1); e++) {
		struct strbuf out = STRBUF_INIT, err = STRBUF_INIT;
		const char *host = d->pc->nengines ? d->pc->engines[e] : d->kopts.sandbox.host;
		int n = backend_gc(d->backend, host, d->kopts.runtime_dir, &out, &err);

		if (n < 0)
			pool_log(d, "cannot remove a previous daemon's containers: %s", err.buf);
		else if (n > 0)
			pool_log(d, "removed %d container%s a previous daemon left", n, n == 1 ? "" : "s");
		strbuf_release(&out);
		strbuf_release(&err);
	}
	for (size_t i = 0; i < ARRAY_SIZE(subdirs); i++) {
		char *path = pool_path(d, subdirs[i], NULL);
		DIR *dir = opendir(path);
		struct dirent *de;

		while (dir && (de = readdir(dir))) {
			char *p, *pattern;
			int leased = 0;

			if (de->d_name[0] == '.')
				continue;
			if (i == 1) {
				/* keep the channel of a kernel a live client still holds */
				char *ld = pool_path(d, "leased", NULL);
				DIR *l = opendir(ld);
				struct dirent *le;
				pattern = xasprintf("%s.", de->d_name);
				while (l && (le = readdir(l)))
					leased |= !strncmp(le->d_name, pattern, strlen(pattern));
				if (l)
					closedir(l);
				free(ld);
				free(pattern);
			}
			if (leased)
				continue;
			p = xasprintf("%s/%s", path, de->d_name);
			channel_remove_dir(p);
			free(p);
		}
		if (dir)
			closedir(dir);
		free(path);
	}
}

/* Write daemon.json: who serves the pool and how. */
void pool_write_info(struct daemon *d)
{
	const struct kernel_def *k;
	cJSON *o = cJSON_CreateObject();
	char *text, *path = pool_path(d, "daemon.json", NULL);
	struct strbuf err = STRBUF_INIT;

	cJSON_AddNumberToObject(o, "pid", getpid());
	cJSON_AddNumberToObject(o, "started", clock_wall());
	cJSON_AddNumberToObject(o, "min_size", d->pc->min_size);
	cJSON_AddNumberToObject(o, "max_size", d->pc->max_size);
	cJSON_AddBoolToObject(o, "prewarm", d->pc->prewarm);
	cJSON_AddNumberToObject(o, "idle_timeout", d->pc->idle_timeout);
	cJSON_AddNumberToObject(o, "max_age", d->pc->max_age);
	cJSON_AddNumberToObject(o, "health_interval", d->pc->health_interval);
	cJSON_AddStringToObject(o, "preimport", d->pc->preimport ? d->pc->preimport : "");
	cJSON_AddStringToObject(o, "backend", d->backend);
	k = d->kopts.kernel ? kernel_find(d->kopts.kernel) : NULL;
	cJSON_AddStringToObject(o, "kernel", (k ? k : kernel_default())->name);
	if (d->kopts.sandbox.host)
		cJSON_AddStringToObject(o, "host", d->kopts.sandbox.host);
	pool_engines_json(d, o);
	text = cJSON_Print(o);
	if (fsutil_write_atomic(path, text, strlen(text), 0600, &err) < 0)
		pool_log(d, "%s", err.buf);
	strbuf_release(&err);
	cJSON_free(text);
	cJSON_Delete(o);
	free(path);
}
