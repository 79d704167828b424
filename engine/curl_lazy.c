/* libcurl on first use: the curl_* functions the docker client calls, forwarded by dlsym(). */
#define CURL_DISABLE_TYPECHECK	/* curl_easy_setopt is defined here, not called through a macro */
#include "curl_lazy.h"
#include "alloc.h"
#include "lazylib.h"

#include <curl/curl.h>
#include <pthread.h>
#include <stdarg.h>

/* The real functions, each a row: its name and where its address goes. */
static struct {
	CURL *(*easy_init)(void);
	void (*easy_cleanup)(CURL *);
	void (*easy_reset)(CURL *);
	CURLcode (*easy_perform)(CURL *);
	CURLcode (*easy_setopt)(CURL *, CURLoption, ...);
	CURLcode (*easy_getinfo)(CURL *, CURLINFO, ...);
	const char *(*easy_strerror)(CURLcode);
	struct curl_slist *(*slist_append)(struct curl_slist *, const char *);
	void (*slist_free_all)(struct curl_slist *);
	CURLcode (*easy_send)(CURL *, const void *, size_t, size_t *);
	CURLcode (*easy_recv)(CURL *, void *, size_t, size_t *);
} real;

static const struct lazylib_symbol symbols[] = {
	{ .name = "curl_easy_init", .slot = (void **)&real.easy_init },
	{ .name = "curl_easy_cleanup", .slot = (void **)&real.easy_cleanup },
	{ .name = "curl_easy_reset", .slot = (void **)&real.easy_reset },
	{ .name = "curl_easy_perform", .slot = (void **)&real.easy_perform },
	{ .name = "curl_easy_setopt", .slot = (void **)&real.easy_setopt },
	{ .name = "curl_easy_getinfo", .slot = (void **)&real.easy_getinfo },
	{ .name = "curl_easy_strerror", .slot = (void **)&real.easy_strerror },
	{ .name = "curl_slist_append", .slot = (void **)&real.slist_append },
	{ .name = "curl_slist_free_all", .slot = (void **)&real.slist_free_all },
	{ .name = "curl_easy_send", .slot = (void **)&real.easy_send },
	{ .name = "curl_easy_recv", .slot = (void **)&real.easy_recv },
};

static pthread_once_t once = PTHREAD_ONCE_INIT;
static int loaded;
static char why[256];

/* Load libcurl and find every function of the table (once per process). */
static void load(void)
{
	loaded = !lazylib_load(CURL_LAZY_SONAME, symbols, ARRAY_SIZE(symbols), why, sizeof(why));
}

/* Whether libcurl is there to forward to (loading it on the first call). */
static int ready(void)
{
	pthread_once(&once, load);
	return loaded;
}

int curl_lazy_loaded(void)
{
	return loaded;
}

const char *curl_lazy_error(void)
{
	return why;
}

CURL *curl_easy_init(void)
{
	return ready() ? real.easy_init() : NULL;
}

/* The functions below are called only with a handle curl_easy_init() made: libcurl is there. */
void curl_easy_cleanup(CURL *c)
{
	real.easy_cleanup(c);
}

void curl_easy_reset(CURL *c)
{
	real.easy_reset(c);
}

CURLcode curl_easy_perform(CURL *c)
{
	return real.easy_perform(c);
}

/* One option: its value's type is said by the option's number, as in libcurl itself. */
CURLcode curl_easy_setopt(CURL *c, CURLoption option, ...)
{
	va_list ap;
	CURLcode rc;

	va_start(ap, option);
	if (option < CURLOPTTYPE_OBJECTPOINT)
		rc = real.easy_setopt(c, option, va_arg(ap, long));
	else if (option < CURLOPTTYPE_FUNCTIONPOINT)
		rc = real.easy_setopt(c, option, va_arg(ap, void *));
	else if (option < CURLOPTTYPE_OFF_T)
		rc = real.easy_setopt(c, option, va_arg(ap, void (*)(void)));
	else if (option < CURLOPTTYPE_BLOB)
		rc = real.easy_setopt(c, option, va_arg(ap, curl_off_t));
	else
		rc = real.easy_setopt(c, option, va_arg(ap, void *));
	va_end(ap);
	return rc;
}

/* Every CURLINFO takes a pointer to where the answer goes. */
CURLcode curl_easy_getinfo(CURL *c, CURLINFO info, ...)
{
	va_list ap;
	void *p;

	va_start(ap, info);
	p = va_arg(ap, void *);
	va_end(ap);
	return real.easy_getinfo(c, info, p);
}

/* A CONNECT_ONLY handle's bytes (the TLS pump of docker_tls.c). */
CURLcode curl_easy_send(CURL *c, const void *buf, size_t len, size_t *n)
{
	return real.easy_send(c, buf, len, n);
}

CURLcode curl_easy_recv(CURL *c, void *buf, size_t len, size_t *n)
{
	return real.easy_recv(c, buf, len, n);
}

const char *curl_easy_strerror(CURLcode code)
{
	return ready() ? real.easy_strerror(code) : why;
}

struct curl_slist *curl_slist_append(struct curl_slist *list, const char *s)
{
	return ready() ? real.slist_append(list, s) : NULL;
}

void curl_slist_free_all(struct curl_slist *list)
{
	if (list && ready())
		real.slist_free_all(list);
}
