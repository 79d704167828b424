/* replay -p, -r, -f: papermill's parameters, injected into the notebook (nbparams.h). */
#include "replay_jobs.h"

#include <errno.h>
#include <string.h>

#include "kernel.h"
#include "nbparams.h"

/* The options' parameters in papermill's order: files, then -p, then -r. -1 after saying why. */
static int collect(const struct cli_args *args, struct nbparam *p, int *any)
{
	struct strbuf err = STRBUF_INIT, text = STRBUF_INIT;
	const char *v, *second;
	int rc = -1;

	*any = 0;
	for (size_t k = 0; (v = cli_value_at(args, "parameters-file", k)); k++) {
		*any = 1;
		strbuf_reset(&text);
		if (strbuf_read_file(&text, v, NBPARAMS_YAML_MAX + 1) < 0) {
			if (errno == EFBIG)
				msg_error("replay: %s: bigger than %zu bytes", v, NBPARAMS_YAML_MAX);
			else
				msg_error("replay: cannot read '%s': %s", v, strerror(errno));
			goto out;
		}
		if (nbparams_load_yaml(p, text.buf, text.len, v, &err) < 0)
			goto fail;
	}
	for (size_t k = 0; (v = cli_pair_at(args, "parameters", k, &second)); k++) {
		*any = 1;
		if (nbparams_set(p, v, second, NBPARAM_TYPED, &err) < 0)
			goto fail;
	}
	for (size_t k = 0; (v = cli_pair_at(args, "parameters-raw", k, &second)); k++) {
		*any = 1;
		if (nbparams_set(p, v, second, NBPARAM_RAW, &err) < 0)
			goto fail;
	}
	rc = 0;
	goto out;
fail:
	msg_error("replay: %s", err.buf);
out:
	strbuf_release(&err);
	strbuf_release(&text);
	return rc;
}

int replay_params_check(const struct cli_args *args)
{
	struct nbparam p;
	int any, rc;

	nbparams_init(&p);
	rc = collect(args, &p, &any);
	nbparams_release(&p);
	return rc;
}

int replay_params_inject(const struct cli_args *args, const char *kernel, cJSON *nb,
			 const char *file)
{
	const struct kernel_def *k = kernel_find(kernel ? kernel : "python");
	struct strbuf err = STRBUF_INIT;
	struct nbparam p;
	int any, rc;

	nbparams_init(&p);
	rc = collect(args, &p, &any);
	/* papermill parameterizes only when there are parameters: -f of an empty file is none. */
	if (rc == 0 && p.n) {
		rc = nbparams_inject(nb, &p, k ? k->language : "python", &err);
		if (rc < 0)
			msg_error("replay: %s: %s", file, err.buf);
		else if (rc == 0)
			msg_error("replay: warning: %s has no cell tagged 'parameters': the parameters go first",
				 file);
		else if (rc > 1)
			msg_error("replay: warning: %s has %d cells tagged 'parameters': the parameters go "
				 "after the first, as papermill puts them", file, rc);
		rc = rc < 0 ? -1 : 0;
	}
	(void)any;
	nbparams_release(&p);
	strbuf_release(&err);
	return rc;
}
