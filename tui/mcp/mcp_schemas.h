#ifndef CELLBOX_MCP_SCHEMAS_H
#define CELLBOX_MCP_SCHEMAS_H

/*
 * The JSON Schemas of the MCP tools' arguments and results, as the text tools/list sends
 * (mcp_tools.c's table names them; mcp_schema.c checks arguments against them). Included
 * by mcp_tools.c alone: each is a static array there.
 */

#define S_HANDLE "\"handle\":{\"type\":\"string\",\"description\":\"a handle from session_open\"}"
#define S_CONTEXT "\"context\":{\"type\":\"string\",\"description\":\"a context of the " \
	"session (context_create's name): run there instead of in the session's own kernel\"}"
#define S_TIMEOUT(what) "\"timeout\":{\"type\":\"number\",\"minimum\":0,\"description\":" \
	"\"seconds " what " may run before it is interrupted (0 or absent: the server's default; " \
	"never above the server's timeout setting)\"}"

/* llm-sandbox's ExecutionResult, as structured content. */
#define EXECUTION_RESULT_PROPS \
	"\"exit_code\":{\"type\":\"integer\",\"description\":\"0 ok, 1 the code raised, 3 " \
	"timeout, 4 the kernel died (out of memory included), 7 the security policy blocked " \
	"it (none of it ran), 130 interrupted\"}," \
	"\"stdout\":{\"type\":\"string\",\"description\":\"what the code printed, Out[n] " \
	"included, escape sequences removed\"}," \
	"\"stderr\":{\"type\":\"string\",\"description\":\"its error stream, tracebacks " \
	"included\"}," \
	"\"plots\":{\"type\":\"array\",\"description\":\"every plot the run made, in order; " \
	"the images are the image items of the content, in the same order\",\"items\":{" \
	"\"type\":\"object\",\"properties\":{\"index\":{\"type\":\"integer\"}," \
	"\"format\":{\"type\":\"string\"},\"width\":{\"type\":\"integer\"}," \
	"\"height\":{\"type\":\"integer\"},\"uri\":{\"type\":[\"string\",\"null\"]," \
	"\"description\":\"the plot as a resource (sessions only)\"}}," \
	"\"required\":[\"index\",\"format\",\"width\",\"height\"]}}," \
	"\"status\":{\"type\":\"string\",\"enum\":[\"ok\",\"error\",\"aborted\"]}," \
	"\"execution_count\":{\"type\":[\"integer\",\"null\"]}," \
	"\"duration\":{\"type\":\"number\",\"description\":\"seconds the kernel took\"}," \
	"\"error\":{\"type\":[\"object\",\"null\"],\"properties\":{\"ename\":{\"type\":\"string\"}," \
	"\"evalue\":{\"type\":\"string\"},\"traceback\":{\"type\":\"array\",\"items\":{" \
	"\"type\":\"string\"}},\"violations\":{\"type\":\"array\",\"description\":\"a " \
	"cell the security policy blocked: each violation (line, column, kind, rule, severity, " \
	"description, code, blocking)\",\"items\":{\"type\":\"object\"}}}}," \
	"\"outcome\":{\"type\":\"string\",\"description\":\"why it ended: ok, error, " \
	"interrupted, timeout, timeout_killed, kernel_died, oom_killed, restarted, closed, " \
	"blocked, ...\"}," \
	"\"reason\":{\"type\":[\"string\",\"null\"],\"description\":\"the outcome in words when " \
	"the session stopped it\"}," \
	"\"truncated\":{\"type\":\"boolean\",\"description\":\"output past mcp-output-max was " \
	"not kept\"}," \
	MCP_USAGE_SCHEMA
#define EXECUTION_RESULT_REQUIRED \
	"\"exit_code\",\"stdout\",\"stderr\",\"plots\",\"status\",\"execution_count\"," \
	"\"duration\",\"error\",\"outcome\",\"reason\""

