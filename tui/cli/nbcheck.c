/* replay --check: outputs compared as nbval compares them, without false alarms. */
#include "nbcheck.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include "cellfile.h"
#include "graphics.h"
#include "outputs.h"
#include "sanitize.h"

/* The placeholders: what always differs between two runs of the same cell. */
static const struct {
	const char *re;
	const char *with;
} builtin[] = {
	{ "\\x1b\\[[0-9;]*[A-Za-z]", "" },
	{ "0x[0-9a-fA-F]{6,16}", "0x<addr>" },
	{ "[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", "<uuid>" },
	{ "\\S*/ipykernel_\\d+/\\d+\\.py|<ipython-input-\\d+-[0-9a-f]+>", "<cell>" },
	{ "(?:Cell|Input) In ?\\[\\d*\\]", "Cell In [n]" },
	{ "The slowest run took [\\d.]+ times longer than the fastest\\. This could mean that an "
	  "intermediate result is being cached\\.\\n", "" },
	{ "\\b\\d[\\d,]*(?= (?:runs?|loops?)\\b)", "<n>" },
	{ "\\b\\d+(?:\\.\\d+)?\\s*(?:ns|µs|us|ms|s|sec|seconds|min)\\b", "<time>" },
};

/* One comparable piece of a cell's outputs: text, or an image. */
struct item {
	char *text;		/* what is printed in a diff; compared unless an image */
	char mime[32];		/* an image: its mime type, else "" */
	int w, h;
	const char *b64;	/* the image's base64 data */
};

struct items {
	struct item *v;
	size_t n, alloc;
};

/* Compile a pattern (UTF-8); NULL with `err` set when it does not compile. */
static pcre2_code *compile(const char *re, struct strbuf *err)
{
	int e;
	PCRE2_SIZE off;
	pcre2_code *code = pcre2_compile((PCRE2_SPTR)re, PCRE2_ZERO_TERMINATED, PCRE2_UTF, &e,
					 &off, NULL);

	if (!code && err) {
		PCRE2_UCHAR msg[256];
		pcre2_get_error_message(e, msg, sizeof(msg));
		strbuf_addf(err, "bad pattern '%s' at offset %zu: %s", re, (size_t)off,
			    (const char *)msg);
	}
	return code;
}

_Static_assert(ARRAY_SIZE(builtin) <= ARRAY_SIZE(((struct nbcheck *)0)->builtin),
	       "struct nbcheck has room for every placeholder pattern");

void nbcheck_init(struct nbcheck *c)
{
	memset(c, 0, sizeof(*c));
	c->tolerance = CHECK_TOLERANCE;
	for (size_t i = 0; i < ARRAY_SIZE(builtin); i++)
		c->builtin[i] = compile(builtin[i].re, NULL);
}

void nbcheck_release(struct nbcheck *c)
{
	for (size_t i = 0; i < ARRAY_SIZE(builtin); i++)
		pcre2_code_free(c->builtin[i]);
	for (size_t i = 0; i < c->nignore; i++)
		pcre2_code_free(c->ignore[i]);
	free(c->ignore);
	memset(c, 0, sizeof(*c));
}

int nbcheck_add_ignore(struct nbcheck *c, const char *regex, struct strbuf *err)
{
	pcre2_code *code = compile(regex, err);

	if (!code)
		return -1;
	c->ignore = xrealloc(c->ignore, (c->nignore + 1) * sizeof(*c->ignore));
	c->ignore[c->nignore++] = code;
	return 0;
}

