/*
 * Unit tests of the egress allow-list (engine/egress_list.c): entries parsed and refused, names
 * and addresses matched with their ports, a list narrowed and not widened, the proxy's
 * request line (CONNECT, http:// URLs, what it refuses), and hosts-file lookups.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>

#include "egress_list.h"
#include "util.h"
#include "../tap.h"

/* Parse `s`, aborting the test on an error. */
static void parse_ok(const char *s, struct egress_list *l)
{
	struct strbuf err = STRBUF_INIT;
	int rc = egress_list_parse(s, l, &err);

	CHECK(rc == 0);
	if (rc)
		tap_note(err.buf);
	strbuf_release(&err);
}

/* The error for `s`, "" when it parses; the caller frees it. */
static char *parse_err(const char *s)
{
	struct egress_list l;
	struct strbuf err = STRBUF_INIT;

	egress_list_parse(s, &l, &err);
	return strbuf_detach(&err, NULL);
}

/* Whether the address literal `a` on `port` is allowed by `l`. */
static int addr_ok(const struct egress_list *l, const char *a, unsigned port)
{
	struct sockaddr_storage ss;
	socklen_t len;

	if (egress_literal(a, port, &ss, &len) < 0)
		return -1;
	return egress_allows_addr(l, (struct sockaddr *)&ss, port);
}

static void test_parse(void)
{
	struct egress_list l;
	char *e;

	parse_ok("allow:PyPI.org.:443,10.203.0.0/16,192.0.2.7:80,[fd00::/8]:8443,[::1],x_y-z", &l);
	CHECK(l.n == 6);
	CHECK_STR(l.rules[0].name, "pypi.org");
	CHECK(l.rules[0].port == 443 && l.rules[0].family == 0);
	CHECK(l.rules[1].family == AF_INET && l.rules[1].prefix == 16 && l.rules[1].port == 0);
	CHECK(l.rules[2].prefix == 32 && l.rules[2].port == 80);
	CHECK(l.rules[3].family == AF_INET6 && l.rules[3].prefix == 8 && l.rules[3].port == 8443);
	CHECK(l.rules[4].family == AF_INET6 && l.rules[4].prefix == 128);
	parse_ok("allow:a,,b,", &l);
	CHECK(l.n == 2);
	/* Host bits are cleared: the rule is its network. */
	parse_ok("allow:10.203.7.9/24", &l);
	CHECK(addr_ok(&l, "10.203.7.200", 1) == 1);
	CHECK(addr_ok(&l, "10.203.8.1", 1) == 0);

	static const char *bad[] = {
		"none", "allow:", "allow:,", "allow:a:0", "allow:a:65536", "allow:a:", "allow:a:8x",
		"allow:a..b", "allow:.a", "allow:-a", "allow:a/b", "allow:10.0.0.0/33",
		"allow:10.0.0.0/", "allow:10.0.0.0/-1", "allow:[fd00::/129]", "allow:[::1", "allow:[::1]x",
		"allow:::1", "allow:a b", "allow:a\n", "allow:\xc3\xa9t\xc3\xa9.org",
	};
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		e = parse_err(bad[i]);
		CHECK(*e);
		if (!*e)
			tap_note(bad[i]);
		free(e);
	}
	e = parse_err("allow:ok.org,bad name");
	CHECK_STR(e, "network allow-list: 'bad name' is not HOST[:PORT], ADDRESS[/BITS][:PORT] or "
		  "[IPV6[/BITS]][:PORT]");
	free(e);
}

static void test_cap(void)
{
	struct strbuf s = STRBUF_INIT;
	struct egress_list l;
	char *e;

	strbuf_addstr(&s, "allow:");
	for (int i = 0; i < EGRESS_MAX_RULES; i++)
		strbuf_addf(&s, "h%d,", i);
	parse_ok(s.buf, &l);
	CHECK(l.n == EGRESS_MAX_RULES);
	strbuf_addstr(&s, "one-more");
	e = parse_err(s.buf);
	CHECK_STR(e, "network allow-list: more than 64 entries");
	free(e);
	strbuf_release(&s);
}

