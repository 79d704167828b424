/*
 * A docker backend's connections: the engine's (podman's socket found when none is given), the
 * wait connection that answers when the container stops, the container's stdin (the runner's
 * wake-up); and letting go of a container, forgotten or discarded (backend_docker_int.h).
 */
#include "backend.h"
#include "backend_docker_int.h"
#include "docker.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The engine socket for podman when none is given. */
static const char *podman_host(void)
{
	static char buf[512];
	const char *h = getenv("CONTAINER_HOST"), *xdg = getenv("XDG_RUNTIME_DIR");
	char path[400];

	if (h && *h)
		return h;
	if (xdg && *xdg && getuid() != 0) {
		snprintf(path, sizeof(path), "%s/podman/podman.sock", xdg);
		if (access(path, F_OK) == 0) {
			snprintf(buf, sizeof(buf), "unix://%s", path);
			return buf;
		}
	}
	return "unix:///run/podman/podman.sock";
}

/* Connect to the engine of `engine` at `host`, podman's socket found when none is given. */
int backend_docker_connect(struct docker *d, const char *engine, const char *host,
			   struct strbuf *err)
{
	return backend_docker_connect_api(d, engine, host, NULL, err);
}

int backend_docker_connect_api(struct docker *d, const char *engine, const char *host,
			       const char *api, struct strbuf *err)
{
	if (!host && !strcmp(engine, "podman"))
		host = podman_host();
	return docker_init_api(d, host, api, err);
}

/* Wait on a connection of its own: it answers when the container stops. */
int backend_docker_open_wait(struct backend_docker *db, struct strbuf *err)
{
	char *path = xasprintf("/containers/%s/wait?condition=not-running", db->id);

	db->wait_fd = docker_send_raw(&db->d, "POST", path, err);
	free(path);
	if (db->wait_fd < 0)
		return -1;
	fcntl(db->wait_fd, F_SETFL, fcntl(db->wait_fd, F_GETFL) | O_NONBLOCK);
	strbuf_reset(&db->wait_reply);
	return 0;
}

/* Attach to the container's stdin, the runner's wake-up (non-blocking writes). */
int backend_docker_attach_stdin(struct backend_docker *db, struct strbuf *err)
{
	db->stdin_fd = docker_attach(&db->d, db->id, 0, err);
	if (db->stdin_fd < 0)
		return -1;
	fcntl(db->stdin_fd, F_SETFL, fcntl(db->stdin_fd, F_GETFL) | O_NONBLOCK);
	return 0;
}

/* Forget the container (it is gone or being removed). */
void backend_docker_forget(struct backend_docker *db)
{
	if (db->wait_fd >= 0)
		close(db->wait_fd);
	db->wait_fd = -1;
	if (db->stdin_fd >= 0)
		close(db->stdin_fd);
	db->stdin_fd = -1;
	backend_docker_stream_end(db);
	free(db->id);
	db->id = NULL;
	db->created = 0;
}

/* Remove the container (killing it) and forget it; nothing when there is none. */
void backend_docker_discard(struct backend_docker *db)
{
	if (!db->id)
		return;
	backend_docker_remove_container(&db->d, db->id);
	backend_docker_forget(db);
}
