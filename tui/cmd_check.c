/* cellbox check: llm-sandbox's is_safe() from the command line; nothing is run. */
#include "cli.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DEFAULT_POLICY "production"

int cmd_check(int argc, char **argv, struct cellbox_config *cfg)
{
	const char *file = NULL, *code_arg = NULL;
	struct strbuf code = STRBUF_INIT, err = STRBUF_INIT, out = STRBUF_INIT;
	struct policy_verdict v = { 0 };
	const struct policy *p;
	int json = 0, list = 0, rc = EXIT_USAGE, checked = 0;

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		int taken = cli_common_option(argc, argv, &i, cfg);

		if (taken < 0)
			goto out;
		if (taken)
			continue;
		if (!strcmp(a, "--json")) {
			json = 1;
		} else if (!strcmp(a, "--list")) {
			list = 1;
		} else if (!strcmp(a, "-c") || !strcmp(a, "--code")) {
			if (i + 1 >= argc) {
				cli_error("%s needs the code to check", a);
				goto out;
			}
			code_arg = argv[++i];
		} else if (a[0] == '-' && a[1]) {
			cli_error("check: unknown option '%s' (see '%s check --help')", a, cli_progname);
			goto out;
		} else if (file || code_arg) {
			cli_error("check: one FILE or -c CODE, not both or more");
			goto out;
		} else {
			file = a;
		}
	}
	if (list) {
		policy_list(&out);
		printf("%s\n", out.len ? out.buf : "(no policies found)");
		rc = EXIT_OK;
		goto out;
	}
	if (!file && !code_arg) {
		cli_error("check: nothing to check: give a FILE, - for stdin, or -c CODE");
		goto out;
	}
	if (file && code_arg) {
		cli_error("check: one FILE or -c CODE, not both");
		goto out;
	}
	if (code_arg) {
		strbuf_addstr(&code, code_arg);
		if (!utf8_valid(code.buf, code.len, NULL)) {
			cli_error("check: the code is not valid UTF-8");
			goto out;
		}
	} else if (cli_read_code(file, &code) < 0) {
		goto out;
	}
	if (!cfg->policy || policy_is_none(cfg->policy)) {
		free(cfg->policy);
		cfg->policy = xstrdup(DEFAULT_POLICY);
	}
	p = cli_policy(cfg, &err);
	if (!p) {
		cli_error("policy: %s", err.buf);
		goto out;
	}
	policy_check(p, code.buf, code.len, &v);
	checked = 1;
	if (json) {
		cJSON *o = policy_verdict_json(p, &v);
		char *text = cJSON_Print(o);

		puts(text);
		cJSON_free(text);
		cJSON_Delete(o);
	} else {
		policy_verdict_summary(p, &v, &out);
		strbuf_addch(&out, '\n');
		policy_verdict_lines(p, &v, &out);
		fputs(out.buf, stdout);
	}
	rc = v.blocked ? EXIT_POLICY : EXIT_OK;
out:
	if (checked)
		policy_verdict_release(&v);
	strbuf_release(&code);
	strbuf_release(&err);
	strbuf_release(&out);
	return rc;
}
