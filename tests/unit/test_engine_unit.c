/*
 * Unit tests of the engine's pure parts: buffers, UTF-8, sizes, numbers, sanitiser, config,
 * a library loaded on first use.
 * The event reader, the channel and the wall's file checks are in test_wall_unit.c.
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "lazylib.h"
#include "numconv.h"
#include "sanitize.h"
#include "sha256.h"
#include "util.h"
#include "../tap.h"

static void test_strbuf(void)
{
	struct strbuf sb = STRBUF_INIT;

	strbuf_init(&sb, 0);
	CHECK(sb.len == 0 && sb.buf[0] == '\0');
	strbuf_addf(&sb, "%d-%s", 42, "x");
	CHECK_STR(sb.buf, "42-x");
	for (int i = 0; i < 1000; i++)
		strbuf_addstr(&sb, "abcdefghij");
	CHECK(sb.len == 4 + 10000);
	strbuf_remove_front(&sb, 4);
	CHECK(sb.len == 10000 && sb.buf[0] == 'a' && sb.buf[10000] == '\0');
	strbuf_reset(&sb);
	CHECK(sb.len == 0);
	strbuf_release(&sb);
}

/* An empty buffer is an empty string, and a buffer's own cap is an error, not an abort. */
static void test_strbuf_cap(void)
{
	struct strbuf sb = STRBUF_INIT, other = STRBUF_INIT;
	char big[200];

	CHECK(sb.buf != NULL && sb.buf[0] == '\0' && sb.len == 0);
	CHECK_STR(sb.buf, "");				/* usable as it is: printf, strstr */
	strbuf_reset(&sb);
	CHECK(sb.buf == other.buf);			/* nothing was allocated */
	strbuf_set_max(&sb, 100);
	memset(big, 'x', sizeof(big));
	CHECK(strbuf_add(&sb, big, 50) == 0 && sb.len == 50);
	errno = 0;
	CHECK(strbuf_add(&sb, big, 60) < 0 && errno == EFBIG);
	CHECK(sb.len == 50 && sb.buf[50] == '\0');	/* left as it was */
	CHECK(strbuf_add(&sb, big, 49) == 0 && sb.len == 99);
	CHECK(strbuf_addch(&sb, 'y') < 0 && sb.len == 99);
	strbuf_reset(&sb);
	CHECK(strbuf_addf(&sb, "%s", "short") == 0);
	CHECK(strbuf_addf(&sb, "%.150s", big) < 0);
	CHECK_STR(sb.buf, "short");			/* nothing of the failed format shows */
	strbuf_release(&sb);
	CHECK(sb.max == 100);				/* the cap stays with the buffer */
	CHECK(strbuf_read_file(&sb, "/proc/self/exe", 1 << 30) < 0 && errno == EFBIG);
	strbuf_release(&sb);
	strbuf_release(&other);
}

static void test_utf8(void)
{
	size_t bad = 99;

	CHECK(utf8_valid("plain", 5, NULL));
	CHECK(utf8_valid("h\xc3\xa9llo \xe2\x82\xac \xf0\x9f\x98\x80", 15, NULL));
	CHECK(!utf8_valid("ab\xff", 3, &bad) && bad == 2);
	CHECK(!utf8_valid("\xc3", 1, &bad) && bad == 0);		/* truncated */
	CHECK(!utf8_valid("\xc0\xaf", 2, &bad));			/* overlong */
	CHECK(!utf8_valid("\xed\xa0\x80", 3, &bad));			/* surrogate */
	CHECK(!utf8_valid("\xf4\x90\x80\x80", 4, &bad));		/* > U+10FFFF */
}

static void test_parse_size(void)
{
	unsigned long long v = 0;
	double d = 0;

	CHECK(parse_size("1048576", &v) == 0 && v == 1048576);
	CHECK(parse_size("512m", &v) == 0 && v == 512ULL << 20);
	CHECK(parse_size("1g", &v) == 0 && v == 1ULL << 30);
	CHECK(parse_size("1GB", &v) == 0 && v == 1ULL << 30);
	CHECK(parse_size("64 MiB", &v) == 0 && v == 64ULL << 20);
	CHECK(parse_size("lots", &v) < 0);
	CHECK(parse_size("12q", &v) < 0);
	CHECK(parse_size("-1", &v) < 0);
	CHECK(parse_size("5e81", &v) < 0);		/* past 2^64 (found by fuzz_kv) */
	CHECK(parse_size("16777216t", &v) < 0);	/* 2^64 */
	CHECK(parse_size("16777215t", &v) == 0 && v == 16777215ULL << 40);
	CHECK(parse_seconds("0.5", &d) == 0 && d == 0.5);
	CHECK(parse_seconds("x", &d) < 0);
	CHECK(parse_seconds("-2", &d) < 0);
}

