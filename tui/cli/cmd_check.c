/* cellbox check: llm-sandbox's is_safe() from the command line; nothing is run. */
#include "cli.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DEFAULT_POLICY "production"

/* cellbox check */
static int check_exec(const struct cli_args *args, struct cellbox_config *cfg)
{
	const char *file = args->argc ? args->argv[0] : NULL, *code_arg = cli_value(args, "code");
	struct strbuf code = STRBUF_INIT, err = STRBUF_INIT, out = STRBUF_INIT;
	struct policy_verdict v = { 0 };
	const struct policy *p;
	int rc = EXIT_USAGE, checked = 0;

	if (cli_has(args, "list")) {
		policy_list(&out);
		cli_printf(stdout, "%s\n", out.len ? out.buf : "(no policies found)");
		rc = EXIT_OK;
		goto out;
	}
	if (!file && !code_arg) {
		msg_error("check: nothing to check: give a FILE, - for stdin, or -c CODE");
		goto out;
	}
	if (file && code_arg) {
		msg_error("check: one FILE or -c CODE, not both");
		goto out;
	}
	if (code_arg) {
		strbuf_addstr(&code, code_arg);
		if (!utf8_valid(code.buf, code.len, NULL)) {
			msg_error("check: the code is not valid UTF-8");
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
		msg_error("policy: %s", err.buf);
		goto out;
	}
	policy_check(p, code.buf, code.len, &v);
	checked = 1;
	if (cli_has(args, "json")) {
		cJSON *o = policy_verdict_json(p, &v);

		cli_put_json(o);
		cJSON_Delete(o);
	} else {
		policy_verdict_summary(p, &v, &out);
		strbuf_addch(&out, '\n');
		policy_verdict_lines(p, &v, &out);
		cli_put_text(stdout, out.buf);	/* it quotes the code */
	}
	rc = v.blocked ? reason_exit_code(REASON_BLOCKED) : EXIT_OK;
out:
	if (checked)
		policy_verdict_release(&v);
	strbuf_release(&code);
	strbuf_release(&err);
	strbuf_release(&out);
	return rc;
}

static const struct cli_option check_options[] = {
	{ .name = "code", .short_name = 'c', .value = CLI_TEXT, .arg = "CODE",
	  .help = "check CODE instead of a file" },
	{ .name = "json", .value = CLI_SWITCH,
	  .help = "print {safe, policy, threshold, violations[]} (llm-sandbox's is_safe())" },
	{ .name = "list", .value = CLI_SWITCH, .help = "list the policies there are" },
	{ NULL },
};

const struct cli_command cmd_check_entry = {
	.name = "check",
	.run = check_exec,
	.spec = { .options = check_options, .max_args = 1, .settings = CONFIG_FOR_CHECK },
	.usage = "check [--policy NAME|FILE] [--json] FILE | -c CODE | --list",
	.summary = "Check code against the security policy without running it.",
	.help = "FILE (- for standard input) is read as one cell. The policy is --policy, else the\n"
		"policy setting, else production. Each violation is LINE:COLUMN, severity, the\n"
		"module or pattern, what it is and the code.\n"
		"\n"
		"Exit codes:\n"
		"  0 safe\n"
		"  2 bad arguments or input\n"
		"  7 blocked\n",
};
