#ifndef CELLBOX_MCP_H
#define CELLBOX_MCP_H

/*
 * `cellbox mcp`: a Model Context Protocol server on stdio. Programs (agents, editors) get the
 * door people have: persistent, sandboxed IPython sessions behind handles, one-shot runs, files
 * and plots. The server lives in files that share this header:
 *
 *   mcp_frame.c    framing: one message a line, every message size-bounded (an oversized one
 *                  scanned for its id in constant memory); base64
 *   mcp_rpc.c      JSON-RPC 2.0, the two protocol revisions, the method table, answers and
 *                  notifications
 *   mcp_tools.c    the tools table (each with its input and output schema) and their handlers
 *   mcp_schema.c   arguments checked against a tool's input schema
 *   mcp_session.c  sessions behind handles, the calls queued per session, cancellation
 *   mcp_cell.c     a cell's events collected into its ExecutionResult, progress on the way
 *   mcp_named.c    named sessions (named.h): session_open with a name, session_attach, and
 *                  closing one (a detach unless it is ended)
 *   mcp_context.c  contexts: more kernels in a session's sandbox (context_create, _list,
 *                  _remove; session_run's context)
 *   mcp_sandbox.c  the security policy and the libraries a session gets (as --policy and
 *                  --libraries give them)
 *   mcp_files.c    file_put, file_get (their arguments and answers; files.h moves the
 *                  bytes), plots as resources (the kernel's files read through
 *                  outputs_read_file())
 *   cmd_mcp.c      the command entry and the poll loop (stdin and every session), shutdown
 *
 * Protocol revisions: 2025-11-25 (and older ones a client offers in `initialize`) with
 * `initialize`, `notifications/initialized` and `ping`; 2026-07-28, stateless, where each
 * request names its revision in `params._meta["io.modelcontextprotocol/protocolVersion"]`,
 * discovery is `server/discover`, every result carries `resultType` and list results
 * `ttlMs`/`cacheScope`. A request is answered in the revision it came in; state lives in
 * handles the server issues and the client passes back as tool arguments.
 *
 * Single-threaded: the loop polls stdin and each session's descriptor; a tool call that runs a
 * cell is answered when the cell's done event comes (deferred), so several sessions run at
 * once and notifications (cancel) are read while cells run. Opening a sandbox blocks the loop
 * for its start (milliseconds from a pool, a fraction of a second cold).
 *
 * Tool arguments come from a model: they may tighten the operator's settings (less memory, no
 * network, a shorter timeout), never loosen them (another backend only when mcp-backends lists
 * it; the network only as configured, or an allow-list within the configured one; memory up
 * to the memory setting, or 1 GB; a security policy only when the server has none, or the
 * server's own).
 */

#include <cjson/cJSON.h>
#include "config.h"
#include "files.h"
#include "sanitize.h"
#include "session.h"

#define MCP_MODERN_VERSION "2026-07-28"
#define MCP_LATEST_LEGACY_VERSION "2025-11-25"
#define MCP_META_PROTOCOL_VERSION "io.modelcontextprotocol/protocolVersion"
#define MCP_META_SERVER_INFO "io.modelcontextprotocol/serverInfo"

/* JSON-RPC and MCP error codes. */
enum {
	MCP_PARSE_ERROR = -32700,
	MCP_INVALID_REQUEST = -32600,
	MCP_METHOD_NOT_FOUND = -32601,
	MCP_INVALID_PARAMS = -32602,
	MCP_INTERNAL_ERROR = -32603,
	MCP_UNSUPPORTED_VERSION = -32022,
};

/*
 * A streaming look at a message too large to keep: the top-level object's "id" (a string or
 * number of up to MCP_SCAN_ID_MAX bytes as written) and whether it has a "method", read byte
 * by byte in constant memory, so an oversized request can still be answered by its id.
 */
#define MCP_SCAN_ID_MAX 256

