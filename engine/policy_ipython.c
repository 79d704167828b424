/* IPython's syntax as the policy reads it (see policy_ipython.h). */
#include "policy_ipython.h"

#include <stdlib.h>
#include <string.h>

#define SHELL(n) { .name = n, .kind = MAGIC_SHELL }
#define ALIAS(n) { .name = n, .kind = MAGIC_SHELL, .named = 1 }
#define LINE(n, k) { .name = n, .kind = k }
#define CELL(n, k) { .name = n, .cell = 1, .kind = k }
#define DYN(n, w) { .name = n, .kind = MAGIC_DYNAMIC, .why = w }

/* IPython's magics that run something; every other magic is display or bookkeeping. */
static const struct ipython_magic magics[] = {
	/* shell commands */
	SHELL("sx"), SHELL("system"), SHELL("sc"), SHELL("alias"),
	ALIAS("cat"), ALIAS("cp"), ALIAS("ldir"), ALIAS("lf"), ALIAS("lk"), ALIAS("ll"),
	ALIAS("ls"), ALIAS("lx"), ALIAS("mkdir"), ALIAS("mv"), ALIAS("rm"), ALIAS("rmdir"),
	ALIAS("clear"), ALIAS("less"), ALIAS("more"), ALIAS("man"),
	ALIAS("pip"), ALIAS("conda"), ALIAS("mamba"), ALIAS("micromamba"),
	CELL("!", MAGIC_SHELL), CELL("bash", MAGIC_SHELL), CELL("sh", MAGIC_SHELL),
	CELL("script", MAGIC_SHELL), CELL("system", MAGIC_SHELL), CELL("sx", MAGIC_SHELL),
	CELL("perl", MAGIC_SHELL), CELL("ruby", MAGIC_SHELL), CELL("python", MAGIC_SHELL),
	CELL("python2", MAGIC_SHELL), CELL("python3", MAGIC_SHELL), CELL("pypy", MAGIC_SHELL),
	/* code */
	LINE("time", MAGIC_CODE), LINE("timeit", MAGIC_CODE), LINE("prun", MAGIC_CODE),
	LINE("debug", MAGIC_CODE),
	CELL("time", MAGIC_CODE), CELL("timeit", MAGIC_CODE), CELL("prun", MAGIC_CODE),
	CELL("debug", MAGIC_CODE), CELL("capture", MAGIC_CODE),
	/* files */
	LINE("run", MAGIC_RUN),
	LINE("save", MAGIC_WRITE), LINE("logstart", MAGIC_WRITE), LINE("notebook", MAGIC_WRITE),
	CELL("writefile", MAGIC_WRITE), CELL("file", MAGIC_WRITE),
	LINE("load", MAGIC_READ), LINE("loadpy", MAGIC_READ), LINE("pycat", MAGIC_READ),
	LINE("cd", MAGIC_CHDIR), LINE("pushd", MAGIC_CHDIR), LINE("popd", MAGIC_CHDIR),
	LINE("env", MAGIC_ENV), LINE("set_env", MAGIC_ENV),
	/* imports */
	LINE("load_ext", MAGIC_IMPORT), LINE("reload_ext", MAGIC_IMPORT),
	LINE("aimport", MAGIC_IMPORT),
	{ .name = "pylab", .kind = MAGIC_IMPORT, .modules = "pylab\0numpy\0matplotlib\0" },
	{ .name = "matplotlib", .kind = MAGIC_IMPORT, .modules = "matplotlib\0" },
	/* what cannot be followed */
	DYN("rerun", "reruns earlier input the policy does not see again"),
	DYN("rep", "puts earlier input or a variable's text into the next cell"),
	DYN("recall", "puts earlier input or a variable's text into the next cell"),
	DYN("macro", "makes a macro of earlier input or of a variable's text"),
	DYN("edit", "runs what an editor writes"),
	DYN("ed", "runs what an editor writes"),
	DYN("alias_magic", "gives a magic another name the policy does not know"),
	DYN("autocall", "turns on calls without parentheses (`exec 'code'`)"),
	DYN("rehashx", "makes every program on $PATH a magic"),
};

const struct ipython_magic *policy_ipython_magic_find(const char *name, size_t n, int cell)
{
	for (size_t i = 0; i < sizeof(magics) / sizeof(*magics); i++)
		if (!!magics[i].cell == !!cell && strlen(magics[i].name) == n &&
		    !memcmp(magics[i].name, name, n))
			return &magics[i];
	return NULL;
}

