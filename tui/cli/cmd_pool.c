/* cellbox pool: serve, inspect and stop a pool of warm kernels (engine/pool.h). */
#include "cli.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "backend.h"
#include "pool_daemon.h"
#include "sanitize.h"
#include "setup.h"
#include "wall.h"

/* The pool directory the configuration names (caller frees). */
static char *configured_pool(const struct cellbox_config *cfg)
{
	char *runtime = session_runtime_dir(cfg->session.runtime_dir);
	char *dir = pool_dir_path(runtime, cfg->pool_name);

	free(runtime);
	return dir;
}

/*
 * The pool directory checked before anything in it is opened (the runtime directory above
 * it included: ours, 0700, no link; wall.h), by every pool command alike: its descriptor,
 * or -1 with the error shown.
 */
static int checked_pool(const char *dir, int make)
{
	struct strbuf err = STRBUF_INIT;
	struct stat st;
	int fd;

	if (!make && lstat(dir, &st) < 0 && errno == ENOENT) {
		msg_error("no pool at '%s' (start one with 'cellbox pool serve')", dir);
		return -1;
	}
	fd = wall_own_dir_open(dir, make, &err);
	if (fd < 0)
		msg_error("%s", err.buf);
	strbuf_release(&err);
	return fd;
}

/* Wait until the detached daemon says it serves (a byte on `fd`), EOF if it died first. */
static int wait_started(int fd)
{
	struct pollfd pfd = { .fd = fd, .events = POLLIN };
	double deadline = clock_now() + 30;
	char c;

	while (clock_now() < deadline) {
		int n = poll(&pfd, 1, 100);

		if (n < 0 && errno != EINTR)
			return -1;
		if (n > 0)
			return read(fd, &c, 1) == 1 && c == '1' ? 0 : -1;
	}
	return -1;
}

/* The detached daemon's stdio: its log (checked: pool_log_open) and /dev/null. */
static void detached_stdio(int logfd)
{
	int null = open("/dev/null", O_RDONLY | O_CLOEXEC);

	setsid();
	dup2(logfd, 1);
	dup2(logfd, 2);
	close(logfd);
	if (null >= 0) {
		dup2(null, 0);
		close(null);
	}
}

/* pool serve */
static int pool_serve_cmd(const struct cli_args *args, struct cellbox_config *cfg)
{
	struct pool_config pc;
	struct session_opts so;
	struct strbuf err = STRBUF_INIT;
	const char *engines[CLI_MAX_MANY];
	char *dir = NULL;
	int detach = cli_has(args, "detach"), rc = EXIT_USAGE, dirfd = -1, logfd = -1;
	int started[2] = { -1, -1 };

	pool_config_defaults(&pc);
	pc.min_size = cli_count(args, "min", pc.min_size);
	pc.max_size = cli_count(args, "max", pc.max_size);
	pc.prewarm = !cli_has(args, "no-prewarm");
	pc.idle_timeout = cli_seconds(args, "idle-timeout", pc.idle_timeout);
	pc.max_age = cli_seconds(args, "max-age", pc.max_age);
	pc.health_interval = cli_seconds(args, "health-interval", pc.health_interval);
	if (cli_has(args, "preimport"))
		pc.preimport = cli_value(args, "preimport");
	for (const char *e; (e = cli_value_at(args, "engine", pc.nengines)); )
		engines[pc.nengines++] = e;
	pc.engines = engines;
	if (pc.nengines) {
		const struct backend_ops *ops = backend_find(cfg->session.backend ?
							     cfg->session.backend : BACKEND_DEFAULT,
							     &err);

		if (!ops || !(ops->flags & BACKEND_IMAGES)) {
			msg_error("pool serve: --engine places container kernels: give --backend "
				  "docker (or podman)");
			goto out;
		}
	}
	if (pc.max_size < 1 || pc.min_size > pc.max_size) {
		msg_error("pool serve: need --max >= 1 and --min <= --max (got %d, %d)", pc.min_size,
			  pc.max_size);
		goto out;
	}
	dir = configured_pool(cfg);
	dirfd = checked_pool(dir, 1);
	if (dirfd < 0) {
		rc = EXIT_NO_KERNEL;
		goto out;
	}
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
		pid_t pid;

		logfd = pool_log_open(dirfd, &err);
		if (logfd < 0 || pipe2(started, O_CLOEXEC) < 0) {
			msg_error("%s", logfd < 0 ? err.buf : strerror(errno));
			rc = EXIT_NO_KERNEL;
			goto out;
		}
		pid = fork();
		if (pid < 0) {
			msg_error("cannot fork: %s", strerror(errno));
			rc = EXIT_NO_KERNEL;
			goto out;
		}
		if (pid > 0) {
			close(started[1]);
			started[1] = -1;
			if (wait_started(started[0]) < 0) {
				msg_error("the pool daemon did not start (see %s/daemon.log)", dir);
				rc = EXIT_NO_KERNEL;
			} else {
				printf("pool '%s' served by pid %ld (log: %s/daemon.log)\n", cfg->pool_name,
				       (long)pid, dir);
				rc = EXIT_OK;
			}
			goto out;
		}
		close(started[0]);
		started[0] = -1;
		close(dirfd);
		dirfd = -1;
		detached_stdio(logfd);
		logfd = -1;
		pc.ready_fd = started[1];
	}
	if (pool_serve(dir, &pc, &so, stderr, &err) < 0) {
		msg_error("%s", err.buf);
		rc = EXIT_NO_KERNEL;
		goto out;
	}
	rc = EXIT_OK;
