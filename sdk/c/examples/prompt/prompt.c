/*
 * prompt: an example system-prompt plugin written in C against weir.h.
 *
 * It renders the host's prompt sections (the non-blank ones, trimmed,
 * separated by a blank line, as the built-in renderer does), then the
 * configured "footer" line, then "Today's date: <date>." when the host
 * passes a date in its host data. A plugin has no clock: the date is data,
 * so a replay renders the same prompt.
 *
 * Configuration (JSON): {"footer": "Answer in English."}; an empty or
 * absent footer adds nothing.
 */
#include "weir.h"

static weir_buf footer;

static int is_space(uint8_t c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

static weir_str trim(weir_str s) {
	while (s.len && is_space(s.data[0])) {
		s.data++;
		s.len--;
	}
	while (s.len && is_space(s.data[s.len - 1]))
		s.len--;
	return s;
}

/* add appends a non-blank part, after a blank line when out is not empty. */
static void add(weir_buf *out, weir_str part) {
	part = trim(part);
	if (!part.len)
		return;
	if (out->len)
		weir_buf_puts(out, "\n\n");
	weir_buf_put(out, part.data, part.len);
}

static int configure(weir_str config, weir_buf *err) {
	footer.len = 0;
	if (trim(config).len == 0)
		return WEIR_STATUS_OK;
	if (weir_json_string(config, "footer", &footer) < 0) {
		weir_buf_puts(err, "prompt config: not a JSON object");
		return WEIR_STATUS_PLUGIN_ERROR;
	}
	return WEIR_STATUS_OK;
}

static int render(const weir_render_request *req, weir_buf *out, weir_buf *err) {
	(void)err;
	for (size_t i = 0; i < req->nsections; i++)
		add(out, req->sections[i].text);
	weir_str f = {footer.data, footer.len};
	add(out, f);
	weir_str date = trim(weir_host_data(req, "date"));
	if (date.len) {
		if (out->len)
			weir_buf_puts(out, "\n\n");
		weir_buf_puts(out, "Today's date: ");
		weir_buf_put(out, date.data, date.len);
		weir_buf_puts(out, ".");
	}
	return WEIR_STATUS_OK;
}

const struct weir_plugin weir_plugin = {
	.name = "c-prompt",
	.version = "0.1.0",
	.configure = configure,
	.render_prompt = render,
};
