#ifndef CELLBOX_BACKEND_H
#define CELLBOX_BACKEND_H

/*
 * A backend runs the runner somewhere: a child process (local), a container (docker, podman).
 * The session drives it through this small table of functions and never looks inside.
 *
 * Call protocol:
 *   prepare()    optional, before start(): make what start() needs that takes time and runs
 *                nothing yet (a container created, not started), so that start() is quick.
 *   start()      once; on success the runner is starting and will write `ready` in the
 *                channel. The backend may be started again after it has exited or been
 *                killed (restart).
 *   exit_fd()    a descriptor that becomes readable when the kernel has exited, or -1 when
 *                the backend cannot offer one (the session then asks reap() on a timer).
 *   reap()       non-blocking: 1 when the kernel has exited, with why in `reason`
 *                (REASON_KERNEL_DIED, REASON_OOM_KILLED, REASON_CHANNEL_LOST) and in words
 *                in `why` ("kernel died (killed by signal 9, SIGKILL)"); 0 while it runs.
 *   signal()     deliver a signal to the kernel process (SIGINT interrupts a cell).
 *   kill()       end the kernel and everything it started, and wait for it; idempotent.
 *   free()       release everything; kills first if still running.
 *   detach()     optional: let go of a running kernel without stopping it (the pool daemon
 *                hands its kernels to other processes); free() afterwards does not kill.
 *   wake()       optional: tell the runner a command file is there, where inotify does not
 *                reach it (gVisor: one byte on the container's stdin; PROTOCOL.md).
 *   latency()    optional: the last round trip to the sandbox in ms (a channel over a
 *                stream: the relay's answer to a ping), -1 when not measured.
 *   usage()      optional: read the kernel's CPU and memory counters on the host side
 *                (usage.h), and with `reset` reset its memory peak after reading: 0, or -1
 *                when they cannot be read (no kernel; an engine on another machine).
 *
 * Adoption (pooled mode): a backend made by its family's adopt constructor (backend_adopt)
 * starts with a running kernel that another process started and detached, found by its
 * channel. exit_fd(), reap(), signal(), kill() and free() then act on that kernel exactly as
 * on one of its own: reap() gives the real reason it ended, kill() ends and removes it. Once
 * it has exited, start() starts a fresh kernel of the backend's own.
 *
 * Backends decide about themselves: the registry in backend.c maps a name to its family's
 * table, and what callers must do differently per family is a flag of that table
 * (BACKEND_CHILD_KERNELS, BACKEND_SLOW_KILL), never a comparison of names outside
 * backend*.c. The registry is the one place that lists the families.
 */

#include <sys/types.h>
#include <cjson/cJSON.h>
#include "reason.h"
#include "util.h"

/*
 * How a container backend confines the kernel. Zero / NULL members take the hardened
 * defaults (given in brackets); the empty string or "none" turns a list setting off.
 */
struct sandbox_opts {
	const char *image;		/* [cellbox-python:p<protocol>] */
	const char *network;		/* NetworkMode [none]; "bridge" lets %pip install work;
					   "allow:HOST[:PORT],..." a proxy's allow-list (egress_list.h) */
	const char *egress_hosts;	/* a hosts file for the allow-list's names [the host's
					   resolver] */
	double cpus;			/* CPU limit in CPUs [1] */
	unsigned long long pids;	/* pids limit [256] */
	unsigned long long home_size;	/* bytes of the tmpfs /home/cellbox [512 MB] */
	int writable_root;		/* 1: the root file system is writable [read-only] */
	const char *cap_drop;		/* comma-separated capabilities to drop [ALL] */
	const char *security_opt;	/* comma-separated [no-new-privileges] */
	const char *user;		/* uid[:gid] [the caller's uid, 1879048192 for root] */
	const char *host;		/* engine socket [$DOCKER_HOST or the default] */
	const char *runtime;		/* OCI runtime ("runsc": gVisor) [the engine's default] */
	const char *channel;		/* "shared", "stream" or "auto" (backend_docker_stream()) [auto] */
};

struct kernel_def;
struct usage_sample;

struct kernel_spec {
	const char *channel_dir;	/* host path of the channel */
	const char *host_dir, *kernel_dir;	/* host paths of its two parts (channel.h) */
	const char *within;	/* a context's: the channel of the sandbox it starts in, whose
				   container's note names it (BACKEND_WITHIN); else NULL */
	const char *runner;		/* host path of the runner inside the channel */
	const char *python;		/* interpreter (local backend): python3, Rscript */
	const struct kernel_def *kernel;	/* which kernel (kernel.h); NULL = python */
	unsigned long long memory;	/* limit in bytes, 0 = none (local: address space;
					   containers: cgroup memory, 0 = 1 GB) */
	const char *cwd;		/* working directory of the kernel, NULL = inherit */
	const struct sandbox_opts *sandbox;	/* container backends; NULL = defaults */
};

