/*
 * libFuzzer target: a memory checkpoint's file as `cellbox restore` reads it (memckpt_read:
 * the magic, the meta's length line and JSON, its files' names and sizes against the
 * length, the MAC). The input is the file after its magic, signed here with a fixed key, so
 * that the parser past the MAC is what is fuzzed; an accepted file is extracted too (into a
 * directory made for it, removed after). Built with -Dfuzz=true; run by scripts/fuzz.
 */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "fsutil.h"
#include "memckpt.h"
#include "sha256.h"

#define KEY "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* What it accepts is an object whose files are named as plain files; what it refuses it says why. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char magic[] = MEMCKPT_MAGIC;
	struct strbuf err = STRBUF_INIT;
	struct sha256_hmac h;
	char path[64], mac[65];
	cJSON *meta = NULL;
	int fd = memfd_create("fuzz-memckpt", MFD_CLOEXEC);

	if (fd < 0 || size > (1u << 22))
		goto out;
	sha256_hmac_init(&h, KEY, strlen(KEY));
	sha256_hmac_update(&h, magic, strlen(magic));
	sha256_hmac_update(&h, data, size);
	sha256_hmac_hex(&h, mac);
	if (fsutil_write_all(fd, magic, strlen(magic)) < 0 || fsutil_write_all(fd, data, size) < 0 ||
	    fsutil_write_all(fd, mac, 64) < 0 || fsutil_write_all(fd, "\n", 1) < 0)
		goto out;
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	if (memckpt_read(path, KEY, &meta, &err) < 0) {
		if (!err.len || meta)
			abort();
	} else {
		char tmp[] = "/tmp/fuzz-memckpt-XXXXXX", *dir;

		if (!cJSON_IsObject(meta) || !mkdtemp(tmp))
			abort();
		dir = malloc(strlen(tmp) + 3);
		sprintf(dir, "%s/x", tmp);
		strbuf_reset(&err);
		if (memckpt_extract(path, KEY, dir, &err) < 0 && !err.len)
			abort();
		fsutil_remove_tree(tmp);
		free(dir);
	}
out:
	cJSON_Delete(meta);
	strbuf_release(&err);
	if (fd >= 0)
		close(fd);
	return 0;
}
