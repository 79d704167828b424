/*
 * How a session gets its kernel: allocated (and freed), its kernel started (prepared, launched,
 * awaited), adopted or pooled, and the policy's import hook sent (see session_int.h).
 */
#include "session.h"
#include "session_int.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "backend.h"
#include "kernel.h"
#include "numconv.h"
#include "protocol.h"	/* generated from the runner: CELLBOX_PROTOCOL, CELLBOX_KERNEL_IMAGE */
#include "wall.h"

#define LOG_TAIL 2048
#define DEFAULT_QUOTA (1ull << 30)
#define DEFAULT_OUTPUT_LIMIT (2ull << 30)

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
		strbuf_addf(err, "\n--- kernel log (%s/log) ---\n%s", s->ch.kernel_dir, tail);
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
	session_tidy(s);
	session_drop_spare(s);	/* its results file goes with the kernel part */
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
	spec->host_dir = s->ch.host_dir;
	spec->kernel_dir = s->ch.kernel_dir;
	spec->within = s->ch.within;
	spec->runner = s->runner_path;
	spec->python = s->python;
	spec->memory = s->opts.memory;
	spec->cwd = s->cwd;
	spec->sandbox = &s->opts.sandbox;
	spec->kernel = s->kernel;
}

/* Make the channel ready for a kernel and let the backend prepare its start (prepare()). */
int session_prepare_kernel(struct session *s, struct strbuf *err)
{
	struct kernel_spec spec;

	if (prepare_channel(s, err) < 0)
		return -1;
	s->log_start = channel_log_size(&s->ch);
	free(s->runner_path);
	s->runner_path = xasprintf("%s/%s", s->ch.host_dir, s->kernel->runner);
	kernel_spec_of(s, &spec);
	s->be->signal_group = s->kernel->interrupt_group;	/* the container is made with it */
	if (s->be->ops->prepare && s->be->ops->prepare(s->be, &spec, err) < 0)
		return -1;
	s->prepared = 1;
	return 0;
}

/* Start the runner (prepared first unless it is); session_kernel_ready() awaits its ready file. */
int session_launch_kernel(struct session *s, struct strbuf *err)
{
	struct kernel_spec spec;
	int exit_fd;

	session_set_state(s, SESSION_STARTING, NULL);
	s->hand_back = 0;	/* a kernel of our own from now on: we end it */
	if (!s->prepared && session_prepare_kernel(s, err) < 0)
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
	s->start_deadline = clock_now() + s->opts.startup_timeout;
	return 0;
}

/*
 * One look at a starting kernel: 1 when its ready file is there (and speaks our protocol),
 * 0 when it is still starting, -1 with `err` when it failed, died or ran out of time.
 */
int session_kernel_ready(struct session *s, struct strbuf *err)
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
	if (clock_now() >= s->start_deadline) {
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
	int rc = session_launch_kernel(s, err);

	while (rc == 0 && (rc = session_kernel_ready(s, err)) == 0) {
		struct epoll_event evs[4];
		double left = s->start_deadline - clock_now();

		if (left > 0.05 || s->ch.notify_fd < 0)
			left = s->ch.notify_fd < 0 ? POLL_INTERVAL : (left > 0.05 ? 0.05 : left);
		if (epoll_wait(s->epfd, evs, ARRAY_SIZE(evs), wait_ms(left)) < 0 &&
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

/* The local backend's interpreter of kernel `k`: its setting, else the kernel's default. */
static const char *interpreter_of(const struct kernel_def *k, const struct session_opts *o)
{
	const char *set = k->uses == KERNEL_USES_RSCRIPT ? o->rscript : o->python;

	return set && *set ? set : k->interpreter;
}

/* Allocate a session and the descriptors every session has. */
struct session *session_new(const struct session_opts *opts, struct strbuf *err)
{
	struct session *s = xcalloc(1, sizeof(*s));
	struct epoll_event ev = { .events = EPOLLIN };

	s->next_cmd.fd = -1;	/* (none made ahead yet) */
	s->opts = *opts;
	s->kernel = opts->kernel ? kernel_find(opts->kernel) : kernel_default();
	if (!s->kernel) {
		strbuf_addf(err, "there is no kernel '%s' (there are: ", opts->kernel);
		kernel_list(err, 1);
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
	if (s->kernel->local_only) {
		const struct backend_ops *ops = backend_find(opts->backend ? opts->backend :
							     BACKEND_DEFAULT, err);

		if (!ops || (ops->flags & BACKEND_IMAGES)) {
			if (ops)
				strbuf_addstr(err, "--existing reaches a kernel of this machine that "
					      "cellbox did not start: there is no sandbox, and only the "
					      "local backend can reach it");
			free(s);
			return NULL;
		}
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
		session_free(s, 0);
		return NULL;
	}
	ev.data.fd = s->timerfd;
	epoll_ctl(s->epfd, EPOLL_CTL_ADD, s->timerfd, &ev);
	return s;
}

/* Take over the kernel serving in `dir`: read its ready file, watch it, adopt its pid. */
int session_adopt_kernel(struct session *s, const char *dir, struct strbuf *err)
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
	handle = (struct kernel_handle){ .channel_dir = dir, .pid = (pid_t)pid,
					 .sandbox = &s->opts.sandbox };
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

/* Remove the channels dead processes left in `root`, once per process (as `cellbox gc`). */
static void sweep_channels(const char *root)
{
	static int swept;

	if (!swept++)
		channel_gc(root, NULL);
}

/* Lease a pooled kernel: 1 when the session has one, 0 to start our own, -1 on error. */
int session_open_pooled(struct session *s, const struct session_opts *opts, struct strbuf *err)
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
	else if (session_adopt_kernel(s, s->lease.channel_dir, err) < 0)
		rc = -1;
	else
		s->hand_back = (s->be->ops->flags & BACKEND_SLOW_KILL) != 0;
	strbuf_release(&why);
	return rc;
}

/* A backend and a fresh channel with the runner in it, watched: a kernel of our own to start. */
int session_new_channel(struct session *s, struct strbuf *err)
{
	const char *within = s->opts.within;
	int nested;

	s->opts.within = NULL;	/* borrowed: the channel keeps a copy of its own */
	s->be = within ? backend_new_within(s->backend_name, err) :
		backend_new(s->backend_name, err);
	if (!s->be)
		return -1;
	nested = within && (s->be->ops->flags & BACKEND_WITHIN);
	if ((nested ? channel_create_within(&s->ch, s->runtime_dir, within, err) :
	     channel_create(&s->ch, s->runtime_dir, err)) < 0)
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

/* Free what every session has, after the kernel was dealt with. */
void session_free(struct session *s, int remove_channel)
{
	session_tidy(s);
	session_drop_spare(s);
	s->state = SESSION_CLOSED;
	if (s->ch.dir)
		channel_release(&s->ch, remove_channel);
	if (s->epfd >= 0)
		close(s->epfd);
	if (s->timerfd >= 0)
		close(s->timerfd);
	cJSON_Delete(s->info);
	session_keep_release(s);
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