#define S_NAME_IN(what) "\"name\":{\"type\":\"string\",\"description\":\"" what "\"}"
#define NAMED_OUT_PROPS \
	"\"name\":{\"type\":\"string\",\"description\":\"the named session's name\"}," \
	"\"attach\":{\"type\":\"string\",\"description\":\"how a person joins it " \
	"(cellbox attach NAME)\"}"

#define SESSION_PROPS \
	S_HANDLE ",\"backend\":{\"type\":\"string\"},\"state\":{\"type\":\"string\",\"enum\":[" \
	"\"starting\",\"idle\",\"busy\",\"dead\",\"closed\"]},\"pooled\":{\"type\":\"boolean\"}," \
	"\"cells\":{\"type\":\"integer\"},\"plots\":{\"type\":\"integer\"}," \
	"\"age\":{\"type\":\"number\",\"description\":\"seconds since it opened\"}," \
	"\"idle\":{\"type\":\"number\",\"description\":\"seconds since it was last used\"}," \
	"\"name\":{\"type\":[\"string\",\"null\"],\"description\":\"a named session's name " \
	"(session_attach, cellbox attach NAME); null for one of this server's own\"}," \
	"\"read_only\":{\"type\":\"boolean\"}"

static const char execute_code_in[] =
	"{\"type\":\"object\",\"properties\":{"
	"\"code\":{\"type\":\"string\",\"description\":\"the code, run as one cell\"},"
	"\"language\":{\"type\":\"string\",\"description\":\"the kernel: python (the "
	"default) or r\"},"
	"\"libraries\":{\"type\":\"array\",\"items\":{\"type\":\"string\"},\"maxItems\":50,"
	"\"description\":\"requirements (numpy, pandas>=2) installed before the code runs, as "
	"the server's --libraries installs them: once, then kept (offline from its wheelhouse, "
	"or through its network setting)\"},"
	S_TIMEOUT("the code")
	"},\"required\":[\"code\"],\"additionalProperties\":false}";

static const char execution_result_out[] =
	"{\"type\":\"object\",\"properties\":{" EXECUTION_RESULT_PROPS "},"
	"\"required\":[" EXECUTION_RESULT_REQUIRED "]}";

static const char session_open_in[] =
	"{\"type\":\"object\",\"properties\":{"
	"\"backend\":{\"type\":\"string\",\"description\":\"local, docker or podman: the "
	"server's backend, or one its mcp-backends setting allows\"},"
	"\"policy\":{\"type\":\"string\",\"description\":\"a security policy by name "
	"(a preset such as production or strict, or none) every cell is checked against; when "
	"the server has a policy, only that one\"},"
	"\"memory\":{\"type\":[\"string\",\"integer\"],\"description\":\"a memory limit such as "
	"512m (bytes when a number); at most the server's\"},"
	S_TIMEOUT("each cell") ","
	"\"network\":{\"type\":\"string\",\"description\":\"none, the server's network "
	"setting, or when that is an allow-list (allow:HOST[:PORT],...) one it covers\"},"
	S_NAME_IN("make it a named session: a host process owns it, so it outlives this "
		  "server; session_attach (after a restart) or a person's cellbox attach NAME "
		  "joins it again. 1 to 64 of A-Z a-z 0-9 . _ -, not starting with '.'")
	"},\"additionalProperties\":false}";

static const char session_open_out[] =
	"{\"type\":\"object\",\"properties\":{" S_HANDLE ","
	"\"backend\":{\"type\":\"string\"},\"pooled\":{\"type\":\"boolean\"},"
	"\"python\":{\"type\":\"string\"},\"ipython\":{\"type\":\"string\"},"
	"\"timeout\":{\"type\":\"number\"},\"memory\":{\"type\":\"integer\",\"description\":"
	"\"bytes; 0: the backend's default\"},\"network\":{\"type\":[\"string\",\"null\"]},"
	"\"policy\":{\"type\":[\"string\",\"null\"],\"description\":\"the security policy "
	"its cells are checked against\"}," NAMED_OUT_PROPS ","
	"\"read_only\":{\"type\":\"boolean\"},\"forked_from\":{\"type\":\"string\"},"
	"\"fork\":{\"enum\":[\"process\",\"memory\",\"rerun\"],\"description\":\"session_fork: "
	"how: the kernel process copied, its memory checkpointed and restored, or its cells "
	"re-run in a fresh kernel (not a memory copy)\"},\"rerun_cells\":{\"type\":"
	"\"integer\"}},"
	"\"required\":[\"handle\",\"backend\",\"pooled\"]}";

