/*
 * A system-prompt plugin: the host's prompt sections joined by a blank
 * line, then the configured "footer" (the plugin's config.footer).
 */
#include "weir.h"

static weir_buf footer;

static int configure(weir_str config, weir_buf *err) {
	footer.len = 0;
	if (config.len == 0)
		return WEIR_STATUS_OK;
	if (weir_json_string(config, "footer", &footer) < 0) {
		weir_buf_puts(err, "config: not a JSON object");
		return WEIR_STATUS_PLUGIN_ERROR;
	}
	return WEIR_STATUS_OK;
}

static int render(const weir_render_request *req, weir_buf *out, weir_buf *err) {
	(void)err;
	for (size_t i = 0; i < req->nsections; i++) {
		weir_str t = req->sections[i].text;
		if (t.len == 0)
			continue;
		if (out->len)
			weir_buf_puts(out, "\n\n");
		weir_buf_put(out, t.data, t.len);
	}
	if (footer.len) {
		if (out->len)
			weir_buf_puts(out, "\n\n");
		weir_buf_put(out, footer.data, footer.len);
	}
	return WEIR_STATUS_OK;
}

const struct weir_plugin weir_plugin = {
	.name = "my-prompt",
	.version = "0.1.0",
	.configure = configure,
	.render_prompt = render,
	.render_on_change = 1, /* the prompt depends on the request and configuration only */
};
