#include "session.h"

#include <errno.h>
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
#include "protocol.h"	/* generated from the runner: CELLBOX_PROTOCOL, CELLBOX_KERNEL_IMAGE */

#define MAX_EVENT_LINE (32u << 20)	/* a longer event line is dropped and reported */
#define POLL_INTERVAL 0.010		/* without inotify */
#define REAP_INTERVAL 0.100		/* without an exit descriptor */
#define LOG_TAIL 2048

struct request {
	struct request *next;
	unsigned long id;
	char name[24];
	int is_execute;
	double timeout;		/* seconds, 0 = none */
	double deadline;	/* monotonic; set when the request reaches the head */
	enum reason stop;	/* REASON_TIMEOUT or REASON_INTERRUPTED once SIGINT was sent;
				   REASON_OK (0) while not stopped */
	int done;
	int reader_open;
	struct event_reader rd;
	session_event_fn fn;
	void *data;
	cJSON *blocked;		/* the policy's error event: never sent, ended by the host */
};

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
};

/* Tell the front end about a state change. */
static void set_state(struct session *s, enum session_state state, const char *msg)
{
	s->state = state;
	if (s->opts.on_state && (msg || state == SESSION_DEAD))
		s->opts.on_state(s, state, msg, s->opts.state_data);
}

/* Arm the timer for the nearest deadline (and the polling fallbacks). */
static void arm_timer(struct session *s)
{
	struct itimerspec its = { 0 };
	double when = 0, now = now_monotonic(), interval = 0;

	if (s->head && s->head->deadline && !s->head->stop)
		when = s->head->deadline;
	if (s->head && s->head->blocked)
		when = now;	/* a cell the policy blocked ends at the next dispatch */
	if (s->kill_at && (!when || s->kill_at < when))
		when = s->kill_at;
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
	}
	timerfd_settime(s->timerfd, TFD_TIMER_ABSTIME, &its, NULL);
}

/* Append the tail of the runner's log since the current kernel started. */
static void add_log_tail(struct session *s, struct strbuf *err)
{
	struct strbuf log = STRBUF_INIT;
	char *path = channel_path(&s->ch, "log");
	const char *tail;

	if (strbuf_read_file(&log, path, 16u << 20) == 0 && log.len > (size_t)s->log_start) {
		tail = log.buf + s->log_start;
		if (log.len - (size_t)s->log_start > LOG_TAIL) {
			tail = log.buf + log.len - LOG_TAIL;
			tail = strchr(tail, '\n') ? strchr(tail, '\n') + 1 : tail;
		}
		if (strstr(tail, "No module named 'IPython'"))
			strbuf_addf(err, "\n'%s' has no IPython (on Debian: apt-get install python3-ipython)",
				    s->python);
		if (strstr(tail, "there is no package called") && strstr(tail, "jsonlite"))
			strbuf_addf(err, "\n'%s' has no jsonlite (on Debian: apt-get install r-cran-jsonlite)",
				    s->python);
		strbuf_addf(err, "\n--- kernel log (%s) ---\n%s", path, tail);
		if (log.len && log.buf[log.len - 1] != '\n')
			strbuf_addch(err, '\n');
	}
	strbuf_release(&log);
	free(path);
}

/* Whether the kernel's ready file asks to be woken through the `wake` FIFO. */
static void read_wake(struct session *s)
{
	const char *w = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(s->info, "wake"));

	s->wake = w && !strcmp(w, "fifo");
}

