/*
 * A context's kernel in a running container (context.h; docs/sessions.md, "Contexts"): the
 * docker family's `contexts` family. The runner is started by an exec in the container that
 * the note of the sandbox's channel names (kernel_spec.within: its starter's word, at the
 * channel's host-only top), and its channel's two parts are inside that channel's, which the
 * container has mounted since it was made (channel_create_within()). In the container a
 * directory of its own in /tmp holds two links to them, the channel the runner is given.
 *
 * The exec's stdin, attached, wakes the runner (CELLBOX_WAKE=stdin); the engine closes that
 * connection when the runner ends, which is how its end is seen (exit_fd), and the exec's
 * inspect says how (reap). The Engine API has no signal for an exec: a signal is a second
 * exec, a shell that signals the processes whose command line holds the runner's file, unique
 * to the context (its host part's). The container's user, environment, limits and cgroup are
 * the context's too: shared with the sandbox's other kernels, as a context's are. Its usage is
 * therefore the sandbox's. The family's table is backend_docker.c's, which shares the rest
 * (the wake-up, the usage, the backend's making and freeing) with the container's.
 */
#include "backend.h"
#include "backend_docker_int.h"
#include "clock.h"
#include "docker.h"
#include "kernel.h"
#include "numconv.h"
#include "wall.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/*
 * The runner's command in the container: $0 the runner, $1 and $2 the channel's host and
 * kernel parts (as the host sees them, mounted at the same paths).
 */
#define RUN_SCRIPT \
	"d=$(mktemp -d /tmp/cellbox-context.XXXXXXXX) && ln -s \"$1\" \"$d/host\" && " \
	"ln -s \"$2\" \"$d/kernel\" && exec %s \"$0\" \"$d\" >>\"$2/log\" 2>&1"
/*
 * A signal ($0) to the processes whose command line holds $CELLBOX_RUNNER (an environment
 * variable, so that this shell's own command line does not): to the group each leads, else
 * to it.
 */
#define SIGNAL_SCRIPT \
	"for p in /proc/[0-9]*; do c=$(tr '\\0' ' ' <\"$p/cmdline\" 2>/dev/null) || continue; " \
	"case \"$c\" in *\"$CELLBOX_RUNNER\"*) kill -s \"$0\" -- \"-${p#/proc/}\" 2>/dev/null " \
	"|| kill -s \"$0\" \"${p#/proc/}\";; esac; done"

static struct backend_docker *docker_of(struct backend *be)
{
	return (struct backend_docker *)be;
}

/*
 * Create an exec of `cmd` (its env `env`, may be NULL) in the container, with `in` attached
 * (its stdin and stdout); its id or NULL with `err`.
 */
static char *exec_create(struct backend_docker *db, cJSON *cmd, const char *env, int in,
			 struct strbuf *err)
{
	cJSON *body = cJSON_CreateObject(), *reply = NULL, *e;
	char *path = xasprintf("/containers/%s/exec", db->id), *id = NULL;
	const char *got;
	long status;

	cJSON_AddBoolToObject(body, "AttachStdin", in);
	/* Its stdout (the runner's goes to its log) is what makes the engine end the stream. */
	cJSON_AddBoolToObject(body, "AttachStdout", in);
	cJSON_AddBoolToObject(body, "AttachStderr", 0);
	cJSON_AddBoolToObject(body, "Tty", 0);
	cJSON_AddItemToObject(body, "Cmd", cmd);
	e = cJSON_AddArrayToObject(body, "Env");
	if (env)
		cJSON_AddItemToArray(e, cJSON_CreateString(env));
	status = docker_call(&db->d, "POST", path, body, &reply, err);
	got = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(reply, "Id"));
	if (status == 201 && got && strlen(got) <= 64 && strspn(got, "0123456789abcdef") ==
	    strlen(got) && *got)
		id = xstrdup(got);
	else if (status == 201)
		strbuf_addstr(err, "the engine answered the exec with no id");
	cJSON_Delete(reply);
	cJSON_Delete(body);
	free(path);
	return id;
}

