#ifndef CELLBOX_SHA256_H
#define CELLBOX_SHA256_H
/*
 * SHA-256 (FIPS 180-4), for content keys: the libraries' cache is keyed by the digests of
 * the wheels it installs. Not for secrets (no constant-time promises).
 */
#include <stddef.h>
#include <stdint.h>

struct sha256 {
	uint32_t h[8];
	uint64_t len;			/* bytes hashed so far */
	unsigned char buf[64];
	size_t n;			/* bytes waiting in buf */
};

void sha256_init(struct sha256 *c);
void sha256_update(struct sha256 *c, const void *data, size_t len);
/* The digest as 64 lowercase hex digits and a NUL. */
void sha256_hex(struct sha256 *c, char out[65]);

#endif
