#include "session.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/stat.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "backend.h"
#include "channel.h"
#include "kernel.h"
#include "request.h"
#include "protocol.h"	/* generated from the runner: CELLBOX_PROTOCOL, CELLBOX_KERNEL_IMAGE */
#include "wall.h"

#define POLL_INTERVAL 0.010		/* without inotify */
#define REAP_INTERVAL 0.100		/* without an exit descriptor */
#define LOG_TAIL 2048
#define READ_BUDGET (4u << 20)		/* bytes of events one dispatch reads; then it yields */
#define USAGE_INTERVAL 0.05		/* seconds between counts of a channel without a tmpfs */
#define DEFAULT_QUOTA (1ull << 30)
#define DEFAULT_OUTPUT_LIMIT (2ull << 30)


struct session {
	char *backend_name, *python, *runtime_dir, *cwd;
	const struct kernel_def *kernel;	/* which runner, started how */
	char *image;		/* the container image when none is configured */
	int wake;		/* the runner waits on the channel's `wake` FIFO */
	struct session_opts opts;
	struct channel ch;
	struct backend *be;
	int epfd, timerfd;
	enum session_state state;
	struct request *head, *tail;
	unsigned long next_id;
	cJSON *info;
	double kill_at;		/* grace deadline after SIGINT, 0 = none */
	struct pool_lease lease;	/* the pooled kernel's lease, entry NULL when none */
	char *pool_note;	/* why a pooled session got a fresh kernel */
	int hand_back;		/* the pool's container is still ours: its daemon may end it */
	sigset_t wait_mask;	/* for epoll_pwait in session_wait() */
	int has_wait_mask;
	off_t log_start;	/* size of `log` when the current kernel started */
	char *policy_error;	/* why the kernel did not take the policy's import hook */
	int policy_waiting;	/* session_open waits for the hook: it reports, not on_state */
	double usage_at;	/* when a channel without a tmpfs was last counted */
	int more;		/* a results file has more to read than one dispatch takes */
	int timer_off;		/* the timer is disarmed (and so has no expiry to read) */
	char *death;		/* how the last kernel ended, for session_revive() */
	double start_deadline;	/* a starting kernel's: ready by then */
	char *runner_path;	/* the runner in the channel's host part, as the backend runs it */
	int prepared;		/* prepare_kernel() ran: the next launch only starts */
};

/* Tell the front end about a state change. */
void session_set_state(struct session *s, enum session_state state, const char *msg);
/* Arm the timer for the nearest deadline (and the polling fallbacks). */
void session_arm_timer(struct session *s);
/*
 * Write a command file and queue the request. With `blocked` (the policy's error event, taken
 * over) nothing is written: the request is ended by the host at the next dispatch.
 */
unsigned long session_submit(struct session *s, cJSON *cmd, int is_execute, double timeout,
			     session_event_fn fn, void *data, cJSON *blocked, struct strbuf *err);
/* Start the runner and wait for its ready file. */
int session_start_kernel(struct session *s, struct strbuf *err);
/* Ask the kernel to refuse the policy's modules when imported; 0 when there are none. */
unsigned long session_send_policy(struct session *s, struct strbuf *err);
/* Put the policy's import hook in place and wait for it; -1 with `err` when it failed. */
int session_install_policy(struct session *s, struct strbuf *err);

/* Tell the front end about a state change. */
void session_set_state(struct session *s, enum session_state state, const char *msg)
{
	if (state == SESSION_DEAD && msg) {
		free(s->death);
		s->death = xstrdup(msg);
	}
	s->state = state;
	if (s->opts.on_state && (msg || state == SESSION_DEAD))
		s->opts.on_state(s, state, msg, s->opts.state_data);
}

/* Arm the timer for the nearest deadline (and the polling fallbacks). */
void session_arm_timer(struct session *s)
{
	struct itimerspec its = { 0 };
	double when = 0, now = now_monotonic(), interval = 0;

	if (s->head && s->head->deadline && !s->head->stop)
		when = s->head->deadline;
	if (s->head && s->head->blocked)
		when = now;	/* a cell the policy blocked ends at the next dispatch */
	if (s->kill_at && (!when || s->kill_at < when))
		when = s->kill_at;
	if (s->more)
		when = now;	/* a results file has more: read on at once */
	if (s->state == SESSION_STARTING && s->start_deadline &&
	    (!when || s->start_deadline < when))
		when = s->start_deadline;	/* session_started() says it timed out */
	if (s->ch.notify_fd < 0)
		interval = POLL_INTERVAL;
	else if (s->be && s->be->ops->exit_fd(s->be) < 0)
		interval = REAP_INTERVAL;
	if (interval && s->state != SESSION_DEAD) {
		its.it_interval.tv_nsec = (long)(interval * 1e9);
		if (!when || when > now + interval)
			when = now + interval;
	}
	if (when) {
		if (when <= now)
			when = now + 1e-6;
		its.it_value.tv_sec = (time_t)when;
		its.it_value.tv_nsec = (long)((when - (double)(time_t)when) * 1e9);
	} else if (s->timer_off) {
		return;		/* disarmed already: no call per dispatch and per cell for it */
	}
	s->timer_off = !when;
	timerfd_settime(s->timerfd, TFD_TIMER_ABSTIME, &its, NULL);
}

