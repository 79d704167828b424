/*
 * The security policy: the corpus of cells and verdicts (tests/policy/corpus.txt) against the
 * presets, policy files and their errors, the lookup of names, the JSON verdict, the
 * tokenizer under it, and a sweep of mutated cells and policy files.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "policy.h"
#include "pylex.h"
#include "util.h"
#include "../tap.h"

#ifndef POLICIES_DIR
#error POLICIES_DIR must name engine/policies
#endif
#ifndef CORPUS_DIR
#error CORPUS_DIR must name tests/policy
#endif

static const char *const presets[] = {
	"development", "production", "educational", "data_science", "web_scraping", "minimal",
	"strict",
};

/* Load a preset or a file of tests/policy by name; NULL after a failed CHECK. */
static struct policy *load(const char *name)
{
	struct strbuf err = STRBUF_INIT;
	char *path = strchr(name, '.') ? xasprintf("%s/%s", CORPUS_DIR, name)
				       : xasprintf("%s/%s.policy", POLICIES_DIR, name);
	struct policy *p = policy_load(path, &err);

	if (!p)
		tap_note(err.buf);
	CHECK(p != NULL);
	free(path);
	strbuf_release(&err);
	return p;
}

/* One violation as the corpus writes it: "L:C KIND RULE". */
static void describe(const struct policy *p, const struct policy_violation *x, struct strbuf *sb)
{
	static const char *const kinds[] = { "pattern", "module", "dynamic" };

	strbuf_addf(sb, "%u:%u %s ", x->line, x->column, kinds[x->kind]);
	if (x->kind == POLICY_V_MODULE)
		strbuf_addstr(sb, p->modules[x->rule].name);
	else if (x->kind == POLICY_V_PATTERN)
		strbuf_addstr(sb, p->patterns[x->rule].description);
	else
		strbuf_addch(sb, '-');
	strbuf_addch(sb, '\n');
}

struct corpus_case {
	char name[128];
	char policy[64];
	char verdict[16];
	struct strbuf violations;	/* expected, one a line */
	struct strbuf verdicts;		/* "P=V P=V" */
	struct strbuf code;
	int has_violations;
};

/* Check one case; returns how many checks failed. */
static void run_case(struct corpus_case *c)
{
	struct strbuf got = STRBUF_INIT, diag = STRBUF_INIT;
	struct policy_verdict v;

	if (c->policy[0]) {
		struct policy *p = load(c->policy);

		if (!p)
			return;
		policy_check(p, c->code.buf, c->code.len, &v);
		for (size_t i = 0; i < v.n; i++)
			describe(p, &v.v[i], &got);
		strbuf_addf(&diag, "case '%s' (%s): got %s\n%s", c->name, c->policy,
			    v.blocked ? "blocked" : "safe", got.buf);
		if ((v.blocked ? "blocked" : "safe")[0] != c->verdict[0] ||
		    (c->has_violations && strcmp(got.buf, c->violations.buf)) ||
		    (!c->has_violations && v.n)) {
			tap_note(diag.buf);
			tap_note("expected:");
			tap_note(c->verdict);
			tap_note(c->violations.buf);
			CHECK(!"the verdict of the case above");
		} else {
			CHECK(1);
		}
		policy_verdict_release(&v);
		policy_free(p);
	}
	for (const char *w = c->verdicts.buf; *w;) {
		size_t n = strcspn(w, " "), k = strcspn(w, "=");
		char name[64], want[16];
		struct policy *p;

		if (k >= n || k >= sizeof(name) || n - k - 1 >= sizeof(want))
			break;
		memcpy(name, w, k);
		name[k] = '\0';
		memcpy(want, w + k + 1, n - k - 1);
		want[n - k - 1] = '\0';
		p = load(name);
		if (p) {
			policy_check(p, c->code.buf, c->code.len, &v);
			if (strcmp(v.blocked ? "blocked" : "safe", want)) {
				strbuf_reset(&diag);
				strbuf_addf(&diag, "case '%s' under %s: %s, expected %s", c->name, name,
					    v.blocked ? "blocked" : "safe", want);
				tap_note(diag.buf);
				CHECK(!"the verdict of the case above");
			} else {
				CHECK(1);
			}
			policy_verdict_release(&v);
			policy_free(p);
		}
		w += n;
		w += strspn(w, " ");
	}
	strbuf_release(&got);
	strbuf_release(&diag);
}