/* The length of the line break at s[i] as str.splitlines() sees them; 0 when none. */
static size_t line_break(const char *s, size_t len, size_t i)
{
	unsigned char c = (unsigned char)s[i];

	if (c == '\r')
		return i + 1 < len && s[i + 1] == '\n' ? 2 : 1;
	if (c == '\n' || c == '\v' || c == '\f' || (c >= 0x1c && c <= 0x1e))
		return 1;
	if (c == 0xc2 && i + 1 < len && (unsigned char)s[i + 1] == 0x85)
		return 2;
	if (c == 0xe2 && i + 2 < len && (unsigned char)s[i + 1] == 0x80 &&
	    ((unsigned char)s[i + 2] == 0xa8 || (unsigned char)s[i + 2] == 0xa9))
		return 3;
	return 0;
}

/* The length of the white space character at s[i] (as str.isspace() counts), 0 when none. */
static size_t space_at(const char *s, size_t len, size_t i)
{
	unsigned char c = (unsigned char)s[i], c1 = i + 1 < len ? (unsigned char)s[i + 1] : 0,
		      c2 = i + 2 < len ? (unsigned char)s[i + 2] : 0;

	if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f' ||
	    (c >= 0x1c && c <= 0x1f))
		return 1;
	if (c == 0xc2 && (c1 == 0x85 || c1 == 0xa0))
		return 2;
	if (c == 0xe1 && c1 == 0x9a && c2 == 0x80)
		return 3;				/* U+1680 */
	if (c == 0xe2 && c1 == 0x80 && ((c2 >= 0x80 && c2 <= 0x8a) || c2 == 0xa8 || c2 == 0xa9 ||
					c2 == 0xaf))
		return 3;				/* U+2000..200A, 2028, 2029, 202F */
	if (c == 0xe2 && c1 == 0x81 && c2 == 0x9f)
		return 3;				/* U+205F */
	if (c == 0xe3 && c1 == 0x80 && c2 == 0x80)
		return 3;				/* U+3000 */
	return 0;
}

/* The line starting at s[i]: its end (before the break) and where the next one starts. */
static size_t line_end(const char *s, size_t len, size_t i, size_t *next)
{
	size_t br = 0;

	while (i < len && !(br = line_break(s, len, i)))
		i++;
	*next = i + br;
	return i;
}

/* Whether s[a..b) is empty or white space only. */
static int blank_line(const char *s, size_t a, size_t b)
{
	while (a < b) {
		size_t n = space_at(s, b, a);
		if (!n)
			return 0;
		a += n;
	}
	return 1;
}

/* The length of a `>>> ` (first = 1) or `>>> `/`... ` prompt at s[a..b), 0 when none. */
static size_t classic_prompt(const char *s, size_t a, size_t b, int first)
{
	if (b - a >= 3 && (!memcmp(s + a, ">>>", 3) || (!first && !memcmp(s + a, "...", 3)))) {
		if (b - a == 3)
			return 3;
		if (s[a + 3] == ' ')
			return 4;
	}
	return 0;
}

/* The length of an `In [12]: ` or `   ...: ` prompt at s[a..b), 0 when none. */
static size_t ipython_prompt(const char *s, size_t a, size_t b)
{
	size_t i = a;

	if (b - i >= 6 && (!memcmp(s + i, "[nav] ", 6) || !memcmp(s + i, "[ins] ", 6)))
		i += 6;
	else if (i < b && s[i] == ' ' && b - i > 1 && s[i + 1] == 'I')
		i++;
	if (b - i >= 4 && !memcmp(s + i, "In [", 4)) {
		size_t d = i + 4;
		while (d < b && s[d] >= '0' && s[d] <= '9')
			d++;
		if (d > i + 4 && b - d >= 3 && !memcmp(s + d, "]: ", 3))
			return d + 3 - a;
	}
	i = a;
	while (i < b && space_at(s, b, i))
		i += space_at(s, b, i);
	{
		size_t dots = 0;
		while (i < b && s[i] == '.')
			i++, dots++;
		if (dots >= 3 && i < b && s[i] == ':')
			return i + 1 - a + (i + 1 < b && s[i + 1] == ' ');
	}
	return 0;
}

/* Where line `i` starts once the first line's indentation `ind[0..n)` is taken off. */
static size_t dedent(const char *s, size_t i, size_t end, const char *ind, size_t n)
{
	return end - i >= n && !memcmp(s + i, ind, n) ? i + n : i;
}

