#include "process.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "alloc.h"
#include "clock.h"
#include "strbuf.h"

/* Whether a process runs and is not a zombie. */
int process_alive(pid_t pid)
{
	struct strbuf stat = STRBUF_INIT;
	char *path, *paren;
	int alive;

	if (pid <= 0 || (kill(pid, 0) < 0 && errno != EPERM))
		return 0;
	path = xasprintf("/proc/%ld/stat", (long)pid);
	alive = strbuf_read_file(&stat, path, 4096) < 0 || !(paren = strrchr(stat.buf, ')')) ||
		paren[1] != ' ' || paren[2] != 'Z';
	free(path);
	strbuf_release(&stat);
	return alive;
}

int process_threads(void)
{
	struct strbuf st = STRBUF_INIT;
	const char *t;
	int n = 1;

	if (strbuf_read_file(&st, "/proc/self/status", 1 << 16) == 0 &&
	    (t = strstr(st.buf, "\nThreads:")))
		n = atoi(t + 9);
	strbuf_release(&st);
	return n > 1 ? n : 1;
}

int process_await_one_thread(int ms)
{
	double end = clock_now() + ms / 1000.0;

	while (process_threads() > 1) {
		if (clock_now() >= end)
			return 0;
		usleep(1000);
	}
	return 1;
}

/* Unblock every signal and reset ours to their defaults. */
void process_signals_for_child(void)
{
	static const int ours[] = { SIGINT, SIGPIPE, SIGTERM, SIGHUP, SIGCHLD };
	sigset_t none;

	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	for (size_t i = 0; i < ARRAY_SIZE(ours); i++)
		signal(ours[i], SIG_DFL);
}

/* Close descriptors lo..hi (close_range; a loop where the kernel has none). */
static void close_span(unsigned lo, unsigned hi)
{
	struct rlimit rl;

	if (lo > hi || syscall(SYS_close_range, lo, hi, 0) == 0)
		return;
	if (getrlimit(RLIMIT_NOFILE, &rl) < 0 || rl.rlim_cur > (1u << 20))
		rl.rlim_cur = 1u << 20;
	for (unsigned fd = lo; fd <= hi && fd < rl.rlim_cur; fd++)
		close((int)fd);
}

void process_close_fds(int keep_a, int keep_b)
{
	int a = keep_a < keep_b ? keep_a : keep_b, b = keep_a < keep_b ? keep_b : keep_a;
	unsigned from = 3;

	if (a > 2) {
		close_span(from, (unsigned)a - 1);
		from = (unsigned)a + 1;
	}
	if (b > 2 && b != a) {
		close_span(from, (unsigned)b - 1);
		from = (unsigned)b + 1;
	}
	close_span(from, ~0U);
}

void process_stdio_to_null(int first, int last, int keep_a, int keep_b)
{
	/* not close-on-exec: when it lands on one of first..last itself, it stays there */
	int null = open("/dev/null", O_RDWR);

	if (null < 0)
		return;
	for (int fd = first; fd <= last; fd++)
		if (fd != keep_a && fd != keep_b && fd != null)
			dup2(null, fd);
	if (null < first || null > last)
		close(null);
}