/* A kernel another process started, as its channel shows it (for adopt and running). */
struct kernel_handle {
	const char *channel_dir;	/* its channel */
	pid_t pid;			/* the runner's pid, from the channel's ready file */
	const struct sandbox_opts *sandbox;	/* where its engine is (host); NULL = defaults */
	int watch;		/* the adopter only watches it (exit_fd, reap, kill: a pool's
				   daemon): it writes nothing to the kernel and reads none of
				   its stream (one host end at a time writes to a relay); it
				   holds its stdin open */
};

/* The file in a channel where a container backend leaves its container's id. */
#define BACKEND_CONTAINER_FILE "container"
/*
 * The file in a channel where a container backend leaves the engine its container runs on,
 * when one was given (sandbox.host): an adopter connects there, not to its own default.
 */
#define BACKEND_ENGINE_FILE "engine"
/* The file in a channel where the parent of a child kernel leaves its wait status. */
#define BACKEND_EXIT_STATUS_FILE "exit_status"
/*
 * The file in a channel where the starter of a child kernel leaves its pid as this machine
 * sees it (the ready file is the kernel's own word, and inside a pid namespace another pid).
 * These notes sit in the channel's host-only top, out of every kernel's reach.
 */
#define BACKEND_PID_FILE "pid"
/* The backend when none is configured. */
#define BACKEND_DEFAULT "local"

/* Flags of a family (backend_ops.flags). */
enum {
	/*
	 * The kernel is a child process of whoever started it: that process reaps it (waitpid)
	 * and leaves its wait status in the channel's BACKEND_EXIT_STATUS_FILE for an adopter.
	 * Without the flag a kernel lives on its own (a container) and is watched by adopting it.
	 */
	BACKEND_CHILD_KERNELS = 1 << 0,
	/*
	 * Ending a kernel takes long (removing a container: 100 ms and more): a pooled kernel is
	 * handed back to its live daemon, which ends it off the client's path.
	 */
	BACKEND_SLOW_KILL = 1 << 1,
	/*
	 * The kernel runs in a container made from an image (sandbox.image) on an engine that
	 * backend_docker_connect() reaches: what it needs installed goes into a derived image.
	 * Without the flag (and with BACKEND_CHILD_KERNELS) it is `python` run on this host.
	 */
	BACKEND_IMAGES = 1 << 2,
	/*
	 * The kernel is confined (a container): it is hostile, so its part of the channel is a
	 * tmpfs the size of the channel quota where cellbox may mount one.
	 */
	BACKEND_SANDBOX = 1 << 3,
	/*
	 * A second kernel can be started in the sandbox of a running one (a context,
	 * context_open()): it shares that sandbox's files and limits. The local family
	 * can (another child in the same working directory, with the same limit); so can a
	 * container, through the family in its `contexts` (an exec in it).
	 */
	BACKEND_CONTEXTS = 1 << 4,
	/*
	 * The family starts a kernel in a running sandbox of another's (a context's, its
	 * `contexts`): the kernel's channel has its parts inside that sandbox's channel, which
	 * the sandbox sees already (channel_create_within(), kernel_spec.within).
	 */
	BACKEND_WITHIN = 1 << 5,
};

struct backend;

struct backend_ops {
	const char *name;	/* the family ("local", "docker": podman shares docker's table) */
	unsigned flags;		/* BACKEND_CHILD_KERNELS, _SLOW_KILL, _IMAGES, _SANDBOX, _CONTEXTS,
				   _WITHIN */
	/* The family that starts a context's kernel (BACKEND_CONTEXTS); NULL: this one. */
	const struct backend_ops *contexts;
	/* Constructors; `name` is the registry's name ("podman" for podman). */
	struct backend *(*create)(const char *name);
	/* Take over the running kernel `k`; NULL with `err` set when there is none to take. */
	struct backend *(*adopt)(const char *name, const struct kernel_handle *k,
				 struct strbuf *err);
	/*
	 * Whether kernel `k` runs: 1, 0 (stopped or gone), -1 when it cannot be told. `id`
	 * (may be NULL) gets the family's name for it when it has one (a container id).
	 */
	int (*running)(const char *name, const struct kernel_handle *k, struct strbuf *id);
	/*
	 * Optional (NULL: nothing to collect): remove what dead cellbox processes left on this
	 * family's engine (and their channels below `runtime_dir`, backend_gc()). Returns how
	 * many, or -1 with `err` set; `out` gets a line each.
	 */
	int (*gc)(const char *name, const char *host, const char *runtime_dir, struct strbuf *out,
		  struct strbuf *err);

