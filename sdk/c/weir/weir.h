/*
 * weir.h: the C SDK of the Weir plugin ABI, version 1 (docs/abi.md).
 *
 * A plugin is one C file that includes this header and defines the global
 * `weir_plugin` (a struct weir_plugin naming the plugin and its provider
 * callbacks). weir.c, compiled with it, provides the required exports
 * (weir_abi_version, weir_input, weir_call), decodes the host's request
 * frames, frames the results, and wraps the host imports with the
 * (buf, limit) retry. Build (see README.md):
 *
 *   clang --target=wasm32-wasi -mbulk-memory -O2 -c -o plugin.o plugin.c
 *   clang --target=wasm32-wasi -mbulk-memory -O2 -c -o weir.o weir.c
 *   clang --target=wasm32-wasi -mexec-model=reactor -Wl,--strip-all \
 *     -o plugin.wasm plugin.o weir.o
 *
 * (no -O on the link: clang would run binaryen's wasm-opt, which may
 * reject the bulk-memory instructions)
 *
 * Byte strings are (pointer, length) pairs, never NUL-terminated unless a
 * comment says so. Decoded requests point into the input buffer: they are
 * valid until the callback returns.
 */
#ifndef WEIR_H
#define WEIR_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define WEIR_ABI_MAJOR 1
#define WEIR_ABI_MINOR 2
#define WEIR_SDK_VERSION "weir-c/0.1.0"

/* Response.status (weir.proto Status). */
enum weir_status {
	WEIR_STATUS_OK = 0,
	WEIR_STATUS_PLUGIN_ERROR = 1,
	WEIR_STATUS_BAD_REQUEST = 2,
	WEIR_STATUS_PANIC = 3,
	WEIR_STATUS_UNSUPPORTED = 4,
};

/* Provider kinds (weir.proto Kind). */
enum weir_kind {
	WEIR_KIND_SYSTEM_PROMPT = 1,
	WEIR_KIND_COMPACTION = 2,
	WEIR_KIND_TOKEN_METER = 3,
};

/* Dispatcher methods (docs/abi.md 4.2). */
enum weir_method {
	WEIR_METHOD_INIT = 1,
	WEIR_METHOD_DESCRIBE = 2,
	WEIR_METHOD_PROMPT_RENDER = 16,
	WEIR_METHOD_COMPACTION_PRESTEP = 32,
	WEIR_METHOD_COMPACTION_MANUAL = 33,
	WEIR_METHOD_COMPACTION_OVERFLOW = 34,
	WEIR_METHOD_COMPACTION_REGION = 35, /* minor 2, optional: set weir_plugin.compaction_region */
	WEIR_METHOD_METER_OBSERVE = 48,
	WEIR_METHOD_METER_MEASURE = 49,
};

/* Host import status codes (docs/abi.md 5.1); also returned by the
 * wrappers below. */
enum weir_host_code {
	WEIR_HOST_NOT_GRANTED = -1,
	WEIR_HOST_NOT_FOUND = -2,
	WEIR_HOST_BAD_ARGUMENT = -3,
	WEIR_HOST_FAILED = -4,
	WEIR_HOST_CANCELLED = -5,
	WEIR_HOST_NO_MEMORY = -100, /* SDK: malloc failed (not a host code) */
	WEIR_HOST_MALFORMED = -101, /* SDK: the host's answer did not decode */
};

/* ------------------------------------------------------------ byte buffers */

/* A growable byte buffer. Zero-initialise it ({0}); weir_buf_free releases
 * it. The SDK's own buffers are grow-only and reused from call to call. */
typedef struct weir_buf {
	uint8_t *data;
	size_t len;
	size_t cap;
} weir_buf;

/* weir_buf_reserve makes room for n more bytes; 0 on success, -1 when
 * malloc failed. */
int weir_buf_reserve(weir_buf *b, size_t n);
void weir_buf_put(weir_buf *b, const void *p, size_t n);
void weir_buf_puts(weir_buf *b, const char *s); /* NUL-terminated s */
void weir_buf_putc(weir_buf *b, uint8_t c);
void weir_buf_put_int(weir_buf *b, int64_t v); /* decimal */
/* weir_buf_put_json_string appends s as a quoted, escaped JSON string. */
void weir_buf_put_json_string(weir_buf *b, const uint8_t *s, size_t n);
void weir_buf_free(weir_buf *b);
/* weir_oom is set when an append ran out of memory (the bytes are dropped);
 * the dispatcher then answers the call with a plugin error and clears it. */
extern int weir_oom;

/* A byte string pointing into someone else's memory. */
typedef struct weir_str {
	const uint8_t *data;
	size_t len;
} weir_str;

/* weir_str_eq compares s with the NUL-terminated lit. */
int weir_str_eq(weir_str s, const char *lit);

/* ------------------------------------------------------------ protobuf wire */

enum weir_wire_type {
	WEIR_WIRE_VARINT = 0,
	WEIR_WIRE_I64 = 1,
	WEIR_WIRE_LEN = 2,
	WEIR_WIRE_I32 = 5,
};

