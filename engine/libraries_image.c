/*
 * Libraries for the container backends: an image derived once per (image, set, wheels,
 * owner), and gc.
 */
#include "docker.h"
#include "fsutil.h"
#include "libraries.h"
#include "libraries_int.h"
#include "egress_list.h"
#include "numconv.h"
#include "session.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define VENV "/opt/cellbox/venv"
#define WHEELHOUSE_MOUNT "/cellbox/wheelhouse"
#define IMAGE_REPO "cellbox-libs"
#define LABEL_LIBRARIES "org.cellbox.libraries"
#define LABEL_BASE "org.cellbox.base"
#define LABEL_WHEELS "org.cellbox.wheels"	/* libraries_wheels()'s digest; "" from the index */
#define LABEL_OWNER "org.cellbox.owner"		/* "uid:N", or "shared" (libraries-shared) */

/* What names a derived image: its base's id, the set, its wheels, its owner. */
struct image_key {
	const char *base, *set, *wheels, *owner;
};

/* s, or "" for NULL. */
static const char *str_or_empty(const char *s)
{
	return s ? s : "";
}

/* ---- containers: a derived image ---- */

/* The value of `name=` in an image's Env, or NULL. */
static const char *env_value(const cJSON *env, const char *name)
{
	const cJSON *e;
	size_t n = strlen(name);

	cJSON_ArrayForEach(e, env) {
		const char *s = cJSON_GetStringValue(e);
		if (s && !strncmp(s, name, n) && s[n] == '=')
			return s + n + 1;
	}
	return NULL;
}

/* The value of label `name` of an image's inspection (or listing: `labels` given), or "". */
static const char *label(const cJSON *labels, const char *name)
{
	return str_or_empty(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(labels, name)));
}

/* Whether `labels` are those of `k` (the wheels too unless k->wheels is NULL). */
static int labels_match(const cJSON *labels, const struct image_key *k)
{
	return !strcmp(label(labels, LABEL_LIBRARIES), k->set) &&
	       !strcmp(label(labels, LABEL_BASE), k->base) &&
	       !strcmp(label(labels, LABEL_OWNER), k->owner) &&
	       (!k->wheels || !strcmp(label(labels, LABEL_WHEELS), k->wheels));
}

/* Whether image `ref` exists with the labels of `k`. */
static int image_matches(struct docker *d, const char *ref, const struct image_key *k)
{
	struct strbuf path = STRBUF_INIT, err = STRBUF_INIT;
	cJSON *img = NULL;
	int ok;

	strbuf_addstr(&path, "/images/");
	docker_urlencode(&path, ref);
	strbuf_addstr(&path, "/json");
	ok = docker_call(d, "GET", path.buf, NULL, &img, &err) == 200 &&
	     labels_match(cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(img,
							"Config"), "Labels"), k);
	cJSON_Delete(img);
	strbuf_release(&path);
	strbuf_release(&err);
	return ok;
}

/* A derived image of `k` whatever its wheels (a session naming no wheelhouse): its tag, or
 * NULL. */
static char *any_image(struct docker *d, const struct image_key *k)
{
	struct strbuf path = STRBUF_INIT, err = STRBUF_INIT;
	cJSON *list = NULL, *img;
	char *tag = NULL;

	strbuf_addstr(&path, "/images/json?filters=");
	{
		char *f = xasprintf("{\"label\":[\"" LABEL_OWNER "=%s\"]}", k->owner);
		docker_urlencode(&path, f);
		free(f);
	}
	if (docker_call(d, "GET", path.buf, NULL, &list, &err) == 200)
		cJSON_ArrayForEach(img, list) {
			const char *t = cJSON_GetStringValue(cJSON_GetArrayItem(
				cJSON_GetObjectItemCaseSensitive(img, "RepoTags"), 0));

			if (t && !strncmp(t, IMAGE_REPO ":", strlen(IMAGE_REPO) + 1) &&
			    labels_match(cJSON_GetObjectItemCaseSensitive(img, "Labels"), k) &&
			    image_matches(d, t, k)) {
				tag = xstrdup(t);
				break;
			}
		}
	cJSON_Delete(list);
	strbuf_release(&path);
	strbuf_release(&err);
	return tag;
}

