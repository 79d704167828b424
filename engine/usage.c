/* What a cell used, read on the host side: see usage.h. */
#include "usage.h"
#include "clock.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util.h"

#define USAGE_MAX ((long long)1 << 62)	/* a counter past it is not believed */

void usage_sample_clear(struct usage_sample *u)
{
	u->cpu_ns = u->memory = u->peak = USAGE_UNKNOWN;
	u->at = 0;
}

void usage_clear(struct usage *u)
{
	u->cpu_seconds = -1;
	u->peak_memory_bytes = -1;
	u->wall_seconds = -1;
}

/* A whole number in [0, USAGE_MAX] at `p` (digits only); USAGE_UNKNOWN when it is not. */
static long long parse_count(const char *p, const char **end)
{
	long long v = 0;

	if (!isdigit((unsigned char)*p))
		return USAGE_UNKNOWN;
	while (isdigit((unsigned char)*p)) {
		if (v > USAGE_MAX / 10)
			return USAGE_UNKNOWN;
		v = v * 10 + (*p++ - '0');
	}
	if (end)
		*end = p;
	return v;
}

/* The number after "key" at a line's start in `text` (cpu.stat, /proc/P/status). */
static long long keyed_count(const char *text, const char *key)
{
	size_t klen = strlen(key);

	for (const char *p = text; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
		if (!strncmp(p, key, klen)) {
			p += klen;
			while (*p == ' ' || *p == '\t')
				p++;
			return parse_count(p, NULL);
		}
	return USAGE_UNKNOWN;
}

/* One process's counters: CPU (its own and its reaped children's), RSS, peak RSS, ppid. */
struct proc_counts {
	long long cpu_ticks, rss_kb, hwm_kb;
	long ppid;
};

/* Read at most size - 1 bytes of the open /proc file `fd` from its start, terminated. */
static ssize_t pread_small(int fd, char *buf, size_t size)
{
	ssize_t n, got = 0;

	while ((size_t)got < size - 1) {
		n = pread(fd, buf + got, size - 1 - (size_t)got, got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -1;	/* ESRCH: the process is gone */
		if (n == 0)
			break;
		got += n;
	}
	buf[got] = 0;
	return got;
}

/*
 * Read a process's stat (after the name, which may hold anything: from the last ')'), and
 * with `peak` its status for VmHWM. 0 or -1.
 */
static int proc_read(const struct usage_proc *pp, int peak, struct proc_counts *pc)
{
	static long page_kb;
	char buf[4096];
	const char *p;
	long long f[25];

	if (!page_kb)
		page_kb = sysconf(_SC_PAGESIZE) > 0 ? sysconf(_SC_PAGESIZE) / 1024 : 4;
	if (pp->stat_fd < 0 || pread_small(pp->stat_fd, buf, sizeof(buf)) <= 0 ||
	    !(p = strrchr(buf, ')')))
		return -1;
	/* Fields 3 (state) .. 24 (rss, in pages) follow the name. */
	p++;
	for (int i = 3; i <= 24; i++) {
		while (*p == ' ')
			p++;
		if (i == 3) {
			if (!*p)
				return -1;
			p++;
			continue;
		}
		if (*p == '-')	/* tpgid (8), priority, nice may be negative: not ones we use */
			p++;
		f[i] = parse_count(p, &p);
		if (f[i] < 0)
			return -1;
	}
	pc->ppid = (long)f[4];
	pc->cpu_ticks = f[14] + f[15] + f[16] + f[17];
	pc->rss_kb = f[24] < USAGE_MAX / 1024 / page_kb ? f[24] * page_kb : USAGE_UNKNOWN;
	pc->hwm_kb = USAGE_UNKNOWN;
	if (peak && pp->status_fd >= 0 && pread_small(pp->status_fd, buf, sizeof(buf)) > 0) {
		const char *hwm = strstr(buf, "\nVmHWM:");

		pc->hwm_kb = hwm ? keyed_count(hwm + 1, "VmHWM:") : USAGE_UNKNOWN;
	}
	return 0;
}

/* Open process `pid`'s stat, status and clear_refs, kept for its samples. */
static void proc_open(struct usage_proc *pp, long pid)
{
	char path[64];

	pp->pid = pid;
	snprintf(path, sizeof(path), "/proc/%ld/stat", pid);
	pp->stat_fd = open(path, O_RDONLY | O_CLOEXEC);
	snprintf(path, sizeof(path), "/proc/%ld/status", pid);
	pp->status_fd = open(path, O_RDONLY | O_CLOEXEC);
	snprintf(path, sizeof(path), "/proc/%ld/clear_refs", pid);
	pp->refs_fd = open(path, O_WRONLY | O_CLOEXEC);
}

/* Close what proc_open() opened. */
static void proc_close(struct usage_proc *pp)
{
	if (pp->stat_fd >= 0)
		close(pp->stat_fd);
	if (pp->status_fd >= 0)
		close(pp->status_fd);
	if (pp->refs_fd >= 0)
		close(pp->refs_fd);
	pp->pid = 0;
	pp->stat_fd = pp->status_fd = pp->refs_fd = -1;
}

/* Reset the process's peak RSS to its RSS now. */
static void proc_reset(const struct usage_proc *pp)
{
	if (pp->refs_fd >= 0 && write(pp->refs_fd, "5", 1) < 0) {
		/* a reset that did not take: the peak is since the last one */
	}
}

/* Whether `pid` is in another pid namespace than ours (then it is its kernel's init). */
static int own_pid_ns(long pid)
{
	char path[64], ours[64], theirs[64];
	ssize_t a, b;

	snprintf(path, sizeof(path), "/proc/%ld/ns/pid", pid);
	a = readlink("/proc/self/ns/pid", ours, sizeof(ours) - 1);
	b = readlink(path, theirs, sizeof(theirs) - 1);
	if (a <= 0 || b <= 0)
		return 0;
	return a != b || memcmp(ours, theirs, (size_t)a);
}

/* The first child of `pid` (a scan of /proc: once per kernel); 0 when it has none. */
static long find_child(long pid)
{
	DIR *d = opendir("/proc");
	struct dirent *e;
	long found = 0;

	if (!d)
		return 0;
	while (!found && (e = readdir(d))) {
		struct usage_proc pp;
		struct proc_counts pc;
		char *end;
		long p = strtol(e->d_name, &end, 10);

		if (p <= 0 || *end || p == pid)
			continue;
		proc_open(&pp, p);
		if (proc_read(&pp, 0, &pc) == 0 && pc.ppid == pid)
			found = p;
		proc_close(&pp);
	}
	closedir(d);
	return found;
}

void usage_procs_init(struct usage_procs *up)
{
	up->top.pid = up->kid.pid = 0;
	up->top.stat_fd = up->top.status_fd = up->top.refs_fd = -1;
	up->kid.stat_fd = up->kid.status_fd = up->kid.refs_fd = -1;
	up->ns = -1;
}

void usage_procs_release(struct usage_procs *up)
{
	proc_close(&up->top);
	proc_close(&up->kid);
	up->ns = -1;
}

int usage_read_procs(struct usage_procs *up, long pid, int reset, struct usage_sample *u)
{
	struct proc_counts top, kid = { 0, 0, 0, 0 };
	long tick = sysconf(_SC_CLK_TCK);
	int peak = !reset, init;

	usage_sample_clear(u);
	u->at = clock_now();
	if (pid <= 0)
		return -1;
	if (up->top.pid != pid) {
		usage_procs_release(up);
		proc_open(&up->top, pid);
		up->ns = own_pid_ns(pid);
	}
	/*
	 * Over a runner, top is cellbox's own init (it only waits and passes signals): its memory
	 * does not grow, so its RSS stands for its peak (a status read and a reset less a cell).
	 */
	init = up->ns > 0 && up->kid.pid;
	if (proc_read(&up->top, peak && !init, &top) < 0) {
		usage_procs_release(up);
		return -1;
	}
	/* The init's child, the runner: kept while it stays the child (pids are reused). */
	if (up->kid.pid && (proc_read(&up->kid, peak, &kid) < 0 || kid.ppid != pid)) {
		proc_close(&up->kid);
		kid = (struct proc_counts){ 0, 0, 0, 0 };
	}
	if (!up->kid.pid && up->ns) {
		long child = find_child(pid);

		if (child > 0) {
			proc_open(&up->kid, child);
			if (proc_read(&up->kid, peak, &kid) < 0 || kid.ppid != pid) {
				proc_close(&up->kid);
				kid = (struct proc_counts){ 0, 0, 0, 0 };
			}
		}
	}
	if (tick <= 0)
		tick = 100;
	u->cpu_ns = (top.cpu_ticks + kid.cpu_ticks) * (1000000000LL / tick);
	if (top.rss_kb >= 0 && kid.rss_kb >= 0)
		u->memory = (top.rss_kb + kid.rss_kb) * 1024;
	if (init)
		top.hwm_kb = top.rss_kb;
	if (peak && top.hwm_kb >= 0 && kid.hwm_kb >= 0)
		u->peak = (top.hwm_kb + kid.hwm_kb) * 1024;
	if (reset) {
		if (!init)
			proc_reset(&up->top);
		proc_reset(&up->kid);
	}
	return 0;
}

/* Whether `id` is a container id as dockerd gives it (hex only: safe in a path). */
static int hex_id(const char *id)
{
	size_t n = strlen(id);

	if (n < 12 || n > 64)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!isxdigit((unsigned char)id[i]))
			return 0;
	return 1;
}

/* Where a container's cgroup may be: `before` ID `after`. */
struct cg_place {
	const char *before, *after;
};

/* The first place of `places` that is there for `id`; NULL when none. */
static char *first_dir(const struct cg_place *places, size_t n, const char *id)
{
	for (size_t i = 0; i < n; i++) {
		char *path = xasprintf("%s%s%s", places[i].before, id, places[i].after);

		if (access(path, R_OK) == 0)
			return path;
		free(path);
	}
	return NULL;
}

void usage_cgroup_init(struct usage_cgroup *cg)
{
	cg->v2 = 0;
	cg->cpu_fd = cg->mem_fd = cg->peak_fd = -1;
}

void usage_cgroup_close(struct usage_cgroup *cg)
{
	if (cg->cpu_fd >= 0)
		close(cg->cpu_fd);
	if (cg->mem_fd >= 0)
		close(cg->mem_fd);
	if (cg->peak_fd >= 0)
		close(cg->peak_fd);
	usage_cgroup_init(cg);
}

/* Open `dir`/`name` (read, or read and write for a peak to reset); -1 when it is not there. */
static int open_in(const char *dir, const char *name, int flags)
{
	char *path = xasprintf("%s/%s", dir, name);
	int fd = open(path, flags | O_CLOEXEC | O_NOFOLLOW);

	if (fd < 0 && flags == O_RDWR)
		fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);	/* no reset, the peak still */
	free(path);
	return fd;
}