/* Encoding. Fields are written in the order of the calls. */
void weir_pb_varint(weir_buf *b, uint64_t v);
void weir_pb_tag(weir_buf *b, uint32_t field, int wire_type);
/* weir_pb_uint writes a varint field; weir_pb_int an int64 one (two's
 * complement, as proto3 int64). Both skip 0 unless always is set. */
void weir_pb_uint(weir_buf *b, uint32_t field, uint64_t v, int always);
void weir_pb_int(weir_buf *b, uint32_t field, int64_t v, int always);
/* weir_pb_bytes writes a length-delimited field (string, bytes or an
 * already encoded message), even when empty. */
void weir_pb_bytes(weir_buf *b, uint32_t field, const void *p, size_t n);
/* weir_pb_begin opens a sub-message of field; weir_pb_end closes the one
 * opened at mark, writing its length in front of it. */
size_t weir_pb_begin(weir_buf *b, uint32_t field);
void weir_pb_end(weir_buf *b, size_t mark);

/* Decoding: a reader walks the fields of one message. */
typedef struct weir_reader {
	const uint8_t *p;
	const uint8_t *end;
	int err; /* set on malformed input; the loop then stops */
} weir_reader;

/* One field: number, wire type, and its value (varint/fixed in u, a
 * length-delimited payload in s). */
typedef struct weir_field {
	uint32_t num;
	int wire_type;
	uint64_t u;
	weir_str s;
} weir_field;

weir_reader weir_reader_of(const uint8_t *p, size_t n);
/* weir_next reads the next field: 1 when it read one, 0 at the end or on
 * malformed input (r->err set). Unknown fields are the caller's to skip
 * (just ignore them). */
int weir_next(weir_reader *r, weir_field *f);

/* ------------------------------------------------------------ requests */

typedef struct weir_section {
	weir_str key;
	weir_str text;
} weir_section;

typedef struct weir_kv {
	weir_str key;
	weir_str value;
} weir_kv;

typedef struct weir_route {
	weir_str provider;
	weir_str model;
} weir_route;

typedef struct weir_render_request {
	weir_section *sections;
	size_t nsections;
	weir_route route;
	weir_kv *host_data;
	size_t nhost_data;
} weir_render_request;

/* weir_host_data returns the first value of key in the request's host data
 * (empty when absent). */
weir_str weir_host_data(const weir_render_request *req, const char *key);

typedef struct weir_compaction_request {
	int64_t turn; /* open turn, 0 when none */
	int64_t step; /* open step, 0 when none */
	weir_route route;
	int64_t context_window;     /* 0: unknown */
	int64_t default_max_tokens; /* 0: unknown */
	weir_str command_id;
	weir_str failure_code;
	weir_str failure_message;
	weir_str state; /* the plugin's stored state blob */
	/* compaction.region (minor 2): the first and last seq of the current
	 * surface nodes to compact, inclusive; 0 for the other methods. */
	int64_t region_start_seq;
	int64_t region_end_seq;
} weir_compaction_request;

/* ------------------------------------------------------------ results */

enum weir_intent {
	WEIR_INTENT_NONE = 0, /* a log-only event */
	WEIR_INTENT_APPEND = 1,
	WEIR_INTENT_REPLACE = 2,
};

typedef struct weir_proposal {
	const char *type; /* NUL-terminated, "family/name" */
	const uint8_t *data; /* the event's data, JSON */
	size_t data_len;
	int intent;
	int64_t start_seq, end_seq; /* WEIR_INTENT_REPLACE */
	int has_sources;            /* absent differs from empty */
	const int64_t *sources;
	size_t nsources;
	int ignorable;
} weir_proposal;

/* A compaction callback appends its result here. */
typedef struct weir_compaction_result {
	weir_buf *msg; /* the encoded CompactionResult so far */
	size_t nproposals;
} weir_compaction_result;

/* weir_propose appends a proposal; weir_set_state sets the new state blob
 * (never called: the host keeps the stored one). */
void weir_propose(weir_compaction_result *res, const weir_proposal *p);
void weir_set_state(weir_compaction_result *res, const void *state, size_t n);
/* weir_set_idle_below_tokens (minor 2, compaction.prestep only) promises
 * the plugin has nothing to do before a step while the measured total
 * stays below tokens, the latest request header, route and limits are
 * those of this call and its state is unchanged; the host may skip
 * compaction.prestep while that holds (CompactionResult.idle_below_tokens). */
void weir_set_idle_below_tokens(weir_compaction_result *res, int64_t tokens);

/* ------------------------------------------------------------ the plugin */

/*
 * Callbacks return WEIR_STATUS_OK or another status; on failure they write
 * the reason into err (text). Any callback may be NULL: a NULL provider
 * callback means the plugin is not that kind of provider.
 */
