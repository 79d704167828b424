/*
 * A memory checkpoint's file (memckpt.h): the key, the writer, and the reader that checks a
 * hostile file whole before anything of it is used or written.
 */
#include "memckpt.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fsutil.h"
#include "random.h"
#include "sha256.h"

#define COPY_CHUNK (256u << 10)

int memckpt_key_load(const char *path, char key[MEMCKPT_KEY_HEX + 1], struct strbuf *err)
{
	struct stat st;
	ssize_t n;
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);

	if (fd < 0 && errno == ENOENT) {
		random_hex(key, MEMCKPT_KEY_HEX / 2);
		fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
		if (fd >= 0 && fsutil_write_all(fd, key, MEMCKPT_KEY_HEX) == 0) {
			close(fd);
			return 0;
		}
		strbuf_addf(err, "cannot write checkpoint key '%s': %s", path, strerror(errno));
		if (fd >= 0) {
			close(fd);
			unlink(path);
		}
		return -1;
	}
	if (fd < 0) {
		strbuf_addf(err, "cannot read checkpoint key '%s': %s", path, strerror(errno));
		return -1;
	}
	key[0] = key[MEMCKPT_KEY_HEX] = '\0';
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid() ||
	    (st.st_mode & 077) || st.st_size != MEMCKPT_KEY_HEX ||
	    (n = read(fd, key, MEMCKPT_KEY_HEX)) != MEMCKPT_KEY_HEX ||
	    strspn(key, "0123456789abcdef") < MEMCKPT_KEY_HEX) {
		close(fd);
		strbuf_addf(err, "checkpoint key '%s' is not ours alone (a file of 64 hex digits, "
			    "0600): refused", path);
		return -1;
	}
	close(fd);
	return 0;
}

int memckpt_is(const char *path)
{
	char head[sizeof(MEMCKPT_MAGIC) - 1];
	struct stat st;
	int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC), rc;

	if (fd < 0)
		return -1;
	rc = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
	     read(fd, head, sizeof(head)) == (ssize_t)sizeof(head) &&
	     memcmp(head, MEMCKPT_MAGIC, sizeof(head)) == 0;
	close(fd);
	return rc;
}

static int name_ok(const char *s)
{
	size_t n = strlen(s);

	return n > 0 && n <= 64 && s[0] != '.' &&
	       strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-") == n;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Copy exactly `size` bytes from `in` to `out` (-1: none), MAC'ing them. 0, or -1. */
static int copy(int in, int out, unsigned long long size, struct sha256_hmac *h, char *buf)
{
	while (size > 0) {
		size_t want = size < COPY_CHUNK ? (size_t)size : COPY_CHUNK;
		ssize_t n = read(in, buf, want);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		sha256_hmac_update(h, buf, (size_t)n);
		if (out >= 0 && fsutil_write_all(out, buf, (size_t)n) < 0)
			return -1;
		size -= (unsigned long long)n;
	}
	return 0;
}

/* The regular files of `dir`, sorted, into *names (NULL-terminated), with their sizes. */
static int list_dir(const char *dir, char ***names, unsigned long long **sizes,
		    struct strbuf *err)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	size_t n = 0;
	unsigned long long total = 0;

	*names = xcalloc(MEMCKPT_FILES + 1, sizeof(**names));
	*sizes = xcalloc(MEMCKPT_FILES, sizeof(**sizes));
	if (!d) {
		strbuf_addf(err, "cannot read checkpoint '%s': %s", dir, strerror(errno));
		return -1;
	}
	while ((de = readdir(d))) {
		struct stat st;

		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (n == MEMCKPT_FILES || !name_ok(de->d_name) ||
		    fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
		    !S_ISREG(st.st_mode) || (unsigned long long)st.st_size > MEMCKPT_FILE_MAX ||
		    (total += (unsigned long long)st.st_size) > MEMCKPT_TOTAL_MAX) {
			strbuf_addf(err, "checkpoint '%s': '%s' is not a file a checkpoint may hold "
				    "(at most %d regular files, of %llu MiB together)", dir,
				    de->d_name, MEMCKPT_FILES, MEMCKPT_TOTAL_MAX >> 20);
			closedir(d);
			return -1;
		}
		(*names)[n] = xstrdup(de->d_name);
		n++;
	}
	closedir(d);
	qsort(*names, n, sizeof(**names), cmp_str);
	for (size_t i = 0; i < n; i++) {
		struct stat st;
		char *p = xasprintf("%s/%s", dir, (*names)[i]);

		(*sizes)[i] = stat(p, &st) == 0 ? (unsigned long long)st.st_size : 0;
		free(p);
	}
	return 0;
}

