/* The front ends' security policy: loaded once from the settings, shared by every session. */
#include "cli.h"

#include <stdlib.h>
#include <string.h>

static struct policy *loaded;
static char *loaded_name;

const struct policy *cli_policy(const struct cellbox_config *cfg, struct strbuf *err)
{
	const char *name = cfg->policy;

	if (policy_is_none(name))
		return NULL;
	if (loaded && !strcmp(loaded_name, name))
		return loaded;
	policy_free(loaded);
	free(loaded_name);
	loaded_name = NULL;
	loaded = policy_load(name, err);
	if (loaded)
		loaded_name = xstrdup(name);
	return loaded;
}

int cli_check_policy(const struct cellbox_config *cfg)
{
	struct strbuf err = STRBUF_INIT;
	int rc = 0;

	if (!policy_is_none(cfg->policy) && !cli_policy(cfg, &err)) {
		cli_error("policy: %s", err.buf);
		rc = -1;
	}
	strbuf_release(&err);
	return rc;
}

int cli_check_settings(const struct cli_spec *spec, const struct cellbox_config *cfg)
{
	if ((config_find("policy")->scope & spec->settings) && cli_check_policy(cfg) < 0)
		return -1;
	if ((config_find("libraries")->scope & spec->settings) && cli_check_libraries(cfg) < 0)
		return -1;
	return 0;
}
