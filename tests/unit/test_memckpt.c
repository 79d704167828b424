/*
 * Unit tests of a memory checkpoint's file (memckpt.h): what is written comes back byte for
 * byte; the key is made once, ours and 0600, and one that is not is refused; and a hostile
 * file (a bad or planted name, a directory of the runtime holding a link, sizes past the caps
 * or not its length, meta that is not JSON or not an object, another version, a MAC that is
 * not ours) is refused with nothing written: the directory a restore would fill is never
 * made. The hostile files are signed with the right key unless the MAC is what is tested, so
 * each test reaches the check it names.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fsutil.h"
#include "memckpt.h"
#include "sha256.h"
#include "util.h"
#include "../tap.h"

static const char KEY[] = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff";

static char *scratch_dir(void)
{
	const char *base = getenv("TMPDIR");
	char *dir = xasprintf("%s/cellbox-memckpt-XXXXXX", base && *base ? base : "/tmp");

	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		exit(1);
	}
	return dir;
}

static void put(const char *path, const void *data, size_t len)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

	CHECK(fd >= 0 && fsutil_write_all(fd, data, len) == 0);
	if (fd >= 0)
		close(fd);
}

static int exists(const char *path)
{
	struct stat st;

	return lstat(path, &st) == 0;
}

/*
 * A file as the format lays it out, from its parts: `magic`, the meta's text, `data`, and a
 * MAC under KEY (or a wrong one when `mac_ok` is 0). `meta_len` < 0: the meta's own length.
 */
static void craft(const char *path, const char *magic, const char *meta, long meta_len,
		  const void *data, size_t len, int mac_ok)
{
	struct strbuf sb = STRBUF_INIT;
	struct sha256_hmac h;
	char mac[65];

	strbuf_addf(&sb, "%s%ld\n%s", magic, meta_len < 0 ? (long)strlen(meta) : meta_len, meta);
	strbuf_add(&sb, data, len);
	sha256_hmac_init(&h, mac_ok ? KEY : "another", mac_ok ? strlen(KEY) : 7);
	sha256_hmac_update(&h, sb.buf, sb.len);
	sha256_hmac_hex(&h, mac);
	strbuf_addf(&sb, "%s\n", mac);
	put(path, sb.buf, sb.len);
	strbuf_release(&sb);
}

/* Whether `path` is refused by read and extract, with nothing made at the target. */
static int refused(const char *path, const char *dir, const char *why)
{
	struct strbuf err = STRBUF_INIT;
	char *target = xasprintf("%s/restored", dir);
	cJSON *meta = NULL;
	int r1 = memckpt_read(path, KEY, &meta, &err), r2;

	CHECK(meta == NULL);
	strbuf_reset(&err);
	r2 = memckpt_extract(path, KEY, target, &err);
	if (why && !strstr(err.buf, why))
		tap_note(err.buf);
	CHECK(!why || strstr(err.buf, why));
	CHECK(!exists(target));
	free(target);
	strbuf_release(&err);
	return r1 < 0 && r2 < 0;
}

static void test_round_trip(void)
{
	struct strbuf err = STRBUF_INIT, got = STRBUF_INIT;
	char *dir = scratch_dir(), *src = xasprintf("%s/src", dir);
	char *file = xasprintf("%s/c.ckpt", dir), *out = xasprintf("%s/out", dir), *p;
	unsigned char big[300000];
	cJSON *meta = cJSON_Parse("{\"next_id\":7,\"image\":\"cellbox-python:p2\"}"), *back = NULL;

	for (size_t i = 0; i < sizeof(big); i++)
		big[i] = (unsigned char)(i * 7 + 3);
	CHECK(mkdir(src, 0700) == 0);
	p = xasprintf("%s/checkpoint.img", src);
	put(p, big, sizeof(big));
	free(p);
	p = xasprintf("%s/pages_meta.img", src);
	put(p, "", 0);
	free(p);
	CHECK(memckpt_write(file, KEY, meta, src, &err) == 0);
	CHECK(memckpt_is(file) == 1);
	CHECK(memckpt_read(file, KEY, &back, &err) == 0);
	CHECK(cJSON_GetNumberValue(cJSON_GetObjectItem(back, "next_id")) == 7);
	CHECK(cJSON_GetArraySize(cJSON_GetObjectItem(back, "files")) == 2);
	CHECK(memckpt_extract(file, KEY, out, &err) == 0);
	if (err.len)
		tap_note(err.buf);
	p = xasprintf("%s/checkpoint.img", out);
	CHECK(strbuf_read_file(&got, p, 1 << 20) >= 0 && got.len == sizeof(big) &&
	      memcmp(got.buf, big, sizeof(big)) == 0);
	free(p);
	p = xasprintf("%s/pages_meta.img", out);
	CHECK(exists(p));
	free(p);
	/* The target exists now: a second extract is refused, not merged into it. */
	CHECK(memckpt_extract(file, KEY, out, &err) < 0);
	cJSON_Delete(back);
	cJSON_Delete(meta);
	strbuf_release(&got);
	strbuf_release(&err);
	fsutil_remove_tree(dir);
	free(src);
	free(file);
	free(out);
	free(dir);
}

