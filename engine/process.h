#ifndef CELLBOX_PROCESS_H
#define CELLBOX_PROCESS_H

/* Processes: whether one still runs, and the signal state a kernel's child starts with. */

#include <sys/types.h>

/* Whether process `pid` runs (a zombie that nobody reaped yet does not). */
int process_alive(pid_t pid);
/* In a child that will run a kernel: no signal blocked, and ours back at their defaults. */
void process_signals_for_child(void);

#endif
