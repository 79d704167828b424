/* SHA-256 (FIPS 180-4): sha256.h. */
#include "sha256.h"

#include <stdio.h>
#include <string.h>

static const uint32_t K[64] = {
	0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4,
	0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe,
	0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f,
	0x4a7484aa, 0x5cb0a9dc, 0x76f988da, 0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7,
	0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc,
	0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b,
	0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070, 0x19a4c116,
	0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
	0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7,
	0xc67178f2,
};

static uint32_t ror(uint32_t x, int n)
{
	return x >> n | x << (32 - n);
}

static void block(struct sha256 *c, const unsigned char *p)
{
	uint32_t w[64], s[8];

	for (int i = 0; i < 16; i++)
		w[i] = (uint32_t)p[4 * i] << 24 | (uint32_t)p[4 * i + 1] << 16 |
		       (uint32_t)p[4 * i + 2] << 8 | p[4 * i + 3];
	for (int i = 16; i < 64; i++) {
		uint32_t s0 = ror(w[i - 15], 7) ^ ror(w[i - 15], 18) ^ w[i - 15] >> 3;
		uint32_t s1 = ror(w[i - 2], 17) ^ ror(w[i - 2], 19) ^ w[i - 2] >> 10;
		w[i] = w[i - 16] + s0 + w[i - 7] + s1;
	}
	memcpy(s, c->h, sizeof(s));
	for (int i = 0; i < 64; i++) {
		uint32_t t1 = s[7] + (ror(s[4], 6) ^ ror(s[4], 11) ^ ror(s[4], 25)) +
			      ((s[4] & s[5]) ^ (~s[4] & s[6])) + K[i] + w[i];
		uint32_t t2 = (ror(s[0], 2) ^ ror(s[0], 13) ^ ror(s[0], 22)) +
			      ((s[0] & s[1]) ^ (s[0] & s[2]) ^ (s[1] & s[2]));
		memmove(s + 1, s, 7 * sizeof(*s));
		s[4] += t1;
		s[0] = t1 + t2;
	}
	for (int i = 0; i < 8; i++)
		c->h[i] += s[i];
}

void sha256_init(struct sha256 *c)
{
	static const uint32_t h0[8] = { 0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
					0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19 };

	memcpy(c->h, h0, sizeof(h0));
	c->len = 0;
	c->n = 0;
}

void sha256_update(struct sha256 *c, const void *data, size_t len)
{
	const unsigned char *p = data;

	c->len += len;
	while (len) {
		size_t k = 64 - c->n < len ? 64 - c->n : len;

		memcpy(c->buf + c->n, p, k);
		c->n += k;
		p += k;
		len -= k;
		if (c->n == 64) {
			block(c, c->buf);
			c->n = 0;
		}
	}
}

/* Pad the message out: h[] is the digest after this. */
static void finish(struct sha256 *c)
{
	uint64_t bits = c->len * 8;
	unsigned char pad[72] = { 0x80 };
	size_t padlen = (c->n < 56 ? 56 : 120) - c->n;

	for (int i = 0; i < 8; i++)
		pad[padlen + i] = (unsigned char)(bits >> (56 - 8 * i));
	sha256_update(c, pad, padlen + 8);
}

void sha256_hex(struct sha256 *c, char out[65])
{
	finish(c);
	for (int i = 0; i < 8; i++)
		snprintf(out + 8 * i, 9, "%08x", c->h[i]);
}

void sha256_final(struct sha256 *c, unsigned char out[32])
{
	finish(c);
	for (int i = 0; i < 8; i++)
		for (int k = 0; k < 4; k++)
			out[4 * i + k] = (unsigned char)(c->h[i] >> (24 - 8 * k));
}

/* ---- HMAC (RFC 2104) --------------------------------------------------------------------- */

void sha256_hmac_init(struct sha256_hmac *h, const void *key, size_t len)
{
	unsigned char k[64] = { 0 }, pad[64];

	if (len > sizeof(k)) {		/* a long key is hashed first */
		struct sha256 c;

		sha256_init(&c);
		sha256_update(&c, key, len);
		sha256_final(&c, k);
	} else if (len) {
		memcpy(k, key, len);
	}
	for (size_t i = 0; i < sizeof(pad); i++)
		pad[i] = k[i] ^ 0x36;
	sha256_init(&h->inner);
	sha256_update(&h->inner, pad, sizeof(pad));
	for (size_t i = 0; i < sizeof(pad); i++)
		pad[i] = k[i] ^ 0x5c;
	sha256_init(&h->outer);
	sha256_update(&h->outer, pad, sizeof(pad));
}

void sha256_hmac_update(struct sha256_hmac *h, const void *data, size_t len)
{
	sha256_update(&h->inner, data, len);
}

void sha256_hmac_final(struct sha256_hmac *h, unsigned char out[32])
{
	unsigned char inner[32];

	sha256_final(&h->inner, inner);
	sha256_update(&h->outer, inner, sizeof(inner));
	sha256_final(&h->outer, out);
}

void sha256_hmac_hex(struct sha256_hmac *h, char out[65])
{
	unsigned char mac[32];

	sha256_hmac_final(h, mac);
	for (int i = 0; i < 32; i++)
		snprintf(out + 2 * i, 3, "%02x", mac[i]);
}

int sha256_equal(const void *a, const void *b, size_t len)
{
	const volatile unsigned char *x = a, *y = b;
	unsigned char diff = 0;

	for (size_t i = 0; i < len; i++)
		diff |= x[i] ^ y[i];
	return diff == 0;
}
