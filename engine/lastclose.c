/* A descriptor's slow last close left to a grandchild (lastclose.h). */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lastclose.h"

static int exiting;

void lastclose_exiting(void)
{
	exiting = 1;
}

/* Close every descriptor from `lo` to `hi` (close_range, or one by one without it). */
static void close_span(unsigned int lo, unsigned int hi)
{
	struct rlimit rl;

	if (lo > hi || close_range(lo, hi, 0) == 0)
		return;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < hi)
		hi = rl.rlim_cur > 65536 ? 65536 : (unsigned int)rl.rlim_cur;
	for (unsigned int fd = lo; fd <= hi; fd++)
		close((int)fd);
}

/*
 * The grandchild (async-signal-safe calls only: its parent may have had threads): keep `fd`
 * and the gate, wait for the gate's end of file (every other holder of `fd` let go), close.
 */
static _Noreturn void hold_and_close(int fd, int gate)
{
	unsigned int a = (unsigned int)(fd < gate ? fd : gate);
	unsigned int b = (unsigned int)(fd < gate ? gate : fd);
	char c;

	if (a > 0)
		close_span(0, a - 1);
	close_span(a + 1, b - 1);
	close_span(b + 1, ~0u);
	while (read(gate, &c, 1) < 0 && errno == EINTR)
		;
	close(fd);
	_exit(0);
}

/* The thread of a process that goes on: its close() waits, the process does not. */
static void *close_thread(void *fd)
{
	close((int)(intptr_t)fd);
	return NULL;
}

/* Close `fd` on a detached thread (a plain close when there can be none). */
static void close_beside(int fd)
{
	pthread_attr_t attr;
	pthread_t t;
	int rc;

	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	rc = pthread_create(&t, &attr, close_thread, (void *)(intptr_t)fd);
	pthread_attr_destroy(&attr);
	if (rc != 0)
		close(fd);
}

void lastclose(int fd)
{
	int gate[2];
	pid_t mid;

	if (fd < 0)
		return;
	if (!exiting) {
		close_beside(fd);
		return;
	}
	if (pipe2(gate, O_CLOEXEC) < 0) {
		close(fd);
		return;
	}
	mid = fork();
	if (mid == 0) {
		if (fork() == 0)
			hold_and_close(fd, gate[0]);
		_exit(0);
	}
	close(gate[0]);
	close(fd);		/* not the last: the grandchild (or the middle child) holds it */
	close(gate[1]);		/* the grandchild's go, once the middle child is gone too */
	if (mid > 0)
		while (waitpid(mid, NULL, 0) < 0 && errno == EINTR)
			;
}
