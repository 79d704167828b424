/* IPython's colour scheme set by a silent cell. */
#include "ipycolors.h"

#include <stdio.h>

#include "theme.h"

const char *ipycolors_for_background(int light)
{
	return light == 1 ? "LightBG" : "Linux";
}

/* Events of the silent cell: nobody wants them. */
static void ui_on_ignore(struct session *s, const struct session_event *ev, void *data)
{
	(void)s, (void)ev, (void)data;
}

int ipycolors_apply(struct session *s, const char *scheme, struct strbuf *err)
{
	char code[96];

	if (!theme_ipython_scheme_valid(scheme)) {
		strbuf_addf(err, "'%s' is not an IPython colour scheme", scheme);
		return -1;
	}
	snprintf(code, sizeof(code), "get_ipython().run_line_magic('colors', '%s')", scheme);
	return session_execute(s, code, SESSION_EXEC_SILENT, 0, ui_on_ignore, NULL, err) ? 0 : -1;
}