/* Replace every match of `re` in `sb` by `with`. */
static void substitute(pcre2_code *re, const char *with, struct strbuf *sb)
{
	PCRE2_SIZE outlen = sb->len * 2 + 64;
	char *buf;
	int rc;

	if (!re)
		return;
	for (;;) {
		buf = xmalloc(outlen);
		rc = pcre2_substitute(re, (PCRE2_SPTR)sb->buf, sb->len, 0,
				      PCRE2_SUBSTITUTE_GLOBAL | PCRE2_SUBSTITUTE_OVERFLOW_LENGTH,
				      NULL, NULL, (PCRE2_SPTR)with, PCRE2_ZERO_TERMINATED,
				      (PCRE2_UCHAR *)buf, &outlen);
		if (rc != PCRE2_ERROR_NOMEMORY)
			break;
		free(buf);	/* outlen now says how much it needs */
	}
	if (rc >= 0) {
		strbuf_reset(sb);
		strbuf_add(sb, buf, outlen);
	}
	free(buf);
}

/* Apply the placeholders and the --check-ignore patterns. */
static void normalise(const struct nbcheck *c, struct strbuf *sb)
{
	for (size_t i = 0; i < ARRAY_SIZE(builtin); i++)
		substitute(c->builtin[i], builtin[i].with, sb);
	for (size_t i = 0; i < c->nignore; i++)
		substitute(c->ignore[i], "<ignored>", sb);
}

/* Add a text item, normalised. */
static void add_text(const struct nbcheck *c, struct items *it, const char *head,
		     const char *text)
{
	struct strbuf sb = STRBUF_INIT;
	struct item *x;

	strbuf_init(&sb, 0);
	strbuf_addstr(&sb, head);
	strbuf_addstr(&sb, text);
	if (sb.len && sb.buf[sb.len - 1] != '\n')
		strbuf_addch(&sb, '\n');
	normalise(c, &sb);
	if (it->n == it->alloc) {
		it->alloc = it->alloc ? 2 * it->alloc : 16;
		it->v = xrealloc(it->v, it->alloc * sizeof(*it->v));
	}
	x = &it->v[it->n++];
	memset(x, 0, sizeof(*x));
	x->text = strbuf_detach(&sb, NULL);
}

/* Decode up to `max` bytes of base64 (whitespace skipped). Returns the count. */
static size_t b64_decode(const char *s, unsigned char *out, size_t max)
{
	static const char alphabet[] =
		"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	size_t n = 0;
	unsigned acc = 0;
	int bits = 0;

	for (; *s && n < max; s++) {
		const char *p = strchr(alphabet, *s);
		if (!p || *s == '\0')
			continue;
		acc = (acc << 6) | (unsigned)(p - alphabet);
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			out[n++] = (unsigned char)(acc >> bits);
		}
	}
	return n;
}

/* Width and height of base64 PNG or JPEG data; 0 x 0 when unknown. */
static void image_size(const char *b64, int *w, int *h)
{
	size_t max = strlen(b64) / 4 * 3 + 3, n;
	unsigned char *d = xmalloc(max);

	*w = *h = 0;
	n = b64_decode(b64, d, max);
	if (n >= 24 && !memcmp(d + 1, "PNG", 3) && !memcmp(d + 12, "IHDR", 4)) {
		*w = d[16] << 24 | d[17] << 16 | d[18] << 8 | d[19];
		*h = d[20] << 24 | d[21] << 16 | d[22] << 8 | d[23];
	} else if (n > 4 && d[0] == 0xff && d[1] == 0xd8) {
		size_t i = 2;
		while (i + 9 < n && d[i] == 0xff) {
			int m = d[i + 1];
			if (m == 0xff) {
				i++;
				continue;
			}
			if (m >= 0xc0 && m <= 0xcf && m != 0xc4 && m != 0xc8 && m != 0xcc) {
				*h = d[i + 5] << 8 | d[i + 6];
				*w = d[i + 7] << 8 | d[i + 8];
				break;
			}
			i += 2 + (size_t)(d[i + 2] << 8 | d[i + 3]);
		}
	}
	free(d);
}

/* Add an image item. */
static void add_image(const struct nbcheck *c, struct items *it, const char *mime,
		      const char *b64)
{
	char head[96];
	struct item *x;
	int w, h;

	image_size(b64, &w, &h);
	snprintf(head, sizeof(head), "[%s %dx%d]\n", mime, w, h);
	add_text(c, it, head, "");
	x = &it->v[it->n - 1];
	snprintf(x->mime, sizeof(x->mime), "%s", mime);
	x->w = w;
	x->h = h;
	x->b64 = b64;
}

