/*
 * weir.c: the implementation of weir.h, the C SDK of the Weir plugin ABI
 * version 1 (docs/abi.md). Compile it with the plugin's own source.
 */
#include "weir.h"

#include <stdlib.h>
#include <string.h>

#define WEIR_EXPORT(name) __attribute__((export_name(name)))
#define WEIR_IMPORT(name) __attribute__((import_module("weir"), import_name(name)))

int weir_oom;

/* ------------------------------------------------------------ byte buffers */

int weir_buf_reserve(weir_buf *b, size_t n) {
	if (b->cap - b->len >= n)
		return 0;
	size_t want = b->cap ? b->cap * 2 : 256;
	while (want - b->len < n)
		want *= 2;
	uint8_t *p = realloc(b->data, want);
	if (!p) {
		weir_oom = 1;
		return -1;
	}
	b->data = p;
	b->cap = want;
	return 0;
}

void weir_buf_put(weir_buf *b, const void *p, size_t n) {
	if (n == 0 || weir_buf_reserve(b, n) != 0)
		return;
	memcpy(b->data + b->len, p, n);
	b->len += n;
}

void weir_buf_puts(weir_buf *b, const char *s) { weir_buf_put(b, s, strlen(s)); }

void weir_buf_putc(weir_buf *b, uint8_t c) { weir_buf_put(b, &c, 1); }

void weir_buf_put_int(weir_buf *b, int64_t v) {
	char tmp[24];
	size_t i = sizeof tmp;
	uint64_t u = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
	do {
		tmp[--i] = (char)('0' + u % 10);
		u /= 10;
	} while (u);
	if (v < 0)
		tmp[--i] = '-';
	weir_buf_put(b, tmp + i, sizeof tmp - i);
}

void weir_buf_put_json_string(weir_buf *b, const uint8_t *s, size_t n) {
	static const char hex[] = "0123456789abcdef";
	weir_buf_putc(b, '"');
	size_t run = 0; /* start of the pending unescaped run */
	for (size_t i = 0; i < n; i++) {
		uint8_t c = s[i];
		if (c >= 0x20 && c != '"' && c != '\\')
			continue;
		weir_buf_put(b, s + run, i - run);
		run = i + 1;
		switch (c) {
		case '"': weir_buf_puts(b, "\\\""); break;
		case '\\': weir_buf_puts(b, "\\\\"); break;
		case '\n': weir_buf_puts(b, "\\n"); break;
		case '\r': weir_buf_puts(b, "\\r"); break;
		case '\t': weir_buf_puts(b, "\\t"); break;
		default: {
			char u[6] = {'\\', 'u', '0', '0', hex[c >> 4], hex[c & 15]};
			weir_buf_put(b, u, 6);
		}
		}
	}
	weir_buf_put(b, s + run, n - run);
	weir_buf_putc(b, '"');
}

void weir_buf_free(weir_buf *b) {
	free(b->data);
	b->data = NULL;
	b->len = b->cap = 0;
}

int weir_str_eq(weir_str s, const char *lit) {
	size_t n = strlen(lit);
	return s.len == n && (n == 0 || memcmp(s.data, lit, n) == 0);
}

/* ------------------------------------------------------------ protobuf wire */

