#ifndef CELLBOX_FILES_H
#define CELLBOX_FILES_H

/*
 * Moving files into and out of the sandbox, for every backend and every front end: the bytes
 * cross through the channel (a bind mount for containers) and a silent helper cell of the
 * kernel's language (kernel.h: copy_in, copy_out) puts them in place on the kernel's side, so a
 * read-only root with tmpfs work directories is no obstacle.
 *
 * In: the host writes the bytes into its part of the channel (the kernel reads them there,
 * cannot change them) and the helper copies them to their path. Out: the helper copies at most
 * max + 1 bytes of the file into the kernel's part (out/<random name>) and the host takes that
 * copy by the wall's rules (wall.h: a regular file of the kernel's, one link, within the cap,
 * never blocking); the cap is the host's, whatever the kernel does.
 *
 * A move is two steps around the helper cell, so that a front end that cannot wait (the MCP
 * server) runs the cell in its own loop:
 *
 *	struct files_move m;
 *	files_out_begin(s, "data.csv", max, &m, err);		// m.code: the helper cell
 *	cellrun_silent(s, m.code, err);				// or session_execute(), async
 *	files_out_end(s, &m, &bytes, NULL, err);		// once it ran without error
 *	files_move_release(s, &m);				// always
 *
 * files_copy_in() and files_copy_out() are those steps for a front end that may block.
 */

#include "session.h"

struct files_move {
	char *code;		/* the helper cell: run it silent and trusted; the caller may take it */
	/* private to files.c */
	int out;		/* a move out of the sandbox */
	char *name;		/* the staged file: in, files/<name> of the host part; out, out/<name> */
	size_t max;		/* out: the cap (0: the channel quota) */
};

/*
 * Stage `len` bytes of `data` for the sandbox path `dst` (relative paths are relative to the
 * kernel's working directory; an existing directory is an error of the helper) and build the
 * helper cell that puts them there. 0, or -1 with `err` (nothing to release then).
 */
int files_in_begin(struct session *s, const void *data, size_t len, const char *dst,
		   struct files_move *m, struct strbuf *err);
/*
 * Build the helper cell that copies the sandbox file `src` (at most `max` bytes and one more,
 * 0: the channel quota) into the kernel's part of the channel. 0 or -1 with `err`.
 */
int files_out_begin(struct session *s, const char *src, size_t max, struct files_move *m,
		    struct strbuf *err);
/*
 * Take the copy of a move out once its helper cell ran without error: into `data`, or with
 * `dst` set into that host path. -1 with `err` ("the sandbox's copy is refused: it is a
 * symbolic link", "... is larger than 65536 bytes") when it breaks a rule of the wall.
 */
int files_out_end(struct session *s, struct files_move *m, struct strbuf *data, const char *dst,
		  struct strbuf *err);
/*
 * Remove what a move staged and free it. `s` NULL: the session is gone (its channel with it),
 * only free.
 */
void files_move_release(struct session *s, struct files_move *m);

/*
 * Copy the host file `src` to `dst` in the sandbox (NULL = the base name of `src`; an existing
 * directory is an error). Blocks until the helper cell ran. Returns 0 or -1 with `err` set.
 */
int files_copy_in(struct session *s, const char *src, const char *dst, struct strbuf *err);
/*
 * Copy the sandbox file `src` to `dst` on the host (NULL = the base name of `src` in the
 * current directory; an existing directory receives it under its base name), within the
 * channel quota.
 */
int files_copy_out(struct session *s, const char *src, const char *dst, struct strbuf *err);
/*
 * Parse "SRC[:DST]" as the --copy-in and --copy-out flags take it: *dst is NULL without
 * a colon. The caller frees *src and *dst.
 */
void files_parse_spec(const char *spec, char **src, char **dst);

#endif
