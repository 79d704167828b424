#include "util.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* Report an allocation failure and abort. */
static void oom(size_t n)
{
	fprintf(stderr, "cellbox: out of memory allocating %zu bytes\n", n);
	abort();
}

void *xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);
	if (!p)
		oom(n);
	return p;
}

void *xcalloc(size_t nmemb, size_t size)
{
	void *p = calloc(nmemb ? nmemb : 1, size ? size : 1);
	if (!p)
		oom(nmemb * size);
	return p;
}

void *xrealloc(void *p, size_t n)
{
	void *q = realloc(p, n ? n : 1);
	if (!q)
		oom(n);
	return q;
}

char *xstrdup(const char *s)
{
	return xstrndup(s, strlen(s));
}

char *xstrndup(const char *s, size_t n)
{
	char *p = xmalloc(n + 1);
	memcpy(p, s, n);
	p[n] = '\0';
	return p;
}

char *xasprintf(const char *fmt, ...)
{
	struct strbuf sb = STRBUF_INIT;
	va_list ap;

	va_start(ap, fmt);
	strbuf_vaddf(&sb, fmt, ap);
	va_end(ap);
	return strbuf_detach(&sb, NULL);
}

char strbuf_empty[1];

void strbuf_init(struct strbuf *sb, size_t hint)
{
	sb->buf = strbuf_empty;
	sb->len = sb->alloc = sb->max = 0;
	if (hint)
		strbuf_grow(sb, hint);
}

void strbuf_release(struct strbuf *sb)
{
	size_t max = sb->max;

	if (sb->alloc)
		free(sb->buf);
	strbuf_init(sb, 0);
	sb->max = max;
}

void strbuf_set_max(struct strbuf *sb, size_t max)
{
	sb->max = max;
}

int strbuf_grow(struct strbuf *sb, size_t extra)
{
	size_t want, cap;

	if (!sb->buf)
		strbuf_init(sb, 0);
	cap = sb->max ? sb->max : STRBUF_DEFAULT_MAX;
	if (extra >= cap || sb->len + extra + 1 > cap) {
		errno = EFBIG;
		return -1;
	}
	want = sb->len + extra + 1;
	if (want <= sb->alloc)
		return 0;
	if (want < sb->alloc * 2)
		want = sb->alloc * 2;
	if (want < 64)
		want = 64;
	if (want > cap)
		want = cap;
	if (sb->alloc) {
		sb->buf = xrealloc(sb->buf, want);
	} else {
		sb->buf = xmalloc(want);
		sb->buf[0] = '\0';
	}
	sb->alloc = want;
	return 0;
}

int strbuf_add(struct strbuf *sb, const void *data, size_t len)
{
	if (strbuf_grow(sb, len) < 0)
		return -1;
	memcpy(sb->buf + sb->len, data, len);
	sb->len += len;
	sb->buf[sb->len] = '\0';
	return 0;
}

int strbuf_addstr(struct strbuf *sb, const char *s)
{
	return strbuf_add(sb, s, strlen(s));
}

int strbuf_addch(struct strbuf *sb, int c)
{
	char ch = (char)c;
	return strbuf_add(sb, &ch, 1);
}

int strbuf_vaddf(struct strbuf *sb, const char *fmt, va_list ap)
{
	va_list cp;
	int n;

	if (strbuf_grow(sb, 64) < 0 && strbuf_grow(sb, 0) < 0)
		return -1;
	va_copy(cp, ap);
	n = vsnprintf(sb->buf + sb->len, sb->alloc - sb->len, fmt, cp);
	va_end(cp);
	if (n < 0) {
		sb->buf[sb->len] = '\0';
		return -1;
	}
	if ((size_t)n >= sb->alloc - sb->len) {
		if (strbuf_grow(sb, (size_t)n) < 0) {
			sb->buf[sb->len] = '\0';	/* what the first try wrote is not ours */
			return -1;
		}
		vsnprintf(sb->buf + sb->len, sb->alloc - sb->len, fmt, ap);
	}
	sb->len += (size_t)n;
	return 0;
}

