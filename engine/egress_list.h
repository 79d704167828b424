#ifndef CELLBOX_EGRESS_LIST_H
#define CELLBOX_EGRESS_LIST_H

/*
 * Egress by allow-list (`--network allow:HOST[:PORT],...`): what a sandbox may reach, and the
 * request line of the proxy that lets it (docs/egress.md). Pure: no socket here; the proxy
 * process is egress.h.
 *
 *	struct egress_list l;
 *	if (egress_list_parse("allow:pypi.org:443,10.203.0.0/16", &l, &err) < 0) ...
 *	egress_allows_name(&l, "PyPI.org", 443);		// 1: a listed name
 *	egress_allows_addr(&l, &sin, 8000);			// 1: inside a listed CIDR
 *
 * An entry is a host name (letters, digits, '-', '_', '.'; compared without case and without
 * a trailing dot), an IPv4 address or CIDR (10.203.0.0/16), or an IPv6 one in brackets
 * ([fd00::/8]), each with an optional :PORT (none: any port). A name allows that name only:
 * the host resolves it, and a name that is not listed is never resolved. An address or CIDR
 * allows the addresses it covers, asked for as literals.
 */

#include <stddef.h>
#include <sys/socket.h>
#include "strbuf.h"

#define EGRESS_PREFIX "allow:"
#define EGRESS_MAX_RULES 64
#define EGRESS_MAX_NAME 253

struct egress_rule {
	char name[EGRESS_MAX_NAME + 1];	/* lower case, no trailing dot; "" for an address */
	int family;			/* AF_INET, AF_INET6 for an address; 0 for a name */
	unsigned char addr[16];		/* the network, host bits cleared */
	int prefix;			/* bits of addr that count */
	unsigned port;			/* 0: any port */
};

struct egress_list {
	struct egress_rule rules[EGRESS_MAX_RULES];
	size_t n;
};

/* Whether a network setting is an allow-list ("allow:..."). */
int egress_is_list(const char *network);

/* Parse "allow:ENTRY,..." into `l`; -1 with `err` naming the entry at fault. */
int egress_list_parse(const char *network, struct egress_list *l, struct strbuf *err);

/* 1 when `name` (a host name, not an address) on `port` is listed. */
int egress_allows_name(const struct egress_list *l, const char *name, unsigned port);

/* 1 when the address `sa` (AF_INET or AF_INET6) on `port` is in a listed address or CIDR. */
int egress_allows_addr(const struct egress_list *l, const struct sockaddr *sa, unsigned port);

/*
 * 1 when every entry of `asked` is covered by an entry of `given` (a narrower list, or the
 * same): a name by the same name, an address range by a range that holds it, a port by the
 * same port or any. A client may narrow the operator's list, never widen it.
 */
int egress_narrows(const struct egress_list *asked, const struct egress_list *given);

/* Fill `ss` with the address literal `addr` (no brackets) and `port`; -1 when it is not one. */
int egress_literal(const char *addr, unsigned port, struct sockaddr_storage *ss,
		   socklen_t *sslen);

/*
 * Look `name` up in the text of a hosts file (lines "ADDRESS NAME [ALIAS...]", '#' comments):
 * 1 with `ss` (port `port`) at the first line that names it (without case), 0 when none does.
 * Lines that are not of that shape are passed over.
 */
int egress_hosts_lookup(const char *text, size_t len, const char *name, unsigned port,
			struct sockaddr_storage *ss, socklen_t *sslen);

/* What a client asked the proxy for: its request line, parsed. */
struct egress_request {
	int connect;			/* CONNECT host:port (a tunnel) */
	char host[EGRESS_MAX_NAME + 1];	/* the name or address literal, without brackets */
	unsigned port;
	size_t line_len;		/* bytes of the request line with its CRLF */
	size_t target_off, target_len;	/* the absolute URI in the line (not CONNECT) */
	size_t path_off;		/* in the line: where the origin-form path starts */
	size_t path_len;		/* its length ("" means "/") */
};

/*
 * Parse the head of a proxy request, `len` bytes that end with its blank line: the request
 * line "CONNECT host:port HTTP/1.x" or "METHOD http://host[:port]/path HTTP/1.x". -1 with a
 * short reason in `why` (static) when it is not one the proxy serves.
 */
int egress_request_parse(const char *head, size_t len, struct egress_request *r,
			 const char **why);

#endif