/* The text of a stopped container's logs (its two streams, demultiplexed). */
static void container_logs(struct docker *d, const char *id, struct strbuf *out)
{
	struct strbuf raw = STRBUF_INIT, err = STRBUF_INIT;
	/* pip's last lines say why; what the setup printed before is not the host's to keep. */
	char *path = xasprintf("/containers/%s/logs?stdout=1&stderr=1&tail=400", id);
	size_t i = 0;

	docker_request(d, "GET", path, NULL, NULL, 0, &raw, &err);
	while (i + 8 <= raw.len && (unsigned char)raw.buf[i] <= 2 && !raw.buf[i + 1]) {
		const unsigned char *h = (const unsigned char *)raw.buf + i;
		size_t n = (size_t)h[4] << 24 | (size_t)h[5] << 16 | (size_t)h[6] << 8 | h[7];

		if (i + 8 + n > raw.len)
			n = raw.len - i - 8;
		strbuf_add(out, raw.buf + i + 8, n);
		i += 8 + n;
	}
	if (i < raw.len && !out->len)
		strbuf_add(out, raw.buf, raw.len);	/* not multiplexed (a terminal) */
	strbuf_release(&raw);
	strbuf_release(&err);
	free(path);
}

/* Add a Dockerfile instruction as one more `changes` of POST /commit. */
static void add_change(struct strbuf *q, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void add_change(struct strbuf *q, const char *fmt, ...)
{
	struct strbuf c = STRBUF_INIT;
	va_list ap;

	va_start(ap, fmt);
	strbuf_vaddf(&c, fmt, ap);
	va_end(ap);
	strbuf_addstr(q, "&changes=");
	docker_urlencode(q, c.buf);
	strbuf_release(&c);
}

/* The commit's query: the derived image's name, and its config as Dockerfile instructions. */
static void commit_query(struct strbuf *q, const char *id, const char *hash, const cJSON *conf,
			 const struct image_key *k, const char *base_name)
{
	const char *path = env_value(cJSON_GetObjectItemCaseSensitive(conf, "Env"), "PATH");
	const char *user = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(conf, "User"));
	const cJSON *cmd = cJSON_GetObjectItemCaseSensitive(conf, "Cmd");
	char *cmd_text = cmd && cJSON_IsArray(cmd) ? cJSON_PrintUnformatted(cmd) : NULL;

	strbuf_addf(q, "/commit?container=%s&repo=" IMAGE_REPO "&tag=%s&pause=0&comment=", id, hash);
	docker_urlencode(q, "cellbox --libraries");
	add_change(q, "ENV PATH=" VENV "/bin:%s",
		   path ? path : "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin");
	add_change(q, "ENV VIRTUAL_ENV=" VENV);
	add_change(q, "USER %s", user && *user ? user : "root");
	if (cmd_text)
		add_change(q, "CMD %s", cmd_text);
	add_change(q, "LABEL " LABEL_LIBRARIES "=\"%s\" " LABEL_BASE "=\"%s\" "
		   "org.cellbox.base-image=\"%s\" " LABEL_WHEELS "=\"%s\" " LABEL_OWNER "=\"%s\"",
		   k->set, k->base, base_name, k->wheels, k->owner);
	/* The setup container's owner labels would be inherited: leave them empty (gc skips). */
	add_change(q, "LABEL org.cellbox.pid=\"\" org.cellbox.start=\"\" org.cellbox.host=\"\"");
	cJSON_free(cmd_text);
}