/* Append the tail of the runner's log since the current kernel started. */
static void add_log_tail(struct session *s, struct strbuf *err)
{
	struct strbuf log = STRBUF_INIT;
	const char *tail;

	channel_log_tail(&s->ch, s->log_start, LOG_TAIL + 512, &log);
	if (log.len) {
		tail = log.buf;
		if (log.len > LOG_TAIL && strchr(log.buf + log.len - LOG_TAIL, '\n'))
			tail = strchr(log.buf + log.len - LOG_TAIL, '\n') + 1;
		if (strstr(tail, "No module named 'IPython'"))
			strbuf_addf(err, "\n'%s' has no IPython (on Debian: apt-get install python3-ipython)",
				    s->python);
		if (strstr(tail, "there is no package called") && strstr(tail, "jsonlite"))
			strbuf_addf(err, "\n'%s' has no jsonlite (on Debian: apt-get install r-cran-jsonlite)",
				    s->python);
		strbuf_addf(err, "\n--- kernel log (%s/kernel/log) ---\n%s", s->ch.dir, tail);
		if (log.len && log.buf[log.len - 1] != '\n')
			strbuf_addch(err, '\n');
	}
	strbuf_release(&log);
}

/* Watch the channel's notification descriptor from the session's epoll set. */
static void watch_channel(struct session *s)
{
	struct epoll_event ev = { .events = EPOLLIN };

	if (s->ch.notify_fd >= 0) {
		ev.data.fd = s->ch.notify_fd;
		epoll_ctl(s->epfd, EPOLL_CTL_ADD, s->ch.notify_fd, &ev);
	}
}

/*
 * Make the channel ready for a kernel: remade when a kernel removed it, the runner in its
 * host part, and a fresh kernel part (a tmpfs of the quota for a confined kernel).
 */
static int prepare_channel(struct session *s, struct strbuf *err)
{
	if (s->ch.lost) {
		if (channel_recreate(&s->ch, err) < 0)
			return -1;
		watch_channel(s);
	}
	if (s->ch.lost ||
	    faccessat(s->ch.host_fd, s->kernel->runner, F_OK, AT_SYMLINK_NOFOLLOW) < 0) {
		if (channel_write(&s->ch, s->kernel->runner, s->kernel->code, *s->kernel->code_len,
				  err) < 0)
			return -1;
	}
	channel_clear_queue(&s->ch);
	return channel_reset_kernel(&s->ch, (s->be->ops->flags & BACKEND_SANDBOX) != 0, err);
}

/* The kernel's pid in its info as this machine sees it (its starter's note, when it left one). */
static void host_pid(struct session *s)
{
	long pid = backend_kernel_pid(s->ch.dir, NULL);

	if (pid > 0 && cJSON_IsObject(s->info))
		cJSON_ReplaceItemInObjectCaseSensitive(s->info, "pid", cJSON_CreateNumber((double)pid));
}

/* Whether the kernel's ready file asks to be woken through the `wake` FIFO. */
static void read_wake(struct session *s)
{
	const char *w = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(s->info, "wake"));

	s->wake = w && !strcmp(w, "fifo");
}

/* What the backend is given to start the kernel. */
static void kernel_spec_of(struct session *s, struct kernel_spec *spec)
{
	memset(spec, 0, sizeof(*spec));
	spec->channel_dir = s->ch.dir;
	spec->runner = s->runner_path;
	spec->python = s->python;
	spec->memory = s->opts.memory;
	spec->cwd = s->cwd;
	spec->sandbox = &s->opts.sandbox;
	spec->kernel = s->kernel;
}

/* Make the channel ready for a kernel and let the backend prepare its start (prepare()). */
static int prepare_kernel(struct session *s, struct strbuf *err)
{
	struct kernel_spec spec;

	if (prepare_channel(s, err) < 0)
		return -1;
	s->log_start = channel_log_size(&s->ch);
	free(s->runner_path);
	s->runner_path = xasprintf("%s/host/%s", s->ch.dir, s->kernel->runner);
	kernel_spec_of(s, &spec);
	s->be->signal_group = s->kernel->interrupt_group;	/* the container is made with it */
	if (s->be->ops->prepare && s->be->ops->prepare(s->be, &spec, err) < 0)
		return -1;
	s->prepared = 1;
	return 0;
}

/* Start the runner (prepared first unless it is); its ready file is awaited by kernel_ready(). */
static int launch_kernel(struct session *s, struct strbuf *err)
{
	struct kernel_spec spec;
	int exit_fd;

	session_set_state(s, SESSION_STARTING, NULL);
	s->hand_back = 0;	/* a kernel of our own from now on: we end it */
	if (!s->prepared && prepare_kernel(s, err) < 0)
		return -1;
	s->prepared = 0;
	kernel_spec_of(s, &spec);
	s->be->signal_group = s->kernel->interrupt_group;
	if (s->be->ops->start(s->be, &spec, err) < 0)
		return -1;
	exit_fd = s->be->ops->exit_fd(s->be);
	if (exit_fd >= 0) {
		struct epoll_event ev = { .events = EPOLLIN, .data.fd = exit_fd };
		epoll_ctl(s->epfd, EPOLL_CTL_ADD, exit_fd, &ev);
	}
	s->start_deadline = now_monotonic() + s->opts.startup_timeout;
	return 0;
}

/*
 * One look at a starting kernel: 1 when its ready file is there (and speaks our protocol),
 * 0 when it is still starting, -1 with `err` when it failed, died or ran out of time.
 */
