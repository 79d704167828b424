/* The backend registry: a name to its family's table (what families share: backend_status.c). */
#include "backend.h"

#include <string.h>

static const struct {
	const char *name;
	const struct backend_ops *ops;
} registry[] = {
	{ "local", &backend_local_ops },
	{ "docker", &backend_docker_ops },
	{ "podman", &backend_docker_ops },
};

/* The engine whose containers gc collects for a backend without any. */
#define GC_DEFAULT "docker"

const struct backend_ops *backend_find(const char *name, struct strbuf *err)
{
	for (size_t i = 0; i < ARRAY_SIZE(registry); i++)
		if (!strcmp(registry[i].name, name))
			return registry[i].ops;
	strbuf_addf(err, "unknown backend '%s' (expected ", name);
	for (size_t i = 0; i < ARRAY_SIZE(registry); i++)
		strbuf_addf(err, "%s%s", registry[i].name, i + 2 < ARRAY_SIZE(registry) ? ", " :
			    i + 1 < ARRAY_SIZE(registry) ? " or " : ")");
	return NULL;
}

struct backend *backend_new(const char *name, struct strbuf *err)
{
	const struct backend_ops *ops = backend_find(name, err);

	return ops ? ops->create(name) : NULL;
}

struct backend *backend_new_within(const char *name, struct strbuf *err)
{
	const struct backend_ops *ops = backend_find(name, err);

	if (ops && ops->contexts)
		ops = ops->contexts;
	return ops ? ops->create(name) : NULL;
}

struct backend *backend_adopt(const char *name, const struct kernel_handle *k,
			      struct strbuf *err)
{
	const struct backend_ops *ops = backend_find(name, err);

	return ops ? ops->adopt(name, k, err) : NULL;
}

int backend_running(const char *name, const struct kernel_handle *k, struct strbuf *id)
{
	struct strbuf err = STRBUF_INIT;
	const struct backend_ops *ops = backend_find(name, &err);

	strbuf_release(&err);
	return ops ? ops->running(name, k, id) : -1;
}

const char *backend_engine_name(const char *name, struct strbuf *err)
{
	const struct backend_ops *ops = backend_find(name, err);

	return !ops ? NULL : ops->gc ? name : GC_DEFAULT;
}

int backend_gc(const char *name, const char *host, const char *runtime_dir, struct strbuf *out,
	       struct strbuf *err)
{
	const struct backend_ops *ops;

	name = backend_engine_name(name, err);
	ops = name ? backend_find(name, err) : NULL;
	return ops ? ops->gc(name, host, runtime_dir, out, err) : -1;
}