out:
	for (size_t i = 0; i < ARRAY_SIZE(started); i++)
		if (started[i] >= 0)
			close(started[i]);
	if (logfd >= 0)
		close(logfd);
	if (dirfd >= 0)
		close(dirfd);
	free(dir);
	strbuf_release(&err);
	return rc;
}

/* A string of the pool's files as the terminal may show it (sanitize.h); valid until the next. */
static const char *shown(const char *text, struct strbuf *sb)
{
	strbuf_reset(sb);
	if (text)
		sanitize_str(text, strlen(text), 0, sb);
	return sb->buf;
}

/* A number of a status object, or 0. */
static double num(const cJSON *o, const char *key)
{
	const cJSON *n = cJSON_GetObjectItemCaseSensitive(o, key);

	return cJSON_IsNumber(n) ? n->valuedouble : 0;
}

/* The status as a table; every name in it was read from the pool's files: sanitised. */
static void print_status(const cJSON *st)
{
	const cJSON *info = cJSON_GetObjectItemCaseSensitive(st, "daemon"), *k;
	const char *kernel = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(info, "kernel"));
	struct strbuf a = STRBUF_INIT, b = STRBUF_INIT;

	printf("pool %s: daemon %s", shown(cJSON_GetStringValue(
		       cJSON_GetObjectItemCaseSensitive(st, "pool")), &a),
	       cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(st, "daemon_alive")) ? "running" :
	       "not running");
	if (cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(info, "pid")))
		printf(" (pid %.0f, min %.0f, max %.0f, %s kernels)", num(info, "pid"),
		       num(info, "min_size"), num(info, "max_size"),
		       shown(kernel ? kernel : kernel_default()->name, &a));
	putchar('\n');
	cJSON_ArrayForEach(k, cJSON_GetObjectItemCaseSensitive(info, "engines"))
		printf("engine %s: %s, %.0f of %.0f kernels\n",
		       shown(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(k, "host")), &a),
		       cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(k, "up")) ? "in" : "out",
		       num(k, "kernels"), num(k, "capacity"));
	printf("%-8s %-28s %8s %8s  %s\n", "STATE", "KERNEL", "PID", "AGE", "HEALTH / CLIENT");
	cJSON_ArrayForEach(k, cJSON_GetObjectItemCaseSensitive(st, "ready")) {
		const char *cid = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(k, "container"));

		printf("%-8s %-28s %8.0f %7.1fs  %s", "ready",
		       shown(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(k, "name")), &a),
		       num(k, "pid"), num(k, "age"),
		       cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(k, "alive")) ? "alive" : "dead");
		if (cid)
			printf(" (container %.12s)", shown(cid, &b));
		putchar('\n');
	}
	cJSON_ArrayForEach(k, cJSON_GetObjectItemCaseSensitive(st, "leased"))
		printf("%-8s %-28s %8.0f %7.1fs  pid %.0f%s\n", "leased",
		       shown(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(k, "name")), &a),
		       num(k, "pid"), num(k, "age"), num(k, "client"),
		       cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(k, "client_alive")) ? "" : " (gone)");
	strbuf_release(&a);
	strbuf_release(&b);
}