static int kernel_ready(struct session *s, struct strbuf *err)
{
	struct strbuf buf = STRBUF_INIT;
	enum reason reason;
	const cJSON *proto;
	int got, rc = -1;

	channel_drain(&s->ch);
	got = channel_read_ready(&s->ch, &buf, err);
	if (got < 0) {
		s->be->ops->kill(s->be);
		goto out;
	}
	if (got > 0) {
		cJSON_Delete(s->info);
		s->info = cJSON_ParseWithLength(buf.buf, buf.len);
		read_wake(s);
		proto = cJSON_GetObjectItemCaseSensitive(s->info, "protocol");
		if (!cJSON_IsNumber(proto) || proto->valueint != CELLBOX_PROTOCOL) {
			if (cJSON_IsNumber(proto))
				strbuf_addf(err, "the kernel speaks protocol %d, this cellbox %d",
					    proto->valueint, CELLBOX_PROTOCOL);
			else
				strbuf_addf(err, "the kernel's ready file is unreadable: %.200s",
					    buf.buf);
			s->be->ops->kill(s->be);
			goto out;
		}
		host_pid(s);
		rc = 1;
		goto out;
	}
	strbuf_reset(&buf);
	if (s->be->ops->reap(s->be, &reason, &buf)) {
		strbuf_addf(err, "the kernel failed to start: %s", buf.buf);
		add_log_tail(s, err);
		goto out;
	}
	if (now_monotonic() >= s->start_deadline) {
		strbuf_addf(err, "the kernel did not become ready within %g s",
			    s->opts.startup_timeout);
		add_log_tail(s, err);
		s->be->ops->kill(s->be);
		goto out;
	}
	rc = 0;
out:
	strbuf_release(&buf);
	return rc;
}

/* Start the runner and wait for its ready file. */
int session_start_kernel(struct session *s, struct strbuf *err)
{
	int rc = launch_kernel(s, err);

	while (rc == 0 && (rc = kernel_ready(s, err)) == 0) {
		struct epoll_event evs[4];
		double left = s->start_deadline - now_monotonic();

		if (left > 0.05 || s->ch.notify_fd < 0)
			left = s->ch.notify_fd < 0 ? POLL_INTERVAL : (left > 0.05 ? 0.05 : left);
		if (epoll_wait(s->epfd, evs, ARRAY_SIZE(evs), (int)(left * 1000) + 1) < 0 &&
		    errno != EINTR) {
			strbuf_addf(err, "epoll_wait: %s", strerror(errno));
			s->be->ops->kill(s->be);
			rc = -1;
		}
	}
	if (rc > 0)
		session_set_state(s, SESSION_IDLE, NULL);
	else
		s->state = SESSION_DEAD;
	session_arm_timer(s);
	return rc > 0 ? 0 : -1;
}

int session_gc(const char *configured, struct strbuf *out)
{
	char *root = session_runtime_dir(configured);
	int n = channel_gc(root, out);

	free(root);
	return n;
}

/* The local backend's interpreter of kernel `k`: its setting, else the kernel's default. */
static const char *interpreter_of(const struct kernel_def *k, const struct session_opts *o)
{
	const char *set = k->uses == KERNEL_USES_RSCRIPT ? o->rscript : o->python;

	return set && *set ? set : k->interpreter;
}

/* Allocate a session and the descriptors every session has. */
static struct session *session_new(const struct session_opts *opts, struct strbuf *err)
{
	struct session *s = xcalloc(1, sizeof(*s));
	struct epoll_event ev = { .events = EPOLLIN };

	s->opts = *opts;
	s->kernel = opts->kernel ? kernel_find(opts->kernel) : kernel_default();
	if (!s->kernel) {
		strbuf_addf(err, "there is no kernel '%s' (there are: ", opts->kernel);
		kernel_list(err);
		strbuf_addch(err, ')');
		free(s);
		return NULL;
	}
	if (opts->policy && !s->kernel->policy) {
		/* Not enforcing it silently: its reader and its import hook are Python's. */
		strbuf_addf(err, "the security policy '%s' reads Python code: it cannot check the "
			    "%s kernel's cells (use --policy none with --kernel %s)",
			    opts->policy->name, s->kernel->name, s->kernel->name);
		free(s);
		return NULL;
	}
	s->image = xasprintf("%s:p%d", s->kernel->image, CELLBOX_PROTOCOL);
	if (!s->opts.sandbox.image || !*s->opts.sandbox.image)
		s->opts.sandbox.image = s->image;
	s->backend_name = xstrdup(opts->backend ? opts->backend : BACKEND_DEFAULT);
	s->python = xstrdup(interpreter_of(s->kernel, opts));
	s->runtime_dir = session_runtime_dir(opts->runtime_dir);
	s->cwd = opts->cwd ? xstrdup(opts->cwd) : NULL;
	s->opts.pool_dir = NULL;	/* not kept: the lease says where the kernel came from */
	if (s->opts.startup_timeout <= 0)
		s->opts.startup_timeout = 30;
	if (s->opts.interrupt_grace <= 0)
		s->opts.interrupt_grace = 2;
	if (!s->opts.channel_quota)
		s->opts.channel_quota = DEFAULT_QUOTA;
	if (!s->opts.output_limit)
		s->opts.output_limit = DEFAULT_OUTPUT_LIMIT;
	s->next_id = 1;
	memset(&s->ch, 0, sizeof(s->ch));
	s->ch.notify_fd = -1;
	s->epfd = epoll_create1(EPOLL_CLOEXEC);
	s->timerfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	if (s->epfd < 0 || s->timerfd < 0) {
		strbuf_addf(err, "cannot create descriptors: %s", strerror(errno));
		s->state = SESSION_DEAD;
		session_close(s);
		return NULL;
	}
	ev.data.fd = s->timerfd;
	epoll_ctl(s->epfd, EPOLL_CTL_ADD, s->timerfd, &ev);
	return s;
}