/* The body of the setup container. */
static cJSON *setup_body(const struct libraries *l, const struct libraries_env *e,
			 const char *base, const char *wheelhouse)
{
	const struct sandbox_opts none = { 0 }, *sb = e->sandbox ? e->sandbox : &none;
	cJSON *body = cJSON_CreateObject(), *cmd, *hc, *labels, *caps, *opts;
	const char *argv[8 + 64];
	size_t n = libraries_pip_args(l, wheelhouse ? WHEELHOUSE_MOUNT : NULL, argv);

	cJSON_AddStringToObject(body, "Image", base);
	cJSON_AddStringToObject(body, "User", "0:0");
	cmd = cJSON_AddArrayToObject(body, "Cmd");
	cJSON_AddItemToArray(cmd, cJSON_CreateString("python3"));
	cJSON_AddItemToArray(cmd, cJSON_CreateString("-c"));
	cJSON_AddItemToArray(cmd, cJSON_CreateString(libraries_setup_script));
	cJSON_AddItemToArray(cmd, cJSON_CreateString(VENV));
	cJSON_AddItemToArray(cmd, cJSON_CreateString(l->key));
	for (size_t i = 0; i < n; i++)
		cJSON_AddItemToArray(cmd, cJSON_CreateString(argv[i]));
	labels = cJSON_AddObjectToObject(body, "Labels");
	backend_docker_owner_labels(labels);	/* gc removes it if we die while it runs */
	hc = cJSON_AddObjectToObject(body, "HostConfig");
	{
		/* pip's last lines are read back on a failure (container_logs): 1 MB of them. */
		cJSON *log = cJSON_AddObjectToObject(hc, "LogConfig"), *conf;

		cJSON_AddStringToObject(log, "Type", "json-file");
		conf = cJSON_AddObjectToObject(log, "Config");
		cJSON_AddStringToObject(conf, "max-size", "1m");
		cJSON_AddStringToObject(conf, "max-file", "1");
	}
	/*
	 * The wall's layout: no channel here (a setup container sees only the wheelhouse,
	 * read-only), the same OCI runtime as the kernels (gVisor), and nothing of the host's
	 * beyond it; the kernels of the derived image get the channel's two parts as any.
	 */
	if (sb->runtime && *sb->runtime)
		cJSON_AddStringToObject(hc, "Runtime", sb->runtime);
	/* An allow-list is the kernels' (a proxy of their session's): a setup has none. */
	cJSON_AddStringToObject(hc, "NetworkMode", sb->network && *sb->network &&
				!egress_is_list(sb->network) ? sb->network : "none");
	if (wheelhouse) {
		cJSON *binds = cJSON_AddArrayToObject(hc, "Binds");
		char *bind = xasprintf("%s:" WHEELHOUSE_MOUNT ":ro", wheelhouse);
		cJSON_AddItemToArray(binds, cJSON_CreateString(bind));
		free(bind);
	}
	caps = cJSON_AddArrayToObject(hc, "CapDrop");
	cJSON_AddItemToArray(caps, cJSON_CreateString("ALL"));
	opts = cJSON_AddArrayToObject(hc, "SecurityOpt");
	cJSON_AddItemToArray(opts, cJSON_CreateString("no-new-privileges"));
	cJSON_AddNumberToObject(hc, "PidsLimit", 256);
	cJSON_AddNumberToObject(hc, "Memory", (double)(2ull << 30));
	cJSON_AddNumberToObject(hc, "MemorySwap", (double)(2ull << 30));
	return body;
}

/* Run the setup container to its end and commit it as `hash`; -1 with `err`. */
static int build_image(struct docker *d, const struct libraries *l, const struct libraries_env *e,
		       const char *base, const cJSON *base_img, const char *hash,
		       const struct image_key *k, const char *wheelhouse, struct strbuf *err)
{
	const cJSON *conf = cJSON_GetObjectItemCaseSensitive(base_img, "Config");
	cJSON *body = setup_body(l, e, base, wheelhouse), *reply = NULL;
	struct strbuf msg = STRBUF_INIT, path = STRBUF_INIT, out = STRBUF_INIT;
	char *id = NULL;
	long status;
	long long n;
	int rc = -1, code;

	status = docker_call(d, "POST", "/containers/create", body, &reply, &msg);
	if (status != 201) {
		strbuf_addf(err, "libraries: cannot create the setup container (HTTP %ld): %s", status,
			    msg.buf);
		goto out;
	}
	id = xstrdup(str_or_empty(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(reply, "Id"))));
	cJSON_Delete(reply);
	reply = NULL;
	strbuf_addf(&path, "/containers/%s/start", id);
	if ((status = docker_call(d, "POST", path.buf, NULL, NULL, &msg)) != 204) {
		strbuf_addf(err, "libraries: cannot start the setup container: %s", msg.buf);
		goto out;
	}
	strbuf_reset(&path);
	strbuf_addf(&path, "/containers/%s/wait", id);
	if ((status = docker_call(d, "POST", path.buf, NULL, &reply, &msg)) != 200) {
		strbuf_addf(err, "libraries: lost the setup container: %s", msg.buf);
		goto out;
	}
	if (!json_integer(cJSON_GetObjectItemCaseSensitive(reply, "StatusCode"), INT_MIN, INT_MAX,
			  &n))
		n = -1;
	code = (int)n;
	if (code != 0) {
		container_logs(d, id, &out);
		strbuf_addstr(err, "libraries: cannot install ");
		libraries_failed(l, out.buf, err);
		strbuf_addf(err, " into %s (pip exited with %d):", base, code);
		libraries_pip_reason(out.buf, err);
		goto out;
	}
	strbuf_reset(&path);
	commit_query(&path, id, hash, conf, k, base);
	strbuf_reset(&msg);
	if ((status = docker_call(d, "POST", path.buf, NULL, NULL, &msg)) != 201) {
		strbuf_addf(err, "libraries: cannot commit the image (HTTP %ld): %s", status, msg.buf);
		goto out;
	}
	rc = 0;
