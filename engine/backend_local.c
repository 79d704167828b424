/* The local backend: the runner as a child process of this cellbox. */
#include "backend.h"
#include "kernel.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

struct backend_local {
	struct backend base;
	pid_t pid;		/* 0 when no kernel runs */
	int pidfd;		/* readable when the child exits; -1 without pidfd_open */
	int adopted;		/* pid is not our child: no waitpid, status from status_file */
	char *status_file;
};

static struct backend_local *local_of(struct backend *be)
{
	return (struct backend_local *)be;
}

/* Set up the child and exec the runner; on failure report errno through `errfd`. */
static void __attribute__((noreturn)) child_exec(const struct kernel_spec *spec, int errfd,
						  pid_t parent)
{
	sigset_t none;
	char *log;
	int fd, saved;

	setpgid(0, 0);
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() != parent)
		_exit(127);
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	signal(SIGINT, SIG_DFL);
	signal(SIGPIPE, SIG_DFL);
	signal(SIGTERM, SIG_DFL);

	fd = open("/dev/null", O_RDONLY);
	if (fd >= 0 && fd != 0) {
		dup2(fd, 0);
		close(fd);
	}
	log = xasprintf("%s/log", spec->channel_dir);
	fd = open(log, O_WRONLY | O_CREAT | O_APPEND, 0600);
	if (fd >= 0) {
		dup2(fd, 1);
		dup2(fd, 2);
		if (fd > 2)
			close(fd);
	}
	if (spec->memory) {
		struct rlimit rl = { spec->memory, spec->memory };
		setrlimit(RLIMIT_AS, &rl);
	}
	if (spec->cwd && chdir(spec->cwd) < 0)
		goto fail;
	setenv("PYTHONDONTWRITEBYTECODE", "1", 1);
	if (spec->kernel && spec->kernel->env[0])
		setenv(spec->kernel->env[0], spec->kernel->env[1], 1);
	execl(spec->python, spec->python, spec->runner, spec->channel_dir, (char *)NULL);
fail:
	saved = errno;
	if (write(errfd, &saved, sizeof(saved)) < 0)
		_exit(127);
	_exit(127);
}

static int local_start(struct backend *be, const struct kernel_spec *spec, struct strbuf *err)
{
	struct backend_local *lb = local_of(be);
	pid_t parent = getpid(), pid;
	int pipefd[2], child_errno = 0;
	ssize_t n;

	if (lb->pid) {
		strbuf_addstr(err, "the kernel is already running");
		return -1;
	}
	if (pipe2(pipefd, O_CLOEXEC) < 0) {
		strbuf_addf(err, "cannot create a pipe: %s", strerror(errno));
		return -1;
	}
	pid = fork();
	if (pid < 0) {
		strbuf_addf(err, "cannot fork: %s", strerror(errno));
		close(pipefd[0]);
		close(pipefd[1]);
		return -1;
	}
	if (pid == 0) {
		close(pipefd[0]);
		child_exec(spec, pipefd[1], parent);
	}
	close(pipefd[1]);
	/* The pipe closes on a successful exec; otherwise it carries errno. */
	do {
		n = read(pipefd[0], &child_errno, sizeof(child_errno));
	} while (n < 0 && errno == EINTR);
	close(pipefd[0]);
	if (n == sizeof(child_errno)) {
		waitpid(pid, NULL, 0);
		if (spec->cwd && access(spec->cwd, X_OK) < 0)
			strbuf_addf(err, "cannot enter '%s': %s", spec->cwd, strerror(child_errno));
		else
			strbuf_addf(err, "cannot run '%s': %s", spec->python, strerror(child_errno));
		return -1;
	}
	setpgid(pid, pid);	/* also here, so the group exists before we signal it */
	lb->pid = pid;
	lb->pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	return 0;
}

static int local_exit_fd(struct backend *be)
{
	return local_of(be)->pidfd;
}

/* Forget the reaped child. */
static void local_forget(struct backend_local *lb)
{
	if (lb->pidfd >= 0)
		close(lb->pidfd);
	lb->pidfd = -1;
	lb->pid = 0;
	lb->adopted = 0;	/* a restart forks a kernel of our own */
}

/* Whether the adopted kernel has exited: its pidfd is readable, or it is gone. */
static int adopted_exited(struct backend_local *lb, int wait_ms)
{
	struct pollfd pfd = { .fd = lb->pidfd, .events = POLLIN };

	if (lb->pidfd < 0)
		return kill(lb->pid, 0) < 0 && errno == ESRCH;
	return poll(&pfd, 1, wait_ms) > 0;
}