/* Every case of the corpus gets the verdict (and exactly the violations) it lists. */
static void test_corpus(void)
{
	struct strbuf text = STRBUF_INIT;
	struct corpus_case c;
	const char *s;
	int in_code = 0, cases = 0;

	CHECK(strbuf_read_file(&text, CORPUS_DIR "/corpus.txt", 1u << 20) == 0);
	memset(&c, 0, sizeof(c));
	strbuf_init(&c.violations, 0);
	strbuf_init(&c.verdicts, 0);
	strbuf_init(&c.code, 0);
	for (s = text.buf; *s;) {
		size_t n = strcspn(s, "\n");
		char line[512];

		snprintf(line, sizeof(line), "%.*s", (int)n, s);
		s += n + (s[n] == '\n');
		if (in_code) {
			if (!strcmp(line, "end")) {
				in_code = 0;
				run_case(&c);
				cases++;
				continue;
			}
			strbuf_addf(&c.code, "%s%s", c.code.len ? "\n" : "", line);
			continue;
		}
		if (!strncmp(line, "case ", 5)) {
			strbuf_reset(&c.violations);
			strbuf_reset(&c.verdicts);
			strbuf_reset(&c.code);
			c.policy[0] = c.verdict[0] = '\0';
			c.has_violations = 0;
			snprintf(c.name, sizeof(c.name), "%.127s", line + 5);
		} else if (!strncmp(line, "policy ", 7)) {
			snprintf(c.policy, sizeof(c.policy), "%.63s", line + 7);
		} else if (!strncmp(line, "verdict ", 8)) {
			snprintf(c.verdict, sizeof(c.verdict), "%.15s", line + 8);
		} else if (!strncmp(line, "violation ", 10)) {
			strbuf_addf(&c.violations, "%s\n", line + 10);
			c.has_violations = 1;
		} else if (!strncmp(line, "verdicts ", 9)) {
			strbuf_addstr(&c.verdicts, line + 9);
		} else if (!strcmp(line, "code")) {
			in_code = 1;
		}
	}
	{
		char note[32];
		snprintf(note, sizeof(note), "%d cases", cases);
		tap_note(note);
	}
	CHECK(cases >= 50);
	strbuf_release(&c.violations);
	strbuf_release(&c.verdicts);
	strbuf_release(&c.code);
	strbuf_release(&text);
}

/* Parse text and return the error (empty when it parsed). */
static char *parse_error(const char *text)
{
	struct strbuf err = STRBUF_INIT;
	struct policy *p = policy_parse(text, "t.policy", &err);

	policy_free(p);
	return strbuf_detach(&err, NULL);
}

