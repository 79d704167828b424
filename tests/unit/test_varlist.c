/*
 * The variables pane's listing (tui/ui/varlist.c), as a hostile kernel may send it: fields of
 * the wrong type, missing ones, huge counts and sizes, escapes in names and types, more
 * entries than are kept, text before the JSON, no JSON at all.
 */
#include "tap.h"
#include "sanitize.h"
#include "varlist.h"

/* Parse `text` into `vl`: 0 or -1 (the error, if any, as a TAP note). */
static int parse(struct varlist *vl, const char *text)
{
	struct strbuf err = STRBUF_INIT;
	int rc = varlist_parse(vl, text, strlen(text), &err);

	if (rc < 0)
		tap_note(err.buf);
	CHECK((rc < 0) == (err.len > 0));
	strbuf_release(&err);
	return rc;
}

static void test_good_listing(void)
{
	struct varlist vl = { 0 };
	char buf[32];

	CHECK(parse(&vl, "noise before\n{\"cellbox_vars\": [{\"name\": \"arr\", \"type\": "
		  "\"ndarray\", \"shape\": [2, 3], \"size\": 48}, {\"name\": \"xs\", \"type\": "
		  "\"list\", \"len\": 3, \"size\": 88}, {\"name\": \"v\", \"type\": \"tuple\", "
		  "\"shape\": [7]}], \"count\": 3}\nafter") == 0);
	CHECK(vl.n == 3 && vl.count == 3);
	CHECK_STR(vl.v[0].name, "arr");
	CHECK_STR(vl.v[0].raw, "arr");
	CHECK_STR(vl.v[0].type, "ndarray");
	CHECK_STR(vl.v[0].shape, "(2, 3)");
	CHECK(vl.v[0].size == 48);
	CHECK_STR(vl.v[1].shape, "len 3");
	CHECK_STR(vl.v[2].shape, "(7,)");
	CHECK(vl.v[2].size == -1);
	varlist_size_text(48, buf, sizeof(buf));
	CHECK_STR(buf, "48 B");
	varlist_size_text(1536, buf, sizeof(buf));
	CHECK_STR(buf, "1.5 KiB");
	varlist_size_text(3LL << 30, buf, sizeof(buf));
	CHECK_STR(buf, "3.0 GiB");
	varlist_size_text(-1, buf, sizeof(buf));
	CHECK_STR(buf, "?");
	varlist_release(&vl);
	CHECK(vl.n == 0 && vl.v == NULL);
}

static void test_wrong_types(void)
{
	struct varlist vl = { 0 };

	/* Not the listing at all, or the listing of the wrong type: nothing, an error. */
	CHECK(parse(&vl, "") < 0);
	CHECK(parse(&vl, "[1, 2, 3]") < 0);
	CHECK(parse(&vl, "{\"cellbox_vars\": 5}") < 0);
	CHECK(parse(&vl, "{\"cellbox_vars\": \"x\"}") < 0);
	CHECK(parse(&vl, "{\"cellbox_vars\": [") < 0);
	CHECK(parse(&vl, "{\"cellbox_vars\": {\"name\": \"x\"}}") < 0);
	CHECK(vl.n == 0);
	/* Entries without a string name are skipped; other fields of the wrong type dropped. */
	CHECK(parse(&vl, "{\"cellbox_vars\": [1, \"s\", null, [], {}, {\"name\": 7}, "
		  "{\"name\": \"\"}, {\"name\": null}, {\"name\": \"ok\", \"type\": 5, "
		  "\"shape\": \"(1, 2)\", \"len\": \"3\", \"size\": \"big\"}, {\"name\": \"b\", "
		  "\"shape\": [1, \"2\"], \"len\": -4, \"size\": -1}, {\"name\": \"c\", "
		  "\"shape\": [1.5], \"len\": 2.5, \"size\": 1e300}, {\"name\": \"d\", "
		  "\"shape\": {\"0\": 1}, \"size\": 1e15}], \"count\": \"many\"}") == 0);
	CHECK(vl.n == 4);
	CHECK_STR(vl.v[0].name, "ok");
	CHECK_STR(vl.v[0].type, "?");
	CHECK_STR(vl.v[0].shape, "");
	CHECK(vl.v[0].size == -1);
	CHECK_STR(vl.v[1].shape, "");
	CHECK(vl.v[1].size == -1);
	CHECK_STR(vl.v[2].shape, "");
	CHECK(vl.v[2].size == -1);
	CHECK(vl.v[3].size == 1000000000000000LL);
	CHECK(vl.count == 4);	/* a count that is not one: the entries */
	varlist_release(&vl);
}