/*
 * pool status: the table, or --json's object. Without a running daemon (no pool at all, or
 * one a stopped daemon left) it says so on stderr and exits 5; the table is printed then only
 * when the pool still holds entries, --json's object always ("daemon_alive": false).
 */
static int pool_status_cmd(const struct cli_args *args, struct cellbox_config *cfg)
{
	struct strbuf err = STRBUF_INIT;
	char *dir = configured_pool(cfg);
	struct stat lst;
	cJSON *st = NULL;
	int alive, dirfd;

	if (lstat(dir, &lst) < 0 && errno == ENOENT) {
		st = cJSON_CreateObject();
		cJSON_AddStringToObject(st, "pool", dir);
		cJSON_AddBoolToObject(st, "daemon_alive", 0);
		cJSON_AddNullToObject(st, "daemon");
		cJSON_AddArrayToObject(st, "ready");
		cJSON_AddArrayToObject(st, "leased");
	} else if ((dirfd = checked_pool(dir, 0)) >= 0) {
		close(dirfd);
		st = pool_status(dir, &err);
		if (!st)
			msg_error("%s", err.buf);
	}
	strbuf_release(&err);
	if (!st) {
		free(dir);
		return EXIT_NO_KERNEL;
	}
	alive = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(st, "daemon_alive"));
	if (cli_has(args, "json")) {
		char *text = cJSON_Print(st);	/* (controls come out as \u escapes) */
		puts(text);
		cJSON_free(text);
	} else if (alive || cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(st, "ready")) ||
		   cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(st, "leased"))) {
		print_status(st);	/* (a stopped daemon's leftovers are worth a look) */
	}
	if (!alive)
		msg_error("no pool daemon is running for '%s' (start one with 'cellbox pool serve')",
			  dir);
	cJSON_Delete(st);
	free(dir);
	return alive ? EXIT_OK : EXIT_NO_KERNEL;
}

/* Wait up to `seconds` for the daemon to exit (its pidfd) and its lock to be let go. */
static int wait_stopped(int dirfd, int pidfd, double seconds)
{
	struct pollfd pfd = { .fd = pidfd, .events = POLLIN };
	double deadline = clock_now() + seconds;

	while (poll(&pfd, 1, 10) == 0 || pool_daemon_pid(dirfd))
		if (clock_now() > deadline)
			return -1;
	return 0;
}

/* pool stop: signal the process holding the pool's lock, never a pid read from a file. */
static int pool_stop_cmd(const struct cli_args *args, struct cellbox_config *cfg)
{
	struct strbuf err = STRBUF_INIT;
	char *dir = configured_pool(cfg);
	int rc = EXIT_USAGE, dirfd = checked_pool(dir, 0), pidfd = -1;
	pid_t pid = 0;

	(void)args;
	if (dirfd < 0)
		goto out;
	pidfd = pool_daemon_signal(dirfd, SIGTERM, &pid, &err);
	if (pidfd < 0) {
		msg_error("no pool daemon of ours is running for '%s' (%s)", dir, err.buf);
		goto out;
	}
	/* (a docker pool's daemon removes its containers first: up to a minute) */
	if (wait_stopped(dirfd, pidfd, 70) < 0) {
		msg_error("pool daemon %ld did not stop within 70 s", (long)pid);
		rc = EXIT_NO_KERNEL;
		goto out;
	}
	printf("pool daemon %ld stopped\n", (long)pid);
	rc = EXIT_OK;
out:
	if (pidfd >= 0)
		close(pidfd);
	if (dirfd >= 0)
		close(dirfd);
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
	{ .name = "engine", .value = CLI_TEXT, .arg = "HOST", .many = 1,
	  .help = "place the kernels on these engines (docker-host forms; repeat it), not on "
		  "the one: each holds what its CPUs and memory allow, one that fails is taken "
		  "out and asked again" },
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
	  .summary = "Kernels, leases, ages and health; exit 5 when no daemon runs.",
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
