/* cellbox pool: serve, inspect and stop a pool of warm kernels (engine/pool.h). */
#include "cli.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

#include "pool_daemon.h"
#include "setup.h"

/* The pool directory the configuration names (caller frees). */
static char *configured_pool(const struct cellbox_config *cfg)
{
	char *runtime = session_runtime_dir(cfg->session.runtime_dir);
	char *dir = pool_dir_path(runtime, cfg->pool_name);

	free(runtime);
	return dir;
}

/* Wait until the detached daemon has written daemon.json (or died). */
static int wait_started(const char *dir, pid_t pid)
{
	char *info = xasprintf("%s/daemon.json", dir);
	double deadline = clock_now() + 30;
	int rc = -1;

	while (clock_now() < deadline) {
		if (access(info, R_OK) == 0) {
			rc = 0;
			break;
		}
		if (kill(pid, 0) < 0)
			break;
		usleep(5000);
	}
	free(info);
	return rc;
}

/* pool serve */
static int pool_serve_cmd(const struct cli_args *args, struct cellbox_config *cfg)
{
	struct pool_config pc;
	struct session_opts so;
	struct strbuf err = STRBUF_INIT;
	char *dir = NULL;
	int detach = cli_has(args, "detach"), rc = EXIT_USAGE;

	pool_config_defaults(&pc);
	pc.min_size = cli_count(args, "min", pc.min_size);
	pc.max_size = cli_count(args, "max", pc.max_size);
	pc.prewarm = !cli_has(args, "no-prewarm");
	pc.idle_timeout = cli_seconds(args, "idle-timeout", pc.idle_timeout);
	pc.max_age = cli_seconds(args, "max-age", pc.max_age);
	pc.health_interval = cli_seconds(args, "health-interval", pc.health_interval);
	if (cli_has(args, "preimport"))
		pc.preimport = cli_value(args, "preimport");
	if (pc.max_size < 1 || pc.min_size > pc.max_size) {
		msg_error("pool serve: need --max >= 1 and --min <= --max (got %d, %d)", pc.min_size,
			  pc.max_size);
		goto out;
	}
	dir = configured_pool(cfg);
	so = cfg->session;
	so.pool_dir = NULL;
	so.on_state = NULL;
	so.state_data = NULL;
	/* The pool's kernels have the libraries: installed (once) now, before any is started. */
	if (setup_settings_libraries(cfg, &so, &err) < 0) {
		msg_error("%s", err.buf);
		rc = EXIT_NO_KERNEL;
		goto out;
	}
	if (detach) {
		pid_t pid = fork();

		if (pid < 0) {
			msg_error("cannot fork: %s", strerror(errno));
			rc = EXIT_NO_KERNEL;
			goto out;
		}
		if (pid > 0) {
			if (wait_started(dir, pid) < 0) {
				msg_error("the pool daemon did not start (see %s/daemon.log)", dir);
				rc = EXIT_NO_KERNEL;
			} else {
				printf("pool '%s' served by pid %ld (log: %s/daemon.log)\n", cfg->pool_name,
				       (long)pid, dir);
				rc = EXIT_OK;
			}
			goto out;
		}
		setsid();
		if (fsutil_mkdir_p(dir) == 0) {
			char *log = xasprintf("%s/daemon.log", dir);
			int fd = open(log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
			if (fd >= 0) {
				dup2(fd, 1);
				dup2(fd, 2);
				close(fd);
			}
			free(log);
		}
		{
			int null = open("/dev/null", O_RDONLY | O_CLOEXEC);
			if (null >= 0) {
				dup2(null, 0);
				close(null);
			}
		}
	}
	if (pool_serve(dir, &pc, &so, stderr, &err) < 0) {
		msg_error("%s", err.buf);
		rc = EXIT_NO_KERNEL;
		goto out;
	}
	rc = EXIT_OK;
out:
	free(dir);
	strbuf_release(&err);
	return rc;
}

/* pool status */
static int pool_status_cmd(const struct cli_args *args, struct cellbox_config *cfg)
{
	struct strbuf err = STRBUF_INIT;
	char *dir;
	cJSON *st, *k;
	int json = cli_has(args, "json");

	dir = configured_pool(cfg);
	st = pool_status(dir, &err);
	free(dir);
	if (!st) {
		msg_error("%s", err.buf);
		strbuf_release(&err);
		return EXIT_NO_KERNEL;
	}
	if (json) {
		char *text = cJSON_Print(st);
		puts(text);
		cJSON_free(text);
	} else {
		const cJSON *info = cJSON_GetObjectItemCaseSensitive(st, "daemon");
		const cJSON *pid = cJSON_GetObjectItemCaseSensitive(info, "pid");
		const cJSON *min = cJSON_GetObjectItemCaseSensitive(info, "min_size");
		const cJSON *max = cJSON_GetObjectItemCaseSensitive(info, "max_size");

		printf("pool %s: daemon %s", cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(st, "pool")),
		       cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(st, "daemon_alive")) ? "running" : "not running");
		if (cJSON_IsNumber(pid))
			printf(" (pid %d, min %d, max %d, %s kernels)", pid->valueint,
			       cJSON_IsNumber(min) ? min->valueint : 0, cJSON_IsNumber(max) ? max->valueint : 0,
			       cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(info, "kernel")) ?
			       cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(info, "kernel")) :
			       kernel_default()->name);
		printf("\n%-8s %-28s %8s %8s  %s\n", "STATE", "KERNEL", "PID", "AGE", "HEALTH / CLIENT");
		cJSON_ArrayForEach(k, cJSON_GetObjectItemCaseSensitive(st, "ready")) {
			const char *cid = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(k, "container"));

			printf("%-8s %-28s %8d %7.1fs  %s", "ready",
			       cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(k, "name")),
			       cJSON_GetObjectItemCaseSensitive(k, "pid")->valueint,
			       cJSON_GetObjectItemCaseSensitive(k, "age")->valuedouble,
			       cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(k, "alive")) ? "alive" : "dead");
			if (cid)
				printf(" (container %.12s)", cid);
			putchar('\n');
		}
		cJSON_ArrayForEach(k, cJSON_GetObjectItemCaseSensitive(st, "leased"))
			printf("%-8s %-28s %8d %7.1fs  pid %d%s\n", "leased",
			       cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(k, "name")),
			       cJSON_GetObjectItemCaseSensitive(k, "pid")->valueint,
			       cJSON_GetObjectItemCaseSensitive(k, "age")->valuedouble,
			       cJSON_GetObjectItemCaseSensitive(k, "client")->valueint,
			       cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(k, "client_alive")) ? "" : " (gone)");
	}
	cJSON_Delete(st);
	strbuf_release(&err);
	return EXIT_OK;
}

