#ifndef CELLBOX_MEMCKPT_H
#define CELLBOX_MEMCKPT_H

/*
 * A memory checkpoint's file: what a runtime wrote of a sandbox's memory (gVisor's image
 * files, dockerckpt.h) beside what a restore needs to make the session again (the
 * caller's `meta`: the container's config, the channel's part, the next request id, the
 * cells), signed with the user's key. One file, so it can be copied, kept and restored
 * anywhere this user's cellbox runs:
 *
 *	cellbox-memory-checkpoint 1\n		the magic: version and kind
 *	<bytes of meta>\n			decimal, at most MEMCKPT_META_MAX
 *	<meta>					a JSON object; its "files": [{name, size}, ...]
 *	<the files' bytes, in that order>
 *	<HMAC-SHA256 of all the above, 64 hex digits>\n
 *
 * A checkpoint file is hostile input when it is restored (a file from elsewhere, or one
 * changed since): memckpt_read() takes nothing before it has checked all of it: a regular
 * file, the magic, the meta within its cap and an object, at most MEMCKPT_FILES files each
 * named as a plain file ([A-Za-z0-9._-], no leading '.', no '/', each once) and within
 * MEMCKPT_FILE_MAX (MEMCKPT_TOTAL_MAX together), a length that is exactly theirs, and the MAC
 * under this user's key. There is no link, directory or mode in the format to plant: a file
 * is its name and its bytes. memckpt_extract() checks it all again while it writes the files
 * into a directory it makes itself (it must not exist), O_EXCL | O_NOFOLLOW each, 0600, and
 * removes that directory at any failure: nothing of a refused file is left.
 *
 * The signature: a key of 32 random bytes in the user's state directory (0600, ours, or it is
 * refused), so a restore takes only files this user's cellbox made, on a machine holding the
 * key. Copying the key copies that trust (say so to whom you give one).
 */

#include <cjson/cJSON.h>
#include "util.h"

#define MEMCKPT_MAGIC "cellbox-memory-checkpoint 1\n"
#define MEMCKPT_META_MAX (1u << 20)
#define MEMCKPT_FILES 16
#define MEMCKPT_FILE_MAX (1ull << 30)
#define MEMCKPT_TOTAL_MAX (2ull << 30)
#define MEMCKPT_KEY_HEX 64

/*
 * The user's checkpoint key from `path` (64 hex digits), made when missing (random, 0600,
 * O_EXCL). A key file that is not a regular file of ours, readable by others, or not a key
 * is refused. 0, or -1 with `err`.
 */
int memckpt_key_load(const char *path, char key[MEMCKPT_KEY_HEX + 1], struct strbuf *err);

/* Whether the file at `path` begins as a memory checkpoint (1), not (0), or cannot be read (-1). */
int memckpt_is(const char *path);

/*
 * Write `path` (0600, replaced whole) from `meta` (an object: its "files" is set here) and the
 * regular files of directory `dir` (the runtime's image; anything else in it is refused).
 * 0, or -1 with `err` (nothing written).
 */
int memckpt_write(const char *path, const char *key, const cJSON *meta, const char *dir,
		  struct strbuf *err);
/* Check all of file `path` as above; its meta into *meta (the caller deletes it). 0, or -1. */
int memckpt_read(const char *path, const char *key, cJSON **meta, struct strbuf *err);
/*
 * Check file `path` and write its files into directory `dir`, made here 0700 (its parent must
 * exist; `dir` must not). 0, or -1 with `err` and `dir` removed when it was made.
 */
int memckpt_extract(const char *path, const char *key, const char *dir, struct strbuf *err);

#endif
