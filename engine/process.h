#ifndef CELLBOX_PROCESS_H
#define CELLBOX_PROCESS_H

/*
 * Processes: whether one still runs, and the signal state and descriptors a kernel's child
 * starts with.
 */

#include <sys/types.h>

/* Whether process `pid` runs (a zombie that nobody reaped yet does not). */
int process_alive(pid_t pid);
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
