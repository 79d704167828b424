/* The line commands' sessions: opened and closed with the settings, waited on with Ctrl-C. */
#include "cli.h"
#include "setup.h"
#include "kernel.h"

#include <stdlib.h>
#include <sys/stat.h>

const struct policy *cli_policy(const struct cellbox_config *cfg, struct strbuf *err)
{
	return setup_policy(cfg->policy, err);
}

int cli_check_policy(const struct cellbox_config *cfg)
{
	struct strbuf err = STRBUF_INIT;
	int rc = 0;

	if (!policy_is_none(cfg->policy) && !cli_policy(cfg, &err)) {
		msg_error("policy: %s", err.buf);
		rc = -1;
	}
	strbuf_release(&err);
	return rc;
}

int cli_check_libraries(const struct cellbox_config *cfg)
{
	struct strbuf err = STRBUF_INIT;
	int rc = setup_libraries_check(cfg->libraries, cli_policy(cfg, &err), &err);

	if (rc < 0)
		msg_error("%s", err.buf);
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

struct session *cli_open_session(const struct cellbox_config *cfg)
{
	struct strbuf note = STRBUF_INIT, err = STRBUF_INIT;
	struct session *s = setup_open(cfg, NULL, NULL, cli_session_mask(), &note, &err);

	if (!s)
		msg_error("%s", err.buf);
	else if (note.len)
		msg_error("note: %s", note.buf);
	strbuf_release(&note);
	strbuf_release(&err);
	return s;
}

int cli_close_session(struct session *s, const struct cellbox_config *cfg)
{
	struct strbuf err = STRBUF_INIT;
	int rc = setup_close(s, cfg, &cli_sigterm, &err);

	if (rc < 0)
		msg_error("%s", err.buf);
	strbuf_release(&err);
	return rc;
}

int cli_wait(struct session *s, unsigned long id)
{
	int interrupted = 0;

	for (;;) {
		if (cli_sigterm)
			return CLI_TERMINATED;	/* the caller closes the session and leaves */
		if (cli_sigint) {
			cli_sigint = 0;
			interrupted = 1;
			session_interrupt(s);
		}
		if (session_wait(s, id) == 0)
			return interrupted;
	}
}

int cli_existing(struct cellbox_config *cfg, const char *file)
{
	char *abs, *name;
	const struct kernel_def *k;
	struct stat st;

	if (!file)
		return 0;
	abs = realpath(file, NULL);
	if (!abs || stat(abs, &st) < 0 || !S_ISREG(st.st_mode)) {
		msg_error("--existing %s: not a connection file here", file);
		free(abs);
		return -1;
	}
	name = xasprintf("existing:%s", abs);
	k = kernel_find(name);
	if (!k)
		msg_error("--existing %s: a name it cannot take", file);
	else {
		free((char *)cfg->session.kernel);	/* the settings' own (config.h) */
		cfg->session.kernel = xstrdup(k->name);
	}
	free(name);
	free(abs);
	return k ? 0 : -1;
}
