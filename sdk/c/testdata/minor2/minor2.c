/*
 * minor2: a prompt and compaction provider that uses every minor-2 part of
 * the ABI the SDK wraps: render_on_change, an ignorable event type and the
 * optional compaction.region method in describe, the event import, and
 * idle_below_tokens in a prestep result.
 */
#include "weir.h"

static int render(const weir_render_request *req, weir_buf *out, weir_buf *err) {
	(void)err;
	for (size_t i = 0; i < req->nsections; i++)
		weir_buf_put(out, req->sections[i].text.data, req->sections[i].text.len);
	return WEIR_STATUS_OK;
}

static int compact(int method, const weir_compaction_request *req, weir_compaction_result *res, weir_buf *err) {
	if (method == WEIR_METHOD_COMPACTION_PRESTEP) {
		weir_set_idle_below_tokens(res, 1000);
		return WEIR_STATUS_OK;
	}
	if (method != WEIR_METHOD_COMPACTION_REGION)
		return WEIR_STATUS_OK;
	/* Report the region and the data of its first event, as the host
	 * stored it, in the declared ignorable event. */
	weir_event_data ev;
	int rc = weir_event(req->region_start_seq, &ev);
	if (rc < 0) {
		weir_buf_puts(err, "event: ");
		weir_str why = weir_host_error();
		weir_buf_put(err, why.data, why.len);
		return WEIR_STATUS_PLUGIN_ERROR;
	}
	weir_buf data = {0};
	weir_buf_puts(&data, "{\"start\":");
	weir_buf_put_int(&data, req->region_start_seq);
	weir_buf_puts(&data, ",\"end\":");
	weir_buf_put_int(&data, req->region_end_seq);
	weir_buf_puts(&data, ",\"type\":");
	weir_buf_put_json_string(&data, ev.type.data, ev.type.len);
	weir_buf_puts(&data, ",\"data\":");
	weir_buf_put(&data, ev.data.data, ev.data.len);
	weir_buf_puts(&data, "}");
	weir_proposal p = {.type = "minor2/region", .data = data.data, .data_len = data.len, .ignorable = 1};
	weir_propose(res, &p);
	weir_buf_free(&data);
	return WEIR_STATUS_OK;
}

static const char *const events[] = {"minor2/region"};

const struct weir_plugin weir_plugin = {
	.name = "c-minor2",
	.version = "0.1.0",
	.render_prompt = render,
	.compact = compact,
	.events = events,
	.nevents = 1,
	.render_on_change = 1,
	.compaction_region = 1,
};
