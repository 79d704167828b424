/*
 * zmq_lazy: libzmq loaded on its first use, as libcurl is (engine/curl_lazy.h).
 *
 * libzmq pulls in libsodium, OpenPGM, NORM and Kerberos (GSSAPI): linked, they were loaded by
 * every cellbox process, `--version` and a local one-shot included, though only `cellbox
 * kernel` speaks ZMQ. So nothing links libzmq: zmq_lazy.c defines the zmq_* functions the
 * kernel calls, and the first zmq_ctx_new() dlopen()s libzmq (ZMQ_LAZY_SONAME) and forwards
 * each to the real one. When it cannot be loaded, zmq_ctx_new() returns NULL with errno
 * ELIBACC, and zmq_strerror() says why.
 */
#ifndef CELLBOX_ZMQ_LAZY_H
#define CELLBOX_ZMQ_LAZY_H

#define ZMQ_LAZY_SONAME "libzmq.so.5"

/* Whether libzmq is loaded in this process (tests: a one-shot must not load it). */
int zmq_lazy_loaded(void);

#endif
