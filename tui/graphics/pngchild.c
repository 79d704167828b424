/* A kernel's PNG decoded in a child under limits (pngchild.h); the parent trusts its answer
 * no more than the PNG. */
#include "pngchild.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "clock.h"
#include "pngdecode.h"
#include "process.h"

#if defined(__SANITIZE_ADDRESS__)
#define UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define UNDER_ASAN 1
#endif
#endif
#ifndef UNDER_ASAN
#define UNDER_ASAN 0
#endif

#define ANSWER_MAGIC 0x63627078u	/* "cbpx" */
#define WHY_MAX 160
#define CHILD_FILES 8			/* RLIMIT_NOFILE: stdio and the pipe, little more */

const struct pngchild_limits pngchild_default_limits = {
	.cpu_seconds = 4,
	.wall_ms = 8000,
	.memory = 640u << 20,		/* an 8192 x 8192 plot: 192 MiB of RGB, interlaced 256 more */
};

enum pngchild_fault pngchild_fault;

struct answer {
	uint32_t magic;
	int32_t ok;			/* 1: w x h x 3 bytes of pixels follow */
	int32_t w, h;
	char why[WHY_MAX];
};

/* The child's limits; `as` is the address space to allow (0 = none set). */
static void set_limits(const struct pngchild_limits *lim, size_t as)
{
	struct rlimit cpu = { (rlim_t)lim->cpu_seconds, (rlim_t)lim->cpu_seconds + 1 };
	struct rlimit zero = { 0, 0 }, files = { CHILD_FILES, CHILD_FILES };

	setrlimit(RLIMIT_CPU, &cpu);
	setrlimit(RLIMIT_FSIZE, &zero);
	setrlimit(RLIMIT_CORE, &zero);
	setrlimit(RLIMIT_NOFILE, &files);
	if (as) {
		struct rlimit r = { (rlim_t)as, (rlim_t)as };
		setrlimit(RLIMIT_AS, &r);
	}
}

/* What a test asked the child to do instead of decoding (pngchild_fault). */
static void fault(void)
{
	volatile unsigned long spin = 0;

	switch (pngchild_fault) {
	case PNGCHILD_FAULT_SPIN:
		for (;;)
			spin++;
	case PNGCHILD_FAULT_SLEEP:
		for (;;)
			pause();
	case PNGCHILD_FAULT_ABORT:
		abort();
	case PNGCHILD_FAULT_ALLOC:
		for (size_t i = 0; i < 4096; i++) {
			char *p = malloc(1u << 20);
			if (!p)
				_exit(3);
			memset(p, 1, 1u << 20);
		}
		break;
	default:
		break;
	}
}

/* The child: limits, decode, answer on `fd`, _exit (no atexit handler, no parent's stdio). */
static void child(int fd, const void *png, size_t len, int max_side,
		  const struct pngchild_limits *lim, size_t as)
{
	struct answer a = { ANSWER_MAGIC, 0, 0, 0, "" };
	struct strbuf why = STRBUF_INIT;
	unsigned char *rgb;
	int w = 0, h = 0;

	process_signals_for_child();
	signal(SIGINT, SIG_IGN);	/* Ctrl-C is the front end's to act on */
	signal(SIGQUIT, SIG_IGN);
	signal(SIGWINCH, SIG_DFL);
	signal(SIGXCPU, SIG_DFL);
	if (fd > 3)
		close_range(3, (unsigned)fd - 1, 0);
	close_range((unsigned)fd + 1, ~0u, 0);
	set_limits(lim, as);
	fault();
	rgb = pngdecode_rgb(png, len, max_side, &w, &h, &why);
	if (rgb) {
		a.ok = 1;
		a.w = pngchild_fault == PNGCHILD_FAULT_LIE ? w + 1 : w;
		a.h = h;
	} else {
		snprintf(a.why, sizeof(a.why), "%s", why.buf);
	}
	if (fsutil_write_all(fd, &a, sizeof(a)) < 0 ||
	    (rgb && fsutil_write_all(fd, rgb, (size_t)w * h * 3) < 0))
		_exit(1);
	_exit(0);
}

/* Read exactly `n` bytes before `deadline` (clock_now()); 0, -1 at the end, -2 at the deadline. */
static int read_by(int fd, void *buf, size_t n, double deadline)
{
	char *p = buf;

	while (n) {
		struct pollfd pfd = { fd, POLLIN, 0 };
		double left = deadline - clock_now();
		ssize_t got;
		int rc;

		if (left <= 0)
			return -2;
		rc = poll(&pfd, 1, (int)(left * 1000) + 1);
		if (rc < 0 && errno == EINTR)
			continue;
		if (rc < 0)
			return -1;
		if (rc == 0)
			continue;	/* the deadline is checked above */
		got = read(fd, p, n);
		if (got < 0 && errno == EINTR)
			continue;
		if (got <= 0)
			return -1;
		p += got;
		n -= (size_t)got;
	}
	return 0;
}

