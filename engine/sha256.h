#ifndef CELLBOX_SHA256_H
#define CELLBOX_SHA256_H
/*
 * SHA-256 (FIPS 180-4), for content keys: the libraries' cache is keyed by the digests of
 * the wheels it installs. Its HMAC (RFC 2104) signs the Jupyter wire protocol's messages
 * (`cellbox kernel`); the hash itself makes no constant-time promises, but a signature is
 * compared with sha256_equal(), which takes the same time wherever the bytes differ.
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
/* The digest as 32 bytes (the context is spent, as after sha256_hex). */
void sha256_final(struct sha256 *c, unsigned char out[32]);

/*
 * HMAC-SHA256 over several pieces (the wire protocol signs four frames as one text):
 *
 *	struct sha256_hmac h;
 *	sha256_hmac_init(&h, key, keylen);
 *	sha256_hmac_update(&h, part, len);	// as often as needed
 *	sha256_hmac_hex(&h, hex);
 */
struct sha256_hmac {
	struct sha256 inner, outer;
};

void sha256_hmac_init(struct sha256_hmac *h, const void *key, size_t len);
void sha256_hmac_update(struct sha256_hmac *h, const void *data, size_t len);
void sha256_hmac_final(struct sha256_hmac *h, unsigned char out[32]);
/* The MAC as 64 lowercase hex digits and a NUL. */
void sha256_hmac_hex(struct sha256_hmac *h, char out[65]);
/* Whether `a` and `b` (`len` bytes each) are equal, in time that does not depend on where
   they differ. */
int sha256_equal(const void *a, const void *b, size_t len);

#endif
