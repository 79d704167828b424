/* The local backend: the runner as a child process of this cellbox. */
#include "backend_local_int.h"
#include "kernel.h"
#include "usage.h"
#include "zygote.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

struct backend_local {
	struct backend base;
	pid_t pid;		/* 0 when no kernel runs */
	int pidfd;		/* readable when the child exits; -1 without pidfd_open */
	int adopted;		/* pid is not our child: no waitpid, status from status_file */
	int in_ns;		/* pid is the kernel's init in a pid namespace of its own */
	int own_init;		/* ... and that init is ours (backend_local_fork.c), not a zygote's */
	char *status_file;
	struct usage_procs procs;	/* the kernel's /proc files, for its usage (usage.h) */
};

static struct backend_local *local_of(struct backend *be)
{
	return (struct backend_local *)be;
}

/* Leave the kernel's pid, as this machine sees it, in the channel (BACKEND_PID_FILE). */
static void write_pid_file(const char *channel_dir, pid_t pid)
{
	char *path = xasprintf("%s/" BACKEND_PID_FILE, channel_dir);
	char text[24];
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);

	snprintf(text, sizeof(text), "%ld\n", (long)pid);
	if (fd >= 0) {
		if (fsutil_write_all(fd, text, strlen(text)) < 0)
			unlink(path);
		close(fd);
	}
	free(path);
}

static int local_start(struct backend *be, const struct kernel_spec *spec, struct strbuf *err)
{
	struct backend_local *lb = local_of(be);
	pid_t pid;
	struct zygote *zygote = zygote_for(spec);
	int pipefd[2], syncfd[2], child_errno = 0, in_ns = 0;
	ssize_t n;

	if (lb->pid) {
		strbuf_addstr(err, "the kernel is already running");
		return -1;
	}
	/* A kernel the zygote fits is forked from it, init and all; when it fails, a cold one. */
	if (zygote) {
		struct strbuf why = STRBUF_INIT;	/* zygote_error() keeps it for its owner */
		int forked = zygote_fork(zygote, spec, &pid, &why) == 0;

		strbuf_release(&why);
		if (forked) {
			in_ns = 1;
			goto started;
		}
	}
	if (pipe2(pipefd, O_CLOEXEC) < 0 || pipe2(syncfd, O_CLOEXEC) < 0) {
		strbuf_addf(err, "cannot create a pipe: %s", strerror(errno));
		return -1;
	}
	pid = backend_local_fork_kernel(&in_ns);
	if (pid < 0) {
		strbuf_addf(err, "cannot fork: %s", strerror(errno));
		close(pipefd[0]);
		close(pipefd[1]);
		close(syncfd[0]);
		close(syncfd[1]);
		return -1;
	}
	if (pid == 0) {
		char go;

		close(pipefd[0]);
		close(syncfd[1]);
		zygote_close_inherited();	/* the init does not exec: never a kernel's to reach */
		process_close_fds(pipefd[1], syncfd[0]);	/* nor anything else of ours */
		setpgid(0, 0);
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		/* The parent's go (after it mapped our ids); EOF: it died before PDEATHSIG. */
		if (read(syncfd[0], &go, 1) != 1)
			_exit(127);
		close(syncfd[0]);
		if (in_ns)
			backend_local_kernel_init(spec, pipefd[1]);
		backend_local_exec_runner(spec, pipefd[1]);
	}
	close(pipefd[1]);
	close(syncfd[0]);
	lb->own_init = in_ns;
	if (in_ns && geteuid())
		backend_local_map_ids(pid, geteuid(), getegid());
	setpgid(pid, pid);	/* also here, so the group exists before we signal it */
	if (write(syncfd[1], "g", 1) != 1)
		kill(pid, SIGKILL);
	close(syncfd[1]);
	/* The pipe closes on a successful exec; otherwise it carries errno. */
	do {
		n = read(pipefd[0], &child_errno, sizeof(child_errno));
	} while (n < 0 && errno == EINTR);
	close(pipefd[0]);
	if (n == sizeof(child_errno)) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		if (spec->cwd && access(spec->cwd, X_OK) < 0)
			strbuf_addf(err, "cannot enter '%s': %s", spec->cwd, strerror(child_errno));
		else
			strbuf_addf(err, "cannot run '%s': %s", spec->python, strerror(child_errno));
		return -1;
	}
started:
	lb->pid = pid;
	lb->in_ns = in_ns;
	lb->pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	write_pid_file(spec->channel_dir, pid);
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
	usage_procs_release(&lb->procs);
	lb->in_ns = 0;
	lb->own_init = 0;
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
		backend_describe_status(backend_init_status(atoi(text.buf)), NULL, why);
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
		backend_describe_status(lb->in_ns ? backend_init_status(status) : status, NULL, why);
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
	/*
	 * The kernel leads its process group (setpgid in the child). Its init passes a signal on
	 * (to the runner's own group for a signal_group kernel): signalling our group too would
	 * give the runner the signal twice.
	 */
	return kill(be->signal_group && !lb->in_ns ? -lb->pid : lb->pid, sig);
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

/* The counters of the kernel's init and runner, from /proc (usage.h). */
static int local_usage(struct backend *be, int reset, struct usage_sample *u)
{
	struct backend_local *lb = local_of(be);

	usage_sample_clear(u);
	if (!lb->pid)
		return -1;
	return usage_read_procs(&lb->procs, lb->pid, reset, u);
}

/*
 * Let the kernel outlive us: its init (kernel_init) drops its PR_SET_PDEATHSIG when we send
 * LET_GO_SIGNAL and says so by its name; waited for up to 2 s. Without an init of our own (no
 * pid namespace here, or a zygote's) there is nobody to ask.
 */
static int local_release(struct backend *be, struct strbuf *err)
{
	struct backend_local *lb = local_of(be);
	char *path;
	int rc = -1;

	if (!lb->pid || lb->adopted || !lb->own_init) {
		strbuf_addstr(err, "the kernel has no init of cellbox's own (no pid namespace of its "
			      "own here) that could outlive this process");
		return -1;
	}
	if (kill(lb->pid, LET_GO_SIGNAL) < 0) {
		strbuf_addf(err, "cannot reach the kernel's init: %s", strerror(errno));
		return -1;
	}
	path = xasprintf("/proc/%ld/comm", (long)lb->pid);
	for (int i = 0; i < 400 && rc < 0; i++) {
		struct strbuf comm = STRBUF_INIT;

		if (strbuf_read_file(&comm, path, 64) == 0 &&
		    !strncmp(comm.buf, LET_GO_NAME, strlen(LET_GO_NAME)))
			rc = 0;
		else
			usleep(5000);
		strbuf_release(&comm);
	}
	free(path);
	if (rc < 0)
		strbuf_addstr(err, "the kernel's init did not say it would outlive this process");
	return rc;
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
	usage_procs_init(&lb->procs);
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
	.flags = BACKEND_CHILD_KERNELS | BACKEND_CONTEXTS,
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
	.release = local_release,
	.usage = local_usage,
};
