/*
 * compaction: an example compaction plugin written in C against weir.h.
 *
 * Before a step, when the surface holds more than "maxNodes" nodes, and
 * always on manual and overflow compaction, it asks the host's model to
 * summarize every node after the system prompt except the newest one, and
 * proposes one compaction bracket:
 *
 *   compaction/start   {compactionId, turn}
 *   compaction/summary {compactionId, summary, shadowedSeqs}
 *   user/message       the checkpoint, replacing those nodes, citing them
 *                      and the two events before it
 *   compaction/end     {compactionId}
 *
 * The checkpoint's source is {"kind":"plugin","plugin":<the configured
 * name>,"compactionId":...}, as the host requires. The range never ends
 * between an assistant message's tool calls and their results (the node
 * after it is never a tool result), and the plugin proposes nothing when
 * the checkpoint would not be smaller than what it replaces. Its state blob
 * counts the compactions it proposed, in decimal.
 *
 * Configuration (JSON): {"maxNodes": 8}.
 */
#include "weir.h"

#include <string.h>

static int64_t max_nodes = 8;

static int configure(weir_str config, weir_buf *err) {
	max_nodes = 8;
	if (config.len == 0)
		return WEIR_STATUS_OK;
	int rc = weir_json_int(config, "maxNodes", &max_nodes);
	if (rc < 0 || max_nodes < 1) {
		weir_buf_puts(err, "compaction config: maxNodes must be an integer of at least 1");
		return WEIR_STATUS_PLUGIN_ERROR;
	}
	return WEIR_STATUS_OK;
}

/* host_failure reports a failed host import as the plugin's error. */
static int host_failure(weir_buf *err, const char *what, int code) {
	weir_str why = weir_host_error();
	weir_buf_puts(err, what);
	weir_buf_puts(err, ": ");
	weir_buf_puts(err, weir_host_code_name(code));
	if (why.len) {
		weir_buf_puts(err, ": ");
		weir_buf_put(err, why.data, why.len);
	}
	return WEIR_STATUS_PLUGIN_ERROR;
}

static int64_t parse_count(weir_str s) {
	int64_t v = 0;
	for (size_t i = 0; i < s.len; i++) {
		if (s.data[i] < '0' || s.data[i] > '9' || v > 1000000000)
			return 0;
		v = v * 10 + (s.data[i] - '0');
	}
	return v;
}

/* Per-call scratch, reused. */
static weir_buf msgs;     /* the shadowed messages' JSON, back to back */
static weir_buf id;       /* the compaction id */
static weir_buf data;     /* one proposal's data */
static weir_buf summary;  /* the model's summary */
static weir_buf checkpoint;
static weir_buf state;

