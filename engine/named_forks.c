/*
 * Forking a named session, the front end's part (named_setup.h, docs/sessions.md "Fork"): the
 * way chosen by the kernel's backend and what its host says it can do, then a copy of the
 * process (named_fork.c), a memory checkpoint made twice into sessions (named_memckpt.c), or
 * the session's cells run again in a fresh kernel (named_checkpoint.c's file), said as such.
 */
#include "named_setup.h"
#include "named_int.h"
#include "backend.h"
#include "kernel.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Whether its backend's kernels are processes of this host, and its status reply into *st. */
static int status_of(const char *runtime, const char *name, cJSON **st, int *child,
		     struct strbuf *err)
{
	cJSON *msg = cJSON_CreateObject();
	const struct backend_ops *ops;

	cJSON_AddStringToObject(msg, "t", "status");
	if (!(*st = named_ask(runtime, name, msg, 10.0, err)))
		return -1;
	ops = backend_find(named_str(*st, "backend") ? named_str(*st, "backend") : "", err);
	if (!ops) {
		cJSON_Delete(*st);
		*st = NULL;
		return -1;
	}
	*child = !!(ops->flags & BACKEND_CHILD_KERNELS);
	return 0;
}

/*
 * Through a memory checkpoint: runsc cannot checkpoint a kernel and leave it running here, so
 * NAME's kernel is checkpointed (stopped), NAME made again from the file, then NEW from it
 * too. When a restore fails the file is kept and named.
 */
static int by_memory(const struct cellbox_config *cfg, const char *runtime, const char *name,
		     const char *new_name, const sigset_t *mask, struct strbuf *err)
{
	char *path = xasprintf("%s/.fork-%s.ckpt", runtime, new_name);
	const char *again = name;
	struct strbuf ignore = STRBUF_INIT;
	struct session *s;
	int rc = -1;

	if (named_checkpoint_memory(runtime, name, path, err) < 0) {
		unlink(path);
		goto out;
	}
	if (named_kill(runtime, name, err) < 0)
		goto kept;
	for (int i = 0; i < 2; i++, again = new_name) {
		s = named_setup_restore(cfg, again, path, NULL, mask, err);
		if (!s)
			goto kept;
		setup_close(s, cfg, NULL, &ignore);
	}
	unlink(path);
	rc = 0;
	goto out;
kept:
	strbuf_addf(err, " (its kernel's checkpoint is kept: cellbox restore --name %s %s)", again,
		    path);
out:
	strbuf_release(&ignore);
	free(path);
	return rc;
}

/*
 * By re-running: NAME's cells written to a re-run checkpoint beside the sessions, read back
 * (checked and capped as any), run in a new session of NAME's backend, kernel and sandbox.
 */
static int by_rerun(const struct cellbox_config *cfg, const char *runtime, const char *name,
		    const char *new_name, const cJSON *st, const sigset_t *mask,
		    struct named_forked *out, struct strbuf *err)
{
	char *path = xasprintf("%s/.fork-%s.json", runtime, new_name);
	const struct kernel_def *k = kernel_find(named_str(st, "kernel") ?
						 named_str(st, "kernel") : "python");
	struct cellbox_config c = *cfg;
	struct strbuf ignore = STRBUF_INIT;
	struct named_ckpt ck;
	struct session *s = NULL;
	size_t n = 0;
	int rc = -1;

	memset(&ck, 0, sizeof(ck));
	if (named_checkpoint(runtime, name, path, &n, err) < 0 ||
	    named_checkpoint_load(path, &ck, err) < 0)
		goto out;
	if (!k) {
		strbuf_addf(err, "session '%s': its kernel is not one of this cellbox's", name);
		goto out;
	}
	/* The strings are borrowed from the status reply, which outlives the session here. */
	c.session.backend = named_str(st, "backend");
	c.session.kernel = k->name;
	if (named_str(st, "runtime"))
		c.session.sandbox.runtime = named_str(st, "runtime");
	if (named_str(st, "image"))
		c.session.sandbox.image = named_str(st, "image");
	if (named_str(st, "engine"))
		c.session.sandbox.host = named_str(st, "engine");
	if (!(s = named_setup_open(&c, new_name, 1, NULL, 0, NULL, NULL, mask, err)))
		goto out;
	if (named_checkpoint_rerun(s, &ck, cfg->timeout, NULL, NULL, &out->raised, err) <
	    ck.ncells) {
		strbuf_addf(err, ": the fork '%s' is ended", new_name);
		named_kill(runtime, new_name, &ignore);
		goto out;
	}
	out->cells = ck.ncells;
	rc = 0;
out:
	if (s)
		setup_close(s, &c, NULL, &ignore);
	named_checkpoint_free(&ck);
	strbuf_release(&ignore);
	unlink(path);
	free(path);
	return rc;
}

int named_setup_fork(const struct cellbox_config *cfg, const char *name, const char *new_name,
		     const sigset_t *mask, struct named_forked *out, struct strbuf *err)
{
	char *runtime = session_runtime_dir(cfg->session.runtime_dir);
	struct strbuf why = STRBUF_INIT;
	cJSON *st = NULL;
	int child = 0, rc = -1;

	memset(out, 0, sizeof(*out));
	if (!runtime) {
		strbuf_addstr(err, "no runtime directory of ours for the session");
		return -1;
	}
	if (!named_name_ok(new_name)) {
		strbuf_addf(err, "'%s' cannot name a session (letters, digits, '.', '_', '-')",
			    new_name);
		goto out;
	}
	if (status_of(runtime, name, &st, &child, err) < 0)
		goto out;
	if (child) {
		out->kind = NAMED_FORK_COPY;
		rc = named_fork(runtime, name, new_name, err);
	} else if (named_checkpoint_memory(runtime, name, NULL, &why) == 0) {
		out->kind = NAMED_FORK_MEMORY;
		rc = by_memory(cfg, runtime, name, new_name, mask, err);
	} else {
		out->kind = NAMED_FORK_RERUN;
		/* "session 'a': " said once, by the line the front end prints */
		snprintf(out->why, sizeof(out->why), "%s", strstr(why.buf, "': ") ?
			 strstr(why.buf, "': ") + 3 : why.buf);
		rc = by_rerun(cfg, runtime, name, new_name, st, mask, out, err);
	}
out:
	cJSON_Delete(st);
	strbuf_release(&why);
	free(runtime);
	return rc;
}

char *named_forked_text(const char *name, const char *new_name, const struct named_forked *f)
{
	switch (f->kind) {
	case NAMED_FORK_MEMORY:
		return xasprintf("forked session '%s' into '%s' through a memory checkpoint: a copy "
				 "of its kernel's memory (variables, imports, objects), independent "
				 "from now on; '%s' was made again from it, front ends attached to "
				 "it are detached (cellbox attach %s)", name, new_name, name, name);
	case NAMED_FORK_RERUN:
		return xasprintf("forked session '%s' into '%s' by re-running %zu cell%s: not a "
				 "memory copy (a fresh kernel ran them again, %d raised; what they "
				 "read from outside, clocks, random numbers, may differ; no memory "
				 "checkpoint: %s)", name, new_name, f->cells,
				 f->cells == 1 ? "" : "s", f->raised, f->why);
	case NAMED_FORK_COPY:
	default:
		return xasprintf("forked session '%s' into '%s': a copy of its kernel process "
				 "(variables, imports, memory), independent from now on", name,
				 new_name);
	}
}
