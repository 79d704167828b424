#include "process.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "strbuf.h"

/* Whether a process runs and is not a zombie. */
int process_alive(pid_t pid)
{
	struct strbuf stat = STRBUF_INIT;
	char *path, *paren;
	int alive;

	if (pid <= 0 || (kill(pid, 0) < 0 && errno != EPERM))
		return 0;
	path = xasprintf("/proc/%ld/stat", (long)pid);
	alive = strbuf_read_file(&stat, path, 4096) < 0 || !(paren = strrchr(stat.buf, ')')) ||
		paren[1] != ' ' || paren[2] != 'Z';
	free(path);
	strbuf_release(&stat);
	return alive;
}

/* Unblock every signal and reset ours to their defaults. */
void process_signals_for_child(void)
{
	static const int ours[] = { SIGINT, SIGPIPE, SIGTERM, SIGHUP, SIGCHLD };
	sigset_t none;

	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	for (size_t i = 0; i < ARRAY_SIZE(ours); i++)
		signal(ours[i], SIG_DFL);
}