static int compact(int method, const weir_compaction_request *req, weir_compaction_result *res, weir_buf *err) {
	weir_node *nodes;
	size_t n;
	int rc = weir_surface_nodes(&nodes, &n);
	if (rc < 0)
		return host_failure(err, "surface_nodes", rc);
	if (method == WEIR_METHOD_COMPACTION_PRESTEP && (int64_t)n <= max_nodes)
		return WEIR_STATUS_OK;
	size_t first = n && weir_str_eq(nodes[0].type, "system/message") ? 1 : 0;
	if (n < first + 3)
		return WEIR_STATUS_OK; /* at most one node to replace besides the newest */
	size_t last = n - 2;
	/* Never separate tool calls from their results. */
	while (last > first && weir_str_eq(nodes[last + 1].type, "tool/result"))
		last--;
	if (last <= first || weir_str_eq(nodes[first].type, "tool/result"))
		return WEIR_STATUS_OK;
	size_t count = last - first + 1;

	weir_generations gen;
	if ((rc = weir_generations_get(&gen)) < 0)
		return host_failure(err, "generations", rc);

	/* Copy the messages out: every import answer reuses one buffer. */
	static size_t offs[1025];
	if (count > 1024)
		count = 1024, last = first + count - 1;
	int64_t shadowed_bytes = 0;
	msgs.len = 0;
	for (size_t i = 0; i < count; i++) {
		weir_str m;
		if ((rc = weir_message(nodes[first + i].seq, &m)) < 0)
			return host_failure(err, "message", rc);
		offs[i] = msgs.len;
		weir_buf_put(&msgs, m.data, m.len);
		shadowed_bytes += (int64_t)m.len;
	}
	offs[count] = msgs.len;
	static weir_str parts[1024];
	for (size_t i = 0; i < count; i++) {
		parts[i].data = msgs.data + offs[i];
		parts[i].len = offs[i + 1] - offs[i];
	}

	static const char instruction[] = "Summarize the conversation so far in a few sentences.";
	weir_summarize_request sreq = {0};
	sreq.messages = parts;
	sreq.nmessages = count;
	sreq.instruction.data = (const uint8_t *)instruction;
	sreq.instruction.len = sizeof instruction - 1;
	sreq.max_tokens = 512;
	weir_str text;
	if ((rc = weir_summarize(&sreq, &text)) < 0)
		return host_failure(err, "summarize", rc);
	summary.len = 0;
	weir_buf_put(&summary, text.data, text.len);

	id.len = 0;
	weir_buf_puts(&id, "checkpoint-");
	weir_buf_put_int(&id, gen.log_length);

	weir_str name = weir_plugin_name();
	checkpoint.len = 0;
	weir_buf_puts(&checkpoint, "{\"id\":");
	weir_buf_put_json_string(&checkpoint, id.data, id.len);
	weir_buf_puts(&checkpoint, ",\"role\":\"user\",\"source\":{\"kind\":\"plugin\",\"plugin\":");
	weir_buf_put_json_string(&checkpoint, name.data, name.len);
	weir_buf_puts(&checkpoint, ",\"compactionId\":");
	weir_buf_put_json_string(&checkpoint, id.data, id.len);
	weir_buf_puts(&checkpoint, "},\"content\":[{\"type\":\"text\",\"text\":");
	static weir_buf body;
	body.len = 0;
	weir_buf_puts(&body, "Summary of the earlier conversation:\n");
	weir_buf_put(&body, summary.data, summary.len);
	weir_buf_put_json_string(&checkpoint, body.data, body.len);
	weir_buf_puts(&checkpoint, "}]}");
	if ((int64_t)checkpoint.len >= shadowed_bytes)
		return WEIR_STATUS_OK; /* it would not shrink the surface */

	/* compaction/start */
	data.len = 0;
	weir_buf_puts(&data, "{\"compactionId\":");
	weir_buf_put_json_string(&data, id.data, id.len);
	weir_buf_puts(&data, ",\"turn\":");
	weir_buf_put_int(&data, req->turn);
	weir_buf_puts(&data, "}");
	weir_proposal p = {0};
	p.type = "compaction/start";
	p.data = data.data;
	p.data_len = data.len;
	weir_propose(res, &p);

	/* compaction/summary */
	data.len = 0;
	weir_buf_puts(&data, "{\"compactionId\":");
	weir_buf_put_json_string(&data, id.data, id.len);
	weir_buf_puts(&data, ",\"summary\":");
	weir_buf_put_json_string(&data, summary.data, summary.len);
	weir_buf_puts(&data, ",\"shadowedSeqs\":[");
	for (size_t i = 0; i < count; i++) {
		if (i)
			weir_buf_putc(&data, ',');
		weir_buf_put_int(&data, nodes[first + i].seq);
	}
	weir_buf_puts(&data, "]}");
	memset(&p, 0, sizeof p);
	p.type = "compaction/summary";
	p.data = data.data;
	p.data_len = data.len;
	weir_propose(res, &p);

	/* the checkpoint: cites the start and summary (the next two seqs) and
	 * every node it shadows */
	static int64_t sources[1026];
	sources[0] = gen.log_length;
	sources[1] = gen.log_length + 1;
	for (size_t i = 0; i < count; i++)
		sources[2 + i] = nodes[first + i].seq;
	memset(&p, 0, sizeof p);
	p.type = "user/message";
	p.data = checkpoint.data;
	p.data_len = checkpoint.len;
	p.intent = WEIR_INTENT_REPLACE;
	p.start_seq = nodes[first].seq;
	p.end_seq = nodes[last].seq;
	p.has_sources = 1;
	p.sources = sources;
	p.nsources = count + 2;
	weir_propose(res, &p);

	/* compaction/end */
	data.len = 0;
	weir_buf_puts(&data, "{\"compactionId\":");
	weir_buf_put_json_string(&data, id.data, id.len);
	weir_buf_puts(&data, "}");
	memset(&p, 0, sizeof p);
	p.type = "compaction/end";
	p.data = data.data;
	p.data_len = data.len;
	weir_propose(res, &p);

	state.len = 0;
	weir_buf_put_int(&state, parse_count(req->state) + 1);
	weir_set_state(res, state.data, state.len);
	return WEIR_STATUS_OK;
}

const struct weir_plugin weir_plugin = {
	.name = "c-compaction",
	.version = "0.1.0",
	.configure = configure,
	.compact = compact,
};
