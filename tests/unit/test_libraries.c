/* Library requirements: what --libraries accepts, how a set is named, what a policy refuses. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fsutil.h"
#include "libraries.h"
#include "libraries_int.h"
#include "policy.h"
#include "sha256.h"
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

/* Write `text` to dir/name. */
static void put(const char *dir, const char *name, const char *text)
{
	char *path = xasprintf("%s/%s", dir, name);
	FILE *f = fopen(path, "w");

	if (f) {
		fputs(text, f);
		fclose(f);
	}
	free(path);
}

static char *sha_of(const char *text)
{
	struct sha256 c;
	char hex[65];

	sha256_init(&c);
	sha256_update(&c, text, strlen(text));
	sha256_hex(&c, hex);
	return xstrdup(hex);
}

/* The wheelhouse's key: the digests of its wheels, read without following a link (issue 24). */
static void test_wheels(void)
{
	char tmpl[] = "/tmp/cellbox-wheels-XXXXXX", d1[65], d2[65], d3[65];
	char *dir = mkdtemp(tmpl), *stage, *want, *a, *b, *path;
	struct strbuf err = STRBUF_INIT, list = STRBUF_INIT, got = STRBUF_INIT;

	CHECK(dir != NULL);
	if (!dir)
		return;
	a = sha_of("abc");
	CHECK_STR(a, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
	free(a);
	put(dir, "a-1.0-py3-none-any.whl", "wheel a");
	put(dir, "b-1.0-py3-none-any.whl", "wheel b");
	put(dir, "c-1.0.tar.gz", "an sdist: not offered");
	put(dir, ".hidden.whl", "not a plain name");
	CHECK(libraries_wheels(dir, NULL, d1, &err) == 0);
	a = sha_of("wheel a");
	b = sha_of("wheel b");
	strbuf_addf(&list, "%s  a-1.0-py3-none-any.whl\n%s  b-1.0-py3-none-any.whl\n", a, b);
	want = sha_of(list.buf);
	CHECK_STR(d1, want);
	/* The same name and version with other bytes is another key. */
	put(dir, "b-1.0-py3-none-any.whl", "wheel b, with a .pth");
	CHECK(libraries_wheels(dir, NULL, d2, &err) == 0 && strcmp(d1, d2));
	/* The copy holds the bytes hashed, and only the wheels. */
	stage = libraries_wheels_stage("/tmp", dir, d2, &err);
	CHECK(stage != NULL);
	if (stage) {
		CHECK(libraries_wheels(stage, NULL, d3, &err) == 0);
		CHECK_STR(d3, d2);
		path = xasprintf("%s/c-1.0.tar.gz", stage);
		CHECK(access(path, F_OK) < 0);
		free(path);
		path = xasprintf("%s/b-1.0-py3-none-any.whl", stage);
		CHECK(strbuf_read_file(&got, path, 1024) == 0);
		CHECK_STR(got.buf, "wheel b, with a .pth");
		free(path);
		fsutil_remove_tree(stage);
		free(stage);
	}
	/* A stale digest is refused: the wheelhouse changed since it was read. */
	CHECK(libraries_wheels_stage("/tmp", dir, d1, &err) == NULL &&
	      strstr(err.buf, "changed while it was read"));
	strbuf_reset(&err);
	/* A link is not followed, a FIFO does not block: both are refused. */
	path = xasprintf("%s/z-1.0-py3-none-any.whl", dir);
	CHECK(symlink("/etc/passwd", path) == 0);
	CHECK(libraries_wheels(dir, NULL, d3, &err) < 0 &&
	      strstr(err.buf, "the wheel 'z-1.0-py3-none-any.whl' is not a regular file"));
	strbuf_reset(&err);
	unlink(path);
	CHECK(mkfifo(path, 0600) == 0);
	CHECK(libraries_wheels(dir, NULL, d3, &err) < 0 && strstr(err.buf, "not a regular file"));
	free(path);
	fsutil_remove_tree(dir);
	free(a);
	free(b);
	free(want);
	strbuf_release(&err);
	strbuf_release(&list);
	strbuf_release(&got);
}

static const struct tap_test tests[] = {
	{ "requirements", test_requirements },
	{ "key", test_key },
	{ "policy", test_policy },
	{ "wheels", test_wheels },
};

int main(int argc, char **argv)
{
	return tap_main(argc, argv, tests, ARRAY_SIZE(tests));
}
