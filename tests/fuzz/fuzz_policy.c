/*
 * libFuzzer target for the security policy's reader (policy_check) and its file parser
 * (policy_parse). Built by scripts/fuzz (meson -Dfuzz=true), seeds in corpus/policy/.
 *
 * The unit test policy/fuzz runs a fixed random sweep of the same functions in CI.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "policy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct policy *strict;

/* Read one input as a cell and as a policy file; the sanitizers judge. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct strbuf text = STRBUF_INIT, err = STRBUF_INIT;
	struct policy_verdict v;

	if (!strict)
		strict = policy_parse("threshold = LOW\nmodule os HIGH o\nmodule sys HIGH s\n"
				      "pattern HIGH a\n    \\bos\\.\\w+\\s*\\(\n"
				      "pattern MEDIUM strings b\n    \\bopen\\s*\\(\n", "fuzz", &err);
	strbuf_add(&text, data, size);
	if (strict) {
		strict->name = strict->name ? strict->name : strdup("fuzz");
		policy_check(strict, text.buf, text.len, &v);
		policy_verdict_release(&v);
	}
	policy_free(policy_parse(text.buf, "fuzz", &err));
	strbuf_release(&text);
	strbuf_release(&err);
	return 0;
}
