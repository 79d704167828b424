/*
 * What every backend family shares about its kernel: the notes its starter leaves at its
 * channel's top, the pid it has on this machine, and how its end reads (see backend.h): the
 * families, the session and the pool call it.
 */
#include "backend.h"
#include "wall.h"

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

void backend_write_note(const char *channel_dir, const char *name, const char *text)
{
	struct strbuf err = STRBUF_INIT;
	int fd = open(channel_dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

	if (fd >= 0) {
		wall_write_at(fd, name, text, strlen(text), 0644, name, &err);
		close(fd);
	}
	strbuf_release(&err);
}

long backend_kernel_pid(const char *dir, const cJSON *ready)
{
	struct strbuf text = STRBUF_INIT;
	char *path = xasprintf("%s/" BACKEND_PID_FILE, dir);
	const cJSON *pid = cJSON_GetObjectItemCaseSensitive(ready, "pid");
	long n = 0;

	if (strbuf_read_file(&text, path, 64) == 0)
		n = strtol(text.buf, NULL, 10);
	else if (cJSON_IsNumber(pid) && pid->valuedouble > 0 && pid->valuedouble < 1 << 30)
		n = pid->valueint;
	strbuf_release(&text);
	free(path);
	return n > 0 ? n : 0;
}

int backend_init_status(int status)
{
	if (WIFEXITED(status) && WEXITSTATUS(status) > 128 && WEXITSTATUS(status) < 128 + 65)
		return WEXITSTATUS(status) - 128;	/* "killed by signal N" */
	return status;
}

void backend_describe_status(int status, const char *note, struct strbuf *why)
{
	if (WIFEXITED(status)) {
		strbuf_addf(why, "kernel died (exit code %d", WEXITSTATUS(status));
	} else if (WIFSIGNALED(status)) {
		int sig = WTERMSIG(status);
		const char *abbrev = sigabbrev_np(sig);
		strbuf_addf(why, "kernel died (killed by signal %d%s%s", sig,
			    abbrev ? ", SIG" : "", abbrev ? abbrev : "");
	} else {
		strbuf_addf(why, "kernel died (wait status 0x%x", status);
	}
	if (note && *note)
		strbuf_addf(why, "; %s", note);
	strbuf_addch(why, ')');
}
