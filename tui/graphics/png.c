/* A PNG writer: filtered RGB rows, fixed-Huffman deflate with LZ77, zlib and PNG framing. */
#include "png.h"

#include <stdlib.h>
#include <string.h>

#define WINDOW 32768
#define HASH_BITS 15
#define MAX_PROBES 8
#define MIN_MATCH 3
#define MAX_MATCH 258

/* Bits go out least significant first, as deflate packs them. */
struct bits {
	struct strbuf *out;
	unsigned long acc;
	int n;
};

/* Append the low `n` bits of `v`. */
static void put_bits(struct bits *b, unsigned long v, int n)
{
	b->acc |= v << b->n;
	b->n += n;
	while (b->n >= 8) {
		strbuf_addch(b->out, (int)(b->acc & 255));
		b->acc >>= 8;
		b->n -= 8;
	}
}

/* Append a Huffman code of `n` bits, most significant bit first. */
static void put_code(struct bits *b, unsigned code, int n)
{
	unsigned rev = 0;

	for (int i = 0; i < n; i++)
		rev |= (code >> i & 1) << (n - 1 - i);
	put_bits(b, rev, n);
}

/* A literal or length symbol (0..287) in the fixed code. */
static void put_symbol(struct bits *b, int sym)
{
	if (sym < 144)
		put_code(b, 0x30 + sym, 8);
	else if (sym < 256)
		put_code(b, 0x190 + sym - 144, 9);
	else if (sym < 280)
		put_code(b, sym - 256, 7);
	else
		put_code(b, 0xc0 + sym - 280, 8);
}

static const unsigned short len_base[29] = {
	3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 15, 17, 19, 23, 27, 31,
	35, 43, 51, 59, 67, 83, 99, 115, 131, 163, 195, 227, 258,
};
static const unsigned char len_extra[29] = {
	0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0,
};
static const unsigned short dist_base[30] = {
	1, 2, 3, 4, 5, 7, 9, 13, 17, 25, 33, 49, 65, 97, 129, 193, 257, 385, 513, 769,
	1025, 1537, 2049, 3073, 4097, 6145, 8193, 12289, 16385, 24577,
};
static const unsigned char dist_extra[30] = {
	0, 0, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7, 8, 8, 9, 9, 10, 10, 11, 11,
	12, 12, 13, 13,
};

/* A match of `len` bytes `dist` back. */
static void put_match(struct bits *b, int len, int dist)
{
	int i = 28, j = 29;

	while (len_base[i] > len)
		i--;
	put_symbol(b, 257 + i);
	put_bits(b, (unsigned long)(len - len_base[i]), len_extra[i]);
	while (dist_base[j] > dist)
		j--;
	put_code(b, (unsigned)j, 5);
	put_bits(b, (unsigned long)(dist - dist_base[j]), dist_extra[j]);
}

/* Hash of the three bytes at p. */
static unsigned hash3(const unsigned char *p)
{
	return ((unsigned)p[0] << 16 | (unsigned)p[1] << 8 | p[2]) * 2654435761u >> (32 - HASH_BITS);
}

/* Deflate `n` bytes as one final fixed-Huffman block. */
static void deflate_fixed(const unsigned char *d, size_t n, struct strbuf *out)
{
	int *head = xmalloc(sizeof(int) << HASH_BITS), *prev = xmalloc(sizeof(int) * WINDOW);
	struct bits b = { out, 0, 0 };
	size_t i = 0;

	memset(head, -1, sizeof(int) << HASH_BITS);
	put_bits(&b, 1, 1);		/* BFINAL */
	put_bits(&b, 1, 2);		/* BTYPE 01: fixed codes */
	while (i < n) {
		int best_len = 0, best_dist = 0;

		if (i + MIN_MATCH <= n) {
			unsigned h = hash3(d + i);
			int cand = head[h], probes = MAX_PROBES;
			size_t max = n - i < MAX_MATCH ? n - i : MAX_MATCH;

			while (cand >= 0 && i - (size_t)cand <= WINDOW && probes--) {
				size_t l = 0;

				while (l < max && d[cand + l] == d[i + l])
					l++;
				if ((int)l > best_len) {
					best_len = (int)l;
					best_dist = (int)(i - (size_t)cand);
					if (l == max)
						break;
				}
				cand = prev[cand % WINDOW];
			}
		}
		if (best_len >= MIN_MATCH) {
			put_match(&b, best_len, best_dist);
		} else {
			best_len = 1;
			put_symbol(&b, d[i]);
		}
		/* Index every position the step covers. */
		for (int k = 0; k < best_len; k++, i++) {
			if (i + MIN_MATCH <= n) {
				unsigned h = hash3(d + i);
				prev[i % WINDOW] = head[h];
				head[h] = (int)i;
			}
		}
	}
	put_symbol(&b, 256);		/* end of block */
	if (b.n)
		put_bits(&b, 0, 8 - b.n);
	free(head);
	free(prev);
}