static const char session_attach_in[] =
	"{\"type\":\"object\",\"properties\":{"
	S_NAME_IN("the named session: one this server opened with a name (before a restart "
		  "too), or one a person started with cellbox repl --name NAME") ","
	"\"read_only\":{\"type\":\"boolean\",\"description\":\"watch only: its cells "
	"run nothing\"}},\"required\":[\"name\"],\"additionalProperties\":false}";

static const char session_fork_in[] =
	"{\"type\":\"object\",\"properties\":{" S_HANDLE ","
	S_NAME_IN("the new session's name (else a generated one); 1 to 64 of A-Z a-z 0-9 . _ -, "
		  "not starting with '.'")
	"},\"required\":[\"handle\"],\"additionalProperties\":false}";

static const char session_close_in[] =
	"{\"type\":\"object\",\"properties\":{" S_HANDLE ","
	"\"end\":{\"type\":\"boolean\",\"description\":\"a named session: end it (its "
	"kernel is killed) rather than detach from it\"}},\"required\":[\"handle\"],"
	"\"additionalProperties\":false}";

static const char session_run_in[] =
	"{\"type\":\"object\",\"properties\":{" S_HANDLE ","
	"\"code\":{\"type\":\"string\",\"description\":\"the cell\"}," S_TIMEOUT("the cell") ","
	"\"clear_plots\":{\"type\":\"boolean\",\"description\":\"forget earlier plots first "
	"(their numbering starts again at 1)\"}," S_CONTEXT "},"
	"\"required\":[\"handle\",\"code\"],\"additionalProperties\":false}";

static const char session_run_out[] =
	"{\"type\":\"object\",\"properties\":{" EXECUTION_RESULT_PROPS "," S_HANDLE "},"
	"\"required\":[" EXECUTION_RESULT_REQUIRED ",\"handle\"]}";

static const char handle_in[] =
	"{\"type\":\"object\",\"properties\":{" S_HANDLE "},\"required\":[\"handle\"],"
	"\"additionalProperties\":false}";

static const char interrupt_out[] =
	"{\"type\":\"object\",\"properties\":{" S_HANDLE ",\"interrupted\":{\"type\":\"boolean\","
	"\"description\":\"a cell was running\"}},\"required\":[\"handle\",\"interrupted\"]}";

static const char restart_out[] =
	"{\"type\":\"object\",\"properties\":{" S_HANDLE ",\"state\":{\"type\":\"string\"}},"
	"\"required\":[\"handle\",\"state\"]}";

static const char close_out[] =
	"{\"type\":\"object\",\"properties\":{" S_HANDLE ",\"closed\":{\"type\":\"boolean\"},"
	"\"name\":{\"type\":\"string\"},\"ended\":{\"type\":\"boolean\",\"description\":"
	"\"a named session was ended, not only detached from\"}},"
	"\"required\":[\"handle\",\"closed\"]}";

static const char list_in[] =
	"{\"type\":\"object\",\"properties\":{},\"additionalProperties\":false}";

static const char list_out[] =
	"{\"type\":\"object\",\"properties\":{\"sessions\":{\"type\":\"array\",\"items\":{"
	"\"type\":\"object\",\"properties\":{" SESSION_PROPS "},\"required\":[\"handle\","
	"\"backend\",\"state\"]}}},\"required\":[\"sessions\"]}";