	int (*prepare)(struct backend *be, const struct kernel_spec *spec, struct strbuf *err);
	int (*start)(struct backend *be, const struct kernel_spec *spec, struct strbuf *err);
	int (*exit_fd)(struct backend *be);
	int (*reap)(struct backend *be, enum reason *reason, struct strbuf *why);
	int (*signal)(struct backend *be, int sig);
	void (*kill)(struct backend *be);
	void (*free)(struct backend *be);
	void (*detach)(struct backend *be);
	/*
	 * Optional: let the running kernel outlive this process, which is about to hand it to
	 * another (`:detach` of an unnamed session: session_hand_over). 0, or -1 with `err`. A
	 * family whose kernels are our children (BACKEND_CHILD_KERNELS: they die with us) can
	 * hand one over only through it; the others' kernels outlive us already.
	 */
	int (*release)(struct backend *be, struct strbuf *err);
	void (*wake)(struct backend *be);
	/* Optional: the last measured round trip to the sandbox in ms, or -1 (not measured). */
	double (*latency)(struct backend *be);
	/* Optional: the kernel's counters (usage.h), its peak reset after with `reset`; 0 or -1. */
	int (*usage)(struct backend *be, int reset, struct usage_sample *u);
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

/* The families, for the registry (backend.c): fork/exec, and the Engine API. */
extern const struct backend_ops backend_local_ops;
extern const struct backend_ops backend_docker_ops;

/* The family of backend `name` ("local", "docker", "podman"); NULL with `err` set if unknown. */
const struct backend_ops *backend_find(const char *name, struct strbuf *err);
/* Create a backend by name; NULL with `err` set for an unknown name. */
struct backend *backend_new(const char *name, struct strbuf *err);
/*
 * Create a backend for a context of a session of backend `name` (context.h): its family's
 * `contexts` family, else its own; NULL with `err` set for an unknown name.
 */
struct backend *backend_new_within(const char *name, struct strbuf *err);
/* Take over the running kernel `k` with backend `name`'s adopt constructor. */
struct backend *backend_adopt(const char *name, const struct kernel_handle *k,
			      struct strbuf *err);
/* Whether kernel `k` of backend `name` runs (backend_ops.running); -1 for an unknown name. */
int backend_running(const char *name, const struct kernel_handle *k, struct strbuf *id);
/*
 * Remove the containers of cellbox sessions whose process is gone (labels org.cellbox.*) on
 * the engine of backend `name`; a backend without containers collects on the default
 * engine's (docker). A dead container's channel goes too when its label names one below
 * `runtime_dir` (channel_remove_labelled(); NULL: none is removed). Returns how many were
 * removed, or -1 with `err` set. `out` (may be NULL) gets a line each.
 */
int backend_gc(const char *name, const char *host, const char *runtime_dir, struct strbuf *out,
	       struct strbuf *err);

/*
 * Leave note `name` (BACKEND_CONTAINER_FILE, ...) with `text` at the host-only top of channel
 * `channel_dir`, out of every kernel's reach: written whole under a temporary name, never
 * through a link (wall_write_at). Errors are silent: an adopter without it asks the engine.
 */
void backend_write_note(const char *channel_dir, const char *name, const char *text);
/*
 * The pid of the kernel in channel `dir` as this machine sees it: the starter's note
 * (BACKEND_PID_FILE), else the "pid" of its ready object `ready` (may be NULL); 0 if none.
 */
long backend_kernel_pid(const char *dir, const cJSON *ready);

/*
 * Describe a wait(2) status the way the user reads it: "kernel died (exit code 3)", "kernel
 * died (killed by signal 9, SIGKILL)". `note` (may be NULL) goes inside the parentheses
 * after a "; ".
 */
void backend_describe_status(int status, const char *note, struct strbuf *why);
/*
 * A wait status as the user reads it when an init stands between us and the kernel (a pid
 * namespace's, a container's, an exec's shell): such an init tells a death by signal N as
 * exit code 128 + N, which becomes a death by signal N; any other status is itself.
 */
int backend_init_status(int status);

/*
 * The name of the backend whose engine holds what backend `name` leaves behind: `name`
 * itself for a family with containers, else the default engine's ("docker"), as
 * backend_gc() collects. NULL with `err` set for an unknown name.
 */
const char *backend_engine_name(const char *name, struct strbuf *err);

/*
 * The docker family's helpers for other users of its engine (the libraries' derived images):
 * the same connection and the same owner labels as the family's own containers.
 */
struct docker;
/* Connect to the engine of backend `name` ("docker", "podman") at `host` (NULL: its default). */
int backend_docker_connect(struct docker *d, const char *name, const char *host,
			   struct strbuf *err);
struct cJSON;
/*
 * Add the labels that tie a container to this process (pid, its start time, the host): gc
 * removes the containers whose process is gone.
 */
void backend_docker_owner_labels(struct cJSON *labels);

#endif
