/*
 * Unit tests of what the gc removes by a dead container's label (channel_remove_labelled):
 * only a channel's name of the label's process, below the runtime directory, reached without a
 * link or "..", every directory on the way ours alone. The label is anyone's word; the case
 * with a real dockerd and forged labels is tests/hostile (gc_forged_label).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "channel.h"
#include "fsutil.h"
#include "util.h"
#include "../tap.h"

#define PID 999999999L
#define NAME(n) "999999999-" #n "-0123456789abcdef"

/* A directory with a file in it; 0 or -1. */
static int make_dir_with_file(const char *dir, mode_t mode)
{
	char *file = xasprintf("%s/data", dir);
	int rc = mkdir(dir, mode) == 0 && chmod(dir, mode) == 0 ? 0 : -1;
	FILE *f = rc == 0 ? fopen(file, "w") : NULL;

	if (f) {
		fputs("the host's\n", f);
		fclose(f);
	} else {
		rc = -1;
	}
	free(file);
	return rc;
}

/* Whether `dir`'s file is there. */
static int intact(const char *dir)
{
	char *file = xasprintf("%s/data", dir);
	struct stat st;
	int ok = lstat(file, &st) == 0 && S_ISREG(st.st_mode);

	free(file);
	return ok;
}

static void test_remove_labelled(void)
{
	const char *base = getenv("TMPDIR");
	char *top = xasprintf("%s/cellbox-gc-XXXXXX", base && *base ? base : "/tmp");
	char *root, *outside, *victim, *victim2, *link, *pool, *ours, *ours2, *path, *wide;

	if (!mkdtemp(top)) {
		CHECK(!"mkdtemp");
		return;
	}
	root = xasprintf("%s/run", top);
	outside = xasprintf("%s/precious", top);
	victim = xasprintf("%s/" NAME(0), outside);
	victim2 = xasprintf("%s/" NAME(1), outside);
	link = xasprintf("%s/link", root);
	pool = xasprintf("%s/pool", root);
	ours = xasprintf("%s/" NAME(2), pool);
	ours2 = xasprintf("%s/" NAME(3), root);
	wide = xasprintf("%s/wide", root);
	CHECK(mkdir(root, 0700) == 0 && mkdir(outside, 0755) == 0 && mkdir(pool, 0700) == 0);
	CHECK(make_dir_with_file(victim, 0700) == 0 && make_dir_with_file(victim2, 0700) == 0);
	CHECK(make_dir_with_file(ours, 0700) == 0 && make_dir_with_file(ours2, 0700) == 0);
	CHECK(symlink(outside, link) == 0);

	/* Outside the runtime directory: refused, whatever its name says. */
	CHECK(channel_remove_labelled(root, victim, PID) < 0 && intact(victim));
	/* Through a link in it, or ".." back out of it: refused. */
	path = xasprintf("%s/" NAME(1), link);
	CHECK(channel_remove_labelled(root, path, PID) < 0 && intact(victim2));
	free(path);
	path = xasprintf("%s/../precious/" NAME(0), root);
	CHECK(channel_remove_labelled(root, path, PID) < 0 && intact(victim));
	free(path);
	path = xasprintf("%s/./" NAME(3), root);
	CHECK(channel_remove_labelled(root, path, PID) < 0 && intact(ours2));
	free(path);
	/* A link as the channel itself: not followed (it is not a directory of ours). */
	path = xasprintf("%s/" NAME(4), root);
	CHECK(symlink(victim, path) == 0);
	CHECK(intact(path));
	channel_remove_labelled(root, path, PID);
	CHECK(intact(victim));
	free(path);
	/* Another process's name, a name that is no channel's: refused. */
	CHECK(channel_remove_labelled(root, ours2, PID + 1) < 0 && intact(ours2));
	path = xasprintf("%s/data", ours2);
	CHECK(channel_remove_labelled(root, path, PID) < 0 && intact(ours2));
	free(path);
	/* No root, a relative one, a prefix that is not a whole component: refused. */
	CHECK(channel_remove_labelled(NULL, ours2, PID) < 0 && intact(ours2));
	CHECK(channel_remove_labelled("run", ours2, PID) < 0 && intact(ours2));
	path = xasprintf("%s-x/" NAME(3), root);
	CHECK(channel_remove_labelled(root, path, PID) < 0);
	free(path);
	/* A directory on the way that others may write: refused. */
	CHECK(mkdir(wide, 0777) == 0 && chmod(wide, 0777) == 0);
	path = xasprintf("%s/" NAME(5), wide);
	CHECK(make_dir_with_file(path, 0700) == 0);
	CHECK(channel_remove_labelled(root, path, PID) < 0 && intact(path));
	free(path);

	/* Ours: removed, at the top and below (the pool's). */
	CHECK(channel_remove_labelled(root, ours2, PID) == 0 && access(ours2, F_OK) < 0);
	CHECK(channel_remove_labelled(root, ours, PID) == 0 && access(ours, F_OK) < 0);
	CHECK(intact(victim) && intact(victim2));

	fsutil_remove_tree(top);
	free(top);
	free(root);
	free(outside);
	free(victim);
	free(victim2);
	free(link);
	free(pool);
	free(ours);
	free(ours2);
	free(wide);
}

static const struct tap_test tests[] = {
	{ "remove_labelled", test_remove_labelled },
};

int main(int argc, char **argv)
{
	return tap_main(argc, argv, tests, ARRAY_SIZE(tests));
}
