/* Theme files: parsing, loading, degrading to the terminal's colours. */
#include "theme.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const element_names[TH_NELEMENTS] = {
	"normal", "border", "title", "status", "status-busy", "status-dead", "prompt-in",
	"prompt-out", "stderr", "error", "plot", "truncated", "info", "side", "menu",
	"menu-selected", "overlay", "bracket", "syntax-keyword", "syntax-builtin",
	"syntax-string", "syntax-number", "syntax-comment", "syntax-decorator", "syntax-magic",
	"cell-selected", "cell-editing", "cell-changed", "find-match", "md-heading", "md-code",
	"md-link", "md-quote", "selection",
};

static const char *const color_names[8] = {
	"black", "red", "green", "yellow", "blue", "magenta", "cyan", "white",
};

const char theme_builtin_dark[] =
	"normal = default\n"
	"border = color240\n"
	"title = color250 bold\n"
	"status = white on color236\n"
	"status-busy = black on yellow\n"
	"status-dead = white on red bold\n"
	"prompt-in = green bold\n"
	"prompt-out = red bold\n"
	"stderr = color210\n"
	"error = red\n"
	"plot = cyan\n"
	"truncated = yellow reverse\n"
	"info = color244\n"
	"side = color250\n"
	"menu = white on color238\n"
	"menu-selected = black on cyan\n"
	"overlay = white on color235\n"
	"bracket = black on cyan\n"
	"syntax-keyword = color208 bold\n"
	"syntax-builtin = color81\n"
	"syntax-string = color114\n"
	"syntax-number = color141\n"
	"syntax-comment = color244 italic\n"
	"syntax-decorator = color220\n"
	"syntax-magic = color45\n"
	"cell-selected = color39\n"
	"cell-editing = color76\n"
	"cell-changed = color214 bold\n"
	"find-match = black on color214\n"
	"md-heading = color75 bold\n"
	"md-code = color180\n"
	"md-link = color81 underline\n"
	"md-quote = color244\n"
	"selection = black on color75\n"
	"ipython = Linux\n";

static const char *const ipython_schemes[] = { "NoColor", "Linux", "LightBG", "Neutral" };

int theme_ipython_scheme_valid(const char *scheme)
{
	for (size_t i = 0; i < ARRAY_SIZE(ipython_schemes); i++)
		if (!strcmp(scheme, ipython_schemes[i]))
			return 1;
	return 0;
}

const char *theme_resolve(const char *name, int light)
{
	if (strcmp(name, "auto"))
		return name;
	return light == 1 ? "light" : "dark";
}

const char *theme_element_name(enum theme_element el)
{
	return el < TH_NELEMENTS ? element_names[el] : "?";
}

void theme_init(struct theme *t)
{
	t->name = NULL;
	strcpy(t->ipython, "Linux");
	for (int i = 0; i < TH_NELEMENTS; i++) {
		t->style[i].fg = t->style[i].bg = SGR_DEFAULT;
		t->style[i].attrs = 0;
	}
}

void theme_release(struct theme *t)
{
	free(t->name);
	t->name = NULL;
}

int theme_parse_color(const char *w, int *out)
{
	char *end;
	long n;

	if (!strcmp(w, "default")) {
		*out = SGR_DEFAULT;
		return 0;
	}
	for (int i = 0; i < 8; i++) {
		if (!strcmp(w, color_names[i])) {
			*out = i;
			return 0;
		}
		if (!strncmp(w, "bright-", 7) && !strcmp(w + 7, color_names[i])) {
			*out = i + 8;
			return 0;
		}
	}
	if (!strncmp(w, "color", 5) && isdigit((unsigned char)w[5])) {
		n = strtol(w + 5, &end, 10);
		if (*end || n > 255)
			return -1;
		*out = (int)n;
		return 0;
	}
	if (w[0] == '#' && strlen(w) == 7) {
		n = strtol(w + 1, &end, 16);
		if (*end)
			return -1;
		*out = sgr_rgb_to_256((int)(n >> 16) & 255, (int)(n >> 8) & 255, (int)n & 255);
		return 0;
	}
	return -1;
}

/* Parse a style ("fg [on bg] attrs..."); -1 with `err` naming the bad word. */
static int parse_style(char *text, struct theme_style *st, struct strbuf *err)
{
	static const struct { const char *name; unsigned flag; } attrs[] = {
		{ "bold", SGR_BOLD }, { "dim", SGR_DIM }, { "italic", SGR_ITALIC },
		{ "underline", SGR_UNDERLINE }, { "reverse", SGR_REVERSE },
	};
	int seen_fg = 0, want_bg = 0;
	char *save = NULL;

	st->fg = st->bg = SGR_DEFAULT;
	st->attrs = 0;
	for (char *w = strtok_r(text, " \t", &save); w; w = strtok_r(NULL, " \t", &save)) {
		size_t k;
		int c;

		if (want_bg) {
			if (theme_parse_color(w, &st->bg) < 0) {
				strbuf_addf(err, "'%s' is not a colour", w);
				return -1;
			}
			want_bg = 0;
			continue;
		}
		if (!strcmp(w, "on")) {
			want_bg = 1;
			continue;
		}
		for (k = 0; k < ARRAY_SIZE(attrs); k++)
			if (!strcmp(w, attrs[k].name))
				break;
		if (k < ARRAY_SIZE(attrs)) {
			st->attrs |= attrs[k].flag;
			continue;
		}
		if (!seen_fg && theme_parse_color(w, &c) == 0) {
			st->fg = c;
			seen_fg = 1;
			continue;
		}
		strbuf_addf(err, "'%s' is not a colour or attribute", w);
		return -1;
	}
	if (want_bg) {
		strbuf_addstr(err, "'on' needs a colour");
		return -1;
	}
	return 0;
}

