/*
 * The notes a container's starter leaves at its channel's host-only top, which no container
 * sees, and their reading by who adopts the kernel or starts a context beside it: the
 * container's id (BACKEND_CONTAINER_FILE), its engine (BACKEND_ENGINE_FILE) and its facts
 * (FACTS_FILE) (backend_docker_int.h).
 */
#include "backend.h"
#include "backend_docker_int.h"
#include "numconv.h"
#include "wall.h"

#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/*
 * The container's facts an adopter needs, beside its id: the engine's API version, its
 * memory limit (for messages), whether its runtime may leave an OOM kill unsaid, whether its
 * stdin is open (the runner's wake-up) and whether its channel goes over a stream. With them
 * a pooled run asks the engine only whether the container is there (docker_status_raw) and
 * loads no HTTP client: with the version and inspect requests it asked, that was half of a
 * pooled run here
 * (docs/benchmarks.md: 27.3 -> 12.0 ms under runc, 36.4 -> 20.7 ms under gVisor).
 */
#define FACTS_FILE "container.json"

static void write_facts(const char *channel_dir, const struct backend_docker *db)
{
	cJSON *f = cJSON_CreateObject();
	char *text;

	cJSON_AddStringToObject(f, "api", db->d.api);
	cJSON_AddNumberToObject(f, "memory", (double)db->memory);
	cJSON_AddBoolToObject(f, "oom_unsure", db->oom_unsure);
	cJSON_AddBoolToObject(f, "stdin", db->open_stdin);
	cJSON_AddBoolToObject(f, "stream", db->stream);
	text = cJSON_PrintUnformatted(f);
	backend_write_note(channel_dir, FACTS_FILE, text);
	free(text);
	cJSON_Delete(f);
}

/*
 * Read the facts of the kernel in `k`'s channel into `db`, its engine's API version into
 * `api` (of `n` bytes): 0, or -1 when there are none.
 */
int backend_docker_read_facts(const struct kernel_handle *k, struct backend_docker *db, char *api,
			      size_t n)
{
	struct strbuf text = STRBUF_INIT;
	char *path = xasprintf("%s/" FACTS_FILE, k->channel_dir);
	cJSON *f = strbuf_read_file(&text, path, 4096) == 0 ? cJSON_Parse(text.buf) : NULL;
	const cJSON *m = cJSON_GetObjectItemCaseSensitive(f, "memory");
	const char *v = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(f, "api"));
	long long bytes;
	int rc = -1;

	if (json_integer(m, 1, LLONG_MAX, &bytes) && v) {
		snprintf(api, n, "%s", v);
		db->memory = (unsigned long long)bytes;
		db->oom_unsure = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(f, "oom_unsure"));
		db->open_stdin = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(f, "stdin"));
		db->stream = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(f, "stream"));
		rc = 0;
	}
	cJSON_Delete(f);
	strbuf_release(&text);
	free(path);
	return rc;
}

/*
 * The engine of the kernel in `k`'s channel: its note (backend_docker_notes_write), else
 * the host of `k`'s sandbox (NULL: the default). `buf` holds the note's text.
 */
const char *backend_docker_engine_of(const struct kernel_handle *k, struct strbuf *buf)
{
	char *path = xasprintf("%s/" BACKEND_ENGINE_FILE, k->channel_dir);
	int rc = strbuf_read_file(buf, path, 1024);

	free(path);
	if (rc >= 0 && buf->len && !memchr(buf->buf, '\n', buf->len))
		return buf->buf;
	return k->sandbox ? k->sandbox->host : NULL;
}

/* The container id a channel names; -1 with `err` when there is none. */
int backend_docker_read_id(const struct kernel_handle *k, const char *engine,
			   struct strbuf *id, struct strbuf *err)
{
	char *path = xasprintf("%s/" BACKEND_CONTAINER_FILE, k->channel_dir);
	int rc = 0;

	if (strbuf_read_file(id, path, 256) < 0 || !id->len) {
		strbuf_addf(err, "'%s' names no container: the kernel in '%s' is not a %s kernel",
			    path, k->channel_dir, engine);
		rc = -1;
	} else if (id->len < 12 || id->len > 64 || strspn(id->buf, "0123456789abcdef") != id->len) {
		/* Ours, out of every kernel's reach; checked all the same, as a path from afar. */
		strbuf_addf(err, "'%.64s' is not a container id", id->buf);
		rc = -1;
	}
	free(path);
	return rc;
}

void backend_docker_notes_write(const struct backend_docker *db, const struct kernel_spec *spec)
{
	backend_write_note(spec->channel_dir, BACKEND_CONTAINER_FILE, db->id);
	write_facts(spec->channel_dir, db);
	if (spec->sandbox && spec->sandbox->host && *spec->sandbox->host)
		backend_write_note(spec->channel_dir, BACKEND_ENGINE_FILE, spec->sandbox->host);
}
