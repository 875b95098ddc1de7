/*
 * failing: a test plugin whose prompt.render fails as the host data "mode"
 * asks: "error" returns a plugin error, "trap" writes a line to stderr and
 * traps; anything else renders "fine".
 */
#include "weir.h"

#include <stdio.h>

static int render(const weir_render_request *req, weir_buf *out, weir_buf *err) {
	weir_str mode = weir_host_data(req, "mode");
	if (weir_str_eq(mode, "error")) {
		weir_buf_puts(err, "asked to fail");
		return WEIR_STATUS_PLUGIN_ERROR;
	}
	if (weir_str_eq(mode, "trap")) {
		fprintf(stderr, "trapping as asked\n");
		fflush(stderr);
		__builtin_trap();
	}
	weir_buf_puts(out, "fine");
	return WEIR_STATUS_OK;
}

const struct weir_plugin weir_plugin = {
	.name = "failing",
	.version = "0.1.0",
	.render_prompt = render,
};
