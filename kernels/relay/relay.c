/*
 * cellbox-relay: the channel's far end inside a sandbox the host cannot share a directory
 * with (kernels/PROTOCOL.md, "The channel over a stream"). It keeps the channel's files in the
 * sandbox, at the host's path, and carries them over the container's stdin and stdout in the
 * frames of engine/stream_frame.h: host files in (commands, input answers, copy-ins, the
 * runner), the kernel part out (ready, log, results, plots, copy-outs) as it grows.
 *
 *	cellbox-relay CHANNEL GROUP EXEC RUNNER
 *
 * It runs the runner as `/bin/sh -c 'exec EXEC "$0" "$1"' RUNNER CHANNEL` once the host says
 * start, in a process group of its own, with a pipe as its stdin (a byte after each command:
 * CELLBOX_WAKE=stdin) and kernel/log as its stdout and stderr. The relay is the container's
 * init (pid 1): it reaps orphans, passes SIGINT, SIGTERM and SIGHUP on to the runner (to its
 * process group when GROUP is 1, as a terminal does for R), and when the runner ends it sends
 * what is left and exits as an init reports a death (128 + the signal). It is built static (no
 * library of the image's) and sent to the sandbox over the same stdin before the frames.
 *
 * Everything here is inside the sandbox: the kernel can read or replace the relay's files.
 * It cannot write into the stream itself: the relay is the only process holding the
 * container's stdout and makes itself not dumpable, so its /proc/1/fd is root's (a kernel
 * that could open it would only forge frames it could as well write as files). Nor can it
 * kill pid 1 from inside. The host trusts nothing the stream carries (engine/stream_pump.c).
 */
#define _GNU_SOURCE
#include "stream_frame.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/inotify.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

/*
 * Files tracked at once: the host's limit of plots/ and out/ and room for the rest (results/,
 * ready, log), so that the kernel meets the host's limit, which says so, and never this one
 * silently. Past this one the relay ends, loudly (new_slot).
 */
#define MAX_TRACKED (STREAM_MAX_ENTRIES + 1024)

/* The directories of the kernel part the relay watches, by their channel names. */
static const char *const kdirs[] = { "kernel", "kernel/results", "kernel/plots", "kernel/out" };
#define NKDIRS 4

static int kdir_fd[NKDIRS], kdir_wd[NKDIRS], host_fd = -1, notify_fd = -1;
static const char *channel;
static pid_t runner = -1;
static int runner_stdin = -1, group_signals, workdir = -1;

/* A kernel file sent to the host, and how much of it. */
static struct tracked {
	char name[STREAM_MAX_NAME + 1];
	uint64_t sent;
	int fd;			/* kept open while the name is not replaced (-1: none) */
	dev_t dev;
	ino_t ino;		/* the file sent: another one at the name is sent afresh */
} *tracked;
static size_t ntracked, nopen;
#define MAX_OPEN 64

/* The host file being written (W frames), into its temporary. */
static struct {
	int fd;
	char name[STREAM_MAX_NAME + 1], tmp[STREAM_MAX_NAME + 16];
} writing = { .fd = -1 };

static void say(const char *msg)
{
	size_t n = strlen(msg);
	if (write(2, msg, n) < 0 || write(2, "\n", 1) < 0)
		return;
}

static void die(const char *msg)
{
	say(msg);
	_exit(125);
}

/*
 * Send one frame to the host in one write (the engine passes each write on as a part of its
 * own: one frame, one part); a host that is gone ends the relay's use of stdout.
 */
static void send_frame(int type, const char *name, uint64_t offset, const void *data, size_t len)
{
	unsigned char head[STREAM_HEAD];
	struct stream_head h = { .type = (unsigned char)type, .name_len = (unsigned)strlen(name),
				 .data_len = (uint32_t)len, .offset = offset };
	struct iovec iov[3] = { { head, sizeof(head) }, { (void *)name, h.name_len },
				{ (void *)data, len } };
	struct iovec *v = iov;
	int nv = 3;

	stream_head_put(head, &h);
	while (nv) {
		ssize_t n = writev(1, v, nv);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			die("cellbox-relay: the host's stream is gone");
		while (nv && (size_t)n >= v->iov_len) {
			n -= (ssize_t)v->iov_len;
			v++;
			nv--;
		}
		if (nv) {
			v->iov_base = (char *)v->iov_base + n;
			v->iov_len -= (size_t)n;
		}
	}
}

