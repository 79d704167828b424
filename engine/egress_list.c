/*
 * The allow-list of a sandbox's egress and the proxy's request line (egress_list.h).
 */
#include "egress_list.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>

/* Whether a network setting is an allow-list. */
int egress_is_list(const char *network)
{
	return network && !strncmp(network, EGRESS_PREFIX, strlen(EGRESS_PREFIX));
}

/* Parse a decimal port 1..65535 of `len` bytes; 0 when it is not one. */
static unsigned parse_port(const char *s, size_t len)
{
	unsigned v = 0;

	if (len == 0 || len > 5)
		return 0;
	for (size_t i = 0; i < len; i++) {
		if (!isdigit((unsigned char)s[i]))
			return 0;
		v = v * 10 + (unsigned)(s[i] - '0');
	}
	return v <= 65535 ? v : 0;
}

/* Whether `s` is a host name we accept: [A-Za-z0-9_.-], not empty, no empty label. */
static int valid_name(const char *s, size_t len)
{
	if (len == 0 || len > EGRESS_MAX_NAME || s[0] == '.' || s[0] == '-')
		return 0;
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];

		if (!isalnum(c) && c != '-' && c != '_' && c != '.')
			return 0;
		if (c == '.' && i + 1 < len && s[i + 1] == '.')
			return 0;
	}
	return 1;
}

/* Copy a name lower case without its trailing dot. */
static void copy_name(char *dst, const char *s, size_t len)
{
	if (len > 1 && s[len - 1] == '.')
		len--;
	for (size_t i = 0; i < len; i++)
		dst[i] = (char)tolower((unsigned char)s[i]);
	dst[len] = '\0';
}

/* Parse an address literal (no brackets) of `len` bytes, with /prefix allowed when `cidr`. */
static int parse_addr(const char *s, size_t len, int cidr, struct egress_rule *r)
{
	char buf[64];
	const char *slash;
	int max;

	if (len == 0 || len >= sizeof(buf))
		return -1;
	memcpy(buf, s, len);
	buf[len] = '\0';
	slash = strchr(buf, '/');
	if (slash && !cidr)
		return -1;
	if (slash)
		buf[slash - buf] = '\0';
	if (inet_pton(AF_INET, buf, r->addr) == 1)
		r->family = AF_INET, max = 32;
	else if (inet_pton(AF_INET6, buf, r->addr) == 1)
		r->family = AF_INET6, max = 128;
	else
		return -1;
	r->prefix = max;
	if (slash) {
		const char *p = slash + 1;
		char *end;
		long v;

		if (!isdigit((unsigned char)*p))
			return -1;
		v = strtol(p, &end, 10);
		if (*end || v < 0 || v > max || end - p > 3)
			return -1;
		r->prefix = (int)v;
	}
	/* Clear the host bits: the rule is its network. */
	for (int bit = r->prefix; bit < max; bit++)
		r->addr[bit / 8] &= (unsigned char)~(0x80u >> (bit % 8));
	return 0;
}

/* Parse one entry of `len` bytes into `r`; -1 when it is not one. */
static int parse_entry(const char *s, size_t len, struct egress_rule *r)
{
	const char *host = s, *colon;
	size_t hlen = len;

	memset(r, 0, sizeof(*r));
	if (len && s[0] == '[') {
		const char *close = memchr(s, ']', len);

		if (!close)
			return -1;
		host = s + 1;
		hlen = (size_t)(close - host);
		if ((size_t)(close + 1 - s) < len) {
			if (close[1] != ':' ||
			    !(r->port = parse_port(close + 2, len - (size_t)(close + 2 - s))))
				return -1;
		}
		return parse_addr(host, hlen, 1, r);
	}
	colon = memchr(s, ':', len);
	if (colon) {
		hlen = (size_t)(colon - s);
		if (!(r->port = parse_port(colon + 1, len - hlen - 1)))
			return -1;
	}
	if (parse_addr(host, hlen, 1, r) == 0)
		return 0;
	r->family = 0;
	if (!valid_name(host, hlen) || memchr(host, '/', hlen))
		return -1;
	copy_name(r->name, host, hlen);
	return 0;
}

