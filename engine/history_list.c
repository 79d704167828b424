/*
 * The history store's sessions: where they are, and their ids in order. A part of history.c
 * (history.h), beside history_plots.c, which uses it too.
 */
#include "history.h"

#include <dirent.h>
#include <stdlib.h>
#include <string.h>

char *history_sessions_dir(void)
{
	const char *state = getenv("XDG_STATE_HOME"), *home = getenv("HOME");

	if (state && *state)
		return xasprintf("%s/cellbox/sessions", state);
	return xasprintf("%s/.local/state/cellbox/sessions", home && *home ? home : ".");
}

/* Compare strings for qsort. */
static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

char **history_sessions(void)
{
	char *base = history_sessions_dir();
	DIR *d = opendir(base);
	char **list = xcalloc(1, sizeof(*list));
	size_t n = 0;
	struct dirent *de;

	while (d && (de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		list = xrealloc(list, (n + 2) * sizeof(*list));
		list[n++] = xstrdup(de->d_name);
		list[n] = NULL;
	}
	if (d)
		closedir(d);
	qsort(list, n, sizeof(*list), cmp_str);
	free(base);
	return list;
}

void history_free_list(char **list)
{
	for (size_t i = 0; list && list[i]; i++)
		free(list[i]);
	free(list);
}