/* Start the runner and wait for its ready file. */
static int start_kernel(struct session *s, struct strbuf *err)
{
	struct kernel_spec spec = { 0 };
	char *runner = channel_path(&s->ch, s->kernel->runner);
	char *ready = channel_path(&s->ch, "ready");
	char *logp = channel_path(&s->ch, "log");
	struct strbuf buf = STRBUF_INIT;
	struct stat st;
	enum reason reason;
	double deadline;
	int rc = -1, exit_fd;

	set_state(s, SESSION_STARTING, NULL);
	s->hand_back = 0;	/* a kernel of our own from now on: we end it */
	unlink(ready);
	channel_clear_queue(&s->ch);
	s->log_start = stat(logp, &st) == 0 ? st.st_size : 0;
	spec.channel_dir = s->ch.dir;
	spec.runner = runner;
	spec.python = s->python;
	spec.memory = s->opts.memory;
	spec.cwd = s->cwd;
	spec.sandbox = &s->opts.sandbox;
	spec.kernel = s->kernel;
	s->be->signal_group = s->kernel->interrupt_group;
	if (s->be->ops->start(s->be, &spec, err) < 0)
		goto out;
	exit_fd = s->be->ops->exit_fd(s->be);
	if (exit_fd >= 0) {
		struct epoll_event ev = { .events = EPOLLIN, .data.fd = exit_fd };
		epoll_ctl(s->epfd, EPOLL_CTL_ADD, exit_fd, &ev);
	}

	deadline = now_monotonic() + s->opts.startup_timeout;
	for (;;) {
		struct epoll_event evs[4];
		double left;
		int n;

		strbuf_reset(&buf);
		if (strbuf_read_file(&buf, ready, 1u << 20) == 0) {
			const cJSON *proto;

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
			break;
		}
		strbuf_reset(&buf);
		if (s->be->ops->reap(s->be, &reason, &buf)) {
			strbuf_addf(err, "the kernel failed to start: %s", buf.buf);
			add_log_tail(s, err);
			goto out;
		}
		left = deadline - now_monotonic();
		if (left <= 0) {
			strbuf_addf(err, "the kernel did not become ready within %g s",
				    s->opts.startup_timeout);
			add_log_tail(s, err);
			s->be->ops->kill(s->be);
			goto out;
		}
		if (left > 0.05 || s->ch.notify_fd < 0)
			left = s->ch.notify_fd < 0 ? POLL_INTERVAL : (left > 0.05 ? 0.05 : left);
		n = epoll_wait(s->epfd, evs, ARRAY_SIZE(evs), (int)(left * 1000) + 1);
		if (n < 0 && errno != EINTR) {
			strbuf_addf(err, "epoll_wait: %s", strerror(errno));
			s->be->ops->kill(s->be);
			goto out;
		}
		channel_drain(&s->ch);
	}
	set_state(s, SESSION_IDLE, NULL);
	rc = 0;
out:
	if (rc < 0)
		s->state = SESSION_DEAD;
	arm_timer(s);
	strbuf_release(&buf);
	free(runner);
	free(ready);
	free(logp);
	return rc;
}