/* Parse "allow:ENTRY,..." into `l`. */
int egress_list_parse(const char *network, struct egress_list *l, struct strbuf *err)
{
	const char *p;

	l->n = 0;
	if (!egress_is_list(network)) {
		strbuf_addf(err, "network '%.60s' is not an allow-list (allow:HOST[:PORT],...)",
			    network ? network : "");
		return -1;
	}
	p = network + strlen(EGRESS_PREFIX);
	while (*p) {
		size_t len = strcspn(p, ",");

		if (len) {
			if (l->n == EGRESS_MAX_RULES) {
				strbuf_addf(err, "network allow-list: more than %d entries",
					    EGRESS_MAX_RULES);
				return -1;
			}
			if (parse_entry(p, len, &l->rules[l->n]) < 0) {
				strbuf_addf(err, "network allow-list: '%.*s' is not HOST[:PORT], "
					    "ADDRESS[/BITS][:PORT] or [IPV6[/BITS]][:PORT]",
					    (int)(len > 80 ? 80 : len), p);
				return -1;
			}
			l->n++;
		}
		p += len;
		if (*p == ',')
			p++;
	}
	if (!l->n) {
		strbuf_addstr(err, "network allow-list: no entry (allow:HOST[:PORT],...); "
			      "say none for no network");
		return -1;
	}
	return 0;
}

/* Whether the port rule `rule` lets `port` through. */
static int port_ok(unsigned rule, unsigned port)
{
	return rule == 0 || rule == port;
}

/* 1 when the name is listed for the port. */
int egress_allows_name(const struct egress_list *l, const char *name, unsigned port)
{
	char want[EGRESS_MAX_NAME + 1];
	size_t len = strlen(name);

	if (!valid_name(name, len))
		return 0;
	copy_name(want, name, len);
	for (size_t i = 0; i < l->n; i++)
		if (!l->rules[i].family && !strcmp(l->rules[i].name, want) &&
		    port_ok(l->rules[i].port, port))
			return 1;
	return 0;
}

/* Whether the first `prefix` bits of a and b agree. */
static int same_prefix(const unsigned char *a, const unsigned char *b, int prefix)
{
	int bytes = prefix / 8, rest = prefix % 8;

	if (memcmp(a, b, (size_t)bytes))
		return 0;
	if (!rest)
		return 1;
	return ((a[bytes] ^ b[bytes]) & (0xff00u >> rest)) == 0;
}

/* 1 when the address is in a listed range for the port. */
int egress_allows_addr(const struct egress_list *l, const struct sockaddr *sa, unsigned port)
{
	unsigned char addr[16];
	int family = sa->sa_family;

	if (family == AF_INET)
		memcpy(addr, &((const struct sockaddr_in *)sa)->sin_addr, 4);
	else if (family == AF_INET6)
		memcpy(addr, &((const struct sockaddr_in6 *)sa)->sin6_addr, 16);
	else
		return 0;
	for (size_t i = 0; i < l->n; i++) {
		const struct egress_rule *r = &l->rules[i];

		if (r->family == family && same_prefix(addr, r->addr, r->prefix) &&
		    port_ok(r->port, port))
			return 1;
	}
	return 0;
}

/* Whether rule `g` covers rule `a`. */
static int covers(const struct egress_rule *g, const struct egress_rule *a)
{
	if (g->port && g->port != a->port)
		return 0;
	if (!a->family)
		return !g->family && !strcmp(g->name, a->name);
	return g->family == a->family && g->prefix <= a->prefix &&
	       same_prefix(a->addr, g->addr, g->prefix);
}

/* 1 when `asked` is `given` or narrower. */
int egress_narrows(const struct egress_list *asked, const struct egress_list *given)
{
	for (size_t i = 0; i < asked->n; i++) {
		size_t j = 0;

		while (j < given->n && !covers(&given->rules[j], &asked->rules[i]))
			j++;
		if (j == given->n)
			return 0;
	}
	return 1;
}

/* Fill `ss` with the literal `addr` and `port`. */
int egress_literal(const char *addr, unsigned port, struct sockaddr_storage *ss,
		   socklen_t *sslen)
{
	struct sockaddr_in *sin = (struct sockaddr_in *)ss;
	struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)ss;

	memset(ss, 0, sizeof(*ss));
	if (inet_pton(AF_INET, addr, &sin->sin_addr) == 1) {
		sin->sin_family = AF_INET;
		sin->sin_port = htons((unsigned short)port);
		*sslen = sizeof(*sin);
		return 0;
	}
	if (inet_pton(AF_INET6, addr, &sin6->sin6_addr) == 1) {
		sin6->sin6_family = AF_INET6;
		sin6->sin6_port = htons((unsigned short)port);
		*sslen = sizeof(*sin6);
		return 0;
	}
	return -1;
}

/* Look a name up in a hosts file's text. */
int egress_hosts_lookup(const char *text, size_t len, const char *name, unsigned port,
			struct sockaddr_storage *ss, socklen_t *sslen)
{
	char want[EGRESS_MAX_NAME + 1];
	const char *p = text, *end = text + len;
	size_t nlen = strlen(name);