/* Take over the kernel serving in `dir`: read its ready file, watch it, adopt its pid. */
static int adopt_kernel(struct session *s, const char *dir, struct strbuf *err)
{
	struct strbuf buf = STRBUF_INIT;
	struct kernel_handle handle;
	enum reason reason;
	int rc = -1, exit_fd;
	long pid;

	if (channel_attach(&s->ch, dir, err) < 0)
		return -1;
	s->ch.quota = s->opts.channel_quota;
	watch_channel(s);
	if (channel_read_ready(&s->ch, &buf, err) <= 0) {
		if (!err->len)
			strbuf_addf(err, "no kernel serves '%s'", dir);
		goto out;
	}
	s->info = cJSON_ParseWithLength(buf.buf, buf.len);
	/* The pid as this machine sees it, from the host's note (the ready file is the kernel's). */
	pid = backend_kernel_pid(dir, s->info);
	host_pid(s);
	read_wake(s);
	if (pid <= 0) {
		strbuf_addf(err, "'%s' has no kernel pid", dir);
		goto out;
	}
	handle.channel_dir = dir;
	handle.pid = (pid_t)pid;
	handle.sandbox = &s->opts.sandbox;
	s->be = backend_adopt(s->backend_name, &handle, err);
	if (!s->be)
		goto out;
	s->be->signal_group = s->kernel->interrupt_group;
	exit_fd = s->be->ops->exit_fd(s->be);
	if (exit_fd >= 0) {
		struct epoll_event ev = { .events = EPOLLIN, .data.fd = exit_fd };
		epoll_ctl(s->epfd, EPOLL_CTL_ADD, exit_fd, &ev);
	}
	strbuf_reset(&buf);
	if (s->be->ops->reap(s->be, &reason, &buf)) {
		strbuf_addf(err, "the kernel in '%s' is gone", dir);
		goto out;
	}
	s->state = SESSION_IDLE;
	session_arm_timer(s);
	rc = 0;
out:
	strbuf_release(&buf);
	return rc;
}

struct session *session_attach(const struct session_opts *opts, const char *channel_dir,
			       struct strbuf *err)
{
	struct session *s = session_new(opts, err);

	if (s && adopt_kernel(s, channel_dir, err) < 0) {
		session_detach(s);
		return NULL;
	}
	return s;
}

/* Keep why the kernel refused the policy's import hook (after a restart: say so at once). */
static void on_policy_event(struct session *s, const struct session_event *ev, void *data)
{
	const char *e;

	(void)data;
	if (ev->type != SESSION_EV_ERROR)
		return;
	e = ev->error.evalue;
	free(s->policy_error);
	s->policy_error = xasprintf("the kernel did not take the policy's import hook: %s",
				    e ? e : "no reason given");
	if (!s->policy_waiting)
		session_set_state(s, s->state, s->policy_error);
}

/* Ask the kernel to refuse the policy's modules when imported; 0 when there are none. */
unsigned long session_send_policy(struct session *s, struct strbuf *err)
{
	cJSON *req = s->opts.policy ? policy_hook_request(s->opts.policy) : NULL;

	if (!req)
		return 0;
	cJSON_AddStringToObject(req, "kind", "policy");
	return session_submit(s, req, 0, 0, on_policy_event, NULL, NULL, err);
}

/* Put the policy's import hook in place and wait for it; -1 with `err` when it failed. */
int session_install_policy(struct session *s, struct strbuf *err)
{
	unsigned long id;

	free(s->policy_error);
	s->policy_error = NULL;
	id = session_send_policy(s, err);
	if (!id)
		return err->len ? -1 : 0;
	s->policy_waiting = 1;
	while (session_wait(s, id) < 0)
		;
	s->policy_waiting = 0;
	if (s->policy_error || s->state == SESSION_DEAD) {
		strbuf_addstr(err, s->policy_error ? s->policy_error : "the kernel died");
		return -1;
	}
	return 0;
}

/* Remove the channels dead processes left in `root`, once per process (as `cellbox gc`). */
static void sweep_channels(const char *root)
{
	static int swept;

	if (!swept++)
		channel_gc(root, NULL);
}

/* Lease a pooled kernel: 1 when the session has one, 0 to start our own, -1 on error. */
static int open_pooled(struct session *s, const struct session_opts *opts, struct strbuf *err)
{
	struct strbuf why = STRBUF_INIT;
	char *serves = pool_backend(opts->pool_dir);
	int rc;

	/* Adopt only a kernel of the backend and language asked for: say so before taking one. */
	if (serves && strcmp(serves, s->backend_name)) {
		strbuf_addf(err, "the pool '%s' serves %s kernels, not %s (use --backend %s)",
			    opts->pool_dir, serves, s->backend_name, serves);
		free(serves);
		return -1;
	}
	free(serves);
	serves = pool_kernel(opts->pool_dir);
	if (serves && strcmp(serves, s->kernel->name)) {
		strbuf_addf(err, "the pool '%s' serves %s kernels, not %s (use --kernel %s, or "
			    "another pool: --pool-name)", opts->pool_dir, serves, s->kernel->name,
			    serves);
		free(serves);
		return -1;
	}
	free(serves);
	rc = pool_lease(opts->pool_dir, opts->pool_strategy,
			opts->pool_timeout > 0 ? opts->pool_timeout : 30, &s->lease, &why);
	if (rc == 0)
		s->pool_note = strbuf_detach(&why, NULL);
	else if (rc < 0)
		strbuf_addstr(err, why.buf);
	else if (adopt_kernel(s, s->lease.channel_dir, err) < 0)
		rc = -1;
	else
		s->hand_back = (s->be->ops->flags & BACKEND_SLOW_KILL) != 0;
	strbuf_release(&why);
	return rc;
}

