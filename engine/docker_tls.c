/*
 * TLS to an engine (tcp:// with DOCKER_TLS_VERIFY or a context's certificates): curl's options
 * for the API calls, and the raw connections (wait, attach) as plain descriptors.
 *
 * A raw connection is one end of a socketpair; its other end belongs to a thread of its own
 * holding a CONNECT_ONLY https handle, which pumps bytes both ways (curl_easy_recv/send) with
 * a buffer each way, so that neither side can stall the other. The caller sees a socket as it
 * would for tcp:// (poll, non-blocking writes, EOF when the engine closes); closing it ends
 * the thread, which closes the TLS connection. Nothing is forked: the handshake is made in the
 * caller's thread (its errors are the caller's), then the handle is handed over.
 */
#include "docker_int.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define PUMP_BUF (64u << 10)

curl_socket_t docker_tls_cloexec_socket(void *data, curlsocktype purpose,
					struct curl_sockaddr *addr)
{
	(void)data;
	(void)purpose;
	return socket(addr->family, addr->socktype | SOCK_CLOEXEC, addr->protocol);
}

void docker_tls_options(CURL *c, const struct docker_endpoint *ep)
{
	if (!ep->tls)
		return;
	/* Only the CA named: not the system's store too (as the CLI's RootCAs). */
	if (*ep->ca) {
		curl_easy_setopt(c, CURLOPT_CAINFO, ep->ca);
		curl_easy_setopt(c, CURLOPT_CAPATH, NULL);
	}
	if (*ep->cert) {
		curl_easy_setopt(c, CURLOPT_SSLCERT, ep->cert);
		curl_easy_setopt(c, CURLOPT_SSLKEY, ep->key);
	}
	curl_easy_setopt(c, CURLOPT_SSL_VERIFYPEER, ep->verify ? 1L : 0L);
	curl_easy_setopt(c, CURLOPT_SSL_VERIFYHOST, ep->verify ? 2L : 0L);
	curl_easy_setopt(c, CURLOPT_SSLVERSION, (long)CURL_SSLVERSION_TLSv1_2);
}

/* Whether `detail` (curl's error buffer) mentions `s`. */
static int says(const char *detail, const char *s)
{
	return detail && strstr(detail, s);
}

void docker_tls_explain(const struct docker_endpoint *ep, CURLcode rc, const char *detail,
			struct strbuf *err)
{
	const char *d = detail && *detail ? detail : curl_easy_strerror(rc);

	switch (rc) {
	case CURLE_COULDNT_CONNECT:
		strbuf_addf(err, "no docker engine answers at %s (%s): %s (is the engine running "
			    "and listening there? check --docker-host / DOCKER_HOST)", ep->host,
			    ep->origin, d);
		return;
	case CURLE_COULDNT_RESOLVE_HOST:
		strbuf_addf(err, "cannot resolve the docker host %s (%s): %s", ep->name, ep->host, d);
		return;
	case CURLE_OPERATION_TIMEDOUT:
		strbuf_addf(err, "the docker engine at %s did not answer in time: %s", ep->host, d);
		return;
	case CURLE_PEER_FAILED_VERIFICATION:
		if (says(d, "subject name") || says(d, "does not match") || says(d, "alternative"))
			strbuf_addf(err, "TLS verification failed: the engine's certificate at %s is "
				    "not for the name '%s' (%s); connect by a name its certificate "
				    "carries", ep->host, ep->name, d);
		else
			strbuf_addf(err, "TLS verification failed: the engine's certificate at %s is "
				    "not signed by the CA %s (%s); DOCKER_CERT_PATH (or the context's "
				    "ca.pem) must hold the CA that signed the engine's certificate",
				    ep->host, *ep->ca ? ep->ca : "(the system's)", d);
		return;
	case CURLE_SSL_CACERT_BADFILE:
		strbuf_addf(err, "TLS: cannot use the CA certificate %s for %s: %s", ep->ca,
			    ep->host, d);
		return;
	case CURLE_SSL_CERTPROBLEM:
		strbuf_addf(err, "TLS: cannot use the client certificate %s with key %s for %s: %s",
			    ep->cert, ep->key, ep->host, d);
		return;
	case CURLE_SSL_CONNECT_ERROR:
	case CURLE_RECV_ERROR:
	case CURLE_SEND_ERROR:
	case CURLE_GOT_NOTHING:
		if (ep->tls && !*ep->cert && (says(d, "certificate required") ||
					      says(d, "handshake failure") ||
					      says(d, "bad certificate"))) {
			strbuf_addf(err, "TLS: the engine at %s wants a client certificate and there "
				    "is none (cert.pem and key.pem beside ca.pem in DOCKER_CERT_PATH "
				    "or the context) (%s)", ep->host, d);
			return;
		}
		if (ep->tls && (says(d, "bad certificate") || says(d, "unknown ca") ||
				says(d, "certificate required"))) {
			strbuf_addf(err, "TLS: the engine at %s refused the client certificate %s "
				    "(not signed by a CA it trusts?) (%s)", ep->host, ep->cert, d);
			return;
		}
		if (ep->tls && rc == CURLE_SSL_CONNECT_ERROR) {
			strbuf_addf(err, "TLS handshake with %s failed (does it speak TLS? without "
				    "DOCKER_TLS_VERIFY plain HTTP is used) (%s)", ep->host, d);
			return;
		}
		break;
	default:
		break;
	}
	strbuf_addf(err, "docker engine %s (%s): %s", ep->host, ep->origin, d);
}

