/* Unit tests of the MCP server's parts that read outside input: framing, the scan of an
 * oversized message, base64, the schema check, and whole lines through the dispatcher. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mcp.h"
#include "../tap.h"

/* The id a scan of `text` finds, printed ("(none)" when none). */
static char *scan_id(const char *text)
{
	struct mcp_scan sc;
	cJSON *id;
	char *out;

	mcp_scan_init(&sc);
	mcp_scan_feed(&sc, text, strlen(text));
	id = mcp_scan_id(&sc);
	out = id ? cJSON_PrintUnformatted(id) : xstrdup("(none)");
	cJSON_Delete(id);
	return out;
}

static void test_scan(void)
{
	static const struct { const char *text, *id; } cases[] = {
		{ "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"x\",\"params\":{\"a\":1}}", "7" },
		{ "{\"method\":\"x\",\"params\":{\"id\":1,\"b\":[{\"id\":2}]},\"id\":\"last\"}",
		  "\"last\"" },
		{ "  {\"params\":{\"s\":\"\\\"id\\\":3 }\"},\"id\" : -12 }", "-12" },
		{ "{\"params\":\"}{\\\\\",\"id\":\"a\\\"b\"}", "\"a\\\"b\"" },
		{ "{\"method\":\"notifications/x\",\"params\":{}}", "(none)" },
		{ "{\"id\":{\"nested\":1}}", "(none)" },
		{ "{\"id\":null}", "(none)" },
		{ "{\"id\":true}", "(none)" },
		{ "[{\"id\":1}]", "(none)" },
		{ "{\"averyveryverylongkey\":1,\"id\":9}", "9" },
		{ "{\"idx\":1,\"xid\":2}", "(none)" },
		{ "{\"id\":1", "(none)" },	/* cut short: the number may go on */
		{ "{\"id\":\"12345", "(none)" },
	};
	struct mcp_scan sc;
	char longid[400];

	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		char *got = scan_id(cases[i].text);
		CHECK_STR(got, cases[i].id);
		free(got);
	}
	/* Byte by byte is the same as all at once. */
	mcp_scan_init(&sc);
	for (const char *p = cases[1].text; *p; p++)
		mcp_scan_feed(&sc, p, 1);
	CHECK(sc.has_id && sc.has_method && sc.idlen == 6 && !memcmp(sc.id, "\"last\"", 6));
	/* An id longer than the scan keeps is no id. */
	memset(longid, 'a', sizeof(longid));
	memcpy(longid, "{\"id\":\"", 7);
	strcpy(longid + sizeof(longid) - 3, "\"}");
	{
		char *got = scan_id(longid);
		CHECK_STR(got, "(none)");
		free(got);
	}
}

struct lines {
	char *got[16];
	size_t len[16];
	int n, oversized;
	char *over_id;
};

/* Collect what the reader hands out. */
static void collect(struct mcp_reader *r, const char *line, size_t len, void *data)
{
	struct lines *l = data;

	if (l->n == 16)
		return;
	l->len[l->n] = len;
	if (line) {
		l->got[l->n] = xstrndup(line, len);
	} else {
		cJSON *id = mcp_scan_id(&r->scan);
		l->got[l->n] = NULL;
		l->oversized++;
		free(l->over_id);
		l->over_id = id ? cJSON_PrintUnformatted(id) : NULL;
		cJSON_Delete(id);
	}
	l->n++;
}

static void lines_release(struct lines *l)
{
	for (int i = 0; i < l->n; i++)
		free(l->got[i]);
	free(l->over_id);
	memset(l, 0, sizeof(*l));
}

