/* iTerm2's inline images: OSC 1337 File=. */
#include "iterm.h"

#include "graphics.h"

void iterm_image(struct strbuf *out, int tmux, const void *data, size_t len, int cols,
		 int rows)
{
	struct strbuf osc = STRBUF_INIT;

	strbuf_addf(&osc, "\x1b]1337;File=inline=1;size=%zu;width=%d;height=%d;"
		    "preserveAspectRatio=0:", len, cols, rows);
	base64_encode(data, len, &osc);
	strbuf_addch(&osc, '\a');
	if (tmux)
		graphics_wrap_tmux(osc.buf, osc.len, out);
	else
		strbuf_add(out, osc.buf, osc.len);
	strbuf_release(&osc);
}
