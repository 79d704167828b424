/* The names a session starts from that need no session: its runtime directory, its images. */
#include "session.h"

#include <stdlib.h>
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include "kernel.h"
#include "protocol.h"	/* generated from the runner: CELLBOX_PROTOCOL, CELLBOX_KERNEL_IMAGE */

/*
 * A tmpfs for channels when XDG_RUNTIME_DIR is unset: /dev/shm when it is a tmpfs we may write
 * of at least SHM_MIN bytes (a container's 64 MB one would fill up before a kernel's quota).
 * Its cellbox-UID directory is then checked as any other (ours and 0700, or refused).
 */
#define SHM_DIR "/dev/shm"
#define SHM_MIN (1ull << 30)

/* Whether SHM_DIR is a tmpfs big enough to hold channels. */
static int shm_usable(void)
{
	struct statfs sf;

	return statfs(SHM_DIR, &sf) == 0 && sf.f_type == TMPFS_MAGIC &&
	       (unsigned long long)sf.f_blocks * (unsigned long long)sf.f_bsize >= SHM_MIN &&
	       access(SHM_DIR, W_OK | X_OK) == 0;
}

/*
 * The configured runtime directory, else $XDG_RUNTIME_DIR/cellbox, else /dev/shm/cellbox-<uid>
 * (a tmpfs: the round trip of a cell is a few file operations), else /tmp/cellbox-<uid>.
 */
char *session_runtime_dir(const char *configured)
{
	const char *xdg = getenv("XDG_RUNTIME_DIR");
	struct stat st;

	if (configured)
		return xstrdup(configured);
	if (xdg && *xdg && stat(xdg, &st) == 0 && S_ISDIR(st.st_mode) && access(xdg, W_OK) == 0)
		return xasprintf("%s/cellbox", xdg);
	if (shm_usable())
		return xasprintf(SHM_DIR "/cellbox-%ld", (long)getuid());
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
