#ifndef CELLBOX_LASTCLOSE_H
#define CELLBOX_LASTCLOSE_H

/*
 * lastclose: a descriptor whose last close is slow, closed off the caller's path.
 *
 * The last close of an inotify descriptor waits for the kernel's grace period before it
 * returns (6 to 18 ms per descriptor measured here on 2 cores), and a process that exits
 * holding one waits for it in exit(). A command that exits right after its session closes
 * (`cellbox run`, `replay`, the REPL's and the UI's end) says so once:
 *
 *	lastclose_exiting();		// from now on, a last close is a grandchild's
 *	...
 *	lastclose(ch->notify_fd);	// returns in about 0.2 ms
 *
 * Then lastclose() forks a grandchild that closes every other descriptor at once, waits
 * until this process and the middle child have let go of the one it keeps, closes it and
 * exits, reaped by init (or the subreaper); when a fork fails, it is a plain close().
 * Without lastclose_exiting(), in a process that goes on (the MCP server, the UI after a
 * restart), the close is a detached thread's: the caller's loop does not wait for it (the
 * number is taken until the thread has closed it; the caller forgets it at once).
 */

/* This process exits soon: last closes go to a grandchild from now on. */
void lastclose_exiting(void);

/* Close `fd` (nothing when it is -1): on a thread, or in a grandchild once exiting. */
void lastclose(int fd);

#endif
