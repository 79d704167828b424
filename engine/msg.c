/* Messages for the user on stderr. */
#include "msg.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "sanitize.h"

void msg_error(const char *fmt, ...)
{
	struct strbuf clean = STRBUF_INIT;
	va_list ap;
	char *text;
	int n;

	va_start(ap, fmt);
	n = vasprintf(&text, fmt, ap);
	va_end(ap);
	if (n < 0)
		abort();
	/* Messages quote names and text from files, kernels, other users' directories. */
	sanitize_str(text, (size_t)n, SAN_NO_CR, &clean);
	fprintf(stderr, "cellbox: %s\n", clean.buf);
	strbuf_release(&clean);
	free(text);
}