/* Bad policy files say what is wrong, with the file and the line. */
static void test_files(void)
{
	struct strbuf err = STRBUF_INIT;
	struct policy *p;
	char *e;

	p = policy_load(CORPUS_DIR "/bad_pattern.policy", &err);
	CHECK(p == NULL);
	CHECK(strstr(err.buf, "bad_pattern.policy:5: invalid pattern 'os\\.system\\s*(': "
			      "missing closing parenthesis") != NULL);
	tap_note(err.buf);
	e = parse_error("threshold = SEVERE\n");
	CHECK_STR(e, "t.policy:1: threshold: 'SEVERE' is not a severity (SAFE, LOW, MEDIUM or HIGH)");
	free(e);
	e = parse_error("\nmodule 1os HIGH x\n");
	CHECK(strstr(e, "t.policy:2: '1os' is not a module name") == e);
	free(e);
	e = parse_error("pattern HIGH x\n");
	CHECK_STR(e, "t.policy:2: a pattern line needs its regular expression on the next line");
	free(e);
	e = parse_error("colour = red\n");
	CHECK(strstr(e, "t.policy:1: unknown setting 'colour'") == e);
	free(e);
	e = parse_error("block os\n");
	CHECK(strstr(e, "t.policy:1: expected 'module NAME SEVERITY DESCRIPTION'") == e);
	free(e);
	/* A regex line is taken verbatim: '#' and '=' are the pattern's own. */
	strbuf_reset(&err);
	p = policy_parse("# c\nthreshold = low  # a comment\ndynamic = HIGH\n"
			 "pattern MEDIUM strings Hash # then\n    [#=]x\nmodule os.path LOW P\n",
			 "t.policy", &err);
	CHECK(p && p->threshold == POLICY_LOW && p->dynamic == POLICY_HIGH);
	CHECK(p && p->npatterns == 1 && !strcmp(p->patterns[0].regex, "[#=]x") &&
	      p->patterns[0].strings && p->patterns[0].line == 5 &&
	      !strcmp(p->patterns[0].description, "Hash # then"));
	CHECK(p && p->nmodules == 1 && !strcmp(p->modules[0].name, "os.path"));
	policy_free(p);
	/* Every preset loads, with the threshold llm-sandbox gives it. */
	for (size_t i = 0; i < ARRAY_SIZE(presets); i++) {
		static const enum policy_severity want[] = {
			POLICY_HIGH, POLICY_LOW, POLICY_MEDIUM, POLICY_MEDIUM, POLICY_MEDIUM,
			POLICY_HIGH, POLICY_LOW,
		};
		p = load(presets[i]);
		CHECK(p && p->threshold == want[i] && p->npatterns > 0 && p->nmodules > 0);
		policy_free(p);
	}
	strbuf_release(&err);
}

/* Names are looked up in $XDG_CONFIG_HOME/cellbox/policies first; unknown names list them. */
static void test_lookup(void)
{
	char dir[] = "/tmp/cellbox-policy-XXXXXX";
	struct strbuf err = STRBUF_INIT;
	struct policy *p;
	char *sub, *file;
	FILE *f;

	CHECK(mkdtemp(dir) != NULL);
	sub = xasprintf("%s/cellbox/policies", dir);
	CHECK(fsutil_mkdir_p(sub) == 0);
	file = xasprintf("%s/mine.policy", sub);
	f = fopen(file, "w");
	CHECK(f != NULL);
	fputs("threshold = HIGH\nmodule turtle HIGH Turtles\n", f);
	fclose(f);
	setenv("XDG_CONFIG_HOME", dir, 1);
	p = policy_load("mine", &err);
	CHECK(p && !strcmp(p->name, "mine") && !strcmp(p->source, file));
	policy_free(p);
	p = policy_load("nosuch", &err);
	CHECK(p == NULL && strstr(err.buf, "no policy 'nosuch' (the policies there are: ") &&
	      strstr(err.buf, "mine"));
	tap_note(err.buf);
	strbuf_reset(&err);
	p = policy_load("../x", &err);
	CHECK(p == NULL && strstr(err.buf, "cannot read policy '../x'"));
	strbuf_reset(&err);
	p = policy_load("a b", &err);
	CHECK(p == NULL && strstr(err.buf, "'a b' is not a policy name"));
	CHECK(policy_is_none("none") && policy_is_none("") && !policy_is_none("strict"));
	unlink(file);
	fsutil_remove_tree(dir);
	free(sub);
	free(file);
	strbuf_release(&err);
}

