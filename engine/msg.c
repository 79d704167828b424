/* Messages for the user on stderr. */
#include "msg.h"

#include <stdarg.h>
#include <stdio.h>

void msg_error(const char *fmt, ...)
{
	va_list ap;

	fputs("cellbox: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}