/*
 * The pumps of one client, each a joinable thread: the finished ones are joined at the next
 * dial (their stacks back) and at docker_release(), which waits a moment for those whose
 * descriptors are closed, so that a released client leaves no thread and no TLS state behind.
 * A pump still running then (its descriptor still open) is detached and frees its own node;
 * the group is freed by whoever lets go of it last, the client or such a pump.
 */
struct pump_node {
	pthread_t tid;
	int done;		/* its thread has finished: join it */
	int orphan;		/* detached at the release: the thread frees the node */
	struct pump_node *next;
};

struct docker_tls_group {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int refs;		/* the client's and one per orphaned pump */
	struct pump_node *nodes;
};

struct docker_tls_group *docker_tls_group_new(void)
{
	struct docker_tls_group *g = xcalloc(1, sizeof(*g));

	pthread_mutex_init(&g->mu, NULL);
	pthread_cond_init(&g->cv, NULL);
	g->refs = 1;
	return g;
}

/* Drop one reference and unlock; the last frees the group. */
static void group_unref_unlock(struct docker_tls_group *g)
{
	if (--g->refs == 0) {
		pthread_mutex_unlock(&g->mu);
		pthread_mutex_destroy(&g->mu);
		pthread_cond_destroy(&g->cv);
		free(g);
		return;
	}
	pthread_mutex_unlock(&g->mu);
}

/* Join the pumps that have finished (the mutex held). */
static void join_done(struct docker_tls_group *g)
{
	for (struct pump_node **pp = &g->nodes; *pp;) {
		struct pump_node *n = *pp;
		if (n->done) {
			*pp = n->next;
			pthread_join(n->tid, NULL);	/* done: it is only returning */
			free(n);
		} else {
			pp = &n->next;
		}
	}
}

void docker_tls_group_free(struct docker_tls_group *g, double seconds)
{
	struct timespec until;
	int running;

	if (!g)
		return;
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += (time_t)seconds;
	pthread_mutex_lock(&g->mu);
	for (;;) {
		join_done(g);
		if (!g->nodes || pthread_cond_timedwait(&g->cv, &g->mu, &until) != 0)
			break;
	}
	join_done(g);
	running = 0;
	for (struct pump_node *n = g->nodes, *next; n; n = next) {
		next = n->next;
		n->orphan = 1;
		pthread_detach(n->tid);
		running++;
	}
	g->nodes = NULL;
	g->refs += running;
	group_unref_unlock(g);
}

struct pump {
	struct docker_tls_group *group;
	struct pump_node *node;
	CURL *c;
	int local;			/* our end of the socketpair */
	curl_socket_t net;
	size_t in_len;			/* engine -> caller, waiting */
	size_t out_len, out_try;	/* caller -> engine, waiting; a send to repeat as it was */
	int net_eof, local_eof;
	char in[PUMP_BUF], out[PUMP_BUF];
};