static void free_names(char **names)
{
	for (size_t i = 0; names && names[i]; i++)
		free(names[i]);
	free(names);
}

int memckpt_write(const char *path, const char *key, const cJSON *meta, const char *dir,
		  struct strbuf *err)
{
	struct fsutil_atomic a = FSUTIL_ATOMIC_INIT;
	struct sha256_hmac h;
	struct strbuf head = STRBUF_INIT;
	char **names = NULL, *text = NULL, *buf = NULL, mac[65];
	unsigned long long *sizes = NULL;
	cJSON *m = NULL, *files;
	int rc = -1;

	if (!cJSON_IsObject(meta) || list_dir(dir, &names, &sizes, err) < 0)
		goto out;
	m = cJSON_Duplicate(meta, 1);
	cJSON_DeleteItemFromObjectCaseSensitive(m, "files");
	files = cJSON_AddArrayToObject(m, "files");
	for (size_t i = 0; names[i]; i++) {
		cJSON *f = cJSON_CreateObject();

		cJSON_AddStringToObject(f, "name", names[i]);
		cJSON_AddNumberToObject(f, "size", (double)sizes[i]);
		cJSON_AddItemToArray(files, f);
	}
	text = cJSON_PrintUnformatted(m);
	if (strlen(text) > MEMCKPT_META_MAX) {
		strbuf_addf(err, "cannot write '%s': its meta is over %u KiB", path,
			    MEMCKPT_META_MAX >> 10);
		goto out;
	}
	strbuf_addf(&head, MEMCKPT_MAGIC "%zu\n%s", strlen(text), text);
	if (fsutil_atomic_begin(&a, path, 0600, err) < 0)
		goto out;
	sha256_hmac_init(&h, key, strlen(key));
	sha256_hmac_update(&h, head.buf, head.len);
	if (fsutil_write_all(a.fd, head.buf, head.len) < 0)
		goto fail;
	buf = xmalloc(COPY_CHUNK);
	for (size_t i = 0; names[i]; i++) {
		char *p = xasprintf("%s/%s", dir, names[i]);
		int fd = open(p, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
		struct stat st;
		int ok = fd >= 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
			 (unsigned long long)st.st_size == sizes[i] &&
			 copy(fd, a.fd, sizes[i], &h, buf) == 0;

		if (fd >= 0)
			close(fd);
		free(p);
		if (!ok) {
			strbuf_addf(err, "cannot write '%s': '%s/%s' changed or cannot be read",
				    path, dir, names[i]);
			goto fail;
		}
	}
	sha256_hmac_hex(&h, mac);
	mac[64] = '\n';
	if (fsutil_write_all(a.fd, mac, 65) < 0)
		goto fail;
	rc = fsutil_atomic_commit(&a, err);
	goto out;
fail:
	if (!err->len)
		strbuf_addf(err, "cannot write '%s': %s", path, strerror(errno));
	fsutil_atomic_rollback(&a);
out:
	free(buf);
	free(text);
	free(sizes);
	free_names(names);
	cJSON_Delete(m);
	strbuf_release(&head);
	return rc;
}

/* What the meta says of the files: names and sizes, checked. */
struct listing {
	const char *name[MEMCKPT_FILES];
	unsigned long long size[MEMCKPT_FILES];
	size_t n;
	unsigned long long total;
};

static int check_files(const cJSON *meta, struct listing *l)
{
	const cJSON *files = cJSON_GetObjectItemCaseSensitive(meta, "files"), *f;

	memset(l, 0, sizeof(*l));
	if (!cJSON_IsArray(files) || cJSON_GetArraySize(files) > MEMCKPT_FILES)
		return -1;
	cJSON_ArrayForEach(f, files) {
		const char *name = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(f, "name"));
		const cJSON *size = cJSON_GetObjectItemCaseSensitive(f, "size");
		double v = cJSON_IsNumber(size) ? size->valuedouble : -1;

		if (!name || !name_ok(name) || !(v >= 0 && v <= (double)MEMCKPT_FILE_MAX) ||
		    v != (double)(unsigned long long)v)
			return -1;
		for (size_t i = 0; i < l->n; i++)
			if (!strcmp(l->name[i], name))
				return -1;
		l->name[l->n] = name;
		l->size[l->n] = (unsigned long long)v;
		if ((l->total += l->size[l->n]) > MEMCKPT_TOTAL_MAX)
			return -1;
		l->n++;
	}
	return 0;
}

