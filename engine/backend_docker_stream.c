/*
 * A docker backend's channel over a stream (stream.h, kernels/PROTOCOL.md): for an engine that
 * cannot see this host's files (a remote one, over tcp:// or ssh://) the channel's files live
 * in the sandbox, kept by the relay (kernels/relay/relay.c), and one attach connection carries
 * them. The relay travels first on that connection (the container's command reads it from
 * stdin into its /tmp and runs it); then the host part goes in as frames and the kernel part
 * comes back into the local channel, where the session reads it as ever.
 *
 * A thread of the backend owns the connection: it writes what the session queued (the outbox)
 * and feeds what arrives to the pump, so the session's loop is the same as for a shared
 * directory (inotify on the local kernel part wakes it). The session's thread only queues and
 * never blocks on the sandbox; the outbox is capped.
 */
#include "backend.h"
#include "backend_docker_int.h"
#include "docker.h"
#include "stream.h"
#include "stream_frame.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

extern const unsigned char relay_bin[];
extern const size_t relay_bin_len;

#define OUTBOX_MAX (256u << 20)
#define HOST_FILE_MAX (192u << 20)
#define STREAM_READ (256u << 10)
/* A ping every so often while the stream is quiet (the latency the status line shows). */
#define PING_MS 5000

struct docker_stream {
	int sock;		/* the attach connection, non-blocking */
	int poke[2];		/* session -> thread: the outbox grew, or stop */
	int host_fd;		/* the local channel's host/ */
	int kfd[4];		/* kernel/, results/, plots/, out/ of the local channel */
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t ended_cond;
	struct strbuf outbox;	/* under lock: bytes for the relay, from out_off */
	size_t out_off;
	int stop, ended, failed, full;	/* under lock */
	struct strbuf why;	/* under lock once ended: how the stream broke */
	struct stream_sync sync;	/* the session's thread's */
	struct stream_pump pump;	/* the thread's */
	struct docker *d;	/* for the thread's one call: kill the container */
	double rtt_ms;		/* under lock: the last ping's round trip, -1 before one */
	char *id;
};

int backend_docker_stream_wanted(const struct sandbox_opts *sb, const struct docker *d)
{
	const char *mode = sb && sb->channel && *sb->channel ? sb->channel : "auto";

	if (!strcmp(mode, "stream"))
		return 1;
	if (!strcmp(mode, "shared"))
		return 0;
	return strncmp(d->host, "unix://", 7) != 0;
}

/* The container's command: read the relay from stdin into /tmp, run it. */
void backend_docker_stream_cmd(cJSON *cmd, const struct kernel_spec *spec, const char *exec,
			       int group)
{
	char buf[256];

	cJSON_AddItemToArray(cmd, cJSON_CreateString("/bin/sh"));
	cJSON_AddItemToArray(cmd, cJSON_CreateString("-c"));
	snprintf(buf, sizeof(buf), "umask 077 && head -c %zu >/tmp/.cellbox-relay && "
		 "chmod 700 /tmp/.cellbox-relay && exec /tmp/.cellbox-relay \"$0\" \"$1\" \"$2\" "
		 "\"$3\"", relay_bin_len);
	cJSON_AddItemToArray(cmd, cJSON_CreateString(buf));
	cJSON_AddItemToArray(cmd, cJSON_CreateString(spec->channel_dir));
	cJSON_AddItemToArray(cmd, cJSON_CreateString(group ? "1" : "0"));
	cJSON_AddItemToArray(cmd, cJSON_CreateString(exec));
	cJSON_AddItemToArray(cmd, cJSON_CreateString(spec->runner));
}

/* Queue bytes for the relay; -1 when the outbox is over its cap (the sandbox does not read). */
static int queue(struct docker_stream *st, const struct strbuf *bytes)
{
	int rc = 0;

	pthread_mutex_lock(&st->lock);
	if (st->outbox.len - st->out_off + bytes->len > OUTBOX_MAX)
		rc = -1;
	else
		strbuf_add(&st->outbox, bytes->buf, bytes->len);
	pthread_mutex_unlock(&st->lock);
	if (rc == 0 && write(st->poke[1], "q", 1) < 0 && errno != EAGAIN)
		rc = -1;
	return rc;
}

/* The stream ended (the relay's EOF, a broken frame, a dead connection): say so, once. */
static void end_stream(struct docker_stream *st, const char *why)
{
	pthread_mutex_lock(&st->lock);
	if (!st->ended) {
		st->ended = 1;
		if (why) {
			st->failed = 1;
			strbuf_addstr(&st->why, why);
		}
	}
	pthread_cond_broadcast(&st->ended_cond);
	pthread_mutex_unlock(&st->lock);
}

/* Stop the container from the thread: a raw request on a connection of its own. */
static void kill_from_thread(struct docker_stream *st)
{
	struct strbuf err = STRBUF_INIT;
	char *path = xasprintf("/containers/%s/kill", st->id);
	int fd = docker_send_raw(st->d, "POST", path, &err);

	if (fd >= 0) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		char c;
		if (poll(&p, 1, 5000) > 0 && read(fd, &c, 1) < 0)
			c = 0;
		close(fd);
	}
	free(path);
	strbuf_release(&err);
}