struct mcp_scan {
	int state;
	int escape;		/* the last byte was a backslash in a string */
	int in_string;		/* inside a nested value: in a string */
	unsigned long depth;	/* brackets open inside a nested value */
	char key[8];		/* the top-level key being read (longer ones are "other") */
	size_t keylen;
	int capture;		/* the value being read is the top-level "id" */
	char id[MCP_SCAN_ID_MAX];
	size_t idlen;
	int id_long;		/* the id was longer than MCP_SCAN_ID_MAX */
	int has_id, has_method;
};

void mcp_scan_init(struct mcp_scan *sc);
void mcp_scan_feed(struct mcp_scan *sc, const char *buf, size_t len);
/* The id the scan found (a string or a number), NULL when none could be read. */
cJSON *mcp_scan_id(const struct mcp_scan *sc);

/*
 * The line reader: hands out each message (a line, without its newline and a trailing CR).
 * A message longer than `max` bytes is not kept: it is scanned (struct mcp_scan) and handed
 * out as a NULL line with its length once its newline comes.
 */
struct mcp_reader;
typedef void (*mcp_line_fn)(struct mcp_reader *r, const char *line, size_t len, void *data);

struct mcp_reader {
	struct strbuf line;	/* the message so far */
	size_t max;
	size_t oversized;	/* bytes of a message past `max` so far; 0 when none */
	struct mcp_scan scan;	/* of the oversized message */
};

void mcp_reader_init(struct mcp_reader *r, size_t max);
void mcp_reader_release(struct mcp_reader *r);
/* Take `len` bytes read from the client; calls `fn` for each message they complete. */
void mcp_reader_feed(struct mcp_reader *r, const char *buf, size_t len, mcp_line_fn fn,
		     void *data);
/* The input ended: a last message without a newline is handed out too. */
void mcp_reader_finish(struct mcp_reader *r, mcp_line_fn fn, void *data);

/*
 * Decode base64 (RFC 4648, padding optional, no white space) onto `out`, which keeps its cap.
 * Returns 0, or -1 when the text is not base64 (or `out` would pass its cap: errno EFBIG).
 */
int mcp_base64_decode(const char *text, size_t len, struct strbuf *out);

struct mcp_session;
struct mcp_policy;
struct mcp_call;

/* The server. */
struct mcp_server {
	const struct cellbox_config *cfg;
	int out_fd;			/* the protocol's stdout (fd 1 itself goes to stderr) */
	struct mcp_reader rd;
	size_t max_message;		/* mcp-max-message, both directions */
	size_t output_max;		/* mcp-output-max: stdout (and stderr) a result keeps */
	size_t file_max;		/* mcp-file-max: a file or a plot */
	unsigned long max_sessions;	/* mcp-max-sessions, one-shot ones included */
	char *legacy_version;		/* what `initialize` settled on; NULL before */
	struct mcp_session *sessions;	/* open, in the order they were opened */
	struct mcp_call *calls;		/* tool calls not yet answered, oldest first */
	int client_gone;		/* stdout is closed: answer nothing more */
	const struct policy *policy;	/* the policy setting's (borrowed), or NULL: every
					   session's unless a client names one when it is NULL */
	struct mcp_policy *policies;	/* those clients named, loaded once */
};

/* One request as it came in. */
struct mcp_req {
	const char *method;
	const cJSON *id;		/* NULL for a notification */
	const cJSON *params;		/* an object, or NULL when it had none */
	int modern;			/* came in revision 2026-07-28 (its _meta says so) */
	const cJSON *progress_token;	/* params._meta.progressToken, or NULL */
};

/* What a method's handler answers. */
struct mcp_reply {
	cJSON *result;		/* an object on success */
	int code;		/* else a JSON-RPC error code, with `msg` and `data` */
	struct strbuf msg;
	cJSON *data;
	int deferred;		/* the answer comes later (a tool call running a cell) */
};

/* ---- mcp_rpc.c ---------------------------------------------------------------------- */

void mcp_server_init(struct mcp_server *srv, const struct cellbox_config *cfg, int out_fd);
void mcp_server_release(struct mcp_server *srv);
/* Handle one message from the client (a line), or an oversized one (line NULL). */
void mcp_handle_line(struct mcp_server *srv, const char *line, size_t len,
		     const struct mcp_scan *scan);
