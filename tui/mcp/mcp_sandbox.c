/* cellbox mcp: what a session's sandbox gets beyond its limits: the policy, the libraries. */
#include "mcp.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "setup.h"

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
	char *set = library_set(srv, asked), *image = NULL, *python = NULL;
	int rc;

	if (!set)
		return 0;
	/* The protocol has stdout: the install's progress goes to stderr. */
	rc = setup_libraries_prepare(set, srv->cfg->wheelhouse, srv->cfg->libraries_shared, so,
				     stderr, "cellbox mcp", &image, &python, err);
	if (rc == 0) {
		free(ms->image);
		free(ms->python);
		ms->image = image;
		ms->python = python;
	}
	free(set);
	return rc;
}

int mcp_libraries_verify(struct mcp_server *srv, struct session *s, struct strbuf *err)
{
	return setup_libraries_verify(s, srv->cfg->libraries, err);
}