out:
	if (id && *id) {
		strbuf_reset(&path);
		strbuf_addf(&path, "/containers/%s?force=1&v=1", id);
		docker_call(d, "DELETE", path.buf, NULL, NULL, &msg);
	}
	cJSON_Delete(body);
	cJSON_Delete(reply);
	strbuf_release(&msg);
	strbuf_release(&path);
	strbuf_release(&out);
	free(id);
	return rc;
}

int libraries_prepare_image(const struct libraries *l, const struct libraries_env *e, char **image,
			 int *installed, struct strbuf *err)
{
	const struct sandbox_opts none = { 0 }, *sb = e->sandbox ? e->sandbox : &none;
	const char *base = sb->image && *sb->image ? sb->image : session_kernel_image();
	const char *net = sb->network && *sb->network && !egress_is_list(sb->network) ?
			  sb->network : "none";
	struct strbuf path = STRBUF_INIT, msg = STRBUF_INIT, id = STRBUF_INIT;
	cJSON *img = NULL;
	struct docker d;
	char hash[17], tag[64], wh[PATH_MAX], wheels[65] = "", owner[32], *stage = NULL;
	char *found = NULL;
	struct image_key k;
	int rc = -1, lock = -1;
	struct stat st;

	if (e->wheelhouse && (!realpath(e->wheelhouse, wh) || stat(wh, &st) < 0 ||
			      !S_ISDIR(st.st_mode))) {
		strbuf_addf(err, "libraries: the wheelhouse '%s' is not a directory", e->wheelhouse);
		return -1;
	}
	if (l->n > 64) {
		strbuf_addstr(err, "libraries: at most 64 requirements");
		return -1;
	}
	/* The wheels pip may install are read (and hashed) by the host: they are the key. */
	if (e->wheelhouse && libraries_wheels(wh, NULL, wheels, err) < 0)
		return -1;
	if (e->shared)
		snprintf(owner, sizeof(owner), "shared");
	else
		snprintf(owner, sizeof(owner), "uid:%u", (unsigned)getuid());
	if (backend_docker_connect(&d, e->backend, sb->host, err) < 0)
		return -1;
	strbuf_addstr(&path, "/images/");
	docker_urlencode(&path, base);
	strbuf_addstr(&path, "/json");
	if (docker_call(&d, "GET", path.buf, NULL, &img, &msg) != 200) {
		strbuf_addf(err, "libraries: the kernel image '%s' is not in %s (build it with "
			    "scripts/build-image): %s", base, e->backend, msg.buf);
		goto out;
	}
	k.base = str_or_empty(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(img, "Id")));
	k.set = l->key;
	k.wheels = NULL;
	k.owner = owner;
	/* No wheelhouse named: this user's (or the shared) image of the set, from any wheels. */
	if (!e->wheelhouse && (found = any_image(&d, &k)))
		goto reuse;
	k.wheels = wheels;
	strbuf_addf(&id, "%s\n%s\nwheels %s\nowner %s", *k.base ? k.base : base, l->key,
		    *wheels ? wheels : "(index)", owner);
	libraries_hash(id.buf, hash);
	snprintf(tag, sizeof(tag), IMAGE_REPO ":%s", hash);
	if (image_matches(&d, tag, &k))
		goto reuse;
	lock = libraries_lock(e->lock_dir, hash);
	if (image_matches(&d, tag, &k))
		goto reuse;
	if (!e->wheelhouse && !strcmp(net, "none")) {
		strbuf_addf(err, "libraries: installing %s needs the network or a wheelhouse, and this "
			    "sandbox has no network (network = none): give --wheelhouse DIR, or "
			    "--network bridge", l->shown);
		goto out;
	}
	/* The install reads a copy of the very bytes hashed (in the user's cache, on disk), not
	 * the wheelhouse. */
	if (e->wheelhouse) {
		char *cache = libraries_cache_dir("wheels");

		stage = libraries_wheels_stage(cache, wh, wheels, err);
		free(cache);
		if (!stage)
			goto out;
	}
	if (e->progress)
		fprintf(e->progress, "cellbox: installing %s into %s (once: kept as the image %s)\n",
			l->shown, base, tag);
	if (build_image(&d, l, e, base, img, hash, &k, stage, err) < 0)
		goto out;
	*installed = 1;