int usage_cgroup_open(struct usage_cgroup *cg, const char *id)
{
	static const struct cg_place mem1[] = {
		{ "/sys/fs/cgroup/memory/docker/", "" },
		{ "/sys/fs/cgroup/memory/system.slice/docker-", ".scope" },
	};
	static const struct cg_place cpu1[] = {
		{ "/sys/fs/cgroup/cpuacct/docker/", "" },
		{ "/sys/fs/cgroup/cpu,cpuacct/docker/", "" },
		{ "/sys/fs/cgroup/cpuacct/system.slice/docker-", ".scope" },
		{ "/sys/fs/cgroup/cpu,cpuacct/system.slice/docker-", ".scope" },
	};
	static const struct cg_place all2[] = {
		{ "/sys/fs/cgroup/docker/", "/memory.current" },
		{ "/sys/fs/cgroup/system.slice/docker-", ".scope/memory.current" },
	};
	char *mem, *cpu;

	usage_cgroup_close(cg);
	if (!id || !hex_id(id))
		return -1;
	mem = first_dir(mem1, ARRAY_SIZE(mem1), id);
	cpu = first_dir(cpu1, ARRAY_SIZE(cpu1), id);
	if (mem && cpu) {
		cg->cpu_fd = open_in(cpu, "cpuacct.usage", O_RDONLY);
		cg->mem_fd = open_in(mem, "memory.usage_in_bytes", O_RDONLY);
		cg->peak_fd = open_in(mem, "memory.max_usage_in_bytes", O_RDWR);
	} else if ((free(mem), free(cpu), mem = first_dir(all2, ARRAY_SIZE(all2), id))) {
		cpu = NULL;
		*strrchr(mem, '/') = 0;
		cg->v2 = 1;
		cg->cpu_fd = open_in(mem, "cpu.stat", O_RDONLY);
		cg->mem_fd = open_in(mem, "memory.current", O_RDONLY);
		/* Linux 6.12 on: a write resets the peak this descriptor reads. */
		cg->peak_fd = open_in(mem, "memory.peak", O_RDWR);
	} else {
		mem = cpu = NULL;
	}
	free(mem);
	free(cpu);
	if (cg->cpu_fd < 0 && cg->mem_fd < 0) {
		usage_cgroup_close(cg);
		return -1;
	}
	return 0;
}

