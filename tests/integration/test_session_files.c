/*
 * The requests' files off the round trip (engine/session_files.c), on the real runner: the
 * next request's results file and command file made while a cell runs, a finished request's
 * files removed once the next command is out or the session ends, none left behind by a
 * restart or a close, and no descriptor kept past a bound. `test_session_files NAME` runs one.
 */
#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "session.h"
#include "util.h"
#include "../harness.h"

#ifndef TEST_PYTHON
#define TEST_PYTHON "/usr/bin/python3"
#endif

/* Entries of `dir` under the channel: regular names (*.json, *.jsonl) and temporary ones. */
static void count_files(const char *chdir, const char *dir, int *named, int *tmp)
{
	char *path = xasprintf("%s/%s", chdir, dir);
	DIR *d = opendir(path);
	struct dirent *de;

	*named = *tmp = 0;
	while (d && (de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (!strncmp(de->d_name, ".tmp-", 5))
			(*tmp)++;
		else
			(*named)++;
	}
	if (d)
		closedir(d);
	free(path);
}

static int open_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	int n = 0;

	while (d && readdir(d))
		n++;
	if (d)
		closedir(d);
	return n;
}

static void wait_ok(struct session *s, unsigned long id)
{
	CHECK(id != 0);
	while (id && session_wait(s, id) < 0)
		;
}

/*
 * While a cell runs: its own results file and the next one's (made ahead), its command and the
 * next one's temporary file; the cell before it left nothing. At the end: nothing at all.
 */
static void test_files_tidied(void)
{
	struct session_opts so = { 0 };
	struct strbuf err = STRBUF_INIT;
	struct session *s;
	int named, tmp;
	char *dir;

	so.python = TEST_PYTHON;
	so.keep_channel = 1;
	s = open_checked(&so);
	if (!s)
		return;
	dir = xstrdup(session_channel_dir(s));
	wait_ok(s, session_execute(s, "x = 1", 0, 0, NULL, NULL, &err));
	wait_ok(s, session_execute(s, "x += 1", 0, 0, NULL, NULL, &err));
	{
		unsigned long id = session_execute(s, "import time; time.sleep(0.3)", 0, 0, NULL,
						   NULL, &err);

		count_files(dir, "kernel/results", &named, &tmp);
		CHECK(named == 2);	/* this cell's, the next one's; not the two before */
		count_files(dir, "host/commands", &named, &tmp);
		CHECK(named == 1);	/* this cell's command */
		CHECK(tmp == 1);	/* the next one's, not named yet */
		wait_ok(s, id);
	}
	expect_result(s, "x", "2");
	session_close(s);
	count_files(dir, "kernel/results", &named, &tmp);
	CHECK(named == 0 && tmp == 0);
	count_files(dir, "host/commands", &named, &tmp);
	CHECK(named == 0 && tmp == 0);
	{
		char *cmd = xasprintf("rm -rf '%s'", dir);

		CHECK(system(cmd) == 0);
		free(cmd);
	}
	free(dir);
	strbuf_release(&err);
}

/* A restart remakes the kernel part: what was made ahead for the old kernel goes with it. */
static void test_files_after_restart(void)
{
	struct session_opts so = { 0 };
	struct strbuf err = STRBUF_INIT;
	struct session *s;
	int named, tmp;

	so.python = TEST_PYTHON;
	s = open_checked(&so);
	if (!s)
		return;
	wait_ok(s, session_execute(s, "y = 5", 0, 0, NULL, NULL, &err));
	CHECK(session_restart(s, &err) == 0);
	count_files(session_channel_dir(s), "kernel/results", &named, &tmp);
	CHECK(named == 0);
	count_files(session_channel_dir(s), "host/commands", &named, &tmp);
	CHECK(named == 0 && tmp == 0);
	expect_result(s, "'y' in dir()", "False");
	expect_result(s, "6 * 7", "42");
	session_close(s);
	strbuf_release(&err);
}

/* Many cells, some queued at once: the host holds a bounded number of descriptors. */
static void test_files_bounded(void)
{
	struct session_opts so = { 0 };
	struct strbuf err = STRBUF_INIT;
	unsigned long ids[40];
	struct session *s;
	int before, after, named, tmp;

	so.python = TEST_PYTHON;
	s = open_checked(&so);
	if (!s)
		return;
	wait_ok(s, session_execute(s, "n = 0", 0, 0, NULL, NULL, &err));
	before = open_fds();
	for (int round = 0; round < 3; round++) {
		for (size_t i = 0; i < ARRAY_SIZE(ids); i++)
			ids[i] = session_execute(s, "n += 1", 0, 0, NULL, NULL, &err);
		for (size_t i = 0; i < ARRAY_SIZE(ids); i++)
			wait_ok(s, ids[i]);
	}
	after = open_fds();
	{
		char *note = xasprintf("descriptors: %d before, %d after 120 cells", before, after);

		tap_note(note);
		free(note);
	}
	CHECK(after - before <= 18);	/* at most 16 finished requests' and the two made ahead */
	count_files(session_channel_dir(s), "kernel/results", &named, &tmp);
	CHECK(named <= 18);
	expect_result(s, "n", "120");
	session_close(s);
	strbuf_release(&err);
}

static const struct tap_test tests[] = {
	{ "files_tidied", test_files_tidied },
	{ "files_after_restart", test_files_after_restart },
	{ "files_bounded", test_files_bounded },
};

int main(int argc, char **argv)
{
	return tap_main(argc, argv, tests, ARRAY_SIZE(tests));
}
