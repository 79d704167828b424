/*
 * A policy's verdicts: the severities and what blocks, and a verdict as people read it (lines,
 * a summary), as JSON, and as the error event of a blocked cell (see policy.h).
 */
#include "policy.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static const char *const severity_names[] = {
	[POLICY_SAFE] = "SAFE",
	[POLICY_LOW] = "LOW",
	[POLICY_MEDIUM] = "MEDIUM",
	[POLICY_HIGH] = "HIGH",
};

static const char *const kind_names[] = {
	[POLICY_V_PATTERN] = "pattern",
	[POLICY_V_MODULE] = "module",
	[POLICY_V_DYNAMIC] = "dynamic",
};

const char *policy_severity_name(enum policy_severity s)
{
	return (unsigned)s < ARRAY_SIZE(severity_names) ? severity_names[s] : "?";
}

int policy_severity_parse(const char *s, size_t n, enum policy_severity *out)
{
	for (size_t i = 0; i < ARRAY_SIZE(severity_names); i++)
		if (strlen(severity_names[i]) == n && !strncasecmp(s, severity_names[i], n)) {
			*out = (enum policy_severity)i;
			return 0;
		}
	return -1;
}

int policy_blocks(const struct policy *p, enum policy_severity s)
{
	return p->threshold > POLICY_SAFE && s >= p->threshold;
}

void policy_verdict_release(struct policy_verdict *v)
{
	for (size_t i = 0; i < v->n; i++) {
		free(v->v[i].what);
		free(v->v[i].description);
	}
	free(v->v);
	memset(v, 0, sizeof(*v));
}

/* The rule a violation is about, as people read it: "module os", a pattern's regex. */
static void add_rule(const struct policy *p, const struct policy_violation *x, struct strbuf *sb)
{
	if (x->kind == POLICY_V_MODULE)
		strbuf_addf(sb, "module %s", p->modules[x->rule].name);
	else if (x->kind == POLICY_V_PATTERN)
		strbuf_addf(sb, "pattern %s", p->patterns[x->rule].regex);
	else
		strbuf_addstr(sb, "dynamic code");
}

void policy_verdict_lines(const struct policy *p, const struct policy_verdict *v,
			  struct strbuf *out)
{
	for (size_t i = 0; i < v->n; i++) {
		const struct policy_violation *x = &v->v[i];
		char pos[32];

		snprintf(pos, sizeof(pos), "%u:%u", x->line, x->column);
		strbuf_addf(out, "  %-7s %-6s ", pos, policy_severity_name(x->severity));
		add_rule(p, x, out);
		strbuf_addf(out, ": %s%s\n  %-7s %-6s %s\n", x->description,
			    policy_blocks(p, x->severity) ? "" : " (below the threshold)", "", "",
			    x->what);
	}
}

void policy_verdict_summary(const struct policy *p, const struct policy_verdict *v,
			    struct strbuf *out)
{
	size_t blocking = 0;

	for (size_t i = 0; i < v->n; i++)
		blocking += policy_blocks(p, v->v[i].severity);
	if (v->blocked)
		strbuf_addf(out, "blocked by policy '%s' (blocks %s and above): %zu violation%s",
			    p->name, policy_severity_name(p->threshold), blocking,
			    blocking == 1 ? "" : "s");
	else
		strbuf_addf(out, "safe under policy '%s' (%s)", p->name,
			    p->threshold == POLICY_SAFE ? "blocks nothing" : "no violation blocks");
	if (v->n > blocking)
		strbuf_addf(out, "%s%zu below the threshold", v->blocked ? ", and " : ": ",
			    v->n - blocking);
}

/* One violation as JSON. */
static cJSON *violation_json(const struct policy *p, const struct policy_violation *x)
{
	cJSON *o = cJSON_CreateObject();
	struct strbuf rule = STRBUF_INIT;

	cJSON_AddNumberToObject(o, "line", x->line);
	cJSON_AddNumberToObject(o, "column", x->column);
	cJSON_AddStringToObject(o, "kind", kind_names[x->kind]);
	if (x->kind == POLICY_V_MODULE)
		strbuf_addstr(&rule, p->modules[x->rule].name);
	else if (x->kind == POLICY_V_PATTERN)
		strbuf_addstr(&rule, p->patterns[x->rule].regex);
	if (x->kind == POLICY_V_DYNAMIC)
		cJSON_AddNullToObject(o, "rule");
	else
		cJSON_AddStringToObject(o, "rule", rule.buf);
	cJSON_AddStringToObject(o, "severity", policy_severity_name(x->severity));
	cJSON_AddStringToObject(o, "description", x->description);
	cJSON_AddStringToObject(o, "code", x->what);
	cJSON_AddBoolToObject(o, "blocking", policy_blocks(p, x->severity));
	strbuf_release(&rule);
	return o;
}

cJSON *policy_verdict_json(const struct policy *p, const struct policy_verdict *v)
{
	cJSON *o = cJSON_CreateObject(), *arr;

	cJSON_AddBoolToObject(o, "safe", !v->blocked);
	cJSON_AddStringToObject(o, "policy", p->name);
	cJSON_AddStringToObject(o, "threshold", policy_severity_name(p->threshold));
	arr = cJSON_AddArrayToObject(o, "violations");
	for (size_t i = 0; i < v->n; i++)
		cJSON_AddItemToArray(arr, violation_json(p, &v->v[i]));
	return o;
}

cJSON *policy_error_event(const struct policy *p, const struct policy_verdict *v)
{
	cJSON *ev = cJSON_CreateObject(), *tb, *arr;
	struct strbuf sb = STRBUF_INIT;
	const char *s;

	cJSON_AddStringToObject(ev, "type", "error");
	cJSON_AddStringToObject(ev, "ename", "SecurityViolation");
	policy_verdict_summary(p, v, &sb);
	cJSON_AddStringToObject(ev, "evalue", sb.buf);
	tb = cJSON_AddArrayToObject(ev, "traceback");
	{
		char *first = xasprintf("SecurityViolation: %s (the cell was not run)", sb.buf);
		cJSON_AddItemToArray(tb, cJSON_CreateString(first));
		free(first);
	}
	strbuf_reset(&sb);
	policy_verdict_lines(p, v, &sb);
	for (s = sb.buf; *s;) {
		size_t n = strcspn(s, "\n");
		char *l = xstrndup(s, n);

		cJSON_AddItemToArray(tb, cJSON_CreateString(l));
		free(l);
		s += n + (s[n] == '\n');
	}
	arr = cJSON_AddArrayToObject(ev, "violations");
	for (size_t i = 0; i < v->n; i++)
		cJSON_AddItemToArray(arr, violation_json(p, &v->v[i]));
	strbuf_release(&sb);
	return ev;
}
