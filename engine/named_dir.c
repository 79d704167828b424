/*
 * The named sessions' directory: names, each session's RUNTIME/sessions/NAME/ (the runtime
 * directory's rules: ours and 0700), connecting to its host, asking it, `cellbox ls` and
 * `cellbox kill`. See named_int.h.
 */
#include "named_int.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "clock.h"
#include "fsutil.h"
#include "random.h"
#include "util.h"
#include "wall.h"

int named_name_ok(const char *name)
{
	size_t n = name ? strlen(name) : 0;

	if (!n || n > NAMED_NAME_MAX || name[0] == '.' || name[0] == '-')
		return 0;
	for (size_t i = 0; i < n; i++) {
		char c = name[i];
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == '.' || c == '_' || c == '-'))
			return 0;
	}
	return 1;
}

char *named_generate(void)
{
	char hex[13], name[9] = "s-";

	random_hex(hex, 6);
	for (int i = 0; i < 6; i++)
		name[2 + i] = (char)('a' + (unsigned char)hex[2 * i] % 26);
	name[8] = 0;
	return xstrdup(name);
}

char *named_dir(const char *runtime, const char *name, int make, struct strbuf *err)
{
	char *top = xasprintf("%s/sessions", runtime), *dir = NULL;

	if (!named_name_ok(name)) {
		strbuf_addf(err, "'%s' cannot name a session (1 to %d of letters, digits, '.', "
			    "'_' and '-', not starting with '.' or '-')", name ? name : "",
			    NAMED_NAME_MAX);
	} else if (wall_own_dir(top, make, err) == 0) {
		dir = xasprintf("%s/%s", top, name);
		if (!make) {
			struct stat st;

			if (lstat(dir, &st) < 0) {
				strbuf_addf(err, "no session named '%s' (cellbox ls lists them)", name);
				free(dir);
				dir = NULL;
			}
		}
		if (dir && wall_own_dir(dir, make, err) < 0) {
			free(dir);
			dir = NULL;
		}
	}
	free(top);
	return dir;
}

int named_connect(const char *dir, struct strbuf *err)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	struct stat st;
	char *path = xasprintf("%s/sock", dir);
	int fd = -1;

	if (strlen(path) >= sizeof(a.sun_path)) {
		strbuf_addf(err, "'%s': the path is too long for a socket", path);
	} else if (lstat(path, &st) < 0 || !S_ISSOCK(st.st_mode) || st.st_uid != geteuid()) {
		strbuf_addf(err, "its host is gone (no socket of ours at '%s')", path);
	} else {
		memcpy(a.sun_path, path, strlen(path) + 1);
		fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0) {
			strbuf_addf(err, "its host is gone (%s)", strerror(errno));
			if (fd >= 0)
				close(fd);
			fd = -1;
		} else {
			fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
		}
	}
	free(path);
	return fd;
}

cJSON *named_call(struct named_conn *c, cJSON *msg, double timeout, cJSON *others,
		  struct strbuf *err)
{
	static int req;
	double end = clock_now() + timeout;
	int want = ++req;

	cJSON_AddNumberToObject(msg, "req", want);
	if (named_conn_send(c, msg) < 0)
		goto dead;
	for (;;) {
		struct pollfd p = { .fd = c->fd, .events = POLLIN };
		cJSON *m;
		double left = end - clock_now();

		while ((m = named_conn_next(c))) {
			const cJSON *t = cJSON_GetObjectItemCaseSensitive(m, "t");
			const cJSON *r = cJSON_GetObjectItemCaseSensitive(m, "req");

			if (cJSON_IsString(t) && !strcmp(t->valuestring, "reply") && cJSON_IsNumber(r) &&
			    r->valueint == want)
				return m;
			if (others)
				cJSON_AddItemToArray(others, m);
			else
				cJSON_Delete(m);
		}
		if (c->dead)
			goto dead;
		if (left <= 0) {
			strbuf_addstr(err, "its host does not answer");
			return NULL;
		}
		if (c->out.len)
			p.events |= POLLOUT;
		if (poll(&p, 1, (int)(left * 1000) + 1) > 0) {
			if (p.revents & POLLOUT)
				named_conn_flush(c);
			if (p.revents & (POLLIN | POLLHUP | POLLERR))
				named_conn_read(c);
		}
	}
dead:
	strbuf_addstr(err, "its host went away");
	return NULL;
}

cJSON *named_ask(const char *runtime, const char *name, cJSON *msg, double timeout,
		 struct strbuf *err)
{
	struct strbuf why = STRBUF_INIT;
	char *dir = named_dir(runtime, name, 0, err);
	struct named_conn c;
	cJSON *r = NULL;
	int fd = dir ? named_connect(dir, &why) : -1;

	free(dir);
	if (fd >= 0) {
		named_conn_init(&c, fd);
		r = named_call(&c, msg, timeout, NULL, &why);
		named_conn_close(&c);
	}
	cJSON_Delete(msg);
	if (fd >= 0 && (!r || !cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(r, "ok")))) {
		strbuf_addf(err, "session '%s': %s", name, r && named_str(r, "error") ?
			    named_str(r, "error") : why.buf);
		cJSON_Delete(r);
		r = NULL;
	} else if (fd < 0 && why.len) {
		strbuf_addf(err, "session '%s': %s", name, why.buf);
	}
	strbuf_release(&why);
	return r;
}

static char *str_dup_of(const cJSON *o, const char *key)
{
	const char *v = named_str(o, key);

	return v ? xstrdup(v) : NULL;
}

