#ifndef CELLBOX_REASON_H
#define CELLBOX_REASON_H

/*
 * Why a request ended, as one enum for every layer: a backend's reap() says why its kernel
 * ended (kernel_died, oom_killed, channel_lost), the session puts a reason in every done
 * event (session.h), and front ends turn it into an exit code and words. The table in
 * reason.c is the one place that knows names and exit codes: a new reason is one enum
 * constant and one row.
 *
 * The words that go with a reason (a done event's `detail`, "kernel died (exit code 3)")
 * are the session's; the reason is what programs decide on.
 */

#include "util.h"

/* Exit codes of the command-line front ends, one per outcome (README, --help). */
enum {
	EXIT_OK = 0,
	EXIT_CELL_ERROR = 1,	/* the code raised an exception */
	EXIT_USAGE = 2,		/* bad arguments or input: nothing was run */
	EXIT_TIMEOUT = 3,	/* a cell ran past --timeout */
	EXIT_KERNEL_DIED = 4,	/* the kernel died during the run */
	EXIT_NO_KERNEL = 5,	/* the kernel could not be started */
	EXIT_POLICY = 7,	/* the security policy blocked the code: none of it ran */
	EXIT_INTERRUPTED = 130,	/* the user pressed Ctrl-C */
};

enum reason {
	REASON_OK,		/* the request ran to its end */
	REASON_ERROR,		/* the code raised (or the request failed in the kernel) */
	REASON_INTERRUPTED,	/* an interrupt (SIGINT) stopped it */
	REASON_INTERRUPT_KILLED,	/* it ignored the interrupt: the kernel was restarted */
	REASON_TIMEOUT,		/* it ran past its timeout and was interrupted */
	REASON_TIMEOUT_KILLED,	/* ... and ignored that: the kernel was restarted */
	REASON_KERNEL_DIED,	/* the kernel exited or was killed by a signal */
	REASON_OOM_KILLED,	/* the kernel was killed for going over its memory limit */
	REASON_CHANNEL_LOST,	/* the way to the kernel is gone (its container, its process) */
	REASON_CANNOT_START,	/* no kernel could be started for it */
	REASON_RESTARTED,	/* the kernel was restarted before the request could finish */
	REASON_CLOSED,		/* the session was closed (or detached) first */
	REASON_BAD_INPUT,	/* the request was refused before it ran: bad arguments or input */
	REASON_BLOCKED,		/* the security policy blocked the cell: it was never sent */
	REASON_OUTPUT_LIMIT,	/* its output passed the output limit: interrupted, the rest dropped */
	REASON_QUOTA_EXCEEDED,	/* the kernel kept more on the host than its channel quota: stopped */
	REASON_COUNT
};

/* The reason's name as programs spell it ("oom_killed"); "unknown" out of range. */
const char *reason_name(enum reason r);
/* Parse a name reason_name() gives; -1 for anything else. */
int reason_parse(const char *name, enum reason *out);
/* The exit code a front end gives for a request that ended so. */
int reason_exit_code(enum reason r);
/* Whether the kernel is gone with the request (it died, or could not start). */
int reason_kernel_gone(enum reason r);
/*
 * Describe every exit code of the table once, in ascending order, as "0 ok", "1 the code
 * raised", ... with `sep` between them (for --help).
 */
void reason_describe_exit_codes(const char *sep, struct strbuf *out);

#endif
