/*
 * The engine's checkpoint API (dockerckpt.h): ask what the engine offers, make a
 * checkpoint, start a container from one, and where its files are.
 */
#include "dockerckpt.h"

#include <stdlib.h>
#include <string.h>

static const char NO_API[] = " (the engine's checkpoints need dockerd --experimental)";

int dockerckpt_engine(struct docker *d, struct dockerckpt_engine *e,
			     struct strbuf *err)
{
	cJSON *info = NULL;
	const char *root;
	long status;

	memset(e, 0, sizeof(*e));
	status = docker_call(d, "GET", "/info", NULL, &info, err);
	if (status != 200 || !cJSON_IsObject(info)) {
		if (status >= 0 && status < 400)
			strbuf_addstr(err, "the engine's /info is not an object");
		cJSON_Delete(info);
		return -1;
	}
	root = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(info, "DockerRootDir"));
	if (root && *root == '/' && strlen(root) < 4096)
		e->root = xstrdup(root);
	e->experimental = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(info, "ExperimentalBuild"));
	cJSON_Delete(info);
	return 0;
}

void dockerckpt_engine_release(struct dockerckpt_engine *e)
{
	free(e->root);
	memset(e, 0, sizeof(*e));
}

int dockerckpt_name_ok(const char *s)
{
	size_t n = s ? strlen(s) : 0;

	if (n == 0 || n > 64 || s[0] == '.')
		return 0;
	return strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-") == n;
}

int dockerckpt_create(struct docker *d, const char *id, const char *name,
			     int leave_running, struct strbuf *err)
{
	struct strbuf path = STRBUF_INIT;
	cJSON *body;
	long status;

	if (!dockerckpt_name_ok(id) || !dockerckpt_name_ok(name)) {
		strbuf_addstr(err, "cannot checkpoint: not a container id or checkpoint name");
		return -1;
	}
	body = cJSON_CreateObject();
	cJSON_AddStringToObject(body, "CheckpointID", name);
	cJSON_AddBoolToObject(body, "Exit", !leave_running);
	strbuf_addf(&path, "/containers/%s/checkpoints", id);
	status = docker_call(d, "POST", path.buf, body, NULL, err);
	cJSON_Delete(body);
	strbuf_release(&path);
	if (status == 201 || status == 200 || status == 204)
		return 0;
	if (status == 404 && !strstr(err->buf, "No such container"))
		strbuf_addstr(err, NO_API);
	return -1;
}

int dockerckpt_start(struct docker *d, const char *id, const char *name,
			    struct strbuf *err)
{
	struct strbuf path = STRBUF_INIT;
	long status;

	if (!dockerckpt_name_ok(id) || !dockerckpt_name_ok(name)) {
		strbuf_addstr(err, "cannot restore: not a container id or checkpoint name");
		return -1;
	}
	strbuf_addf(&path, "/containers/%s/start?checkpoint=", id);
	docker_urlencode(&path, name);
	status = docker_call(d, "POST", path.buf, NULL, NULL, err);
	strbuf_release(&path);
	if (status == 204 || status == 304)
		return 0;
	if (status == 400 || status == 404)
		strbuf_addstr(err, NO_API);
	return -1;
}

char *dockerckpt_dir(const char *root, const char *id, const char *name)
{
	if (!root || *root != '/' || !dockerckpt_name_ok(id) ||
	    !dockerckpt_name_ok(name))
		return NULL;
	return xasprintf("%s/containers/%s/checkpoints/%s", root, id, name);
}