reuse:
	*image = found ? found : xstrdup(tag);
	found = NULL;
	rc = 0;
out:
	if (stage) {
		fsutil_remove_tree(stage);
		free(stage);
	}
	if (lock >= 0)
		close(lock);
	free(found);
	cJSON_Delete(img);
	strbuf_release(&path);
	strbuf_release(&msg);
	strbuf_release(&id);
	docker_release(&d);
	return rc;
}

int libraries_gc_images(const char *engine, const char *host, struct strbuf *out,
			struct strbuf *err)
{
	struct docker d;
	struct strbuf path = STRBUF_INIT, msg = STRBUF_INIT;
	cJSON *list = NULL, *img;
	int removed = 0;

	if (backend_docker_connect(&d, engine, host, err) < 0)
		return -1;
	strbuf_addstr(&path, "/images/json?filters=");
	docker_urlencode(&path, "{\"label\":[\"" LABEL_LIBRARIES "\"]}");
	if (docker_call(&d, "GET", path.buf, NULL, &list, err) != 200) {
		removed = -1;
		goto out;
	}
	cJSON_ArrayForEach(img, list) {
		const char *id = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(img, "Id"));
		const cJSON *tags = cJSON_GetObjectItemCaseSensitive(img, "RepoTags");
		const char *name = cJSON_GetStringValue(cJSON_GetArrayItem(tags, 0));
		cJSON *users = NULL;
		int n;

		if (!id)
			continue;
		strbuf_reset(&path);
		strbuf_addstr(&path, "/containers/json?all=1&filters=");
		{
			char *f = xasprintf("{\"ancestor\":[\"%s\"]}", id);
			docker_urlencode(&path, f);
			free(f);
		}
		strbuf_reset(&msg);
		if (docker_call(&d, "GET", path.buf, NULL, &users, &msg) != 200) {
			cJSON_Delete(users);
			continue;
		}
		n = cJSON_GetArraySize(users);
		cJSON_Delete(users);
		if (n) {
			strbuf_addf(out, "kept image %s: %d container%s use%s it\n", name ? name : id, n,
				    n == 1 ? "" : "s", n == 1 ? "s" : "");
			continue;
		}
		strbuf_reset(&path);
		strbuf_addf(&path, "/images/%s", id);
		strbuf_reset(&msg);
		if (docker_call(&d, "DELETE", path.buf, NULL, NULL, &msg) == 200) {
			const char *set = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(
				cJSON_GetObjectItemCaseSensitive(img, "Labels"), LABEL_LIBRARIES));
			removed++;
			strbuf_addf(out, "removed image %s (%s)\n", name ? name : id, set ? set : "?");
		} else {
			strbuf_addf(out, "kept image %s: %s\n", name ? name : id, msg.buf);
		}
	}
out:
	cJSON_Delete(list);
	strbuf_release(&path);
	strbuf_release(&msg);
	docker_release(&d);
	return removed;
}
