#ifndef CELLBOX_USAGE_H
#define CELLBOX_USAGE_H

/*
 * What a cell used: CPU time, peak memory and wall time, measured on the host side, never
 * taken from the kernel (which is hostile: its own numbers are what it says they are).
 *
 * A backend reads its kernel's counters (backend.h usage()) into a struct usage_sample: CPU
 * time so far, memory now, and the memory peak since the last reset. The session takes one
 * sample with a reset when a cell starts and one when it ends, and gives the difference in
 * the cell's done event as a struct usage (event.h). Where the counters come from:
 *
 *	backend		cpu				memory, peak (reset)
 *	local		/proc/P/stat utime+stime	/proc/P/stat rss, status VmHWM
 *			(+cutime+cstime) of the init	(clear_refs "5") of the runner;
 *			and the runner			the init (ours, idle) by its RSS
 *	docker, runsc	the container's cgroup:		memory.usage_in_bytes,
 *			cpuacct.usage (v1),		memory.max_usage_in_bytes (v1, "0");
 *			cpu.stat usage_usec (v2)	memory.current, memory.peak (v2: a
 *							write resets it, Linux 6.12 on)
 *
 * The cgroup's files are read on this machine (an engine elsewhere gives nothing: the fields
 * are then not measured). The engine's stats call says the same but costs 0.17 s a call under
 * runc and 0.87 s under runsc here, and on cgroup v1 its peak cannot be reset per cell.
 * Every number read is parsed with a cap (a file's first bytes, whole numbers in range).
 */

#include <cjson/cJSON.h>

/* A backend's counters at one moment; a member not read is USAGE_UNKNOWN. */
struct usage_sample {
	long long cpu_ns;	/* CPU time of the kernel's processes so far */
	long long memory;	/* bytes in use now */
	long long peak;		/* the most bytes in use since the last reset */
	double at;		/* clock_now() when read */
};

#define USAGE_UNKNOWN (-1LL)

/* What one cell used; a member not measured is negative. */
struct usage {
	double cpu_seconds;
	long long peak_memory_bytes;
	double wall_seconds;
};

/* A sample with nothing read. */
void usage_sample_clear(struct usage_sample *u);
/* A usage with nothing measured. */
void usage_clear(struct usage *u);

/*
 * The local kernel's processes as usage_read_procs() keeps them between samples: its init
 * and, when that is the init of a pid namespace of its own, its child the runner (found once
 * by a scan of /proc, kept while it stays the child), each with its /proc files open (a
 * sample then costs a pread each, not a path's walk).
 */
struct usage_proc {
	long pid;		/* 0: none */
	int stat_fd, status_fd, refs_fd;
};
struct usage_procs {
	struct usage_proc top, kid;
	int ns;			/* top is the init of a pid namespace; -1 not known yet */
};

void usage_procs_init(struct usage_procs *up);
void usage_procs_release(struct usage_procs *up);
/*
 * Read the counters of the local kernel whose (host) pid is `pid`. With `reset` the peaks are
 * reset after reading and the sample has no peak (it is the memory now); without, it has.
 * 0, or -1 when the process is gone.
 */
int usage_read_procs(struct usage_procs *up, long pid, int reset, struct usage_sample *u);

/* A container's cgroup files on this machine, open for its samples. */
struct usage_cgroup {
	int v2;			/* cgroup v2's files (else v1's memory and cpuacct) */
	int cpu_fd, mem_fd, peak_fd;	/* -1: not there */
};

void usage_cgroup_init(struct usage_cgroup *cg);
/*
 * Find and open the cgroup of container `id` (its full hex id) on this machine: 0, or -1 when
 * there is none here (an engine on another machine).
 */
int usage_cgroup_open(struct usage_cgroup *cg, const char *id);
void usage_cgroup_close(struct usage_cgroup *cg);
/* Read a container's cgroup counters, the peak reset after with `reset`. 0 or -1. */
int usage_read_cgroup(struct usage_cgroup *cg, int reset, struct usage_sample *u);

/* The usage of a cell from its samples at start and end (the end's peak: since the reset). */
void usage_between(const struct usage_sample *start, const struct usage_sample *end,
		   struct usage *out);

/*
 * The usage as JSON for every front end: {"cpu_seconds", "peak_memory_bytes",
 * "wall_seconds"}, a member not measured null. The caller deletes it.
 */
cJSON *usage_to_json(const struct usage *u);
/* Read it back (a named session's host made it): members of the wrong type are not measured. */
void usage_from_json(const cJSON *o, struct usage *u);
/* "1.23 s CPU, 300 MiB peak" (what was measured) into `buf`; "" when nothing was. */
void usage_format(const struct usage *u, char *buf, size_t size);
/* Bytes as the user reads them: "512 MiB", "1.5 GiB", "300 KiB". */
void usage_format_bytes(long long bytes, char *buf, size_t size);

#endif
