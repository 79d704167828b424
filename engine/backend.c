#include "backend.h"

#include <string.h>
#include <sys/wait.h>

struct backend *backend_new(const char *name, struct strbuf *err)
{
	if (!strcmp(name, "local"))
		return backend_local_new();
	if (!strcmp(name, "docker") || !strcmp(name, "podman"))
		return backend_docker_new(name);
	strbuf_addf(err, "unknown backend '%s' (expected local, docker or podman)", name);
	return NULL;
}

void backend_describe_status(int status, struct strbuf *why)
{
	if (WIFEXITED(status)) {
		strbuf_addf(why, "kernel died (exit code %d)", WEXITSTATUS(status));
	} else if (WIFSIGNALED(status)) {
		int sig = WTERMSIG(status);
		const char *abbrev = sigabbrev_np(sig);
		strbuf_addf(why, "kernel died (killed by signal %d%s%s)", sig,
			    abbrev ? ", SIG" : "", abbrev ? abbrev : "");
	} else {
		strbuf_addf(why, "kernel died (wait status 0x%x)", status);
	}
}