/* Doubles to integers: what cannot be one is refused or clamped, never cast (UBSan judges). */
static void test_numconv(void)
{
	static const struct { const char *json; long long lo, hi; int ok; long long want; } cases[] = {
		{ "7", 0, 10, 1, 7 },
		{ "-3", -5, 5, 1, -3 },
		{ "11", 0, 10, 0, 0 },
		{ "1.5", 0, 10, 0, 0 },
		{ "8e123", LLONG_MIN, LLONG_MAX, 0, 0 },	/* a fuzz find (an MCP id) */
		{ "-1e19", LLONG_MIN, LLONG_MAX, 0, 0 },
		{ "1e999", LLONG_MIN, LLONG_MAX, 0, 0 },	/* cJSON: an infinity */
		{ "9007199254740992", 0, LLONG_MAX, 1, 9007199254740992LL },
		{ "\"7\"", 0, 10, 0, 0 },
	};

	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		cJSON *v = cJSON_Parse(cases[i].json);
		long long n = -42;

		CHECK(v != NULL);
		CHECK(json_integer(v, cases[i].lo, cases[i].hi, &n) == cases[i].ok);
		CHECK(n == (cases[i].ok ? cases[i].want : -42));
		cJSON_Delete(v);
	}
	CHECK(wait_ms(0) == 0 && wait_ms(-1) == 0 && wait_ms(0.0 / 0.0) == 0);
	CHECK(wait_ms(0.0001) == 1 && wait_ms(0.25) == 251);
	CHECK(wait_ms(1e300) == 86400 * 1000);
	CHECK(seconds_clamp(1e300) == SECONDS_FAR && seconds_clamp(-1) == 0);
	CHECK(seconds_clamp(0.0 / 0.0) == 0 && seconds_clamp(1714564800.5) == 1714564800.5);
}

static void test_base64(void)
{
	struct strbuf sb = STRBUF_INIT;

	base64_encode("Man", 3, &sb);
	CHECK_STR(sb.buf, "TWFu");
	strbuf_reset(&sb);
	base64_encode("Ma", 2, &sb);
	CHECK_STR(sb.buf, "TWE=");
	strbuf_reset(&sb);
	base64_encode("M", 1, &sb);
	CHECK_STR(sb.buf, "TQ==");
	strbuf_release(&sb);
}

/* Sanitise `in` in one go. */
static char *clean(const char *in, unsigned flags)
{
	struct strbuf out = STRBUF_INIT;

	sanitize_str(in, strlen(in), flags, &out);
	return strbuf_detach(&out, NULL);
}

