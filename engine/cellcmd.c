/* What a cell's text asks of the front end: exit words and ':' commands. */
#include "cellcmd.h"

#include <string.h>

int cellcmd_is_exit(const char *code)
{
	const char *p = code + strspn(code, " \t\n");
	size_t n = strlen(p);

	while (n && strchr(" \t\n", p[n - 1]))
		n--;
	if (n != 4 && n != 6)
		return 0;
	return (!strncmp(p, "exit", 4) || !strncmp(p, "quit", 4)) &&
	       (n == 4 || !strncmp(p + 4, "()", 2));
}

int cellcmd_is_command(const char *code)
{
	return code[0] == ':' && !strchr(code, '\n');
}
