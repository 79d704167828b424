/* cellbox mcp: the command, and the loop that serves one client on stdin and stdout. */
#include "cli.h"
#include "mcp.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend.h"

static volatile sig_atomic_t stop_signal;

/* SIGTERM, SIGINT, SIGHUP: end like a closed stdin. */
static void on_stop(int sig)
{
	stop_signal = sig;
}

/* Catch the stop signals, blocked except while the loop sleeps; `wait` gets that mask. */
static void catch_signals(sigset_t *wait)
{
	static const int sigs[] = { SIGTERM, SIGINT, SIGHUP };
	struct sigaction sa;
	sigset_t set;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_stop;
	sigemptyset(&sa.sa_mask);
	sigemptyset(&set);
	for (size_t i = 0; i < ARRAY_SIZE(sigs); i++) {
		sigaction(sigs[i], &sa, NULL);
		sigaddset(&set, sigs[i]);
	}
	signal(SIGPIPE, SIG_IGN);	/* a client that went is an EPIPE, not our death */
	sigprocmask(SIG_BLOCK, &set, wait);
	for (size_t i = 0; i < ARRAY_SIZE(sigs); i++)
		sigdelset(wait, sigs[i]);
}

/* A message came: handle it, then answer what it finished. */
static void on_line(struct mcp_reader *r, const char *line, size_t len, void *data)
{
	struct mcp_server *srv = data;

	mcp_handle_line(srv, line, len, &r->scan);
	mcp_calls_settle(srv);
}

/* Serve until stdin closes, the client stops reading, or a stop signal. */
static void serve(struct mcp_server *srv, const sigset_t *wait)
{
	struct pollfd *fds = NULL;
	struct mcp_session **polled = NULL;
	size_t alloc = 0;
	char *buf = xmalloc(1u << 16);

	while (!srv->client_gone && !stop_signal) {
		size_t n = 1, k = 0;
		ssize_t got;

		for (struct mcp_session *ms = srv->sessions; ms; ms = ms->next)
			n++;
		if (n > alloc) {
			alloc = 2 * n;
			fds = xrealloc(fds, alloc * sizeof(*fds));
			polled = xrealloc(polled, alloc * sizeof(*polled));
		}
		fds[k++] = (struct pollfd){ .fd = 0, .events = POLLIN };
		for (struct mcp_session *ms = srv->sessions; ms; ms = ms->next) {
			if (session_state(ms->s) == SESSION_DEAD)
				continue;	/* nothing more comes from a dead kernel */
			polled[k] = ms;
			fds[k++] = (struct pollfd){ .fd = session_fd(ms->s), .events = POLLIN };
		}
		if (ppoll(fds, k, NULL, wait) < 0) {
			if (errno == EINTR)
				continue;
			fprintf(stderr, "cellbox mcp: poll: %s\n", strerror(errno));
			break;
		}
		for (size_t i = 1; i < k; i++)
			if (fds[i].revents)
				session_dispatch(polled[i]->s);
		mcp_calls_settle(srv);
		if (!fds[0].revents)
			continue;
		got = read(0, buf, 1u << 16);
		if (got < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (got <= 0) {
			if (got < 0)
				fprintf(stderr, "cellbox mcp: reading stdin: %s\n", strerror(errno));
			mcp_reader_finish(&srv->rd, on_line, srv);
			break;	/* the client went: so do the sessions */
		}
		mcp_reader_feed(&srv->rd, buf, (size_t)got, on_line, srv);
	}
	if (stop_signal)
		fprintf(stderr, "cellbox mcp: %s: closing the sessions\n", strsignal(stop_signal));
	free(buf);
	free(fds);
	free(polled);
}

/* cellbox mcp */
static int mcp_exec(const struct cli_args *args, struct cellbox_config *cfg)
{
	const struct backend_ops *ops;
	struct strbuf err = STRBUF_INIT;
	struct mcp_server srv;
	sigset_t wait;
	int out;

	(void)args;
	if (cfg->copy_out.n) {
		msg_error("mcp: --copy-out has no meaning here (a client reads files with file_get)");
		return EXIT_USAGE;
	}
	ops = backend_find(cfg->session.backend ? cfg->session.backend : BACKEND_DEFAULT, &err);
	if (!ops) {
		msg_error("mcp: %s", err.buf);
		strbuf_release(&err);
		return EXIT_USAGE;
	}
	strbuf_release(&err);
	if (ops->flags & BACKEND_CHILD_KERNELS)
		msg_error("mcp: warning: the %s backend is no sandbox: code a client sends runs as "
			  "you, on this machine (use --backend docker)", ops->name);
	/* The protocol gets stdout; anything else that writes to fd 1 goes to stderr. */
	out = fcntl(1, F_DUPFD_CLOEXEC, 3);
	if (out < 0 || dup2(2, 1) < 0) {
		msg_error("mcp: cannot set up stdout: %s", strerror(errno));
		return EXIT_USAGE;
	}
	catch_signals(&wait);
	mcp_server_init(&srv, cfg, out);
	srv.policy = cli_policy(cfg, &err);	/* loaded (and checked) with the settings */
	strbuf_release(&err);
	serve(&srv, &wait);
	mcp_shutdown(&srv);
	mcp_server_release(&srv);
	close(out);
	return EXIT_OK;
}

const struct cli_command cmd_mcp_entry = {
	.name = "mcp",
	.run = mcp_exec,
	.spec = { .max_args = 0,
		  .settings = CONFIG_FOR_KERNEL | CONFIG_FOR_CELLS | CONFIG_FOR_POOL |
			      CONFIG_FOR_MCP },
	.usage = "mcp [OPTIONS]",
	.summary = "A Model Context Protocol server on stdio: sandboxed sessions for programs.",
	.help = "One JSON-RPC message a line on stdin and stdout (logs go to stderr); it ends when\n"
		"stdin closes, and every session and its sandbox goes with it. Revisions 2025-11-25\n"
		"(initialize) and 2026-07-28 (server/discover, the version in each request's _meta).\n"
		"Tools: execute_code, session_open, session_run, session_interrupt, session_restart,\n"
		"session_close, session_list, file_put, file_get, session_history; plots are\n"
		"resources cellbox://sessions/<handle>/plots/<n>.png. llm-sandbox's BACKEND and\n"
		"SANDBOX_* variables are read too. A client may ask for less memory, no network or\n"
		"a shorter timeout, never more than these settings allow.\n",
};