static void test_sanitize(void)
{
	char *s;

	s = clean("plain text\nwith\ttab\r\n", 0);
	CHECK_STR(s, "plain text\nwith\ttab\r\n");
	free(s);
	s = clean("\x1b[31mred\x1b[0m", SAN_KEEP_SGR);
	CHECK_STR(s, "\x1b[31mred\x1b[0m");
	free(s);
	s = clean("\x1b[31mred\x1b[0m", 0);
	CHECK_STR(s, "red");
	free(s);
	s = clean("a\x1b]0;evil title\x07" "b", SAN_KEEP_SGR);	/* OSC 0 with BEL */
	CHECK_STR(s, "ab");
	free(s);
	s = clean("a\x1b]52;c;ZXZpbA==\x1b\\b", SAN_KEEP_SGR);	/* OSC 52 with ST */
	CHECK_STR(s, "ab");
	free(s);
	s = clean("x\x1b[2J\x1b[H\x1b[10;10Hy", SAN_KEEP_SGR);	/* clear + cursor moves */
	CHECK_STR(s, "xy");
	free(s);
	s = clean("x\x1bPqsixel\x1b\\y\x1b_apc\x1b\\z", SAN_KEEP_SGR);	/* DCS, APC */
	CHECK_STR(s, "xyz");
	free(s);
	s = clean("bell\x07 bs\x08 del\x7f", 0);
	CHECK_STR(s, "bell bs del");
	free(s);
	s = clean("c1 \xc2\x9b" "31m csi, \xc3\xa9 kept", 0);	/* 8-bit CSI in UTF-8 */
	CHECK_STR(s, "c1 31m csi, \xc3\xa9 kept");
	free(s);
	s = clean("\x1b[?1049h\x1b[38;5;196mx", SAN_KEEP_SGR);	/* private mode, 256 colours */
	CHECK_STR(s, "\x1b[38;5;196mx");
	free(s);
	s = clean("\x1b" "7saved\x1b" "8", 0);				/* two-byte escapes */
	CHECK_STR(s, "saved");
	free(s);

	/* A sequence split over two chunks is still recognised. */
	{
		struct sanitizer san;
		struct strbuf out = STRBUF_INIT;

		sanitize_init(&san, SAN_KEEP_SGR);
		sanitize_feed(&san, "one\x1b]0;ti", 9, &out);
		sanitize_feed(&san, "tle\x07two\x1b[3", 10, &out);
		sanitize_feed(&san, "2mthree\xc2", 8, &out);
		sanitize_feed(&san, "\xa9", 1, &out);
		CHECK_STR(out.buf, "onetwo\x1b[32mthree\xc2\xa9");
		strbuf_release(&out);
		sanitize_release(&san);
	}

	/* Raw C1 bytes and any invalid UTF-8 become U+FFFD; the output is always UTF-8. */
	s = clean("a\x9b" "6n b\x9d" "0;t\x9c c", 0);			/* 8-bit CSI, OSC, ST */
	CHECK_STR(s, "a\xef\xbf\xbd" "6n b\xef\xbf\xbd" "0;t\xef\xbf\xbd c");
	free(s);
	s = clean("\xc2\x9d" "0;t\xc2\x9c|\xc2\x85|\xc2\xa0", 0);	/* OSC, ST, NEL as UTF-8 */
	CHECK_STR(s, "0;t||\xc2\xa0");
	free(s);
	s = clean("\xc0\xaf|\xe0\x80\x80|\xed\xa0\x80|\xf4\x90\x80\x80|\xff|\xe2\x82", 0);
	CHECK_STR(s, "\xef\xbf\xbd\xef\xbf\xbd|\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd|"
		  "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd|\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd"
		  "\xef\xbf\xbd|\xef\xbf\xbd|\xef\xbf\xbd");		/* overlong, surrogate, > max */
	free(s);
	s = clean("\xe2\x82\xac \xf0\x9f\x99\x82 \xe2\x80\xae", 0);	/* text stays text */
	CHECK_STR(s, "\xe2\x82\xac \xf0\x9f\x99\x82 \xe2\x80\xae");
	free(s);
	/* A stray ESC or a broken sequence does not eat the character after it. */
	s = clean("\x1b\xc3\xa9|\x1b[3\xc3\xa9|\x1b(\xc3\xa9|\x1b[1\n2m", 0);
	CHECK_STR(s, "\xc3\xa9|\xc3\xa9|\xc3\xa9|\n2m");
	free(s);
	s = clean("over\rprint\r\n", SAN_NO_CR);
	CHECK_STR(s, "overprint\n");
	free(s);
	CHECK(sanitize_is_clean("print('h\xc3\xa9')\n\tx", 15, SAN_NO_CR));
	CHECK(!sanitize_is_clean("a\xc2\x9b" "b", 4, 0));
	CHECK(!sanitize_is_clean("a\rb", 3, SAN_NO_CR));

	/* Split anywhere, a character or a C1 control is still seen; a cut one ends as U+FFFD. */
	{
		const char *in = "\xc2\x9b" "1m\xe2\x82\xac\xf0\x9f\x99\x82\xc2\x9d" "t";
		size_t n = strlen(in);

		for (size_t cut = 0; cut <= n; cut++) {
			struct sanitizer san;
			struct strbuf out = STRBUF_INIT;

			sanitize_init(&san, 0);
			sanitize_feed(&san, in, cut, &out);
			sanitize_feed(&san, in + cut, n - cut, &out);
			sanitize_finish(&san, &out);
			CHECK_STR(out.buf, "1m\xe2\x82\xac\xf0\x9f\x99\x82t");
			strbuf_reset(&out);
			sanitize_feed(&san, "x\xf0\x9f\x99", 4, &out);
			sanitize_finish(&san, &out);
			CHECK_STR(out.buf, "x\xef\xbf\xbd");
			strbuf_release(&out);
			sanitize_release(&san);
		}
	}
}

