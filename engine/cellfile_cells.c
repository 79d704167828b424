/* Lines and cells: the building blocks of a cell file's tree (see cellfile.h). */
#include "cellfile.h"
#include "cellfile_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

/* ---- lines ---- */

/* Length of the line break at p (Python's str.splitlines boundaries), 0 when none. */
static size_t line_break(const char *p)
{
	const unsigned char *u = (const unsigned char *)p;

	if (u[0] == '\r')
		return u[1] == '\n' ? 2 : 1;
	if (u[0] == '\n' || u[0] == '\v' || u[0] == '\f' || (u[0] >= 0x1c && u[0] <= 0x1e))
		return 1;
	if (u[0] == 0xc2 && u[1] == 0x85)
		return 2;
	if (u[0] == 0xe2 && u[1] == 0x80 && (u[2] == 0xa8 || u[2] == 0xa9))
		return 3;
	return 0;
}

cJSON *cellfile_lines(const char *text)
{
	cJSON *a = cJSON_CreateArray();
	const char *start = text, *p = text;

	while (*p) {
		size_t br = line_break(p);
		if (!br) {
			p++;
			continue;
		}
		p += br;
		char *line = xstrndup(start, (size_t)(p - start));
		cJSON_AddItemToArray(a, cJSON_CreateString(line));
		free(line);
		start = p;
	}
	if (p > start)
		cJSON_AddItemToArray(a, cJSON_CreateString(start));
	return a;
}

char *cellfile_join(const cJSON *source)
{
	struct strbuf sb = STRBUF_INIT;
	const cJSON *c;

	strbuf_init(&sb, 0);
	if (cJSON_IsString(source))
		strbuf_addstr(&sb, source->valuestring);
	else
		cJSON_ArrayForEach(c, source)
			if (cJSON_IsString(c))
				strbuf_addstr(&sb, c->valuestring);
	return strbuf_detach(&sb, NULL);
}

/* ---- cells ---- */

cJSON *cellfile_new_notebook(void)
{
	cJSON *nb = cJSON_CreateObject();

	cJSON_AddArrayToObject(nb, "cells");
	cJSON_AddObjectToObject(nb, "metadata");
	cJSON_AddNumberToObject(nb, "nbformat", 4);
	cJSON_AddNumberToObject(nb, "nbformat_minor", 5);
	return nb;
}

/* A fresh cell id: 8 hex digits, as nbformat makes them. */
cJSON *cellfile_new_id(void)
{
	unsigned char r[4] = { 0 };
	char id[9];

	if (getrandom(r, sizeof(r), 0) != sizeof(r)) {
		static unsigned counter;
		unsigned v = (unsigned)getpid() * 2654435761u + counter++;
		memcpy(r, &v, sizeof(r));
	}
	snprintf(id, sizeof(id), "%02x%02x%02x%02x", r[0], r[1], r[2], r[3]);
	return cJSON_CreateString(id);
}

cJSON *cellfile_add_cell(cJSON *nb, const char *type, const char *source)
{
	cJSON *cell = cJSON_CreateObject();

	cJSON_AddStringToObject(cell, "cell_type", type);
	cJSON_AddItemToObject(cell, "id", cellfile_new_id());
	cJSON_AddObjectToObject(cell, "metadata");
	cJSON_AddItemToObject(cell, "source", cellfile_lines(source));
	if (!strcmp(type, "code")) {
		cJSON_AddNullToObject(cell, "execution_count");
		cJSON_AddArrayToObject(cell, "outputs");
	}
	if (nb)
		cJSON_AddItemToArray(cJSON_GetObjectItemCaseSensitive(nb, "cells"), cell);
	return cell;
}

const char *cellfile_cell_type(const cJSON *cell)
{
	const char *t = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(cell, "cell_type"));
	return t ? t : "";
}

int cellfile_has_tag(const cJSON *cell, const char *tag)
{
	const cJSON *md = cJSON_GetObjectItemCaseSensitive(cell, "metadata"), *t;

	cJSON_ArrayForEach(t, cJSON_GetObjectItemCaseSensitive(md, "tags"))
		if (cJSON_IsString(t) && !strcmp(t->valuestring, tag))
			return 1;
	return 0;
}