/* Signal the context's runner by an exec of SIGNAL_SCRIPT, not waited for. */
int backend_docker_exec_signal(struct backend *be, int sig)
{
	struct backend_docker *db = docker_of(be);
	struct strbuf err = STRBUF_INIT;
	const char *abbrev = sigabbrev_np(sig);
	cJSON *cmd;
	char *env, *id, *path;
	long status = -1;

	if (!db->id || !db->exec_runner || !abbrev)
		return -1;
	cmd = cJSON_CreateArray();
	cJSON_AddItemToArray(cmd, cJSON_CreateString("/bin/sh"));
	cJSON_AddItemToArray(cmd, cJSON_CreateString("-c"));
	cJSON_AddItemToArray(cmd, cJSON_CreateString(SIGNAL_SCRIPT));
	cJSON_AddItemToArray(cmd, cJSON_CreateString(abbrev));
	env = xasprintf("CELLBOX_RUNNER=%s", db->exec_runner);
	id = exec_create(db, cmd, env, 0, &err);
	if (id) {
		cJSON *body = cJSON_CreateObject();

		cJSON_AddBoolToObject(body, "Detach", 1);
		path = xasprintf("/exec/%s/start", id);
		status = docker_call(&db->d, "POST", path, body, NULL, &err);
		cJSON_Delete(body);
		free(path);
	}
	free(id);
	free(env);
	strbuf_release(&err);
	return status == 200 || status == 204 ? 0 : -1;
}

/* Let go of the exec: its connection and ids (the runner, if it runs, is not ours now). */
static void exec_forget(struct backend_docker *db)
{
	backend_docker_forget(db);
	free(db->exec_id);
	free(db->exec_runner);
	db->exec_id = db->exec_runner = NULL;
}

/* Start the runner by an exec in the container the sandbox's channel names. */
int backend_docker_exec_start(struct backend *be, const struct kernel_spec *spec,
			      struct strbuf *err)
{
	struct backend_docker *db = docker_of(be);
	struct kernel_handle k = { .channel_dir = spec->within, .sandbox = spec->sandbox };
	struct strbuf id = STRBUF_INIT, host = STRBUF_INIT, msg = STRBUF_INIT;
	const struct kernel_def *kd = spec->kernel ? spec->kernel : kernel_default();
	char api[16], *script = NULL, *path = NULL;
	cJSON *cmd;
	int rc = -1, facts;

	if (!spec->within || backend_docker_read_id(&k, db->engine, &id, err) < 0)
		goto out;
	facts = backend_docker_read_facts(&k, db, api, sizeof(api)) == 0;
	if (facts && db->stream) {
		strbuf_addstr(err, "this sandbox's channel goes over a stream (a remote engine): a "
			      "context needs its mounts, which such a container has not");
		goto out;
	}
	if (!db->connected) {
		if (backend_docker_connect_api(&db->d, db->engine, backend_docker_engine_of(&k, &host),
					       facts ? api : NULL, err) < 0)
			goto out;
		db->connected = 1;
	}
	db->id = strbuf_detach(&id, NULL);
	db->exec_runner = xstrdup(spec->runner);
	cmd = cJSON_CreateArray();
	script = xasprintf(RUN_SCRIPT, kd->container_exec);
	cJSON_AddItemToArray(cmd, cJSON_CreateString("/bin/sh"));
	cJSON_AddItemToArray(cmd, cJSON_CreateString("-c"));
	cJSON_AddItemToArray(cmd, cJSON_CreateString(script));
	cJSON_AddItemToArray(cmd, cJSON_CreateString(spec->runner));
	cJSON_AddItemToArray(cmd, cJSON_CreateString(spec->host_dir));
	cJSON_AddItemToArray(cmd, cJSON_CreateString(spec->kernel_dir));
	db->exec_id = exec_create(db, cmd, "CELLBOX_WAKE=stdin", 1, &msg);
	if (!db->exec_id) {
		strbuf_addf(err, "cannot start a kernel in container %.12s: %s", db->id, msg.buf);
		goto out;
	}
	path = xasprintf("/exec/%s/start", db->exec_id);
	db->stdin_fd = docker_upgrade(&db->d, path, "{\"Detach\":false,\"Tty\":false}",
				      "start the context's runner", err);
	if (db->stdin_fd < 0)
		goto out;
	fcntl(db->stdin_fd, F_SETFL, fcntl(db->stdin_fd, F_GETFL) | O_NONBLOCK);
	rc = 0;
out:
	if (rc < 0)
		exec_forget(db);
	strbuf_release(&id);
	strbuf_release(&host);
	strbuf_release(&msg);
	free(script);
	free(path);
	return rc;
}

