/*
 * Kernels started by a process of several threads (the local backend; `cellbox kernel` has a
 * ZMQ context's): `test_session_threads NAME` runs one case.
 */
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include "session.h"
#include "util.h"
#include "../harness.h"

#ifndef TEST_PYTHON
#define TEST_PYTHON "/usr/bin/python3"
#endif

/* A thread that keeps malloc's lock of its arena busy, as a ZMQ context's threads may. */
static volatile int churning = 1;

static void *churn(void *arg)
{
	unsigned seed = (unsigned)(size_t)arg;

	while (churning) {
		void *p[16];

		for (int i = 0; i < 16; i++)
			p[i] = malloc(16 + rand_r(&seed) % 4096);
		for (int i = 0; i < 16; i++)
			free(p[i]);
	}
	return NULL;
}

static void on_alarm(int sig)
{
	(void)sig;
	static const char msg[] = "not ok - a kernel's start hung: its init waits for a lock "
				  "of malloc's that another thread held at the clone\n";
	if (write(1, msg, sizeof(msg) - 1) < 0)
		_exit(2);
	_exit(1);
}

static struct session *open_session(double grace)
{
	struct session_opts so = { 0 };

	so.python = TEST_PYTHON;
	so.interrupt_grace = grace;
	return open_checked(&so);
}

/*
 * Kernels started by a process of several threads, each allocating all the time (`cellbox
 * kernel` has a ZMQ context's): every start must come up (before: the init could wait for ever
 * on malloc's lock in the fork of its runner).
 */
static void test_threaded_start(void)
{
	pthread_t t[2];
	int n = 0;

	signal(SIGALRM, on_alarm);
	alarm(100);
	for (size_t i = 0; i < ARRAY_SIZE(t); i++)
		pthread_create(&t[i], NULL, churn, (void *)(i + 1));
	for (int i = 0; i < 12; i++) {
		struct session *s = open_session(0);

		n += s != NULL;
		session_close(s);
	}
	churning = 0;
	for (size_t i = 0; i < ARRAY_SIZE(t); i++)
		pthread_join(t[i], NULL);
	alarm(0);
	CHECK(n == 12);
}

int main(int argc, char **argv)
{
	static const struct tap_test tests[] = {
		{ "threaded_start", test_threaded_start },
	};

	return tap_main(argc, argv, tests, ARRAY_SIZE(tests));
}
