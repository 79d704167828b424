/*
 * libFuzzer target: the event line decoder (event_decode). Every line of a results file is
 * the kernel's, which is hostile in a container backend. Built with -Dfuzz=true (meson.build
 * here); run by scripts/fuzz. The unit test events/decode_fuzz runs a fixed mutation sweep of
 * the same function in every build.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "event.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Whether a relative path stays below where it is joined: no "..", not absolute. */
static int inside(const char *p)
{
	if (*p == '/' || !*p)
		return 0;
	for (const char *c = p; *c;) {
		size_t n = strcspn(c, "/");

		if (n == 2 && c[0] == '.' && c[1] == '.')
			return 0;
		c += n;
		c += *c == '/';
	}
	return 1;
}

/* Decode one line; what comes out must keep the promises of event.h. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct event_store st = EVENT_STORE_INIT;
	struct session_event ev;

	if (event_decode(&st, (const char *)data, size, 1, &ev) == 0) {
		if (ev.type == SESSION_EV_STREAM && (!ev.stream.text ||
						     strlen(ev.stream.text) != ev.stream.len))
			abort();
		if (ev.type == SESSION_EV_DISPLAY && ev.display.plot && ev.display.plot->path &&
		    !inside(ev.display.plot->path))
			abort();	/* a plot path outside the channel got through */
		for (size_t i = 0; ev.type == SESSION_EV_ERROR && i < ev.error.ntraceback; i++)
			if (!ev.error.traceback[i])
				abort();
	}
	event_store_release(&st);
	return 0;
}