static void test_match(void)
{
	struct egress_list l;

	parse_ok("allow:pypi.org:443,files.example,10.203.0.0/16:8000,[fd00::/8]", &l);
	CHECK(egress_allows_name(&l, "pypi.org", 443));
	CHECK(egress_allows_name(&l, "PYPI.ORG.", 443));
	CHECK(!egress_allows_name(&l, "pypi.org", 80));
	CHECK(!egress_allows_name(&l, "evil.pypi.org", 443));
	CHECK(!egress_allows_name(&l, "pypi.org.evil", 443));
	CHECK(egress_allows_name(&l, "files.example", 1));
	CHECK(!egress_allows_name(&l, "10.203.0.1", 8000));	/* a literal is no name */
	CHECK(addr_ok(&l, "10.203.255.254", 8000) == 1);
	CHECK(addr_ok(&l, "10.203.1.1", 8001) == 0);
	CHECK(addr_ok(&l, "10.204.0.1", 8000) == 0);
	CHECK(addr_ok(&l, "fd12::1", 22) == 1);
	CHECK(addr_ok(&l, "fe80::1", 22) == 0);
	CHECK(addr_ok(&l, "::ffff:10.203.0.1", 8000) == 0);	/* another family */
}

static void test_narrows(void)
{
	struct egress_list given, asked;

	parse_ok("allow:pypi.org:443,files.example,10.203.0.0/16", &given);
	parse_ok("allow:pypi.org:443", &asked);
	CHECK(egress_narrows(&asked, &given));
	parse_ok("allow:files.example:80,10.203.7.0/24:8000,10.203.1.1", &asked);
	CHECK(egress_narrows(&asked, &given));
	CHECK(egress_narrows(&given, &given));
	parse_ok("allow:pypi.org", &asked);		/* any port: wider */
	CHECK(!egress_narrows(&asked, &given));
	parse_ok("allow:10.0.0.0/8", &asked);		/* a wider range */
	CHECK(!egress_narrows(&asked, &given));
	parse_ok("allow:pypi.org:443,other.org", &asked);
	CHECK(!egress_narrows(&asked, &given));
}

/* Parse a request head; -1 with *why set. */
static int req(const char *head, struct egress_request *r, const char **why)
{
	return egress_request_parse(head, strlen(head), r, why);
}