/* Compare mime keys by name (a bundle's members in a stable order). */
static int cmp_members(const void *a, const void *b)
{
	const cJSON *x = *(const cJSON *const *)a, *y = *(const cJSON *const *)b;
	return strcmp(x->string, y->string);
}

/* A display_data / execute_result bundle as items. */
static void add_bundle(const struct nbcheck *c, struct items *it, const char *type,
		       const cJSON *data)
{
	const cJSON *m;
	const cJSON **v = NULL;
	size_t n = 0;
	char head[128];

	cJSON_ArrayForEach(m, data)
		if (m->string) {
			v = xrealloc(v, (n + 1) * sizeof(*v));
			v[n++] = m;
		}
	qsort(v, n, sizeof(*v), cmp_members);
	snprintf(head, sizeof(head), "[%s]\n", type);
	add_text(c, it, head, "");
	for (size_t i = 0; i < n; i++) {
		const char *mime = v[i]->string ? v[i]->string : "";
		char *text;

		if (!strcmp(mime, "image/png") || !strcmp(mime, "image/jpeg")) {
			text = cellfile_join(v[i]);
			add_image(c, it, mime, text);
			/* The item points at the text: keep it with the list (freed with it). */
			it->v[it->n - 1].b64 = text;
			continue;
		}
		snprintf(head, sizeof(head), "[%s]\n", mime);
		if (!strcmp(mime, "text/plain")) {
			text = cellfile_join(v[i]);
			add_text(c, it, "", text);
			free(text);
		} else if (!strncmp(mime, "text/", 5) || !strcmp(mime, "application/javascript")) {
			text = cellfile_join(v[i]);
			add_text(c, it, head, text);
			free(text);
		} else if (!strcmp(mime, "application/json") ||
			   (strlen(mime) > 5 && !strcmp(mime + strlen(mime) - 5, "+json"))) {
			struct strbuf js = STRBUF_INIT;
			strbuf_init(&js, 0);
			cellfile_write_json(v[i], 1, &js);
			add_text(c, it, head, js.buf);
			strbuf_release(&js);
		} else {
			add_text(c, it, head, "");	/* svg, pdf, ...: by presence */
		}
	}
	free(v);
}

/* A cell's outputs as items: each run of streams merged into its stdout and stderr. */
static void outputs_items(const struct nbcheck *c, const cJSON *outputs, struct items *it)
{
	struct strbuf out = STRBUF_INIT, err = STRBUF_INIT;
	const cJSON *o;

	strbuf_init(&out, 0);
	strbuf_init(&err, 0);
	for (o = outputs ? outputs->child : NULL;; o = o->next) {
		const char *type = o ? cJSON_GetStringValue(
			cJSON_GetObjectItemCaseSensitive(o, "output_type")) : NULL;
		if (type && !strcmp(type, "stream")) {
			const char *name = cJSON_GetStringValue(
				cJSON_GetObjectItemCaseSensitive(o, "name"));
			char *t = cellfile_join(cJSON_GetObjectItemCaseSensitive(o, "text"));
			strbuf_addstr(name && !strcmp(name, "stderr") ? &err : &out, t);
			free(t);
			continue;
		}
		/* The run of streams ends here: compared as a front end shows it. */
		outputs_collapse(&out);
		outputs_collapse(&err);
		if (out.len)
			add_text(c, it, "[stdout]\n", out.buf);
		if (err.len)
			add_text(c, it, "[stderr]\n", err.buf);
		strbuf_reset(&out);
		strbuf_reset(&err);
		if (!o)
			break;
		if (!type)
			continue;
		if (!strcmp(type, "error")) {
			const char *ename = cJSON_GetStringValue(
				cJSON_GetObjectItemCaseSensitive(o, "ename"));
			const char *evalue = cJSON_GetStringValue(
				cJSON_GetObjectItemCaseSensitive(o, "evalue"));
			struct strbuf e = STRBUF_INIT;
			strbuf_init(&e, 0);
			strbuf_addf(&e, "%s: %s", ename ? ename : "Error", evalue ? evalue : "");
			add_text(c, it, "[error]\n", e.buf);
			strbuf_release(&e);
		} else {
			add_bundle(c, it, type, cJSON_GetObjectItemCaseSensitive(o, "data"));
		}
	}
	strbuf_release(&out);
	strbuf_release(&err);
}