	if (!valid_name(name, nlen))
		return 0;
	copy_name(want, name, nlen);
	while (p < end) {
		const char *eol = memchr(p, '\n', (size_t)(end - p)), *q;
		char addr[64], word[EGRESS_MAX_NAME + 1];
		size_t n;
		int first = 1, ok = 0;

		if (!eol)
			eol = end;
		for (q = p; q < eol && *q != '#';) {
			while (q < eol && (*q == ' ' || *q == '\t' || *q == '\r'))
				q++;
			n = 0;
			while (q + n < eol && q[n] != ' ' && q[n] != '\t' && q[n] != '\r' &&
			       q[n] != '#')
				n++;
			if (!n)
				break;
			if (first) {
				if (n >= sizeof(addr))
					break;
				memcpy(addr, q, n);
				addr[n] = '\0';
				first = 0;
			} else if (valid_name(q, n)) {
				copy_name(word, q, n);
				if (!strcmp(word, want)) {
					ok = 1;
					break;
				}
			}
			q += n;
		}
		if (ok && egress_literal(addr, port, ss, sslen) == 0)
			return 1;
		p = eol + 1;
	}
	return 0;
}

/* Parse host[:port] (host may be [v6]) of `len` bytes into r->host and r->port. */
static int parse_authority(const char *s, size_t len, unsigned def_port,
			   struct egress_request *r)
{
	const char *host = s, *colon;
	size_t hlen;

	if (len && s[0] == '[') {
		const char *close = memchr(s, ']', len);

		if (!close)
			return -1;
		host = s + 1;
		hlen = (size_t)(close - host);
		colon = close + 1 < s + len ? close + 1 : NULL;
		if (colon && *colon != ':')
			return -1;
	} else {
		colon = memchr(s, ':', len);
		hlen = colon ? (size_t)(colon - s) : len;
	}
	if (hlen == 0 || hlen > EGRESS_MAX_NAME)
		return -1;
	for (size_t i = 0; i < hlen; i++) {
		unsigned char c = (unsigned char)host[i];

		if (!isalnum(c) && (!c || !strchr("-_.:", c)))
			return -1;
	}
	memcpy(r->host, host, hlen);
	r->host[hlen] = '\0';
	if (colon) {
		r->port = parse_port(colon + 1, len - (size_t)(colon + 1 - s));
		if (!r->port)
			return -1;
	} else {
		r->port = def_port;
	}
	return r->port ? 0 : -1;
}

/* Parse the request line of a proxy request. */
int egress_request_parse(const char *head, size_t len, struct egress_request *r,
			 const char **why)
{
	const char *eol = memchr(head, '\n', len), *sp1, *sp2, *target, *version;
	size_t line, tlen;
	static const char http[] = "http://";

	memset(r, 0, sizeof(*r));
	*why = "not an HTTP request line";
	if (!eol)
		return -1;
	r->line_len = (size_t)(eol - head) + 1;
	line = r->line_len - 1;
	if (line && head[line - 1] == '\r')
		line--;
	sp1 = memchr(head, ' ', line);
	if (!sp1 || sp1 == head)
		return -1;
	for (const char *m = head; m < sp1; m++)
		if (!isupper((unsigned char)*m))
			return -1;
	target = sp1 + 1;
	sp2 = memchr(target, ' ', line - (size_t)(target - head));
	if (!sp2 || sp2 == target)
		return -1;
	tlen = (size_t)(sp2 - target);
	version = sp2 + 1;
	if (head + line - version != 8 || memcmp(version, "HTTP/1.", 7) ||
	    (version[7] != '0' && version[7] != '1'))
		return -1;
	r->connect = (size_t)(sp1 - head) == 7 && !memcmp(head, "CONNECT", 7);
	if (r->connect) {
		*why = "CONNECT needs host:port";
		if (!memchr(target, ':', tlen) || parse_authority(target, tlen, 0, r) < 0)
			return -1;
		return 0;
	}
	*why = "the proxy serves CONNECT and http:// URLs";
	if (tlen < sizeof(http) - 1 || strncasecmp(target, http, sizeof(http) - 1))
		return -1;
	{
		const char *auth = target + sizeof(http) - 1, *end = target + tlen;
		const char *slash = memchr(auth, '/', (size_t)(end - auth));
		const char *stop = slash ? slash : end;
		size_t alen = (size_t)(stop - auth);

		*why = "a bad host in the URL";
		if (memchr(auth, '@', alen) || memchr(auth, '?', alen) || memchr(auth, '#', alen) ||
		    parse_authority(auth, alen, 80, r) < 0)
			return -1;
		r->target_off = (size_t)(target - head);
		r->target_len = tlen;
		r->path_off = (size_t)(stop - head);
		r->path_len = (size_t)(end - stop);
	}
	return 0;
}
