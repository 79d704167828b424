/*
 * curl_lazy: libcurl loaded on its first use, not at process start.
 *
 * libcurl pulls some thirty shared libraries in (TLS, Kerberos, LDAP, ...), and loading and
 * relocating them was nine tenths of the start of every cellbox process, `--version` and a
 * local one-shot run included, which never talk to a container engine. So nothing links
 * libcurl: curl_lazy.c defines the few curl_* functions the docker client calls, and the first
 * call dlopen()s libcurl (its soname, CURL_LAZY_SONAME) and forwards each to the real one.
 * When libcurl cannot be loaded, curl_easy_init() returns NULL (the docker client says it
 * cannot initialise libcurl) and curl_lazy_error() says why.
 */
#ifndef CELLBOX_CURL_LAZY_H
#define CELLBOX_CURL_LAZY_H

#define CURL_LAZY_SONAME "libcurl.so.4"

/* Whether libcurl is loaded in this process (tests: a one-shot must not load it). */
int curl_lazy_loaded(void);

/* Why libcurl could not be loaded ("" when it was, or was never asked for). */
const char *curl_lazy_error(void);

#endif