static double num_of(const cJSON *o, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);

	return cJSON_IsNumber(v) ? v->valuedouble : 0;
}

/* Ask the host of session `name` for its status (1 s at most). */
static void ask(const char *runtime, const char *name, struct named_info *in)
{
	struct strbuf err = STRBUF_INIT;
	struct named_conn c;
	char *dir = named_dir(runtime, name, 0, &err);
	int fd = dir ? named_connect(dir, &err) : -1;
	cJSON *reply = NULL;
	double mem;

	in->name = xstrdup(name);
	if (fd >= 0) {
		cJSON *msg = cJSON_CreateObject();

		named_conn_init(&c, fd);
		cJSON_AddStringToObject(msg, "t", "status");
		reply = named_call(&c, msg, 1.0, NULL, &err);
		cJSON_Delete(msg);
		named_conn_close(&c);
	}
	if (reply) {
		in->pid = (pid_t)num_of(reply, "pid");
		in->backend = str_dup_of(reply, "backend");
		in->kernel = str_dup_of(reply, "kernel");
		in->state = str_dup_of(reply, "state");
		in->running = str_dup_of(reply, "running");
		in->idle_since = num_of(reply, "idle_since");
		in->attached = (int)num_of(reply, "attached");
		mem = num_of(reply, "memory");
		in->memory = mem > 0 && mem < 1e18 ? (unsigned long long)mem : 0;
		in->ttl = num_of(reply, "ttl");
	}
	if (!in->state)
		in->state = xstrdup("gone");
	cJSON_Delete(reply);
	free(dir);
	strbuf_release(&err);
}

static int by_name(const void *a, const void *b)
{
	return strcmp(((const struct named_info *)a)->name, ((const struct named_info *)b)->name);
}

size_t named_list(const char *runtime, struct named_info **out)
{
	struct strbuf err = STRBUF_INIT;
	char *top = xasprintf("%s/sessions", runtime);
	struct named_info *v = NULL;
	size_t n = 0, alloc = 0;
	int fd = wall_own_dir_open(top, 0, &err);	/* read through what was checked */
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	struct dirent *e;

	if (fd >= 0 && !d)
		close(fd);

	while (d && (e = readdir(d))) {
		if (!named_name_ok(e->d_name))
			continue;
		if (n == alloc) {
			alloc = alloc ? 2 * alloc : 8;
			v = xrealloc(v, alloc * sizeof(*v));
		}
		memset(&v[n], 0, sizeof(v[n]));
		ask(runtime, e->d_name, &v[n++]);
	}
	if (d)
		closedir(d);
	if (n)
		qsort(v, n, sizeof(*v), by_name);
	free(top);
	strbuf_release(&err);
	*out = v;
	return n;
}

void named_info_free(struct named_info *v, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(v[i].name);
		free(v[i].backend);
		free(v[i].kernel);
		free(v[i].state);
		free(v[i].running);
	}
	free(v);
}

int named_kill(const char *runtime, const char *name, struct strbuf *err)
{
	struct strbuf why = STRBUF_INIT;
	char *dir = named_dir(runtime, name, 0, err);
	int fd, rc = 0;

	if (!dir)
		return -1;
	fd = named_connect(dir, &why);
	if (fd >= 0) {
		struct named_conn c;
		cJSON *msg = cJSON_CreateObject(), *reply;

		named_conn_init(&c, fd);
		cJSON_AddStringToObject(msg, "t", "kill");
		reply = named_call(&c, msg, 60.0, NULL, &why);
		cJSON_Delete(msg);
		if (!reply) {
			strbuf_addf(err, "session '%s': %s", name, why.buf);
			rc = -1;
		} else {
			/* The host removes its directory as it leaves: wait for that (30 s). */
			struct pollfd p = { .fd = c.fd, .events = POLLIN };
			double end = clock_now() + 30;

			while (named_conn_read(&c) == 0 && clock_now() < end)
				poll(&p, 1, 100);
		}
		cJSON_Delete(reply);
		named_conn_close(&c);
	}
	if (rc == 0)
		fsutil_remove_tree(dir);	/* a host that was gone left it */
	free(dir);
	strbuf_release(&why);
	return rc;
}

/* Whether the host that wrote DIR/host.pid still runs (one starting has no socket yet). */
static int host_starting(const char *dir)
{
	struct strbuf sb = STRBUF_INIT;
	char *path = xasprintf("%s/host.pid", dir);
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC), alive = 0;
	long pid;

	if (fd >= 0 && strbuf_read_fd(&sb, fd, 32) == 0 && (pid = strtol(sb.buf, NULL, 10)) > 0)
		alive = process_alive((pid_t)pid);
	if (fd >= 0)
		close(fd);
	free(path);
	strbuf_release(&sb);
	return alive;
}

int named_gc(const char *runtime, struct strbuf *out)
{
	struct named_info *v = NULL;
	size_t n = named_list(runtime, &v);
	int removed = 0;

	for (size_t i = 0; i < n; i++) {
		struct strbuf err = STRBUF_INIT;
		char *dir;

		if (strcmp(v[i].state, "gone") || !(dir = named_dir(runtime, v[i].name, 0, &err))) {
			strbuf_release(&err);
			continue;
		}
		if (!host_starting(dir)) {
			fsutil_remove_tree(dir);
			strbuf_addf(out, "session %s (its host was gone)\n", v[i].name);
			removed++;
		}
		free(dir);
		strbuf_release(&err);
	}
	named_info_free(v, n);
	return removed;
}