/* Queue a ping whose offset is the time now in microseconds (the thread's). */
static void ping(struct docker_stream *st)
{
	struct strbuf f = STRBUF_INIT;

	stream_frame_add(&f, STREAM_PING, 0, "", (uint64_t)(clock_now() * 1e6), NULL, 0);
	pthread_mutex_lock(&st->lock);
	strbuf_add(&st->outbox, f.buf, f.len);
	pthread_mutex_unlock(&st->lock);
	strbuf_release(&f);
}

/* The thread: the outbox out, the relay's frames in, a ping when it is quiet. */
static void *pump_main(void *arg)
{
	struct docker_stream *st = arg;
	char *buf = xmalloc(STREAM_READ);
	uint64_t pong = 0;

	ping(st);
	for (;;) {
		struct pollfd p[2] = { { .fd = st->sock, .events = POLLIN },
				       { .fd = st->poke[0], .events = POLLIN } };
		int stop;

		pthread_mutex_lock(&st->lock);
		stop = st->stop;
		if (st->outbox.len > st->out_off)
			p[0].events |= POLLOUT;
		pthread_mutex_unlock(&st->lock);
		if (stop)
			break;
		{
			int n = poll(p, 2, PING_MS);
			if (n < 0 && errno != EINTR)
				break;
			if (n == 0) {
				ping(st);
				continue;
			}
		}
		if (p[1].revents) {
			char drain[64];
			while (read(st->poke[0], drain, sizeof(drain)) > 0)
				;
		}
		if (p[0].revents & POLLOUT) {
			pthread_mutex_lock(&st->lock);
			{
				ssize_t n = write(st->sock, st->outbox.buf + st->out_off,
						  st->outbox.len - st->out_off);
				if (n > 0)
					st->out_off += (size_t)n;
				if (st->out_off == st->outbox.len) {
					strbuf_reset(&st->outbox);
					st->out_off = 0;
				}
			}
			pthread_mutex_unlock(&st->lock);
		}
		if (p[0].revents & (POLLIN | POLLHUP | POLLERR)) {
			ssize_t n = read(st->sock, buf, STREAM_READ);
			struct strbuf err = STRBUF_INIT;

			if (n < 0 && (errno == EAGAIN || errno == EINTR))
				continue;
			if (n <= 0)
				break;
			int rc = stream_pump_feed(&st->pump, buf, (size_t)n, &err);

			if (rc == 0 && st->pump.pong != pong) {
				pong = st->pump.pong;
				pthread_mutex_lock(&st->lock);
				st->rtt_ms = (clock_now() * 1e6 - (double)pong) / 1e3;
				pthread_mutex_unlock(&st->lock);
			}
			if (rc < 0) {
				pthread_mutex_lock(&st->lock);
				st->full = st->pump.full;
				pthread_mutex_unlock(&st->lock);
				end_stream(st, err.len ? err.buf : "the relay broke the protocol");
				strbuf_release(&err);
				/*
				 * Read nothing more, but let the engine know at once: it holds the
				 * container (even its removal) until an attached reader takes its
				 * output or goes.
				 */
				shutdown(st->sock, SHUT_RDWR);
				kill_from_thread(st);
				break;
			}
		}
	}
	free(buf);
	end_stream(st, NULL);
	return NULL;
}