static const char file_put_in[] =
	"{\"type\":\"object\",\"properties\":{" S_HANDLE ","
	"\"path\":{\"type\":\"string\",\"description\":\"where in the sandbox (relative to the "
	"kernel's working directory)\"},"
	"\"base64\":{\"type\":\"string\",\"description\":\"the file's bytes, base64; at most "
	"mcp-file-max bytes\"}},\"required\":[\"handle\",\"path\",\"base64\"],"
	"\"additionalProperties\":false}";

static const char file_put_out[] =
	"{\"type\":\"object\",\"properties\":{" S_HANDLE ",\"path\":{\"type\":\"string\"},"
	"\"size\":{\"type\":\"integer\"}},\"required\":[\"handle\",\"path\",\"size\"]}";

static const char file_get_in[] =
	"{\"type\":\"object\",\"properties\":{" S_HANDLE ","
	"\"path\":{\"type\":\"string\",\"description\":\"a file in the sandbox; at most "
	"mcp-file-max bytes\"}},\"required\":[\"handle\",\"path\"],"
	"\"additionalProperties\":false}";

static const char file_get_out[] =
	"{\"type\":\"object\",\"properties\":{" S_HANDLE ",\"path\":{\"type\":\"string\"},"
	"\"size\":{\"type\":\"integer\"},\"base64\":{\"type\":\"string\"}},"
	"\"required\":[\"handle\",\"path\",\"size\",\"base64\"]}";

static const char history_out[] =
	"{\"type\":\"object\",\"properties\":{" S_HANDLE ",\"cells\":{\"type\":\"array\","
	"\"items\":{\"type\":\"object\",\"properties\":{\"execution_count\":{\"type\":["
	"\"integer\",\"null\"]},\"code\":{\"type\":\"string\"},\"status\":{\"type\":\"string\"},"
	"\"outcome\":{\"type\":\"string\"},\"duration\":{\"type\":\"number\"}},"
	"\"required\":[\"execution_count\",\"code\",\"status\",\"outcome\"]}}},"
	"\"required\":[\"handle\",\"cells\"]}";

static const char context_create_in[] =
	"{\"type\":\"object\",\"properties\":{" S_HANDLE ",\"language\":{\"type\":\"string\","
	"\"enum\":[\"python\",\"r\"],\"description\":\"the context's kernel (default: the "
	"session's)\"}},\"required\":[\"handle\"],\"additionalProperties\":false}";

#define S_CONTEXT_PROPS \
	"\"context\":{\"type\":\"string\",\"description\":\"its name, for session_run's " \
	"context\"},\"language\":{\"type\":\"string\"},\"state\":{\"type\":\"string\"}," \
	"\"context_handle\":{\"type\":\"string\",\"description\":\"its own handle (the " \
	"session tools take it too)\"}"

static const char context_create_out[] =
	"{\"type\":\"object\",\"properties\":{" S_HANDLE "," S_CONTEXT_PROPS "},"
	"\"required\":[\"handle\",\"context\",\"language\",\"context_handle\"]}";

static const char context_list_out[] =
	"{\"type\":\"object\",\"properties\":{" S_HANDLE ",\"contexts\":{\"type\":\"array\","
	"\"items\":{\"type\":\"object\",\"properties\":{" S_CONTEXT_PROPS "},\"required\":["
	"\"context\",\"language\",\"state\"]}}},\"required\":[\"handle\",\"contexts\"]}";

static const char context_remove_in[] =
	"{\"type\":\"object\",\"properties\":{" S_HANDLE ",\"context\":{\"type\":\"string\"}},"
	"\"required\":[\"handle\",\"context\"],\"additionalProperties\":false}";

static const char context_remove_out[] =
	"{\"type\":\"object\",\"properties\":{" S_HANDLE ",\"context\":{\"type\":\"string\"},"
	"\"removed\":{\"type\":\"boolean\"}},\"required\":[\"handle\",\"context\",\"removed\"]}";

#endif