static void test_config(void)
{
	struct cellbox_config cfg;
	struct strbuf err = STRBUF_INIT;

	config_defaults(&cfg);
	CHECK_STR(cfg.session.backend, "local");
	CHECK(cfg.timeout == 0 && cfg.session.startup_timeout == 30);
	CHECK(config_parse(&cfg, "# comment\nbackend = local\ntimeout=2.5 # trailing\n"
			   "memory = 256m\nstartup_timeout = 7\n\n", "cfg", &err) == 0);
	CHECK(cfg.timeout == 2.5 && cfg.session.memory == 256ULL << 20 &&
	      cfg.session.startup_timeout == 7);
	CHECK(config_parse(&cfg, "timeout = 1\nnonsense\n", "cfg", &err) < 0);
	CHECK_STR(err.buf, "cfg:2: expected 'key = value'");
	strbuf_reset(&err);
	CHECK(config_parse(&cfg, "colour = red\n", "cfg", &err) < 0);
	CHECK_STR(err.buf, "cfg:1: unknown setting 'colour'");
	strbuf_reset(&err);
	CHECK(config_set(&cfg, "memory", "much", &err) < 0);
	CHECK(strstr(err.buf, "not a size") != NULL);
	strbuf_release(&err);
	config_release(&cfg);
}

/* The table is the one source: defaults, types, flags, environment and help come from it. */
static void test_config_table(void)
{
	struct cellbox_config cfg;
	struct strbuf err = STRBUF_INIT, out = STRBUF_INIT;
	const struct config_key *keys;
	size_t n;

	keys = config_keys(&n);
	CHECK(n >= 25);
	for (size_t i = 0; i < n; i++) {
		CHECK(keys[i].help && *keys[i].help);
		CHECK(config_find(keys[i].name) == &keys[i]);
		for (size_t k = i + 1; k < n; k++) {
			CHECK(strcmp(keys[i].name, keys[k].name));
			CHECK(!keys[i].env || !keys[k].env || strcmp(keys[i].env, keys[k].env));
		}
	}
	CHECK(config_find("pool_timeout") == config_find("pool-timeout"));
	config_defaults(&cfg);
	/* Defaults are the rows' text, parsed as a file would be. */
	CHECK_STR(cfg.pool_name, "default");
	CHECK(cfg.session.pool_strategy == POOL_WAIT && cfg.session.pool_timeout == 30);
	CHECK(cfg.session.interrupt_grace == 2 && cfg.history_size == 1000);
	CHECK(cfg.session.sandbox.writable_root == 0);		/* read-only = true */
	CHECK_STR(cfg.theme, "auto");			/* light or dark by the background */
	CHECK_STR(cfg.blocks, "auto");
	CHECK_STR(cfg.graphics, "auto");
	/* An enum, an inverted boolean and a list. */
	CHECK(config_set(&cfg, "pool-strategy", "temporary", &err) == 0);
	CHECK(cfg.session.pool_strategy == POOL_TEMPORARY);
	CHECK(config_set(&cfg, "pool-strategy", "sometimes", &err) < 0);
	CHECK_STR(err.buf, "pool-strategy: 'sometimes' is not one of wait|fail-fast|temporary");
	strbuf_reset(&err);
	CHECK(config_set(&cfg, "read-only", "no", &err) == 0 && cfg.session.sandbox.writable_root);
	CHECK(config_set(&cfg, "copy-in", "a.txt", &err) == 0);
	CHECK(config_set(&cfg, "copy-in", "b.txt:c.txt", &err) == 0);
	CHECK(cfg.copy_in.n == 2);
	CHECK_STR(cfg.copy_in.items[1], "b.txt:c.txt");
	CHECK(config_set(&cfg, "image", "img:1", &err) == 0);
	CHECK_STR(cfg.session.sandbox.image, "img:1");
	config_describe(&cfg, &out);
	CHECK(strstr(out.buf, "read-only        false") != NULL);
	CHECK(strstr(out.buf, "pool-strategy    temporary") != NULL);
	CHECK(strstr(out.buf, "copy-in          a.txt b.txt:c.txt") != NULL);
	CHECK(strstr(out.buf, "CELLBOX_POOL_TIMEOUT") != NULL);
	config_release(&cfg);	/* frees every string and list the rows own (ASan watches) */
	CHECK(cfg.copy_in.n == 0 && !cfg.session.sandbox.image);
	strbuf_release(&err);
	strbuf_release(&out);
}