char *session_runtime_dir(const char *configured)
{
	const char *xdg = getenv("XDG_RUNTIME_DIR");
	struct stat st;

	if (configured)
		return xstrdup(configured);
	if (xdg && *xdg && stat(xdg, &st) == 0 && S_ISDIR(st.st_mode) && access(xdg, W_OK) == 0)
		return xasprintf("%s/cellbox", xdg);
	return xasprintf("/tmp/cellbox-%ld", (long)getuid());
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
	s->next_id = 1;
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

/* Watch the channel's notification descriptor from the session's epoll set. */
static void watch_channel(struct session *s)
{
	struct epoll_event ev = { .events = EPOLLIN };

	if (s->ch.notify_fd >= 0) {
		ev.data.fd = s->ch.notify_fd;
		epoll_ctl(s->epfd, EPOLL_CTL_ADD, s->ch.notify_fd, &ev);
	}
}

/* Take over the kernel serving in `dir`: read its ready file, watch it, adopt its pid. */
static int adopt_kernel(struct session *s, const char *dir, struct strbuf *err)
{
	struct strbuf buf = STRBUF_INIT;
	struct kernel_handle handle;
	const cJSON *pid;
	enum reason reason;
	char *ready;
	int rc = -1, exit_fd;

	if (channel_attach(&s->ch, dir, err) < 0)
		return -1;
	watch_channel(s);
	ready = channel_path(&s->ch, "ready");
	if (strbuf_read_file(&buf, ready, 1u << 20) < 0) {
		strbuf_addf(err, "no kernel serves '%s': %s", dir, strerror(errno));
		goto out;
	}
	s->info = cJSON_ParseWithLength(buf.buf, buf.len);
	read_wake(s);
	pid = cJSON_GetObjectItemCaseSensitive(s->info, "pid");
	if (!cJSON_IsNumber(pid) || pid->valueint <= 0) {
		strbuf_addf(err, "'%s' has no kernel pid", ready);
		goto out;
	}
	handle.channel_dir = dir;
	handle.pid = (pid_t)pid->valueint;
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
	if (s->be->ops->reap(s->be, &reason, &buf)) {
		strbuf_addf(err, "the kernel in '%s' is gone", dir);
		goto out;
	}
	s->state = SESSION_IDLE;
	arm_timer(s);
	rc = 0;
out:
	strbuf_release(&buf);
	free(ready);
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
		set_state(s, s->state, s->policy_error);
}

static unsigned long submit(struct session *s, cJSON *cmd, int is_execute, double timeout,
			    session_event_fn fn, void *data, cJSON *blocked, struct strbuf *err);

/* Ask the kernel to refuse the policy's modules when imported; 0 when there are none. */
static unsigned long send_policy(struct session *s, struct strbuf *err)
{
	cJSON *req = s->opts.policy ? policy_hook_request(s->opts.policy) : NULL;

	if (!req)
		return 0;
	cJSON_AddStringToObject(req, "kind", "policy");
	return submit(s, req, 0, 0, on_policy_event, NULL, NULL, err);
}

/* Put the policy's import hook in place and wait for it; -1 with `err` when it failed. */
static int install_policy(struct session *s, struct strbuf *err)
{
	unsigned long id;

	free(s->policy_error);
	s->policy_error = NULL;
	id = send_policy(s, err);
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
		if (pooled && install_policy(s, err) < 0)
			goto fail;
		if (pooled)
			return s;
	}
	s->be = backend_new(s->backend_name, err);
	if (!s->be)
		goto fail;
	if (channel_create(&s->ch, s->runtime_dir, err) < 0)
		goto fail;
	if (s->be->ops->channel_owner) {
		struct kernel_spec spec = { .channel_dir = s->ch.dir, .sandbox = &s->opts.sandbox };
		uid_t uid;
		gid_t gid;

		if (s->be->ops->channel_owner(s->be, &spec, &uid, &gid) &&
		    channel_set_owner(&s->ch, uid, gid, err) < 0)
			goto fail;
	}
	if (channel_write(&s->ch, s->kernel->runner, s->kernel->code, *s->kernel->code_len,
			  err) < 0)
		goto fail;
	watch_channel(s);
	if (start_kernel(s, err) < 0 || install_policy(s, err) < 0)
		goto fail;
	return s;
fail:
	s->state = SESSION_DEAD;
	session_close(s);
	return NULL;
}

const char *session_pool_note(const struct session *s)
{
	return s->pool_note;
}

int session_pooled(const struct session *s)
{
	return s->lease.entry != NULL;
}

/* Free one request. */
static void request_free(struct request *r)
{
	if (r->reader_open)
		event_reader_release(&r->rd);
	cJSON_Delete(r->blocked);
	free(r);
}

/* Deliver one event to the request's callback. */
static void deliver(struct session *s, struct request *r, struct session_event *ev)
{
	ev->id = r->id;
	if (r->fn)
		r->fn(s, ev, r->data);
}