int strbuf_addf(struct strbuf *sb, const char *fmt, ...)
{
	va_list ap;
	int rc;

	va_start(ap, fmt);
	rc = strbuf_vaddf(sb, fmt, ap);
	va_end(ap);
	return rc;
}

void strbuf_reset(struct strbuf *sb)
{
	sb->len = 0;
	if (sb->alloc)
		sb->buf[0] = '\0';
}

void strbuf_remove_front(struct strbuf *sb, size_t n)
{
	if (n >= sb->len) {
		strbuf_reset(sb);
		return;
	}
	memmove(sb->buf, sb->buf + n, sb->len - n);
	sb->len -= n;
	sb->buf[sb->len] = '\0';
}

char *strbuf_detach(struct strbuf *sb, size_t *len)
{
	size_t max = sb->max;
	char *p;

	p = sb->alloc ? sb->buf : xstrdup("");
	if (len)
		*len = sb->len;
	strbuf_init(sb, 0);
	sb->max = max;
	return p;
}

int strbuf_read_fd(struct strbuf *sb, int fd, size_t max)
{
	for (;;) {
		ssize_t n;

		if (sb->len >= max) {
			errno = EFBIG;
			return -1;
		}
		if (strbuf_grow(sb, 65536) < 0 && strbuf_grow(sb, 1) < 0)
			return -1;
		n = read(fd, sb->buf + sb->len, sb->alloc - sb->len - 1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -1;
		if (n == 0)
			return 0;
		sb->len += (size_t)n;
		sb->buf[sb->len] = '\0';
	}
}

int strbuf_read_file(struct strbuf *sb, const char *path, size_t max)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	int rc, saved;
	struct stat st;

	if (fd < 0)
		return -1;
	if (fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) {
		close(fd);
		errno = EISDIR;
		return -1;
	}
	rc = strbuf_read_fd(sb, fd, max);
	saved = errno;
	close(fd);
	errno = saved;
	return rc;
}

char *str_trim(char *s)
{
	char *e;

	while (isspace((unsigned char)*s))
		s++;
	e = s + strlen(s);
	while (e > s && isspace((unsigned char)e[-1]))
		*--e = '\0';
	return s;
}

/* Whether `#` at `p` starts a #rrggbb colour rather than a comment. */
static int is_colour(const char *p)
{
	for (int i = 1; i <= 6; i++)
		if (!isxdigit((unsigned char)p[i]))
			return 0;
	return !isalnum((unsigned char)p[7]);
}

int kv_parse(const char *text, const char *name, const char *form, kv_fn fn, void *data,
	     struct strbuf *err)
{
	char *copy = xstrdup(text), *line, *next;
	struct strbuf why = STRBUF_INIT;
	int lineno = 0, rc = 0;

	for (line = copy; line && rc == 0; line = next) {
		char *eq, *hash;

		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		lineno++;
		eq = strchr(line, '=');
		for (hash = strchr(line, '#'); hash && eq && hash > eq && is_colour(hash);)
			hash = strchr(hash + 1, '#');
		if (hash)
			*hash = '\0';
		line = str_trim(line);
		if (!*line)
			continue;
		eq = strchr(line, '=');
		if (!eq) {
			strbuf_addf(err, "%s:%d: expected '%s'", name, lineno, form);
			rc = -1;
			break;
		}
		*eq = '\0';
		if (!*str_trim(line)) {
			strbuf_addf(err, "%s:%d: expected '%s' (no key before the '=')", name, lineno,
				    form);
			rc = -1;
			break;
		}
		strbuf_reset(&why);
		if (fn(str_trim(line), str_trim(eq + 1), &why, data) < 0) {
			strbuf_addf(err, "%s:%d: %s", name, lineno, why.buf);
			rc = -1;
		}
	}
	strbuf_release(&why);
	free(copy);
	return rc;
}

