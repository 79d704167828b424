/*
 * libFuzzer target for what `cellbox mcp` reads from its client: a line through the
 * dispatcher (JSON-RPC, both revisions, the tools' argument checks), the streaming scan of an
 * oversized message and base64. Not built by meson; run (after ./scripts/build, for
 * build/kernels):
 *
 *   clang -fsanitize=fuzzer,address,undefined -D_GNU_SOURCE -Itui -Iengine -Ibuild/kernels \
 *         -I/usr/include/cjson -DCELLBOX_VERSION='"fuzz"' tests/fuzz/fuzz_mcp.c tui/mcp_*.c \
 *         engine/[a-z]*.c build/kernels/runner_py.c -lcjson -lpcre2-8 -o fuzz_mcp
 *   ./fuzz_mcp -max_len=4096
 *
 * The backend is one that does not exist, so a tools/call that gets through cannot start a
 * kernel. The unit test mcp-unit/dispatch_fuzz runs a fixed mutation sweep of the same in CI.
 */
#include <fcntl.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

#include "mcp.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A message: through the dispatcher, as cmd_mcp.c hands it. */
static void on_line(struct mcp_reader *r, const char *line, size_t len, void *data)
{
	mcp_handle_line(data, line, len, &r->scan);
	mcp_calls_settle(data);
}

/* Feed one input as client bytes (lines and all), then scan and decode it; sanitizers judge. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct cellbox_config cfg;
	static struct mcp_server srv;
	static int ready;
	struct mcp_scan sc;
	struct strbuf dec = STRBUF_INIT;
	cJSON *id;

	if (!ready) {
		config_defaults(&cfg);
		free((char *)cfg.session.backend);
		cfg.session.backend = xstrdup("nosuch");
		cfg.mcp.max_message = 2048;
		mcp_server_init(&srv, &cfg, open("/dev/null", O_WRONLY | O_CLOEXEC));
		ready = 1;
	}
	mcp_reader_feed(&srv.rd, (const char *)data, size, on_line, &srv);
	mcp_scan_init(&sc);
	mcp_scan_feed(&sc, (const char *)data, size);
	id = mcp_scan_id(&sc);
	cJSON_Delete(id);
	mcp_base64_decode((const char *)data, size, &dec);
	strbuf_release(&dec);
	return 0;
}