void weir_pb_varint(weir_buf *b, uint64_t v) {
	uint8_t tmp[10];
	size_t n = 0;
	while (v >= 0x80) {
		tmp[n++] = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	tmp[n++] = (uint8_t)v;
	weir_buf_put(b, tmp, n);
}

void weir_pb_tag(weir_buf *b, uint32_t field, int wire_type) {
	weir_pb_varint(b, ((uint64_t)field << 3) | (uint64_t)wire_type);
}

void weir_pb_uint(weir_buf *b, uint32_t field, uint64_t v, int always) {
	if (v == 0 && !always)
		return;
	weir_pb_tag(b, field, WEIR_WIRE_VARINT);
	weir_pb_varint(b, v);
}

void weir_pb_int(weir_buf *b, uint32_t field, int64_t v, int always) {
	weir_pb_uint(b, field, (uint64_t)v, always);
}

void weir_pb_bytes(weir_buf *b, uint32_t field, const void *p, size_t n) {
	weir_pb_tag(b, field, WEIR_WIRE_LEN);
	weir_pb_varint(b, n);
	weir_buf_put(b, p, n);
}

/* A sub-message reserves the longest length varint (5 bytes: a message
 * is below 4 GiB) and closes by moving its body down behind the real one. */
#define WEIR_LEN_RESERVE 5

size_t weir_pb_begin(weir_buf *b, uint32_t field) {
	weir_pb_tag(b, field, WEIR_WIRE_LEN);
	static const uint8_t zeros[WEIR_LEN_RESERVE];
	weir_buf_put(b, zeros, WEIR_LEN_RESERVE);
	return b->len;
}

void weir_pb_end(weir_buf *b, size_t mark) {
	if (weir_oom || mark > b->len)
		return;
	size_t n = b->len - mark;
	uint8_t tmp[10];
	size_t k = 0;
	uint64_t v = n;
	while (v >= 0x80) {
		tmp[k++] = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	tmp[k++] = (uint8_t)v;
	uint8_t *start = b->data + mark - WEIR_LEN_RESERVE;
	memcpy(start, tmp, k);
	memmove(start + k, b->data + mark, n);
	b->len -= WEIR_LEN_RESERVE - k;
}

weir_reader weir_reader_of(const uint8_t *p, size_t n) {
	weir_reader r = {p, p + n, 0};
	return r;
}

static int read_varint(weir_reader *r, uint64_t *v) {
	uint64_t x = 0;
	for (int shift = 0; shift < 70; shift += 7) {
		if (r->p >= r->end)
			return 0;
		uint8_t c = *r->p++;
		x |= (uint64_t)(c & 0x7f) << shift;
		if (c < 0x80) {
			*v = x;
			return 1;
		}
	}
	return 0; /* over 10 bytes */
}

int weir_next(weir_reader *r, weir_field *f) {
	if (r->err || r->p >= r->end)
		return 0;
	uint64_t tag;
	if (!read_varint(r, &tag) || (tag >> 3) == 0 || (tag >> 3) > 0x1fffffff)
		goto bad;
	f->num = (uint32_t)(tag >> 3);
	f->wire_type = (int)(tag & 7);
	f->u = 0;
	f->s.data = NULL;
	f->s.len = 0;
	switch (f->wire_type) {
	case WEIR_WIRE_VARINT:
		if (!read_varint(r, &f->u))
			goto bad;
		return 1;
	case WEIR_WIRE_I64:
	case WEIR_WIRE_I32: {
		size_t n = f->wire_type == WEIR_WIRE_I64 ? 8 : 4;
		if ((size_t)(r->end - r->p) < n)
			goto bad;
		for (size_t i = 0; i < n; i++)
			f->u |= (uint64_t)r->p[i] << (8 * i);
		r->p += n;
		return 1;
	}
	case WEIR_WIRE_LEN: {
		uint64_t n;
		if (!read_varint(r, &n) || n > (uint64_t)(r->end - r->p))
			goto bad;
		f->s.data = r->p;
		f->s.len = (size_t)n;
		r->p += n;
		return 1;
	}
	}
bad:
	r->err = 1;
	return 0;
}

/* want checks a known field's wire type; a mismatch makes the message
 * malformed (docs/abi.md 4.1). */
static int want(weir_reader *r, const weir_field *f, int wire_type) {
	if (f->wire_type != wire_type) {
		r->err = 1;
		return 0;
	}
	return 1;
}

static int decode_route(weir_str s, weir_route *rt) {
	weir_reader r = weir_reader_of(s.data, s.len);
	weir_field f;
	while (weir_next(&r, &f)) {
		if ((f.num == 1 || f.num == 2) && want(&r, &f, WEIR_WIRE_LEN))
			*(f.num == 1 ? &rt->provider : &rt->model) = f.s;
	}
	return r.err ? -1 : 0;
}

/* decode_pair reads a message of two string fields 1 and 2. */
static int decode_pair(weir_str s, weir_str *a, weir_str *b) {
	weir_route rt = {{0}, {0}};
	if (decode_route(s, &rt) != 0)
		return -1;
	*a = rt.provider;
	*b = rt.model;
	return 0;
}

/* ------------------------------------------------------------ requests */

weir_str weir_host_data(const weir_render_request *req, const char *key) {
	for (size_t i = 0; i < req->nhost_data; i++)
		if (weir_str_eq(req->host_data[i].key, key))
			return req->host_data[i].value;
	weir_str none = {NULL, 0};
	return none;
}

static weir_section *sections_mem;
static size_t sections_cap;
static weir_kv *kv_mem;
static size_t kv_cap;

/* grow makes *mem hold at least n elements of size sz. */
static int grow(void **mem, size_t *cap, size_t n, size_t sz) {
	if (n <= *cap)
		return 0;
	size_t c = *cap ? *cap * 2 : 16;
	while (c < n)
		c *= 2;
	void *p = realloc(*mem, c * sz);
	if (!p)
		return -1;
	*mem = p;
	*cap = c;
	return 0;
}

static int decode_render(const uint8_t *in, size_t n, weir_render_request *req) {
	memset(req, 0, sizeof *req);
	/* Count first, so the arrays are allocated once. */
	size_t ns = 0, nk = 0;
	weir_reader r = weir_reader_of(in, n);
	weir_field f;
	while (weir_next(&r, &f)) {
		ns += f.num == 1;
		nk += f.num == 3;
	}
	if (r.err)
		return -1;
	if (grow((void **)&sections_mem, &sections_cap, ns, sizeof *sections_mem) ||
	    grow((void **)&kv_mem, &kv_cap, nk, sizeof *kv_mem))
		return -2;
	req->sections = sections_mem;
	req->host_data = kv_mem;
	r = weir_reader_of(in, n);
	while (weir_next(&r, &f)) {
		switch (f.num) {
		case 1:
			if (want(&r, &f, WEIR_WIRE_LEN)) {
				weir_section *s = &req->sections[req->nsections++];
				if (decode_pair(f.s, &s->key, &s->text))
					return -1;
			}
			break;
		case 2:
			if (want(&r, &f, WEIR_WIRE_LEN) && decode_route(f.s, &req->route))
				return -1;
			break;
		case 3:
			if (want(&r, &f, WEIR_WIRE_LEN)) {
				weir_kv *kv = &req->host_data[req->nhost_data++];
				if (decode_pair(f.s, &kv->key, &kv->value))
					return -1;
			}
			break;
		}
	}
	return r.err ? -1 : 0;
}

static int decode_compaction(const uint8_t *in, size_t n, weir_compaction_request *req) {
	memset(req, 0, sizeof *req);
	weir_reader r = weir_reader_of(in, n);
	weir_field f;
	while (weir_next(&r, &f)) {
		switch (f.num) {
		case 1:
		case 2:
			if (want(&r, &f, WEIR_WIRE_VARINT))
				*(f.num == 1 ? &req->turn : &req->step) = (int64_t)f.u;
			break;
		case 3:
			if (want(&r, &f, WEIR_WIRE_LEN) && decode_route(f.s, &req->route))
				return -1;
			break;
		case 4:
			if (want(&r, &f, WEIR_WIRE_LEN)) {
				weir_reader lr = weir_reader_of(f.s.data, f.s.len);
				weir_field lf;
				while (weir_next(&lr, &lf)) {
					if ((lf.num == 1 || lf.num == 2) && want(&lr, &lf, WEIR_WIRE_VARINT))
						*(lf.num == 1 ? &req->context_window : &req->default_max_tokens) = (int64_t)lf.u;
				}
				if (lr.err)
					return -1;
			}
			break;
		case 5:
			if (want(&r, &f, WEIR_WIRE_LEN))
				req->command_id = f.s;
			break;
		case 6:
			if (want(&r, &f, WEIR_WIRE_LEN) && decode_pair(f.s, &req->failure_code, &req->failure_message))
				return -1;
			break;
		case 7:
			if (want(&r, &f, WEIR_WIRE_LEN))
				req->state = f.s;
			break;
		case 8:
		case 9:
			if (want(&r, &f, WEIR_WIRE_VARINT))
				*(f.num == 8 ? &req->region_start_seq : &req->region_end_seq) = (int64_t)f.u;
			break;
		}
	}
	return r.err ? -1 : 0;
}

/* ------------------------------------------------------------ results */

void weir_propose(weir_compaction_result *res, const weir_proposal *p) {
	weir_buf *b = res->msg;
	size_t m = weir_pb_begin(b, 1);
	weir_pb_bytes(b, 1, p->type, strlen(p->type));
	if (p->data_len)
		weir_pb_bytes(b, 2, p->data, p->data_len);
	if (p->intent == WEIR_INTENT_APPEND) {
		weir_pb_bytes(b, 3, NULL, 0);
	} else if (p->intent == WEIR_INTENT_REPLACE) {
		size_t rm = weir_pb_begin(b, 4);
		weir_pb_int(b, 1, p->start_seq, 0);
		weir_pb_int(b, 2, p->end_seq, 0);
		weir_pb_end(b, rm);
	}
	if (p->has_sources) {
		size_t sm = weir_pb_begin(b, 5);
		if (p->nsources) {
			size_t pm = weir_pb_begin(b, 1); /* packed */
			for (size_t i = 0; i < p->nsources; i++)
				weir_pb_varint(b, (uint64_t)p->sources[i]);
			weir_pb_end(b, pm);
		}
		weir_pb_end(b, sm);
	}
	weir_pb_uint(b, 6, p->ignorable ? 1 : 0, 0);
	weir_pb_end(b, m);
	res->nproposals++;
}

void weir_set_state(weir_compaction_result *res, const void *state, size_t n) {
	weir_pb_bytes(res->msg, 2, state, n); /* optional: present even when empty */
}

void weir_set_idle_below_tokens(weir_compaction_result *res, int64_t tokens) {
	weir_pb_int(res->msg, 3, tokens, 1); /* optional: present even when 0 */
}

/* ------------------------------------------------------------ dispatcher */

static weir_buf input;   /* grow-only; the host writes requests here */
static weir_buf out;     /* the output frame */
static weir_buf result;  /* the method's result message */
static weir_buf errtext; /* a callback's error text */
static weir_buf name;    /* the configured name, from init */
static int inited;

weir_str weir_plugin_name(void) {
	weir_str s = {name.data, name.len};
	return s;
}

WEIR_EXPORT("weir_abi_version")
int32_t weir_abi_version(void) { return WEIR_ABI_MAJOR; }

WEIR_EXPORT("weir_input")
uint32_t weir_input(uint32_t size) {
	if (size > input.cap || input.cap == 0) {
		size_t want = input.cap * 2;
		if (want < size)
			want = size;
		if (want < 4096)
			want = 4096;
		uint8_t *p = malloc(want); /* the old one is dropped: no copy needed */
		if (!p)
			return 0; /* the host reports a malformed output */
		free(input.data);
		input.data = p;
		input.cap = want;
	}
	return (uint32_t)(uintptr_t)input.data;
}

static uint64_t frame(void) {
	if (out.len == 0)
		return 0;
	return ((uint64_t)(uintptr_t)out.data << 32) | (uint64_t)out.len;
}

/* fail frames Response{status, error}. */
static uint64_t fail(int status, const char *msg, size_t n) {
	weir_oom = 0;
	out.len = 0;
	weir_pb_uint(&out, 1, (uint64_t)status, 1);
	weir_pb_bytes(&out, 2, msg, n);
	if (weir_oom) { /* keep the error short enough to fit */
		weir_oom = 0;
		return 0;
	}
	return frame();
}

static uint64_t failz(int status, const char *msg) { return fail(status, msg, strlen(msg)); }

/* ok frames Response{result} from the result buffer. */
static uint64_t ok(void) {
	if (weir_oom)
		return failz(WEIR_STATUS_PLUGIN_ERROR, "out of memory");
	out.len = 0;
	if (result.len)
		weir_pb_bytes(&out, 3, result.data, result.len);
	if (weir_oom)
		return failz(WEIR_STATUS_PLUGIN_ERROR, "out of memory");
	return frame();
}

/* finish frames a callback's outcome. */
static uint64_t finish(int status) {
	if (status == WEIR_STATUS_OK)
		return ok();
	if (errtext.len == 0)
		weir_buf_puts(&errtext, "the plugin reported a failure without a reason");
	return fail(status, (const char *)errtext.data, errtext.len);
}

static uint64_t unsupported(const char *kind) {
	errtext.len = 0;
	weir_buf_puts(&errtext, "plugin is not a ");
	weir_buf_puts(&errtext, kind);
	weir_buf_puts(&errtext, " provider");
	return fail(WEIR_STATUS_UNSUPPORTED, (const char *)errtext.data, errtext.len);
}

static uint64_t do_init(const uint8_t *in, size_t n) {
	weir_reader r = weir_reader_of(in, n);
	weir_field f;
	weir_str plugin = {0}, config = {0};
	uint64_t major = 0;
	while (weir_next(&r, &f)) {
		if (f.num == 1 && want(&r, &f, WEIR_WIRE_LEN))
			plugin = f.s;
		else if (f.num == 2 && want(&r, &f, WEIR_WIRE_LEN))
			config = f.s;
		else if (f.num == 3 && want(&r, &f, WEIR_WIRE_VARINT))
			major = f.u;
	}
	if (r.err)
		return failz(WEIR_STATUS_BAD_REQUEST, "init: the InitRequest did not decode");
	if (major != WEIR_ABI_MAJOR)
		return failz(WEIR_STATUS_BAD_REQUEST, "init: the host speaks another ABI major version than 1");
	name.len = 0;
	weir_buf_put(&name, plugin.data, plugin.len);
	if (weir_plugin.configure) {
		int st = weir_plugin.configure(config, &errtext);
		if (st != WEIR_STATUS_OK)
			return finish(st);
	}
	inited = 1;
	return ok();
}

static uint64_t do_describe(void) {
	const struct weir_plugin *p = &weir_plugin;
	if (p->name)
		weir_pb_bytes(&result, 1, p->name, strlen(p->name));
	if (p->version)
		weir_pb_bytes(&result, 2, p->version, strlen(p->version));
	/* kinds: packed */
	uint8_t kinds[3];
	size_t nk = 0;
	if (p->render_prompt)
		kinds[nk++] = WEIR_KIND_SYSTEM_PROMPT;
	if (p->compact)
		kinds[nk++] = WEIR_KIND_COMPACTION;
	if (p->meter)
		kinds[nk++] = WEIR_KIND_TOKEN_METER;
	if (nk)
		weir_pb_bytes(&result, 3, kinds, nk);
	weir_pb_uint(&result, 4, WEIR_ABI_MINOR, 0);
	weir_pb_bytes(&result, 5, WEIR_SDK_VERSION, strlen(WEIR_SDK_VERSION));
	for (size_t i = 0; i < p->nevents; i++)
		weir_pb_bytes(&result, 6, p->events[i], strlen(p->events[i]));
	weir_pb_uint(&result, 7, p->render_on_change ? 1 : 0, 0);
	weir_pb_uint(&result, 8, p->warm_state ? 1 : 0, 0);
	if (p->compact && p->compaction_region) {
		uint8_t methods[1] = {WEIR_METHOD_COMPACTION_REGION}; /* packed */
		weir_pb_bytes(&result, 9, methods, sizeof methods);
	}
	return ok();
}

static uint64_t do_render(const uint8_t *in, size_t n) {
	if (!weir_plugin.render_prompt)
		return unsupported("system-prompt");
	weir_render_request req;
	int rc = decode_render(in, n, &req);
	if (rc == -2)
		return failz(WEIR_STATUS_PLUGIN_ERROR, "out of memory decoding the RenderRequest");
	if (rc)
		return failz(WEIR_STATUS_BAD_REQUEST, "prompt.render: the RenderRequest did not decode");
	static weir_buf prompt;
	prompt.len = 0;
	int st = weir_plugin.render_prompt(&req, &prompt, &errtext);
	if (st == WEIR_STATUS_OK && prompt.len)
		weir_pb_bytes(&result, 1, prompt.data, prompt.len);
	return finish(st);
}

static uint64_t do_compact(int method, const uint8_t *in, size_t n) {
	if (!weir_plugin.compact)
		return unsupported("compaction");
	weir_compaction_request req;
	if (decode_compaction(in, n, &req))
		return failz(WEIR_STATUS_BAD_REQUEST, "compaction: the CompactionRequest did not decode");
	weir_compaction_result res = {&result, 0};
	int st = weir_plugin.compact(method, &req, &res, &errtext);
	if (st == WEIR_STATUS_OK && res.nproposals > 1024)
		return failz(WEIR_STATUS_PLUGIN_ERROR, "more than 1024 proposals");
	return finish(st);
}

WEIR_EXPORT("weir_call")
uint64_t weir_call(uint32_t method, uint32_t n) {
	weir_oom = 0;
	result.len = 0;
	errtext.len = 0;
	if (n > input.cap)
		return failz(WEIR_STATUS_BAD_REQUEST, "input length exceeds the buffer weir_input returned");
	const uint8_t *in = n ? input.data : (const uint8_t *)"";
	switch (method) {
	case WEIR_METHOD_INIT:
		return do_init(in, n);
	case WEIR_METHOD_DESCRIBE:
		return do_describe();
	}
	if (!inited)
		return failz(WEIR_STATUS_BAD_REQUEST, "provider method called before init");
	switch (method) {
	case WEIR_METHOD_PROMPT_RENDER:
		return do_render(in, n);
	case WEIR_METHOD_COMPACTION_PRESTEP:
	case WEIR_METHOD_COMPACTION_MANUAL:
	case WEIR_METHOD_COMPACTION_OVERFLOW:
		return do_compact((int)method, in, n);
	case WEIR_METHOD_COMPACTION_REGION:
		if (!weir_plugin.compaction_region)
			return failz(WEIR_STATUS_UNSUPPORTED, "compaction.region: the plugin does not declare it");
		return do_compact((int)method, in, n);
	case WEIR_METHOD_METER_OBSERVE:
	case WEIR_METHOD_METER_MEASURE: {
		if (!weir_plugin.meter)
			return unsupported("token-meter");
		weir_str req = {in, n};
		return finish(weir_plugin.meter((int)method, req, &result, &errtext));
	}
	}
	return failz(WEIR_STATUS_UNSUPPORTED, "unknown method");
}

/* ------------------------------------------------------------ host imports */

WEIR_IMPORT("surface_nodes") int32_t weir_imp_surface_nodes(uint8_t *buf, uint32_t limit);
WEIR_IMPORT("message") int32_t weir_imp_message(int64_t seq, uint8_t *buf, uint32_t limit);
WEIR_IMPORT("event") int32_t weir_imp_event(int64_t seq, uint8_t *buf, uint32_t limit);
WEIR_IMPORT("generations") int32_t weir_imp_generations(uint8_t *buf, uint32_t limit);
WEIR_IMPORT("header") int32_t weir_imp_header(uint8_t *buf, uint32_t limit);
WEIR_IMPORT("measure") int32_t weir_imp_measure(uint8_t *buf, uint32_t limit);
WEIR_IMPORT("summarize")
int32_t weir_imp_summarize(const uint8_t *req, uint32_t req_len, uint8_t *buf, uint32_t limit);
WEIR_IMPORT("count_tokens")
int64_t weir_imp_count_tokens(const uint8_t *name, uint32_t name_len, const uint8_t *text, uint32_t text_len);
WEIR_IMPORT("last_error") int32_t weir_imp_last_error(uint8_t *buf, uint32_t limit);

static weir_buf answer;   /* shared answer buffer of the queries */
static weir_buf hosterr;  /* the last failure's reason */
static weir_buf sumreq;   /* an encoded SummarizeRequest */
static weir_buf sumtext;  /* a summary's text blocks */
static int64_t cur_seq;   /* argument of the message query */

static void note_error(int code) {
	hosterr.len = 0;
	if (code <= WEIR_HOST_NO_MEMORY) {
		weir_buf_puts(&hosterr, weir_host_code_name(code));
		return;
	}
	for (int i = 0; i < 2; i++) {
		int32_t n = weir_imp_last_error(hosterr.data, (uint32_t)hosterr.cap);
		if (n <= 0)
			return;
		if ((size_t)n <= hosterr.cap) {
			hosterr.len = (size_t)n;
			return;
		}
		if (weir_buf_reserve(&hosterr, (size_t)n) != 0)
			return;
	}
}

enum { Q_SURFACE, Q_MESSAGE, Q_EVENT, Q_GENERATIONS, Q_HEADER, Q_MEASURE, Q_SUMMARIZE };

static int32_t raw_query(int which, uint8_t *buf, uint32_t limit) {
	switch (which) {
	case Q_SURFACE: return weir_imp_surface_nodes(buf, limit);
	case Q_MESSAGE: return weir_imp_message(cur_seq, buf, limit);
	case Q_EVENT: return weir_imp_event(cur_seq, buf, limit);
	case Q_GENERATIONS: return weir_imp_generations(buf, limit);
	case Q_HEADER: return weir_imp_header(buf, limit);
	case Q_MEASURE: return weir_imp_measure(buf, limit);
	default: return weir_imp_summarize(sumreq.data, (uint32_t)sumreq.len, buf, limit);
	}
}

/* query runs the (buf, limit) protocol for one import. */
static int query(int which, weir_str *outp) {
	for (int attempt = 0; attempt < 4; attempt++) {
		int32_t n = raw_query(which, answer.data, (uint32_t)answer.cap);
		if (n < 0) {
			note_error(n);
			return n;
		}
		if ((size_t)n <= answer.cap) {
			answer.len = (size_t)n;
			outp->data = answer.data;
			outp->len = (size_t)n;
			return n;
		}
		answer.len = 0;
		if (weir_buf_reserve(&answer, (size_t)n) != 0) {
			note_error(WEIR_HOST_NO_MEMORY);
			return WEIR_HOST_NO_MEMORY;
		}
	}
	hosterr.len = 0;
	weir_buf_puts(&hosterr, "the answer's size kept changing between attempts");
	return WEIR_HOST_FAILED;
}

static int malformed(const char *what) {
	hosterr.len = 0;
	weir_buf_puts(&hosterr, what);
	weir_buf_puts(&hosterr, ": the host's answer did not decode");
	return WEIR_HOST_MALFORMED;
}

static weir_node *nodes_mem;
static size_t nodes_cap;

int weir_surface_nodes(weir_node **nodes, size_t *n) {
	weir_str a;
	int rc = query(Q_SURFACE, &a);
	if (rc < 0)
		return rc;
	size_t count = 0;
	weir_reader r = weir_reader_of(a.data, a.len);
	weir_field f;
	while (weir_next(&r, &f))
		count += f.num == 1;
	if (r.err)
		return malformed("surface_nodes");
	if (grow((void **)&nodes_mem, &nodes_cap, count, sizeof *nodes_mem)) {
		note_error(WEIR_HOST_NO_MEMORY);
		return WEIR_HOST_NO_MEMORY;
	}
	size_t i = 0;
	r = weir_reader_of(a.data, a.len);
	while (weir_next(&r, &f)) {
		if (f.num != 1 || !want(&r, &f, WEIR_WIRE_LEN))
			continue;
		weir_node *nd = &nodes_mem[i++];
		memset(nd, 0, sizeof *nd);
		weir_reader nr = weir_reader_of(f.s.data, f.s.len);
		weir_field nf;
		while (weir_next(&nr, &nf)) {
			switch (nf.num) {
			case 1: if (want(&nr, &nf, WEIR_WIRE_VARINT)) nd->seq = (int64_t)nf.u; break;
			case 2: if (want(&nr, &nf, WEIR_WIRE_LEN)) nd->type = nf.s; break;
			case 3: if (want(&nr, &nf, WEIR_WIRE_LEN)) nd->role = nf.s; break;
			case 4: if (want(&nr, &nf, WEIR_WIRE_VARINT)) nd->size = (int64_t)nf.u; break;
			case 5: if (want(&nr, &nf, WEIR_WIRE_LEN)) nd->content_hash = nf.s; break;
			case 6:
				if (want(&nr, &nf, WEIR_WIRE_VARINT)) {
					nd->has_tokens = 1;
					nd->tokens = (int64_t)nf.u;
				}
				break;
			}
		}
		if (nr.err)
			return malformed("surface_nodes");
	}
	if (r.err)
		return malformed("surface_nodes");
	*nodes = nodes_mem;
	*n = count;
	return 0;
}

int weir_message(int64_t seq, weir_str *json) {
	cur_seq = seq;
	return query(Q_MESSAGE, json);
}

int weir_header(weir_str *json) { return query(Q_HEADER, json); }

int weir_event(int64_t seq, weir_event_data *ev) {
	weir_str a;
	cur_seq = seq;
	int rc = query(Q_EVENT, &a);
	if (rc < 0)
		return rc;
	memset(ev, 0, sizeof *ev);
	weir_reader r = weir_reader_of(a.data, a.len);
	weir_field f;
	while (weir_next(&r, &f)) {
		switch (f.num) {
		case 1: if (want(&r, &f, WEIR_WIRE_VARINT)) ev->seq = (int64_t)f.u; break;
		case 2: if (want(&r, &f, WEIR_WIRE_LEN)) ev->type = f.s; break;
		case 3: if (want(&r, &f, WEIR_WIRE_LEN)) ev->data = f.s; break;
		}
	}
	return r.err ? malformed("event") : rc;
}

int weir_generations_get(weir_generations *g) {
	weir_str a;
	int rc = query(Q_GENERATIONS, &a);
	if (rc < 0)
		return rc;
	memset(g, 0, sizeof *g);
	weir_reader r = weir_reader_of(a.data, a.len);
	weir_field f;
	while (weir_next(&r, &f)) {
		if (f.num >= 1 && f.num <= 3 && want(&r, &f, WEIR_WIRE_VARINT)) {
			int64_t v = (int64_t)f.u;
			if (f.num == 1) g->replace = v;
			else if (f.num == 2) g->content = v;
			else g->log_length = v;
		}
	}
	return r.err ? malformed("generations") : 0;
}

int weir_measure(int64_t *total_tokens, int64_t *surface_tokens, weir_str *raw) {
	weir_str a;
	int rc = query(Q_MEASURE, &a);
	if (rc < 0)
		return rc;
	*total_tokens = *surface_tokens = 0;
	weir_reader r = weir_reader_of(a.data, a.len);
	weir_field f;
	while (weir_next(&r, &f)) {
		if ((f.num == 4 || f.num == 5) && want(&r, &f, WEIR_WIRE_VARINT))
			*(f.num == 4 ? total_tokens : surface_tokens) = (int64_t)f.u;
	}
	if (r.err)
		return malformed("measure");
	if (raw)
		*raw = a;
	return 0;
}

int weir_summarize(const weir_summarize_request *req, weir_str *text) {
	sumreq.len = 0;
	for (size_t i = 0; i < req->nmessages; i++)
		weir_pb_bytes(&sumreq, 1, req->messages[i].data, req->messages[i].len);
	if (req->tools.len)
		weir_pb_bytes(&sumreq, 2, req->tools.data, req->tools.len);
	if (req->instruction.len)
		weir_pb_bytes(&sumreq, 3, req->instruction.data, req->instruction.len);
	if (req->route.provider.len || req->route.model.len) {
		size_t m = weir_pb_begin(&sumreq, 4);
		if (req->route.provider.len)
			weir_pb_bytes(&sumreq, 1, req->route.provider.data, req->route.provider.len);
		if (req->route.model.len)
			weir_pb_bytes(&sumreq, 2, req->route.model.data, req->route.model.len);
		weir_pb_end(&sumreq, m);
	}
	weir_pb_int(&sumreq, 5, req->max_tokens, 0);
	if (weir_oom) {
		note_error(WEIR_HOST_NO_MEMORY);
		return WEIR_HOST_NO_MEMORY;
	}
	weir_str a;
	int rc = query(Q_SUMMARIZE, &a);
	if (rc < 0)
		return rc;
	sumtext.len = 0;
	weir_reader r = weir_reader_of(a.data, a.len);
	weir_field f;
	while (weir_next(&r, &f)) {
		if (f.num == 1 && want(&r, &f, WEIR_WIRE_LEN))
			weir_buf_put(&sumtext, f.s.data, f.s.len);
	}
	if (r.err)
		return malformed("summarize");
	text->data = sumtext.data;
	text->len = sumtext.len;
	return 0;
}

int64_t weir_count_tokens(const char *tokenizer, const uint8_t *text, size_t n) {
	int64_t rc = weir_imp_count_tokens((const uint8_t *)tokenizer, (uint32_t)strlen(tokenizer), text, (uint32_t)n);
	if (rc < 0)
		note_error((int)rc);
	return rc;
}

weir_str weir_host_error(void) {
	weir_str s = {hosterr.data, hosterr.len};
	return s;
}

const char *weir_host_code_name(int code) {
	switch (code) {
	case WEIR_HOST_NOT_GRANTED: return "not granted";
	case WEIR_HOST_NOT_FOUND: return "not found";
	case WEIR_HOST_BAD_ARGUMENT: return "bad argument";
	case WEIR_HOST_FAILED: return "host failed";
	case WEIR_HOST_CANCELLED: return "cancelled";
	case WEIR_HOST_NO_MEMORY: return "out of memory";
	case WEIR_HOST_MALFORMED: return "malformed answer";
	}
	return "unknown host code";
}

/* ------------------------------------------------------------ JSON helper */

static const uint8_t *skip_ws(const uint8_t *p, const uint8_t *e) {
	while (p < e && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r'))
		p++;
	return p;
}

/* skip_string skips a JSON string starting at its opening quote. */
static const uint8_t *skip_string(const uint8_t *p, const uint8_t *e) {
	for (p++; p < e; p++) {
		if (*p == '\\')
			p++;
		else if (*p == '"')
			return p + 1;
	}
	return NULL;
}

/* skip_value skips one JSON value (not validating it). */
static const uint8_t *skip_value(const uint8_t *p, const uint8_t *e) {
	p = skip_ws(p, e);
	if (p >= e)
		return NULL;
	if (*p == '"')
		return skip_string(p, e);
	if (*p == '{' || *p == '[') {
		int depth = 0;
		while (p < e) {
			if (*p == '"') {
				p = skip_string(p, e);
				if (!p)
					return NULL;
				continue;
			}
			if (*p == '{' || *p == '[')
				depth++;
			else if (*p == '}' || *p == ']') {
				if (--depth == 0)
					return p + 1;
			}
			p++;
		}
		return NULL;
	}
	while (p < e && *p != ',' && *p != '}' && *p != ']' && *p != ' ' && *p != '\n' && *p != '\t' && *p != '\r')
		p++;
	return p;
}

static int hexval(uint8_t c) {
	if (c >= '0' && c <= '9') return c - '0';
	if (c >= 'a' && c <= 'f') return c - 'a' + 10;
	if (c >= 'A' && c <= 'F') return c - 'A' + 10;
	return -1;
}

static int read_hex4(const uint8_t *p, const uint8_t *e, uint32_t *v) {
	if (e - p < 4)
		return 0;
	*v = 0;
	for (int i = 0; i < 4; i++) {
		int h = hexval(p[i]);
		if (h < 0)
			return 0;
		*v = *v << 4 | (uint32_t)h;
	}
	return 1;
}

static void put_utf8(weir_buf *b, uint32_t c) {
	uint8_t t[4];
	size_t n;
	if (c < 0x80) { t[0] = (uint8_t)c; n = 1; }
	else if (c < 0x800) { t[0] = (uint8_t)(0xc0 | c >> 6); t[1] = (uint8_t)(0x80 | (c & 0x3f)); n = 2; }
	else if (c < 0x10000) { t[0] = (uint8_t)(0xe0 | c >> 12); t[1] = (uint8_t)(0x80 | (c >> 6 & 0x3f)); t[2] = (uint8_t)(0x80 | (c & 0x3f)); n = 3; }
	else { t[0] = (uint8_t)(0xf0 | c >> 18); t[1] = (uint8_t)(0x80 | (c >> 12 & 0x3f)); t[2] = (uint8_t)(0x80 | (c >> 6 & 0x3f)); t[3] = (uint8_t)(0x80 | (c & 0x3f)); n = 4; }
	weir_buf_put(b, t, n);
}

/* unescape appends the JSON string at p (opening quote) to out. */
static int unescape(const uint8_t *p, const uint8_t *e, weir_buf *out) {
	for (p++; p < e; p++) {
		if (*p == '"')
			return 1;
		if (*p != '\\') {
			weir_buf_putc(out, *p);
			continue;
		}
		if (++p >= e)
			return 0;
		switch (*p) {
		case 'n': weir_buf_putc(out, '\n'); break;
		case 't': weir_buf_putc(out, '\t'); break;
		case 'r': weir_buf_putc(out, '\r'); break;
		case 'b': weir_buf_putc(out, '\b'); break;
		case 'f': weir_buf_putc(out, '\f'); break;
		case 'u': {
			uint32_t c, lo;
			if (!read_hex4(p + 1, e, &c))
				return 0;
			p += 4;
			if (c >= 0xd800 && c < 0xdc00 && e - p > 6 && p[1] == '\\' && p[2] == 'u' &&
			    read_hex4(p + 3, e, &lo) && lo >= 0xdc00 && lo < 0xe000) {
				c = 0x10000 + ((c - 0xd800) << 10) + (lo - 0xdc00);
				p += 6;
			} else if (c >= 0xd800 && c < 0xe000) {
				c = 0xfffd;
			}
			put_utf8(out, c);
			break;
		}
		default: weir_buf_putc(out, *p); /* \" \\ \/ */
		}
	}
	return 0;
}

/* find_member returns the value of the top-level member key, NULL when
 * absent; *bad is set when json is not an object. */
static const uint8_t *find_member(weir_str json, const char *key, int *bad) {
	const uint8_t *p = json.data, *e = json.data + json.len;
	*bad = 0;
	p = skip_ws(p, e);
	if (p >= e || *p != '{') {
		*bad = 1;
		return NULL;
	}
	p = skip_ws(p + 1, e);
	size_t klen = strlen(key);
	while (p < e && *p == '"') {
		const uint8_t *kend = skip_string(p, e);
		if (!kend)
			break;
		int match = (size_t)(kend - p - 2) == klen && memcmp(p + 1, key, klen) == 0;
		p = skip_ws(kend, e);
		if (p >= e || *p != ':')
			break;
		p = skip_ws(p + 1, e);
		if (match)
			return p < e ? p : NULL;
		p = skip_value(p, e);
		if (!p)
			break;
		p = skip_ws(p, e);
		if (p < e && *p == ',')
			p = skip_ws(p + 1, e);
	}
	if (p == NULL || p >= e || *p != '}')
		*bad = 1;
	return NULL;
}

int weir_json_int(weir_str json, const char *key, int64_t *v) {
	int bad;
	const uint8_t *p = find_member(json, key, &bad), *e = json.data + json.len;
	if (!p)
		return bad ? -1 : 0;
	int neg = p < e && *p == '-';
	if (neg)
		p++;
	if (p >= e || *p < '0' || *p > '9')
		return -1;
	uint64_t u = 0;
	for (; p < e && *p >= '0' && *p <= '9'; p++) {
		if (u > (UINT64_C(1) << 62) / 10)
			return -1;
		u = u * 10 + (uint64_t)(*p - '0');
	}
	if (p < e && (*p == '.' || *p == 'e' || *p == 'E'))
		return -1;
	*v = neg ? -(int64_t)u : (int64_t)u;
	return 1;
}

int weir_json_string(weir_str json, const char *key, weir_buf *out) {
	int bad;
	const uint8_t *p = find_member(json, key, &bad), *e = json.data + json.len;
	if (!p)
		return bad ? -1 : 0;
	if (*p != '"')
		return 0;
	return unescape(p, e, out) ? 1 : -1;
}