/* The JSON verdict, the error event of a blocked cell and the import hook's request. */
static void test_json(void)
{
	struct policy *p = load("llm_sandbox_example.policy");
	struct policy_verdict v;
	cJSON *o, *x, *ev, *hook;
	const char *code = "import os\nos.system('whoami')\n";

	if (!p)
		return;
	policy_check(p, code, strlen(code), &v);
	o = policy_verdict_json(p, &v);
	CHECK(cJSON_IsFalse(cJSON_GetObjectItem(o, "safe")));
	CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItem(o, "threshold")), "MEDIUM");
	CHECK(cJSON_GetArraySize(cJSON_GetObjectItem(o, "violations")) == 2);
	x = cJSON_GetArrayItem(cJSON_GetObjectItem(o, "violations"), 0);
	CHECK(cJSON_GetNumberValue(cJSON_GetObjectItem(x, "line")) == 1);
	CHECK(cJSON_GetNumberValue(cJSON_GetObjectItem(x, "column")) == 8);
	CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItem(x, "kind")), "module");
	CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItem(x, "rule")), "os");
	CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItem(x, "severity")), "HIGH");
	CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItem(x, "code")), "import os");
	CHECK(cJSON_IsTrue(cJSON_GetObjectItem(x, "blocking")));
	ev = policy_error_event(p, &v);
	CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItem(ev, "ename")), "SecurityViolation");
	CHECK(strstr(cJSON_GetStringValue(cJSON_GetObjectItem(ev, "evalue")),
		     "blocked by policy 'llm_sandbox_example' (blocks MEDIUM and above): 2 violations"));
	CHECK(cJSON_GetArraySize(cJSON_GetObjectItem(ev, "traceback")) == 5);
	hook = policy_hook_request(p);
	CHECK(hook && cJSON_GetArraySize(cJSON_GetObjectItem(hook, "modules")) == 1);
	cJSON_Delete(o);
	cJSON_Delete(ev);
	cJSON_Delete(hook);
	policy_verdict_release(&v);
	policy_free(p);
	/* A policy whose modules are all below its threshold asks the kernel for nothing. */
	p = load("educational");
	policy_free(p);
	{
		struct strbuf err = STRBUF_INIT;
		p = policy_parse("threshold = HIGH\nmodule socket LOW s\n", "t", &err);
		strbuf_release(&err);
	}
	CHECK(p && policy_hook_request(p) == NULL);
	policy_free(p);
}

/* The tokens of `text` as "TYPE:text|" (types N S O C E; newlines as L and l). */
static char *tokens(const char *text)
{
	static const char letters[] = "-NnSOCLlE";
	struct strbuf sb = STRBUF_INIT;
	struct pylex lx;
	struct py_token t;

	pylex_init(&lx, text, strlen(text));
	while (pylex_next(&lx, &t) != PY_END)
		strbuf_addf(&sb, "%c%s:%.*s|", letters[t.type], t.line_first ? "^" : "",
			    t.type == PY_NEWLINE || t.type == PY_NL ? 0 : (int)(t.end - t.start),
			    text + t.start);
	return strbuf_detach(&sb, NULL);
}

/* The tokenizer: prefixes, triple quotes, continuations, brackets, f-string fields. */
static void test_tokens(void)
{
	char *t;
	struct pylex lx;
	struct py_token tok;
	size_t pos, fs, fe;
	const char *f = "f'{a[\"}\"]}{{x}}{b!r:>{w}}'";

	t = tokens("x = rb'a\\'b' # c\n");
	CHECK_STR(t, "N^:x|O:=|S:rb'a\\'b'|C:# c|L:|");
	free(t);
	t = tokens("a = (1,\n 2) \\\n+ 3\n!ls\n");
	CHECK_STR(t, "N^:a|O:=|O:(|n:1|O:,|l:|n:2|O:)|O:+|n:3|L:|E^:!|N:ls|L:|");
	free(t);
	t = tokens("s = '''x\n#y''' ; x != y\n");
	CHECK_STR(t, "N^:s|O:=|S:'''x\n#y'''|O:;|N:x|O:!=|N:y|L:|");
	free(t);
	t = tokens("u = ub'x'\n");	/* not a prefix: a name, then a string */
	CHECK_STR(t, "N^:u|O:=|N:ub|S:'x'|L:|");
	free(t);
	/* A quote inside an f-string field does not end the string (Python 3.12). */
	pylex_init(&lx, f, strlen(f));
	CHECK(pylex_next(&lx, &tok) == PY_STRING && tok.end == strlen(f) && (tok.flags & PY_STR_F));
	pos = tok.body;
	CHECK(pylex_fstring_field(f, &tok, &pos, &fs, &fe) && fe - fs == 6 && !memcmp(f + fs, "a[\"}\"]", 6));
	CHECK(pylex_fstring_field(f, &tok, &pos, &fs, &fe) && !memcmp(f + fs, "b!r:>{w}", fe - fs));
	CHECK(!pylex_fstring_field(f, &tok, &pos, &fs, &fe));
	/* An unclosed one-quote string stops at its line; a triple one runs on. */
	t = tokens("x = 'abc\ny = 1\n");
	CHECK_STR(t, "N^:x|O:=|S:'abc|L:|N^:y|O:=|n:1|L:|");
	free(t);
}