/* Kill the child (a no-op when it has exited) and reap it; its wait status. */
static int reap(pid_t pid)
{
	int status = 0;

	kill(pid, SIGKILL);
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	return status;
}

/* Say why a child that gave no full answer ended. */
static void ended(int status, int timed_out, const struct pngchild_limits *lim,
		  struct strbuf *why)
{
	if (timed_out) {
		strbuf_addf(why, "the decoder took longer than %d ms and was stopped", lim->wall_ms);
	} else if (WIFSIGNALED(status) && WTERMSIG(status) == SIGXCPU) {
		strbuf_addf(why, "the decoder used its %d s of CPU and was stopped", lim->cpu_seconds);
	} else if (WIFSIGNALED(status)) {
		strbuf_addf(why, "the decoder died of signal %d (%s)", WTERMSIG(status),
			    strsignal(WTERMSIG(status)));
	} else {
		strbuf_addf(why, "the decoder failed (exit %d)",
			    WIFEXITED(status) ? WEXITSTATUS(status) : -1);
	}
}

/* The address space the child may have: what this process maps now plus `extra`. */
static size_t address_space(size_t extra)
{
	unsigned long pages = 0;
	FILE *f;

	if (UNDER_ASAN)
		return 0;
	f = fopen("/proc/self/statm", "re");
	if (!f)
		return 0;
	if (fscanf(f, "%lu", &pages) != 1)
		pages = 0;
	fclose(f);
	return pages ? (size_t)pages * (size_t)sysconf(_SC_PAGESIZE) + extra : 0;
}

/* The size the PNG's IHDR declares (pngfile_check looked at it already); 0 when none. */
static void declared_size(const unsigned char *p, size_t len, long *w, long *h)
{
	*w = *h = 0;
	if (len >= 24 && !memcmp(p + 12, "IHDR", 4)) {
		*w = (long)p[16] << 24 | (long)p[17] << 16 | (long)p[18] << 8 | p[19];
		*h = (long)p[20] << 24 | (long)p[21] << 16 | (long)p[22] << 8 | p[23];
	}
}

unsigned char *pngchild_decode(const void *png, size_t len, int max_side,
			       const struct pngchild_limits *lim, int *w, int *h,
			       struct strbuf *why)
{
	struct answer a;
	unsigned char *rgb = NULL;
	double deadline;
	long dw, dh;
	size_t as;
	int fds[2], rc, status;
	char extra;
	pid_t pid;

	*w = *h = 0;
	if (!lim)
		lim = &pngchild_default_limits;
	as = address_space(lim->memory);
	if (pipe2(fds, O_CLOEXEC) < 0) {
		strbuf_addf(why, "no pipe for the decoder: %s", strerror(errno));
		return NULL;
	}
	deadline = clock_now() + lim->wall_ms / 1000.0;
	pid = fork();
	if (pid == 0) {
		close(fds[0]);
		child(fds[1], png, len, max_side, lim, as);
	}
	close(fds[1]);
	if (pid < 0) {
		strbuf_addf(why, "cannot start the decoder: %s", strerror(errno));
		close(fds[0]);
		return NULL;
	}
	rc = read_by(fds[0], &a, sizeof(a), deadline);
	if (rc < 0) {
		close(fds[0]);
		status = reap(pid);
		ended(status, rc == -2, lim, why);
		return NULL;
	}
	declared_size(png, len, &dw, &dh);
	if (a.magic != ANSWER_MAGIC || (a.ok != 0 && a.ok != 1) ||
	    (a.ok && (a.w < 1 || a.h < 1 || a.w > max_side || a.h > max_side ||
		      (dw && (a.w != dw || a.h != dh))))) {
		close(fds[0]);
		reap(pid);
		strbuf_addstr(why, "the decoder's answer is malformed");
		return NULL;
	}
	if (!a.ok) {
		close(fds[0]);
		reap(pid);
		a.why[WHY_MAX - 1] = '\0';
		for (char *c = a.why; *c; c++)
			if (*c < ' ' || *c > '~')
				*c = '?';
		strbuf_addstr(why, a.why[0] ? a.why : "the decoder gave no reason");
		return NULL;
	}
	rgb = xmalloc((size_t)a.w * a.h * 3);
	rc = read_by(fds[0], rgb, (size_t)a.w * a.h * 3, deadline);
	if (rc == 0 && read_by(fds[0], &extra, 1, deadline) != -1)
		rc = -3;	/* more than it said, or no end in time */
	close(fds[0]);
	status = reap(pid);
	if (rc < 0) {
		free(rgb);
		if (rc == -3)
			strbuf_addstr(why, "the decoder's answer is malformed");
		else
			ended(status, rc == -2, lim, why);
		return NULL;
	}
	*w = a.w;
	*h = a.h;
	return rgb;
}
