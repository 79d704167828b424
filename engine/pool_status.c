/* Pooled mode, `pool status`: a pool described from its files alone. */
#include "pool_daemon.h"

#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "backend.h"

/* Seconds since a file was last changed, or -1. */
static double age_of(const char *path)
{
	struct stat st;

	if (stat(path, &st) < 0)
		return -1;
	return clock_wall() - ((double)st.st_mtim.tv_sec + (double)st.st_mtim.tv_nsec / 1e9);
}

/* The pid of a pooled kernel as this machine sees it, or 0. */
static long kernel_pid(const char *pool_dir, const char *name)
{
	struct strbuf text = STRBUF_INIT;
	char *dir = xasprintf("%s/kernels/%s", pool_dir, name);
	char *p = xasprintf("%s/kernel/ready", dir);
	cJSON *ready = NULL;
	long pid;

	if (strbuf_read_file(&text, p, 4096) == 0)
		ready = cJSON_Parse(text.buf);
	pid = backend_kernel_pid(dir, ready);
	cJSON_Delete(ready);
	strbuf_release(&text);
	free(p);
	free(dir);
	return pid;
}

/*
 * Add "alive" to a kernel's status, as its backend tells (its process, or its container,
 * then also named as "container").
 */
static void add_liveness(cJSON *k, const char *pool_dir, const char *name, const char *backend,
			 const char *host, pid_t pid)
{
	struct strbuf id = STRBUF_INIT;
	struct sandbox_opts sb = { .host = host };
	char *dir = xasprintf("%s/kernels/%s", pool_dir, name);
	struct kernel_handle h = { .channel_dir = dir, .pid = pid, .sandbox = &sb };
	int running = backend_running(backend ? backend : BACKEND_DEFAULT, &h, &id) == 1;

	if (id.len)
		cJSON_AddStringToObject(k, "container", id.buf);
	cJSON_AddBoolToObject(k, "alive", running);
	strbuf_release(&id);
	free(dir);
}

cJSON *pool_status(const char *pool_dir, struct strbuf *err)
{
	static const char *const kinds[] = { "ready", "leased" };
	cJSON *o = cJSON_CreateObject(), *info;
	const char *backend, *host;
	struct stat st;

	if (stat(pool_dir, &st) < 0) {
		strbuf_addf(err, "no pool at '%s' (start one with 'cellbox pool serve')", pool_dir);
		cJSON_Delete(o);
		return NULL;
	}
	cJSON_AddStringToObject(o, "pool", pool_dir);
	info = pool_info(pool_dir);
	cJSON_AddBoolToObject(o, "daemon_alive", pool_daemon_alive(pool_dir));
	cJSON_AddItemToObject(o, "daemon", info ? info : cJSON_CreateNull());
	backend = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(info, "backend"));
	host = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(info, "host"));
	for (size_t i = 0; i < ARRAY_SIZE(kinds); i++) {
		char *dpath = xasprintf("%s/%s", pool_dir, kinds[i]);
		cJSON *arr = cJSON_AddArrayToObject(o, kinds[i]);
		DIR *dir = opendir(dpath);
		struct dirent *de;

		while (dir && (de = readdir(dir))) {
			cJSON *k;
			char *name, *dot, *rp;
			long pid;

			if (de->d_name[0] == '.')
				continue;
			dot = i == 1 ? strrchr(de->d_name, '.') : NULL;
			name = dot ? xstrndup(de->d_name, (size_t)(dot - de->d_name)) : xstrdup(de->d_name);
			pid = kernel_pid(pool_dir, name);
			rp = xasprintf("%s/kernels/%s/kernel/ready", pool_dir, name);
			k = cJSON_CreateObject();
			cJSON_AddStringToObject(k, "name", name);
			cJSON_AddNumberToObject(k, "pid", (double)pid);
			add_liveness(k, pool_dir, name, backend, host, (pid_t)pid);
			cJSON_AddNumberToObject(k, "age", age_of(rp));
			if (dot) {
				pid_t client = (pid_t)atol(dot + 1);
				cJSON_AddNumberToObject(k, "client", client);
				cJSON_AddBoolToObject(k, "client_alive", process_alive(client));
			}
			cJSON_AddItemToArray(arr, k);
			free(rp);
			free(name);
		}
		if (dir)
			closedir(dir);
		free(dpath);
	}
	return o;
}
