/*
 * cellbox checkpoint and restore: a named session's cells written to a file, and a session
 * made again from one by running them in a fresh kernel (a re-run, never called a memory
 * restore); with --memory, under gVisor, its kernel's memory, and a restore that starts the
 * kernel from it (engine/named.h). restore tells the two kinds of file by their first bytes.
 */
#include "cli.h"
#include "kernel.h"
#include "memckpt.h"
#include "named.h"
#include "named_setup.h"
#include "clock.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int checkpoint_exec(const struct cli_args *args, struct cellbox_config *cfg)
{
	char *runtime = session_runtime_dir(cfg->session.runtime_dir);
	struct strbuf err = STRBUF_INIT;
	size_t n = 0;
	int rc = EXIT_OK;

	if (cli_has(args, "memory")) {
		char *cwd = getcwd(NULL, 0);
		char *abs = args->argv[1][0] == '/' || !cwd ? xstrdup(args->argv[1]) :
			    xasprintf("%s/%s", cwd, args->argv[1]);
		double t0 = clock_now();

		if (!runtime || named_checkpoint_memory(runtime, args->argv[0], abs, &err) < 0) {
			msg_error("%s", err.len ? err.buf : "no runtime directory");
			rc = EXIT_USAGE;
		} else {
			cli_printf(stdout, "checkpointed session '%s' to %s: its kernel's memory (the "
				   "kernel stopped; cellbox restore %s makes it again) in %.2f s\n",
				   args->argv[0], args->argv[1], args->argv[1], clock_now() - t0);
		}
		free(abs);
		free(cwd);
		goto out;
	}
	if (!runtime || named_checkpoint(runtime, args->argv[0], args->argv[1], &n, &err) < 0) {
		msg_error("%s", err.len ? err.buf : "no runtime directory");
		rc = EXIT_USAGE;
	} else {
		cli_printf(stdout, "checkpointed session '%s' to %s: %zu cell%s to re-run (a re-run, "
			   "not a memory image: cellbox restore %s runs them again in a fresh "
			   "kernel)\n", args->argv[0], args->argv[1], n, n == 1 ? "" : "s",
			   args->argv[1]);
	}
out:
	strbuf_release(&err);
	free(runtime);
	return rc;
}

static const struct cli_option checkpoint_options[] = {
	{ .name = "memory", .help = "the kernel's memory (gVisor: --runtime runsc, an engine "
	  "with checkpoints): restored as it was, not re-run" },
	{ NULL },
};

const struct cli_command cmd_checkpoint_entry = {
	.name = "checkpoint",
	.run = checkpoint_exec,
	.spec = { .options = checkpoint_options, .settings = CONFIG_FOR_POOL, .min_args = 2,
		  .max_args = 2 },
	.usage = "checkpoint [--memory] NAME FILE",
	.summary = "Write the cells named session NAME's kernel ran since it started to FILE.",
	.help = "Without --memory the file holds the cells, and cellbox restore runs them again in\n"
		"a fresh kernel, which gives the same state when the cells do (not what they read\n"
		"from outside, clocks, random numbers without a seed). With --memory (a kernel\n"
		"under gVisor, an engine with checkpoints whose data root is ours) it holds the\n"
		"kernel's memory, signed with this user's key, and restore brings it back as it was.\n",
};

/* A re-run's wait for its cell: stop at Ctrl-C, SIGTERM or SIGHUP. */
static int rerun_wait(struct session *s, unsigned long id)
{
	return cli_wait(s, id) == CLI_TERMINATED || cli_sigterm || cli_sigint;
}

/* Its progress on a terminal. */
static void rerun_each(size_t i, size_t n)
{
	fprintf(stderr, "\rre-running cell %zu/%zu", i + 1, n);
}

static int restore_exec(const struct cli_args *args, struct cellbox_config *cfg)
{
	struct strbuf err = STRBUF_INIT;
	struct named_ckpt ck;
	struct named_idle idle;
	struct session *s;
	const char *name;
	char *made = NULL;
	int failed = 0, rc = EXIT_OK, progress = isatty(2);

	if (cli_named_idle(args, &idle) < 0)
		return EXIT_USAGE;
	if (memckpt_is(args->argv[0]) == 1) {
		double t0 = clock_now();

		name = cli_value(args, "name");
		if (!name)
			name = made = named_generate();
		s = named_setup_restore(cfg, name, args->argv[0], &idle, cli_session_mask(), &err);
		if (!s) {
			msg_error("%s", err.buf);
			rc = EXIT_NO_KERNEL;
		} else {
			cli_printf(stdout, "restored session '%s' from its kernel's memory in %.2f s; "
				   "cellbox attach %s\n", name, clock_now() - t0, name);
			cli_close_session(s, cfg);
		}
		strbuf_release(&err);
		free(made);
		return rc;
	}
	if (named_checkpoint_load(args->argv[0], &ck, &err) < 0) {
		msg_error("%s", err.buf);
		strbuf_release(&err);
		return EXIT_USAGE;
	}
	if (!cfg->session.kernel && ck.kernel && kernel_find(ck.kernel))
		cfg->session.kernel = xstrdup(kernel_find(ck.kernel)->name);
	name = cli_value(args, "name");
	if (!name)
		name = ck.name ? ck.name : (made = named_generate());
	cli_catch_sigint();
	s = cli_open_named(cfg, name, NULL, &idle, 0);
	if (!s) {
		named_checkpoint_free(&ck);
		free(made);
		return EXIT_NO_KERNEL;
	}
	strbuf_reset(&err);
	if (named_checkpoint_rerun(s, &ck, cfg->timeout, rerun_wait, progress ? rerun_each : NULL,
				   &failed, &err) < ck.ncells) {
		if (progress)
			fputc('\n', stderr);
		msg_error("%s: %s", args->argv[0], err.buf);
		rc = EXIT_KERNEL_DIED;
	} else if (progress && ck.ncells) {
		fputc('\n', stderr);
	}
	if (rc == EXIT_OK)
		cli_printf(stdout, "restored session '%s' by re-running %zu cell%s in a fresh kernel "
			   "(not a memory restore), %d of them raised; cellbox attach %s\n", name,
			   ck.ncells, ck.ncells == 1 ? "" : "s", failed, name);
	cli_close_session(s, cfg);
	named_checkpoint_free(&ck);
	strbuf_release(&err);
	free(made);
	return rc;
}

static const struct cli_option restore_options[] = {
	{ .name = "name", .value = CLI_TEXT, .arg = "NAME",
	  .help = "the session's name (default: the checkpoint's)" },
	{ .name = "ttl", .value = CLI_SECONDS, .arg = "SECONDS",
	  .help = "end the session after this long idle with nobody attached" },
	CLI_TTL_CHECKPOINT_OPTION,
	{ NULL },
};

const struct cli_command cmd_restore_entry = {
	.name = "restore",
	.run = restore_exec,
	.spec = { .options = restore_options, .settings = CONFIG_FOR_KERNEL | CONFIG_FOR_CELLS |
			     CONFIG_FOR_POOL, .min_args = 1, .max_args = 1 },
	.usage = "restore [--name NAME] FILE",
	.summary = "Start a named session from a checkpoint by re-running its cells in a fresh "
		   "kernel.",
	.help = "The session takes the checkpoint's name unless --name gives another; its kernel\n"
		"(python, r) is the checkpoint's unless --kernel says. A re-run, not a memory\n"
		"restore: see cellbox checkpoint --help.\n",
};