/* A backend and a fresh channel with the runner in it, watched: a kernel of our own to start. */
static int new_channel(struct session *s, struct strbuf *err)
{
	s->be = backend_new(s->backend_name, err);
	if (!s->be || channel_create(&s->ch, s->runtime_dir, err) < 0)
		return -1;
	sweep_channels(s->runtime_dir);
	s->ch.quota = s->opts.channel_quota;
	if (s->be->ops->channel_owner) {
		struct kernel_spec spec = { .channel_dir = s->ch.dir, .sandbox = &s->opts.sandbox };
		uid_t uid;
		gid_t gid;

		if (s->be->ops->channel_owner(s->be, &spec, &uid, &gid))
			channel_set_owner(&s->ch, uid, gid);
	}
	if (channel_write(&s->ch, s->kernel->runner, s->kernel->code, *s->kernel->code_len,
			  err) < 0)
		return -1;
	watch_channel(s);
	return 0;
}

struct session *session_open(const struct session_opts *opts, struct strbuf *err)
{
	struct session *s = session_new(opts, err);
	int pooled = 0;

	if (!s)
		return NULL;
	if (opts->pool_dir) {
		pooled = open_pooled(s, opts, err);
		if (pooled < 0)
			goto fail;
		if (pooled && session_install_policy(s, err) < 0)
			goto fail;
		if (pooled)
			return s;
	}
	if (new_channel(s, err) < 0 || session_start_kernel(s, err) < 0 ||
	    session_install_policy(s, err) < 0)
		goto fail;
	return s;
fail:
	s->state = SESSION_DEAD;
	session_close(s);
	return NULL;
}

struct session *session_prepare(const struct session_opts *opts, struct strbuf *err)
{
	struct session *s;

	if (opts->pool_dir || opts->policy) {
		strbuf_addstr(err, "session_prepare: no pool, no policy (session_open does those)");
		return NULL;
	}
	s = session_new(opts, err);
	if (!s)
		return NULL;
	if (new_channel(s, err) < 0 || prepare_kernel(s, err) < 0)
		goto fail;
	return s;
fail:
	s->state = SESSION_DEAD;
	session_close(s);
	return NULL;
}

int session_launch(struct session *s, struct strbuf *err)
{
	int rc = launch_kernel(s, err);

	if (rc < 0)
		s->state = SESSION_DEAD;
	session_arm_timer(s);
	return rc;
}

struct session *session_begin(const struct session_opts *opts, struct strbuf *err)
{
	struct session *s = session_prepare(opts, err);

	if (s && session_launch(s, err) < 0) {
		session_close(s);
		return NULL;
	}
	return s;
}

int session_started(struct session *s, struct strbuf *err)
{
	uint64_t ticks;
	int rc;

	if (s->state != SESSION_STARTING)
		return s->state == SESSION_DEAD || s->state == SESSION_CLOSED ? -1 : 1;
	if (!s->timer_off && read(s->timerfd, &ticks, sizeof(ticks)) < 0 && errno != EAGAIN)
		ticks = 0;
	rc = kernel_ready(s, err);
	if (rc > 0)
		session_set_state(s, SESSION_IDLE, NULL);
	else if (rc < 0)
		s->state = SESSION_DEAD;
	session_arm_timer(s);
	return rc;
}

const char *session_pool_note(const struct session *s)
{
	return s->pool_note;
}

int session_pooled(const struct session *s)
{
	return s->lease.entry != NULL;
}

/* Take the finished head off the queue; the next request starts its clock. */
static void pop_head(struct session *s)
{
	struct request *r = s->head;
	char *rel;

	s->head = r->next;
	if (!s->head)
		s->tail = NULL;
	else if (s->head->timeout)
		s->head->deadline = now_monotonic() + s->head->timeout;
	/* Its files go: the command and answers (ours), the results (by name: unfollowed). */
	rel = xasprintf("commands/%s.json", r->name);
	channel_unlink(&s->ch, rel);
	free(rel);
	for (int k = 1; k <= r->inputs; k++) {
		rel = xasprintf("commands/%s.%d.input", r->name, k);
		channel_unlink(&s->ch, rel);
		free(rel);
	}
	channel_results_remove(&s->ch, r->name);
	request_free(r);
	if (s->state == SESSION_BUSY && !s->head)
		s->state = SESSION_IDLE;
}

/* End every queued request with `reason` (the kernel went away). */
static void abort_all(struct session *s, enum reason reason, const char *ename,
		      const char *evalue, const char *detail)
{
	while (s->head) {
		request_abort(s, s->head, reason, ename, evalue, detail);
		pop_head(s);
	}
	s->kill_at = 0;
}

/* Read new events of the head request (and of the ones after it once it is done). */
static int read_events(struct session *s)
{
	struct request_reader rd = {
		.s = s, .ch = &s->ch, .be = s->be, .output_limit = s->opts.output_limit,
		.interrupt_grace = s->opts.interrupt_grace, .kill_at = &s->kill_at,
	};

	s->more = 0;
	while (s->head) {
		struct request *r = s->head;

		if (r->blocked) {
			s->kill_at = 0;
			request_end_blocked(s, r, s->opts.policy->name);
			rd.events += 2;
			pop_head(s);
			continue;
		}
		if (!request_read(&rd, r, READ_BUDGET)) {
			s->more = r->rd.more;
			break;
		}
		pop_head(s);
	}
	return rd.events;
}

/* The kernel is gone: finish what it left, say why, and mark the session dead. */
static void kernel_died(struct session *s, enum reason reason, const char *why)
{
	read_events(s);		/* what it wrote before it went */
	abort_all(s, reason, "KernelDied", why, why);
	channel_clear_queue(&s->ch);
	session_set_state(s, SESSION_DEAD, why);
}