/* pool stop */
static int pool_stop_cmd(const struct cli_args *args, struct cellbox_config *cfg)
{
	struct strbuf err = STRBUF_INIT;
	char *dir, *lock;
	cJSON *st;
	const cJSON *pid;
	int rc = EXIT_OK, fd;
	double deadline;

	(void)args;
	dir = configured_pool(cfg);
	st = pool_status(dir, &err);
	pid = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(st, "daemon"), "pid");
	if (!st || !cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(st, "daemon_alive")) ||
	    !cJSON_IsNumber(pid)) {
		msg_error("no pool daemon is running for '%s'", dir);
		rc = EXIT_USAGE;
		goto out;
	}
	kill((pid_t)pid->valueint, SIGTERM);
	lock = xasprintf("%s/daemon.lock", dir);
	fd = open(lock, O_RDONLY | O_CLOEXEC);
	free(lock);
	deadline = clock_now() + 10;
	while (fd >= 0 && flock(fd, LOCK_SH | LOCK_NB) < 0 && clock_now() < deadline)
		usleep(5000);
	if (fd >= 0)
		close(fd);
	printf("pool daemon %d stopped\n", pid->valueint);
out:
	cJSON_Delete(st);
	free(dir);
	strbuf_release(&err);
	return rc;
}

static const struct cli_option serve_options[] = {
	{ .name = "min", .value = CLI_COUNT, .arg = "N", .help = "kernels kept ready (default 1)" },
	{ .name = "max", .value = CLI_COUNT, .arg = "N", .help = "ready + leased at most (default 4)" },
	{ .name = "no-prewarm", .value = CLI_SWITCH,
	  .help = "start the first kernel only when a client asks" },
	{ .name = "idle-timeout", .value = CLI_SECONDS, .arg = "S",
	  .help = "retire ready kernels above --min idle S s (default 300)" },
	{ .name = "max-age", .value = CLI_SECONDS, .arg = "S",
	  .help = "replace ready kernels older than S s (default 3600)" },
	{ .name = "health-interval", .value = CLI_SECONDS, .arg = "S",
	  .help = "ping ready kernels every S s (default 30)" },
	{ .name = "preimport", .value = CLI_TEXT, .arg = "LIST",
	  .help = "import these before a kernel is leased: numpy, pandas" },
	{ .name = "detach", .value = CLI_SWITCH,
	  .help = "run in the background, log to the pool's daemon.log" },
	{ NULL },
};

static const struct cli_option status_options[] = {
	{ .name = "json", .value = CLI_SWITCH, .help = "the status as JSON" },
	{ NULL },
};

static const struct cli_command pool_subcommands[] = {
	{ .name = "serve", .run = pool_serve_cmd, .usage = "pool serve [OPTIONS]",
	  .summary = "Keep kernels warm (foreground; --detach to background it).",
	  .spec = { .options = serve_options, .max_args = 0,
		    .settings = CONFIG_FOR_KERNEL | CONFIG_FOR_POOL } },
	{ .name = "status", .run = pool_status_cmd, .usage = "pool status [--json]",
	  .summary = "Kernels, leases, ages and health.",
	  .spec = { .options = status_options, .max_args = 0, .settings = CONFIG_FOR_POOL } },
	{ .name = "stop", .run = pool_stop_cmd, .usage = "pool stop",
	  .summary = "Stop the daemon (its ready kernels go with it).",
	  .spec = { .max_args = 0, .settings = CONFIG_FOR_POOL } },
	{ NULL },
};

const struct cli_command cmd_pool_entry = {
	.name = "pool",
	.usage = "pool serve [--min N] [--max N] [...] | pool status [--json] | pool stop",
	.summary = "Keep warm kernels ready for --pool (pooled mode).",
	.help = "Clients: --pool on tui, repl, run and replay (or pool = yes) lease a warm kernel;\n"
		"--pool-strategy says what happens when none is free: wait (up to --pool-timeout),\n"
		"fail-fast (exit 5), temporary (a fresh kernel of its own). --pool-name picks the\n"
		"pool for clients and the daemon alike.\n",
	.subcommands = pool_subcommands,
};
