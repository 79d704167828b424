/* Pooled mode, the client's side: leasing a warm kernel by rename. */
#include "pool_lease.h"
#include "wall.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/inotify.h>
#include <unistd.h>

#include "kernel.h"

char *pool_dir_path(const char *runtime_dir, const char *name)
{
	return xasprintf("%s/pool/%s", runtime_dir, name && *name ? name : "default");
}

int pool_strategy_parse(const char *s, enum pool_strategy *out)
{
	if (!strcmp(s, "wait"))
		*out = POOL_WAIT;
	else if (!strcmp(s, "fail-fast") || !strcmp(s, "fail_fast"))
		*out = POOL_FAIL_FAST;
	else if (!strcmp(s, "temporary"))
		*out = POOL_TEMPORARY;
	else
		return -1;
	return 0;
}

int pool_daemon_alive(const char *pool_dir)
{
	char *path = xasprintf("%s/daemon.lock", pool_dir);
	int fd = open(path, O_RDONLY | O_CLOEXEC), alive = 0;

	free(path);
	if (fd < 0)
		return 0;
	if (flock(fd, LOCK_SH | LOCK_NB) < 0 && errno == EWOULDBLOCK)
		alive = 1;
	close(fd);
	return alive;
}

/* Take any ready kernel by renaming its entry; 1 when one was taken. */
static int try_take(const char *pool_dir, struct pool_lease *lease)
{
	char *ready = xasprintf("%s/ready", pool_dir);
	DIR *d = opendir(ready);
	struct dirent *de;
	int taken = 0;

	while (d && !taken && (de = readdir(d))) {
		char *from, *to;

		if (de->d_name[0] == '.')
			continue;
		from = xasprintf("%s/%s", ready, de->d_name);
		to = xasprintf("%s/leased/%s.%ld", pool_dir, de->d_name, (long)getpid());
		if (rename(from, to) == 0) {
			lease->entry = to;
			lease->channel_dir = xasprintf("%s/kernels/%s", pool_dir, de->d_name);
			taken = 1;
		} else {
			free(to);
		}
		free(from);
	}
	if (d)
		closedir(d);
	free(ready);
	return taken;
}

int pool_lease(const char *pool_dir, enum pool_strategy strategy, double timeout,
	       struct pool_lease *lease, struct strbuf *err)
{
	char *ready = NULL, *want = NULL;
	double deadline = clock_now() + timeout;
	int fd = -1, rc = -1;

	memset(lease, 0, sizeof(*lease));
	/* A pool that is not ours alone could hand us anyone's kernel: refuse it, loudly. */
	if (access(pool_dir, F_OK) == 0 && wall_own_dir(pool_dir, 0, err) < 0)
		return -1;
	if (!pool_daemon_alive(pool_dir)) {
		strbuf_addf(err, "no pool daemon serves '%s' (start one with 'cellbox pool serve')",
			    pool_dir);
		/* fail-fast asked for a pooled kernel or none: not a fresh one behind its back */
		if (strategy == POOL_FAIL_FAST) {
			strbuf_addstr(err, "; --pool-strategy fail-fast starts no kernel of its own");
			return -1;
		}
		return 0;
	}
	for (;;) {
		struct pollfd pfd;
		double left;

		if (try_take(pool_dir, lease)) {
			rc = 1;
			goto out;
		}
		if (strategy == POOL_FAIL_FAST) {
			strbuf_addf(err, "pool exhausted: no free kernel in '%s'", pool_dir);
			goto out;
		}
		if (strategy == POOL_TEMPORARY) {
			strbuf_addf(err, "pool exhausted: starting a temporary kernel");
			rc = 0;
			goto out;
		}
		if (fd < 0) {
			/* Wait for a ready entry; tell the daemon someone is waiting. */
			ready = xasprintf("%s/ready", pool_dir);
			want = xasprintf("%s/" POOL_WANT_DIR "/%ld", pool_dir, (long)getpid());
			close(open(want, O_WRONLY | O_CREAT | O_CLOEXEC, 0600));
			fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
			if (fd >= 0)
				inotify_add_watch(fd, ready, IN_CREATE | IN_MOVED_TO);
			continue;	/* look again: one may have come before the watch */
		}
		left = deadline - clock_now();
		if (left <= 0) {
			strbuf_addf(err, "pool exhausted: no kernel became free within %g s", timeout);
			goto out;
		}
		if (!pool_daemon_alive(pool_dir)) {
			strbuf_addf(err, "the pool daemon of '%s' stopped", pool_dir);
			rc = 0;
			goto out;
		}
		pfd.fd = fd;
		pfd.events = POLLIN;
		/* inotify, or a 10 ms poll without it; check the daemon at least every second */
		if (poll(fd >= 0 ? &pfd : NULL, fd >= 0 ? 1 : 0,
			 fd >= 0 ? (int)(left > 1 ? 1000 : left * 1000 + 1) : 10) > 0) {
			char buf[4096];
			while (read(fd, buf, sizeof(buf)) > 0)
				;
		}
	}
out:
	if (want)
		unlink(want);
	if (fd >= 0)
		close(fd);
	free(ready);
	free(want);
	return rc;
}

cJSON *pool_info(const char *pool_dir)
{
	struct strbuf text = STRBUF_INIT;
	char *p = xasprintf("%s/daemon.json", pool_dir);
	cJSON *info = NULL;

	if (strbuf_read_file(&text, p, 1u << 16) == 0)
		info = cJSON_Parse(text.buf);
	strbuf_release(&text);
	free(p);
	return info;
}

char *pool_backend(const char *pool_dir)
{
	cJSON *info = pool_info(pool_dir);
	const char *b = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(info, "backend"));
	char *backend = b ? xstrdup(b) : NULL;

	cJSON_Delete(info);
	return backend;
}

char *pool_kernel(const char *pool_dir)
{
	cJSON *info = pool_info(pool_dir);
	const char *k = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(info, "kernel"));
	char *kernel = NULL;

	if (info)	/* a daemon that did not say served python */
		kernel = xstrdup(k ? k : kernel_default()->name);
	cJSON_Delete(info);
	return kernel;
}

int pool_lease_daemon_alive(const struct pool_lease *lease)
{
	const char *slash = lease->entry ? strrchr(lease->entry, '/') : NULL;
	char *dir;
	int alive;

	if (!slash)
		return 0;
	dir = xstrndup(lease->entry, (size_t)(slash - lease->entry));	/* <pool>/leased */
	*strrchr(dir, '/') = '\0';
	alive = pool_daemon_alive(dir);
	free(dir);
	return alive;
}

void pool_lease_release(struct pool_lease *lease)
{
	if (lease->entry)
		unlink(lease->entry);
	free(lease->entry);
	free(lease->channel_dir);
	memset(lease, 0, sizeof(*lease));
}