/* Stop a kernel that broke the channel's rules (its quota, its channel) and end its cells. */
static void kernel_stopped(struct session *s, enum reason reason, const char *why)
{
	s->be->ops->kill(s->be);
	s->more = 0;
	abort_all(s, reason, "KernelStopped", why, why);
	channel_clear_queue(&s->ch);
	session_set_state(s, SESSION_DEAD, why);
}

/* Whether the kernel keeps more on the host than its quota allows (then it is stopped). */
static int over_quota(struct session *s)
{
	struct strbuf why = STRBUF_INIT;
	unsigned long long used;
	double now;

	if (!s->ch.quota || s->state == SESSION_DEAD)
		return 0;
	/*
	 * A tmpfs of ours is one fstatfs(); without one, the count walks the kernel part, so it is
	 * done at most every USAGE_INTERVAL, and for a confined kernel also after each done and
	 * before each command. A local kernel is not confined (it can fill the disk without its
	 * channel): its count is only the interval's, off the round trip.
	 */
	now = now_monotonic();
	if (!s->ch.mounted && now - s->usage_at < USAGE_INTERVAL &&
	    (s->state != SESSION_IDLE || !s->be || !(s->be->ops->flags & BACKEND_SANDBOX)))
		return 0;
	s->usage_at = now;
	used = channel_usage(&s->ch);
	if (used <= s->ch.quota)
		return 0;
	strbuf_addstr(&why, "channel quota exceeded: the kernel kept more than its quota of ");
	wall_describe_size(&why, s->ch.quota);
	strbuf_addstr(&why, " on the host (channel-quota); it was stopped");
	kernel_stopped(s, REASON_QUOTA_EXCEEDED, why.buf);
	strbuf_release(&why);
	return 1;
}

/*
 * Tell the runner that something is there for it (a command, an input answer, an interrupt):
 * the backend's wake-up (a container's stdin) or the host/wake FIFO of a runner that asked for
 * it; a runner that watches the channel with inotify needs neither.
 */
static void wake_kernel(struct session *s)
{
	if (s->be->ops->wake)
		s->be->ops->wake(s->be);
	if (s->wake)
		channel_wake(&s->ch);
}

/* SIGINT to the kernel, and a wake-up for a runner blocked waiting for one. */
static int interrupt_kernel(struct session *s)
{
	int rc = s->be->ops->signal(s->be, SIGINT);

	wake_kernel(s);
	return rc;
}

/* Kill an unresponsive kernel, end its requests and start a fresh one. */
static void kill_and_restart(struct session *s)
{
	struct request *r = s->head;
	struct strbuf msg = STRBUF_INIT, err = STRBUF_INIT;
	int timed_out = r && r->stop == REASON_TIMEOUT;

	s->be->ops->kill(s->be);
	s->kill_at = 0;
	if (r) {
		if (timed_out)
			strbuf_addf(&msg, "the cell timed out after %g s and ignored the interrupt for %g s: "
				    "the kernel was killed and restarted", r->timeout,
				    s->opts.interrupt_grace);
		else
			strbuf_addf(&msg, "the cell ignored the interrupt for %g s: "
				    "the kernel was killed and restarted", s->opts.interrupt_grace);
		request_abort(s, r, timed_out ? REASON_TIMEOUT_KILLED : REASON_INTERRUPT_KILLED,
			      timed_out ? "TimeoutError" : "KeyboardInterrupt", msg.buf,
			      timed_out ? "timeout: kernel restarted" : "interrupt: kernel restarted");
		pop_head(s);
	}
	abort_all(s, REASON_RESTARTED, "KernelRestarted", "the kernel was restarted", "restart");
	session_set_state(s, SESSION_STARTING, "restarting the kernel");
	if (session_start_kernel(s, &err) < 0)
		session_set_state(s, SESSION_DEAD, err.buf);
	else
		session_set_state(s, SESSION_IDLE, "kernel restarted");
	if (s->state == SESSION_IDLE && !session_send_policy(s, &err) && err.len)
		session_set_state(s, s->state, err.buf);	/* queued first: no cell runs before it */
	strbuf_release(&msg);
	strbuf_release(&err);
}

int session_dispatch(struct session *s)
{
	struct strbuf why = STRBUF_INIT;
	enum reason reason;
	uint64_t ticks;
	double now;
	int events;

	if (s->state == SESSION_CLOSED)
		return 0;
	channel_drain(&s->ch);
	/* (A disarmed timer has no expiry: timerfd_settime() cleared it.) */
	if (!s->timer_off && read(s->timerfd, &ticks, sizeof(ticks)) < 0 && errno != EAGAIN)
		ticks = 0;
	events = read_events(s);
	if (s->state != SESSION_DEAD && s->ch.lost) {
		kernel_stopped(s, REASON_CHANNEL_LOST,
			       "channel removed by the kernel: the kernel was stopped (a restart "
			       "makes the channel again)");
		goto out;
	}
	if (s->state != SESSION_DEAD && s->be->ops->reap(s->be, &reason, &why)) {
		kernel_died(s, reason, why.buf);
		goto out;
	}
	if (over_quota(s))
		goto out;
	now = now_monotonic();
	if (s->kill_at && now >= s->kill_at) {
		kill_and_restart(s);
	} else if (s->head && s->head->deadline && !s->head->stop &&
		   now >= s->head->deadline) {
		s->head->stop = REASON_TIMEOUT;
		interrupt_kernel(s);
		s->kill_at = now + s->opts.interrupt_grace;
	}
out:
	session_arm_timer(s);
	strbuf_release(&why);
	return events;
}

