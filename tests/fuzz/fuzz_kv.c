/*
 * libFuzzer target: the `key = value` reader (parse_kv) behind the config file and themes,
 * through config_parse() so that every setting's own parser (sizes, seconds, choices,
 * booleans, lists) is reached. Built with -Dfuzz=true; run by scripts/fuzz.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Each pair: both sides trimmed and without the comment. */
static int check_pair(char *key, char *value, struct strbuf *why, void *data)
{
	(void)why, (void)data;
	if (!*key || strchr(key, '\n') || strchr(value, '\n'))
		abort();
	return 0;
}

/* The text as a config file (and as plain pairs); errors must name a line. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = malloc(size + 1);
	struct cellbox_config cfg;
	struct strbuf err = STRBUF_INIT;

	if (!text)
		return 0;
	memcpy(text, data, size);
	text[size] = '\0';
	parse_kv(text, "fuzz", "key = value", check_pair, NULL, &err);
	strbuf_reset(&err);
	config_defaults(&cfg);
	if (config_parse(&cfg, text, "fuzz", &err) < 0 && strncmp(err.buf, "fuzz:", 5))
		abort();
	config_release(&cfg);
	strbuf_release(&err);
	free(text);
	return 0;
}
