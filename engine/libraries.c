/* Libraries installed into the sandbox once per (image, set), and reused (see libraries.h). */
#include "libraries.h"
#include "libraries_int.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define MAX_REQUIREMENT 200
#define MAX_PIP_OUTPUT (4u << 20)

/* ---- requirements ---- */

static int is_alnum(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

/* The length of a PEP 508 name at s (letters and digits at both ends, . _ - inside). */
static size_t name_len(const char *s)
{
	size_t n = 0, last = 0;

	if (!is_alnum(s[0]))
		return 0;
	while (is_alnum(s[n]) || s[n] == '.' || s[n] == '_' || s[n] == '-') {
		if (is_alnum(s[n]))
			last = n + 1;
		n++;
	}
	return last;
}

/* Whether `req` is NAME[extra,...](OP VERSION)(,OP VERSION)*. */
static int valid_requirement(const char *req)
{
	static const char *const ops[] = { "===", "==", "!=", "~=", ">=", "<=", ">", "<" };
	const char *s = req;
	size_t n = name_len(s);

	if (!n || strlen(req) > MAX_REQUIREMENT)
		return 0;
	s += n;
	if (*s == '[') {
		do {
			s++;
			if (!(n = name_len(s)))
				return 0;
			s += n;
		} while (*s == ',');
		if (*s++ != ']')
			return 0;
	}
	while (*s) {
		size_t k, v = 0;

		for (k = 0; k < ARRAY_SIZE(ops); k++)
			if (!strncmp(s, ops[k], strlen(ops[k])))
				break;
		if (k == ARRAY_SIZE(ops))
			return 0;
		s += strlen(ops[k]);
		while (is_alnum(s[v]) || (s[v] && strchr("._+!*-", s[v])))
			v++;
		if (!v || !(s[0] >= '0' && s[0] <= '9'))
			return 0;
		s += v;
		if (*s == ',')
			s++;
		else if (*s)
			return 0;
	}
	return 1;
}

/* The requirement's name as PEP 503 compares names: lower case, runs of -_. as one '-'. */
static void normal_name(const char *req, struct strbuf *out)
{
	size_t n = name_len(req);

	for (size_t i = 0; i < n; i++) {
		char c = req[i];
		if (c == '-' || c == '_' || c == '.') {
			if (out->len && out->buf[out->len - 1] != '-')
				strbuf_addch(out, '-');
		} else {
			strbuf_addch(out, c >= 'A' && c <= 'Z' ? c + 32 : c);
		}
	}
}

static int by_string(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

void libraries_release(struct libraries *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->names[i]);
	free(l->names);
	free(l->key);
	free(l->shown);
	memset(l, 0, sizeof(*l));
}

int libraries_parse(struct libraries *l, const char *list, struct strbuf *err)
{
	const char *p = list ? list : "";
	char **keys;

	memset(l, 0, sizeof(*l));
	while (*p) {
		/* One piece: up to a comma outside brackets ("a[x,y]" is one). */
		size_t n = 0;
		int depth = 0;
		char *piece, *t;

		while (p[n] && (p[n] != ',' || depth)) {
			depth += p[n] == '[' ? 1 : p[n] == ']' && depth ? -1 : 0;
			n++;
		}
		t = xstrndup(p, n);
		p += n + (p[n] == ',');
		piece = parse_trim(t);
		if (!*piece) {
			free(t);
			continue;
		}
		if (strchr("<>=!~", *piece) && l->n) {
			/* "requests>=2,<3": a specifier of the requirement before */
			char *joined = xasprintf("%s,%s", l->names[l->n - 1], piece);
			free(l->names[l->n - 1]);
			l->names[l->n - 1] = joined;
		} else {
			l->names = xrealloc(l->names, (l->n + 1) * sizeof(*l->names));
			l->names[l->n++] = xstrdup(piece);
		}
		free(t);
	}
	for (size_t i = 0; i < l->n; i++)
		if (!valid_requirement(l->names[i])) {
			strbuf_addf(err, "libraries: '%s' is not a package requirement (NAME, "
				    "NAME[extra] or NAME>=VERSION; no URLs, paths, markers or spaces)",
				    l->names[i]);
			libraries_release(l);
			return -1;
		}
	/* The key: each requirement with its name normalised, sorted. */
	keys = xcalloc(l->n ? l->n : 1, sizeof(*keys));
	for (size_t i = 0; i < l->n; i++) {
		struct strbuf sb = STRBUF_INIT;
		normal_name(l->names[i], &sb);
		strbuf_addstr(&sb, l->names[i] + name_len(l->names[i]));
		keys[i] = strbuf_detach(&sb, NULL);
	}
	qsort(keys, l->n, sizeof(*keys), by_string);
	{
		struct strbuf key = STRBUF_INIT;
		for (size_t i = 0; i < l->n; i++) {
			strbuf_addf(&key, "%s%s", i ? "," : "", keys[i]);
			free(keys[i]);
		}
		l->key = strbuf_detach(&key, NULL);
		for (size_t i = 0; i < l->n; i++)
			strbuf_addf(&key, "%s%s", i ? ", " : "", l->names[i]);
		l->shown = strbuf_detach(&key, NULL);
	}
	free(keys);
	return 0;
}

void libraries_check_code(const struct libraries *l, struct strbuf *code)
{
	/* The key has no quotes or backslashes (requirements cannot): a plain literal. */
	strbuf_addf(code,
		    "def _cellbox_check(want):\n"
		    "    import sys\n"
		    "    try:\n"
		    "        got = open(sys.prefix + '/" LIBRARIES_MARKER "').read()\n"
		    "    except OSError:\n"
		    "        got = ''\n"
		    "    if got != want:\n"
		    "        raise RuntimeError('the pooled kernel has the libraries %%r' %% (got or 'none',))\n"
		    "try:\n"
		    "    _cellbox_check('%s')\n"
		    "finally:\n"
		    "    del _cellbox_check\n", l->key);
}

int libraries_check_policy(const struct libraries *l, const struct policy *p, struct strbuf *err)
{
	for (size_t i = 0; p && i < l->n; i++) {
		struct strbuf name = STRBUF_INIT;

		normal_name(l->names[i], &name);
		for (size_t k = 0; k < p->nmodules; k++) {
			struct strbuf mod = STRBUF_INIT;
			int same;

			normal_name(p->modules[k].name, &mod);
			same = !strcmp(mod.buf, name.buf) && policy_blocks(p, p->modules[k].severity);
			strbuf_release(&mod);
			if (same) {
				strbuf_addf(err, "libraries: '%s' is the module %s, which the policy '%s' "
					    "restricts (%s, %s)", l->names[i], p->modules[k].name,
					    p->name, p->modules[k].description,
					    policy_severity_name(p->modules[k].severity));
				strbuf_release(&name);
				return -1;
			}
		}
		strbuf_release(&name);
	}
	return 0;
}

/* ---- local: a venv of the interpreter ---- */

/* Run argv, its output (both streams) into `out`; the exit status, -1 when it cannot run. */
static int run_capture(const char *const *argv, struct strbuf *out)
{
	int fds[2], status = -1;
	pid_t pid;

	if (pipe2(fds, O_CLOEXEC) < 0)
		return -1;
	pid = fork();
	if (pid < 0) {
		close(fds[0]);
		close(fds[1]);
		return -1;
	}
	if (pid == 0) {
		process_stdio_to_null(0, 0, -1, -1);
		dup2(fds[1], 1);
		dup2(fds[1], 2);
		signal(SIGINT, SIG_DFL);
		execv(argv[0], (char *const *)argv);
		_exit(127);
	}
	close(fds[1]);
	strbuf_read_fd(out, fds[0], MAX_PIP_OUTPUT);
	close(fds[0]);
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	return status;
}

/* Whether the venv at `dir` holds exactly the set `key`. */
static int venv_has(const char *dir, const char *key)
{
	struct strbuf sb = STRBUF_INIT;
	char *path = xasprintf("%s/" LIBRARIES_MARKER, dir);
	int ok = strbuf_read_file(&sb, path, 1u << 16) == 0 && !strcmp(sb.buf, key);

	strbuf_release(&sb);
	free(path);
	return ok;
}

/*
 * The venv named in `last` (16 hex digits, the hash of the set from the wheels last used) if it
 * holds the set `key`: *dir gets its path (else NULL).
 */
static void last_venv(const char *last, const char *key, char **dir)
{
	struct strbuf sb = STRBUF_INIT;
	int ok = strbuf_read_file(&sb, last, 64) == 0 && sb.len == 16 &&
		 strspn(sb.buf, "0123456789abcdef") == 16;
	char *path = ok ? xasprintf("%.*s/%s", (int)(strrchr(last, '/') - last), last, sb.buf) : NULL;

	*dir = NULL;
	if (path && venv_has(path, key))
		*dir = path;
	else
		free(path);
	strbuf_release(&sb);
}

static int prepare_local(const struct libraries *l, const struct libraries_env *e, char **python,
			 int *installed, struct strbuf *err)
{
	char real[PATH_MAX], hash[17], any[17], wh[PATH_MAX], wheels[65] = "", *stage = NULL;
	char *last = NULL;
	const char *py = e->python ? e->python : "/usr/bin/python3";
	struct strbuf id = STRBUF_INIT, out = STRBUF_INIT;
	char *cache = NULL, *dir = NULL;
	const char *argv[16 + 2 * 64];
	struct stat st;
	int lock = -1, rc = -1, status;
	size_t n = 0;

	if (!realpath(py, real) || stat(real, &st) < 0) {
		strbuf_addf(err, "libraries: cannot find the interpreter '%s': %s", py, strerror(errno));
		goto out;
	}
	if (e->wheelhouse && !realpath(e->wheelhouse, wh)) {
		strbuf_addf(err, "libraries: cannot use the wheelhouse '%s': %s", e->wheelhouse,
			    strerror(errno));
		goto out;
	}
	if (l->n > 64) {
		strbuf_addstr(err, "libraries: at most 64 requirements");
		goto out;
	}
	/* The wheels pip may install, read and hashed by the host, are part of the key. */
	if (e->wheelhouse && libraries_wheels(wh, NULL, wheels, err) < 0)
		goto out;
	cache = e->cache_dir ? xstrdup(e->cache_dir) : libraries_cache_dir("venvs");
	strbuf_addf(&id, "%s\n%lld\n%lld\n%s", real, (long long)st.st_size,
		    (long long)st.st_mtime, l->key);
	libraries_hash(id.buf, any);
	last = xasprintf("%s/%s.wheels", cache, any);
	if (e->wheelhouse) {
		strbuf_addf(&id, "\nwheels %s", wheels);
		libraries_hash(id.buf, hash);
	} else {
		/* No wheelhouse named: the venv of the set last made from one, if any. */
		memcpy(hash, any, sizeof(hash));
		last_venv(last, l->key, &dir);
		if (dir)
			goto reuse;
	}
	dir = xasprintf("%s/%s", cache, hash);
	if (venv_has(dir, l->key))
		goto reuse;
	lock = libraries_lock(e->lock_dir ? e->lock_dir : cache, hash);
	if (venv_has(dir, l->key))
		goto reuse;
	if (e->progress)
		fprintf(e->progress, "cellbox: installing %s for %s (once: kept in %s)\n", l->shown,
			py, dir);
	fsutil_remove_tree(dir);
	if (fsutil_mkdir_p(cache) < 0) {
		strbuf_addf(err, "libraries: cannot create '%s': %s", cache, strerror(errno));
		goto out;
	}
	/* pip reads a copy of the very bytes hashed, not the wheelhouse. */
	if (e->wheelhouse &&
	    !(stage = libraries_wheels_stage(cache, wh, wheels, err)))
		goto out;
	argv[n++] = real;
	argv[n++] = "-c";
	argv[n++] = libraries_setup_script;
	argv[n++] = dir;
	argv[n++] = l->key;
	n += libraries_pip_args(l, stage, argv + n);
	argv[n] = NULL;
	status = run_capture(argv, &out);
	if (status != 0) {
		strbuf_addstr(err, "libraries: cannot install ");
		libraries_failed(l, out.buf, err);
		strbuf_addf(err, " (pip exited with %d):", WIFEXITED(status) ? WEXITSTATUS(status) : -1);
		libraries_pip_reason(out.buf, err);
		fsutil_remove_tree(dir);
		goto out;
	}
	*installed = 1;
reuse:
	*python = xasprintf("%s/bin/python", dir);
	if (e->wheelhouse)	/* best effort: without it, a later session names the wheels */
		fsutil_write_atomic(last, hash, strlen(hash), 0600, &out);
	rc = 0;
out:
	if (stage) {
		fsutil_remove_tree(stage);
		free(stage);
	}
	if (lock >= 0)
		close(lock);
	strbuf_release(&id);
	strbuf_release(&out);
	free(cache);
	free(dir);
	free(last);
	return rc;
}

int libraries_prepare(const struct libraries *l, const struct libraries_env *e, char **image,
		      char **python, int *installed, struct strbuf *err)
{
	const struct backend_ops *ops;

	*installed = 0;
	if (!l->n)
		return 0;
	ops = backend_find(e->backend, err);
	if (!ops)
		return -1;
	if (ops->flags & BACKEND_IMAGES)
		return libraries_prepare_image(l, e, image, installed, err);
	if (ops->flags & BACKEND_CHILD_KERNELS)
		return prepare_local(l, e, python, installed, err);
	strbuf_addf(err, "libraries: the %s backend cannot install libraries", e->backend);
	return -1;
}

