#ifndef CELLBOX_PROCESS_H
#define CELLBOX_PROCESS_H

/*
 * Processes: whether one still runs, and the signal state and descriptors a kernel's child
 * starts with.
 */

#include <sys/types.h>

/* Whether process `pid` runs (a zombie that nobody reaped yet does not). */
int process_alive(pid_t pid);
/* How many threads this process runs (/proc/self/status; 1 when it cannot say). */
int process_threads(void);
/*
 * Before a fork whose child goes on as a program of its own (a named session's host): wait,
 * up to `ms` milliseconds, until this process runs one thread. A thread that ends while the
 * fork is taken (a lastclose() close, the history's pruner) may hold a lock of the allocator
 * or of the thread registry then, which the child would wait for for ever: glibc's fork()
 * makes its own malloc whole in the child, but the sanitizers' allocator of GCC 12 does not
 * (seen here: 4 of 200 children hung, forked beside a thread that started and ended threads).
 * Returns whether one thread is left; a thread that lives on (a TLS pump) is waited out.
 */
int process_await_one_thread(int ms);
/* In a child that will run a kernel: no signal blocked, and ours back at their defaults. */
void process_signals_for_child(void);
/*
 * In a child that will run a kernel (or its init): close every descriptor above stderr but
 * `keep_a` and `keep_b` (-1: none), whatever the caller inherited or left open without
 * close-on-exec: a kernel gets stdio and what it opens itself.
 */
void process_close_fds(int keep_a, int keep_b);
/*
 * In a child: descriptors `first` to `last` (within 0-2) onto /dev/null, a host path, none of
 * `keep_a`, `keep_b` (-1: none) among them: what a kernel, its init or a helper must not
 * read from or write to (the front end's terminal, the pipes of whoever ran it).
 */
void process_stdio_to_null(int first, int last, int keep_a, int keep_b);

#endif
