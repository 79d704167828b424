#ifndef CELLBOX_LIBRARIES_H
#define CELLBOX_LIBRARIES_H

/*
 * Libraries installed into the sandbox before the first cell (llm-sandbox's
 * `libraries=["numpy", "pandas"]`), with pip, into a virtual environment that sees the
 * image's (or the interpreter's) own packages, and kept so that only the first session with
 * a set pays for it:
 *
 *  - docker, podman: a setup container of the kernel image creates /opt/cellbox/venv and
 *    pip-installs the set there; the result is committed once as the image
 *    cellbox-libs:<hash of the base image's id, the set, the wheels and the owner>, labelled
 *    with each (org.cellbox.libraries, org.cellbox.base, org.cellbox.wheels,
 *    org.cellbox.owner), its PATH leading to the venv. Later sessions and pools of the same
 *    set from the same wheels on the same image, of the same user, start from it;
 *    `cellbox gc --images` removes those no container uses.
 *  - local: a venv in $XDG_CACHE_HOME/cellbox/venvs/<hash of the interpreter, the set and
 *    the wheels>, whose python becomes the kernel's.
 *
 * With a wheelhouse (a directory of wheels) pip installs with --no-index --find-links from
 * its wheels alone: the host reads each (*.whl, opened O_NOFOLLOW), keys the cache by their
 * SHA-256 digests (org.cellbox.wheels: the digest of the sorted list of digests and names,
 * checked on reuse) and hands the install a private copy of exactly those bytes (mounted
 * read-only into the setup container): no network is needed, and a second wheelhouse with
 * other wheels of the same names and versions gets an image of its own. Without one, a user's
 * own image of the set is reused, whatever wheels it came from. A derived image is its
 * user's (org.cellbox.owner uid:N): another user's is never reused unless both choose the
 * shared cache (`libraries-shared`: owner "shared"). A failed install is an error naming the
 * package and quoting pip; nothing is cached then.
 * The venv holds a file `cellbox-libraries` with the set, so a kernel can be asked which
 * set it has (a pooled one).
 */

#include <stdio.h>
#include "backend.h"
#include "policy.h"
#include "util.h"

struct libraries {
	char **names;		/* the requirements as given: "numpy", "pandas>=2,<3" */
	size_t n;
	char *key;		/* normalised and sorted: "numpy,pandas>=2,<3" (labels, hashes) */
	char *shown;		/* as given, for messages: "numpy, pandas>=2,<3" */
};

/*
 * Parse a comma-separated list of requirements (a piece that starts with a version operator
 * belongs to the one before: "requests>=2,<3"). Each must be NAME[extras][specifiers] as
 * PEP 508 writes them, without markers, URLs, paths or spaces (the names reach pip; a shell
 * never sees them). -1 with `err` naming the bad entry.
 */
int libraries_parse(struct libraries *l, const char *list, struct strbuf *err);
void libraries_release(struct libraries *l);
/* A library whose name is a module the policy blocks is refused: -1 with `err`. */
int libraries_check_policy(const struct libraries *l, const struct policy *p,
			   struct strbuf *err);

struct libraries_env {
	const char *backend;		/* local, docker, podman */
	const char *python;		/* local: the interpreter the venv is made from */
	const struct sandbox_opts *sandbox;	/* containers: the base image, host, network */
	const char *wheelhouse;		/* NULL: from the package index (needs the network) */
	const char *cache_dir;		/* local: NULL = $XDG_CACHE_HOME/cellbox/venvs */
	const char *lock_dir;		/* where installs of one set wait for each other */
	int shared;			/* containers: images shared between users (below) */
	FILE *progress;			/* "installing ... (once)" lines; NULL = quiet */
};

/*
 * Have the set installed, once: *image (containers: the derived image) or *python (local:
 * the venv's interpreter) is set to what the session should use (the caller frees it);
 * *installed is 1 when this call installed (0: reused). -1 with `err` set.
 */
int libraries_prepare(const struct libraries *l, const struct libraries_env *e, char **image,
		      char **python, int *installed, struct strbuf *err);
/*
 * Remove the images libraries_prepare() made that no container (running or not) uses.
 * Returns how many were removed, -1 with `err`; `out` gets a line for each image.
 */
int libraries_gc_images(const char *engine, const char *host, struct strbuf *out,
			struct strbuf *err);
/*
 * Append the code of a cell (run SESSION_EXEC_TRUSTED) that raises RuntimeError("the pooled
 * kernel has the libraries ...") unless the kernel's venv holds this set (a pooled kernel).
 */
void libraries_check_code(const struct libraries *l, struct strbuf *code);
/* The file in the venv that names its set (".../venv/cellbox-libraries"). */
#define LIBRARIES_MARKER "cellbox-libraries"

#endif