/* Open `rel` below directory `dfd` without following a link. */
static int open_dir(int dfd, const char *rel)
{
	return openat(dfd, rel, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
}

static void close_fds(struct docker_stream *st)
{
	for (int i = 0; i < 4; i++)
		if (st->kfd[i] >= 0)
			close(st->kfd[i]);
	if (st->host_fd >= 0)
		close(st->host_fd);
}

int backend_docker_stream_attach(struct backend_docker *db, struct strbuf *err)
{
	db->stream_fd = docker_attach(&db->d, db->id, 1, err);
	return db->stream_fd < 0 ? -1 : 0;
}

int backend_docker_stream_begin(struct backend_docker *db, const char *channel_dir, int adopted,
				struct strbuf *err)
{
	static const char *const kdirs[] = { "kernel", "kernel/results", "kernel/plots",
					     "kernel/out" };
	struct docker_stream *st = xcalloc(1, sizeof(*st));
	struct strbuf first = STRBUF_INIT;
	int dfd = open(channel_dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

	st->sock = db->stream_fd;
	db->stream_fd = -1;
	st->poke[0] = st->poke[1] = -1;
	st->host_fd = dfd >= 0 ? open_dir(dfd, "host") : -1;
	for (int i = 0; i < 4; i++)
		st->kfd[i] = dfd >= 0 ? open_dir(dfd, kdirs[i]) : -1;
	if (dfd >= 0)
		close(dfd);
	stream_pump_init(&st->pump, st->kfd[0], st->kfd[1], st->kfd[2], st->kfd[3], 1);
	pthread_mutex_init(&st->lock, NULL);
	pthread_cond_init(&st->ended_cond, NULL);
	strbuf_init(&st->outbox, 0);
	strbuf_init(&st->why, 0);
	stream_sync_init(&st->sync);
	st->d = &db->d;
	st->rtt_ms = -1;
	st->id = xstrdup(db->id);
	db->st = st;
	if (st->sock < 0 || st->host_fd < 0 || st->kfd[0] < 0 || st->kfd[1] < 0 ||
	    st->kfd[2] < 0 || st->kfd[3] < 0 || pipe2(st->poke, O_CLOEXEC | O_NONBLOCK) < 0) {
		strbuf_addf(err, "cannot open the channel %s for its stream", channel_dir);
		goto fail;
	}
	fcntl(st->sock, F_SETFL, fcntl(st->sock, F_GETFL) | O_NONBLOCK);
	/*
	 * The relay itself, then the host part (the runner), then the word to start; or, to a
	 * relay that runs (adopted), hello: it sends the kernel part again.
	 */
	if (!adopted)
		strbuf_add(&first, relay_bin, relay_bin_len);
	else
		stream_frame_add(&first, STREAM_HELLO, 0, "", 0, NULL, 0);
	if (stream_sync_scan(&st->sync, st->host_fd, HOST_FILE_MAX, &first, err) < 0)
		goto fail;
	if (!adopted)
		stream_frame_add(&first, STREAM_START, 0, "", 0, NULL, 0);
	if (queue(st, &first) < 0) {
		strbuf_addstr(err, "cannot queue the relay");
		goto fail;
	}
	strbuf_release(&first);
	if (pthread_create(&st->thread, NULL, pump_main, st) != 0) {
		strbuf_addstr(err, "cannot start the stream's thread");
		goto fail;
	}
	db->stream_thread = 1;
	return 0;
fail:
	strbuf_release(&first);
	backend_docker_stream_end(db);
	return -1;
}

double backend_docker_stream_latency(struct backend_docker *db)
{
	double ms;

	if (!db->st)
		return -1;
	pthread_mutex_lock(&db->st->lock);
	ms = db->st->rtt_ms;
	pthread_mutex_unlock(&db->st->lock);
	return ms;
}

void backend_docker_stream_wake(struct backend_docker *db)
{
	struct docker_stream *st = db->st;
	struct strbuf out = STRBUF_INIT, err = STRBUF_INIT;
	int frames;

	if (!st)
		return;
	frames = stream_sync_scan(&st->sync, st->host_fd, HOST_FILE_MAX, &out, &err);
	if (frames == 0)
		stream_frame_add(&out, STREAM_WAKE, 0, "", 0, NULL, 0);
	if (frames < 0 || queue(st, &out) < 0) {
		end_stream(st, frames < 0 ? err.buf : "more than 256 MB wait for the sandbox: it "
			   "does not read its channel");
		shutdown(st->sock, SHUT_RDWR);
		kill_from_thread(st);
	}
	strbuf_release(&out);
	strbuf_release(&err);
}

int backend_docker_stream_settle(struct backend_docker *db, double seconds, struct strbuf *why)
{
	struct docker_stream *st = db->st;
	struct timespec until;
	int failed;

	if (!st)
		return 0;
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += (time_t)seconds;
	pthread_mutex_lock(&st->lock);
	while (!st->ended && db->stream_thread)
		if (pthread_cond_timedwait(&st->ended_cond, &st->lock, &until) == ETIMEDOUT)
			break;
	failed = st->full ? 2 : st->failed;
	if (failed == 2 && why)
		strbuf_addf(why, "channel quota exceeded: %s; the kernel was stopped", st->why.buf);
	else if (failed && why)
		strbuf_addf(why, "the kernel's channel broke: %s", st->why.buf);
	pthread_mutex_unlock(&st->lock);
	return failed;
}

void backend_docker_stream_end(struct backend_docker *db)
{
	struct docker_stream *st = db->st;

	if (db->stream_fd >= 0)
		close(db->stream_fd);
	db->stream_fd = -1;
	if (!st)
		return;
	if (db->stream_thread) {
		pthread_mutex_lock(&st->lock);
		st->stop = 1;
		pthread_mutex_unlock(&st->lock);
		if (st->poke[1] >= 0 && write(st->poke[1], "s", 1) < 0)
			shutdown(st->sock, SHUT_RDWR);
		pthread_join(st->thread, NULL);
		db->stream_thread = 0;
	}
	stream_pump_release(&st->pump);
	if (st->sock >= 0)
		close(st->sock);
	for (int i = 0; i < 2; i++)
		if (st->poke[i] >= 0)
			close(st->poke[i]);
	close_fds(st);
	pthread_mutex_destroy(&st->lock);
	pthread_cond_destroy(&st->ended_cond);
	strbuf_release(&st->outbox);
	strbuf_release(&st->why);
	stream_sync_release(&st->sync);
	free(st->id);
	free(st);
	db->st = NULL;
}
