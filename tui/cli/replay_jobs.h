#ifndef CELLBOX_REPLAY_JOBS_H
#define CELLBOX_REPLAY_JOBS_H

/*
 * `cellbox replay FILE...`: many cell files, --jobs at a time (replay_jobs.c), each replayed
 * by cmd_replay_file() (cmd_replay.c) in a process of its own: a fork() of cellbox, its
 * stdout and stderr captured (bounded, on disk), so each file gets a session and a kernel of
 * its own (leased from the pool when there is one) exactly as `cellbox replay FILE` would.
 *
 *   | what              | one file              | several files                          |
 *   |-------------------|-----------------------|----------------------------------------|
 *   | process           | cellbox itself        | a fork per file, --jobs at once        |
 *   | stdout            | the transcript, live  | each file's transcript whole, in the   |
 *   |                   |                       | order of the arguments                 |
 *   | stderr            | messages, the bar     | "==> FILE <==", its messages; a bar of |
 *   |                   |                       | files done / total; the summary table  |
 *   | -o, --plots       | a file, a directory   | directories: DIR/NAME.ipynb, DIR/NAME/ |
 *   | exit code         | the file's            | the worst of the files' (see --help)   |
 */

#include "cli.h"

/* What the caller decides for one file's replay instead of its options (NULL: the options). */
struct replay_file_opts {
	const char *out_path;	/* the notebook to write, or NULL */
	const char *plots_dir;	/* where plots go, or NULL (next to the history) */
	int color;		/* colours in the transcript */
	const char *junit_path;	/* --junit: where its <testsuite> goes, or NULL */
};

/* How one file's replay went (for the summary table). */
struct replay_result {
	int rc;			/* its exit code; -1 until it ended */
	int ran, failed, skipped, differ;	/* cells */
};

/*
 * Replay `file` in a fresh session with the options of `args` (or those of `opts`, which also
 * turns the progress bar off), print its transcript; `res` (may be NULL) says how it went.
 * Returns the exit code.
 */
int cmd_replay_file(const struct cli_args *args, struct cellbox_config *cfg, const char *file,
		    const struct replay_file_opts *opts, struct replay_result *res);
/* Check the options every file's replay takes alike (--check-ignore): -1 after saying why. */
int cmd_replay_check_options(const struct cli_args *args);
/*
 * papermill's parameters (replay_params.c): -f files, -p and -r pairs. The check reads them
 * all and says what is wrong (-1); the injection puts the cell papermill writes for the
 * language of `kernel` (NULL: Python) into `nb` and records them in its metadata, warns as
 * papermill does when no cell is tagged parameters; nothing when no parameter is given.
 */
int replay_params_check(const struct cli_args *args);
int replay_params_inject(const struct cli_args *args, const char *kernel, cJSON *nb,
			 const char *file);
/*
 * Replay every file of `args` (two or more), `jobs` at a time (0: one per CPU), print their
 * output file by file and the summary table. Returns the worst exit code of the files.
 */
int replay_jobs_run(const struct cli_args *args, struct cellbox_config *cfg, int jobs);

#endif