static struct tracked *find(const char *name)
{
	for (size_t i = 0; i < ntracked; i++)
		if (!strcmp(tracked[i].name, name))
			return &tracked[i];
	return NULL;
}

static void forget_fd(struct tracked *t)
{
	if (t->fd >= 0) {
		close(t->fd);
		nopen--;
	}
	t->fd = -1;
}

/* Stop tracking `t`: its slot is free (slots never move: a caller may hold one). */
static void untrack(struct tracked *t)
{
	forget_fd(t);
	t->name[0] = '\0';
	t->sent = 0;
}

/* A free slot; the relay ends when MAX_TRACKED are in use (a file never goes unsent). */
static struct tracked *new_slot(void)
{
	for (size_t i = 0; i < ntracked; i++)
		if (!tracked[i].name[0])
			return &tracked[i];
	if (ntracked == MAX_TRACKED)
		die("cellbox-relay: the kernel made more files than the channel holds");
	return &tracked[ntracked++];
}

/*
 * Send what is new of kernel file `entry` in watched directory `d`, or that it went. With
 * `same`, the name still names the file it did (it was only written to): a descriptor kept
 * from before is used, the fast way for a results file that grows event by event.
 */
static void drain(void);

static void sync_file(int d, const char *entry, int same)
{
	/* (the top's and results/' own buffer: drain() below syncs plots/ and out/ meanwhile) */
	static char events_buf[STREAM_MAX_DATA], files_buf[STREAM_MAX_DATA];
	char *buf = d < 2 ? events_buf : files_buf;
	char name[STREAM_MAX_NAME + 1];
	struct tracked *t;
	struct stat st;
	int fd;

	if (d == 0 && strcmp(entry, "ready") && strcmp(entry, "log"))
		return;		/* the top of kernel/ holds only those two files */
	if ((size_t)snprintf(name, sizeof(name), "%s/%s", kdirs[d], entry) >= sizeof(name) ||
	    !stream_name_ok(name, strlen(name), "kernel/"))
		return;
	t = find(name);
	if (t && t->fd >= 0 && same) {
		fd = t->fd;
		if (fstat(fd, &st) < 0)
			return;
	} else {
		if (t)
			forget_fd(t);
		fd = openat(kdir_fd[d], entry, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
		if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
			if (fd >= 0)
				close(fd);
			if (t) {
				send_frame(STREAM_REMOVED, name, 0, NULL, 0);
				untrack(t);
			}
			return;
		}
		if (!t) {
			t = new_slot();
			strcpy(t->name, name);
			t->sent = 0;
			t->fd = -1;
			t->dev = st.st_dev;
			t->ino = st.st_ino;
		}
		if (nopen < MAX_OPEN) {
			t->fd = fd;
			nopen++;
		}
	}
	if (t->dev != st.st_dev || t->ino != st.st_ino) {
		/* renamed over: none of what was sent is this file's */
		t->dev = st.st_dev;
		t->ino = st.st_ino;
		if (t->sent) {
			t->sent = 0;
			send_frame(STREAM_TRUNCATE, name, 0, NULL, 0);
		}
	}
	if ((uint64_t)st.st_size < t->sent) {
		t->sent = (uint64_t)st.st_size;
		send_frame(STREAM_TRUNCATE, name, t->sent, NULL, 0);
	}
	for (;;) {
		ssize_t n = pread(fd, buf, STREAM_MAX_DATA, (off_t)t->sent);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		/*
		 * Events (and ready, log) name files: a file written before an event line is sent
		 * before it. The line is read first; whatever it names was written earlier, so its
		 * inotify events are queued by now: drain() sends those files, then the line goes.
		 */
		if (d < 2)
			drain();
		send_frame(STREAM_APPEND, name, t->sent, buf, (size_t)n);
		t->sent += (uint64_t)n;
	}
	if (fd != t->fd)
		close(fd);
}

/*
 * Send everything of the kernel part that changed (after a lost inotify event, at the end):
 * plots/ and out/ before results/ and the top, so that a file arrives before an event that
 * names it, as it does event by event.
 */