/* The environment beats the file, and a CELLBOX_* name beats llm-sandbox's. */
static void test_config_env(void)
{
	struct cellbox_config cfg;
	struct strbuf err = STRBUF_INIT;
	char path[] = "/tmp/cellbox-config-XXXXXX";
	int fd = mkstemp(path);

	CHECK(fd >= 0 && write(fd, "timeout = 4\nnetwork = host\n", 28) == 28);
	close(fd);
	setenv("CELLBOX_CONFIG", path, 1);
	setenv("CELLBOX_TIMEOUT", "9", 1);
	setenv("SANDBOX_NETWORK_MODE", "bridge", 1);
	setenv("SANDBOX_CPU_COUNT", "3", 1);
	setenv("CELLBOX_CPUS", "2", 1);
	CHECK(config_load(&cfg, &err) == 0);
	CHECK(cfg.timeout == 9);				/* env beats the file */
	CHECK_STR(cfg.session.sandbox.network, "bridge");	/* an alias too */
	CHECK(cfg.session.sandbox.cpus == 2);			/* CELLBOX_ beats the alias */
	CHECK_STR(cfg.source, path);
	config_release(&cfg);
	setenv("CELLBOX_TIMEOUT", "soon", 1);
	CHECK(config_load(&cfg, &err) < 0);
	CHECK_STR(err.buf, "CELLBOX_TIMEOUT: 'soon' is not a number of seconds");
	config_release(&cfg);
	unsetenv("CELLBOX_CONFIG");
	unsetenv("CELLBOX_TIMEOUT");
	unsetenv("SANDBOX_NETWORK_MODE");
	unsetenv("SANDBOX_CPU_COUNT");
	unsetenv("CELLBOX_CPUS");
	unlink(path);
	strbuf_release(&err);
}

/* Collect "key=value;" for test_kv_parse; refuse the key "bad". */
static int kv_collect(char *key, char *value, struct strbuf *why, void *data)
{
	if (!strcmp(key, "bad")) {
		strbuf_addstr(why, "no bad keys");
		return -1;
	}
	strbuf_addf(data, "%s=%s;", key, value);
	return 0;
}

static void test_kv_parse(void)
{
	struct strbuf got = STRBUF_INIT, err = STRBUF_INIT;

	CHECK(parse_kv("# a comment\n\n a = 1 # trailing\nfg = #ff00aa on #000000 # dark\n"
		       "b=two words\n", "f", "key = value", kv_collect, &got, &err) == 0);
	CHECK_STR(got.buf, "a=1;fg=#ff00aa on #000000;b=two words;");
	strbuf_reset(&got);
	CHECK(parse_kv("a = 1\nno equals here\n", "f", "key = value", kv_collect, &got, &err) < 0);
	CHECK_STR(err.buf, "f:2: expected 'key = value'");
	strbuf_reset(&err);
	CHECK(parse_kv("a = 1\n\nbad = 3\nc = 4\n", "f", "k = v", kv_collect, &got, &err) < 0);
	CHECK_STR(err.buf, "f:3: no bad keys");
	strbuf_reset(&err);
	CHECK(parse_kv("a = 1\n = 2\n", "f", "k = v", kv_collect, &got, &err) < 0);
	CHECK_STR(err.buf, "f:2: expected 'k = v' (no key before the '=')");
	CHECK(strstr(got.buf, "c=") == NULL);	/* it stopped at the error */
	strbuf_release(&got);
	strbuf_release(&err);
}

