#ifndef CELLBOX_BACKEND_H
#define CELLBOX_BACKEND_H

/*
 * A backend runs the runner somewhere: a child process (local), a container (docker, podman).
 * The session drives it through this small table of functions and never looks inside.
 *
 * Call protocol:
 *   start()      once; on success the runner is starting and will write `ready` in the
 *                channel. The backend may be started again after it has exited or been
 *                killed (restart).
 *   exit_fd()    a descriptor that becomes readable when the kernel has exited, or -1 when
 *                the backend cannot offer one (the session then asks reap() on a timer).
 *   reap()       non-blocking: 1 when the kernel has exited, with a description such as
 *                "kernel died (killed by signal 9, SIGKILL)" in `why`; 0 while it runs.
 *   signal()     deliver a signal to the kernel process (SIGINT interrupts a cell).
 *   kill()       end the kernel and everything it started, and wait for it; idempotent.
 *   free()       release everything; kills first if still running.
 *   detach()     optional: let go of a running kernel without stopping it (the pool daemon
 *                hands its kernels to other processes); free() afterwards does not kill.
 *
 * Adoption (pooled mode): a backend made by an adopt constructor (backend_local_adopt,
 * backend_docker_adopt) starts with a running kernel that another process started and
 * detached. exit_fd(), reap(), signal(), kill() and free() then act on that kernel exactly as
 * on one of its own: reap() gives the real reason it ended, kill() ends and removes it. Once
 * it has exited, start() starts a fresh kernel of the backend's own.
 */

#include <sys/types.h>
#include "util.h"

/*
 * How a container backend confines the kernel. Zero / NULL members take the hardened
 * defaults (given in brackets); the empty string turns a list setting off.
 */
struct sandbox_opts {
	const char *image;		/* [cellbox-python:p<protocol>] */
	const char *network;		/* NetworkMode [none]; "bridge" lets %pip install work */
	double cpus;			/* CPU limit in CPUs [1] */
	unsigned long long pids;	/* pids limit [256] */
	int writable_root;		/* 1: the root file system is writable [read-only] */
	const char *cap_drop;		/* comma-separated capabilities to drop [ALL] */
	const char *security_opt;	/* comma-separated [no-new-privileges] */
	const char *user;		/* uid[:gid] [the caller's uid, 1000 for root] */
	const char *host;		/* engine socket [$DOCKER_HOST or the default] */
};

struct kernel_def;

struct kernel_spec {
	const char *channel_dir;	/* host path of the channel */
	const char *runner;		/* host path of the runner inside the channel */
	const char *python;		/* interpreter (local backend): python3, Rscript */
	const struct kernel_def *kernel;	/* which kernel (kernel.h); NULL = python */
	unsigned long long memory;	/* limit in bytes, 0 = none (local: address space;
					   containers: cgroup memory, 0 = 1 GB) */
	const char *cwd;		/* working directory of the kernel, NULL = inherit */
	const struct sandbox_opts *sandbox;	/* container backends; NULL = defaults */
};

struct backend;

struct backend_ops {
	const char *name;	/* the family ("local", "docker": podman shares docker's table) */
	int (*start)(struct backend *be, const struct kernel_spec *spec, struct strbuf *err);
	int (*exit_fd)(struct backend *be);
	int (*reap)(struct backend *be, struct strbuf *why);
	int (*signal)(struct backend *be, int sig);
	void (*kill)(struct backend *be);
	void (*free)(struct backend *be);
	void (*detach)(struct backend *be);
	/*
	 * Optional (NULL = nothing to do): the uid/gid the channel's files must belong to for
	 * the kernel to use them (a container user other than ours). Returns 1 and sets them,
	 * or 0 when the caller's own ownership is right.
	 */
	int (*channel_owner)(struct backend *be, const struct kernel_spec *spec, uid_t *uid,
			     gid_t *gid);
};

struct backend {
	const struct backend_ops *ops;
	int signal_group;	/* set by the session: signal() reaches the kernel's process
				   group (kernel_def.interrupt_group), not only its pid */
};

/* Create a backend by name ("local", "docker", "podman"); NULL with `err` set for an unknown name. */
struct backend *backend_new(const char *name, struct strbuf *err);

/* The local backend: fork/exec of the interpreter in its own process group. */
struct backend *backend_local_new(void);
/*
 * A local backend that takes over a kernel another process started (a pooled kernel): `pid`
 * leads its process group. Death is seen through a pidfd; the exit status is read from
 * `status_file` (written by the process that reaps the kernel) when it appears. After that
 * kernel is gone, start() forks a kernel of our own as backend_local_new() does.
 */
struct backend *backend_local_adopt(pid_t pid, const char *status_file);

/*
 * The container backends over the Engine API: "docker" talks to $DOCKER_HOST or
 * /var/run/docker.sock, "podman" to $CONTAINER_HOST, $XDG_RUNTIME_DIR/podman/podman.sock or
 * /run/podman/podman.sock.
 */
struct backend *backend_docker_new(const char *engine);
/* The file in a channel where the docker backend leaves its container's id. */
#define BACKEND_CONTAINER_FILE "container"
/*
 * A docker or podman backend that takes over the running container `id` (a pooled kernel;
 * its id is in the channel's BACKEND_CONTAINER_FILE). Death is seen through a wait
 * connection (exit_fd), reap() reads the container's real exit reason, signal() goes through
 * the API, kill() removes the container. NULL with `err` set when there is no such container
 * or no engine.
 */
struct backend *backend_docker_adopt(const char *engine, const char *host, const char *id,
				    struct strbuf *err);
/* Whether container `id` runs: 1, 0 (stopped or gone), -1 when the engine cannot say. */
int backend_docker_running(const char *engine, const char *host, const char *id);
/*
 * Remove the containers of cellbox sessions whose process is gone (labels org.cellbox.*).
 * Returns how many were removed, or -1 with `err` set. `out` (may be NULL) gets a line each.
 */
int backend_docker_gc(const char *engine, const char *host, struct strbuf *out,
		      struct strbuf *err);

/* Describe a wait(2) status the way the user reads it: "kernel died (exit code 3)". */
void backend_describe_status(int status, struct strbuf *why);

#endif
