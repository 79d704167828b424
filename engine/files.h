#ifndef CELLBOX_FILES_H
#define CELLBOX_FILES_H

/*
 * Copying files into and out of the sandbox, for every backend: the bytes cross through the
 * channel (a bind mount for containers) and a silent cell puts them in place on the kernel's
 * side, so a read-only root with tmpfs work directories is no obstacle.
 */

#include "session.h"

/*
 * Copy the host file `src` to `dst` in the sandbox (relative paths are relative to the
 * kernel's working directory; NULL = the base name of `src`; an existing directory receives
 * the file under its base name). Returns 0 or -1 with `err` set.
 */
int files_copy_in(struct session *s, const char *src, const char *dst, struct strbuf *err);
/*
 * Copy the sandbox file `src` to `dst` on the host (NULL = the base name of `src` in the
 * current directory; an existing directory receives it under its base name).
 */
int files_copy_out(struct session *s, const char *src, const char *dst, struct strbuf *err);
/*
 * Parse "SRC[:DST]" as the --copy-in and --copy-out flags take it: *dst is NULL without
 * a colon. The caller frees *src and *dst.
 */
void files_parse_spec(const char *spec, char **src, char **dst);

#endif
