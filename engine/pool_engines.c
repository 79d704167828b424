/*
 * A pool's engines (`pool serve --engine HOST`, given more than once): where its container
 * kernels are placed. Each engine is asked once what it has (GET /info: its CPUs and memory)
 * and holds as many of the pool's kernels as both allow against a kernel's limits (--cpus,
 * --memory); a new kernel goes to the engine with the most room left, as a share of what it
 * holds. An engine that fails (cannot be reached, a kernel that cannot start there) is taken
 * out and asked again after a back-off (2 s, doubling to 60 s); its kernels that die are
 * replaced on the others. Without --engine, the pool has its one engine (the docker-host
 * setting's) and none of this applies.
 */
#include "backend.h"
#include "docker.h"
#include "numconv.h"
#include "pool_daemon.h"
#include "pool_int.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#define BACKOFF_MIN 2.0
#define BACKOFF_MAX 60.0

/* Ask engine `e` what it has; 0, or -1 with `why`. */
static int probe(struct daemon *d, struct pool_engine *e, struct strbuf *why)
{
	struct docker dk;
	cJSON *info = NULL;
	long long n;
	double cpus = d->kopts.sandbox.cpus > 0 ? d->kopts.sandbox.cpus : 1;
	double mem = d->kopts.memory ? (double)d->kopts.memory : (double)(1ull << 30);
	int rc = -1;

	if (backend_docker_connect(&dk, d->backend, e->host, why) < 0)
		return -1;
	if (docker_call(&dk, "GET", "/info", NULL, &info, why) == 200) {
		e->cpus = json_integer(cJSON_GetObjectItemCaseSensitive(info, "NCPU"), 1, INT_MAX,
				       &n) ? (int)n : 1;
		e->mem = json_integer(cJSON_GetObjectItemCaseSensitive(info, "MemTotal"), 1,
				      LLONG_MAX, &n) ? (unsigned long long)n : 1ull << 30;
		e->capacity = (int)(e->cpus / cpus);
		if ((double)e->mem / mem < e->capacity)
			e->capacity = (int)((double)e->mem / mem);
		if (e->capacity < 1)
			e->capacity = 1;
		rc = 0;
	}
	cJSON_Delete(info);
	docker_release(&dk);
	return rc;
}

void pool_engines_init(struct daemon *d)
{
	const struct pool_config *pc = d->pc;

	d->neng = pc->nengines;
	d->eng = d->neng ? xcalloc(d->neng, sizeof(*d->eng)) : NULL;
	for (size_t i = 0; i < d->neng; i++) {
		d->eng[i].host = pc->engines[i];
		d->eng[i].up = 0;
		d->eng[i].retry_at = 0;		/* asked at the first pass */
	}
	pool_engines_check(d);
}

void pool_engines_release(struct daemon *d)
{
	free(d->eng);
	d->eng = NULL;
	d->neng = 0;
}

void pool_engine_failed(struct daemon *d, int i, const char *why)
{
	struct pool_engine *e;

	if (i < 0 || (size_t)i >= d->neng)
		return;
	e = &d->eng[i];
	e->backoff = e->backoff > 0 ? e->backoff * 2 : BACKOFF_MIN;
	if (e->backoff > BACKOFF_MAX)
		e->backoff = BACKOFF_MAX;
	e->retry_at = clock_now() + e->backoff;
	if (e->up)
		pool_log(d, "engine %s taken out: %s (asked again in %.0f s)", e->host, why,
			 e->backoff);
	e->up = 0;
	pool_write_info(d);
}

void pool_engines_check(struct daemon *d)
{
	double now = clock_now();
	int changed = 0;

	for (size_t i = 0; i < d->neng; i++) {
		struct pool_engine *e = &d->eng[i];
		struct strbuf why = STRBUF_INIT;

		if (e->up || now < e->retry_at)
			continue;
		if (probe(d, e, &why) == 0) {
			e->up = 1;
			e->backoff = 0;
			pool_log(d, "engine %s in: %d CPUs, %llu MB, room for %d kernels", e->host,
				 e->cpus, e->mem >> 20, e->capacity);
			changed = 1;
		} else {
			int was = e->retry_at > 0;
			e->backoff = e->backoff > 0 ? e->backoff * 2 : BACKOFF_MIN;
			if (e->backoff > BACKOFF_MAX)
				e->backoff = BACKOFF_MAX;
			e->retry_at = now + e->backoff;
			if (!was)
				pool_log(d, "engine %s out: %s", e->host, why.buf);
		}
		strbuf_release(&why);
	}
	if (changed)
		pool_write_info(d);
}

int pool_engine_load(const struct daemon *d, int i)
{
	int n = 0;

	for (size_t k = 0; k < d->nk; k++)
		n += d->k[k].engine == i && !d->k[k].dying;
	return n + pool_spawn_on(d, i);
}

int pool_engine_pick(const struct daemon *d)
{
	int best = -1;
	double best_share = 0;

	for (size_t i = 0; i < d->neng; i++) {
		const struct pool_engine *e = &d->eng[i];
		int load;
		double share;

		if (!e->up)
			continue;
		load = pool_engine_load(d, (int)i);
		if (load >= e->capacity)
			continue;
		share = (double)load / e->capacity;
		if (best < 0 || share < best_share) {
			best = (int)i;
			best_share = share;
		}
	}
	return best;
}

void pool_engines_json(const struct daemon *d, cJSON *info)
{
	cJSON *arr;

	if (!d->neng)
		return;
	arr = cJSON_AddArrayToObject(info, "engines");
	for (size_t i = 0; i < d->neng; i++) {
		cJSON *e = cJSON_CreateObject();

		cJSON_AddStringToObject(e, "host", d->eng[i].host);
		cJSON_AddBoolToObject(e, "up", d->eng[i].up);
		cJSON_AddNumberToObject(e, "kernels", pool_engine_load(d, (int)i));
		cJSON_AddNumberToObject(e, "capacity", d->eng[i].capacity);
		cJSON_AddItemToArray(arr, e);
	}
}
