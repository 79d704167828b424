#ifndef CELLBOX_LIBRARIES_INT_H
#define CELLBOX_LIBRARIES_INT_H

/*
 * What the two halves of libraries (libraries.c: requirements and local venvs;
 * libraries_image.c: derived images) share, held by libraries_pip.c (the setup script and
 * pip's arguments and failures, a set's hash and lock) but for libraries_prepare_image().
 * Internal. It names the types of libraries.h without needing their insides, so it sits
 * below both halves.
 */

#include <stddef.h>

struct libraries;
struct libraries_env;
struct strbuf;

/*
 * The Python run to install: make the venv (argv[1]) that sees the interpreter's packages,
 * pip-install argv[3:] into it, and leave the set's key (argv[2]) in LIBRARIES_MARKER.
 */
extern const char libraries_setup_script[];
/* A cache name for `s`: FNV-1a, 64 bits, as 16 hex digits (labels are checked besides). */
void libraries_hash(const char *s, char out[17]);
/* Wait for (and take) the install lock of one set; the descriptor, or -1 (go on unlocked). */
int libraries_lock(const char *dir, const char *hash);
/* What of pip's output explains a failure: its ERROR lines, else its last lines. */
void libraries_pip_reason(const char *out, struct strbuf *sb);
/* The package pip could not install, from its message; else the whole set. */
void libraries_failed(const struct libraries *l, const char *out, struct strbuf *sb);
/* pip's options for a wheelhouse at `where` (NULL: none), then the requirements. */
size_t libraries_pip_args(const struct libraries *l, const char *where, const char **argv);
/*
 * The wheels of the wheelhouse `dir` (its *.whl files, each opened O_NOFOLLOW, a regular
 * file of at most 1 GiB), read: `digest` gets the SHA-256 of the list of their digests and
 * names ("<sha256>  <name>\n" each, by name), what the cache is keyed by; with `stage`, each
 * is also copied there as read. -1 with `err`.
 */
int libraries_wheels(const char *dir, const char *stage, char digest[65], struct strbuf *err);
/*
 * A new directory under `dir` (made if missing; the new one mode 0755) holding a copy of the wheelhouse's wheels whose
 * digest is `want` (as libraries_wheels() gave it): what the install reads, so that it
 * installs the very bytes the key was made of. NULL with `err` (also when the wheelhouse
 * changed since). The caller removes it (fsutil_remove_tree) and frees the path.
 */
char *libraries_wheels_stage(const char *dir, const char *wheelhouse, const char *want,
			     struct strbuf *err);
/* $XDG_CACHE_HOME/cellbox/<sub> (else ~/.cache/cellbox/<sub>): the user's own, on disk. */
char *libraries_cache_dir(const char *sub);
/* The container backends' half of libraries_prepare(). */
int libraries_prepare_image(const struct libraries *l, const struct libraries_env *e,
			    char **image, int *installed, struct strbuf *err);

#endif