static void test_key(void)
{
	struct strbuf err = STRBUF_INIT;
	char *dir = scratch_dir(), *path = xasprintf("%s/checkpoint.key", dir), *l;
	char k1[65], k2[65];
	struct stat st;

	CHECK(memckpt_key_load(path, k1, &err) == 0);
	CHECK(stat(path, &st) == 0 && (st.st_mode & 0777) == 0600);
	CHECK(memckpt_key_load(path, k2, &err) == 0 && strcmp(k1, k2) == 0);
	CHECK(chmod(path, 0640) == 0);
	CHECK(memckpt_key_load(path, k2, &err) < 0 && strstr(err.buf, "refused"));
	CHECK(chmod(path, 0600) == 0);
	l = xasprintf("%s/link.key", dir);
	CHECK(symlink(path, l) == 0);
	strbuf_reset(&err);
	CHECK(memckpt_key_load(l, k2, &err) < 0);
	free(l);
	strbuf_release(&err);
	fsutil_remove_tree(dir);
	free(path);
	free(dir);
}

static void test_bad_names(void)
{
	static const char *const metas[] = {
		"{\"files\":[{\"name\":\"../x\",\"size\":1}]}",
		"{\"files\":[{\"name\":\"a/b\",\"size\":1}]}",
		"{\"files\":[{\"name\":\".hidden\",\"size\":1}]}",
		"{\"files\":[{\"name\":\"..\",\"size\":1}]}",
		"{\"files\":[{\"name\":\"\",\"size\":1}]}",
		"{\"files\":[{\"name\":\"x\",\"size\":0},{\"name\":\"x\",\"size\":1}]}",
		"{\"files\":[{\"name\":\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\","
		"\"size\":1}]}",
		"{\"files\":[{\"name\":7,\"size\":1}]}",
	};
	char *dir = scratch_dir(), *file = xasprintf("%s/c.ckpt", dir);

	for (size_t i = 0; i < ARRAY_SIZE(metas); i++) {
		craft(file, MEMCKPT_MAGIC, metas[i], -1, "z", 1, 1);
		CHECK(refused(file, dir, "not a memory checkpoint file"));
	}
	fsutil_remove_tree(dir);
	free(file);
	free(dir);
}

static void test_links(void)
{
	struct strbuf err = STRBUF_INIT;
	char *dir = scratch_dir(), *src = xasprintf("%s/src", dir), *p;
	char *file = xasprintf("%s/c.ckpt", dir), *target = xasprintf("%s/restored", dir);
	cJSON *meta = cJSON_CreateObject();

	/* The writer takes regular files only: a link in the runtime's directory is refused. */
	CHECK(mkdir(src, 0700) == 0);
	p = xasprintf("%s/checkpoint.img", src);
	CHECK(symlink("/etc/passwd", p) == 0);
	free(p);
	CHECK(memckpt_write(file, KEY, meta, src, &err) < 0 && !exists(file));
	/* A link planted where the restore's directory goes is not followed. */
	craft(file, MEMCKPT_MAGIC, "{\"files\":[{\"name\":\"f\",\"size\":1}]}", -1, "z", 1, 1);
	CHECK(symlink(src, target) == 0);
	strbuf_reset(&err);
	CHECK(memckpt_extract(file, KEY, target, &err) < 0);
	p = xasprintf("%s/f", src);
	CHECK(!exists(p));
	free(p);
	cJSON_Delete(meta);
	strbuf_release(&err);
	fsutil_remove_tree(dir);
	free(src);
	free(file);
	free(target);
	free(dir);
}

