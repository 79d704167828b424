#ifndef CELLBOX_POOL_INT_H
#define CELLBOX_POOL_INT_H

/*
 * What the files of the pool daemon share. Internal. pool_daemon.c is the loop (serving,
 * reaping, health, retiring, the pool's sizes); pool_dir.c reads and tidies the pool
 * directory (leases, waiting clients, leftovers, daemon.json); pool_spawn.c makes kernels
 * (the zygote, several starts in flight, warming, handing a ready kernel to ready/);
 * pool_status.c describes a pool (`pool status`) from its files alone.
 */

#include <stdio.h>
#include <sys/types.h>
#include "session.h"
#include "util.h"

/* A kernel of the pool: ready, leased or dying. */
struct pkernel {
	char *name;
	pid_t pid;		/* local: the runner's; container: the runner's inside it */
	struct backend *be;	/* container backends: the adopted container, else NULL */
	double born;		/* when it became ready */
	double ready_since;	/* when it last went into ready/ */
	pid_t client;		/* 0 while ready */
	int dying;		/* killed, waiting to be reaped */
	int reaped;		/* local, leased: exited and reaped (pid 0), retired at release */
	int engine;		/* its engine in daemon.eng, or -1 (the pool has one engine) */
};

/* An engine of a pool with several (pool_engines.c). */
struct pool_engine {
	const char *host;	/* as given to --engine */
	int up;			/* in: kernels are placed there */
	double retry_at;	/* out: asked again at this time */
	double backoff;		/* the current back-off in seconds */
	int cpus;		/* what it reported */
	unsigned long long mem;
	int capacity;		/* kernels it may hold */
};

struct pool_config;		/* pool_daemon.h */
struct pspawn;			/* a kernel being made (pool_spawn.c) */

struct daemon {
	const char *dir;
	const struct pool_config *pc;
	struct session_opts kopts;
	const char *backend;	/* kopts.backend or the default */
	FILE *log;
	int containers;		/* the kernels are not our children (containers): adopt them */
	int epfd;		/* the loop's epoll set: starting kernels and containers join it */
	struct pkernel *k;
	size_t nk, alloc;
	struct pspawn **sp;	/* kernels in flight and spares, at most max - ready - leased */
	size_t nsp, spalloc;
	double next_health;
	double spawn_after;	/* after a failed start: not before this (back-off) */
	double backoff;		/* the current back-off in seconds, 0 after a success */
	struct zygote *zygote;	/* local Python kernels are forked from it (zygote.h) */
	double zygote_after;	/* after a zygote failed: no new one before this */
	double zygote_backoff;
	int stop;
	struct pool_engine *eng;	/* --engine: where kernels are placed (none: the one) */
	size_t neng;
};

/* One line of the daemon's log. */
void pool_log(struct daemon *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* A path inside the pool, `a` or `a/b` (caller frees). */
char *pool_path(const struct daemon *d, const char *a, const char *b);
/* Kill a kernel and remove its entry and channel (a container on a thread); dropped once reaped. */
void pool_destroy(struct daemon *d, struct pkernel *k, const char *why);
/* Bring the table in line with ready/ and leased/: new leases, releases, dead clients. */
void pool_sync_leases(struct daemon *d);
/* The number of clients waiting for a kernel (want/), forgetting those that died. */
int pool_waiting_clients(struct daemon *d);
/* Remove what a previous daemon left: ready entries, dead leases, unowned channels. */
void pool_clean_leftovers(struct daemon *d);
/* Write daemon.json: who serves the pool and how. */
void pool_write_info(struct daemon *d);
/* Add a ready kernel to the table (its name copied); the entry, valid until the next add. */
struct pkernel *pool_add_kernel(struct daemon *d, const char *name, pid_t pid,
				struct backend *be);
/*
 * Wake the loop when a ready container stops: its wait connection joins the epoll set, one
 * shot at a time (re-armed while it is ready, so a leased one never keeps the loop busy).
 */
void pool_watch_container(struct daemon *d, struct pkernel *k);

/*
 * Start one kernel without waiting for it (keeping the zygote first): it joins the kernels in
 * flight and the loop's epoll set. 0, or -1 when it could not even start (logged; the caller
 * backs off).
 */
int pool_spawn_begin(struct daemon *d);
/*
 * Move every kernel in flight on as far as it goes without waiting: ready file, the warming
 * completion (cold kernels), the pre-import, then into ready/ and the table. Returns how many
 * failed (each logged and closed), and counts how many became ready in `*made`.
 */
int pool_spawn_poll(struct daemon *d, int *made);
/*
 * Containers: create one kernel's container ahead, not started (a spare: session_prepare);
 * pool_spawn_begin() starts a spare before it makes a new one. 0, or -1 (logged).
 */
int pool_spawn_prepare(struct daemon *d);
/* Kernels starting or warming (not the spares). */
size_t pool_spawn_in_flight(const struct daemon *d);
/* Kernels in flight and spares placed on engine `e`. */
int pool_spawn_on(const struct daemon *d, int e);
/* Spares: containers created ahead, not started. */
size_t pool_spawn_spares(const struct daemon *d);
/* Stop every kernel in flight and remove the spares (the daemon stops). */
void pool_spawn_abort_all(struct daemon *d);
/* Replace the zygote when it died, failed or has other pre-imports (pool_spawn_begin does). */
void pool_keep_zygote(struct daemon *d);

/*
 * pool_engines.c: the engines of a pool with several. init asks each what it has (its CPUs
 * and memory: the kernels it may hold); check asks again those taken out whose back-off is
 * over; pick is the engine with the most room (-1: none has any); failed takes one out
 * (a back-off of 2 s, doubling to 60 s); load is what it holds (kernels, in flight, spares);
 * json adds "engines" to daemon.json.
 */
void pool_engines_init(struct daemon *d);
void pool_engines_release(struct daemon *d);
void pool_engines_check(struct daemon *d);
int pool_engine_pick(const struct daemon *d);
void pool_engine_failed(struct daemon *d, int e, const char *why);
int pool_engine_load(const struct daemon *d, int e);
struct cJSON;
void pool_engines_json(const struct daemon *d, struct cJSON *info);

#endif