/* Move what can move without blocking; 1 when anything did, -1 when the pump is done. */
static int pump_step(struct pump *p)
{
	int moved = 0;
	ssize_t k;

	while (!p->net_eof && p->in_len < sizeof(p->in)) {
		size_t n = 0;
		CURLcode rc = curl_easy_recv(p->c, p->in + p->in_len, sizeof(p->in) - p->in_len, &n);
		if (rc == CURLE_AGAIN)
			break;
		if (rc != CURLE_OK || n == 0) {
			p->net_eof = 1;
			break;
		}
		p->in_len += n;
		moved = 1;
	}
	if (p->in_len) {
		k = send(p->local, p->in, p->in_len, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (k > 0) {
			memmove(p->in, p->in + k, p->in_len - (size_t)k);
			p->in_len -= (size_t)k;
			moved = 1;
		} else if (k < 0 && errno != EAGAIN && errno != EINTR) {
			return -1;		/* the caller closed its end */
		}
	}
	if (p->net_eof && !p->in_len)
		return -1;			/* the caller reads EOF */
	if (!p->local_eof && p->out_len < sizeof(p->out)) {
		k = recv(p->local, p->out + p->out_len, sizeof(p->out) - p->out_len, MSG_DONTWAIT);
		if (k > 0) {
			p->out_len += (size_t)k;
			moved = 1;
		} else if (k == 0) {
			p->local_eof = 1;
		} else if (errno != EAGAIN && errno != EINTR) {
			return -1;
		}
	}
	if (p->out_len) {
		size_t len = p->out_try ? p->out_try : p->out_len, n = 0;
		CURLcode rc = curl_easy_send(p->c, p->out, len, &n);
		if (rc == CURLE_AGAIN) {
			p->out_try = len;	/* OpenSSL wants the same write again */
		} else if (rc != CURLE_OK) {
			return -1;
		} else {
			p->out_try = 0;
			memmove(p->out, p->out + n, p->out_len - n);
			p->out_len -= n;
			moved = 1;
		}
	}
	return moved;
}

static void *pump_run(void *arg)
{
	struct pump *p = arg;
	int moved;

	while ((moved = pump_step(p)) >= 0) {
		struct pollfd pfd[2] = {
			{ .fd = p->local, .events = (p->in_len ? POLLOUT : 0) |
			  (!p->local_eof && p->out_len < sizeof(p->out) ? POLLIN : 0) },
			{ .fd = p->net, .events = (p->out_try ? POLLOUT : 0) |
			  (!p->net_eof && p->in_len < sizeof(p->in) ? POLLIN : 0) },
		};
		if (moved)
			continue;
		if (poll(pfd, 2, -1) < 0 && errno != EINTR)
			break;
		/* The caller closed its end for good (a half close leaves reading on). */
		if (pfd[0].revents & (POLLHUP | POLLERR | POLLNVAL))
			break;
		if (pfd[1].revents & POLLNVAL)
			break;
	}
	curl_easy_cleanup(p->c);
	close(p->local);
	pthread_mutex_lock(&p->group->mu);
	if (p->node->orphan) {
		free(p->node);
		group_unref_unlock(p->group);
	} else {
		p->node->done = 1;
		pthread_cond_broadcast(&p->group->cv);
		pthread_mutex_unlock(&p->group->mu);
	}
	free(p);
	return NULL;
}

int docker_tls_dial(struct docker_tls_group *g, const struct docker_endpoint *ep,
		    struct strbuf *err)
{
	char errbuf[CURL_ERROR_SIZE] = "", *url;
	struct pump *p = NULL;
	pthread_attr_t attr;
	struct pump_node *node;
	curl_socket_t net = CURL_SOCKET_BAD;
	CURLcode rc;
	CURL *c = curl_easy_init();
	int sv[2] = { -1, -1 };

	if (!c) {
		strbuf_addf(err, "cannot initialise libcurl for %s", ep->host);
		return -1;
	}
	url = xasprintf(strchr(ep->name, ':') ? "https://[%s]:%s/" : "https://%s:%s/", ep->name,
			ep->port);
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_CONNECT_ONLY, 1L);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_ERRORBUFFER, errbuf);
	curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, DOCKER_CONNECT_SECONDS);
	curl_easy_setopt(c, CURLOPT_OPENSOCKETFUNCTION, docker_tls_cloexec_socket);
	docker_tls_options(c, ep);
	free(url);
	rc = curl_easy_perform(c);
	if (rc != CURLE_OK) {
		docker_tls_explain(ep, rc, errbuf, err);
		goto fail;
	}
	curl_easy_setopt(c, CURLOPT_ERRORBUFFER, NULL);
	if (curl_easy_getinfo(c, CURLINFO_ACTIVESOCKET, &net) != CURLE_OK ||
	    net == CURL_SOCKET_BAD) {
		strbuf_addf(err, "TLS connection to %s: no socket", ep->host);
		goto fail;
	}
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0) {
		strbuf_addf(err, "socketpair: %s", strerror(errno));
		goto fail;
	}
	p = xcalloc(1, sizeof(*p));
	p->group = g;
	p->c = c;
	p->local = sv[1];
	p->net = net;
	node = xcalloc(1, sizeof(*node));
	p->node = node;
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, 256u << 10);
	pthread_mutex_lock(&g->mu);
	join_done(g);
	rc = pthread_create(&node->tid, &attr, pump_run, p) ? CURLE_FAILED_INIT : CURLE_OK;
	if (rc == CURLE_OK) {
		node->next = g->nodes;
		g->nodes = node;
	} else {
		free(node);
	}
	pthread_mutex_unlock(&g->mu);
	pthread_attr_destroy(&attr);
	if (rc != CURLE_OK) {
		strbuf_addf(err, "cannot start the TLS pump for %s", ep->host);
		goto fail;
	}
	return sv[0];
fail:
	free(p);
	if (sv[0] >= 0) {
		close(sv[0]);
		close(sv[1]);
	}
	curl_easy_cleanup(c);
	errno = ECONNREFUSED;
	return -1;
}