/* Free items (and the image texts add_bundle kept). */
static void items_free(struct items *it)
{
	for (size_t i = 0; i < it->n; i++) {
		free(it->v[i].text);
		if (it->v[i].mime[0])
			free((char *)it->v[i].b64);
	}
	free(it->v);
	memset(it, 0, sizeof(*it));
}

/* Write base64 image data to a temporary file and decode it. NULL when it cannot. */
static struct graphics_image *load_b64(const char *b64)
{
	struct graphics_image *img = NULL;
	struct strbuf err = STRBUF_INIT;
	const char *tmpdir = getenv("TMPDIR");
	char *path = xasprintf("%s/cellbox-check-XXXXXX", tmpdir && *tmpdir ? tmpdir : "/tmp");
	size_t max = strlen(b64) / 4 * 3 + 3, n;
	unsigned char *d = xmalloc(max);
	int fd = mkstemp(path);

	n = b64_decode(b64, d, max);
	if (fd >= 0) {
		if (fsutil_write_all(fd, d, n) == 0 && close(fd) == 0)
			img = graphics_load(path, &err);
		else
			close(fd);
		unlink(path);
	}
	free(d);
	free(path);
	strbuf_release(&err);
	return img;
}

/* Whether two same-size images have the same pixels (at most 1% off by more than 16). */
static int same_pixels(const char *a, const char *b)
{
	struct graphics_image *x = load_b64(a), *y = load_b64(b);
	int same = 0, wx, hx, wy, hy;

	if (x && y) {
		graphics_image_size(x, &wx, &hx);
		graphics_image_size(y, &wy, &hy);
		if (wx == wy && hx == hy) {
			const unsigned char *p = graphics_image_rgb(x), *q = graphics_image_rgb(y);
			size_t n = (size_t)wx * hx, off = 0;
			for (size_t i = 0; i < n; i++)
				for (int k = 0; k < 3; k++)
					if (abs(p[3 * i + k] - q[3 * i + k]) > 16) {
						off++;
						break;
					}
			same = off * 100 <= n;
		}
	}
	if (x)
		graphics_free(x);
	if (y)
		graphics_free(y);
	return same;
}

/* Whether two items count as the same. */
static int same_item(const struct nbcheck *c, const struct item *a, const struct item *b)
{
	if (a->mime[0] || b->mime[0]) {
		if (strcmp(a->mime, b->mime) || abs(a->w - b->w) > c->tolerance ||
		    abs(a->h - b->h) > c->tolerance)
			return 0;
		return !c->pixels || same_pixels(a->b64, b->b64);
	}
	return !strcmp(a->text, b->text);
}

/*
 * Print a line diff of two item lists (lines only in one side, in order). Both sides are
 * outside text (the file's, the kernel's): sanitised.
 */
