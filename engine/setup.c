/* Setting a session up as every front end does: policy, libraries, pool, files in and out. */
#include "setup.h"
#include "files.h"
#include "cellrun.h"
#include "lastclose.h"
#include "libraries.h"
#include "pool_lease.h"

#include <stdlib.h>
#include <string.h>

static struct policy *loaded;	/* the policy of the settings, shared by every session */
static char *loaded_name;
static char *made_image, *made_python;	/* what sessions of the settings borrow */

const struct policy *setup_policy(const char *name, struct strbuf *err)
{
	if (policy_is_none(name))
		return NULL;
	if (loaded && !strcmp(loaded_name, name))
		return loaded;
	policy_free(loaded);
	free(loaded_name);
	loaded_name = NULL;
	loaded = policy_load(name, err);
	if (loaded)
		loaded_name = xstrdup(name);
	return loaded;
}

int setup_libraries_check(const char *set, const struct policy *p, struct strbuf *err)
{
	struct libraries l;
	int rc = libraries_parse(&l, set, err);

	if (rc == 0) {
		rc = libraries_check_policy(&l, p, err);
		libraries_release(&l);
	}
	return rc;
}

int setup_libraries_prepare(const char *set, const char *wheelhouse, int shared,
			    struct session_opts *so, FILE *progress, const char *who,
			    char **image, char **python, struct strbuf *err)
{
	const struct kernel_def *k = so->kernel ? kernel_find(so->kernel) : kernel_default();
	struct libraries l;
	struct libraries_env e = { 0 };
	char *runtime;
	int installed = 0, rc;
	double t0 = clock_now();

	*image = *python = NULL;
	if (!set || !*set)
		return 0;
	if (k && !k->pip) {
		strbuf_addf(err, "libraries: '%s' are pip packages: the %s kernel cannot take "
			    "them (put them in its image)", set, k->name);
		return -1;
	}
	if (libraries_parse(&l, set, err) < 0)
		return -1;
	runtime = session_runtime_dir(so->runtime_dir);
	e.backend = so->backend;
	e.python = so->python;
	e.sandbox = &so->sandbox;
	e.wheelhouse = wheelhouse;
	e.shared = shared;
	e.lock_dir = runtime;
	e.progress = progress;
	rc = libraries_check_policy(&l, so->policy, err);
	if (rc == 0)
		rc = libraries_prepare(&l, &e, image, python, &installed, err);
	if (rc == 0 && installed && progress)
		fprintf(progress, "%s: installed %s in %.1f s\n", who, l.shown,
			clock_now() - t0);
	if (*image)
		so->sandbox.image = *image;
	if (*python)
		so->python = *python;
	libraries_release(&l);
	free(runtime);
	return rc;
}

int setup_libraries_verify(struct session *s, const char *set, struct strbuf *err)
{
	struct strbuf code = STRBUF_INIT;
	struct libraries l;
	int rc;

	if (!set || !*set || !session_pooled(s))
		return 0;
	if (libraries_parse(&l, set, err) < 0)
		return -1;
	/* The venv names its set: a pool started with other libraries (or none) is refused. */
	libraries_check_code(&l, &code);
	rc = cellrun_silent(s, code.buf, err);
	libraries_release(&l);
	strbuf_release(&code);
	return rc;
}

int setup_settings_libraries(const struct cellbox_config *cfg,
				      struct session_opts *so, struct strbuf *err)
{
	char *image, *python;

	if (setup_libraries_prepare(cfg->libraries, cfg->wheelhouse, cfg->libraries_shared, so,
				    stderr, "cellbox", &image, &python, err) < 0)
		return -1;
	if (image) {
		free(made_image);
		made_image = image;
	}
	if (python) {
		free(made_python);
		made_python = python;
	}
	return 0;
}

/* Copy the --copy-in files into the session's sandbox; -1 with `err` at the first failure. */
static int copy_in(struct session *s, const struct cellbox_config *cfg, struct strbuf *err)
{
	int rc = 0;

	for (size_t i = 0; rc == 0 && i < cfg->copy_in.n; i++) {
		char *src, *dst;

		files_parse_spec(cfg->copy_in.items[i], &src, &dst);
		rc = files_copy_in(s, src, dst, err);
		free(src);
		free(dst);
	}
	return rc;
}

struct session *setup_open(const struct cellbox_config *cfg, session_state_fn on_state,
			   void *data, const sigset_t *mask, struct strbuf *note,
			   struct strbuf *err)
{
	struct session_opts so = cfg->session;
	struct strbuf why = STRBUF_INIT;
	struct session *s = NULL;
	char *runtime = NULL, *pool = NULL;

	so.pool_dir = NULL;
	so.on_state = on_state;
	so.state_data = data;
	so.policy = setup_policy(cfg->policy, &why);	/* loaded (and checked) with the settings */
	strbuf_release(&why);
	if (setup_settings_libraries(cfg, &so, err) < 0)
		return NULL;
	if (cfg->pool) {
		runtime = session_runtime_dir(so.runtime_dir);
		pool = pool_dir_path(runtime, cfg->pool_name);
		so.pool_dir = pool;
	}
	s = session_open(&so, &why);
	if (!s) {
		strbuf_addf(err, "cannot start the kernel: %s", why.buf);
		goto out;
	}
	if (setup_libraries_verify(s, cfg->libraries, &why) < 0) {
		strbuf_addf(err, "--libraries %s: %s; start the pool with 'cellbox pool serve "
			    "--libraries %s'", cfg->libraries, why.buf, cfg->libraries);
		goto fail;
	}
	if (mask)
		session_set_sigmask(s, mask);
	if (session_pool_note(s) && note)
		strbuf_addstr(note, session_pool_note(s));
	if (copy_in(s, cfg, err) < 0)
		goto fail;
	goto out;
fail:
	session_close(s);
	s = NULL;
out:
	strbuf_release(&why);
	free(runtime);
	free(pool);
	return s;
}

int setup_close(struct session *s, const struct cellbox_config *cfg,
		const volatile sig_atomic_t *stop, struct strbuf *err)
{
	struct strbuf why = STRBUF_INIT;
	int rc = 0;

	if (!s)
		return 0;
	for (size_t i = 0; !session_named(s) && i < cfg->copy_out.n && session_state(s) != SESSION_DEAD &&
			   !(stop && *stop); i++) {
		char *src, *dst;

		files_parse_spec(cfg->copy_out.items[i], &src, &dst);
		strbuf_reset(&why);
		if (files_copy_out(s, src, dst, &why) < 0) {
			strbuf_addf(err, "%s%s", rc ? "\n" : "", why.buf);
			rc = -1;
		}
		free(src);
		free(dst);
	}
	lastclose_exiting();	/* every caller exits next: its inotify's last close is not waited for */
	session_close(s);
	strbuf_release(&why);
	return rc;
}
