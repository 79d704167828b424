#include "reason.h"

#include <string.h>

static const struct reason_row {
	const char *name;
	int exit_code;
	const char *meaning;	/* what the exit code says, for --help */
	int kernel_gone;
} reasons[] = {
	[REASON_OK] = { "ok", EXIT_OK, "ok" },
	[REASON_ERROR] = { "error", EXIT_CELL_ERROR, "the code raised" },
	[REASON_INTERRUPTED] = { "interrupted", EXIT_INTERRUPTED, "interrupted" },
	[REASON_INTERRUPT_KILLED] = { "interrupt_killed", EXIT_INTERRUPTED, "interrupted" },
	[REASON_TIMEOUT] = { "timeout", EXIT_TIMEOUT, "timeout" },
	[REASON_TIMEOUT_KILLED] = { "timeout_killed", EXIT_TIMEOUT, "timeout" },
	[REASON_KERNEL_DIED] = { "kernel_died", EXIT_KERNEL_DIED, "the kernel died", 1 },
	[REASON_OOM_KILLED] = { "oom_killed", EXIT_KERNEL_DIED, "the kernel died", 1 },
	[REASON_CHANNEL_LOST] = { "channel_lost", EXIT_KERNEL_DIED, "the kernel died", 1 },
	[REASON_CANNOT_START] = { "cannot_start", EXIT_NO_KERNEL, "the kernel could not start", 1 },
	[REASON_RESTARTED] = { "restarted", EXIT_KERNEL_DIED, "the kernel died" },
	[REASON_CLOSED] = { "closed", EXIT_KERNEL_DIED, "the kernel died" },
	[REASON_BAD_INPUT] = { "bad_input", EXIT_USAGE, "bad arguments or input (nothing ran)" },
	[REASON_BLOCKED] = { "blocked", EXIT_POLICY,
			     "the security policy blocked the code (nothing ran)" },
	[REASON_OUTPUT_LIMIT] = { "output_limit", EXIT_CELL_ERROR, "the code raised" },
	[REASON_QUOTA_EXCEEDED] = { "quota_exceeded", EXIT_KERNEL_DIED, "the kernel died", 1 },
};

_Static_assert(ARRAY_SIZE(reasons) == REASON_COUNT, "a reason without a row");

const char *reason_name(enum reason r)
{
	return (unsigned)r < REASON_COUNT ? reasons[r].name : "unknown";
}

int reason_parse(const char *name, enum reason *out)
{
	for (size_t i = 0; i < REASON_COUNT; i++)
		if (!strcmp(reasons[i].name, name)) {
			*out = (enum reason)i;
			return 0;
		}
	return -1;
}

int reason_exit_code(enum reason r)
{
	return (unsigned)r < REASON_COUNT ? reasons[r].exit_code : EXIT_CELL_ERROR;
}

int reason_kernel_gone(enum reason r)
{
	return (unsigned)r < REASON_COUNT && reasons[r].kernel_gone;
}

void reason_describe_exit_codes(const char *sep, struct strbuf *out)
{
	int last = -1;

	for (;;) {
		const struct reason_row *next = NULL;

		/* The smallest exit code above the last one, its first row's words. */
		for (size_t i = 0; i < REASON_COUNT; i++)
			if (reasons[i].exit_code > last &&
			    (!next || reasons[i].exit_code < next->exit_code))
				next = &reasons[i];
		if (!next)
			break;
		strbuf_addf(out, "%s%d %s", last < 0 ? "" : sep, next->exit_code, next->meaning);
		last = next->exit_code;
	}
}
