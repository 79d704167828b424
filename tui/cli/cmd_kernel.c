/* cellbox kernel: a Jupyter kernel provider (tui/kernel/), and `kernel install` its kernelspec. */
#include "cli.h"
#include "jupyter.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "backend.h"
#include "fsutil.h"
#include "kernel.h"
#include "setup.h"

static volatile sig_atomic_t stop_signal, interrupt_signal;
static int wake_pipe[2] = { -1, -1 };

/* SIGINT interrupts the running cell; SIGTERM and SIGHUP end the kernel. Both wake the loop. */
static void on_signal(int sig)
{
	int saved = errno;

	if (sig == SIGINT)
		interrupt_signal = 1;
	else
		stop_signal = sig;
	if (write(wake_pipe[1], "", 1) < 0) {
		/* a full pipe already wakes the loop */
	}
	errno = saved;
}

/* The handlers, and the pipe they wake the loop with: -1 when there is no pipe. */
static int catch_signals(void)
{
	static const int sigs[] = { SIGINT, SIGTERM, SIGHUP };
	struct sigaction sa;

	if (pipe2(wake_pipe, O_CLOEXEC | O_NONBLOCK) < 0)
		return -1;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	for (size_t i = 0; i < ARRAY_SIZE(sigs); i++)
		sigaction(sigs[i], &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	return 0;
}

/*
 * The front end that started us, when it says so (JPY_PARENT_PID, set by jupyter_client's
 * launcher and read by ipykernel's parent poller alike): a descriptor readable when that
 * process ends, so that a front end killed without a shutdown_request (a jupyter-console
 * closed with its terminal) takes its kernel with it; -1 when there is none to watch, -2 when
 * it is gone already.
 */
static int watch_parent(void)
{
	const char *jpy = getenv("JPY_PARENT_PID");
	pid_t ppid = getppid();
	int fd;

	if (!jpy || !*jpy || ppid == 1)
		return -1;	/* (as ipykernel: init never goes, it is only reassigned) */
	fd = (int)syscall(SYS_pidfd_open, ppid, 0);
	if (fd < 0)
		return -1;
	if (getppid() != ppid) {	/* it went before the descriptor was open */
		close(fd);
		return -2;
	}
	return fd;
}

/* cellbox kernel -f CONNECTION_FILE */
static int kernel_exec(const struct cli_args *args, struct cellbox_config *cfg)
{
	const char *path = cli_value(args, "connection-file");
	struct strbuf err = STRBUF_INIT, note = STRBUF_INIT;
	struct jupyter_conn conn;
	struct jupyter_kernel *k = NULL;
	struct session *s = NULL;
	int rc = EXIT_USAGE, parent = -1;

	if (!path) {
		msg_error("kernel: give the connection file: -f FILE (a Jupyter front end does; "
			  "'cellbox kernel install' writes the kernelspec that says so)");
		goto out;
	}
	if (jupyter_conn_read(path, &conn, &err) < 0) {
		msg_error("kernel: %s", err.buf);
		goto out;
	}
	if (catch_signals() < 0) {
		msg_error("kernel: pipe: %s", strerror(errno));
		goto out;
	}
	/* The protocol is on sockets; what the engine prints goes to stderr, the kernel's log. */
	if (dup2(2, 1) < 0) {
		msg_error("kernel: cannot set up stdout: %s", strerror(errno));
		goto out;
	}
	parent = watch_parent();
	if (parent == -2) {
		msg_error("kernel: the front end that started it is gone");
		rc = EXIT_NO_KERNEL;
		goto out;
	}
	k = jupyter_listen(&conn, &err);
	if (!k) {
		msg_error("kernel: %s", err.buf);
		rc = EXIT_NO_KERNEL;
		goto out;
	}
	s = setup_open(cfg, NULL, NULL, NULL, &note, &err);
	if (!s) {
		msg_error("kernel: %s", err.buf);
		rc = EXIT_NO_KERNEL;
		goto out;
	}
	if (note.len)
		msg_error("kernel: note: %s", note.buf);
	jupyter_serve(k, s, cfg->timeout, wake_pipe[0], parent, &stop_signal, &interrupt_signal);
	rc = EXIT_OK;
out:
	strbuf_reset(&err);
	if (s && setup_close(s, cfg, NULL, &err) < 0)
		msg_error("kernel: %s", err.buf);
	jupyter_close(k);
	if (parent >= 0)
		close(parent);
	strbuf_release(&err);
	strbuf_release(&note);
	return rc;
}

/* Where kernelspecs go: --prefix's share/jupyter/kernels, else the user's (caller frees). */
static char *kernels_dir(const struct cli_args *args)
{
	const char *prefix = cli_value(args, "prefix");
	const char *data = getenv("JUPYTER_DATA_DIR"), *xdg = getenv("XDG_DATA_HOME");
	const char *home = getenv("HOME");

	if (prefix)
		return xasprintf("%s/share/jupyter/kernels", prefix);
	if (data && *data)
		return xasprintf("%s/kernels", data);
	if (xdg && *xdg)
		return xasprintf("%s/jupyter/kernels", xdg);
	return xasprintf("%s/.local/share/jupyter/kernels", home && *home ? home : ".");
}

/* Whether `name` is a kernelspec name Jupyter takes: letters, digits, '.', '_', '-'. */
static int name_ok(const char *name)
{
	if (!*name || strlen(name) > 64)
		return 0;
	for (const char *p = name; *p; p++)
		if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-", *p))
			return 0;
	return 1;
}

/* cellbox kernel install [--user|--prefix DIR] [--name N] [--display-name S] [...] */
static int kernel_install(const struct cli_args *args, struct cellbox_config *cfg)
{
	const char *kname = cli_value(args, "kernel"), *backend = cli_value(args, "backend");
	const struct kernel_def *kd = kname ? kernel_find(kname) : kernel_default();
	const char *name, *display;
	struct strbuf err = STRBUF_INIT;
	char exe[PATH_MAX], *top = NULL, *dir = NULL, *file = NULL, *text = NULL, *auto_display = NULL;
	ssize_t n;
	cJSON *spec = NULL, *argv;
	int rc = EXIT_USAGE;

	(void)cfg;
	if (cli_has(args, "user") && cli_has(args, "prefix")) {
		msg_error("kernel install: --user and --prefix: say one");
		goto out;
	}
	if (!kd) {
		msg_error("kernel install: no kernel '%s' (python or r)", kname);
		goto out;
	}
	if (backend && !backend_find(backend, &err)) {
		msg_error("kernel install: %s", err.buf);
		goto out;
	}
	name = cli_value(args, "name");
	if (!name)
		name = kd == kernel_default() ? "cellbox" : kd->name[0] == 'r' ? "cellbox-r" :
		       kd->name;
	if (!name_ok(name)) {
		msg_error("kernel install: '%s' is not a kernelspec name (letters, digits, '.', "
			  "'_', '-')", name);
		goto out;
	}
	display = cli_value(args, "display-name");
	if (!display) {
		auto_display = xasprintf("%s (cellbox%s%s)", !strcmp(kd->language, "python") ?
					 "Python 3" : kd->language, backend ? ", " : "",
					 backend ? backend : "");
		display = auto_display;
	}
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n <= 0) {
		msg_error("kernel install: cannot find this executable: %s", strerror(errno));
		rc = EXIT_NO_KERNEL;
		goto out;
	}
	exe[n] = '\0';
	spec = cJSON_CreateObject();
	argv = cJSON_AddArrayToObject(spec, "argv");
	cJSON_AddItemToArray(argv, cJSON_CreateString(exe));
	cJSON_AddItemToArray(argv, cJSON_CreateString("kernel"));
	cJSON_AddItemToArray(argv, cJSON_CreateString("-f"));
	cJSON_AddItemToArray(argv, cJSON_CreateString("{connection_file}"));
	if (backend) {
		cJSON_AddItemToArray(argv, cJSON_CreateString("--backend"));
		cJSON_AddItemToArray(argv, cJSON_CreateString(backend));
	}
	if (kname) {
		cJSON_AddItemToArray(argv, cJSON_CreateString("--kernel"));
		cJSON_AddItemToArray(argv, cJSON_CreateString(kd->name));
	}
	cJSON_AddStringToObject(spec, "display_name", display);
	cJSON_AddStringToObject(spec, "language", kd->language);
	/* interrupt_request on control, not SIGINT to us: the session interrupts the cell */
	cJSON_AddStringToObject(spec, "interrupt_mode", "message");
	cJSON_AddItemToObject(spec, "metadata", cJSON_CreateObject());
	top = kernels_dir(args);
	dir = xasprintf("%s/%s", top, name);
	file = xasprintf("%s/kernel.json", dir);
	text = cJSON_Print(spec);
	if (fsutil_mkdir_p(dir) < 0) {
		msg_error("kernel install: cannot create '%s': %s", dir, strerror(errno));
		rc = EXIT_NO_KERNEL;
		goto out;
	}
	if (fsutil_write_atomic(file, text, strlen(text), 0644, &err) < 0) {
		msg_error("kernel install: %s", err.buf);
		rc = EXIT_NO_KERNEL;
		goto out;
	}
	cli_printf(stdout, "installed kernelspec '%s' in %s\n", name, dir);
	rc = EXIT_OK;
out:
	cJSON_Delete(spec);
	free(text);
	free(file);
	free(dir);
	free(top);
	free(auto_display);
	strbuf_release(&err);
	return rc;
}

