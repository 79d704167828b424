/* Files into and out of the sandbox, through the channel. */
#include "files.h"
#include "cellrun.h"
#include "wall.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Append `s` as a string literal (JSON strings are Python and R literals). */
static void add_literal(struct strbuf *sb, const char *s)
{
	cJSON *str = cJSON_CreateString(s);
	char *text = cJSON_PrintUnformatted(str);

	strbuf_addstr(sb, text);
	cJSON_free(text);
	cJSON_Delete(str);
}

/* The last path component. */
static const char *base_name(const char *path)
{
	const char *slash = strrchr(path, '/');

	return slash && slash[1] ? slash + 1 : path;
}

void files_parse_spec(const char *spec, char **src, char **dst)
{
	const char *colon = strchr(spec, ':');

	*src = colon ? xstrndup(spec, (size_t)(colon - spec)) : xstrdup(spec);
	*dst = colon && colon[1] ? xstrdup(colon + 1) : NULL;
}

int files_copy_in(struct session *s, const char *src, const char *dst, struct strbuf *err)
{
	struct strbuf data = STRBUF_INIT, code = STRBUF_INIT;
	char *rel = NULL, *staged = NULL, rnd[17];
	struct stat st;
	int rc = -1;

	if (stat(src, &st) == 0 && S_ISDIR(st.st_mode)) {
		strbuf_addf(err, "cannot copy '%s' in: it is a directory (copy files)", src);
		goto out;
	}
	if (strbuf_read_file(&data, src, STRBUF_DEFAULT_MAX / 2) < 0) {
		strbuf_addf(err, "cannot read '%s': %s", src, strerror(errno));
		goto out;
	}
	/* Staged in the host part, which the kernel reads but cannot change; ours to remove. */
	wall_random_hex(rnd, 8);
	rel = xasprintf("files/copy-in-%s", rnd);
	if (session_write_file(s, rel, data.buf, data.len, err) < 0)
		goto out;
	staged = xasprintf("%s/host/%s", session_channel_dir(s), rel);
	strbuf_addstr(&code, session_kernel(s)->copy_in[0]);
	add_literal(&code, staged);
	strbuf_addstr(&code, session_kernel(s)->copy_in[1]);
	add_literal(&code, dst ? dst : base_name(src));
	strbuf_addstr(&code, session_kernel(s)->copy_in[2]);
	rc = cellrun_silent(s, code.buf, err);
	session_remove_file(s, rel);
out:
	if (rc < 0 && err->len && !strstr(err->buf, src)) {
		struct strbuf msg = STRBUF_INIT;
		strbuf_addf(&msg, "cannot copy '%s' into the sandbox: %s", src, err->buf);
		strbuf_reset(err);
		strbuf_addstr(err, msg.buf);
		strbuf_release(&msg);
	}
	strbuf_release(&data);
	strbuf_release(&code);
	free(rel);
	free(staged);
	return rc;
}

int files_copy_out(struct session *s, const char *src, const char *dst, struct strbuf *err)
{
	struct strbuf code = STRBUF_INIT;
	char rnd[17], *name, *staged, *target = NULL;
	struct stat st;
	int rc = -1;

	/* Staged in the kernel part; taken by the wall's rules (a regular file, one link). */
	wall_random_hex(rnd, 8);
	name = xasprintf("copy-out-%s", rnd);
	staged = xasprintf("%s/kernel/out/%s", session_channel_dir(s), name);
	strbuf_addstr(&code, session_kernel(s)->copy_out[0]);
	add_literal(&code, src);
	strbuf_addstr(&code, session_kernel(s)->copy_out[1]);
	add_literal(&code, staged);
	strbuf_addstr(&code, session_kernel(s)->copy_out[2]);
	if (cellrun_silent(s, code.buf, err) < 0) {
		struct strbuf msg = STRBUF_INIT;
		strbuf_addf(&msg, "cannot copy '%s' out of the sandbox: %s", src, err->buf);
		strbuf_reset(err);
		strbuf_addstr(err, msg.buf);
		strbuf_release(&msg);
		goto out;
	}
	if (!dst)
		target = xstrdup(base_name(src));
	else if (stat(dst, &st) == 0 && S_ISDIR(st.st_mode))
		target = xasprintf("%s/%s", dst, base_name(src));
	else
		target = xstrdup(dst);
	if (session_take_file(s, name, 0, target, NULL, err) < 0) {
		struct strbuf msg = STRBUF_INIT;
		strbuf_addf(&msg, "cannot copy '%s' out of the sandbox: %s", src, err->buf);
		strbuf_reset(err);
		strbuf_addstr(err, msg.buf);
		strbuf_release(&msg);
		goto out;
	}
	rc = 0;
out:
	strbuf_release(&code);
	free(name);
	free(staged);
	free(target);
	return rc;
}
