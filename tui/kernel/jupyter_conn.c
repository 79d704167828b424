/* The connection file a Jupyter front end writes for its kernel: jupyter.h. */
#include "jupyter.h"

#include <stdio.h>
#include <string.h>

static const char *const port_names[JUPYTER_NCHANNELS] = {
	[JUPYTER_SHELL] = "shell_port",
	[JUPYTER_IOPUB] = "iopub_port",
	[JUPYTER_STDIN] = "stdin_port",
	[JUPYTER_CONTROL] = "control_port",
	[JUPYTER_HB] = "hb_port",
};

int jupyter_conn_parse(const char *text, size_t len, struct jupyter_conn *c, struct strbuf *err)
{
	cJSON *o = cJSON_ParseWithLength(text, len);
	const char *transport, *ip, *key, *scheme;
	int rc = -1;

	memset(c, 0, sizeof(*c));
	if (!cJSON_IsObject(o)) {
		strbuf_addstr(err, "not a JSON object");
		goto out;
	}
	transport = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, "transport"));
	ip = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, "ip"));
	key = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, "key"));
	scheme = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, "signature_scheme"));
	if (!transport)
		transport = "tcp";
	if (strcmp(transport, "tcp") && strcmp(transport, "ipc")) {
		strbuf_addf(err, "transport '%.20s' is not tcp or ipc", transport);
		goto out;
	}
	if (!ip || !*ip || strlen(ip) >= sizeof(c->ip) || strpbrk(ip, " \t\n")) {
		strbuf_addstr(err, "no usable \"ip\"");
		goto out;
	}
	if (key && strlen(key) > JUPYTER_KEY_MAX) {
		strbuf_addf(err, "the key is longer than %d bytes", JUPYTER_KEY_MAX);
		goto out;
	}
	if (key && *key && (!scheme || strcmp(scheme, "hmac-sha256"))) {
		strbuf_addf(err, "signature scheme '%.30s' is not hmac-sha256",
			    scheme ? scheme : "(none)");
		goto out;
	}
	for (int ch = 0; ch < JUPYTER_NCHANNELS; ch++) {
		const cJSON *p = cJSON_GetObjectItemCaseSensitive(o, port_names[ch]);

		if (!cJSON_IsNumber(p) || p->valuedouble < 1 || p->valuedouble > 65535) {
			strbuf_addf(err, "no usable \"%s\"", port_names[ch]);
			goto out;
		}
		c->ports[ch] = p->valueint;
	}
	snprintf(c->transport, sizeof(c->transport), "%s", transport);
	snprintf(c->ip, sizeof(c->ip), "%s", ip);
	c->keylen = key ? strlen(key) : 0;
	memcpy(c->key, key ? key : "", c->keylen + 1);
	rc = 0;
out:
	cJSON_Delete(o);
	return rc;
}

int jupyter_conn_read(const char *path, struct jupyter_conn *c, struct strbuf *err)
{
	struct strbuf text = STRBUF_INIT, why = STRBUF_INIT;
	int rc = -1;

	if (strbuf_read_file(&text, path, JUPYTER_CONN_MAX) < 0) {
		strbuf_addf(err, "cannot read connection file '%s': %m", path);
		goto out;
	}
	if (jupyter_conn_parse(text.buf, text.len, c, &why) < 0) {
		strbuf_addf(err, "connection file '%s': %s", path, why.buf);
		goto out;
	}
	rc = 0;
out:
	strbuf_release(&text);
	strbuf_release(&why);
	return rc;
}

void jupyter_conn_endpoint(const struct jupyter_conn *c, enum jupyter_channel ch, char *out,
			   size_t size)
{
	if (!strcmp(c->transport, "ipc"))
		snprintf(out, size, "ipc://%s-%d", c->ip, c->ports[ch]);
	else
		snprintf(out, size, "tcp://%s:%d", c->ip, c->ports[ch]);
}