static void test_reader(void)
{
	const char *input = "{\"a\":1}\r\n\n{\"b\":2}\n{\"id\":42,\"x\":\"0123456789012345678901234567890\"}\n"
			    "{\"c\":3}\n{\"tail\":1}";
	struct mcp_reader r;
	struct lines l = { 0 };

	/* All at once, then byte by byte: the same messages. */
	for (int way = 0; way < 2; way++) {
		mcp_reader_init(&r, 40);
		if (way == 0) {
			mcp_reader_feed(&r, input, strlen(input), collect, &l);
		} else {
			for (const char *p = input; *p; p++)
				mcp_reader_feed(&r, p, 1, collect, &l);
		}
		CHECK(l.n == 5);
		mcp_reader_finish(&r, collect, &l);
		CHECK(l.n == 6);
		CHECK_STR(l.got[0], "{\"a\":1}");	/* the CR went */
		CHECK(l.len[1] == 0 && l.got[1] && !*l.got[1]);
		CHECK_STR(l.got[2], "{\"b\":2}");
		CHECK(!l.got[3] && l.len[3] == 47 && l.oversized == 1);
		CHECK_STR(l.over_id, "42");
		CHECK_STR(l.got[4], "{\"c\":3}");	/* back to normal after it */
		CHECK_STR(l.got[5], "{\"tail\":1}");
		CHECK(r.line.len == 0 && r.oversized == 0);
		lines_release(&l);
		mcp_reader_release(&r);
	}
	/* Exactly the limit is kept; one more byte is not. */
	mcp_reader_init(&r, 7);
	mcp_reader_feed(&r, "{\"a\":1}\n{\"a\":12}\n", 17, collect, &l);
	CHECK(l.n == 2 && l.got[0] && !l.got[1] && l.len[1] == 8);
	lines_release(&l);
	mcp_reader_release(&r);
}

static void test_base64(void)
{
	static const char *const bad[] = { "A", "AB=C", "====", "A===", "AB==C", "AB CD", "AB\nC",
					   "ABC*", "AB===", "=AAA" };
	unsigned char data[300];
	struct strbuf enc = STRBUF_INIT, dec = STRBUF_INIT;
	int ok = 1;

	for (size_t i = 0; i < sizeof(data); i++)
		data[i] = (unsigned char)(i * 37 + 11);
	for (size_t n = 0; n <= sizeof(data); n++) {
		strbuf_reset(&enc);
		strbuf_reset(&dec);
		base64_encode(data, n, &enc);
		ok &= mcp_base64_decode(enc.buf, enc.len, &dec) == 0 && dec.len == n &&
		      !memcmp(dec.buf, data, n);
		/* without its padding too */
		strbuf_reset(&dec);
		while (enc.len && enc.buf[enc.len - 1] == '=')
			enc.buf[--enc.len] = '\0';
		ok &= mcp_base64_decode(enc.buf, enc.len, &dec) == 0 && dec.len == n;
	}
	CHECK(ok);
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		strbuf_reset(&dec);
		CHECK(mcp_base64_decode(bad[i], strlen(bad[i]), &dec) < 0);
	}
	strbuf_reset(&dec);
	CHECK(mcp_base64_decode("aGVsbG8=", 8, &dec) == 0);
	CHECK_STR(dec.buf, "hello");
	/* The buffer's cap holds. */
	strbuf_release(&dec);
	strbuf_set_max(&dec, 4);
	CHECK(mcp_base64_decode("aGVsbG8=", 8, &dec) < 0 && errno == EFBIG);
	strbuf_release(&enc);
	strbuf_release(&dec);
}

/* Check `json` against the input schema of tool `tool`; the message in *msg. */
static int check_args(const char *tool, const char *json, char **msg)
{
	struct strbuf err = STRBUF_INIT;
	cJSON *v = cJSON_Parse(json);
	int rc = mcp_schema_check(mcp_tool_schema(mcp_tool_find(tool), 0), v, "arguments", &err);

	*msg = strbuf_detach(&err, NULL);
	cJSON_Delete(v);
	return rc;
}

