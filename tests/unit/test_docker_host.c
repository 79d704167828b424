/*
 * Unit tests of which engine the docker client talks to (engine/docker_host.c): host strings
 * (the forms, the defaults, what is refused: options smuggled as host names, passwords,
 * paths), the TLS environment as the docker CLI reads it, docker contexts from a config
 * directory (the current one, $DOCKER_CONTEXT, their TLS files), and the caps on the user's
 * JSON files (size, types, a FIFO that would block).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "docker_host.h"
#include "sha256.h"
#include "util.h"
#include "../tap.h"

static const char *env_names[] = { "DOCKER_HOST", "DOCKER_TLS_VERIFY", "DOCKER_TLS",
				   "DOCKER_CERT_PATH", "DOCKER_CONTEXT", "DOCKER_CONFIG" };

/* A scratch directory as the config directory, the environment of ours cleared. */
static char *fresh(void)
{
	char *dir = xasprintf("%s/cellbox-dhost-XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") :
			      "/tmp");

	if (!mkdtemp(dir))
		exit(1);
	for (size_t i = 0; i < ARRAY_SIZE(env_names); i++)
		unsetenv(env_names[i]);
	setenv("DOCKER_CONFIG", dir, 1);
	return dir;
}

static void put_file(const char *path, const char *text)
{
	struct strbuf err = STRBUF_INIT;

	fsutil_write_atomic(path, text, strlen(text), 0600, &err);
	strbuf_release(&err);
}

/* dir/contexts/<kind>/<sha256(name)>[/docker], made. */
static char *ctx_dir(const char *dir, const char *kind, const char *name)
{
	struct sha256 c;
	char hex[65];
	char *p;

	sha256_init(&c);
	sha256_update(&c, name, strlen(name));
	sha256_hex(&c, hex);
	p = xasprintf("%s/contexts/%s/%s%s", dir, kind, hex, strcmp(kind, "tls") ? "" : "/docker");
	fsutil_mkdir_p(p);
	return p;
}

static void make_context(const char *dir, const char *name, const char *meta_json)
{
	char *m = ctx_dir(dir, "meta", name), *f = xasprintf("%s/meta.json", m);

	put_file(f, meta_json);
	free(f);
	free(m);
}

static void rm_tree(char *dir)
{
	char *cmd = xasprintf("rm -rf '%s'", dir);

	if (system(cmd) != 0)
		printf("# could not remove %s\n", dir);
	free(cmd);
	free(dir);
}

/* Parse `host`: 0 or -1, the endpoint in *ep, the error in err. */
static int parse(const char *host, struct docker_endpoint *ep, struct strbuf *err)
{
	strbuf_reset(err);
	return docker_host_parse(host, ep, err);
}

static void test_forms(void)
{
	struct docker_endpoint ep;
	struct strbuf err = STRBUF_INIT;

	CHECK(parse("unix:///run/x.sock", &ep, &err) == 0 && ep.kind == DOCKER_UNIX);
	CHECK_STR(ep.path, "/run/x.sock");
	CHECK(parse("unix://", &ep, &err) == 0);
	CHECK_STR(ep.path, "/var/run/docker.sock");
	CHECK(parse("tcp://10.0.0.2:2376", &ep, &err) == 0 && ep.kind == DOCKER_TCP);
	CHECK_STR(ep.name, "10.0.0.2");
	CHECK_STR(ep.port, "2376");
	CHECK(parse("tcp://[::1]:99/", &ep, &err) == 0);
	CHECK_STR(ep.name, "::1");
	CHECK_STR(ep.port, "99");
	CHECK(parse("tcp://engine.example", &ep, &err) == 0);
	CHECK_STR(ep.port, "");		/* the resolver picks 2375 or 2376 */
	CHECK(parse("ssh://me@box:2222/run/podman.sock", &ep, &err) == 0 && ep.kind == DOCKER_SSH);
	CHECK_STR(ep.user, "me");
	CHECK_STR(ep.name, "box");
	CHECK_STR(ep.port, "2222");
	CHECK_STR(ep.path, "/run/podman.sock");
	CHECK(parse("ssh://box", &ep, &err) == 0);
	CHECK_STR(ep.user, "");
	CHECK_STR(ep.port, "");
	strbuf_release(&err);
}

static void test_refused(void)
{
	static const char *bad[] = {
		"fd://3", "npipe:////./pipe/docker_engine", "http://x", "box:2375", "",
		"unix://relative.sock", "tcp://host:0", "tcp://host:65536", "tcp://host:12x",
		"tcp://::1:2375", "tcp://host:2375/path", "tcp://user@host", "tcp://-oops",
		"ssh://-oProxyCommand=touch%20x", "ssh://user:password@box", "ssh://-l@box",
		"ssh://box?x=1", "ssh://box#frag", "ssh://box/run/$(id)", "ssh://bo x",
		"ssh://box;id", "ssh://", "tcp://ho$t:1",
	};
	struct docker_endpoint ep;
	struct strbuf err = STRBUF_INIT;

	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		int rc = parse(bad[i], &ep, &err);
		if (rc == 0)
			printf("# accepted '%s'\n", bad[i]);
		CHECK(rc < 0 && err.len > 0);
	}
	parse("fd://3", &ep, &err);
	CHECK(strstr(err.buf, "unsupported docker host 'fd://3'") != NULL);
	parse("ssh://user:pw@box", &ep, &err);
	CHECK(strstr(err.buf, "password") != NULL);
	strbuf_release(&err);
}

