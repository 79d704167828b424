/* libzmq on first use: the zmq_* functions `cellbox kernel` calls, forwarded by dlsym(). */
#include "zmq_lazy.h"
#include "alloc.h"
#include "lazylib.h"

#include <errno.h>
#include <pthread.h>
#include <zmq.h>

/* The real functions, each a row: its name and where its address goes. */
static struct {
	void *(*ctx_new)(void);
	int (*ctx_term)(void *);
	void *(*socket)(void *, int);
	int (*close)(void *);
	int (*bind)(void *, const char *);
	int (*setsockopt)(void *, int, const void *, size_t);
	int (*send)(void *, const void *, size_t, int);
	int (*poll)(zmq_pollitem_t *, int, long);
	int (*msg_init)(zmq_msg_t *);
	int (*msg_close)(zmq_msg_t *);
	void *(*msg_data)(zmq_msg_t *);
	size_t (*msg_size)(const zmq_msg_t *);
	int (*msg_more)(const zmq_msg_t *);
	int (*msg_recv)(zmq_msg_t *, void *, int);
	int (*msg_send)(zmq_msg_t *, void *, int);
	const char *(*strerror)(int);
} real;

static const struct lazylib_symbol symbols[] = {
	{ "zmq_ctx_new", (void **)&real.ctx_new },
	{ "zmq_ctx_term", (void **)&real.ctx_term },
	{ "zmq_socket", (void **)&real.socket },
	{ "zmq_close", (void **)&real.close },
	{ "zmq_bind", (void **)&real.bind },
	{ "zmq_setsockopt", (void **)&real.setsockopt },
	{ "zmq_send", (void **)&real.send },
	{ "zmq_poll", (void **)&real.poll },
	{ "zmq_msg_init", (void **)&real.msg_init },
	{ "zmq_msg_close", (void **)&real.msg_close },
	{ "zmq_msg_data", (void **)&real.msg_data },
	{ "zmq_msg_size", (void **)&real.msg_size },
	{ "zmq_msg_more", (void **)&real.msg_more },
	{ "zmq_msg_recv", (void **)&real.msg_recv },
	{ "zmq_msg_send", (void **)&real.msg_send },
	{ "zmq_strerror", (void **)&real.strerror },
};

static pthread_once_t once = PTHREAD_ONCE_INIT;
static int loaded;
static char why[256];

/* Load libzmq and find every function of the table (once per process). */
static void load(void)
{
	loaded = !lazylib_load(ZMQ_LAZY_SONAME, symbols, ARRAY_SIZE(symbols), why, sizeof(why));
}

int zmq_lazy_loaded(void)
{
	return loaded;
}

void *zmq_ctx_new(void)
{
	pthread_once(&once, load);
	if (!loaded) {
		errno = ELIBACC;
		return NULL;
	}
	return real.ctx_new();
}

/*
 * The functions below are called only with a context zmq_ctx_new() made, or its sockets and
 * messages: libzmq is there (zmq_msg_init and zmq_strerror may come first: they check).
 */
int zmq_ctx_term(void *ctx)
{
	return real.ctx_term(ctx);
}

void *zmq_socket(void *ctx, int type)
{
	return real.socket(ctx, type);
}

int zmq_close(void *s)
{
	return real.close(s);
}

int zmq_bind(void *s, const char *endpoint)
{
	return real.bind(s, endpoint);
}

int zmq_setsockopt(void *s, int option, const void *value, size_t len)
{
	return real.setsockopt(s, option, value, len);
}

int zmq_send(void *s, const void *buf, size_t len, int flags)
{
	return real.send(s, buf, len, flags);
}

int zmq_poll(zmq_pollitem_t *items, int n, long timeout)
{
	return real.poll(items, n, timeout);
}

int zmq_msg_init(zmq_msg_t *m)
{
	pthread_once(&once, load);
	if (!loaded) {
		errno = ELIBACC;
		return -1;
	}
	return real.msg_init(m);
}

int zmq_msg_close(zmq_msg_t *m)
{
	return real.msg_close(m);
}

void *zmq_msg_data(zmq_msg_t *m)
{
	return real.msg_data(m);
}

size_t zmq_msg_size(const zmq_msg_t *m)
{
	return real.msg_size(m);
}

int zmq_msg_more(const zmq_msg_t *m)
{
	return real.msg_more(m);
}

int zmq_msg_recv(zmq_msg_t *m, void *s, int flags)
{
	return real.msg_recv(m, s, flags);
}

int zmq_msg_send(zmq_msg_t *m, void *s, int flags)
{
	return real.msg_send(m, s, flags);
}

const char *zmq_strerror(int e)
{
	pthread_once(&once, load);
	if (!loaded)
		return why;
	return real.strerror(e);
}