/* The whole number an open file holds from its start ("123\n"); USAGE_UNKNOWN if not one. */
static long long pread_count(int fd)
{
	char buf[64];

	if (fd < 0 || pread_small(fd, buf, sizeof(buf)) <= 0)
		return USAGE_UNKNOWN;
	return parse_count(buf, NULL);
}

int usage_read_cgroup(struct usage_cgroup *cg, int reset, struct usage_sample *u)
{
	char buf[1024];

	usage_sample_clear(u);
	u->at = clock_now();
	if (cg->v2) {
		if (cg->cpu_fd >= 0 && pread_small(cg->cpu_fd, buf, sizeof(buf)) > 0) {
			long long us = keyed_count(buf, "usage_usec");

			u->cpu_ns = us >= 0 && us < USAGE_MAX / 1000 ? us * 1000 : USAGE_UNKNOWN;
		}
	} else {
		u->cpu_ns = pread_count(cg->cpu_fd);
	}
	u->memory = pread_count(cg->mem_fd);
	u->peak = pread_count(cg->peak_fd);
	/* v1: "0" sets max_usage to the usage now; v2 (6.12 on): any write, for this fd. */
	if (reset && cg->peak_fd >= 0 && write(cg->peak_fd, "0", 1) < 0) {
		/* no reset: the peak is since the last one (v2 before 6.12: the cgroup's life) */
	}
	return u->cpu_ns < 0 && u->memory < 0 ? -1 : 0;
}