static void test_oversized(void)
{
	char *dir = scratch_dir(), *file = xasprintf("%s/c.ckpt", dir);
	struct strbuf meta = STRBUF_INIT;

	/* A file past its cap, files past their count, the meta's length past its cap. */
	craft(file, MEMCKPT_MAGIC, "{\"files\":[{\"name\":\"f\",\"size\":1073741825}]}", -1, "z", 1, 1);
	CHECK(refused(file, dir, "not a memory checkpoint file"));
	strbuf_addstr(&meta, "{\"files\":[");
	for (int i = 0; i <= MEMCKPT_FILES; i++)
		strbuf_addf(&meta, "%s{\"name\":\"f%d\",\"size\":0}", i ? "," : "", i);
	strbuf_addstr(&meta, "]}");
	craft(file, MEMCKPT_MAGIC, meta.buf, -1, "", 0, 1);
	CHECK(refused(file, dir, "not a memory checkpoint file"));
	craft(file, MEMCKPT_MAGIC, "{\"files\":[]}", 2000000, "", 0, 1);
	CHECK(refused(file, dir, "not a memory checkpoint file"));
	/* The sizes say one length, the file has another (more bytes, fewer). */
	craft(file, MEMCKPT_MAGIC, "{\"files\":[{\"name\":\"f\",\"size\":1}]}", -1, "zz", 2, 1);
	CHECK(refused(file, dir, "not a memory checkpoint file"));
	craft(file, MEMCKPT_MAGIC, "{\"files\":[{\"name\":\"f\",\"size\":3}]}", -1, "zz", 2, 1);
	CHECK(refused(file, dir, "not a memory checkpoint file"));
	/* Sizes that are not whole, or below zero. */
	craft(file, MEMCKPT_MAGIC, "{\"files\":[{\"name\":\"f\",\"size\":0.5}]}", -1, "", 0, 1);
	CHECK(refused(file, dir, "not a memory checkpoint file"));
	craft(file, MEMCKPT_MAGIC, "{\"files\":[{\"name\":\"f\",\"size\":-1}]}", -1, "", 0, 1);
	CHECK(refused(file, dir, "not a memory checkpoint file"));
	strbuf_release(&meta);
	fsutil_remove_tree(dir);
	free(file);
	free(dir);
}

static void test_bad_json(void)
{
	static const char *const metas[] = {
		"{\"files\":[", "[]", "\"files\"", "{\"files\":{}}", "{}", "{\"files\":[1]}",
	};
	char *dir = scratch_dir(), *file = xasprintf("%s/c.ckpt", dir);

	for (size_t i = 0; i < ARRAY_SIZE(metas); i++) {
		craft(file, MEMCKPT_MAGIC, metas[i], -1, "", 0, 1);
		CHECK(refused(file, dir, "not a memory checkpoint file"));
	}
	/* The meta's length is not digits. */
	put(file, MEMCKPT_MAGIC "1x\n{}", strlen(MEMCKPT_MAGIC "1x\n{}"));
	CHECK(refused(file, dir, "not a memory checkpoint file"));
	fsutil_remove_tree(dir);
	free(file);
	free(dir);
}

static void test_wrong_version(void)
{
	char *dir = scratch_dir(), *file = xasprintf("%s/c.ckpt", dir);
	static const char rerun[] = "{\"cellbox_checkpoint\":1,\"kind\":\"rerun\",\"cells\":[]}";

	craft(file, "cellbox-memory-checkpoint 2\n", "{\"files\":[]}", -1, "", 0, 1);
	CHECK(refused(file, dir, "version or kind"));
	CHECK(memckpt_is(file) == 0);
	put(file, rerun, strlen(rerun));
	CHECK(refused(file, dir, "version or kind"));
	CHECK(memckpt_is(file) == 0);
	fsutil_remove_tree(dir);
	free(file);
	free(dir);
}

static void test_not_signed(void)
{
	char *dir = scratch_dir(), *file = xasprintf("%s/c.ckpt", dir);
	struct strbuf sb = STRBUF_INIT;
	cJSON *meta = NULL;
	struct strbuf err = STRBUF_INIT;

	craft(file, MEMCKPT_MAGIC, "{\"files\":[{\"name\":\"f\",\"size\":2}]}", -1, "zz", 2, 0);
	CHECK(refused(file, dir, "not signed"));
	/* Signed, then one byte of the image changed. */
	craft(file, MEMCKPT_MAGIC, "{\"files\":[{\"name\":\"f\",\"size\":2}]}", -1, "zz", 2, 1);
	CHECK(memckpt_read(file, KEY, &meta, &err) == 0);
	cJSON_Delete(meta);
	CHECK(strbuf_read_file(&sb, file, 1 << 20) >= 0);
	sb.buf[sb.len - 66] ^= 1;
	put(file, sb.buf, sb.len);
	CHECK(refused(file, dir, "not signed"));
	/* A FIFO is refused, not waited on. */
	unlink(file);
	CHECK(mkfifo(file, 0600) == 0);
	CHECK(refused(file, dir, "not a regular file"));
	strbuf_release(&sb);
	strbuf_release(&err);
	fsutil_remove_tree(dir);
	free(file);
	free(dir);
}

static const struct tap_test tests[] = {
	{ "round_trip", test_round_trip },
	{ "key", test_key },
	{ "bad_names", test_bad_names },
	{ "links", test_links },
	{ "oversized", test_oversized },
	{ "bad_json", test_bad_json },
	{ "wrong_version", test_wrong_version },
	{ "not_signed", test_not_signed },
};

int main(int argc, char **argv)
{
	return tap_main(argc, argv, tests, ARRAY_SIZE(tests));
}