static void test_schemas(void)
{
	static const struct { const char *tool, *args, *msg; } cases[] = {
		{ "execute_code", "{\"code\":\"x\"}", "" },
		{ "execute_code", "{}", "'code' is required" },
		{ "execute_code", "{\"code\":1}", "'code' must be a string" },
		{ "execute_code", "{\"code\":\"x\",\"timeout\":-2}", "'timeout' must be at least 0" },
		{ "execute_code", "{\"code\":\"x\",\"libraries\":\"numpy\"}",
		  "'libraries' must be an array" },
		{ "execute_code", "{\"code\":\"x\",\"libraries\":[\"a\",null]}",
		  "'libraries[1]' must be a string" },
		{ "execute_code", "{\"code\":\"x\",\"extra\":1}",
		  "unknown argument 'extra' (takes code language libraries timeout)" },
		{ "execute_code", "[]", "'arguments' must be an object" },
		{ "session_open", "{\"memory\":512}", "" },
		{ "session_open", "{\"memory\":\"1g\"}", "" },
		{ "session_open", "{\"memory\":true}", "'memory' must be a string or an integer" },
		{ "session_open", "{\"memory\":1.5}", "'memory' must be a string or an integer" },
		/* a whole number past long long's range is not an integer here (no undefined cast) */
		{ "session_open", "{\"memory\":8e300}", "'memory' must be a string or an integer" },
		{ "session_open", "{\"memory\":-1e19}", "'memory' must be a string or an integer" },
		{ "session_run", "{\"handle\":\"h\",\"code\":\"\",\"clear_plots\":1}",
		  "'clear_plots' must be a boolean" },
		{ "session_list", "{\"x\":1}", "unknown argument 'x' (takes none)" },
		{ "session_open", "{\"name\":\"a\"}", "" },
		{ "session_open", "{\"name\":5}", "'name' must be a string" },
		{ "session_attach", "{\"name\":\"a\",\"read_only\":true}", "" },
		{ "session_attach", "{}", "'name' is required" },
		{ "session_attach", "{\"name\":\"a\",\"read_only\":\"yes\"}",
		  "'read_only' must be a boolean" },
		{ "session_close", "{\"handle\":\"h\",\"end\":true}", "" },
		{ "session_fork", "{\"handle\":\"h\"}", "" },
		{ "session_fork", "{\"handle\":\"h\",\"name\":\"b\"}", "" },
		{ "session_fork", "{\"name\":\"b\"}", "'handle' is required" },
		{ "context_create", "{\"handle\":\"h\",\"language\":\"r\"}", "" },
		{ "context_create", "{\"handle\":\"h\",\"language\":\"julia\"}", "'language' must be one of python r" },
		{ "context_remove", "{\"handle\":\"h\"}", "'context' is required" },
		{ "session_run", "{\"handle\":\"h\",\"code\":\"1\",\"context\":3}", "'context' must be a string" },
		{ "session_close", "{\"handle\":\"h\",\"end\":1}", "'end' must be a boolean" },
	};
	size_t n;
	const struct mcp_tool *tools = mcp_tools(&n);
	cJSON *list;

	CHECK(n == 15);
	for (size_t i = 0; i < n; i++)
		CHECK(mcp_tool_schema(&tools[i], 0) && mcp_tool_schema(&tools[i], 1));
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		char *msg;
		int rc = check_args(cases[i].tool, cases[i].args, &msg);

		CHECK(rc == (*cases[i].msg ? -1 : 0));
		CHECK_STR(msg, cases[i].msg);
		free(msg);
	}
	/* Output schemas accept what the tools make, and say no to what they do not. */
	{
		const cJSON *out = mcp_tool_schema(mcp_tool_find("execute_code"), 1);
		cJSON *good = cJSON_Parse("{\"exit_code\":0,\"stdout\":\"\",\"stderr\":\"\","
					  "\"plots\":[{\"index\":1,\"format\":\"png\",\"width\":2,"
					  "\"height\":3,\"uri\":null}],\"status\":\"ok\","
					  "\"execution_count\":null,\"duration\":0.1,\"error\":null,"
					  "\"outcome\":\"ok\",\"reason\":null,\"truncated\":false}");
		struct strbuf err = STRBUF_INIT;

		CHECK(mcp_schema_check(out, good, "result", &err) == 0);
		cJSON_ReplaceItemInObject(good, "status", cJSON_CreateString("fine"));
		CHECK(mcp_schema_check(out, good, "result", &err) < 0);
		CHECK(strstr(err.buf, "'status' must be one of ok error aborted") != NULL);
		cJSON_Delete(good);
		strbuf_release(&err);
	}
	list = mcp_tools_list();
	CHECK(cJSON_GetArraySize(list) == 15);
	CHECK(cJSON_IsObject(cJSON_GetObjectItem(cJSON_GetArrayItem(list, 0), "annotations")));
	cJSON_Delete(list);
}