struct weir_plugin {
	const char *name;
	const char *version;
	/* configure gets the plugin configuration (JSON bytes, maybe empty). */
	int (*configure)(weir_str config, weir_buf *err);
	/* render_prompt writes the rendered prompt (UTF-8 text) into out. */
	int (*render_prompt)(const weir_render_request *req, weir_buf *out, weir_buf *err);
	/* compact handles the three compaction methods; method says which. */
	int (*compact)(int method, const weir_compaction_request *req, weir_compaction_result *res, weir_buf *err);
	/* meter handles meter.observe and meter.measure (WEIR_METHOD_METER_*)
	 * at the wire level: request is the encoded ObserveRequest or
	 * MeasureRequest (read it with weir_reader), and the callback appends
	 * the encoded ObserveResult or Measurement to result with the
	 * weir_pb_* writers. Set it to make the plugin a token meter. */
	int (*meter)(int method, weir_str request, weir_buf *result, weir_buf *err);
	/* Ignorable event types the plugin may propose (describe, minor 2). */
	const char *const *events;
	size_t nevents;
	/* render_on_change (describe, minor 2): render_prompt is a pure
	 * function of its request and the configuration, so the host may reuse
	 * the last prompt while the request is byte for byte the last one. */
	int render_on_change;
	/* warm_state (describe, minor 2): the meter understands state keys
	 * (ObserveRequest/MeasureRequest state_key and the rest). */
	int warm_state;
	/* compaction_region (describe methods, minor 2): compact also handles
	 * WEIR_METHOD_COMPACTION_REGION, with req->region_start_seq and
	 * req->region_end_seq set. */
	int compaction_region;
};

/* The plugin defines this. */
extern const struct weir_plugin weir_plugin;

/* weir_plugin_name is the name the host configured the plugin under (from
 * init; it may differ from weir_plugin.name). Messages the plugin proposes
 * must carry the source {"kind":"plugin","plugin":<this name>}. */
weir_str weir_plugin_name(void);

/* ------------------------------------------------------------ host imports */

/*
 * The wrappers run the (buf, limit) protocol: they call the import with the
 * SDK's shared answer buffer, grow it when the host asks for more, and
 * retry. On success they return the length (>= 0) and set *out to the
 * answer, which stays valid until the next import call. On failure they
 * return a negative code (enum weir_host_code); weir_host_error() then
 * holds the host's reason (last_error).
 */
typedef struct weir_node {
	int64_t seq;
	weir_str type;
	weir_str role;
	int64_t size; /* bytes of the node's message JSON */
	weir_str content_hash;
	int has_tokens;
	int64_t tokens;
} weir_node;

/* weir_surface_nodes decodes the current surface into a malloc'd array the
 * SDK owns (valid until the next weir_surface_nodes call); *n gets the
 * count. */
int weir_surface_nodes(weir_node **nodes, size_t *n);
int weir_message(int64_t seq, weir_str *json);
int weir_header(weir_str *json);

/* The committed event at seq, on the surface or not (the event import,
 * minor 2; EventData). data is the event's data member as stored (JSON),
 * e.g. a tool result's turn and step. */
typedef struct weir_event_data {
	int64_t seq;
	weir_str type;
	weir_str data;
} weir_event_data;

int weir_event(int64_t seq, weir_event_data *ev);

typedef struct weir_generations {
	int64_t replace;
	int64_t content;
	int64_t log_length; /* the seq the next event will get */
} weir_generations;

int weir_generations_get(weir_generations *g);

/* weir_measure returns the meter's measurement total_tokens and
 * surface_tokens; the raw Measurement message is in *raw for other fields. */
int weir_measure(int64_t *total_tokens, int64_t *surface_tokens, weir_str *raw);

typedef struct weir_summarize_request {
	const weir_str *messages; /* Message JSON values, in order */
	size_t nmessages;
	weir_str tools; /* tools JSON array, may be empty */
	weir_str instruction;
	weir_route route; /* empty: the host's default */
	int64_t max_tokens; /* 0: host default */
} weir_summarize_request;

/* weir_summarize runs the host's model call; *text gets the model's text
 * blocks concatenated (valid until the next import call). */
int weir_summarize(const weir_summarize_request *req, weir_str *text);

/* weir_count_tokens returns the token count (>= 0) or a negative code. */
int64_t weir_count_tokens(const char *tokenizer, const uint8_t *text, size_t n);

/* weir_host_error is the reason of the last failed wrapper call (text, may
 * be empty). */
weir_str weir_host_error(void);

/* weir_host_code_name names a code ("not granted", ...). */
const char *weir_host_code_name(int code);

/* ------------------------------------------------------------ JSON helper */

/* weir_json_string finds the string member key of the top-level JSON
 * object json and appends its unescaped value to out: 1 when found, 0 when
 * absent or not a string, -1 when json is not an object. \uXXXX escapes
 * are decoded to UTF-8 (surrogate pairs included). */
int weir_json_string(weir_str json, const char *key, weir_buf *out);

/* weir_json_int finds the integer member key of the top-level JSON object
 * json: 1 when found (*v set), 0 when absent, -1 when json is not an
 * object or the member is not an integer that fits int64. */
int weir_json_int(weir_str json, const char *key, int64_t *v);

#ifdef __cplusplus
}
#endif

#endif /* WEIR_H */