static void test_request(void)
{
	struct egress_request r;
	const char *why = NULL;
	const char *h = "GET http://Example.org:8080/a/b?c=d HTTP/1.1\r\nHost: x\r\n\r\n";

	CHECK(req("CONNECT pypi.org:443 HTTP/1.1\r\n\r\n", &r, &why) == 0);
	CHECK(r.connect && r.port == 443);
	CHECK_STR(r.host, "pypi.org");
	CHECK(req("CONNECT [fd00::1]:8443 HTTP/1.0\n\n", &r, &why) == 0);
	CHECK_STR(r.host, "fd00::1");
	CHECK(r.port == 8443);
	CHECK(req(h, &r, &why) == 0);
	CHECK(!r.connect && r.port == 8080);
	CHECK_STR(r.host, "Example.org");
	CHECK(r.path_len == strlen("/a/b?c=d") && !memcmp(h + r.path_off, "/a/b?c=d", r.path_len));
	CHECK(r.line_len == strlen("GET http://Example.org:8080/a/b?c=d HTTP/1.1\r\n"));
	CHECK(req("POST http://10.0.0.1 HTTP/1.1\r\n\r\n", &r, &why) == 0);
	CHECK(r.port == 80 && r.path_len == 0);

	static const struct { const char *head, *why; } bad[] = {
		{ "CONNECT pypi.org HTTP/1.1\r\n\r\n", "CONNECT needs host:port" },
		{ "CONNECT pypi.org:0 HTTP/1.1\r\n\r\n", "CONNECT needs host:port" },
		{ "CONNECT a:443 HTTP/2.0\r\n\r\n", "not an HTTP request line" },
		{ "CONNECT a:443\r\n\r\n", "not an HTTP request line" },
		{ "get http://a/ HTTP/1.1\r\n\r\n", "not an HTTP request line" },
		{ "GET https://a/ HTTP/1.1\r\n\r\n", "the proxy serves CONNECT and http:// URLs" },
		{ "GET /local HTTP/1.1\r\n\r\n", "the proxy serves CONNECT and http:// URLs" },
		{ "GET http://a@b/ HTTP/1.1\r\n\r\n", "a bad host in the URL" },
		{ "GET http://a%2eb/ HTTP/1.1\r\n\r\n", "a bad host in the URL" },
		{ "GET http:// HTTP/1.1\r\n\r\n", "a bad host in the URL" },
		{ "GET http://a:99999/ HTTP/1.1\r\n\r\n", "a bad host in the URL" },
		{ "no line end", "not an HTTP request line" },
		{ " GET http://a/ HTTP/1.1\r\n\r\n", "not an HTTP request line" },
	};
	/* A NUL in the host (strchr() would find the terminator): found by fuzz_egress. */
	CHECK(egress_request_parse("CONNECT \0a.org:443 HTTP/1.1\r\n\r\n", 31, &r, &why) < 0);
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		int rc = req(bad[i].head, &r, &why);

		CHECK(rc < 0);
		CHECK_STR(why, bad[i].why);
	}
}

static void test_hosts(void)
{
	static const char text[] = "# comment svc.test\n"
				   "not-an-address svc.test\n"
				   "10.203.1.2\tSVC.test   alias # svc2.test\n"
				   "10.203.1.6 svc2.test\r\n"
				   "fd00::5 six.test";
	struct sockaddr_storage ss;
	socklen_t len;
	char buf[64];

	CHECK(egress_hosts_lookup(text, strlen(text), "svc.test", 80, &ss, &len) == 1);
	CHECK(ss.ss_family == AF_INET && len == sizeof(struct sockaddr_in));
	inet_ntop(AF_INET, &((struct sockaddr_in *)&ss)->sin_addr, buf, sizeof(buf));
	CHECK_STR(buf, "10.203.1.2");
	CHECK(ntohs(((struct sockaddr_in *)&ss)->sin_port) == 80);
	CHECK(egress_hosts_lookup(text, strlen(text), "ALIAS.", 1, &ss, &len) == 1);
	CHECK(egress_hosts_lookup(text, strlen(text), "svc2.test", 1, &ss, &len) == 1);
	inet_ntop(AF_INET, &((struct sockaddr_in *)&ss)->sin_addr, buf, sizeof(buf));
	CHECK_STR(buf, "10.203.1.6");
	CHECK(egress_hosts_lookup(text, strlen(text), "six.test", 443, &ss, &len) == 1);
	CHECK(ss.ss_family == AF_INET6);
	CHECK(egress_hosts_lookup(text, strlen(text), "comment", 1, &ss, &len) == 0);
	CHECK(egress_hosts_lookup(text, strlen(text), "nowhere", 1, &ss, &len) == 0);
	/* The text need not end in a NUL: only `len` bytes are read. */
	CHECK(egress_hosts_lookup(text, 10, "svc.test", 1, &ss, &len) == 0);
}

static const struct tap_test tests[] = {
	{ "parse", test_parse },
	{ "cap", test_cap },
	{ "match", test_match },
	{ "narrows", test_narrows },
	{ "request", test_request },
	{ "hosts", test_hosts },
};

int main(int argc, char **argv)
{
	return tap_main(argc, argv, tests, ARRAY_SIZE(tests));
}