int utf8_valid(const char *str, size_t len, size_t *bad)
{
	const unsigned char *s = (const unsigned char *)str;
	size_t i = 0;

	while (i < len) {
		unsigned c = s[i];
		size_t need;
		unsigned cp;

		if (c < 0x80) {
			i++;
			continue;
		}
		if (c >= 0xc2 && c <= 0xdf) {
			need = 1;
			cp = c & 0x1f;
		} else if (c >= 0xe0 && c <= 0xef) {
			need = 2;
			cp = c & 0x0f;
		} else if (c >= 0xf0 && c <= 0xf4) {
			need = 3;
			cp = c & 0x07;
		} else {
			goto invalid;
		}
		for (size_t k = 1; k <= need; k++) {
			if (i + k >= len || (s[i + k] & 0xc0) != 0x80)
				goto invalid;
			cp = (cp << 6) | (s[i + k] & 0x3f);
		}
		if ((need == 2 && cp < 0x800) || (need == 3 && cp < 0x10000) || cp > 0x10ffff ||
		    (cp >= 0xd800 && cp <= 0xdfff))
			goto invalid;
		i += need + 1;
	}
	return 1;
invalid:
	if (bad)
		*bad = i;
	return 0;
}

int text_check(const char *s, size_t len, const char *name, struct strbuf *err)
{
	size_t bad;

	if (memchr(s, '\0', len)) {
		strbuf_addf(err, "'%s' is not a text file (it contains NUL bytes)", name);
		return -1;
	}
	if (!utf8_valid(s, len, &bad)) {
		strbuf_addf(err, "'%s' is not valid UTF-8 (byte 0x%02x at offset %zu)", name,
			    (unsigned char)s[bad], bad);
		return -1;
	}
	return 0;
}