/* Blank one kind of prompt on every line from `first` when lines one or two have it. */
static void blank_kind(char *s, size_t len, size_t first, const char *ind, size_t n,
		       int classic)
{
	size_t next, e0 = line_end(s, len, first, &next), a0 = dedent(s, first, e0, ind, n);
	size_t second = next, e1 = line_end(s, len, second, &next), a1;
	int has;

	a1 = dedent(s, second, e1, ind, n);
	if (classic)
		has = classic_prompt(s, a0, e0, 1) || (second < len && classic_prompt(s, a1, e1, 0));
	else
		has = ipython_prompt(s, a0, e0) || (second < len && ipython_prompt(s, a1, e1));
	if (!has)
		return;
	for (size_t i = first; i < len; i = next) {
		size_t e = line_end(s, len, i, &next), a = dedent(s, i, e, ind, n), p;

		p = classic ? classic_prompt(s, a, e, 0) : ipython_prompt(s, a, e);
		memset(s + a, ' ', p);
		if (next == i)
			break;
	}
}

void policy_ipython_blank_prompts(char *s, size_t len)
{
	size_t first = 0, next, n = 0;

	/* leading_empty_lines */
	while (first < len) {
		size_t e = line_end(s, len, first, &next);
		if (!blank_line(s, first, e))
			break;
		first = next;
	}
	if (first >= len)
		return;
	/* leading_indent: the first line's indentation comes off every line that has it. */
	while (first + n < len && (s[first + n] == ' ' || s[first + n] == '\t'))
		n++;
	{
		char ind[256];

		if (n > sizeof(ind))
			n = sizeof(ind);
		memcpy(ind, s + first, n);
		blank_kind(s, len, first, ind, n, 1);
		blank_kind(s, len, first, ind, n, 0);
	}
}

/* Skip white space (and line breaks) from s[i]. */
static size_t skip_space(const char *s, size_t len, size_t i)
{
	size_t n;

	while (i < len && (n = space_at(s, len, i)))
		i += n;
	return i;
}

int policy_ipython_cell_magic(const char *s, size_t len, struct ipython_magic_at *at)
{
	/* Leading blank lines and indentation go first (every kind of white space, to be sure). */
	size_t i = skip_space(s, len, 0), end, next, p;

	if (len - i < 2 || s[i] != '%' || s[i + 1] != '%')
		return 0;
	end = line_end(s, len, i, &next);
	while (end > i && space_at(s, end, end - 1))
		end--;
	p = i + 2;
	at->name = p;
	while (p < end && s[p] != ' ')
		p++;
	at->name_len = p - at->name;
	/* %%name? is help */
	if (at->name_len && s[p - 1] == '?')
		return 0;
	at->args = p < end ? p + 1 : end;
	at->args_len = end - at->args;
	at->body = next;
	at->body_len = len - next;
	return 1;
}

int policy_ipython_automagic(const char *s, size_t len, struct ipython_magic_at *at)
{
	size_t i, end, next, w, rest;
	int lines = 0;

	/* Exactly one line that is not blank. */
	for (i = 0; i < len; i = next) {
		size_t e = line_end(s, len, i, &next);
		if (!blank_line(s, i, e))
			lines++;
		if (next == i)
			break;
	}
	if (lines != 1)
		return 0;
	i = skip_space(s, len, 0);
	end = line_end(s, len, i, &next);
	if (i >= end || (s[i] && strchr(",;/%!?", s[i])))
		return 0;	/* an escape: read as such */
	for (w = i; w < end && (s[w] == '_' || s[w] == '.' || s[w] == '*' ||
				(s[w] >= 'a' && s[w] <= 'z') || (s[w] >= 'A' && s[w] <= 'Z') ||
				(s[w] >= '0' && s[w] <= '9')); w++)
		;
	if (w == i || !policy_ipython_magic_find(s + i, w - i, 0))
		return 0;
	rest = w;
	while (rest < end && (s[rest] == ' ' || s[rest] == '\t'))
		rest++;
	if (rest < end && (s[rest] == '=' || s[rest] == ','))
		return 0;	/* an assignment: ls = 1 */
	while (end > rest && space_at(s, end, end - 1))
		end--;
	at->name = i;
	at->name_len = w - i;
	at->args = rest;
	at->args_len = end - rest;
	at->body = at->body_len = 0;
	return 1;
}