/* Deliver the policy's error event of a blocked request (the request gives it up). */
static void deliver_blocked(struct session *s, struct request *r)
{
	struct event_store st = EVENT_STORE_INIT;
	struct session_event ev;

	if (event_decode_made(&st, r->blocked, r->id, &ev) == 0)
		deliver(s, r, &ev);
	r->blocked = NULL;
	event_store_release(&st);
}

/* The words of a stop the session made: "timeout", "interrupt". */
static const char *stop_detail(enum reason stop)
{
	return stop == REASON_TIMEOUT ? "timeout" : stop == REASON_INTERRUPTED ? "interrupt" : NULL;
}

/* End a request that the kernel will not finish: an error (for cells) and done. */
static void abort_request(struct session *s, struct request *r, enum reason reason,
			  const char *ename, const char *evalue, const char *detail)
{
	static const char *const no_lines[] = { NULL };
	struct session_event ev = { .type = SESSION_EV_ERROR };

	if (r->is_execute && ename && r->blocked) {
		deliver_blocked(s, r);	/* it was blocked: say so, not why the kernel went */
	} else if (r->is_execute && ename) {
		ev.error.ename = ename;
		ev.error.evalue = evalue;
		ev.error.traceback = no_lines;
		deliver(s, r, &ev);
	}
	memset(&ev, 0, sizeof(ev));
	ev.type = SESSION_EV_DONE;
	ev.done.status = SESSION_STATUS_ABORTED;
	ev.done.execution_count = -1;
	ev.done.reason = reason;
	ev.done.detail = detail;
	r->done = 1;
	deliver(s, r, &ev);
}

/* Take the finished head off the queue; the next request starts its clock. */
static void pop_head(struct session *s)
{
	struct request *r = s->head;
	char *path;

	s->head = r->next;
	if (!s->head)
		s->tail = NULL;
	else if (s->head->timeout)
		s->head->deadline = now_monotonic() + s->head->timeout;
	if (r->reader_open) {
		path = xstrdup(r->rd.path);
		event_reader_release(&r->rd);
		r->reader_open = 0;
		unlink(path);
		free(path);
	}
	request_free(r);
	if (s->state == SESSION_BUSY && !s->head)
		s->state = SESSION_IDLE;
}

/* End every queued request with `reason` (the kernel went away). */
static void abort_all(struct session *s, enum reason reason, const char *ename,
		      const char *evalue, const char *detail)
{
	while (s->head) {
		abort_request(s, s->head, reason, ename, evalue, detail);
		pop_head(s);
	}
	s->kill_at = 0;
}

struct line_ctx {
	struct session *s;
	struct request *r;
	int events;
};

/* Handle one line of a results file. */
static int on_line(const char *line, size_t len, void *data)
{
	struct line_ctx *ctx = data;
	struct request *r = ctx->r;
	struct event_store st = EVENT_STORE_INIT;
	struct session_event ev;

	ctx->events++;
	if (!line || event_decode(&st, line, len, r->id, &ev) < 0) {
		/* Say so in the output rather than lose the cell or stop reading. */
		struct strbuf msg = STRBUF_INIT;

		if (line)
			strbuf_addf(&msg, "cellbox: skipped a malformed event from the kernel (%zu bytes)\n",
				    len);
		else
			strbuf_addf(&msg, "cellbox: dropped an event of %zu bytes (limit %u)\n", len,
				    MAX_EVENT_LINE);
		memset(&ev, 0, sizeof(ev));
		ev.type = SESSION_EV_STREAM;
		ev.stream.stream = SESSION_STDERR;
		ev.stream.name = "stderr";
		ev.stream.text = msg.buf;
		ev.stream.len = msg.len;
		deliver(ctx->s, r, &ev);
		strbuf_release(&msg);
		event_store_release(&st);
		return 0;
	}
	if (ev.type == SESSION_EV_DONE) {
		/* The kernel finished it; a stop we made says why it did not end well. */
		ev.done.detail = stop_detail(r->stop);
		if (r->stop && ev.done.status != SESSION_STATUS_OK)
			ev.done.reason = r->stop;
		r->done = 1;
		if (r == ctx->s->head)
			ctx->s->kill_at = 0;
	}
	deliver(ctx->s, r, &ev);
	event_store_release(&st);
	return r->done;
}