/* Describe how an adopted kernel ended, from the status its reaper wrote down. */
static void adopted_describe(struct backend_local *lb, struct strbuf *why)
{
	struct strbuf text = STRBUF_INIT;

	/* The reaper writes the status right after the kernel ends: give it a moment. */
	for (int i = 0; i < 50; i++) {
		if (lb->status_file && strbuf_read_file(&text, lb->status_file, 64) == 0 && text.len)
			break;
		strbuf_reset(&text);
		usleep(2000);
	}
	if (text.len)
		backend_describe_status(atoi(text.buf), NULL, why);
	else
		strbuf_addstr(why, "kernel died (exit status unknown)");
	strbuf_release(&text);
}

static int local_reap(struct backend *be, enum reason *reason, struct strbuf *why)
{
	struct backend_local *lb = local_of(be);
	int status;
	pid_t r;

	*reason = REASON_KERNEL_DIED;
	if (!lb->pid)
		return 1;
	if (lb->adopted) {
		if (!adopted_exited(lb, 0))
			return 0;
		adopted_describe(lb, why);
		kill(-lb->pid, SIGKILL);
		local_forget(lb);
		return 1;
	}
	do {
		r = waitpid(lb->pid, &status, WNOHANG);
	} while (r < 0 && errno == EINTR);
	if (r == 0)
		return 0;
	if (r < 0) {
		*reason = REASON_CHANNEL_LOST;
		strbuf_addf(why, "kernel lost (%s)", strerror(errno));
	} else {
		backend_describe_status(status, NULL, why);
	}
	/* Anything the kernel left behind in its group goes with it. */
	kill(-lb->pid, SIGKILL);
	local_forget(lb);
	return 1;
}

static int local_signal(struct backend *be, int sig)
{
	struct backend_local *lb = local_of(be);

	if (!lb->pid)
		return -1;
	/* The kernel leads its process group (setpgid in the child). */
	return kill(be->signal_group ? -lb->pid : lb->pid, sig);
}

static void local_kill(struct backend *be)
{
	struct backend_local *lb = local_of(be);

	if (!lb->pid)
		return;
	kill(-lb->pid, SIGKILL);
	kill(lb->pid, SIGKILL);
	if (!lb->adopted)	/* an adopted kernel is reaped by its parent, not us */
		while (waitpid(lb->pid, NULL, 0) < 0 && errno == EINTR)
			;
	local_forget(lb);
}

static void local_detach(struct backend *be)
{
	local_forget(local_of(be));
}

static void local_free(struct backend *be)
{
	local_kill(be);
	free(local_of(be)->status_file);
	free(be);
}

/* A local backend without a kernel yet. */
static struct backend *local_create(const char *name)
{
	struct backend_local *lb = xcalloc(1, sizeof(*lb));

	(void)name;
	lb->base.ops = &backend_local_ops;
	lb->pidfd = -1;
	return &lb->base;
}

/*
 * Take over a kernel another process started (a pooled kernel): its pid leads its process
 * group. Death is seen through a pidfd; the exit status is read from the channel's
 * BACKEND_EXIT_STATUS_FILE (written by the process that reaps the kernel) when it appears.
 */
static struct backend *local_adopt(const char *name, const struct kernel_handle *k,
				   struct strbuf *err)
{
	struct backend_local *lb;

	if (k->pid <= 0) {
		strbuf_addf(err, "the kernel in '%s' has no pid", k->channel_dir);
		return NULL;
	}
	lb = local_of(local_create(name));
	lb->pid = k->pid;
	lb->adopted = 1;
	lb->pidfd = (int)syscall(SYS_pidfd_open, k->pid, 0);
	lb->status_file = xasprintf("%s/" BACKEND_EXIT_STATUS_FILE, k->channel_dir);
	return &lb->base;
}

static int local_running(const char *name, const struct kernel_handle *k, struct strbuf *id)
{
	(void)name, (void)id;
	return process_alive(k->pid);
}

const struct backend_ops backend_local_ops = {
	.name = "local",
	.flags = BACKEND_CHILD_KERNELS,
	.create = local_create,
	.adopt = local_adopt,
	.running = local_running,
	.start = local_start,
	.exit_fd = local_exit_fd,
	.reap = local_reap,
	.signal = local_signal,
	.kill = local_kill,
	.free = local_free,
	.detach = local_detach,
};