/*
 * Write a command file and queue the request. With `blocked` (the policy's error event, taken
 * over) nothing is written: the request is ended by the host at the next dispatch.
 */
unsigned long session_submit(struct session *s, cJSON *cmd, int is_execute, double timeout,
			     session_event_fn fn, void *data, cJSON *blocked, struct strbuf *err)
{
	struct request *r;
	char *text, *rel;
	int rc;

	if (s->state != SESSION_DEAD && s->state != SESSION_CLOSED)
		over_quota(s);		/* a kernel over its quota is stopped before it gets more */
	if (s->state == SESSION_DEAD || s->state == SESSION_CLOSED) {
		strbuf_addstr(err, "the kernel is not running (restart it)");
		cJSON_Delete(cmd);
		cJSON_Delete(blocked);
		return 0;
	}
	r = request_new(s->next_id++, is_execute, timeout, fn, data);
	r->blocked = blocked;
	if (!blocked && request_open(r, &s->ch, err) < 0) {
		cJSON_Delete(cmd);
		request_free(r);
		return 0;
	}
	cJSON_AddStringToObject(cmd, "id", r->name);
	text = cJSON_PrintUnformatted(cmd);
	cJSON_Delete(cmd);
	rel = xasprintf("commands/%s.json", r->name);
	rc = blocked ? 0 : channel_write(&s->ch, rel, text, strlen(text), err);
	free(rel);
	cJSON_free(text);
	if (rc < 0) {
		channel_results_remove(&s->ch, r->name);
		request_free(r);
		return 0;
	}
	if (!s->head) {
		s->head = r;
		if (timeout)
			r->deadline = now_monotonic() + timeout;
	} else {
		s->tail->next = r;
	}
	s->tail = r;
	if (s->state == SESSION_IDLE)
		s->state = SESSION_BUSY;
	if (!blocked)
		wake_kernel(s);
	session_arm_timer(s);
	return r->id;
}

unsigned long session_execute(struct session *s, const char *code, unsigned flags,
			      double timeout, session_event_fn fn, void *data, struct strbuf *err)
{
	cJSON *cmd = cJSON_CreateObject(), *blocked = NULL;

	/* The policy reads the cell before anything of it reaches the kernel. */
	if (s->opts.policy && !(flags & SESSION_EXEC_TRUSTED)) {
		struct policy_verdict v;

		policy_check(s->opts.policy, code, strlen(code), &v);
		if (v.blocked)
			blocked = policy_error_event(s->opts.policy, &v);
		policy_verdict_release(&v);
	}
	if (flags & SESSION_EXEC_TRUSTED)
		cJSON_AddBoolToObject(cmd, "trusted", 1);
	cJSON_AddStringToObject(cmd, "kind", "execute");
	cJSON_AddStringToObject(cmd, "code", code);
	cJSON_AddBoolToObject(cmd, "silent", !!(flags & SESSION_EXEC_SILENT));
	cJSON_AddBoolToObject(cmd, "allow_stdin", !!(flags & SESSION_EXEC_ALLOW_STDIN));
	cJSON_AddBoolToObject(cmd, "clear_plots", !!(flags & SESSION_EXEC_CLEAR_PLOTS));
	return session_submit(s, cmd, 1, timeout, fn, data, blocked, err);
}

unsigned long session_request(struct session *s, const char *kind, const cJSON *params,
			      session_event_fn fn, void *data, struct strbuf *err)
{
	cJSON *cmd = params ? cJSON_Duplicate(params, 1) : cJSON_CreateObject();

	cJSON_DeleteItemFromObjectCaseSensitive(cmd, "kind");
	cJSON_DeleteItemFromObjectCaseSensitive(cmd, "id");
	cJSON_AddStringToObject(cmd, "kind", kind);
	return session_submit(s, cmd, 0, 0, fn, data, NULL, err);
}

int session_input_reply(struct session *s, unsigned long id, const char *value,
			struct strbuf *err)
{
	struct request *r = s->head;
	cJSON *obj;
	char *text, *rel;
	int rc;

	while (r && r->id != id)
		r = r->next;
	if (!r || !r->inputs) {
		strbuf_addf(err, "request %lu asked for no input", id);
		return -1;
	}
	obj = cJSON_CreateObject();
	cJSON_AddStringToObject(obj, "value", value);
	text = cJSON_PrintUnformatted(obj);
	cJSON_Delete(obj);
	rel = xasprintf("commands/%s.%d.input", r->name, r->inputs);
	rc = channel_write(&s->ch, rel, text, strlen(text), err);
	free(rel);
	cJSON_free(text);
	if (rc == 0)
		wake_kernel(s);
	return rc;
}

int session_fd(const struct session *s)
{
	return s->epfd;
}

int session_pending(const struct session *s, unsigned long id)
{
	for (const struct request *r = s->head; r; r = r->next)
		if (r->id == id)
			return 1;
	return 0;
}

int session_wait(struct session *s, unsigned long id)
{
	while (session_pending(s, id)) {
		struct epoll_event evs[4];
		int n = epoll_pwait(s->epfd, evs, ARRAY_SIZE(evs), -1,
				    s->has_wait_mask ? &s->wait_mask : NULL);

		if (n < 0 && errno == EINTR)
			return -1;
		session_dispatch(s);
	}
	return 0;
}

void session_set_sigmask(struct session *s, const sigset_t *mask)
{
	s->has_wait_mask = mask != NULL;
	if (mask)
		s->wait_mask = *mask;
}

