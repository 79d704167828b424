/*
 * The local kernel's process made (backend_local_int.h): forked into namespaces of its own,
 * its init, the runner exec'd.
 */
#include "backend_local_int.h"
#include "kernel.h"
#include "process.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

/* Set up the runner's process and exec it; on failure report errno through `errfd`. */
void backend_local_exec_runner(const struct kernel_spec *spec, int errfd)
{
	char *log;
	int fd, saved;

	process_signals_for_child();

	process_stdio_to_null(0, 0, -1, -1);
	log = xasprintf("%s/kernel/log", spec->channel_dir);
	fd = open(log, O_WRONLY | O_APPEND | O_NOFOLLOW);
	if (fd >= 0) {
		dup2(fd, 1);
		dup2(fd, 2);
		if (fd > 2)
			close(fd);
	}
	process_close_fds(errfd, -1);	/* errfd closes on exec, or carries errno */
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

static volatile sig_atomic_t init_pending[NSIG];
static volatile sig_atomic_t init_let_go;


/*
 * Only from outside the namespace (where si_pid is 0) and by kill() (SI_USER, which
 * rt_sigqueueinfo() cannot claim for another process): the runner cannot ask for it.
 */
static void init_on_let_go(int sig, siginfo_t *si, void *uc)
{
	(void)sig, (void)uc;
	if (si->si_code == SI_USER && si->si_pid == 0)
		init_let_go = 1;
}

/* The kernel's init catches what it passes on (pid 1 gets only signals it handles). */
static void init_on_signal(int sig)
{
	init_pending[sig] = 1;
}

/*
 * The kernel's init, pid 1 of its own pid namespace: it runs the runner, passes signals on
 * to it and reaps what gets orphaned. When the runner ends, init ends, and with it every
 * process still in the namespace (a child that made itself a session of its own included).
 * A runner killed by signal N is told as exit code 128 + N, as a container's init does.
 */
void backend_local_kernel_init(const struct kernel_spec *spec, int errfd)
{
	static const int passed[] = { SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2 };
	struct sigaction sa;
	sigset_t block, none;
	pid_t runner;
	int status = 0, group;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = init_on_signal;
	sigemptyset(&block);
	for (size_t i = 0; i < ARRAY_SIZE(passed); i++) {
		sigaction(passed[i], &sa, NULL);
		sigaddset(&block, passed[i]);
	}
	sigaction(SIGCHLD, &sa, NULL);
	sigaddset(&block, SIGCHLD);
	sa.sa_handler = NULL;
	sa.sa_sigaction = init_on_let_go;
	sa.sa_flags = SA_SIGINFO;
	sigaction(LET_GO_SIGNAL, &sa, NULL);
	sigaddset(&block, LET_GO_SIGNAL);
	sigprocmask(SIG_BLOCK, &block, NULL);
	/*
	 * A /proc of the namespace, so that os.getpid() and /proc/self agree (psutil): in a mount
	 * namespace of our own whose mounts do not go back out. Without it, the host's /proc.
	 */
	if (mount(NULL, "/", NULL, MS_REC | MS_SLAVE, NULL) == 0)
		mount("proc", "/proc", "proc", MS_NOSUID | MS_NOEXEC | MS_NODEV, NULL);
	/*
	 * A kernel whose SIGINT goes to its process group (R: as a terminal's Ctrl-C) leads a group
	 * of its own here, and the host signals only us: we pass it on to that group, once.
	 */
	group = spec->kernel && spec->kernel->interrupt_group;
	runner = fork();
	if (runner > 0) {
		/*
		 * Nothing of the front end's stdio (its terminal, the pipes of whoever runs it): a
		 * kernel handed to a named session's host outlives it (local_release).
		 */
		process_stdio_to_null(0, 2, -1, -1);
	}
	if (runner < 0)
		_exit(127);
	if (runner == 0) {
		if (group)
			setpgid(0, 0);
		backend_local_exec_runner(spec, errfd);
	}
	if (group)
		setpgid(runner, runner);
	close(errfd);
	sigemptyset(&none);
	for (;;) {
		pid_t pid;

		while ((pid = waitpid(-1, &status, WNOHANG)) > 0)
			if (pid == runner)
				_exit(WIFEXITED(status) ? WEXITSTATUS(status) :
				      WIFSIGNALED(status) ? 128 + WTERMSIG(status) : 127);
		for (size_t i = 0; i < ARRAY_SIZE(passed); i++)
			if (init_pending[passed[i]]) {
				init_pending[passed[i]] = 0;
				kill(group ? -runner : runner, passed[i]);
			}
		if (init_let_go) {	/* handed to a named session's host: outlive our parent */
			init_let_go = 0;
			if (prctl(PR_SET_PDEATHSIG, 0) == 0)
				prctl(PR_SET_NAME, LET_GO_NAME);
		}
		sigsuspend(&none);
	}
}

/* Give a new user namespace our own uid and gid (an unprivileged pid namespace needs one). */
int backend_local_map_ids(pid_t pid, uid_t uid, gid_t gid)
{
	static const char *const files[] = { "setgroups", "uid_map", "gid_map" };
	int rc = 0;

	for (size_t i = 0; i < ARRAY_SIZE(files); i++) {
		char *path = xasprintf("/proc/%ld/%s", (long)pid, files[i]);
		char *text = i == 0 ? xstrdup("deny") : i == 1 ?
			     xasprintf("%u %u 1\n", (unsigned)uid, (unsigned)uid) :
			     xasprintf("%u %u 1\n", (unsigned)gid, (unsigned)gid);
		int fd = open(path, O_WRONLY | O_CLOEXEC);

		if (fd < 0 || fsutil_write_all(fd, text, strlen(text)) < 0)
			rc = -1;
		if (fd >= 0)
			close(fd);
		free(path);
		free(text);
	}
	return rc;
}

/*
 * The clone of backend_local_fork_kernel(), from a process of one thread; `extra`:
 * CLONE_PARENT or 0.
 */
static pid_t clone_kernel(unsigned long extra, int *in_ns)
{
	unsigned long flags = CLONE_NEWPID | CLONE_NEWNS | (geteuid() ? CLONE_NEWUSER : 0);
	pid_t pid = (pid_t)syscall(SYS_clone, flags | extra | SIGCHLD, NULL, NULL, NULL, NULL);

	*in_ns = pid >= 0;
	if (pid < 0)
		pid = (pid_t)syscall(SYS_clone, extra | SIGCHLD, NULL, NULL, NULL, NULL);
	return pid;
}

/*
 * Fork the kernel into a pid namespace of its own (with a user namespace when we are not
 * root); where that is not allowed, a plain fork. Returns the pid, 0 in the child, -1.
 *
 * clone(2) is the system call, which takes none of libc's locks: in a process of several
 * threads (`cellbox kernel`'s ZMQ context, a lastclose thread) another thread may hold one
 * of malloc's at that moment, and the child, which allocates and forks the runner, waited for
 * it for ever (seen: the init stuck in fork()'s __malloc_fork_lock_parent). There the clone is
 * made by a helper forked with libc's fork() (one thread, malloc whole), with CLONE_PARENT so
 * that the kernel is still our child; the helper says its pid and in_ns, and exits.
 */
pid_t backend_local_fork_kernel(int *in_ns)
{
	int p[2], got[2] = { -1, 0 }, status;
	pid_t helper;
	ssize_t n;

	if (process_threads() == 1)
		return clone_kernel(0, in_ns);
	if (pipe2(p, O_CLOEXEC) < 0)
		return -1;
	helper = fork();
	if (helper == 0) {
		pid_t pid = clone_kernel(CLONE_PARENT, &got[1]);

		if (pid == 0) {		/* the kernel's init: on as fork_kernel's child */
			close(p[0]);
			close(p[1]);
			*in_ns = got[1];
			return 0;
		}
		got[0] = (int)pid;
		_exit(write(p[1], got, sizeof(got)) == sizeof(got) ? 0 : 1);
	}
	close(p[1]);
	do {
		n = helper > 0 ? read(p[0], got, sizeof(got)) : -1;
	} while (n < 0 && errno == EINTR);
	close(p[0]);
	if (helper > 0)
		while (waitpid(helper, &status, 0) < 0 && errno == EINTR)
			;
	if (n != sizeof(got) || got[0] <= 0) {
		errno = helper < 0 ? errno : EAGAIN;
		return -1;
	}
	*in_ns = got[1];
	return (pid_t)got[0];
}
