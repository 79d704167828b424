/* The names a session starts from that need no session: its runtime directory, its images. */
#include "session.h"

#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kernel.h"
#include "protocol.h"	/* generated from the runner: CELLBOX_PROTOCOL, CELLBOX_KERNEL_IMAGE */

/* The configured runtime directory, else $XDG_RUNTIME_DIR/cellbox, else /tmp/cellbox-<uid>. */
char *session_runtime_dir(const char *configured)
{
	const char *xdg = getenv("XDG_RUNTIME_DIR");
	struct stat st;

	if (configured)
		return xstrdup(configured);
	if (xdg && *xdg && stat(xdg, &st) == 0 && S_ISDIR(st.st_mode) && access(xdg, W_OK) == 0)
		return xasprintf("%s/cellbox", xdg);
	return xasprintf("/tmp/cellbox-%ld", (long)getuid());
}

/* The Python kernel's image for this build's protocol. */
const char *session_kernel_image(void)
{
	return CELLBOX_KERNEL_IMAGE;
}

/* The image of kernel `name` for this build's protocol: <repository>:p<protocol>. */
char *session_kernel_image_for(const char *name)
{
	const struct kernel_def *k = kernel_find(name);

	return k ? xasprintf("%s:p%d", k->image, CELLBOX_PROTOCOL) : NULL;
}