static void test_tls_env(void)
{
	char *dir = fresh(), *certs = xasprintf("%s/certs", dir), *f;
	struct docker_endpoint ep;
	struct strbuf err = STRBUF_INIT;

	/* No TLS asked: plain HTTP on 2375. */
	CHECK(docker_host_resolve("tcp://h", &ep, &err) == 0 && !ep.tls);
	CHECK_STR(ep.port, "2375");
	CHECK_STR(ep.origin, "--docker-host");
	/* DOCKER_TLS_VERIFY without ca.pem: an error naming the file. */
	setenv("DOCKER_TLS_VERIFY", "1", 1);
	setenv("DOCKER_CERT_PATH", certs, 1);
	strbuf_reset(&err);
	CHECK(docker_host_resolve("tcp://h", &ep, &err) < 0);
	CHECK(strstr(err.buf, "ca.pem") && strstr(err.buf, certs));
	fsutil_mkdir_p(certs);
	f = xasprintf("%s/ca.pem", certs);
	put_file(f, "x");
	free(f);
	strbuf_reset(&err);
	CHECK(docker_host_resolve("tcp://h", &ep, &err) == 0 && ep.tls && ep.verify);
	CHECK_STR(ep.port, "2376");
	CHECK(!*ep.cert && !*ep.key);
	/* cert.pem without key.pem: refused, as half a client certificate. */
	f = xasprintf("%s/cert.pem", certs);
	put_file(f, "x");
	free(f);
	strbuf_reset(&err);
	CHECK(docker_host_resolve("tcp://h", &ep, &err) < 0 && strstr(err.buf, "key.pem"));
	f = xasprintf("%s/key.pem", certs);
	put_file(f, "x");
	free(f);
	strbuf_reset(&err);
	CHECK(docker_host_resolve("tcp://h", &ep, &err) == 0 && *ep.cert && *ep.key);
	/* DOCKER_TLS alone: TLS, not verified. No TLS for unix:// and ssh://. */
	unsetenv("DOCKER_TLS_VERIFY");
	setenv("DOCKER_TLS", "1", 1);
	CHECK(docker_host_resolve("tcp://h:1", &ep, &err) == 0 && ep.tls && !ep.verify);
	CHECK(docker_host_resolve("unix:///x", &ep, &err) == 0 && !ep.tls);
	/* Nothing named: DOCKER_HOST, else TLS's default host. */
	CHECK(docker_host_resolve(NULL, &ep, &err) == 0);
	CHECK_STR(ep.host, "tcp://localhost:2376");
	setenv("DOCKER_HOST", "ssh://box", 1);
	CHECK(docker_host_resolve(NULL, &ep, &err) == 0 && ep.kind == DOCKER_SSH && !ep.tls);
	CHECK_STR(ep.origin, "DOCKER_HOST");
	free(certs);
	rm_tree(dir);
	strbuf_release(&err);
}