/* What theme_parse collects, line by line. */
struct theme_parse_ctx {
	int set[TH_NELEMENTS];
	struct theme_style parsed[TH_NELEMENTS];
	char ipython[16];
};

/* One `element = style` line of a theme. */
static int theme_pair(char *key, char *value, struct strbuf *why, void *data)
{
	struct theme_parse_ctx *ctx = data;
	struct strbuf style_err = STRBUF_INIT;
	int el;

	if (!strcmp(key, "ipython")) {
		if (!theme_ipython_scheme_valid(value)) {
			strbuf_addf(why, "ipython: '%s' is not one of NoColor, Linux, LightBG, "
				    "Neutral", value);
			return -1;
		}
		strcpy(ctx->ipython, value);
		return 0;
	}
	for (el = 0; el < TH_NELEMENTS; el++)
		if (!strcmp(key, element_names[el]))
			break;
	if (el == TH_NELEMENTS) {
		strbuf_addf(why, "unknown element '%s'", key);
		return -1;
	}
	if (parse_style(value, &ctx->parsed[el], &style_err) < 0) {
		strbuf_addf(why, "%s: %s", key, style_err.buf);
		strbuf_release(&style_err);
		return -1;
	}
	strbuf_release(&style_err);
	ctx->set[el] = 1;
	return 0;
}

int theme_parse(struct theme *t, const char *text, const char *name, struct strbuf *err)
{
	struct theme_parse_ctx ctx;
	int *set = ctx.set;
	struct theme_style *parsed = ctx.parsed;

	memset(&ctx, 0, sizeof(ctx));
	strcpy(ctx.ipython, "Linux");
	if (parse_kv(text, name, "element = style", theme_pair, &ctx, err) < 0)
		return -1;
	strcpy(t->ipython, ctx.ipython);
	if (!set[TH_NORMAL]) {
		parsed[TH_NORMAL].fg = parsed[TH_NORMAL].bg = SGR_DEFAULT;
		parsed[TH_NORMAL].attrs = 0;
	}
	if (!set[TH_SELECTION]) {	/* a selection must show: `normal` reversed */
		parsed[TH_SELECTION] = parsed[TH_NORMAL];
		parsed[TH_SELECTION].attrs |= SGR_REVERSE;
		set[TH_SELECTION] = 1;
	}
	for (int el = 0; el < TH_NELEMENTS; el++) {
		t->style[el] = set[el] ? parsed[el] : parsed[TH_NORMAL];
		/* A background left default sits on the normal background. */
		if (el != TH_NORMAL && t->style[el].bg == SGR_DEFAULT)
			t->style[el].bg = parsed[TH_NORMAL].bg;
	}
	free(t->name);
	t->name = xstrdup(name);
	return 0;
}

int theme_load(struct theme *t, const char *name, const char *const *dirs, struct strbuf *err)
{
	struct strbuf text = STRBUF_INIT;
	char *path = NULL, *base;
	int rc = -1;

	if (strchr(name, '/')) {
		path = xstrdup(name);
		if (strbuf_read_file(&text, path, 1u << 16) < 0) {
			strbuf_addf(err, "cannot read '%s': %s", path, strerror(errno));
			goto out;
		}
	} else {
		for (; dirs && *dirs; dirs++) {
			free(path);
			path = xasprintf("%s/%s.theme", *dirs, name);
			if (strbuf_read_file(&text, path, 1u << 16) == 0)
				break;
		}
		if (!dirs || !*dirs) {
			strbuf_addf(err, "no theme called '%s'", name);
			goto out;
		}
	}
	base = strrchr(path, '/');
	base = xstrdup(base ? base + 1 : path);
	if (strlen(base) > 6 && !strcmp(base + strlen(base) - 6, ".theme"))
		base[strlen(base) - 6] = '\0';
	rc = theme_parse(t, text.buf, base, err);
	free(base);
out:
	free(path);
	strbuf_release(&text);
	return rc;
}

/* A colour fitted to `ncolors`. */
static int fit(int c, int ncolors)
{
	if (c == SGR_DEFAULT || ncolors >= 256)
		return c;
	if (ncolors >= 16)
		return sgr_to_16(c);
	if (ncolors >= 8)
		return sgr_to_8(c);
	return SGR_DEFAULT;
}

void theme_degrade(struct theme *t, int ncolors)
{
	int normal_bg = t->style[TH_NORMAL].bg;

	for (int el = 0; el < TH_NELEMENTS; el++) {
		struct theme_style *st = &t->style[el];
		int had_bg = st->bg != SGR_DEFAULT && el != TH_NORMAL &&
			     st->bg != normal_bg;

		st->fg = fit(st->fg, ncolors);
		st->bg = fit(st->bg, ncolors);
		/* With one colour pair left, keep elements on their own background visible. */
		if (ncolors < 8 && had_bg)
			st->attrs |= SGR_REVERSE;
		if (ncolors >= 8 && st->fg != SGR_DEFAULT && st->fg == st->bg)
			st->fg = SGR_DEFAULT;	/* degraded into the same colour: keep it readable */
	}
}
