/*
 * A named session's life as its host sees it (named_host_int.h): its status (what `cellbox
 * ls`, a front end's hello and a checkpoint say of it), and when the host ends it on its
 * own: the idle limit (`--ttl`, the checkpoint written first when one is asked) and its
 * directory gone.
 */
#include "named_host_int.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "clock.h"
#include "msg.h"
#include "usage.h"

/* The code of the execute running now, NULL when none is. */
static const char *running_code(struct host *h)
{
	for (struct hcell *c = h->keep.cells; c; c = c->next)
		if (!c->done)
			return c->code;
	return NULL;
}

/* The sandbox's settings a fork by re-running opens its session with (named_setup_fork). */
static void add_sandbox(struct host *h, cJSON *r)
{
	const struct sandbox_opts *sb = session_sandbox(h->s);

	if (sb && sb->runtime)
		cJSON_AddStringToObject(r, "runtime", sb->runtime);
	if (sb && sb->image)
		cJSON_AddStringToObject(r, "image", sb->image);
	if (sb && sb->host)
		cJSON_AddStringToObject(r, "engine", sb->host);
}

void named_host_add_status(struct host *h, cJSON *r)
{
	const char *run = running_code(h);
	struct usage_sample u;
	int attached = 0;

	for (int i = 0; i < h->ncl; i++)
		attached += h->cl[i]->hello;
	cJSON_AddStringToObject(r, "name", h->name);
	cJSON_AddNumberToObject(r, "pid", getpid());
	cJSON_AddStringToObject(r, "backend", session_backend_name(h->s));
	cJSON_AddStringToObject(r, "kernel", session_kernel(h->s)->name);
	add_sandbox(h, r);
	cJSON_AddStringToObject(r, "state", session_state_name(session_state(h->s)));
	if (run) {
		size_t n = strcspn(run, "\n");
		char *line = xmalloc(n + 1);

		memcpy(line, run, n);
		line[n] = 0;
		cJSON_AddStringToObject(r, "running", line);
		free(line);
	}
	cJSON_AddNumberToObject(r, "idle_since", h->idle_since);
	cJSON_AddNumberToObject(r, "attached", attached);
	cJSON_AddNumberToObject(r, "ttl", h->ttl);
	/* the kernel's memory in use now, read on this side (usage.h), where it is measured */
	if (session_usage(h->s, &u) == 0 && u.memory >= 0)
		cJSON_AddNumberToObject(r, "memory", (double)u.memory);
}

/*
 * The session's cells into its idle checkpoint file before the idle limit ends it: 0, or -1
 * (logged) when they cannot be, and the session is then kept.
 */
static int ttl_checkpoint(struct host *h)
{
	struct strbuf err = STRBUF_INIT;
	cJSON *status = cJSON_CreateObject();
	int rc = -1;

	named_host_add_status(h, status);
	if (h->keep.rerun_over)
		strbuf_addf(&err, "it ran more than %d cells (or %u MiB of code) since its kernel "
			    "started", NAMED_RERUN_CELLS, NAMED_RERUN_BYTES >> 20);
	else
		rc = named_checkpoint_write(h->ttl_checkpoint, status, h->keep.rerun, &err);
	if (rc == 0)
		msg_error("session '%s': its %d cells checkpointed to %s", h->name,
			  cJSON_GetArraySize(h->keep.rerun), h->ttl_checkpoint);
	else
		msg_error("session '%s' is kept: no checkpoint to %s (%s); again in %.0f s", h->name,
			  h->ttl_checkpoint, err.buf, h->ttl);
	cJSON_Delete(status);
	strbuf_release(&err);
	return rc;
}

int named_host_idle_wait(struct host *h)
{
	double left;
	int attached = 0;

	for (int i = 0; i < h->ncl; i++)
		attached += h->cl[i]->hello;
	if (!h->ttl || attached || running_code(h))
		return -1;
	left = h->idle_since + h->ttl - clock_wall();
	if (left > 0)
		return (int)(left * 1000) + 1;
	if (h->ttl_checkpoint && ttl_checkpoint(h) < 0) {
		h->idle_since = clock_wall();	/* kept: tried again after another ttl */
		return (int)(h->ttl * 1000) + 1;
	}
	msg_error("session '%s' idle for %.0f s with nobody attached: ended", h->name, h->ttl);
	h->stop = 1;
	return 0;
}

int named_host_dir_gone(struct host *h)
{
	struct stat st;

	if (clock_now() - h->dir_looked < DIR_LOOK)
		return 0;
	h->dir_looked = clock_now();
	if (lstat(h->dir, &st) == 0 && S_ISDIR(st.st_mode) && st.st_dev == h->dir_st.st_dev &&
	    st.st_ino == h->dir_st.st_ino)
		return 0;
	msg_error("session '%s': its directory %s is gone: ended", h->name, h->dir);
	h->dir_gone = 1;
	return 1;
}