static void sync_all(void)
{
	static const int order[NKDIRS] = { 2, 3, 1, 0 };

	for (int i = 0; i < NKDIRS; i++) {
		int d = order[i];
		int fd = openat(kdir_fd[d], ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		DIR *dir = fd >= 0 ? fdopendir(fd) : NULL;
		struct dirent *e;

		if (!dir) {
			if (fd >= 0)
				close(fd);
			continue;
		}
		while ((e = readdir(dir)))
			if (e->d_name[0] != '.')
				sync_file(d, e->d_name, 0);
		closedir(dir);
	}
	/* What is tracked and no longer there. */
	for (size_t i = 0; i < ntracked; i++) {
		const char *slash = strrchr(tracked[i].name, '/');
		int d = 0;
		struct stat st;

		if (!slash)
			continue;	/* a free slot */
		for (int k = 0; k < NKDIRS; k++)
			if ((size_t)(slash - tracked[i].name) == strlen(kdirs[k]) &&
			    !strncmp(tracked[i].name, kdirs[k], strlen(kdirs[k])))
				d = k;
		if (fstatat(kdir_fd[d], slash + 1, &st, AT_SYMLINK_NOFOLLOW) == 0)
			continue;
		send_frame(STREAM_REMOVED, tracked[i].name, 0, NULL, 0);
		untrack(&tracked[i]);
	}
}

/*
 * The kernel files the inotify queue named in results/ and at the top, not sent yet: sent after
 * everything of plots/ and out/ queued before them (sync_file, drain).
 */
static struct pending {
	int d, same;
	char name[NAME_MAX + 1];
} pending[1024];
static size_t npending;
static int pending_lost;	/* more than fit: sync_all() instead */

/*
 * Read what the inotify queue holds: files of plots/ and out/ are sent at once, those of
 * results/ and the top are noted (pending). Never blocks.
 */
static void drain(void)
{
	char buf[16 * 1024] __attribute__((aligned(__alignof__(struct inotify_event))));

	for (;;) {
		ssize_t n = read(notify_fd, buf, sizeof(buf));
		if (n <= 0)
			return;
		for (char *p = buf; p < buf + n;) {
			struct inotify_event *ev = (struct inotify_event *)p;
			int same = !(ev->mask & (IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO));

			p += sizeof(*ev) + ev->len;
			if (ev->mask & IN_Q_OVERFLOW) {
				pending_lost = 1;
				continue;
			}
			for (int d = 0; d < NKDIRS; d++) {
				if (ev->wd != kdir_wd[d] || !ev->len || ev->name[0] == '.')
					continue;
				if (d >= 2) {
					sync_file(d, ev->name, same);
					continue;
				}
				{
					size_t k;
					for (k = 0; k < npending; k++)
						if (pending[k].d == d &&
						    !strcmp(pending[k].name, ev->name))
							break;
					if (k < npending) {
						pending[k].same &= same;
					} else if (npending == sizeof(pending) / sizeof(pending[0])) {
						pending_lost = 1;
					} else {
						pending[npending].d = d;
						pending[npending].same = same;
						snprintf(pending[npending].name, sizeof(pending[0].name),
							 "%s", ev->name);
						npending++;
					}
				}
			}
		}
	}
}

/* Send what the inotify queue names, files before the events naming them. */
static void read_notify(void)
{
	drain();
	while (npending || pending_lost) {
		struct pending one;

		if (pending_lost) {
			pending_lost = 0;
			npending = 0;
			sync_all();
			continue;
		}
		one = pending[0];
		memmove(pending, pending + 1, --npending * sizeof(pending[0]));
		sync_file(one.d, one.name, one.same);
	}
}

static void wake_runner(void)
{
	if (runner_stdin >= 0 && write(runner_stdin, "w", 1) < 0)
		return;		/* a full pipe already says so */
}

/* Start the runner (the S frame). */
static void start_runner(const char *exec, const char *path)
{
	int p[2], log;
	char *cmd;

	if (runner > 0)
		return;
	if (pipe2(p, O_CLOEXEC) < 0)
		die("cellbox-relay: pipe failed");
	log = openat(kdir_fd[0], "log", O_WRONLY | O_APPEND | O_NOFOLLOW | O_CLOEXEC);
	if (asprintf(&cmd, "exec %s \"$0\" \"$1\"", exec) < 0)
		die("cellbox-relay: out of memory");
	runner = fork();
	if (runner < 0)
		die("cellbox-relay: fork failed");
	if (runner == 0) {
		sigset_t none;

		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		setpgid(0, 0);
		if (workdir >= 0 && fchdir(workdir) < 0)
			_exit(126);	/* the container's working directory, not the channel */
		dup2(p[0], 0);
		if (log >= 0) {
			dup2(log, 1);
			dup2(log, 2);
		}
		execl("/bin/sh", "sh", "-c", cmd, path, channel, (char *)NULL);
		_exit(127);
	}
	free(cmd);
	close(p[0]);
	if (log >= 0)
		close(log);
	setpgid(runner, runner);	/* (both sides: no signal may find it in ours) */
	runner_stdin = p[1];
	fcntl(runner_stdin, F_SETFL, O_NONBLOCK);
}

/* The host part's directories, opened once (make_channel). */
static const char *const hdirs[] = { "host", "host/commands", "host/files" };
static int hdir_fd[3] = { -1, -1, -1 };

/*
 * The parent directory's descriptor (kept open: not to be closed) and the last component of
 * host name `name`; -1 for a directory the host part does not have.
 */
static int host_parent(const char *name, char *dir, size_t size, const char **base)
{
	const char *slash = strrchr(name, '/');
	size_t n = (size_t)(slash - name);

	*base = slash + 1;
	if (n >= size)
		return -1;
	memcpy(dir, name, n);
	dir[n] = '\0';
	for (int i = 0; i < 3; i++)
		if (!strcmp(dir, hdirs[i]))
			return hdir_fd[i];
	return -1;
}

/* W: `len` bytes of host file `name` at `offset`; put in place with STREAM_LAST. */
static void write_host(const char *name, uint64_t offset, int last, const char *data, size_t len)
{
	char dir[STREAM_MAX_NAME + 1];
	const char *base;
	int dfd;

	if (offset == 0) {
		if (writing.fd >= 0)
			close(writing.fd);
		writing.fd = -1;
		snprintf(writing.name, sizeof(writing.name), "%s", name);
		dfd = host_parent(name, dir, sizeof(dir), &base);
		if (dfd < 0)
			return;
		snprintf(writing.tmp, sizeof(writing.tmp), ".w-%s", base);
		writing.fd = openat(dfd, writing.tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW |
				    O_CLOEXEC, 0644);
	}
	if (writing.fd < 0 || strcmp(writing.name, name))
		return;
	if (len && pwrite(writing.fd, data, len, (off_t)offset) != (ssize_t)len)
		say("cellbox-relay: a host file could not be written");
	if (!last)
		return;
	close(writing.fd);
	writing.fd = -1;
	dfd = host_parent(name, dir, sizeof(dir), &base);
	if (dfd >= 0)
		renameat(dfd, writing.tmp, dfd, base);
	if (!strncmp(name, "host/commands/", 14))
		wake_runner();
}

/* D: remove host file `name` (a request's command takes its results file along). */
static void remove_host(const char *name)
{
	char dir[STREAM_MAX_NAME + 1], res[STREAM_MAX_NAME + 1];
	const char *base;
	int dfd = host_parent(name, dir, sizeof(dir), &base);
	size_t n = strlen(base);

	if (dfd < 0)
		return;
	unlinkat(dfd, base, 0);
	if (!strncmp(name, "host/commands/", 14) && n > 5 && !strcmp(base + n - 5, ".json") &&
	    (size_t)snprintf(res, sizeof(res), "%.*s.jsonl", (int)(n - 5), base) < sizeof(res))
		unlinkat(kdir_fd[1], res, 0);
}

/* Take the frames in `buf`; returns the bytes used (a partial frame stays). */
static size_t take_frames(char *buf, size_t len, const char *exec, const char *path)
{
	size_t used = 0;

	while (len - used >= STREAM_HEAD) {
		struct stream_head h;
		char name[STREAM_MAX_NAME + 1];
		const char *data;

		if (stream_head_get((unsigned char *)buf + used, &h) < 0)
			die("cellbox-relay: a frame over its caps from the host");
		if (len - used < STREAM_HEAD + h.name_len + h.data_len)
			break;
		memcpy(name, buf + used + STREAM_HEAD, h.name_len);
		name[h.name_len] = '\0';
		data = buf + used + STREAM_HEAD + h.name_len;
		used += STREAM_HEAD + h.name_len + h.data_len;
		switch (h.type) {
		case STREAM_WRITE:
			if (stream_name_ok(name, h.name_len, "host/"))
				write_host(name, h.offset, h.flags & STREAM_LAST, data, h.data_len);
			break;
		case STREAM_DELETE:
			if (stream_name_ok(name, h.name_len, "host/"))
				remove_host(name);
			break;
		case STREAM_WAKE:
			wake_runner();
			break;
		case STREAM_START:
			start_runner(exec, path);
			break;
		case STREAM_PING:
			send_frame(STREAM_PING, "", h.offset, NULL, 0);
			break;
		case STREAM_HELLO:
			/* a new host end (a pooled kernel adopted): everything again, from 0 */
			for (size_t i = 0; i < ntracked; i++)
				tracked[i].sent = 0;
			sync_all();
			break;
		}
	}
	return used;
}

/* Make the channel's directories and kernel files in the sandbox (a tmpfs at CHANNEL). */
static void make_channel(void)
{
	static const char *const dirs[] = { "host", "host/commands", "host/files", "kernel",
					    "kernel/results", "kernel/plots", "kernel/out" };

	workdir = open(".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (chdir(channel) < 0)
		die("cellbox-relay: no channel directory");
	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++)
		if (mkdir(dirs[i], 0755) < 0 && errno != EEXIST)
			die("cellbox-relay: cannot make the channel");
	for (int d = 0; d < NKDIRS; d++) {
		kdir_fd[d] = open(kdirs[d], O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (kdir_fd[d] < 0)
			die("cellbox-relay: cannot open the channel");
	}
	for (int i = 0; i < 2; i++) {
		int fd = openat(kdir_fd[0], i ? "log" : "ready", O_WRONLY | O_CREAT | O_NOFOLLOW |
				O_CLOEXEC, 0644);
		if (fd < 0)
			die("cellbox-relay: cannot make the kernel files");
		close(fd);
	}
	host_fd = open("host", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	for (int i = 0; i < 3; i++)
		hdir_fd[i] = open(hdirs[i], O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	notify_fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	if (notify_fd < 0 || host_fd < 0)
		die("cellbox-relay: no inotify");
	for (int d = 0; d < NKDIRS; d++)
		kdir_wd[d] = inotify_add_watch(notify_fd, kdirs[d], IN_MODIFY | IN_CLOSE_WRITE |
					       IN_CREATE | IN_DELETE | IN_MOVED_FROM |
					       IN_MOVED_TO | IN_ONLYDIR);
}

/* The runner ended: send the rest, then end as an init says how it ended. */
static void finish(int status)
{
	sync_all();
	if (WIFSIGNALED(status))
		_exit(128 + WTERMSIG(status));
	_exit(WIFEXITED(status) ? WEXITSTATUS(status) : 1);
}

int main(int argc, char **argv)
{
	static char in[2 * (STREAM_HEAD + STREAM_MAX_NAME + STREAM_MAX_DATA)];
	size_t have = 0;
	int stdin_open = 1, sfd;
	sigset_t set;

	if (argc != 5) {
		say("usage: cellbox-relay CHANNEL GROUP EXEC RUNNER");
		return 2;
	}
	channel = argv[1];
	prctl(PR_SET_DUMPABLE, 0);
	group_signals = !strcmp(argv[2], "1");
	tracked = calloc(MAX_TRACKED, sizeof(*tracked));
	if (!tracked)
		die("cellbox-relay: out of memory");
	sigemptyset(&set);
	sigaddset(&set, SIGCHLD);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGHUP);
	sigaddset(&set, SIGPIPE);
	sigprocmask(SIG_BLOCK, &set, NULL);
	sfd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
	make_channel();
	for (;;) {
		struct pollfd p[3] = { { .fd = stdin_open ? 0 : -1, .events = POLLIN },
				       { .fd = notify_fd, .events = POLLIN },
				       { .fd = sfd, .events = POLLIN } };

		if (poll(p, 3, -1) < 0 && errno != EINTR)
			die("cellbox-relay: poll failed");
		if (p[1].revents)
			read_notify();
		if (p[0].revents) {
			ssize_t n = read(0, in + have, sizeof(in) - have);
			if (n <= 0 && !(n < 0 && errno == EINTR)) {
				stdin_open = 0;	/* the host's end is gone: the files stay */
			} else if (n > 0) {
				size_t used;
				have += (size_t)n;
				used = take_frames(in, have, argv[3], argv[4]);
				memmove(in, in + used, have - used);
				have -= used;
			}
		}
		if (p[2].revents) {
			struct signalfd_siginfo si;
			while (read(sfd, &si, sizeof(si)) == sizeof(si)) {
				int status;
				pid_t pid;
				if (si.ssi_signo == SIGCHLD) {
					/* the runner, or orphans the init was given: one reaping of all,
					   so that the runner's end is never taken as an orphan's */
					while ((pid = waitpid(-1, &status, WNOHANG)) > 0)
						if (pid == runner)
							finish(status);
				} else if (si.ssi_signo != SIGPIPE && runner > 0) {
					kill(group_signals ? -runner : runner, (int)si.ssi_signo);
				}
			}
		}
	}
}