static unsigned long long fuzz_state = 0x9e3779b97f4a7c15ULL;

static unsigned fuzz_next(void)
{
	fuzz_state ^= fuzz_state << 13;
	fuzz_state ^= fuzz_state >> 7;
	fuzz_state ^= fuzz_state << 17;
	return (unsigned)fuzz_state;
}

/* Mutated cells and policy files never crash the reader (the sanitizers judge). */
static void test_fuzz(void)
{
	static const char syntax[] = "\"'#%!?,;/\\{}()[]\n\r\t =.fbr\x80\xc3\xe2";
	static const char *const seeds[] = {
		"import os, sys\nfrom os.path import (join as j,\n x)\n",
		"f\"{__import__('os')!r:>{w}}\" + rb'\\x00' + '''\n#'''\n",
		"%%bash\necho 'a' \\\n b\n", ">>> !ls\n... %time exec('import os')\n",
		";exec import os\n,f a b\n/f a\nx = !ls\ny = %who\n",
		"get_ipython().run_cell_magic('sh', '', 'id')\nsys.modules['os']\n",
		"eval(compile(\"\\N{DASH}\", 'x', 'exec'))\nexec(b'\\x69mport os')\n",
		"threshold = LOW\nmodule os HIGH x\npattern MEDIUM strings y\n    a[b]+\n",
	};
	struct policy *p = load("strict");
	struct strbuf in = STRBUF_INIT, err = STRBUF_INIT;
	int runs = 0;

	if (!p)
		return;
	for (int round = 0; round < 4000; round++) {
		const char *seed = seeds[fuzz_next() % ARRAY_SIZE(seeds)];
		int edits = 1 + (int)(fuzz_next() % 12);
		struct policy_verdict v;
		struct policy *q;

		strbuf_reset(&in);
		strbuf_addstr(&in, seed);
		for (int k = 0; k < edits && in.len; k++) {
			size_t at = fuzz_next() % in.len;
			char c = (fuzz_next() & 1) ? syntax[fuzz_next() % (sizeof(syntax) - 1)]
						   : (char)fuzz_next();
			if (c == '\0')
				c = ' ';
			if (fuzz_next() & 1) {
				in.buf[at] = c;
			} else {
				strbuf_addch(&in, ' ');
				memmove(in.buf + at + 1, in.buf + at, in.len - at - 1);
				in.buf[at] = c;
			}
		}
		policy_check(p, in.buf, in.len, &v);
		for (size_t i = 0; i < v.n; i++)
			if (v.v[i].line == 0 || v.v[i].column == 0)
				CHECK(!"a violation outside the cell");
		policy_verdict_release(&v);
		strbuf_reset(&err);
		q = policy_parse(in.buf, "fuzz", &err);
		policy_free(q);
		runs++;
	}
	CHECK(runs == 4000);
	strbuf_release(&in);
	strbuf_release(&err);
	policy_free(p);
}

static const struct tap_test tests[] = {
	{ "corpus", test_corpus },
	{ "files", test_files },
	{ "lookup", test_lookup },
	{ "json", test_json },
	{ "tokens", test_tokens },
	{ "fuzz", test_fuzz },
};

int main(int argc, char **argv)
{
	return tap_main(argc, argv, tests, ARRAY_SIZE(tests));
}