/* Read new events of the head request (and of the ones after it once it is done). */
static int read_events(struct session *s)
{
	struct line_ctx ctx = { s, NULL, 0 };

	while (s->head) {
		struct request *r = s->head;

		if (r->blocked) {
			char *detail = xasprintf("blocked by security policy '%s'",
						 s->opts.policy->name);
			struct session_event ev = { .type = SESSION_EV_DONE };

			deliver_blocked(s, r);
			ev.done.status = SESSION_STATUS_ERROR;
			ev.done.execution_count = -1;
			ev.done.reason = REASON_BLOCKED;
			ev.done.detail = detail;
			r->done = 1;
			s->kill_at = 0;
			deliver(s, r, &ev);
			free(detail);
			ctx.events += 2;
			pop_head(s);
			continue;
		}
		if (!r->reader_open) {
			char *path = xasprintf("%s/results/%s.jsonl", s->ch.dir, r->name);
			event_reader_init(&r->rd, path, MAX_EVENT_LINE);
			r->reader_open = 1;
			free(path);
		}
		ctx.r = r;
		event_reader_poll(&r->rd, on_line, &ctx);
		if (!r->done)
			break;
		pop_head(s);
	}
	return ctx.events;
}

/* The kernel exited: finish what it left, say why, and mark the session dead. */
static void kernel_died(struct session *s, enum reason reason, const char *why)
{
	read_events(s);		/* what it wrote before it went */
	abort_all(s, reason, "KernelDied", why, why);
	channel_clear_queue(&s->ch);
	set_state(s, SESSION_DEAD, why);
}

/* SIGINT to the kernel, and a wake-up for a runner blocked on the `wake` FIFO. */
static int interrupt_kernel(struct session *s)
{
	int rc = s->be->ops->signal(s->be, SIGINT);

	if (s->wake)
		channel_wake(&s->ch);
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
		abort_request(s, r, timed_out ? REASON_TIMEOUT_KILLED : REASON_INTERRUPT_KILLED,
			      timed_out ? "TimeoutError" : "KeyboardInterrupt", msg.buf,
			      timed_out ? "timeout: kernel restarted" : "interrupt: kernel restarted");
		pop_head(s);
	}
	abort_all(s, REASON_RESTARTED, "KernelRestarted", "the kernel was restarted", "restart");
	set_state(s, SESSION_STARTING, "restarting the kernel");
	if (start_kernel(s, &err) < 0)
		set_state(s, SESSION_DEAD, err.buf);
	else
		set_state(s, SESSION_IDLE, "kernel restarted");
	if (s->state == SESSION_IDLE && !send_policy(s, &err) && err.len)
		set_state(s, s->state, err.buf);	/* queued first: no cell runs before it */
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
	if (read(s->timerfd, &ticks, sizeof(ticks)) < 0 && errno != EAGAIN)
		ticks = 0;
	events = read_events(s);
	if (s->state != SESSION_DEAD && s->be->ops->reap(s->be, &reason, &why)) {
		kernel_died(s, reason, why.buf);
		goto out;
	}
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
	arm_timer(s);
	strbuf_release(&why);
	return events;
}

/*
 * Write a command file and queue the request. With `blocked` (the policy's error event, taken
 * over) nothing is written: the request is ended by the host at the next dispatch.
 */