static void test_context(void)
{
	char *dir = fresh(), *cfg = xasprintf("%s/config.json", dir), *tls, *f;
	struct docker_endpoint ep;
	struct strbuf err = STRBUF_INIT;

	/* No config.json: the default socket. */
	CHECK(docker_host_resolve(NULL, &ep, &err) == 0 && ep.kind == DOCKER_UNIX);
	CHECK_STR(ep.path, "/var/run/docker.sock");
	make_context(dir, "remote-1", "{\"Name\":\"remote-1\",\"Endpoints\":{\"docker\":"
		     "{\"Host\":\"tcp://10.1.2.3:2376\",\"SkipTLSVerify\":false}}}");
	put_file(cfg, "{\"currentContext\":\"remote-1\"}");
	CHECK(docker_host_resolve(NULL, &ep, &err) == 0 && ep.kind == DOCKER_TCP);
	CHECK_STR(ep.host, "tcp://10.1.2.3:2376");
	CHECK(!ep.tls);				/* no TLS files: plain, as the CLI */
	CHECK(strstr(ep.origin, "remote-1") != NULL);
	tls = ctx_dir(dir, "tls", "remote-1");
	f = xasprintf("%s/ca.pem", tls);
	put_file(f, "x");
	free(f);
	CHECK(docker_host_resolve(NULL, &ep, &err) == 0 && ep.tls && ep.verify && *ep.ca);
	CHECK(strstr(ep.ca, tls) == ep.ca);
	/* DOCKER_HOST wins over the context; "default" is no context. */
	setenv("DOCKER_HOST", "unix:///y", 1);
	CHECK(docker_host_resolve(NULL, &ep, &err) == 0 && ep.kind == DOCKER_UNIX);
	unsetenv("DOCKER_HOST");
	/* DOCKER_CONTEXT wins over config.json; a missing one is an error naming it. */
	setenv("DOCKER_CONTEXT", "other", 1);
	strbuf_reset(&err);
	CHECK(docker_host_resolve(NULL, &ep, &err) < 0 &&
	      strstr(err.buf, "docker context 'other' not found"));
	setenv("DOCKER_CONTEXT", "default", 1);
	CHECK(docker_host_resolve(NULL, &ep, &err) == 0 && ep.kind == DOCKER_UNIX);
	/* SkipTLSVerify: TLS, not verified. An ssh context. */
	make_context(dir, "skip", "{\"Endpoints\":{\"docker\":{\"Host\":\"tcp://h\","
		     "\"SkipTLSVerify\":true}}}");
	setenv("DOCKER_CONTEXT", "skip", 1);
	CHECK(docker_host_resolve(NULL, &ep, &err) == 0 && ep.tls && !ep.verify);
	CHECK_STR(ep.port, "2376");
	make_context(dir, "viassh", "{\"Endpoints\":{\"docker\":{\"Host\":\"ssh://u@h\"}}}");
	setenv("DOCKER_CONTEXT", "viassh", 1);
	CHECK(docker_host_resolve(NULL, &ep, &err) == 0 && ep.kind == DOCKER_SSH);
	CHECK_STR(ep.user, "u");
	/* A context's host is checked as any host: no option for ssh. */
	make_context(dir, "evil", "{\"Endpoints\":{\"docker\":{\"Host\":\"ssh://-oProxyCommand=x\"}}}");
	setenv("DOCKER_CONTEXT", "evil", 1);
	strbuf_reset(&err);
	CHECK(docker_host_resolve(NULL, &ep, &err) < 0 && strstr(err.buf, "evil"));
	/* Names as the CLI allows them: no path in a name. */
	setenv("DOCKER_CONTEXT", "../x", 1);
	CHECK(docker_host_resolve(NULL, &ep, &err) < 0);
	free(tls);
	free(cfg);
	rm_tree(dir);
	strbuf_release(&err);
}

/* The user's JSON files: capped, typed, never blocking. */
static void test_caps(void)
{
	char *dir = fresh(), *cfg = xasprintf("%s/config.json", dir), *m, *meta;
	struct docker_endpoint ep;
	struct strbuf err = STRBUF_INIT, big = STRBUF_INIT;
	static const char *wrong[] = {
		"[1,2]", "{\"Endpoints\":[]}", "{\"Endpoints\":{\"docker\":\"tcp://h\"}}",
		"{\"Endpoints\":{\"docker\":{\"Host\":7}}}",
		"{\"Endpoints\":{\"docker\":{\"Host\":\"tcp://h\",\"SkipTLSVerify\":\"yes\"}}}",
		"not json", "",
	};

	setenv("DOCKER_CONTEXT", "c1", 1);
	m = ctx_dir(dir, "meta", "c1");
	meta = xasprintf("%s/meta.json", m);
	for (size_t i = 0; i < ARRAY_SIZE(wrong); i++) {
		put_file(meta, wrong[i]);
		strbuf_reset(&err);
		CHECK(docker_host_resolve(NULL, &ep, &err) < 0 && err.len);
	}
	/* Over the cap: refused by its size, not read. */
	strbuf_addstr(&big, "{\"Endpoints\":{\"docker\":{\"Host\":\"tcp://h\"}},\"x\":\"");
	while (big.len < DOCKER_CONFIG_MAX + 10)
		strbuf_addstr(&big, "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa");
	strbuf_addstr(&big, "\"}");
	put_file(meta, big.buf);
	strbuf_reset(&err);
	CHECK(docker_host_resolve(NULL, &ep, &err) < 0 && strstr(err.buf, "under"));
	/* A FIFO where config.json goes: refused at once, no blocking open or read. */
	unsetenv("DOCKER_CONTEXT");
	CHECK(mkfifo(cfg, 0600) == 0);
	strbuf_reset(&err);
	alarm(10);
	CHECK(docker_host_resolve(NULL, &ep, &err) < 0 && strstr(err.buf, "regular file"));
	alarm(0);
	/* currentContext of the wrong type: no context. */
	unlink(cfg);
	put_file(cfg, "{\"currentContext\":[\"c1\"]}");
	CHECK(docker_host_resolve(NULL, &ep, &err) == 0 && ep.kind == DOCKER_UNIX);
	free(meta);
	free(m);
	free(cfg);
	rm_tree(dir);
	strbuf_release(&err);
	strbuf_release(&big);
}

static const struct tap_test tests[] = {
	{ "forms", test_forms },
	{ "refused", test_refused },
	{ "tls_env", test_tls_env },
	{ "context", test_context },
	{ "caps", test_caps },
};

int main(int argc, char **argv)
{
	return tap_main(argc, argv, tests, ARRAY_SIZE(tests));
}