void usage_between(const struct usage_sample *start, const struct usage_sample *end,
		   struct usage *out)
{
	usage_clear(out);
	if (start->at > 0 && end->at >= start->at)
		out->wall_seconds = end->at - start->at;
	if (start->cpu_ns >= 0 && end->cpu_ns >= start->cpu_ns)
		out->cpu_seconds = (double)(end->cpu_ns - start->cpu_ns) / 1e9;
	/* The peak since the reset at the start; never below what was in use then or now. */
	if (end->peak >= 0) {
		long long peak = end->peak;

		if (start->memory > peak)
			peak = start->memory;
		if (end->memory > peak)
			peak = end->memory;
		out->peak_memory_bytes = peak;
	}
}

cJSON *usage_to_json(const struct usage *u)
{
	cJSON *o = cJSON_CreateObject();

	if (u->cpu_seconds >= 0)
		cJSON_AddNumberToObject(o, "cpu_seconds", u->cpu_seconds);
	else
		cJSON_AddNullToObject(o, "cpu_seconds");
	if (u->peak_memory_bytes >= 0)
		cJSON_AddNumberToObject(o, "peak_memory_bytes", (double)u->peak_memory_bytes);
	else
		cJSON_AddNullToObject(o, "peak_memory_bytes");
	if (u->wall_seconds >= 0)
		cJSON_AddNumberToObject(o, "wall_seconds", u->wall_seconds);
	else
		cJSON_AddNullToObject(o, "wall_seconds");
	return o;
}

/* A member that is a number in [0, max]; -1 when it is not. */
static double number_in(const cJSON *o, const char *key, double max)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);

	return cJSON_IsNumber(v) && v->valuedouble >= 0 && v->valuedouble <= max ?
	       v->valuedouble : -1;
}

void usage_from_json(const cJSON *o, struct usage *u)
{
	usage_clear(u);
	if (!cJSON_IsObject(o))
		return;
	u->cpu_seconds = number_in(o, "cpu_seconds", 1e12);
	u->peak_memory_bytes = (long long)number_in(o, "peak_memory_bytes", 1e18);
	u->wall_seconds = number_in(o, "wall_seconds", 1e12);
}

void usage_format_bytes(long long bytes, char *buf, size_t size)
{
	static const char *const units[] = { "B", "KiB", "MiB", "GiB", "TiB" };
	double v = (double)bytes;
	size_t i = 0;

	while (v >= 1024 && i + 1 < ARRAY_SIZE(units)) {
		v /= 1024;
		i++;
	}
	if (i == 0 || v >= 100 || v == (double)(long long)v)
		snprintf(buf, size, "%.0f %s", v, units[i]);
	else
		snprintf(buf, size, "%.1f %s", v, units[i]);
}

void usage_format(const struct usage *u, char *buf, size_t size)
{
	char mem[32];

	buf[0] = 0;
	if (u->cpu_seconds >= 0 && u->peak_memory_bytes >= 0) {
		usage_format_bytes(u->peak_memory_bytes, mem, sizeof(mem));
		snprintf(buf, size, "%.2f s CPU, %s peak", u->cpu_seconds, mem);
	} else if (u->cpu_seconds >= 0) {
		snprintf(buf, size, "%.2f s CPU", u->cpu_seconds);
	} else if (u->peak_memory_bytes >= 0) {
		usage_format_bytes(u->peak_memory_bytes, mem, sizeof(mem));
		snprintf(buf, size, "%s peak", mem);
	}
}
