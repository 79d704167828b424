/* cellbox mcp: what a session's sandbox gets beyond its limits: the policy, the libraries. */
#include "mcp.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "libraries.h"

/* A policy a client named, loaded once and kept until the server ends (sessions borrow it). */
struct mcp_policy {
	struct mcp_policy *next;
	struct policy *p;
};

int mcp_policy_for(struct mcp_server *srv, const char *asked, const struct policy **out,
		   struct strbuf *err)
{
	size_t n = asked ? strlen(asked) : 0;
	struct mcp_policy *mp;
	struct policy *p;

	*out = srv->policy;
	if (!asked)
		return 0;
	/*
	 * A client names a policy; files are the operator's (--policy FILE, or NAME.policy in
	 * the policies directories): a path would have the server read (and quote in its
	 * errors, or block on) any file the client likes.
	 */
	if (strchr(asked, '/') || (n > 7 && !strcmp(asked + n - 7, ".policy"))) {
		strbuf_addf(err, "policy '%.100s': a client names a policy (the presets, or a "
			    "NAME.policy the operator put in a policies directory); a file is "
			    "the server's --policy", asked);
		return -1;
	}
	if (srv->policy) {
		if (!strcmp(asked, srv->policy->name))
			return 0;
		strbuf_addf(err, "policy '%.100s' is not allowed: this server checks every cell "
			    "against its policy '%s' (its policy setting), and a client may not "
			    "choose another", asked, srv->policy->name);
		return -1;
	}
	if (policy_is_none(asked)) {
		*out = NULL;
		return 0;
	}
	for (mp = srv->policies; mp; mp = mp->next)
		if (!strcmp(mp->p->name, asked)) {
			*out = mp->p;
			return 0;
		}
	p = policy_load(asked, err);
	if (!p)
		return -1;
	mp = xcalloc(1, sizeof(*mp));
	mp->p = p;
	mp->next = srv->policies;
	srv->policies = mp;
	*out = p;
	return 0;
}

void mcp_policies_release(struct mcp_server *srv)
{
	while (srv->policies) {
		struct mcp_policy *mp = srv->policies;

		srv->policies = mp->next;
		policy_free(mp->p);
		free(mp);
	}
}

/* The set a session gets: the server's libraries setting, then what the call asked for. */
static char *library_set(const struct mcp_server *srv, const char *asked)
{
	const char *own = srv->cfg->libraries;

	if (own && *own && asked && *asked)
		return xasprintf("%s,%s", own, asked);
	if (own && *own)
		return xstrdup(own);
	return asked && *asked ? xstrdup(asked) : NULL;
}

int mcp_libraries_prepare(struct mcp_server *srv, struct mcp_session *ms,
			  struct session_opts *so, const char *asked, struct strbuf *err)
{
	char *set = library_set(srv, asked), *image = NULL, *python = NULL, *runtime = NULL;
	struct libraries l;
	struct libraries_env e = { 0 };
	int installed = 0, rc = -1;
	double t0 = now_monotonic();

	if (!set)
		return 0;
	if (libraries_parse(&l, set, err) < 0) {
		free(set);
		return -1;
	}
	runtime = session_runtime_dir(so->runtime_dir);
	e.backend = so->backend;
	e.python = so->python;
	e.sandbox = &so->sandbox;
	e.wheelhouse = srv->cfg->wheelhouse;
	e.lock_dir = runtime;
	e.progress = stderr;	/* the protocol has stdout */
	if (libraries_check_policy(&l, so->policy, err) < 0 ||
	    libraries_prepare(&l, &e, &image, &python, &installed, err) < 0)
		goto out;
	if (installed)
		fprintf(stderr, "cellbox mcp: installed %s in %.1f s\n", l.shown,
			now_monotonic() - t0);
	free(ms->image);
	free(ms->python);
	ms->image = image;
	ms->python = python;
	if (image)
		so->sandbox.image = image;
	if (python)
		so->python = python;
	rc = 0;
out:
	libraries_release(&l);
	free(runtime);
	free(set);
	return rc;
}

/* Keep the error of the check cell. */
static void on_check_event(struct session *s, const struct session_event *ev, void *data)
{
	struct strbuf *error = data;

	(void)s;
	if (ev->type == SESSION_EV_ERROR)
		strbuf_addstr(error, ev->error.evalue ? ev->error.evalue : "the check failed");
}

int mcp_libraries_verify(struct mcp_server *srv, struct session *s, struct strbuf *err)
{
	const char *own = srv->cfg->libraries;
	struct strbuf code = STRBUF_INIT, error = STRBUF_INIT;
	struct libraries l;
	unsigned long id;
	int rc = -1;

	if (!own || !*own || !session_pooled(s))
		return 0;
	if (libraries_parse(&l, own, err) < 0)
		goto out;
	libraries_check_code(&l, &code);
	id = session_execute(s, code.buf, SESSION_EXEC_SILENT | SESSION_EXEC_TRUSTED, 0,
			     on_check_event, &error, err);
	if (id) {
		while (session_wait(s, id) < 0)
			;
		if (error.len)
			strbuf_addstr(err, error.buf);
		else
			rc = 0;
	}
	libraries_release(&l);
out:
	strbuf_release(&code);
	strbuf_release(&error);
	return rc;
}