/* A server writing into a pipe, with settings that can start no kernel. */
struct rig {
	struct cellbox_config cfg;
	struct mcp_server srv;
	int fds[2];
	struct strbuf out;
};

static void rig_init(struct rig *g)
{
	config_defaults(&g->cfg);
	free((char *)g->cfg.session.backend);
	g->cfg.session.backend = xstrdup("nosuch");
	if (pipe2(g->fds, O_NONBLOCK | O_CLOEXEC) < 0)
		abort();
	fcntl(g->fds[1], F_SETPIPE_SZ, 1 << 20);
	mcp_server_init(&g->srv, &g->cfg, g->fds[1]);
	strbuf_init(&g->out, 0);
}

/* Hand `line` to the server and return what it wrote (until the next call). */
static const char *rig_line(struct rig *g, const char *line)
{
	char buf[4096];
	ssize_t n;

	mcp_handle_line(&g->srv, line, strlen(line), &g->srv.rd.scan);
	mcp_calls_settle(&g->srv);
	strbuf_reset(&g->out);
	while ((n = read(g->fds[0], buf, sizeof(buf))) > 0)
		strbuf_add(&g->out, buf, (size_t)n);
	return g->out.buf;
}

static void rig_release(struct rig *g)
{
	mcp_shutdown(&g->srv);
	mcp_server_release(&g->srv);
	close(g->fds[0]);
	close(g->fds[1]);
	strbuf_release(&g->out);
	config_release(&g->cfg);
}

static void test_dispatch(void)
{
	struct rig g;

	rig_init(&g);
	CHECK_STR(rig_line(&g, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}"),
		  "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n");
	CHECK(strstr(rig_line(&g, "{\"jsonrpc\":\"2.0\",\"id\":\"m\",\"method\":\"ping\",\"params\":"
			      "{\"_meta\":{\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\"}}}"),
		     "\"result\":{\"resultType\":\"complete\"}"));
	CHECK(strstr(rig_line(&g, "{oops"), "{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32700,"));
	CHECK_STR(rig_line(&g, "{\"jsonrpc\":\"2.0\",\"method\":\"ping\"}"), "");
	CHECK(strstr(rig_line(&g, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"nope\"}"), "-32601"));
	/* An id is a string or an integer: 1.5 and 8e123 (a fuzz find: cast to long long, undefined
	   behaviour) are not, and get an invalid-request answer with a null id. */
	CHECK(strstr(rig_line(&g, "{\"jsonrpc\":\"2.0\",\"id\":1.5,\"method\":\"ping\"}"),
		     "\"id\":null,\"error\":{\"code\":-32600,"));
	CHECK(strstr(rig_line(&g, "{\"jsonrpc\":\"2.0\",\"id\":8e123,\"method\":\"ping\"}"),
		     "\"id\":null,\"error\":{\"code\":-32600,"));
	CHECK(strstr(rig_line(&g, "{\"jsonrpc\":\"2.0\",\"id\":-9007199254740992,\"method\":"
			      "\"ping\"}"), "\"result\":{}"));
	/* A tool that cannot open its sandbox is an error result, not a protocol error. */
	CHECK(strstr(rig_line(&g, "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/call\",\"params\":"
			      "{\"name\":\"execute_code\",\"arguments\":{\"code\":\"1\"}}}"),
		     "\"isError\":true"));
	CHECK(strstr(g.out.buf, "unknown backend 'nosuch'"));
	rig_release(&g);
}