/* HMAC-SHA256 against RFC 4231's test cases 1-4, 6 and 7 (5 is a truncated MAC), in pieces too. */
static void test_hmac_sha256(void)
{
	static const struct {
		const char *key, *data, *mac;	/* key and data in hex */
	} cases[] = {
		{ "0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b", "4869205468657265",
		  "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7" },
		{ "4a656665", "7768617420646f2079612077616e7420666f72206e6f7468696e673f",
		  "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843" },
		{ "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
		  "dddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddd"
		  "dddddddddddddddddddd",
		  "773ea91e36800e46854db8ebd09181a72959098b3ef8c122d9635514ced565fe" },
		{ "0102030405060708090a0b0c0d0e0f10111213141516171819",
		  "cdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcd"
		  "cdcdcdcdcdcdcdcdcdcd",
		  "82558a389a443c0ea4cc819899f2083a85f0faa3e578f8077a2e3ff46729665b" },
		{ "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
		  "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
		  "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
		  "aaaaaaaaaaaaaaaaaaaaaa",
		  "54657374205573696e67204c6172676572205468616e20426c6f636b2d53697a65204b6579202d20"
		  "48617368204b6579204669727374",
		  "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54" },
		{ "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
		  "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
		  "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
		  "aaaaaaaaaaaaaaaaaaaaaa",
		  "5468697320697320612074657374207573696e672061206c6172676572207468616e20626c6f636b"
		  "2d73697a65206b657920616e642061206c6172676572207468616e20626c6f636b2d73697a652064"
		  "6174612e20546865206b6579206e6565647320746f20626520686173686564206265666f72652062"
		  "65696e6720757365642062792074686520484d414320616c676f726974686d2e",
		  "9b09ffa71b942fcb27635fbcd5b0e944bfdc63644f0713938a7f51535c3a35e2" },
	};

	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		unsigned char key[200], data[200];
		size_t klen = strlen(cases[i].key) / 2, dlen = strlen(cases[i].data) / 2;
		struct sha256_hmac h;
		char hex[65];

		for (size_t k = 0; k < klen; k++)
			sscanf(cases[i].key + 2 * k, "%2hhx", &key[k]);
		for (size_t k = 0; k < dlen; k++)
			sscanf(cases[i].data + 2 * k, "%2hhx", &data[k]);
		sha256_hmac_init(&h, key, klen);
		sha256_hmac_update(&h, data, dlen);
		sha256_hmac_hex(&h, hex);
		CHECK_STR(hex, cases[i].mac);
		/* the same in three pieces, as the wire protocol feeds its frames */
		sha256_hmac_init(&h, key, klen);
		sha256_hmac_update(&h, data, 1);
		sha256_hmac_update(&h, data + 1, dlen / 2);
		sha256_hmac_update(&h, data + 1 + dlen / 2, dlen - 1 - dlen / 2);
		sha256_hmac_hex(&h, hex);
		CHECK_STR(hex, cases[i].mac);
	}
	CHECK(sha256_equal("abcdef", "abcdef", 6));
	CHECK(!sha256_equal("abcdef", "abcdeF", 6));
	CHECK(!sha256_equal("xbcdef", "abcdef", 6));
	CHECK(sha256_equal("", "", 0));
}

/* lazylib_load: every slot filled, or the one reason (no library; a function missing). */
static void test_lazylib(void)
{
	size_t (*len)(const char *) = NULL;
	void *none = NULL;
	const struct lazylib_symbol found[] = { { "strlen", (void **)&len } };
	const struct lazylib_symbol missing[] = { { "strlen", (void **)&len },
						  { "cellbox_no_such_function", &none } };
	char why[256] = "";

	CHECK(lazylib_load("libc.so.6", found, ARRAY_SIZE(found), why, sizeof(why)) == 0);
	CHECK(len && len("four") == 4);
	CHECK(lazylib_load("libc.so.6", missing, ARRAY_SIZE(missing), why, sizeof(why)) < 0);
	CHECK_STR(why, "libc.so.6 has no cellbox_no_such_function");
	CHECK(lazylib_load("libcellbox-none.so.0", found, 1, why, sizeof(why)) < 0);
	CHECK(!strncmp(why, "cannot load libcellbox-none.so.0: ", 34));
	/* a reason longer than its buffer is cut, and ends */
	CHECK(lazylib_load("libcellbox-none.so.0", found, 1, why, 8) < 0);
	CHECK_STR(why, "cannot ");
}

static const struct tap_test tests[] = {
	{ "hmac_sha256", test_hmac_sha256 },
	{ "strbuf", test_strbuf },
	{ "strbuf_cap", test_strbuf_cap },
	{ "utf8", test_utf8 },
	{ "parse_size", test_parse_size },
	{ "numconv", test_numconv },
	{ "base64", test_base64 },
	{ "sanitize", test_sanitize },
	{ "config", test_config },
	{ "config_table", test_config_table },
	{ "config_env", test_config_env },
	{ "parse_kv", test_kv_parse },
	{ "lazylib", test_lazylib },
};

int main(int argc, char **argv)
{
	return tap_main(argc, argv, tests, ARRAY_SIZE(tests));
}
