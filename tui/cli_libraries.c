/* The front ends' libraries: checked with the settings, installed (once) before a session. */
#include "cli.h"
#include "libraries.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char *made_image, *made_python;	/* what sessions borrow: the derived image, the venv */

int cli_check_libraries(const struct cellbox_config *cfg)
{
	struct strbuf err = STRBUF_INIT;
	struct libraries l;
	int rc = libraries_parse(&l, cfg->libraries, &err);

	if (rc == 0) {
		rc = libraries_check_policy(&l, cli_policy(cfg, &err), &err);
		libraries_release(&l);
	}
	if (rc < 0)
		cli_error("%s", err.buf);
	strbuf_release(&err);
	return rc;
}

int cli_prepare_libraries(const struct cellbox_config *cfg, struct session_opts *so)
{
	struct strbuf err = STRBUF_INIT;
	struct libraries l;
	struct libraries_env e = { 0 };
	char *image = NULL, *python = NULL, *runtime;
	int installed = 0, rc = -1;
	double t0 = now_monotonic();

	const struct kernel_def *k = so->kernel ? kernel_find(so->kernel) : kernel_default();

	if (!cfg->libraries || !*cfg->libraries)
		return 0;
	if (k && !k->pip) {
		cli_error("libraries: '%s' are pip packages: the %s kernel cannot take them (put "
			  "them in its image)", cfg->libraries, k->name);
		return -1;
	}
	if (libraries_parse(&l, cfg->libraries, &err) < 0) {
		cli_error("%s", err.buf);
		strbuf_release(&err);
		return -1;
	}
	runtime = session_runtime_dir(so->runtime_dir);
	e.backend = so->backend;
	e.python = so->python;
	e.sandbox = &so->sandbox;
	e.wheelhouse = cfg->wheelhouse;
	e.lock_dir = runtime;
	e.progress = stderr;
	if (libraries_check_policy(&l, so->policy, &err) < 0 ||
	    libraries_prepare(&l, &e, &image, &python, &installed, &err) < 0) {
		cli_error("%s", err.buf);
		goto out;
	}
	if (installed)
		fprintf(stderr, "cellbox: installed %s in %.1f s\n", l.shown, now_monotonic() - t0);
	if (image) {
		free(made_image);
		made_image = image;
		so->sandbox.image = made_image;
	}
	if (python) {
		free(made_python);
		made_python = python;
		so->python = made_python;
	}
	rc = 0;
out:
	libraries_release(&l);
	strbuf_release(&err);
	free(runtime);
	return rc;
}

struct marker_check {
	struct strbuf error;
};

/* Keep the error of the check cell. */
static void on_marker_event(struct session *s, const struct session_event *ev, void *data)
{
	struct marker_check *c = data;

	(void)s;
	if (ev->type == SESSION_EV_ERROR)
		strbuf_addstr(&c->error, ev->error.evalue ? ev->error.evalue : "the check failed");
}

int cli_verify_libraries(const struct cellbox_config *cfg, struct session *s)
{
	struct strbuf code = STRBUF_INIT, err = STRBUF_INIT;
	struct marker_check c = { STRBUF_INIT };
	struct libraries l;
	unsigned long id;
	int rc = -1;

	if (!cfg->libraries || !*cfg->libraries || !session_pooled(s))
		return 0;
	if (libraries_parse(&l, cfg->libraries, &err) < 0)
		goto out;
	/* The venv names its set: a pool started with other libraries (or none) is refused. */
	libraries_check_code(&l, &code);
	id = session_execute(s, code.buf, SESSION_EXEC_SILENT | SESSION_EXEC_TRUSTED, 0,
			     on_marker_event, &c, &err);
	if (!id) {
		cli_error("%s", err.buf);
		goto out_l;
	}
	while (session_wait(s, id) < 0)
		;
	if (c.error.len) {
		cli_error("--libraries %s: %s; start the pool with 'cellbox pool serve --libraries %s'",
			  cfg->libraries, c.error.buf, cfg->libraries);
		goto out_l;
	}
	rc = 0;
out_l:
	libraries_release(&l);
out:
	strbuf_release(&code);
	strbuf_release(&err);
	strbuf_release(&c.error);
	return rc;
}
