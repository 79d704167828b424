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

#include "pool.h"

/* The pool directory the configuration names (caller frees). */
static char *configured_pool(const struct cellbox_config *cfg)
{
	char *runtime = session_runtime_dir(cfg->runtime_dir);
	char *dir = pool_dir_path(runtime, cfg->pool_name);

	free(runtime);
	return dir;
}

/* Parse a whole number option value. */
static int int_arg(const char *opt, const char *v, int *out)
{
	char *end;
	long n = strtol(v, &end, 10);

	if (!*v || *end || n < 0 || n > 1000) {
		cli_error("%s: '%s' is not a number from 0 to 1000", opt, v);
		return -1;
	}
	*out = (int)n;
	return 0;
}

/* Seconds option value. */
static int seconds_arg(const char *opt, const char *v, double *out)
{
	if (parse_seconds(v, out) < 0) {
		cli_error("%s: '%s' is not a number of seconds", opt, v);
		return -1;
	}
	return 0;
}

/* Wait until the detached daemon has written daemon.json (or died). */
static int wait_started(const char *dir, pid_t pid)
{
	char *info = xasprintf("%s/daemon.json", dir);
	double deadline = now_monotonic() + 30;
	int rc = -1;

	while (now_monotonic() < deadline) {
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

static int pool_serve_cmd(int argc, char **argv, struct cellbox_config *cfg)
{
	struct pool_config pc;
	struct session_opts so;
	struct strbuf err = STRBUF_INIT;
	char *dir = NULL;
	int detach = 0, rc = EXIT_USAGE;

	pool_config_defaults(&pc);
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		int taken = cli_common_option(argc, argv, &i, cfg);

		if (taken < 0)
			goto out;
		if (taken)
			continue;
		if (!strcmp(a, "--detach")) {
			detach = 1;
		} else if (!strcmp(a, "--no-prewarm")) {
			pc.prewarm = 0;
		} else if (!v && a[0] == '-') {
			cli_error("pool serve: '%s' needs a value or is unknown (see 'cellbox pool --help')", a);
			goto out;
		} else if (!strcmp(a, "--min")) {
			if (int_arg(a, argv[++i], &pc.min_size) < 0)
				goto out;
		} else if (!strcmp(a, "--max")) {
			if (int_arg(a, argv[++i], &pc.max_size) < 0)
				goto out;
		} else if (!strcmp(a, "--idle-timeout")) {
			if (seconds_arg(a, argv[++i], &pc.idle_timeout) < 0)
				goto out;
		} else if (!strcmp(a, "--max-age")) {
			if (seconds_arg(a, argv[++i], &pc.max_age) < 0)
				goto out;
		} else if (!strcmp(a, "--health-interval")) {
			if (seconds_arg(a, argv[++i], &pc.health_interval) < 0)
				goto out;
		} else if (!strcmp(a, "--preimport")) {
			pc.preimport = argv[++i];
		} else {
			cli_error("pool serve: unknown argument '%s' (see 'cellbox pool --help')", a);
			goto out;
		}
	}
	if (pc.max_size < 1 || pc.min_size > pc.max_size) {
		cli_error("pool serve: need --max >= 1 and --min <= --max (got %d, %d)", pc.min_size,
			  pc.max_size);
		goto out;
	}
	dir = configured_pool(cfg);
	cli_session_opts(cfg, &so);
	if (detach) {
		pid_t pid = fork();

		if (pid < 0) {
			cli_error("cannot fork: %s", strerror(errno));
			rc = EXIT_NO_KERNEL;
			goto out;
		}
		if (pid > 0) {
			if (wait_started(dir, pid) < 0) {
				cli_error("the pool daemon did not start (see %s/daemon.log)", dir);
				rc = EXIT_NO_KERNEL;
			} else {
				printf("pool '%s' served by pid %ld (log: %s/daemon.log)\n", cfg->pool_name,
				       (long)pid, dir);
				rc = EXIT_OK;
			}
			goto out;
		}
		setsid();
		if (mkdir_p(dir) == 0) {
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
		cli_error("%s", err.buf);
		rc = EXIT_NO_KERNEL;
		goto out;
	}
	rc = EXIT_OK;
out:
	free(dir);
	strbuf_release(&err);
	return rc;
}

static int pool_status_cmd(int argc, char **argv, struct cellbox_config *cfg)
{
	struct strbuf err = STRBUF_INIT;
	char *dir;
	cJSON *st, *k;
	int json = 0;

	for (int i = 1; i < argc; i++) {
		int taken = cli_common_option(argc, argv, &i, cfg);
		if (taken < 0)
			return EXIT_USAGE;
		if (taken)
			continue;
		if (!strcmp(argv[i], "--json")) {
			json = 1;
			continue;
		}
		cli_error("pool status: unknown argument '%s'", argv[i]);
		return EXIT_USAGE;
	}
	dir = configured_pool(cfg);
	st = pool_status(dir, &err);
	free(dir);
	if (!st) {
		cli_error("%s", err.buf);
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
			       cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(info, "kernel")) : "python");
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

static int pool_stop_cmd(int argc, char **argv, struct cellbox_config *cfg)
{
	struct strbuf err = STRBUF_INIT;
	char *dir, *lock;
	cJSON *st;
	const cJSON *pid;
	int rc = EXIT_OK, fd;
	double deadline;

	for (int i = 1; i < argc; i++) {
		int taken = cli_common_option(argc, argv, &i, cfg);
		if (taken < 0)
			return EXIT_USAGE;
		if (!taken) {
			cli_error("pool stop: unknown argument '%s'", argv[i]);
			return EXIT_USAGE;
		}
	}
	dir = configured_pool(cfg);
	st = pool_status(dir, &err);
	pid = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(st, "daemon"), "pid");
	if (!st || !cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(st, "daemon_alive")) ||
	    !cJSON_IsNumber(pid)) {
		cli_error("no pool daemon is running for '%s'", dir);
		rc = EXIT_USAGE;
		goto out;
	}
	kill((pid_t)pid->valueint, SIGTERM);
	lock = xasprintf("%s/daemon.lock", dir);
	fd = open(lock, O_RDONLY | O_CLOEXEC);
	free(lock);
	deadline = now_monotonic() + 10;
	while (fd >= 0 && flock(fd, LOCK_SH | LOCK_NB) < 0 && now_monotonic() < deadline)
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

int cmd_pool(int argc, char **argv, struct cellbox_config *cfg)
{
	static const struct {
		const char *name;
		int (*fn)(int, char **, struct cellbox_config *);
	} subs[] = {
		{ "serve", pool_serve_cmd },
		{ "status", pool_status_cmd },
		{ "stop", pool_stop_cmd },
	};

	if (argc < 2) {
		cli_error("pool: say serve, status or stop (see 'cellbox pool --help')");
		return EXIT_USAGE;
	}
	for (size_t k = 0; k < ARRAY_SIZE(subs); k++)
		if (!strcmp(argv[1], subs[k].name))
			return subs[k].fn(argc - 1, argv + 1, cfg);
	cli_error("pool: unknown subcommand '%s' (serve, status or stop)", argv[1]);
	return EXIT_USAGE;
}