/* Read exactly `len` bytes. 0, or -1 at an error or the end. */
static int read_exact(int fd, void *buf, size_t len)
{
	char *p = buf;

	while (len > 0) {
		ssize_t n = read(fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/*
 * Check the file at `path` whole; with `dirfd` >= 0, write its files there as they pass.
 * Its meta into *meta when asked. 0, or -1 with `err`.
 */
static int scan(const char *path, const char *key, int dirfd, cJSON **meta, struct strbuf *err)
{
	char magic[sizeof(MEMCKPT_MAGIC) - 1], line[16], mac[65], want[65], *text = NULL;
	char *buf = NULL;
	struct sha256_hmac h;
	struct listing l;
	struct stat st;
	cJSON *m = NULL;
	unsigned long long expect;
	size_t i, meta_len = 0, line_len = 0;
	int fd, rc = -1;

	if (meta)
		*meta = NULL;
	fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0) {
		strbuf_addf(err, "cannot read '%s': %s", path, strerror(errno));
		return -1;
	}
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		strbuf_addf(err, "'%s' is not a checkpoint file (not a regular file)", path);
		goto out;
	}
	if (read_exact(fd, magic, sizeof(magic)) < 0 || memcmp(magic, MEMCKPT_MAGIC, sizeof(magic))) {
		strbuf_addf(err, "'%s' is not a memory checkpoint of this cellbox (version or kind)",
			    path);
		goto out;
	}
	/* The meta's length: up to 7 digits and a newline. */
	for (;;) {
		if (line_len == 8 || read_exact(fd, &line[line_len], 1) < 0)
			goto bad;
		if (line[line_len] == '\n')
			break;
		if (line[line_len] < '0' || line[line_len] > '9')
			goto bad;
		meta_len = meta_len * 10 + (size_t)(line[line_len] - '0');
		line_len++;
	}
	if (line_len == 0 || meta_len == 0 || meta_len > MEMCKPT_META_MAX)
		goto bad;
	text = xmalloc(meta_len);
	if (read_exact(fd, text, meta_len) < 0)
		goto bad;
	m = cJSON_ParseWithLength(text, meta_len);
	if (!cJSON_IsObject(m) || check_files(m, &l) < 0)
		goto bad;
	expect = sizeof(magic) + line_len + 1 + meta_len + l.total + 65;
	if ((unsigned long long)st.st_size != expect)
		goto bad;
	sha256_hmac_init(&h, key, strlen(key));
	sha256_hmac_update(&h, magic, sizeof(magic));
	sha256_hmac_update(&h, line, line_len + 1);
	sha256_hmac_update(&h, text, meta_len);
	buf = xmalloc(COPY_CHUNK);
	for (i = 0; i < l.n; i++) {
		int out = -1;

		if (dirfd >= 0) {
			out = openat(dirfd, l.name[i], O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW |
				     O_CLOEXEC, 0600);
			if (out < 0) {
				strbuf_addf(err, "cannot write '%s': %s", l.name[i], strerror(errno));
				goto out;
			}
		}
		if (copy(fd, out, l.size[i], &h, buf) < 0) {
			if (out >= 0)
				close(out);
			goto bad;
		}
		if (out >= 0 && close(out) < 0) {
			strbuf_addf(err, "cannot write '%s': %s", l.name[i], strerror(errno));
			goto out;
		}
	}
	sha256_hmac_hex(&h, want);
	if (read_exact(fd, mac, 65) < 0 || mac[64] != '\n' || !sha256_equal(mac, want, 64)) {
		strbuf_addf(err, "'%s' is not signed by this user's cellbox (its key); refused",
			    path);
		goto out;
	}
	if (meta) {
		*meta = m;
		m = NULL;
	}
	rc = 0;
	goto out;
bad:
	strbuf_addf(err, "'%s' is not a memory checkpoint file (its layout, meta or files are "
		    "not as written)", path);
out:
	free(buf);
	free(text);
	cJSON_Delete(m);
	close(fd);
	return rc;
}

int memckpt_read(const char *path, const char *key, cJSON **meta, struct strbuf *err)
{
	return scan(path, key, -1, meta, err);
}

int memckpt_extract(const char *path, const char *key, const char *dir, struct strbuf *err)
{
	int fd, rc;

	if (scan(path, key, -1, NULL, err) < 0)
		return -1;
	if (mkdir(dir, 0700) < 0) {
		strbuf_addf(err, "cannot make '%s': %s", dir, strerror(errno));
		return -1;
	}
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	rc = fd < 0 ? -1 : scan(path, key, fd, NULL, err);
	if (fd < 0)
		strbuf_addf(err, "cannot open '%s': %s", dir, strerror(errno));
	else
		close(fd);
	if (rc < 0)
		fsutil_remove_tree(dir);
	return rc;
}
