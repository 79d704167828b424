/* Library requirements: what --libraries accepts, how a set is named, what a policy refuses. */
#include <stdlib.h>
#include <string.h>

#include "libraries.h"
#include "policy.h"
#include "util.h"
#include "../tap.h"

/* The key of a parsed list, or the error. */
static char *parse(const char *list)
{
	struct strbuf err = STRBUF_INIT;
	struct libraries l;
	char *out;

	if (libraries_parse(&l, list, &err) < 0)
		return strbuf_detach(&err, NULL);
	out = xstrdup(l.key);
	libraries_release(&l);
	strbuf_release(&err);
	return out;
}

static void test_requirements(void)
{
	static const char *const good[] = {
		"numpy", "pandas>=2", "requests[security,socks]==2.31.0", "Flask_Login~=0.6",
		"a.b-c", "x===1.0+local", "numpy!=1.*", "z<3",
	};
	static const char *const bad[] = {
		"numpy; rm -rf /", "pandas @ https://x/p.whl", "./pkg", "/tmp/w.whl", "-e .",
		"git+https://x/y.git", "numpy>=", "numpy>=a", "na me", "numpy; python_version<'3'",
		"_x", "x-", "x[", "x[]", "x>=1;", "$(id)", "`id`", "x >=1",
	};

	for (size_t i = 0; i < ARRAY_SIZE(good); i++) {
		char *k = parse(good[i]);
		CHECK(!strstr(k, "not a package requirement"));
		free(k);
	}
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		struct strbuf err = STRBUF_INIT;
		struct libraries l;
		int rc = libraries_parse(&l, bad[i], &err);
		CHECK(rc < 0 && strstr(err.buf, "is not a package requirement"));
		if (rc == 0)
			tap_note(bad[i]);
		strbuf_release(&err);
	}
}

/* Specifiers after a comma belong to the requirement before; the key is normalised, sorted. */
static void test_key(void)
{
	char *k = parse(" Pandas>=2,<3 , numpy,Flask_Login ,");
	struct strbuf err = STRBUF_INIT;
	struct libraries l;

	CHECK_STR(k, "flask-login,numpy,pandas>=2,<3");
	free(k);
	CHECK(libraries_parse(&l, "b,a", &err) == 0 && l.n == 2 && !strcmp(l.names[0], "b") &&
	      !strcmp(l.shown, "b, a") && !strcmp(l.key, "a,b"));
	libraries_release(&l);
	CHECK(libraries_parse(&l, "", &err) == 0 && l.n == 0 && !strcmp(l.key, ""));
	libraries_release(&l);
	strbuf_release(&err);
}

/* A library that is a module the policy blocks is refused, as llm-sandbox does. */
static void test_policy(void)
{
	struct strbuf err = STRBUF_INIT;
	struct policy *p = policy_parse("threshold = MEDIUM\nmodule requests MEDIUM HTTP\n"
					"module six LOW Low\n", "t", &err);
	struct libraries l;

	CHECK(p != NULL);
	if (!p)
		return;
	p->name = xstrdup("t");
	CHECK(libraries_parse(&l, "numpy,Requests>=2", &err) == 0);
	CHECK(libraries_check_policy(&l, p, &err) < 0 &&
	      strstr(err.buf, "'Requests>=2' is the module requests, which the policy 't' restricts"));
	libraries_release(&l);
	strbuf_reset(&err);
	CHECK(libraries_parse(&l, "six", &err) == 0);
	CHECK(libraries_check_policy(&l, p, &err) == 0);	/* LOW: below the threshold */
	CHECK(libraries_check_policy(&l, NULL, &err) == 0);
	libraries_release(&l);
	policy_free(p);
	strbuf_release(&err);
}

static const struct tap_test tests[] = {
	{ "requirements", test_requirements },
	{ "key", test_key },
	{ "policy", test_policy },
};

int main(int argc, char **argv)
{
	return tap_main(argc, argv, tests, ARRAY_SIZE(tests));
}