static const struct cli_option kernel_options[] = {
	{ .name = "connection-file", .short_name = 'f', .value = CLI_TEXT, .arg = "FILE",
	  .help = "the connection file the Jupyter front end wrote (ports, key)" },
	{ NULL },
};

static const struct cli_option install_options[] = {
	{ .name = "user", .value = CLI_SWITCH,
	  .help = "into the user's kernels ($JUPYTER_DATA_DIR or ~/.local/share/jupyter; the "
		  "default)" },
	{ .name = "prefix", .value = CLI_TEXT, .arg = "DIR",
	  .help = "into DIR/share/jupyter/kernels (a virtualenv, a conda environment)" },
	{ .name = "name", .value = CLI_TEXT, .arg = "NAME",
	  .help = "the kernelspec's name (default cellbox, cellbox-r)" },
	{ .name = "display-name", .value = CLI_TEXT, .arg = "S",
	  .help = "the name front ends show" },
	{ .name = "backend", .value = CLI_TEXT, .arg = "B",
	  .help = "the backend its sessions run on (local, docker, podman)" },
	{ .name = "kernel", .value = CLI_CHOICE, .arg = "K", .choices = "python|r",
	  .help = "the kernel behind it" },
	{ NULL },
};

static const struct cli_command kernel_subcommands[] = {
	{ .name = "install", .run = kernel_install,
	  .usage = "kernel install [--user|--prefix DIR] [--name NAME] [--display-name S] "
		   "[--backend B] [--kernel python|r]",
	  .summary = "Write a kernelspec (kernel.json) that runs this cellbox as a Jupyter kernel.",
	  .spec = { .options = install_options, .max_args = 0 } },
	{ NULL },
};

const struct cli_command cmd_kernel_entry = {
	.name = "kernel",
	.run = kernel_exec,
	.spec = { .options = kernel_options, .max_args = 0,
		  .settings = CONFIG_FOR_KERNEL | CONFIG_FOR_CELLS | CONFIG_FOR_POOL },
	.usage = "kernel -f CONNECTION_FILE [OPTIONS] | kernel install [OPTIONS]",
	.summary = "A Jupyter kernel: Jupyter front ends run cells in a cellbox session.",
	.help = "Speaks the Jupyter wire protocol (5.3, ZMQ, messages signed with HMAC-SHA256)\n"
		"to any Jupyter front end (jupyter_client, nbclient, jupyter-console, JupyterLab)\n"
		"and runs its cells in one cellbox session: its backend, kernel, policy and\n"
		"limits come from these settings. Interrupts, restarts, completion, inspection,\n"
		"input() and plots (image/png) work as with ipykernel. Logs go to stderr.\n",
	.subcommands = kernel_subcommands,
};