static void test_huge(void)
{
	struct varlist vl = { 0 };
	struct strbuf sb = STRBUF_INIT, err = STRBUF_INIT;

	/* 5000 entries: 500 kept; a count past the cap believed only within range. */
	strbuf_addstr(&sb, "{\"cellbox_vars\": [");
	for (int i = 0; i < 5000; i++)
		strbuf_addf(&sb, "%s{\"name\": \"v%d\", \"size\": %d}", i ? "," : "", i, i);
	strbuf_addstr(&sb, "], \"count\": 1e300}");
	CHECK(varlist_parse(&vl, sb.buf, sb.len, &err) == 0);
	CHECK(vl.n == VARLIST_MAX);
	CHECK(vl.count == VARLIST_MAX);
	CHECK_STR(vl.v[VARLIST_MAX - 1].name, "v499");
	varlist_release(&vl);
	/* A count the kernel says: more names than shown. */
	CHECK(parse(&vl, "{\"cellbox_vars\": [{\"name\": \"a\"}], \"count\": 123456}") == 0);
	CHECK(vl.n == 1 && vl.count == 123456);
	varlist_release(&vl);
	/* Over the bytes read: refused without parsing. */
	strbuf_reset(&sb);
	strbuf_addstr(&sb, "{\"cellbox_vars\": [{\"name\": \"");
	while (sb.len <= VARLIST_TEXT_MAX)
		strbuf_addstr(&sb, "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx");
	strbuf_addstr(&sb, "\"}]}");
	strbuf_reset(&err);
	CHECK(varlist_parse(&vl, sb.buf, sb.len, &err) < 0 && strstr(err.buf, "KiB"));
	CHECK(vl.n == 0);
	/* A long name and type: cut for the screen; the name too long to ask for by. */
	strbuf_reset(&sb);
	strbuf_addstr(&sb, "{\"cellbox_vars\": [{\"name\": \"");
	for (int i = 0; i < 1000; i++)
		strbuf_addch(&sb, 'n');
	strbuf_addstr(&sb, "\", \"type\": \"");
	for (int i = 0; i < 1000; i++)
		strbuf_addch(&sb, 't');
	strbuf_addstr(&sb, "\", \"shape\": [1,2,3,4,5,6,7,8,9,10,11,12]}, {\"name\": \"s\", "
		      "\"shape\": [999999999999999, 999999999999999, 999999999999999, "
		      "999999999999999, 999999999999999, 999999999999999, 999999999999999, "
		      "999999999999999]}]}");
	CHECK(varlist_parse(&vl, sb.buf, sb.len, &err) == 0);
	CHECK(vl.n == 2);
	CHECK(strlen(vl.v[0].name) == VARLIST_NAME_MAX);
	CHECK(vl.v[0].raw == NULL);
	CHECK(strlen(vl.v[0].type) == VARLIST_TYPE_MAX);
	CHECK_STR(vl.v[0].shape, "(12 dims)");
	CHECK(strlen(vl.v[1].shape) > 100 && vl.v[1].shape[strlen(vl.v[1].shape) - 1] == ')');
	varlist_release(&vl);
	strbuf_release(&sb);
	strbuf_release(&err);
}

static void test_escapes(void)
{
	struct varlist vl = { 0 };

	/* OSC, CSI, C1 (as UTF-8 and raw), newlines and tabs: none reach what is shown. */
	CHECK(parse(&vl, "{\"cellbox_vars\": [{\"name\": \"\\u001b]0;PWNED\\u0007bad\\nname\", "
		  "\"type\": \"Evil\\u001b[2J\\u009b31mX\\tY\\r\"}, {\"name\": \"raw\\u0000nul\", "
		  "\"type\": \"\xc2\x9b\x9b" "c1\"}]}") == 0);
	CHECK(vl.n == 2);
	CHECK_STR(vl.v[0].name, "bad name");
	CHECK_STR(vl.v[0].type, "Evil31mX Y");
	CHECK(sanitize_is_clean(vl.v[0].name, strlen(vl.v[0].name), SAN_NO_CR));
	/* The kernel's spelling is kept to ask for the value (it goes in as a literal). */
	CHECK_STR(vl.v[0].raw, "\x1b]0;PWNED\abad\nname");
	/* A NUL ends the name (cJSON's strings are C strings): "raw". */
	CHECK_STR(vl.v[1].name, "raw");
	CHECK(strstr(vl.v[1].type, "c1") && !strchr(vl.v[1].type, '\x9b') &&
	      !strstr(vl.v[1].type, "\xc2\x9b"));
	varlist_release(&vl);
	/* Invalid UTF-8 in a name: shown with U+FFFD, not asked for. */
	CHECK(parse(&vl, "{\"cellbox_vars\": [{\"name\": \"a\xff\xfe" "b\"}]}") == 0);
	CHECK(vl.n == 1 && vl.v[0].raw == NULL);
	CHECK(strstr(vl.v[0].name, "\xef\xbf\xbd") != NULL);
	varlist_release(&vl);
}

static const struct tap_test tests[] = {
	{ "varlist_good", test_good_listing },
	{ "varlist_wrong_types", test_wrong_types },
	{ "varlist_huge", test_huge },
	{ "varlist_escapes", test_escapes },
};

int main(int argc, char **argv)
{
	return tap_main(argc, argv, tests, ARRAY_SIZE(tests));
}
