/*
 * libFuzzer target: what a sandbox sends the egress proxy and what an operator gives it
 * (engine/egress_list.c): the request line (egress_request_parse, with the invariants the proxy's
 * rewrite relies on), the same bytes as an allow-list (which must cover itself) and as a
 * hosts file. Built with -Dfuzz=true; run by scripts/fuzz.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "egress_list.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The request line: offsets inside the line, a host and a port when it parses. */
static void request(const char *head, size_t size)
{
	struct egress_request r;
	const char *why = NULL;

	if (egress_request_parse(head, size, &r, &why) < 0) {
		if (!why || !*why)
			abort();
		return;
	}
	if (r.line_len == 0 || r.line_len > size || !r.host[0] || r.port == 0 || r.port > 65535 ||
	    strlen(r.host) > EGRESS_MAX_NAME)
		abort();
	if (!r.connect && (r.target_off + r.target_len > r.line_len ||
			   r.path_off < r.target_off ||
			   r.path_off + r.path_len != r.target_off + r.target_len))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *exact = malloc(size ? size : 1), *list = malloc(size + 7);
	struct egress_list *l = malloc(sizeof(*l));
	struct strbuf err = STRBUF_INIT;
	struct sockaddr_storage ss;
	socklen_t len;

	if (!exact || !list || !l)
		abort();
	memcpy(exact, data, size);	/* no NUL after it: a read past `size` is caught */
	request(exact, size);
	egress_hosts_lookup(exact, size, "a.test", 80, &ss, &len);
	memcpy(list, "allow:", 6);
	memcpy(list + 6, data, size);
	list[size + 6] = '\0';
	if (egress_list_parse(list, l, &err) == 0) {
		if (l->n == 0 || l->n > EGRESS_MAX_RULES || !egress_narrows(l, l))
			abort();
		egress_allows_name(l, "a.test", 80);
	} else if (!err.len) {
		abort();
	}
	strbuf_release(&err);
	free(exact);
	free(list);
	free(l);
	return 0;
}
