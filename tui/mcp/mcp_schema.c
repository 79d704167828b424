/* cellbox mcp: tool arguments checked against the JSON Schema subset the tools use. */
#include "mcp.h"
#include "numconv.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

/* Whether `v` is of JSON Schema type `type`. */
static int is_type(const cJSON *v, const char *type)
{
	if (!strcmp(type, "object"))
		return cJSON_IsObject(v);
	if (!strcmp(type, "array"))
		return cJSON_IsArray(v);
	if (!strcmp(type, "string"))
		return cJSON_IsString(v);
	if (!strcmp(type, "boolean"))
		return cJSON_IsBool(v);
	if (!strcmp(type, "null"))
		return cJSON_IsNull(v);
	if (!strcmp(type, "number"))
		return cJSON_IsNumber(v);
	if (!strcmp(type, "integer"))
		return json_integer(v, LLONG_MIN, LLONG_MAX, NULL);
	return 0;
}

/* "a string", "a number", "an integer or a string" for messages. */
static void add_types(struct strbuf *sb, const cJSON *type)
{
	const cJSON *t;
	int i = 0, n = cJSON_IsArray(type) ? cJSON_GetArraySize(type) : 1;

	if (cJSON_IsString(type)) {
		strbuf_addf(sb, "%s %s", strchr("aeiou", type->valuestring[0]) ? "an" : "a",
			    type->valuestring);
		return;
	}
	cJSON_ArrayForEach(t, type) {
		strbuf_addf(sb, "%s%s %s", i ? (i == n - 1 ? " or " : ", ") : "",
			    strchr("aeiou", t->valuestring[0]) ? "an" : "a", t->valuestring);
		i++;
	}
}

int mcp_schema_check(const cJSON *schema, const cJSON *value, const char *name,
		     struct strbuf *err)
{
	const cJSON *type = cJSON_GetObjectItemCaseSensitive(schema, "type"), *t, *e;
	const cJSON *props = cJSON_GetObjectItemCaseSensitive(schema, "properties");
	const cJSON *min = cJSON_GetObjectItemCaseSensitive(schema, "minimum");
	const cJSON *en = cJSON_GetObjectItemCaseSensitive(schema, "enum");
	const cJSON *items = cJSON_GetObjectItemCaseSensitive(schema, "items");
	const cJSON *max_items = cJSON_GetObjectItemCaseSensitive(schema, "maxItems");
	int ok = !type;

	if (cJSON_IsString(type))
		ok = is_type(value, type->valuestring);
	if (cJSON_IsArray(type))
		cJSON_ArrayForEach(t, type)
			ok |= cJSON_IsString(t) && is_type(value, t->valuestring);
	if (!ok) {
		strbuf_addf(err, "'%s' must be ", name);
		add_types(err, type);
		return -1;
	}
	if (cJSON_IsNumber(value) && cJSON_IsNumber(min) && value->valuedouble < min->valuedouble) {
		strbuf_addf(err, "'%s' must be at least %g", name, min->valuedouble);
		return -1;
	}
	if (cJSON_IsArray(en)) {
		ok = 0;
		cJSON_ArrayForEach(e, en)
			ok |= cJSON_IsString(e) && cJSON_IsString(value) &&
			      !strcmp(e->valuestring, value->valuestring);
		if (!ok) {
			strbuf_addf(err, "'%s' must be one of", name);
			cJSON_ArrayForEach(e, en)
				strbuf_addf(err, " %s", cJSON_IsString(e) ? e->valuestring : "?");
			return -1;
		}
	}
	if (cJSON_IsArray(value)) {
		int i = 0;

		if (cJSON_IsNumber(max_items) && cJSON_GetArraySize(value) > max_items->valueint) {
			strbuf_addf(err, "'%s' may have at most %d items", name, max_items->valueint);
			return -1;
		}
		cJSON_ArrayForEach(e, value) {
			char *sub = xasprintf("%s[%d]", name, i++);
			int rc = items ? mcp_schema_check(items, e, sub, err) : 0;
			free(sub);
			if (rc < 0)
				return -1;
		}
	}
	if (cJSON_IsObject(value)) {
		const cJSON *req = cJSON_GetObjectItemCaseSensitive(schema, "required");
		const cJSON *extra = cJSON_GetObjectItemCaseSensitive(schema, "additionalProperties");

		cJSON_ArrayForEach(e, req) {
			if (cJSON_IsString(e) && !cJSON_GetObjectItemCaseSensitive(value, e->valuestring)) {
				strbuf_addf(err, "'%s' is required", e->valuestring);
				return -1;
			}
		}
		cJSON_ArrayForEach(e, value) {
			const cJSON *p = cJSON_GetObjectItemCaseSensitive(props, e->string);

			if (!p && cJSON_IsFalse(extra)) {
				strbuf_addf(err, "unknown argument '%.100s' (takes", e->string);
				cJSON_ArrayForEach(p, props)
					strbuf_addf(err, " %s", p->string);
				strbuf_addstr(err, cJSON_GetArraySize(props) ? ")" : " none)");
				return -1;
			}
			if (p && mcp_schema_check(p, e, e->string, err) < 0)
				return -1;
		}
	}
	return 0;
}