/* CRC-32 (PNG's, ISO 3309) of `n` bytes, continuing from `crc`. */
static unsigned long crc32_update(unsigned long crc, const unsigned char *p, size_t n)
{
	static unsigned long table[256];
	static int ready;

	if (!ready) {
		for (unsigned long k = 0; k < 256; k++) {
			unsigned long c = k;
			for (int j = 0; j < 8; j++)
				c = c & 1 ? 0xedb88320ul ^ (c >> 1) : c >> 1;
			table[k] = c;
		}
		ready = 1;
	}
	crc ^= 0xfffffffful;
	while (n--)
		crc = table[(crc ^ *p++) & 255] ^ (crc >> 8);
	return crc ^ 0xfffffffful;
}

/* Append a 32-bit big-endian number. */
static void put_be32(struct strbuf *out, unsigned long v)
{
	unsigned char b[4] = { (unsigned char)(v >> 24), (unsigned char)(v >> 16),
			       (unsigned char)(v >> 8), (unsigned char)v };
	strbuf_add(out, b, 4);
}

/* Append one chunk: length, type, data, CRC. */
static void put_chunk(struct strbuf *out, const char *type, const void *data, size_t n)
{
	unsigned long crc = crc32_update(0, (const unsigned char *)type, 4);

	put_be32(out, n);
	strbuf_add(out, type, 4);
	strbuf_add(out, data, n);
	put_be32(out, crc32_update(crc, data, n));
}

/* Filter each row (type byte, then the bytes), choosing the filter with the smallest sum. */
static unsigned char *filter_rows(const unsigned char *rgb, int w, int h, size_t *len)
{
	size_t stride = (size_t)w * 3;
	unsigned char *f = xmalloc((stride + 1) * h), *cand = xmalloc(stride * 3);

	for (int y = 0; y < h; y++) {
		const unsigned char *row = rgb + y * stride, *up = y ? row - stride : NULL;
		unsigned long sum[3] = { 0 };
		int best = 0;

		for (size_t x = 0; x < stride; x++) {
			unsigned char none = row[x];
			unsigned char sub = (unsigned char)(row[x] - (x >= 3 ? row[x - 3] : 0));
			unsigned char upf = (unsigned char)(row[x] - (up ? up[x] : 0));

			cand[x] = none, cand[stride + x] = sub, cand[2 * stride + x] = upf;
			sum[0] += none < 128 ? none : 256 - none;
			sum[1] += sub < 128 ? sub : 256 - sub;
			sum[2] += upf < 128 ? upf : 256 - upf;
		}
		for (int k = 1; k < 3; k++)
			if (sum[k] < sum[best])
				best = k;
		f[y * (stride + 1)] = (unsigned char)best;	/* 0 none, 1 Sub, 2 Up */
		memcpy(f + y * (stride + 1) + 1, cand + best * stride, stride);
	}
	free(cand);
	*len = (stride + 1) * h;
	return f;
}

void png_encode_rgb(const unsigned char *rgb, int w, int h, struct strbuf *out)
{
	static const unsigned char sig[8] = { 0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n' };
	unsigned char ihdr[13];
	struct strbuf z = STRBUF_INIT;
	size_t n;
	unsigned char *raw = filter_rows(rgb, w, h, &n);
	unsigned long a = 1, b = 0;

	strbuf_add(out, sig, 8);
	for (int i = 0; i < 4; i++) {
		ihdr[i] = (unsigned char)((unsigned)w >> (24 - 8 * i));
		ihdr[4 + i] = (unsigned char)((unsigned)h >> (24 - 8 * i));
	}
	ihdr[8] = 8;			/* bit depth */
	ihdr[9] = 2;			/* truecolour */
	ihdr[10] = ihdr[11] = ihdr[12] = 0;
	put_chunk(out, "IHDR", ihdr, sizeof(ihdr));
	strbuf_addch(&z, 0x78);		/* zlib: deflate, 32K window */
	strbuf_addch(&z, 0x01);
	deflate_fixed(raw, n, &z);
	for (size_t i = 0; i < n; i++) {	/* Adler-32 */
		a = (a + raw[i]) % 65521;
		b = (b + a) % 65521;
	}
	put_be32(&z, b << 16 | a);
	put_chunk(out, "IDAT", z.buf, z.len);
	put_chunk(out, "IEND", "", 0);
	strbuf_release(&z);
	free(raw);
}
