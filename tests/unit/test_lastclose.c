/* Unit tests of lastclose: a descriptor's last close left to a grandchild. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdint.h>
#include <pthread.h>
#include <sys/inotify.h>
#include <unistd.h>

#include "lastclose.h"
#include "process.h"
#include "util.h"
#include "../tap.h"

/* Whether `fd` reads end of file within five seconds. */
static int eof_soon(int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	char c;

	return poll(&p, 1, 5000) == 1 && read(fd, &c, 1) == 0;
}

/* The descriptor is closed here at once, and by the grandchild later; nothing else is kept. */
static void test_grandchild_closes(void)
{
	int kept[2], other[2];

	CHECK(pipe(kept) == 0 && pipe(other) == 0);
	lastclose_exiting();
	lastclose(kept[1]);
	CHECK(fcntl(kept[1], F_GETFD) < 0 && errno == EBADF);	/* gone from this process */
	CHECK(eof_soon(kept[0]));		/* and the grandchild's copy went too */
	close(other[1]);
	CHECK(eof_soon(other[0]));		/* nothing keeps another descriptor past its exit */
	close(kept[0]);
	close(other[0]);
}

/* An inotify descriptor with watches, as a channel's: closed here, without error. */
static void test_inotify(void)
{
	int fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);

	CHECK(fd >= 0);
	CHECK(inotify_add_watch(fd, "/tmp", IN_CREATE) >= 0);
	lastclose_exiting();
	lastclose(fd);
	CHECK(fcntl(fd, F_GETFD) < 0 && errno == EBADF);
	lastclose(-1);				/* nothing to close: nothing happens */
}

/* Without lastclose_exiting(), a detached thread closes it (no child holds a copy). */
static void test_thread(void)
{
	int p[2];

	CHECK(pipe(p) == 0);
	lastclose(p[1]);
	CHECK(eof_soon(p[0]));			/* the last copy went: the thread's close */
	CHECK(fcntl(p[1], F_GETFD) < 0 && errno == EBADF);
	close(p[0]);
}

/* A thread that reads its pipe until end of file. */
static void *reader(void *fd)
{
	char c;

	while (read((int)(intptr_t)fd, &c, 1) != 0)
		;
	return NULL;
}

/*
 * A fork that starts a program of its own (a named session's host) waits for the threads of
 * lastclose() to end (process.h): one thread left once they did, and a wait that gives up on
 * a thread that lives on.
 */
static void test_fork_waits_for_threads(void)
{
	int fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC), p[2];
	pthread_t t;

	CHECK(process_threads() == 1);
	CHECK(fd >= 0 && inotify_add_watch(fd, "/tmp", IN_CREATE) >= 0);
	lastclose(fd);				/* a thread's slow close */
	CHECK(process_await_one_thread(5000));
	CHECK(process_threads() == 1);
	CHECK(pipe(p) == 0);
	CHECK(pthread_create(&t, NULL, reader, (void *)(intptr_t)p[0]) == 0);
	CHECK(process_threads() == 2);
	CHECK(!process_await_one_thread(50));	/* it lives on: not waited for past the bound */
	close(p[1]);
	pthread_join(t, NULL);
	CHECK(process_await_one_thread(0));
	close(p[0]);
}

static const struct tap_test tests[] = {
	{ "grandchild_closes", test_grandchild_closes },
	{ "inotify", test_inotify },
	{ "thread", test_thread },
	{ "fork_waits_for_threads", test_fork_waits_for_threads },
};

int main(int argc, char **argv)
{
	return tap_main(argc, argv, tests, ARRAY_SIZE(tests));
}
