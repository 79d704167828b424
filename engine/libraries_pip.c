/*
 * What both halves of libraries use of pip (libraries_int.h): the setup script, pip's
 * arguments, what its output says of a failure, and a set's cache name and install lock.
 */
#include "libraries.h"
#include "libraries_int.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

/*
 * What runs in the setup container (and for the local backend): make the venv that sees the
 * interpreter's packages, pip-install into it, and leave the set's name in it. argv: the
 * venv, the set's key, then pip's options and the requirements.
 */
const char libraries_setup_script[] =
	"import os, subprocess, sys, venv\n"
	"root, key = sys.argv[1], sys.argv[2]\n"
	"venv.EnvBuilder(system_site_packages=True, with_pip=False, symlinks=True).create(root)\n"
	"r = subprocess.run([os.path.join(root, 'bin', 'python'), '-m', 'pip', 'install',\n"
	"                    '--no-cache-dir', '--disable-pip-version-check', '--no-input',\n"
	"                    '--no-warn-script-location', '--retries', '0', '--timeout', '30']\n"
	"                   + sys.argv[3:])\n"
	"if r.returncode == 0:\n"
	"    with open(os.path.join(root, '" LIBRARIES_MARKER "'), 'w') as f:\n"
	"        f.write(key)\n"
	"sys.exit(r.returncode)\n";

/* FNV-1a, 64 bits, as 16 hex digits: names a cache entry (its labels are checked too). */
void libraries_hash(const char *s, char out[17])
{
	unsigned long long h = 0xcbf29ce484222325ULL;

	for (; *s; s++) {
		h ^= (unsigned char)*s;
		h *= 0x100000001b3ULL;
	}
	snprintf(out, 17, "%016llx", h);
}

/* Wait for (and take) the install lock of one set; the descriptor, or -1 (go on unlocked). */
int libraries_lock(const char *dir, const char *hash)
{
	char *path;
	int fd;

	if (!dir || fsutil_mkdir_p(dir) < 0)
		return -1;
	path = xasprintf("%s/libraries-%s.lock", dir, hash);
	fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	free(path);
	if (fd >= 0 && flock(fd, LOCK_EX) < 0) {
		close(fd);
		fd = -1;
	}
	return fd;
}

/* What of pip's output explains a failure: its ERROR lines, else its last lines. */
void libraries_pip_reason(const char *out, struct strbuf *sb)
{
	const char *s = out, *tail;
	size_t start = sb->len;
	int lines = 0;

	for (; *s; ) {
		size_t n = strcspn(s, "\n");
		if (!strncmp(s, "ERROR: ", 7))
			strbuf_addf(sb, "\n  %.*s", (int)n, s);
		s += n + (s[n] == '\n');
	}
	if (sb->len > start)
		return;
	tail = out + strlen(out);
	while (tail > out && lines < 8)
		if (*--tail == '\n' && tail[1])
			lines++;
	for (s = tail; *s;) {
		size_t n = strcspn(s, "\n");
		if (n)
			strbuf_addf(sb, "\n  %.*s", (int)n, s);
		s += n + (s[n] == '\n');
	}
}

/* Name the package pip could not install, from its message; else the whole set. */
void libraries_failed(const struct libraries *l, const char *out, struct strbuf *sb)
{
	static const char *const marks[] = { "No matching distribution found for ",
					     "Could not find a version that satisfies the "
					     "requirement " };

	for (size_t k = 0; k < ARRAY_SIZE(marks); k++) {
		const char *p = strstr(out, marks[k]);
		if (p) {
			p += strlen(marks[k]);
			strbuf_add(sb, p, strcspn(p, " \n"));
			return;
		}
	}
	for (size_t i = 0; i < l->n; i++)
		strbuf_addf(sb, "%s%s", i ? ", " : "", l->names[i]);
}

/* pip's options for the wheelhouse (at `where`), then the requirements, into argv. */
size_t libraries_pip_args(const struct libraries *l, const char *where, const char **argv)
{
	size_t n = 0;

	if (where) {
		argv[n++] = "--no-index";
		argv[n++] = "--find-links";
		argv[n++] = where;
	}
	for (size_t i = 0; i < l->n; i++)
		argv[n++] = l->names[i];
	return n;
}

char *libraries_cache_dir(const char *sub)
{
	const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");

	if (xdg && *xdg)
		return xasprintf("%s/cellbox/%s", xdg, sub);
	return xasprintf("%s/.cache/cellbox/%s", home && *home ? home : "/tmp", sub);
}