static void print_diff(FILE *f, const struct items *want, const struct items *got)
{
	struct strbuf a = STRBUF_INIT, b = STRBUF_INIT, clean_a = STRBUF_INIT;
	struct strbuf clean_b = STRBUF_INIT;
	const char *p, *q;

	strbuf_init(&a, 0);
	strbuf_init(&b, 0);
	for (size_t i = 0; i < want->n; i++)
		strbuf_addstr(&a, want->v[i].text);
	for (size_t i = 0; i < got->n; i++)
		strbuf_addstr(&b, got->v[i].text);
	p = sanitize_cstr(a.buf, SAN_NO_CR, &clean_a);
	q = sanitize_cstr(b.buf, SAN_NO_CR, &clean_b);
	while (*p || *q) {
		size_t la = strcspn(p, "\n"), lb = strcspn(q, "\n");
		if (*p && *q && la == lb && !strncmp(p, q, la)) {
			fprintf(f, "  %.*s\n", (int)la, p);
		} else {
			if (*p)
				fprintf(f, "- %.*s\n", (int)la, p);
			if (*q)
				fprintf(f, "+ %.*s\n", (int)lb, q);
		}
		p += la + (p[la] == '\n');
		q += lb + (q[lb] == '\n');
	}
	strbuf_release(&a);
	strbuf_release(&b);
	strbuf_release(&clean_a);
	strbuf_release(&clean_b);
}

/* The marker a comment line names, or 0. */
static unsigned comment_marker(const char *line, size_t len)
{
	static const struct {
		const char *name;
		unsigned flag;
	} names[] = {
		{ "NBVAL_SKIP", CHECK_SKIP },
		{ "NBVAL_IGNORE_OUTPUT", CHECK_IGNORE },
		{ "PYTEST_VALIDATE_IGNORE_OUTPUT", CHECK_IGNORE },
		{ "NBVAL_RAISES_EXCEPTION", CHECK_RAISES },
		{ "NBVAL_CHECK_OUTPUT", CHECK_OUTPUT },
	};

	while (len && (*line == ' ' || *line == '\t')) {
		line++;
		len--;
	}
	if (!len || *line != '#')
		return 0;
	while (len && (*line == '#' || *line == ' ' || *line == '\t')) {
		line++;
		len--;
	}
	while (len && (line[len - 1] == ' ' || line[len - 1] == '\t' || line[len - 1] == '\r'))
		len--;
	for (size_t i = 0; i < ARRAY_SIZE(names); i++)
		if (strlen(names[i].name) == len && !strncmp(line, names[i].name, len))
			return names[i].flag;
	return 0;
}

unsigned nbcheck_markers(const cJSON *cell)
{
	static const struct {
		const char *tag;
		unsigned flag;
	} tags[] = {
		{ "nbval-skip", CHECK_SKIP },
		{ "nbval-ignore-output", CHECK_IGNORE },
		{ "nbval-raises-exception", CHECK_RAISES },
		{ "raises-exception", CHECK_RAISES },
		{ "nbval-check-output", CHECK_OUTPUT },
	};
	char *src = cellfile_join(cJSON_GetObjectItemCaseSensitive(cell, "source"));
	unsigned flags = 0;

	for (const char *p = src; *p;) {
		size_t l = strcspn(p, "\n");
		flags |= comment_marker(p, l);
		p += l + (p[l] == '\n');
	}
	free(src);
	for (size_t i = 0; i < ARRAY_SIZE(tags); i++)
		if (cellfile_has_tag(cell, tags[i].tag))
			flags |= tags[i].flag;
	return flags;
}

int nbcheck_cell(struct nbcheck *c, const cJSON *cell, const cJSON *stored, const cJSON *fresh,
	       int raised, int index, FILE *f)
{
	unsigned marks = nbcheck_markers(cell);
	struct items want = { 0 }, got = { 0 };
	int differ = 0;

	if ((marks & CHECK_RAISES) && !raised) {
		fprintf(f, "--- check: cell %d is marked to raise an exception and did not\n",
			index);
		return 1;
	}
	if ((marks & (CHECK_IGNORE | CHECK_SKIP)) || (c->lax && !(marks & CHECK_OUTPUT)))
		return 0;
	outputs_items(c, stored, &want);
	outputs_items(c, fresh, &got);
	differ = want.n != got.n;
	for (size_t i = 0; !differ && i < want.n; i++)
		differ = !same_item(c, &want.v[i], &got.v[i]);
	if (differ) {
		fprintf(f, "--- check: cell %d differs (- stored, + now)\n", index);
		print_diff(f, &want, &got);
	}
	items_free(&want);
	items_free(&got);
	return differ;
}