double now_monotonic(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

double now_wall(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;

	while (len) {
		ssize_t n = write(fd, p, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -1;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

int mkdir_p(const char *path)
{
	char *p = xstrdup(path);
	int rc = 0;

	for (char *s = p + 1; ; s++) {
		if (*s == '/' || *s == '\0') {
			char saved = *s;
			*s = '\0';
			if (mkdir(p, 0700) < 0 && errno != EEXIST) {
				rc = -1;
				break;
			}
			*s = saved;
			if (!saved)
				break;
		}
	}
	free(p);
	return rc;
}

int remove_tree_at(int at, const char *name, int max_depth)
{
	struct dirent *de;
	DIR *d;
	int fd, rc = 0;

	if (!*name || strchr(name, '/') || !strcmp(name, ".") || !strcmp(name, ".."))
		return -1;
	if (unlinkat(at, name, 0) == 0 || errno == ENOENT)
		return 0;
	if ((errno != EISDIR && errno != EPERM) || max_depth <= 0)
		return -1;
	/* A directory: open it without following a link, relative to the level above. */
	fd = openat(at, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? 0 : -1;
	d = fdopendir(fd);
	if (!d) {
		close(fd);
		return -1;
	}
	while ((de = readdir(d)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, "..") &&
		    remove_tree_at(dirfd(d), de->d_name, max_depth - 1) < 0)
			rc = -1;
	closedir(d);
	if (unlinkat(at, name, AT_REMOVEDIR) < 0 && errno != ENOENT)
		rc = -1;
	return rc;
}

void remove_tree(const char *path)
{
	char *copy = xstrdup(path), *slash;
	int at;

	while (strlen(copy) > 1 && copy[strlen(copy) - 1] == '/')
		copy[strlen(copy) - 1] = '\0';
	slash = strrchr(copy, '/');
	if (!slash || !slash[1]) {
		free(copy);
		return;
	}
	*slash = '\0';
	at = open(slash == copy ? "/" : copy, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (at >= 0) {
		remove_tree_at(at, slash + 1, REMOVE_TREE_DEPTH);
		close(at);
	}
	free(copy);
}

int parse_size(const char *s, unsigned long long *out)
{
	char *end;
	double v;
	unsigned long long mult = 1;

	while (isspace((unsigned char)*s))
		s++;
	if (!isdigit((unsigned char)*s) && *s != '.')
		return -1;
	errno = 0;
	v = strtod(s, &end);
	if (errno || v < 0)
		return -1;
	while (isspace((unsigned char)*end))
		end++;
	switch (tolower((unsigned char)*end)) {
	case '\0': break;
	case 'b': break;
	case 'k': mult = 1ULL << 10; break;
	case 'm': mult = 1ULL << 20; break;
	case 'g': mult = 1ULL << 30; break;
	case 't': mult = 1ULL << 40; break;
	default: return -1;
	}
	if (*end) {
		end++;
		if (*end == 'i' || *end == 'I')
			end++;
		if (mult > 1 && (*end == 'b' || *end == 'B'))
			end++;
		if (*end)
			return -1;
	}
	/* More than an unsigned long long holds is no size (and converting it is undefined). */
	if (!(v * (double)mult < 18446744073709551616.0))
		return -1;
	*out = (unsigned long long)(v * (double)mult);
	return 0;
}

int parse_seconds(const char *s, double *out)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || *end || v < 0 || v != v)
		return -1;
	*out = v;
	return 0;
}

void base64_encode(const void *data, size_t len, struct strbuf *out)
{
	static const char tbl[] =
		"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	const unsigned char *p = data;
	size_t i;

	strbuf_grow(out, (len + 2) / 3 * 4);
	for (i = 0; i + 2 < len; i += 3) {
		char q[4] = { tbl[p[i] >> 2], tbl[((p[i] & 3) << 4) | (p[i + 1] >> 4)],
			      tbl[((p[i + 1] & 15) << 2) | (p[i + 2] >> 6)], tbl[p[i + 2] & 63] };
		strbuf_add(out, q, 4);
	}
	if (i < len) {
		char q[4] = { tbl[p[i] >> 2], 0, '=', '=' };
		if (i + 1 < len) {
			q[1] = tbl[((p[i] & 3) << 4) | (p[i + 1] >> 4)];
			q[2] = tbl[(p[i + 1] & 15) << 2];
		} else {
			q[1] = tbl[(p[i] & 3) << 4];
		}
		strbuf_add(out, q, 4);
	}
}

int copy_file(const char *from, const char *to)
{
	struct strbuf buf = STRBUF_INIT;
	int fd, rc = -1, saved;

	if (strbuf_read_file(&buf, from, STRBUF_DEFAULT_MAX / 2) < 0)
		goto out;
	fd = open(to, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		goto out;
	rc = write_all(fd, buf.buf, buf.len);
	saved = errno;
	close(fd);
	errno = saved;
out:
	strbuf_release(&buf);
	return rc;
}

int process_alive(pid_t pid)
{
	struct strbuf stat = STRBUF_INIT;
	char *path, *paren;
	int alive;

	if (pid <= 0 || (kill(pid, 0) < 0 && errno != EPERM))
		return 0;
	path = xasprintf("/proc/%ld/stat", (long)pid);
	alive = strbuf_read_file(&stat, path, 4096) < 0 || !(paren = strrchr(stat.buf, ')')) ||
		paren[1] != ' ' || paren[2] != 'Z';
	free(path);
	strbuf_release(&stat);
	return alive;
}

void strlist_append(struct strlist *l, const char *s)
{
	if (l->n == l->alloc) {
		l->alloc = l->alloc ? 2 * l->alloc : 4;
		l->items = xrealloc(l->items, l->alloc * sizeof(*l->items));
	}
	l->items[l->n++] = xstrdup(s);
}

void strlist_release(struct strlist *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->items[i]);
	free(l->items);
	l->items = NULL;
	l->n = l->alloc = 0;
}

void signals_for_child(void)
{
	static const int ours[] = { SIGINT, SIGPIPE, SIGTERM, SIGHUP, SIGCHLD };
	sigset_t none;

	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	for (size_t i = 0; i < ARRAY_SIZE(ours); i++)
		signal(ours[i], SIG_DFL);
}
