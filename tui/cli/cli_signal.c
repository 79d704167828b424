/* Ctrl-C, SIGTERM and SIGHUP caught for the command to act on, let in only while it waits. */
#include "cli.h"

#include <string.h>

volatile sig_atomic_t cli_sigint;
volatile sig_atomic_t cli_sigterm;

/* Record a Ctrl-C (or a SIGTERM, SIGHUP: leave) for the command to act on. */
static void on_sigint(int sig)
{
	if (sig == SIGINT)
		cli_sigint = 1;
	else
		cli_sigterm = sig;
}

static sigset_t wait_mask;
static int sigint_caught;	/* cli_catch_sigint() ran: wait_mask means something */

void cli_catch_sigint(void)
{
	struct sigaction sa;
	sigset_t set;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_sigint;
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = 0;	/* no SA_RESTART: waits return EINTR */
	sigaction(SIGINT, &sa, NULL);
	/* SIGTERM and SIGHUP end the command the same way: the kernel stopped, nothing left. */
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGHUP);
	sigprocmask(SIG_BLOCK, &set, &wait_mask);
	sigint_caught = 1;
	/* A parent may hand us SIGINT blocked (test runners do): let it in while we wait. */
	sigdelset(&wait_mask, SIGINT);
	sigdelset(&wait_mask, SIGTERM);
	sigdelset(&wait_mask, SIGHUP);
}

const sigset_t *cli_wait_mask(void)
{
	return &wait_mask;
}

const sigset_t *cli_session_mask(void)
{
	return sigint_caught ? &wait_mask : NULL;
}