static unsigned long submit(struct session *s, cJSON *cmd, int is_execute, double timeout,
			    session_event_fn fn, void *data, cJSON *blocked, struct strbuf *err)
{
	struct request *r;
	char *text, *rel;
	int rc;

	if (s->state == SESSION_DEAD || s->state == SESSION_CLOSED) {
		strbuf_addstr(err, "the kernel is not running (restart it)");
		cJSON_Delete(cmd);
		cJSON_Delete(blocked);
		return 0;
	}
	r = xcalloc(1, sizeof(*r));
	r->id = s->next_id++;
	snprintf(r->name, sizeof(r->name), "%010lu", r->id);
	r->is_execute = is_execute;
	r->timeout = timeout;
	r->fn = fn;
	r->data = data;
	r->blocked = blocked;
	cJSON_AddStringToObject(cmd, "id", r->name);
	text = cJSON_PrintUnformatted(cmd);
	cJSON_Delete(cmd);
	rel = xasprintf("commands/%s.json", r->name);
	rc = blocked ? 0 : channel_write(&s->ch, rel, text, strlen(text), err);
	free(rel);
	cJSON_free(text);
	if (rc < 0) {
		free(r);
		return 0;
	}
	if (s->wake)
		channel_wake(&s->ch);
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
	arm_timer(s);
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
	return submit(s, cmd, 1, timeout, fn, data, blocked, err);
}

unsigned long session_request(struct session *s, const char *kind, const cJSON *params,
			      session_event_fn fn, void *data, struct strbuf *err)
{
	cJSON *cmd = params ? cJSON_Duplicate(params, 1) : cJSON_CreateObject();

	cJSON_DeleteItemFromObjectCaseSensitive(cmd, "kind");
	cJSON_DeleteItemFromObjectCaseSensitive(cmd, "id");
	cJSON_AddStringToObject(cmd, "kind", kind);
	return submit(s, cmd, 0, 0, fn, data, NULL, err);
}

int session_input_reply(struct session *s, unsigned long id, const char *value,
			struct strbuf *err)
{
	cJSON *obj = cJSON_CreateObject();
	char *text, *rel;
	int rc;

	cJSON_AddStringToObject(obj, "value", value);
	text = cJSON_PrintUnformatted(obj);
	cJSON_Delete(obj);
	rel = xasprintf("commands/%010lu.input", id);
	rc = channel_write(&s->ch, rel, text, strlen(text), err);
	if (rc == 0 && s->wake)
		channel_wake(&s->ch);
	free(rel);
	cJSON_free(text);
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
	arm_timer(s);
	return interrupt_kernel(s);
}

int session_restart(struct session *s, struct strbuf *err)
{
	int rc;

	s->be->ops->kill(s->be);
	abort_all(s, REASON_RESTARTED, "KernelRestarted", "the kernel was restarted", "restart");
	rc = start_kernel(s, err);
	if (rc == 0)
		rc = install_policy(s, err);
	if (rc == 0)
		set_state(s, SESSION_IDLE, "kernel restarted");
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

const char *session_kernel_image(void)
{
	return CELLBOX_KERNEL_IMAGE;
}

char *session_kernel_image_for(const char *name)
{
	const struct kernel_def *k = kernel_find(name);

	return k ? xasprintf("%s:p%d", k->image, CELLBOX_PROTOCOL) : NULL;
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
	free(s);
}

void session_close(struct session *s)
{
	struct pool_lease lease;

	if (!s)
		return;
	lease = s->lease;
	if (s->be) {
		/* A pooled kernel is never reused: no need to let it exit politely. */
		if (!s->lease.entry)
			shutdown_kernel(s);
		abort_all(s, REASON_CLOSED, NULL, NULL, "session closed");
		/*
		 * Stopping a container takes 100 ms or more: a pooled one goes back to its daemon,
		 * which removes every released kernel, off our path. Without a daemon we end it.
		 */
		if (s->hand_back && s->be->ops->detach && pool_lease_daemon_alive(&s->lease))
			s->be->ops->detach(s->be);
		s->be->ops->free(s->be);
	}
	session_free(s, lease.entry || !s->opts.keep_channel);
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