static void test_dispatch_fuzz(void)
{
	static const char *const seeds[] = {
		"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{\"protocolVersion\":"
		"\"2025-11-25\",\"capabilities\":{},\"clientInfo\":{\"name\":\"a\",\"version\":\"1\"}}}",
		"{\"jsonrpc\":\"2.0\",\"id\":\"x\",\"method\":\"server/discover\",\"params\":{\"_meta\":"
		"{\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\"}}}",
		"{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/list\",\"params\":{\"cursor\":\"a\"}}",
		"{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"resources/read\",\"params\":{\"uri\":"
		"\"cellbox://sessions/s-0123/plots/1.png\"}}",
		"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{\"requestId\":3}}",
		"{\"jsonrpc\":\"2.0\",\"id\":4,\"result\":{}}",
		/* tools that reach the argument check (no kernel can start: the backend is none) */
		"{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"tools/call\",\"params\":{\"name\":"
		"\"execute_code\",\"arguments\":{\"code\":\"1\",\"timeout\":2,\"libraries\":[\"a\"]}}}",
		"{\"jsonrpc\":\"2.0\",\"id\":6,\"method\":\"tools/call\",\"params\":{\"name\":"
		"\"file_put\",\"arguments\":{\"handle\":\"s-1\",\"path\":\"a\",\"base64\":\"YWJj\"}}}",
		"{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"tools/call\",\"params\":{\"name\":"
		"\"session_open\",\"arguments\":{\"memory\":\"1g\",\"network\":\"none\"}}}",
	};
	struct rig g;
	unsigned seed = 1616;
	int ok = 1, answered = 0;

	rig_init(&g);
	for (int round = 0; round < 20000; round++) {
		const char *s = seeds[round % ARRAY_SIZE(seeds)];
		size_t n = strlen(s);
		char *line = xmalloc(n + 1), *p;
		struct mcp_scan sc;
		struct strbuf dec = STRBUF_INIT;
		cJSON *id;

		memcpy(line, s, n + 1);
		for (int k = 0; k < 3; k++) {
			seed = seed * 1103515245 + 12345;
			line[(seed >> 8) % n] = "\"{}[],:.0a\\/"[(seed >> 20) % 12];
		}
		rig_line(&g, line);
		/* Whatever came out is whole JSON-RPC lines. */
		for (p = g.out.buf; *p; ) {
			char *nl = strchr(p, '\n');
			cJSON *m = nl ? cJSON_ParseWithLength(p, (size_t)(nl - p)) : NULL;

			ok &= m && cJSON_IsObject(m) && cJSON_GetObjectItem(m, "jsonrpc");
			cJSON_Delete(m);
			answered++;
			p = nl ? nl + 1 : p + strlen(p);
		}
		mcp_scan_init(&sc);
		mcp_scan_feed(&sc, line, n);
		id = mcp_scan_id(&sc);
		ok &= !id || cJSON_IsString(id) || cJSON_IsNumber(id);
		cJSON_Delete(id);
		mcp_base64_decode(line, n, &dec);
		strbuf_release(&dec);
		free(line);
	}
	CHECK(ok);
	CHECK(answered > 5000);
	rig_release(&g);
}

static const struct tap_test tests[] = {
	{ "scan", test_scan },
	{ "reader", test_reader },
	{ "base64", test_base64 },
	{ "schemas", test_schemas },
	{ "dispatch", test_dispatch },
	{ "dispatch_fuzz", test_dispatch_fuzz },
};

int main(int argc, char **argv)
{
	return tap_main(argc, argv, tests, ARRAY_SIZE(tests));
}