/* Write one message (consumed) as a line. Returns 0, or -1 once the client is gone. */
int mcp_send(struct mcp_server *srv, cJSON *msg);
/* Answer request `id` with `result` (consumed), shaped for its revision. */
void mcp_respond(struct mcp_server *srv, const cJSON *id, int modern, const char *method,
		 cJSON *result);
/* Answer request `id` (NULL: null) with an error; `data` (may be NULL) is consumed. */
void mcp_respond_error(struct mcp_server *srv, const cJSON *id, int code, const char *msg,
		       cJSON *data);
/* Send notifications/progress for `token` with `message`. */
void mcp_notify_progress(struct mcp_server *srv, const cJSON *token, double progress,
			 const char *message);
/* Set an error reply. */
void mcp_reply_error(struct mcp_reply *rep, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* ---- mcp_tools.c, mcp_schema.c ------------------------------------------------------ */

/* One tool: its schemas are JSON text, parsed once. */
struct mcp_tool {
	const char *name;
	const char *title;
	const char *description;
	const char *input_schema;
	const char *output_schema;
	unsigned hints;			/* MCP_HINT_* */
	/*
	 * Run the tool with checked arguments: 0 when `call` has its result (or error), 1 when
	 * the answer comes later (mcp_call_finish), -1 with `err` for an error result.
	 */
	int (*run)(struct mcp_server *srv, struct mcp_call *call, const cJSON *args,
		   struct strbuf *err);
};

enum {
	MCP_HINT_READ_ONLY = 1 << 0,
	MCP_HINT_DESTRUCTIVE = 1 << 1,
	MCP_HINT_IDEMPOTENT = 1 << 2,
	MCP_HINT_OPEN_WORLD = 1 << 3,
};

/* The tools, in the order tools/list gives them. */
const struct mcp_tool *mcp_tools(size_t *n);
/* The tool called `name`, or NULL. */
const struct mcp_tool *mcp_tool_find(const char *name);
/* The schema of a tool parsed ("input" or "output"), owned by the table. */
const cJSON *mcp_tool_schema(const struct mcp_tool *t, int output);
/* tools/list's `tools`: an array. */
cJSON *mcp_tools_list(void);
/*
 * Check `value` against `schema` (the subset the tools use: type, properties, required,
 * additionalProperties, items, enum, minimum, maxItems). Returns 0, or -1 with `err` naming
 * the argument ("'timeout' must be a number").
 */
int mcp_schema_check(const cJSON *schema, const cJSON *value, const char *name,
		     struct strbuf *err);
/* tools/call. */
void mcp_tools_call(struct mcp_server *srv, const struct mcp_req *req, struct mcp_reply *rep);

/* ---- mcp_session.c, mcp_cell.c ------------------------------------------------------ */

/* A plot a session made, as its kernel described it. */
struct mcp_plot {
	int index, width, height;
};

/* A cell a session ran, for session_history. */
struct mcp_cell {
	char *code;
	int execution_count;
	enum reason reason;
	enum session_status status;
	double duration;
};

struct mcp_session {
	struct mcp_session *next;
	char handle[24];		/* "s-" and 16 hex digits; "" for a one-shot session */
	struct session *s;
	int oneshot;			/* execute_code's: closed once its call is answered */
	double timeout;			/* per cell by default (0 = none) */
	unsigned long long memory;	/* what was asked (0 = the server's) */
	char *network;			/* what was asked (NULL = the server's) */
	const struct policy *policy;	/* what its cells are checked against, or NULL */
	char *image, *python;		/* where its libraries are (libraries_prepare) */
	double created, used;		/* wall clock */
	struct mcp_call *running;	/* the call whose request the kernel has */
	struct mcp_plot *plots;		/* every plot since the last clear, for resources */
	size_t nplots, plots_alloc;
	struct mcp_cell *cells;		/* the last MCP_HISTORY_MAX cells */
	size_t ncells, cells_alloc;
	unsigned long cells_run;
	/* Contexts (mcp_context.c): a context is a session of its own behind its own handle. */
	struct mcp_session *parent;	/* a context's: the session whose sandbox it shares */
	char context[24];		/* a context's name ("python-1", "r-2"); "" otherwise */
	unsigned context_seq;		/* the last number given to a context of this one */
};

#define MCP_HISTORY_MAX 1000		/* cells session_history keeps */
#define MCP_HISTORY_CODE_MAX (64u << 10)	/* bytes of a cell's code it keeps */
#define MCP_PLOTS_MAX 1000		/* plots a call keeps (and reads) */
#define MCP_SESSION_PLOTS_MAX 10000	/* plots a session lists as resources */
#define MCP_PROGRESS_MAX (64u << 10)	/* bytes of output one notification carries */

/* What a call does with its session. */
enum mcp_call_kind {
	MCP_CALL_NONE,		/* answered at once */
	MCP_CALL_CELL,		/* execute_code, session_run */
	MCP_CALL_FILE_PUT,
	MCP_CALL_FILE_GET,
};

enum mcp_call_state {
	MCP_CALL_QUEUED,	/* waits for its session's kernel */
	MCP_CALL_RUNNING,	/* the kernel has its request */
	MCP_CALL_DONE,		/* ready to answer */
};

/* One tools/call, from the request to the answer. */
struct mcp_call {
	struct mcp_call *next;
	struct mcp_server *srv;
	cJSON *id;			/* the request's id */
	cJSON *progress_token;		/* or NULL */
	int modern;
	const struct mcp_tool *tool;
	struct mcp_session *ms;		/* the session it runs in, or NULL */
	enum mcp_call_kind kind;
	enum mcp_call_state state;
	int cancelled;			/* notifications/cancelled came: answer nothing */
	char *code;			/* the cell, or the helper cell of a file call */
	unsigned flags;			/* SESSION_EXEC_* */
	double timeout;
	unsigned long req;		/* the session's request id while RUNNING */
	/* What the cell said. */
	struct strbuf out, err;		/* sanitised, each capped at output_max */
	size_t cut;			/* bytes not kept */
	struct sanitizer san_out, san_err;
	struct mcp_plot *plots;
	size_t nplots, plots_alloc;
	cJSON *error;			/* {ename, evalue, traceback} of the last error */
	int done_seen;
	struct session_ev_done done;
	char *detail;			/* done.detail, ours */
	double progress;		/* notifications sent */
	/* File calls. */
	char *path;			/* the sandbox path */
	struct files_move move;		/* what files.h staged; its code is `code` */
	struct strbuf file;		/* file_get: the bytes taken */
	long long file_size;		/* file_put: the size written */
	/* The answer, when it is ready. */
	cJSON *result;			/* a CallToolResult */
};

/*
 * Open a session for a tool: `args` are session_open's (NULL for the server's settings),
 * `libraries` a comma-separated list of requirements beyond the server's (or NULL), `kernel`
 * the kernel's name (NULL for the server's: python unless its kernel setting says).
 */
struct mcp_session *mcp_session_open(struct mcp_server *srv, const cJSON *args,
				     const char *libraries, const char *kernel, int oneshot,
				     struct strbuf *err);
/* Close a session: its queued calls are answered with an error, a running one ends. */
void mcp_session_close(struct mcp_server *srv, struct mcp_session *ms);
/* A tool call's string argument `name`, or NULL (absent, or not a string). */
const char *mcp_arg_str(const cJSON *args, const char *name);
/* The session of `handle`, or NULL with `err` saying so. */
struct mcp_session *mcp_session_find(struct mcp_server *srv, const char *handle,
				     struct strbuf *err);
/* Whether a session may run on `backend`: the server's, or one mcp-backends lists. */
int mcp_backend_allowed(const struct cellbox_config *cfg, const char *backend);
/* The number of open sessions. */
unsigned long mcp_session_count(const struct mcp_server *srv);
/* A handle nobody can guess: "s-" and 16 hex digits. */
void mcp_session_new_handle(char *out, size_t size);
/* Add a session just opened to the server's list (the last). */
void mcp_session_keep(struct mcp_server *srv, struct mcp_session *ms);
/* The state callback of every session (`data` is the mcp_session). */
void mcp_session_state(struct session *s, enum session_state state, const char *msg, void *data);

/* A new call for request `req` (not yet in the server's list: mcp_call_queue adds it). */
struct mcp_call *mcp_call_new(struct mcp_server *srv, const struct mcp_req *req,
			      const struct mcp_tool *tool);
/* Free a call (not in the server's list, or just taken out of it). */
void mcp_call_free(struct mcp_call *call);
/*
 * Queue a call on its session (ms, kind and code set) and add it to the server's list; it
 * starts when the session's kernel is free.
 */
void mcp_call_queue(struct mcp_server *srv, struct mcp_call *call);
/* Finish a call with an error result. */
void mcp_call_fail(struct mcp_call *call, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* Finish a call with a result made of a text and structured content (consumed). */
void mcp_call_succeed(struct mcp_call *call, const char *text, cJSON *structured);
/* notifications/cancelled: stop the call of request `id`. */
void mcp_call_cancel(struct mcp_server *srv, const cJSON *id);
/*
 * After the loop dispatched sessions or handled messages: answer the calls that are done,
 * close the one-shot sessions they leave, start queued calls whose kernel is free.
 */
void mcp_calls_settle(struct mcp_server *srv);
/* The client went: close every session and free every call, answering nothing. */
void mcp_shutdown(struct mcp_server *srv);
/* Keep a plot a session made (for resources), and a cell it ran (for session_history). */
void mcp_session_add_plot(struct mcp_session *ms, const struct mcp_plot *pl);
void mcp_session_add_cell(struct mcp_session *ms, const struct mcp_call *call);
/* A CallToolResult of `content` (consumed) and `structured` (consumed, may be NULL). */
cJSON *mcp_tool_result(cJSON *content, cJSON *structured, int is_error);
/* A text content item. */
cJSON *mcp_text_item(const char *text);
/* The session callback of a call's requests (`data` is the call). */
void mcp_cell_event(struct session *s, const struct session_event *ev, void *data);
/*
 * The ExecutionResult of a finished cell call, and its text. Its `usage` is what the cell used
 * (usage.h), as tools/list's schema of it says (mcp_tools.c's ExecutionResult takes this):
 */
#define MCP_USAGE_SCHEMA \
	"\"usage\":{\"type\":\"object\",\"description\":\"what the cell used, measured by the " \
	"host (never the kernel's word); null where not measured\",\"properties\":{" \
	"\"cpu_seconds\":{\"type\":[\"number\",\"null\"],\"description\":\"CPU time of the " \
	"sandbox during the cell\"},\"peak_memory_bytes\":{\"type\":[\"integer\",\"null\"]," \
	"\"description\":\"the most memory the sandbox held during the cell\"}," \
	"\"wall_seconds\":{\"type\":[\"number\",\"null\"],\"description\":\"the cell's wall " \
	"time, from its start to its end\"}}}"
cJSON *mcp_call_execution_result(struct mcp_server *srv, struct mcp_call *call,
				 struct strbuf *text, cJSON *content);

/* ---- mcp_context.c ----------------------------------------------------------------- */

/*
 * Contexts: more kernels in the sandbox of an open session (session.h
 * context_open()), each with its own state, the sandbox's files and limits shared.
 * A context is an mcp_session of its own (its own handle, its calls queued apart) tied to
 * its parent: closed with it, not counted against mcp-max-sessions, not in session_list.
 */
int mcp_tool_context_create(struct mcp_server *srv, struct mcp_call *call, const cJSON *args,
			    struct strbuf *err);
int mcp_tool_context_list(struct mcp_server *srv, struct mcp_call *call, const cJSON *args,
			  struct strbuf *err);
int mcp_tool_context_remove(struct mcp_server *srv, struct mcp_call *call, const cJSON *args,
			    struct strbuf *err);
/*
 * The session a call runs in: `handle`'s, or with `context` (may be NULL) that context of
 * it. NULL with `err` saying why.
 */
struct mcp_session *mcp_context_target(struct mcp_server *srv, const char *handle,
				       const char *context, struct strbuf *err);

/* ---- mcp_named.c ------------------------------------------------------------------- */

/*
 * Named sessions. A named session's host process owns its kernel (named.h): the server
 * holds a front end's end of it, like the REPL's, so it outlives the server; closing it only
 * detaches. Its files are the host's: file_put and file_get refuse it.
 *
 * 0 when `name` may name a session, else -1 with `err` saying what a name is.
 */
int mcp_named_check(const char *name, struct strbuf *err);
/*
 * Start the host of session `name` with the session `so` describes (the settings of a
 * session_open: backend, limits, pool) and `policy` (the name a client gave, or NULL for the
 * server's), and attach to it. NULL with `err`.
 */
struct session *mcp_named_start(struct mcp_server *srv, const struct session_opts *so,
				const char *policy, const char *name, struct mcp_session *ms,
				struct strbuf *err);
/*
 * A named session's cell checked against the server's policy before its host gets it (an
 * attached session runs with its starter's settings, not this server's): 1 when the policy
 * blocked it (the call is finished as a local session's blocked cell is), else 0.
 */
int mcp_named_block(struct mcp_session *ms, struct mcp_call *call);
/* The tools: session_attach, and session_close (which detaches a named session). */
int mcp_tool_session_attach(struct mcp_server *srv, struct mcp_call *call, const cJSON *args,
			    struct strbuf *err);
int mcp_tool_session_close(struct mcp_server *srv, struct mcp_call *call, const cJSON *args,
			   struct strbuf *err);
/* session_fork: a named session's kernel copied into a new named session, attached to. */
int mcp_tool_session_fork(struct mcp_server *srv, struct mcp_call *call, const cJSON *args,
			  struct strbuf *err);
/* What session_open and session_attach answer about a session (mcp_tools.c). */
cJSON *mcp_session_description(const struct mcp_session *ms);
/* Add a named session's `name` and how a person attaches to it ("attach") to `o`. */
void mcp_named_describe(cJSON *o, const char *name);

/* ---- mcp_sandbox.c ------------------------------------------------------------------ */

/*
 * The policy of a new session: the server's (`asked` NULL), or the one a client names: a
 * preset or a NAME.policy of the policies directories, loaded once; "none" for none. When the
 * server has a policy a client may name only that one; a path is refused (the server would
 * read any file). 0 with *out set (NULL: none), or -1 with `err`.
 */
int mcp_policy_for(struct mcp_server *srv, const char *asked, const struct policy **out,
		   struct strbuf *err);
void mcp_policies_release(struct mcp_server *srv);
/*
 * Have the server's libraries and those `asked` (comma-separated, or NULL) installed as
 * --libraries installs them (libraries.h: once, in a setup container or a venv, checked
 * against so->policy) and point `so` at them; `ms` keeps the image and interpreter names.
 * 0 (also when there are none), or -1 with `err`.
 */
int mcp_libraries_prepare(struct mcp_server *srv, struct mcp_session *ms,
			  struct session_opts *so, const char *asked, struct strbuf *err);
/* A pooled kernel must have the server's libraries: -1 with `err` when it has others. */
int mcp_libraries_verify(struct mcp_server *srv, struct session *s, struct strbuf *err);

/* ---- mcp_files.c -------------------------------------------------------------------- */

/* Start file_put: stage the bytes, queue the helper cell. -1 with `err` when refused. */
int mcp_file_put(struct mcp_server *srv, struct mcp_call *call, const char *path,
		 const char *base64, struct strbuf *err);
/* Start file_get: queue the helper cell. */
int mcp_file_get(struct mcp_server *srv, struct mcp_call *call, const char *path,
		 struct strbuf *err);
/* Make the result of a finished file call. */
void mcp_file_finish(struct mcp_server *srv, struct mcp_call *call);
/* The URI of plot `index` of `handle`. */
char *mcp_plot_uri(const char *handle, int index);
/* resources/list, resources/templates/list, resources/read. */
void mcp_resources_list(struct mcp_server *srv, const struct mcp_req *req,
			struct mcp_reply *rep);
void mcp_resources_templates(struct mcp_server *srv, const struct mcp_req *req,
			     struct mcp_reply *rep);
void mcp_resources_read(struct mcp_server *srv, const struct mcp_req *req,
			struct mcp_reply *rep);

#endif
