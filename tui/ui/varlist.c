/* The variables pane's listing from the kernel, read as hostile (varlist.h). */
#include "varlist.h"
#include "sanitize.h"
#include "utf8.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cjson/cJSON.h>

#define MARKER "{\"cellbox_vars\""
#define WHOLE_MAX 1e15		/* sizes, counts, dimensions past this are not believed */

void varlist_release(struct varlist *vl)
{
	for (size_t i = 0; i < vl->n; i++) {
		free(vl->v[i].name);
		free(vl->v[i].raw);
		free(vl->v[i].type);
	}
	free(vl->v);
	memset(vl, 0, sizeof(*vl));
}

/* A string of the kernel's for the screen: at most `max` bytes of it, one line, clean. */
static char *shown(const char *s, size_t max)
{
	struct strbuf sb = STRBUF_INIT;

	sanitize_str(s, strnlen(s, max), SAN_NO_CR, &sb);
	for (size_t i = 0; i < sb.len; i++)
		if (sb.buf[i] == '\n' || sb.buf[i] == '\t')
			sb.buf[i] = ' ';
	return strbuf_detach(&sb, NULL);
}

/* A whole number in [0, WHOLE_MAX] from item `j`, else -1. */
static long long whole(const cJSON *j)
{
	double d;

	if (!cJSON_IsNumber(j))
		return -1;
	d = j->valuedouble;
	if (!isfinite(d) || d < 0 || d > WHOLE_MAX || floor(d) != d)
		return -1;
	return (long long)d;
}

/* "(3, 4)", "(3,)": the shape of array `a`, or "" when it is not one of whole numbers. */
static void shape_text(const cJSON *a, char *buf, size_t len)
{
	int n = cJSON_GetArraySize(a), off, k = 0;
	const cJSON *d;

	buf[0] = '\0';
	if (!cJSON_IsArray(a) || n > 64)
		return;
	cJSON_ArrayForEach(d, a)
		if (whole(d) < 0)
			return;
	if (n > VARLIST_DIMS_MAX) {
		snprintf(buf, len, "(%d dims)", n);
		return;
	}
	off = snprintf(buf, len, "(");
	cJSON_ArrayForEach(d, a)
		off += snprintf(buf + off, len - (size_t)off, "%s%lld", k++ ? ", " : "", whole(d));
	snprintf(buf + off, len - (size_t)off, "%s)", n == 1 ? "," : "");
}

/* One entry of the listing into `e`; 0, or -1 when it has no string name. */
static int entry(const cJSON *o, struct var_entry *e)
{
	const char *name = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, "name"));
	const char *type = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, "type"));
	long long n;

	memset(e, 0, sizeof(*e));
	if (!cJSON_IsObject(o) || !name || !*name)
		return -1;
	e->name = shown(name, VARLIST_NAME_MAX);
	if (strlen(name) <= VARLIST_NAME_MAX && utf8_valid(name, strlen(name), NULL))
		e->raw = xstrdup(name);
	e->type = shown(type && *type ? type : "?", VARLIST_TYPE_MAX);
	shape_text(cJSON_GetObjectItemCaseSensitive(o, "shape"), e->shape, sizeof(e->shape));
	if (!e->shape[0] && (n = whole(cJSON_GetObjectItemCaseSensitive(o, "len"))) >= 0)
		snprintf(e->shape, sizeof(e->shape), "len %lld", n);
	e->size = whole(cJSON_GetObjectItemCaseSensitive(o, "size"));
	return 0;
}

int varlist_parse(struct varlist *vl, const char *text, size_t len, struct strbuf *err)
{
	const char *at = len >= strlen(MARKER) ? memmem(text, len, MARKER, strlen(MARKER)) : NULL;
	const char *end = NULL;
	const cJSON *list, *o;
	cJSON *root;

	varlist_release(vl);
	if (!at) {
		strbuf_addstr(err, "the kernel sent no listing");
		return -1;
	}
	len -= (size_t)(at - text);
	if (len > VARLIST_TEXT_MAX) {
		strbuf_addf(err, "the listing is over %u KiB", VARLIST_TEXT_MAX >> 10);
		return -1;
	}
	root = cJSON_ParseWithLengthOpts(at, len, &end, 0);
	list = cJSON_GetObjectItemCaseSensitive(root, "cellbox_vars");
	if (!cJSON_IsArray(list)) {
		strbuf_addstr(err, "the listing is not what cellbox asked for");
		cJSON_Delete(root);
		return -1;
	}
	vl->v = xcalloc(VARLIST_MAX, sizeof(*vl->v));
	cJSON_ArrayForEach(o, list) {
		if (vl->n == VARLIST_MAX)
			break;
		if (entry(o, &vl->v[vl->n]) == 0)
			vl->n++;
	}
	vl->count = whole(cJSON_GetObjectItemCaseSensitive(root, "count"));
	if (vl->count < (long long)vl->n)
		vl->count = (long long)vl->n;
	cJSON_Delete(root);
	return 0;
}

void varlist_size_text(long long n, char *buf, size_t len)
{
	static const char *const units[] = { "KiB", "MiB", "GiB", "TiB", "PiB" };
	double d = (double)n;
	size_t u = 0;

	if (n < 0) {
		snprintf(buf, len, "?");
		return;
	}
	if (n < 1024) {
		snprintf(buf, len, "%lld B", n);
		return;
	}
	for (d /= 1024; d >= 1024 && u + 1 < ARRAY_SIZE(units); u++)
		d /= 1024;
	snprintf(buf, len, d < 10 ? "%.1f %s" : "%.0f %s", d, units[u]);
}