/* The exec's connection: the engine closes it when the runner ends. */
int backend_docker_exec_exit_fd(struct backend *be)
{
	return docker_of(be)->stdin_fd;
}

/* How the exec ended, from its inspect (asked again for a while if it still runs). */
static enum reason describe_exit(struct backend_docker *db, struct strbuf *why)
{
	char *path = xasprintf("/exec/%s/json", db->exec_id);
	struct strbuf err = STRBUF_INIT, note = STRBUF_INIT;
	cJSON *reply = NULL;
	enum reason reason = REASON_KERNEL_DIED;
	long long code = -1;
	long status;
	int ws;

	for (int tries = 0; tries < 20; tries++) {
		cJSON_Delete(reply);
		reply = NULL;
		strbuf_reset(&err);
		status = docker_call(&db->d, "GET", path, NULL, &reply, &err);
		if (status != 200) {
			strbuf_addf(why, "kernel lost (its sandbox's container is gone: %s)", err.buf);
			reason = REASON_CHANNEL_LOST;
			goto out;
		}
		if (!cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(reply, "Running")))
			break;
		nanosleep(&(struct timespec){ .tv_nsec = 50 * 1000 * 1000 }, NULL);
	}
	if (!json_integer(cJSON_GetObjectItemCaseSensitive(reply, "ExitCode"), INT_MIN, INT_MAX,
			  &code))
		code = -1;
	/* The runner's shell, as an init, tells a death by signal as 128 + the signal. */
	ws = backend_init_status(((int)code & 0xff) << 8);
	if (WIFSIGNALED(ws) && WTERMSIG(ws) == SIGKILL) {
		strbuf_addstr(&note, "out of memory? the sandbox's limit is ");
		wall_describe_size(&note, db->memory);
		strbuf_addstr(&note, ", shared by its kernels");
	}
	backend_describe_status(ws, note.buf, why);
out:
	cJSON_Delete(reply);
	strbuf_release(&err);
	strbuf_release(&note);
	free(path);
	return reason;
}

/* 0 while the runner runs, else 1 with `why` (the exec is let go). */
int backend_docker_exec_reap(struct backend *be, enum reason *reason, struct strbuf *why)
{
	struct backend_docker *db = docker_of(be);
	char buf[256];
	ssize_t n;

	*reason = REASON_KERNEL_DIED;
	if (!db->exec_id)
		return 1;
	while ((n = read(db->stdin_fd, buf, sizeof(buf))) > 0)
		;	/* nothing is attached to be said: anything is dropped */
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return 0;
	*reason = describe_exit(db, why);
	exec_forget(db);
	return 1;
}

/*
 * Kill the runner (its group) and let it go: the container is the sandbox's, not ours. Its
 * end is waited for, up to KILL_WAIT_MS (the engine ends the exec's stream), so that a runner
 * started next in its channel never has this one beside it.
 */
#define KILL_WAIT_MS 3000

void backend_docker_exec_kill(struct backend *be)
{
	struct backend_docker *db = docker_of(be);
	double deadline = clock_now() + KILL_WAIT_MS / 1000.0;

	if (db->exec_id && backend_docker_exec_signal(be, SIGKILL) == 0) {
		while (db->stdin_fd >= 0 && clock_now() < deadline) {
			struct pollfd pfd = { .fd = db->stdin_fd, .events = POLLIN };
			char buf[256];
			ssize_t n;

			if (poll(&pfd, 1, (int)((deadline - clock_now()) * 1000) + 1) < 0 &&
			    errno != EINTR)
				break;
			n = read(db->stdin_fd, buf, sizeof(buf));
			if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR))
				break;
		}
	}
	exec_forget(db);
}

void backend_docker_exec_detach(struct backend *be)
{
	exec_forget(docker_of(be));
}
