/*
 * Unit tests of fsutil's atomic replacement of a file (fsutil_write_atomic, and begin /
 * commit / rollback) and of its writing of a new one (fsutil_write_new): the content is replaced as a whole, a failure leaves the old content
 * and no temporary behind, the temporary's name cannot be guessed, and a link planted where
 * a guess would put it is never followed.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fsutil.h"
#include "util.h"
#include "../tap.h"

/* A fresh directory for one test; the caller removes it. */
static char *scratch_dir(void)
{
	const char *base = getenv("TMPDIR");
	char *dir = xasprintf("%s/cellbox-fsutil-XXXXXX", base && *base ? base : "/tmp");

	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		exit(1);
	}
	return dir;
}

/* What `path` holds ("" when it cannot be read), for CHECK_STR; the caller frees it. */
static char *slurp(const char *path)
{
	struct strbuf sb = STRBUF_INIT;

	if (strbuf_read_file(&sb, path, 1 << 20) < 0)
		strbuf_reset(&sb);
	return strbuf_detach(&sb, NULL);
}

/* Make `path` hold `text` (the old content a test replaces). */
static void put(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

	CHECK(fd >= 0 && fsutil_write_all(fd, text, strlen(text)) == 0);
	if (fd >= 0)
		close(fd);
}

/* How many entries `dir` holds beside . and .. */
static int entries(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	int n = 0;

	while (d && (de = readdir(d)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
			n++;
	if (d)
		closedir(d);
	return n;
}

/* Whether `s` contains `part`. */
static int has(const char *s, const char *part)
{
	return s && strstr(s, part) != NULL;
}

/* The whole content is replaced; a new file gets the mode asked for; nothing else remains. */
static void test_replaces(void)
{
	char *dir = scratch_dir(), *path = xasprintf("%s/nb.py", dir), *got;
	char *fresh = xasprintf("%s/new.json", dir);
	struct strbuf err = STRBUF_INIT;
	struct stat st;

	umask(022);
	put(path, "old content, longer than the new one\n");
	CHECK(fsutil_write_atomic(path, "new\n", 4, 0644, &err) == 0);
	CHECK_STR(got = slurp(path), "new\n");
	free(got);
	CHECK(entries(dir) == 1);		/* no temporary beside it */

	CHECK(fsutil_write_atomic(fresh, "{}", 2, 0600, &err) == 0);
	CHECK(lstat(fresh, &st) == 0 && S_ISREG(st.st_mode) && (st.st_mode & 07777) == 0600);
	CHECK(fsutil_write_atomic(fresh, "", 0, 0600, &err) == 0);	/* empty is content too */
	CHECK(lstat(fresh, &st) == 0 && st.st_size == 0);
	CHECK(entries(dir) == 2);
	CHECK_STR(err.buf, "");

	fsutil_remove_tree(dir);
	strbuf_release(&err);
	free(fresh);
	free(path);
	free(dir);
}

/*
 * fsutil_write_new(): a name that is free gets the file; one that is taken (a file, a link to
 * a file, a dangling link) stays as it was, with EEXIST, and no temporary is left.
 */
static void test_new_keeps_what_is_there(void)
{
	char *dir = scratch_dir(), *path = xasprintf("%s/1.png", dir), *got;
	char *link = xasprintf("%s/2.png", dir), *dangling = xasprintf("%s/3.png", dir);
	char *target = xasprintf("%s/target", dir);
	struct strbuf err = STRBUF_INIT;
	struct stat st;

	CHECK(fsutil_write_new(path, "first", 5, 0644, &err) == 0);
	CHECK(fsutil_write_new(path, "second", 6, 0644, &err) < 0 && errno == EEXIST);
	CHECK(has(err.buf, "1.png"));
	CHECK_STR(got = slurp(path), "first");
	free(got);
	put(target, "kept");
	CHECK(symlink(target, link) == 0 && symlink("nowhere", dangling) == 0);
	CHECK(fsutil_write_new(link, "x", 1, 0644, &err) < 0 && errno == EEXIST);
	CHECK(fsutil_write_new(dangling, "x", 1, 0644, &err) < 0 && errno == EEXIST);
	CHECK(lstat(link, &st) == 0 && S_ISLNK(st.st_mode));
	CHECK(lstat(dangling, &st) == 0 && S_ISLNK(st.st_mode));
	CHECK_STR(got = slurp(target), "kept");
	free(got);
	CHECK(entries(dir) == 4);		/* no temporary beside them */
	fsutil_remove_tree(dir);
	strbuf_release(&err);
	free(target);
	free(dangling);
	free(link);
	free(path);
	free(dir);
}

/* Streamed: until the commit a reader sees the old content; after it, all of the new. */
static void test_streamed(void)
{
	char *dir = scratch_dir(), *path = xasprintf("%s/cells.ipynb", dir), *got;
	struct fsutil_atomic a = FSUTIL_ATOMIC_INIT;
	struct strbuf err = STRBUF_INIT;

	put(path, "old");
	CHECK(fsutil_atomic_begin(&a, path, 0644, &err) == 0);
	CHECK(a.fd >= 0 && a.tmp && !strncmp(a.tmp, path, strlen(path)));
	CHECK(fsutil_write_all(a.fd, "first half, ", 12) == 0);
	CHECK_STR(got = slurp(path), "old");	/* half written: the target is as it was */
	free(got);
	CHECK(fsutil_write_all(a.fd, "second half", 11) == 0);
	CHECK(fsutil_atomic_commit(&a, &err) == 0);
	CHECK(a.fd == -1 && !a.tmp && !a.path);	/* nothing pending after it */
	CHECK_STR(got = slurp(path), "first half, second half");
	free(got);
	CHECK(entries(dir) == 1);

	/* Given up: the temporary goes, the target stays; a second rollback does nothing. */
	CHECK(fsutil_atomic_begin(&a, path, 0644, &err) == 0);
	CHECK(fsutil_write_all(a.fd, "never", 5) == 0);
	fsutil_atomic_rollback(&a);
	fsutil_atomic_rollback(&a);
	CHECK_STR(got = slurp(path), "first half, second half");
	free(got);
	CHECK(entries(dir) == 1);
	CHECK_STR(err.buf, "");

	fsutil_remove_tree(dir);
	strbuf_release(&err);
	free(path);
	free(dir);
}

/* A directory that does not exist: an error naming the file, nothing made. */
static void test_fails_no_dir(void)
{
	char *dir = scratch_dir(), *path = xasprintf("%s/missing/nb.py", dir);
	char *want = xasprintf("cannot write '%s': No such file or directory", path);
	struct strbuf err = STRBUF_INIT;

	CHECK(fsutil_write_atomic(path, "x", 1, 0644, &err) == -1);
	CHECK_STR(err.buf, want);
	CHECK(entries(dir) == 0);

	fsutil_remove_tree(dir);
	strbuf_release(&err);
	free(want);
	free(path);
	free(dir);
}

/* mkdir -p of a path that is a file (a --plots DIR that is one): an error at once, ENOTDIR. */
static void test_mkdir_p_file(void)
{
	char *dir = scratch_dir(), *file = xasprintf("%s/out", dir);
	char *sub = xasprintf("%s/made/deeper/", dir);

	put(file, "x");
	errno = 0;
	CHECK(fsutil_mkdir_p(file) == -1);
	CHECK(errno == ENOTDIR);
	CHECK(fsutil_mkdir_p(sub) == 0);	/* a trailing slash, made twice */
	CHECK(fsutil_mkdir_p(sub) == 0);

	fsutil_remove_tree(dir);
	free(sub);
	free(file);
	free(dir);
}

/* The rename fails (the target is a directory that holds something): it stays, no temporary. */
static void test_fails_rename(void)
{
	char *dir = scratch_dir(), *path = xasprintf("%s/nb.py", dir);
	char *inside = xasprintf("%s/kept", path), *got;
	struct strbuf err = STRBUF_INIT;
	struct stat st;

	CHECK(mkdir(path, 0700) == 0);
	put(inside, "kept");
	CHECK(fsutil_write_atomic(path, "x", 1, 0644, &err) == -1);
	CHECK(has(err.buf, path) && has(err.buf, "cannot write '"));
	CHECK(lstat(path, &st) == 0 && S_ISDIR(st.st_mode));
	CHECK_STR(got = slurp(inside), "kept");
	free(got);
	CHECK(entries(dir) == 1);		/* the temporary was removed */

	fsutil_remove_tree(dir);
	strbuf_release(&err);
	free(inside);
	free(path);
	free(dir);
}

/* A write that fails half way (a file size limit): the old content, no temporary. */
static void test_fails_write(void)
{
	char *dir = scratch_dir(), *path = xasprintf("%s/nb.py", dir), *got;
	struct strbuf err = STRBUF_INIT;
	struct rlimit saved, small = { 4096, 4096 };
	static char big[65536];

	put(path, "old");
	memset(big, 'x', sizeof(big));
	signal(SIGXFSZ, SIG_IGN);		/* EFBIG instead of the signal */
	CHECK(getrlimit(RLIMIT_FSIZE, &saved) == 0);
	small.rlim_max = saved.rlim_max;
	CHECK(setrlimit(RLIMIT_FSIZE, &small) == 0);
	CHECK(fsutil_write_atomic(path, big, sizeof(big), 0644, &err) == -1);
	CHECK(setrlimit(RLIMIT_FSIZE, &saved) == 0);
	signal(SIGXFSZ, SIG_DFL);
	CHECK(has(err.buf, path) && has(err.buf, "File too large"));
	CHECK_STR(got = slurp(path), "old");
	free(got);
	CHECK(entries(dir) == 1);

	fsutil_remove_tree(dir);
	strbuf_release(&err);
	free(path);
	free(dir);
}

/* A directory we may not write (not as root, who may): the error, the old content. */
static void test_fails_read_only_dir(void)
{
	char *dir = scratch_dir(), *path = xasprintf("%s/nb.py", dir), *got;
	struct strbuf err = STRBUF_INIT;

	put(path, "old");
	CHECK(chmod(dir, 0500) == 0);
	if (geteuid() == 0) {
		tap_note("skipped: root writes a read-only directory");
	} else {
		CHECK(fsutil_write_atomic(path, "new", 3, 0644, &err) == -1);
		CHECK(has(err.buf, path) && has(err.buf, "Permission denied"));
		CHECK_STR(got = slurp(path), "old");
		free(got);
		CHECK(entries(dir) == 1);
	}
	CHECK(chmod(dir, 0700) == 0);

	fsutil_remove_tree(dir);
	strbuf_release(&err);
	free(path);
	free(dir);
}

/* The temporary's name: beside the target, random, a new one each time, not the pid. */
static void test_unpredictable(void)
{
	char *dir = scratch_dir(), *path = xasprintf("%s/nb.py", dir);
	char *pid = xasprintf("%ld", (long)getpid()), *first;
	struct fsutil_atomic a = FSUTIL_ATOMIC_INIT, b = FSUTIL_ATOMIC_INIT;
	struct strbuf err = STRBUF_INIT;
	size_t n = strlen(path);

	CHECK(fsutil_atomic_begin(&a, path, 0644, &err) == 0);
	CHECK(fsutil_atomic_begin(&b, path, 0644, &err) == 0);	/* two at once: two names */
	CHECK(a.tmp && b.tmp && strcmp(a.tmp, b.tmp));
	CHECK(!strncmp(a.tmp, path, n) && !strncmp(a.tmp + n, ".tmp-", 5));
	CHECK(strlen(a.tmp + n + 5) == 16 && strspn(a.tmp + n + 5, "0123456789abcdef") == 16);
	CHECK(!has(a.tmp + n, pid));
	first = xstrdup(a.tmp);
	fsutil_atomic_rollback(&a);
	fsutil_atomic_rollback(&b);
	CHECK(fsutil_atomic_begin(&a, path, 0644, &err) == 0);	/* and one run after another */
	CHECK(a.tmp && strcmp(a.tmp, first));
	fsutil_atomic_rollback(&a);
	CHECK(entries(dir) == 0);

	fsutil_remove_tree(dir);
	strbuf_release(&err);
	free(first);
	free(pid);
	free(path);
	free(dir);
}

/*
 * Links planted at the names a guess would give (the pid, ".tmp", the old writers' names)
 * and at the target itself: none is followed, the file they point at keeps its content.
 */
static void test_planted_links(void)
{
	char *dir = scratch_dir(), *path = xasprintf("%s/nb.py", dir);
	char *victim = xasprintf("%s/victim", dir), *got;
	char *guesses[] = {
		xasprintf("%s.tmp", path),
		xasprintf("%s.tmp%ld", path, (long)getpid()),
		xasprintf("%s.tmp-%ld", path, (long)getpid()),
		xasprintf("%s.tmp-0000000000000000", path),
	};
	struct strbuf err = STRBUF_INIT;
	struct stat st;

	put(victim, "victim");
	for (size_t i = 0; i < ARRAY_SIZE(guesses); i++)
		CHECK(symlink(victim, guesses[i]) == 0);
	CHECK(fsutil_write_atomic(path, "new", 3, 0644, &err) == 0);
	CHECK_STR(got = slurp(path), "new");
	free(got);
	CHECK_STR(got = slurp(victim), "victim");
	free(got);
	for (size_t i = 0; i < ARRAY_SIZE(guesses); i++)
		CHECK(lstat(guesses[i], &st) == 0 && S_ISLNK(st.st_mode));

	/* A link at the target is replaced by the file, never written through. */
	CHECK(unlink(path) == 0 && symlink(victim, path) == 0);
	CHECK(fsutil_write_atomic(path, "newer", 5, 0644, &err) == 0);
	CHECK(lstat(path, &st) == 0 && S_ISREG(st.st_mode));
	CHECK_STR(got = slurp(path), "newer");
	free(got);
	CHECK_STR(got = slurp(victim), "victim");
	free(got);
	CHECK(entries(dir) == 2 + (int)ARRAY_SIZE(guesses));
	CHECK_STR(err.buf, "");

	fsutil_remove_tree(dir);
	strbuf_release(&err);
	for (size_t i = 0; i < ARRAY_SIZE(guesses); i++)
		free(guesses[i]);
	free(victim);
	free(path);
	free(dir);
}

static const struct tap_test tests[] = {
	{ "replaces", test_replaces },
	{ "streamed", test_streamed },
	{ "new_keeps_what_is_there", test_new_keeps_what_is_there },
	{ "fails_no_dir", test_fails_no_dir },
	{ "mkdir_p_file", test_mkdir_p_file },
	{ "fails_rename", test_fails_rename },
	{ "fails_write", test_fails_write },
	{ "fails_read_only_dir", test_fails_read_only_dir },
	{ "unpredictable", test_unpredictable },
	{ "planted_links", test_planted_links },
};

int main(int argc, char **argv)
{
	return tap_main(argc, argv, tests, ARRAY_SIZE(tests));
}