int session_interrupt(struct session *s)
{
	struct request *r = s->head;

	if (!r || s->state == SESSION_DEAD)
		return -1;
	if (r->blocked)
		return 0;	/* it never runs: it ends at the next dispatch */
	if (!r->stop)
		r->stop = REASON_INTERRUPTED;
	if (!s->kill_at)
		s->kill_at = now_monotonic() + s->opts.interrupt_grace;
	session_arm_timer(s);
	return interrupt_kernel(s);
}

int session_restart(struct session *s, struct strbuf *err)
{
	int rc;

	s->be->ops->kill(s->be);
	abort_all(s, REASON_RESTARTED, "KernelRestarted", "the kernel was restarted", "restart");
	rc = session_start_kernel(s, err);
	if (rc == 0)
		rc = session_install_policy(s, err);
	if (rc == 0)
		session_set_state(s, SESSION_IDLE, "kernel restarted");
	return rc;
}

enum session_state session_state(const struct session *s)
{
	return s->state;
}

const char *session_channel_dir(const struct session *s)
{
	return s->ch.dir;
}

const cJSON *session_kernel_info(const struct session *s)
{
	return s->info;
}

int session_write_file(struct session *s, const char *rel, const void *data, size_t len,
		       struct strbuf *err)
{
	return channel_write(&s->ch, rel, data, len, err);
}

void session_remove_file(struct session *s, const char *rel)
{
	channel_unlink(&s->ch, rel);
}

int session_take_file(struct session *s, const char *name, const char *dst, struct strbuf *err)
{
	return channel_take_out(&s->ch, name, dst, err);
}

int session_revive(struct session *s, struct strbuf *why, struct strbuf *err)
{
	if (s->state == SESSION_CLOSED)
		return -1;
	if (s->state != SESSION_DEAD)
		session_dispatch(s);	/* a death since the last request is seen now */
	if (s->state != SESSION_DEAD)
		return 0;
	strbuf_addstr(why, s->death ? s->death : "the kernel is not running");
	if (session_restart(s, err) < 0)
		return -1;
	return 1;
}

const char *session_backend_name(const struct session *s)
{
	return s->backend_name;
}

const struct kernel_def *session_kernel(const struct session *s)
{
	return s->kernel;
}

/* Ask the runner to exit and give it a moment before the backend kills it. */
static void shutdown_kernel(struct session *s)
{
	struct strbuf err = STRBUF_INIT;
	int exit_fd = s->be->ops->exit_fd(s->be);
	double deadline;

	if (s->state == SESSION_DEAD || s->state == SESSION_STARTING)
		goto out;
	abort_all(s, REASON_CLOSED, NULL, NULL, "session closed");
	if (!session_request(s, "shutdown", NULL, NULL, NULL, &err))
		goto out;
	deadline = now_monotonic() + 1.0;
	while (exit_fd >= 0) {
		struct epoll_event ev;
		double left = deadline - now_monotonic();
		int fd = epoll_create1(EPOLL_CLOEXEC), n;

		if (left <= 0 || fd < 0) {
			if (fd >= 0)
				close(fd);
			break;
		}
		ev.events = EPOLLIN;
		ev.data.fd = exit_fd;
		epoll_ctl(fd, EPOLL_CTL_ADD, exit_fd, &ev);
		n = epoll_wait(fd, &ev, 1, (int)(left * 1000) + 1);
		close(fd);
		if (n > 0)
			break;
	}
out:
	s->be->ops->kill(s->be);
	strbuf_release(&err);
}

/* Free what every session has, after the kernel was dealt with. */
static void session_free(struct session *s, int remove_channel)
{
	s->state = SESSION_CLOSED;
	if (s->ch.dir)
		channel_release(&s->ch, remove_channel);
	if (s->epfd >= 0)
		close(s->epfd);
	if (s->timerfd >= 0)
		close(s->timerfd);
	cJSON_Delete(s->info);
	free(s->backend_name);
	free(s->image);
	free(s->python);
	free(s->runtime_dir);
	free(s->cwd);
	free(s->pool_note);
	free(s->policy_error);
	free(s->death);
	free(s->runner_path);
	free(s);
}

void session_close(struct session *s)
{
	struct pool_lease lease;
	int daemon = 0;

	if (!s)
		return;
	lease = s->lease;
	if (lease.entry)
		daemon = pool_lease_daemon_alive(&lease);
	if (s->be) {
		/* A pooled kernel is never reused: no need to let it exit politely. */
		if (!s->lease.entry)
			shutdown_kernel(s);
		abort_all(s, REASON_CLOSED, NULL, NULL, "session closed");
		/*
		 * Stopping a container takes 100 ms or more: a pooled one goes back to its daemon,
		 * which removes every released kernel, off our path. Without a daemon we end it.
		 */
		if (s->hand_back && s->be->ops->detach && daemon)
			s->be->ops->detach(s->be);
		s->be->ops->free(s->be);
	}
	/*
	 * A released kernel's channel goes with it: its daemon removes the channel of every
	 * kernel it retires (a tree of some forty entries: 1-10 ms here), off our path.
	 */
	session_free(s, lease.entry ? !daemon : !s->opts.keep_channel);
	if (lease.entry)
		pool_lease_release(&lease);	/* last: the daemon may now count it gone */
}

void session_detach(struct session *s)
{
	if (!s)
		return;
	abort_all(s, REASON_CLOSED, NULL, NULL, "session detached");
	if (s->be) {
		if (s->be->ops->detach)
			s->be->ops->detach(s->be);
		s->be->ops->free(s->be);
	}
	session_free(s, 0);
}
