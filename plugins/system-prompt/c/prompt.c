/*
 * prompt.c: the system-prompt plugin (package systemprompt, one folder up)
 * written in C against the C SDK (sdk/c/weir). It takes the same
 * configuration, fails the load on the same mistakes with the same
 * messages, and renders the same bytes; the tests of package systemprompt
 * run both modules through the host's plugin runtime and compare them.
 *
 * Configuration: {"perModel": {"route": [{"key": ..., "text": ...}]},
 * "data": ["date", ...]}; see the package comment of systemprompt.
 *
 * The configuration is read by a strict streaming JSON reader (RFC 8259:
 * no comments, no trailing commas, valid UTF-8, no lone surrogates, no
 * repeated member names), one token ahead at most, as the Go plugin's
 * decoder reads it, so a document with a mistake early and a syntax error
 * later fails on the mistake in both. The plugin's own messages match the
 * Go plugin's byte for byte; a syntax error names what was found and the
 * JSON pointer of the place, in words of its own.
 */
#include "weir.h"

#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------ strings */

typedef struct str {
	uint8_t *data;
	size_t len;
} str;

static str str_copy(const uint8_t *p, size_t n) {
	str s = {malloc(n ? n : 1), n};
	if (!s.data) {
		weir_oom = 1;
		s.len = 0;
		return s;
	}
	memcpy(s.data, p, n);
	return s;
}

static int bytes_eq(const uint8_t *a, size_t an, const uint8_t *b, size_t bn) {
	return an == bn && (an == 0 || memcmp(a, b, an) == 0);
}

/* utf8_next decodes the rune at p (n > 0 bytes left) into *r and returns
 * its width; an invalid sequence is U+FFFD of width 1, as Go decodes it. */
static size_t utf8_next(const uint8_t *p, size_t n, uint32_t *r) {
	uint8_t c = p[0];
	*r = 0xFFFD;
	if (c < 0x80) {
		*r = c;
		return 1;
	}
	size_t w;
	uint32_t v, min;
	if (c >= 0xC2 && c <= 0xDF)
		w = 2, v = c & 0x1F, min = 0x80;
	else if (c >= 0xE0 && c <= 0xEF)
		w = 3, v = c & 0x0F, min = 0x800;
	else if (c >= 0xF0 && c <= 0xF4)
		w = 4, v = c & 0x07, min = 0x10000;
	else
		return 1;
	if (n < w)
		return 1;
	for (size_t i = 1; i < w; i++) {
		if ((p[i] & 0xC0) != 0x80)
			return 1;
		v = v << 6 | (p[i] & 0x3F);
	}
	if (v < min || v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF))
		return 1;
	*r = v;
	return w;
}

/* utf8_last decodes the last rune of p[0:n] (n > 0); width 1 and U+FFFD
 * when the bytes do not end in a valid sequence. */
static size_t utf8_last(const uint8_t *p, size_t n, uint32_t *r) {
	size_t start = n - 1;
	while (start > 0 && n - start < 4 && (p[start] & 0xC0) == 0x80)
		start--;
	uint32_t v;
	size_t w = utf8_next(p + start, n - start, &v);
	if (start + w != n) {
		*r = 0xFFFD;
		return 1;
	}
	*r = v;
	return w;
}

/* is_space is Go's unicode.IsSpace. */
static int is_space(uint32_t r) {
	switch (r) {
	case '\t': case '\n': case '\v': case '\f': case '\r': case ' ':
	case 0x85: case 0xA0: case 0x1680: case 0x2028: case 0x2029:
	case 0x202F: case 0x205F: case 0x3000:
		return 1;
	}
	return r >= 0x2000 && r <= 0x200A;
}

/* trim drops leading and trailing white space, as Go's strings.TrimSpace. */
static weir_str trim(weir_str s) {
	uint32_t r;
	while (s.len) {
		size_t w = utf8_next(s.data, s.len, &r);
		if (!is_space(r))
			break;
		s.data += w;
		s.len -= w;
	}
	while (s.len) {
		size_t w = utf8_last(s.data, s.len, &r);
		if (!is_space(r))
			break;
		s.len -= w;
	}
	return s;
}

/* is_print approximates Go's strconv.IsPrint on valid runes: the C0 and
 * C1 controls, DEL, the non-ASCII spaces and the common format characters
 * are not printable; every other rune is (Go also escapes unassigned code
 * points, which the configuration's names have no reason to hold). */
static int is_print(uint32_t r) {
	if (r < 0x20 || (r >= 0x7F && r <= 0xA0) || r == 0xAD)
		return 0;
	if (r != ' ' && is_space(r))
		return 0;
	if ((r >= 0x200B && r <= 0x200F) || (r >= 0x202A && r <= 0x202E) || (r >= 0x2060 && r <= 0x206F) ||
	    r == 0x061C || r == 0x180E || r == 0xFEFF || (r >= 0xFFF9 && r <= 0xFFFB) || r == 0xFFFE || r == 0xFFFF)
		return 0;
	return 1;
}

static const char hexdigits[] = "0123456789abcdef";

static void put_hex(weir_buf *b, const char *prefix, uint32_t v, int digits) {
	weir_buf_puts(b, prefix);
	for (int i = digits - 1; i >= 0; i--)
		weir_buf_putc(b, hexdigits[(v >> (4 * i)) & 0xF]);
}

/* put_quoted appends s quoted as Go's strconv.Quote (%q) quotes it. */
static void put_quoted(weir_buf *b, const uint8_t *p, size_t n) {
	weir_buf_putc(b, '"');
	while (n) {
		uint32_t r;
		size_t w = utf8_next(p, n, &r);
		if (r == 0xFFFD && w == 1 && p[0] >= 0x80) {
			put_hex(b, "\\x", p[0], 2);
		} else if (r == '"' || r == '\\') {
			weir_buf_putc(b, '\\');
			weir_buf_putc(b, (uint8_t)r);
		} else if (is_print(r)) {
			weir_buf_put(b, p, w);
		} else {
			switch (r) {
			case '\a': weir_buf_puts(b, "\\a"); break;
			case '\b': weir_buf_puts(b, "\\b"); break;
			case '\f': weir_buf_puts(b, "\\f"); break;
			case '\n': weir_buf_puts(b, "\\n"); break;
			case '\r': weir_buf_puts(b, "\\r"); break;
			case '\t': weir_buf_puts(b, "\\t"); break;
			case '\v': weir_buf_puts(b, "\\v"); break;
			default:
				if (r < 0x20 || r == 0x7F)
					put_hex(b, "\\x", r, 2);
				else if (r <= 0xFFFF)
					put_hex(b, "\\u", r, 4);
				else
					put_hex(b, "\\U", r, 8);
			}
		}
		p += w;
		n -= w;
	}
	weir_buf_putc(b, '"');
}

/* ------------------------------------------------------------ JSON reader */

/* A token: its kind ('{', '}', '[', ']', '"', '0', 't', 'f', 'n') and, for
 * a string, its unescaped bytes in the reader's buffer. */
typedef struct jtoken {
	int kind;
	size_t start; /* offset of its first byte */
} jtoken;

/* One open container: its kind, the names read so far (an object) or the
 * index of the next element (an array), and what comes next. */
typedef struct jframe {
	int obj;
	int state;   /* 0: first, 1: after a value/name, 2: after a comma */
	size_t index; /* arrays: elements read */
	str *names;  /* objects: member names read */
	size_t nnames, capnames;
} jframe;

typedef struct jreader {
	const uint8_t *p;
	size_t n, pos;
	jframe stack[8]; /* the configuration nests four deep */
	int depth;
	int top_done;   /* the top-level value was read */
	int want_value; /* an object name was read: its value comes next */
	weir_buf text;  /* the last string token, unescaped */
	jtoken ahead;   /* the looked-ahead token, kind 0 when none */
	weir_buf *err;  /* where the first error is written */
	int failed;
} jreader;

static int jfail(jreader *r) {
	r->failed = 1;
	return -1;
}

/* put_pointer appends the JSON pointer of the reader's place. */
static void put_pointer(jreader *r, int with_next) {
	weir_buf_putc(r->err, '"');
	for (int i = 0; i < r->depth; i++) {
		jframe *f = &r->stack[i];
		int last = i == r->depth - 1;
		if (f->obj) {
			if (!f->nnames || (last && !r->want_value && !with_next))
				continue;
			str name = f->names[f->nnames - 1];
			weir_buf_putc(r->err, '/');
			for (size_t k = 0; k < name.len; k++) {
				if (name.data[k] == '~')
					weir_buf_puts(r->err, "~0");
				else if (name.data[k] == '/')
					weir_buf_puts(r->err, "~1");
				else if (name.data[k] == '"' || name.data[k] == '\\') {
					weir_buf_putc(r->err, '\\');
					weir_buf_putc(r->err, name.data[k]);
				} else
					weir_buf_putc(r->err, name.data[k]);
			}
		} else {
			size_t idx = f->index;
			if (!last && idx)
				idx--; /* the element holding the deeper frames */
			if (last && !with_next)
				continue;
			weir_buf_putc(r->err, '/');
			weir_buf_put_int(r->err, (int64_t)idx);
		}
	}
	weir_buf_putc(r->err, '"');
}

static void put_char(weir_buf *b, jreader *r) {
	if (r->pos >= r->n) {
		weir_buf_puts(b, "unexpected end of the input");
		return;
	}
	uint8_t c = r->p[r->pos];
	weir_buf_puts(b, "invalid character ");
	if (c >= 0x20 && c < 0x7F && c != '\'' && c != '\\') {
		weir_buf_putc(b, '\'');
		weir_buf_putc(b, c);
		weir_buf_putc(b, '\'');
	} else
		put_hex(b, "byte 0x", c, 2);
}

/* syntax writes "invalid character 'c' <where> within <pointer> at offset
 * N" (or "unexpected end of the input <where> ..."). */
static int syntax(jreader *r, const char *where, int with_next) {
	if (r->failed)
		return -1;
	put_char(r->err, r);
	weir_buf_puts(r->err, " ");
	weir_buf_puts(r->err, where);
	weir_buf_puts(r->err, " within ");
	put_pointer(r, with_next);
	weir_buf_puts(r->err, " at offset ");
	weir_buf_put_int(r->err, (int64_t)r->pos);
	return jfail(r);
}

static void skip_ws(jreader *r) {
	while (r->pos < r->n) {
		uint8_t c = r->p[r->pos];
		if (c != ' ' && c != '\t' && c != '\n' && c != '\r')
			break;
		r->pos++;
	}
}

static int hexval(uint8_t c) {
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

static int hex4(jreader *r, uint32_t *v) {
	*v = 0;
	for (int i = 0; i < 4; i++) {
		int h = r->pos < r->n ? hexval(r->p[r->pos]) : -1;
		if (h < 0)
			return -1;
		*v = *v << 4 | (uint32_t)h;
		r->pos++;
	}
	return 0;
}

static void put_rune(weir_buf *b, uint32_t c) {
	if (c < 0x80)
		weir_buf_putc(b, (uint8_t)c);
	else if (c < 0x800) {
		weir_buf_putc(b, (uint8_t)(0xC0 | c >> 6));
		weir_buf_putc(b, (uint8_t)(0x80 | (c & 0x3F)));
	} else if (c < 0x10000) {
		weir_buf_putc(b, (uint8_t)(0xE0 | c >> 12));
		weir_buf_putc(b, (uint8_t)(0x80 | (c >> 6 & 0x3F)));
		weir_buf_putc(b, (uint8_t)(0x80 | (c & 0x3F)));
	} else {
		weir_buf_putc(b, (uint8_t)(0xF0 | c >> 18));
		weir_buf_putc(b, (uint8_t)(0x80 | (c >> 12 & 0x3F)));
		weir_buf_putc(b, (uint8_t)(0x80 | (c >> 6 & 0x3F)));
		weir_buf_putc(b, (uint8_t)(0x80 | (c & 0x3F)));
	}
}

/* read_string reads a string token at the opening quote into r->text. */
static int read_string(jreader *r) {
	r->text.len = 0;
	r->pos++;
	for (;;) {
		if (r->pos >= r->n)
			return syntax(r, "in a string", 1);
		uint8_t c = r->p[r->pos];
		if (c == '"') {
			r->pos++;
			return 0;
		}
		if (c < 0x20)
			return syntax(r, "in a string (a control character must be escaped)", 1);
		if (c == '\\') {
			size_t at = r->pos;
			r->pos++;
			uint8_t e = r->pos < r->n ? r->p[r->pos] : 0;
			const char *simple = strchr("\"\\/bfnrt", e);
			if (e && simple) {
				static const uint8_t to[] = "\"\\/\b\f\n\r\t";
				weir_buf_putc(&r->text, to[simple - "\"\\/bfnrt"]);
				r->pos++;
				continue;
			}
			if (e != 'u') {
				r->pos = at;
				return syntax(r, "escape sequence in a string", 1);
			}
			r->pos++;
			uint32_t v, lo;
			if (hex4(r, &v)) {
				r->pos = at;
				return syntax(r, "\\u escape in a string", 1);
			}
			if (v >= 0xDC00 && v <= 0xDFFF) {
				r->pos = at;
				return syntax(r, "escape in a string (a lone surrogate half)", 1);
			}
			if (v >= 0xD800 && v <= 0xDBFF) {
				if (r->pos + 1 >= r->n || r->p[r->pos] != '\\' || r->p[r->pos + 1] != 'u' ||
				    (r->pos += 2, hex4(r, &lo)) || lo < 0xDC00 || lo > 0xDFFF) {
					r->pos = at;
					return syntax(r, "escape in a string (a lone surrogate half)", 1);
				}
				v = 0x10000 + ((v - 0xD800) << 10) + (lo - 0xDC00);
			}
			put_rune(&r->text, v);
			continue;
		}
		uint32_t rune;
		size_t w = utf8_next(r->p + r->pos, r->n - r->pos, &rune);
		if (rune == 0xFFFD && w == 1 && c >= 0x80)
			return syntax(r, "in a string (not UTF-8)", 1);
		weir_buf_put(&r->text, r->p + r->pos, w);
		r->pos += w;
	}
}

static int is_digit(jreader *r) { return r->pos < r->n && r->p[r->pos] >= '0' && r->p[r->pos] <= '9'; }

/* read_number checks the grammar of a number token. */
static int read_number(jreader *r) {
	if (r->p[r->pos] == '-')
		r->pos++;
	if (!is_digit(r))
		return syntax(r, "in a number", 1);
	if (r->p[r->pos] == '0')
		r->pos++;
	else
		while (is_digit(r))
			r->pos++;
	if (r->pos < r->n && r->p[r->pos] == '.') {
		r->pos++;
		if (!is_digit(r))
			return syntax(r, "in a number", 1);
		while (is_digit(r))
			r->pos++;
	}
	if (r->pos < r->n && (r->p[r->pos] == 'e' || r->p[r->pos] == 'E')) {
		r->pos++;
		if (r->pos < r->n && (r->p[r->pos] == '+' || r->p[r->pos] == '-'))
			r->pos++;
		if (!is_digit(r))
			return syntax(r, "in a number", 1);
		while (is_digit(r))
			r->pos++;
	}
	return 0;
}

static int read_literal(jreader *r, const char *lit) {
	size_t n = strlen(lit);
	for (size_t i = 0; i < n; i++, r->pos++)
		if (r->pos >= r->n || r->p[r->pos] != (uint8_t)lit[i])
			return syntax(r, "in a literal", 1);
	return 0;
}

/* value_end marks a value read in the innermost frame. */
static void value_end(jreader *r) {
	if (r->depth == 0) {
		r->top_done = 1;
		return;
	}
	jframe *f = &r->stack[r->depth - 1];
	f->state = 1;
	if (!f->obj)
		f->index++;
	r->want_value = 0;
}

/* scan reads the next token, checking the delimiters before it. */
static int scan(jreader *r, jtoken *t) {
	skip_ws(r);
	if (r->depth == 0 && r->top_done) {
		if (r->pos < r->n)
			return syntax(r, "after the top-level value", 0);
		t->kind = 0; /* the end */
		return 0;
	}
	jframe *f = r->depth ? &r->stack[r->depth - 1] : NULL;
	int name = 0;
	if (f && f->obj && !r->want_value) {
		/* a member name, or the end of the object */
		if (f->state == 1) {
			if (r->pos < r->n && r->p[r->pos] == ',') {
				r->pos++;
				skip_ws(r);
				f->state = 2;
			} else if (r->pos >= r->n || r->p[r->pos] != '}')
				return syntax(r, "after an object member (want ',' or '}')", 0);
		}
		if (r->pos < r->n && r->p[r->pos] == '}' && f->state != 2) {
			t->kind = '}', t->start = r->pos++;
			goto closed;
		}
		if (r->pos >= r->n || r->p[r->pos] != '"')
			return syntax(r, "where an object member name belongs", 0);
		name = 1;
	} else if (f && !f->obj) {
		if (f->state == 1) {
			if (r->pos < r->n && r->p[r->pos] == ',') {
				r->pos++;
				skip_ws(r);
				f->state = 2;
			} else if (r->pos >= r->n || r->p[r->pos] != ']')
				return syntax(r, "after an array element (want ',' or ']')", 0);
		}
		if (r->pos < r->n && r->p[r->pos] == ']' && f->state != 2) {
			t->kind = ']', t->start = r->pos++;
			goto closed;
		}
	}
	if (f && f->obj && r->want_value) {
		if (r->pos >= r->n || r->p[r->pos] != ':')
			return syntax(r, "after an object member name (want ':')", 1);
		r->pos++;
		skip_ws(r);
	}
	if (r->pos >= r->n)
		return syntax(r, "at start of value", 1);
	t->start = r->pos;
	uint8_t c = r->p[r->pos];
	if (name) {
		if (read_string(r))
			return -1;
		for (size_t i = 0; i < f->nnames; i++)
			if (bytes_eq(f->names[i].data, f->names[i].len, r->text.data, r->text.len)) {
				weir_buf_puts(r->err, "duplicate object member name ");
				put_quoted(r->err, r->text.data, r->text.len);
				weir_buf_puts(r->err, " within ");
				put_pointer(r, 0);
				weir_buf_puts(r->err, " at offset ");
				weir_buf_put_int(r->err, (int64_t)t->start);
				return jfail(r);
			}
		if (f->nnames == f->capnames) {
			size_t cap = f->capnames ? 2 * f->capnames : 8;
			str *names = realloc(f->names, cap * sizeof *names);
			if (!names) {
				weir_oom = 1;
				return jfail(r);
			}
			f->names = names, f->capnames = cap;
		}
		f->names[f->nnames++] = str_copy(r->text.data, r->text.len);
		r->want_value = 1; /* the ':' is read with the value, as jsontext reads it */
		t->kind = '"';
		return 0;
	}
	switch (c) {
	case '{':
	case '[':
		if (r->depth == (int)(sizeof r->stack / sizeof r->stack[0])) {
			weir_buf_puts(r->err, "the configuration nests deeper than it can");
			return jfail(r);
		}
		r->pos++;
		r->stack[r->depth++] = (jframe){.obj = c == '{'};
		r->want_value = 0;
		t->kind = c;
		return 0;
	case '"':
		if (read_string(r))
			return -1;
		t->kind = '"';
		break;
	case 't':
	case 'f':
	case 'n':
		if (read_literal(r, c == 't' ? "true" : c == 'f' ? "false" : "null"))
			return -1;
		t->kind = c;
		break;
	default:
		if (c != '-' && (c < '0' || c > '9'))
			return syntax(r, "at start of value", 1);
		if (read_number(r))
			return -1;
		t->kind = '0';
	}
	value_end(r);
	return 0;
closed:
	for (size_t i = 0; i < f->nnames; i++)
		free(f->names[i].data);
	free(f->names);
	r->depth--;
	value_end(r);
	return 0;
}

/* next reads the next token (the looked-ahead one first). */
static int next(jreader *r, jtoken *t) {
	if (r->failed)
		return -1;
	if (r->ahead.kind) {
		*t = r->ahead;
		r->ahead.kind = 0;
		return 0;
	}
	return scan(r, t);
}

/* peek is the kind of the next token, -1 on a syntax error. A peeked
 * string token's bytes stay in r->text until it is read. */
static int peek(jreader *r) {
	if (r->failed)
		return -1;
	if (!r->ahead.kind && scan(r, &r->ahead))
		return -1;
	return r->ahead.kind;
}

static void reader_free(jreader *r) {
	for (int d = 0; d < r->depth; d++) {
		for (size_t i = 0; i < r->stack[d].nnames; i++)
			free(r->stack[d].names[i].data);
		free(r->stack[d].names);
	}
	r->depth = 0;
	weir_buf_free(&r->text);
}

/* ------------------------------------------------------------ configuration */

typedef struct section {
	str key, text;
} section;

typedef struct route {
	str name;
	section *secs;
	size_t n;
} route;

static struct config {
	route *routes;
	size_t nroutes;
	str *data;
	size_t ndata;
} cfg;

static void config_free(struct config *c) {
	for (size_t i = 0; i < c->nroutes; i++) {
		free(c->routes[i].name.data);
		for (size_t j = 0; j < c->routes[i].n; j++) {
			free(c->routes[i].secs[j].key.data);
			free(c->routes[i].secs[j].text.data);
		}
		free(c->routes[i].secs);
	}
	for (size_t i = 0; i < c->ndata; i++)
		free(c->data[i].data);
	free(c->routes);
	free(c->data);
	*c = (struct config){0};
}

/* grow makes room for one more element in *arr (n used). */
static int grow(void **arr, size_t n, size_t size) {
	if (n & (n - 1) && n) /* capacity is the next power of two */
		return 0;
	void *p = realloc(*arr, (n ? 2 * n : 1) * size);
	if (!p) {
		weir_oom = 1;
		return -1;
	}
	*arr = p;
	return 0;
}

static const char *kind_name(int k) {
	switch (k) {
	case '"': return "a string";
	case '0': return "a number";
	case 't': case 'f': return "a boolean";
	case '{': case '}': return "an object";
	case '[': case ']': return "an array";
	}
	return "null";
}

/* A place in the document, for messages: "perModel[\"m\"][0].key". */
static void put_route_where(weir_buf *b, str route) {
	weir_buf_puts(b, "perModel[");
	put_quoted(b, route.data, route.len);
	weir_buf_puts(b, "]");
}

static int wrong_kind(jreader *r, weir_buf *where, const char *want, int kind) {
	weir_buf_put(r->err, where->data, where->len);
	weir_buf_puts(r->err, " must be ");
	weir_buf_puts(r->err, want);
	weir_buf_puts(r->err, ", not ");
	weir_buf_puts(r->err, kind_name(kind));
	return jfail(r);
}

/* open reads the start of a container (or null: 0, nothing to read). */
static int open_container(jreader *r, weir_buf *where, int kind, int *has) {
	jtoken t;
	*has = 0;
	if (next(r, &t))
		return -1;
	if (t.kind == 'n')
		return 0;
	if (t.kind != kind)
		return wrong_kind(r, where, kind == '{' ? "a JSON object" : "a JSON array", t.kind);
	*has = 1;
	return 0;
}

/* read_str reads a string (or null, which leaves *s as it is). */
static int read_str(jreader *r, weir_buf *where, str *s) {
	jtoken t;
	if (next(r, &t))
		return -1;
	if (t.kind == 'n')
		return 0;
	if (t.kind != '"')
		return wrong_kind(r, where, "a string", t.kind);
	free(s->data);
	*s = str_copy(r->text.data, r->text.len);
	return 0;
}

/* close_tok reads the closing token a peek found. */
static int close_tok(jreader *r) {
	jtoken t;
	return next(r, &t);
}

static int read_section(jreader *r, weir_buf *at, section *s) {
	int has;
	if (open_container(r, at, '{', &has) || !has)
		return r->failed ? -1 : 0;
	weir_buf where = {0};
	int rc = 0;
	while (rc == 0) {
		int k = peek(r);
		if (k < 0) {
			rc = -1;
			break;
		}
		if (k == '}') {
			rc = close_tok(r);
			break;
		}
		jtoken t;
		next(r, &t);
		where.len = 0;
		weir_buf_put(&where, at->data, at->len);
		if (weir_str_eq((weir_str){r->text.data, r->text.len}, "key")) {
			weir_buf_puts(&where, ".key");
			rc = read_str(r, &where, &s->key);
		} else if (weir_str_eq((weir_str){r->text.data, r->text.len}, "text")) {
			weir_buf_puts(&where, ".text");
			rc = read_str(r, &where, &s->text);
		} else {
			weir_buf_put(r->err, at->data, at->len);
			weir_buf_puts(r->err, ": unknown field ");
			put_quoted(r->err, r->text.data, r->text.len);
			weir_buf_puts(r->err, ": a section has the fields key and text");
			rc = jfail(r);
		}
	}
	weir_buf_free(&where);
	return rc;
}

static int read_route(jreader *r, struct config *c) {
	if (grow((void **)&c->routes, c->nroutes, sizeof *c->routes))
		return jfail(r);
	route *rt = &c->routes[c->nroutes++];
	*rt = (route){.name = str_copy(r->text.data, r->text.len)};
	weir_buf where = {0};
	put_route_where(&where, rt->name);
	int has, rc = open_container(r, &where, '[', &has);
	weir_buf at = {0};
	for (size_t i = 0; rc == 0 && has; i++) {
		int k = peek(r);
		if (k < 0) {
			rc = -1;
			break;
		}
		if (k == ']') {
			rc = close_tok(r);
			break;
		}
		if (grow((void **)&rt->secs, rt->n, sizeof *rt->secs)) {
			rc = jfail(r);
			break;
		}
		section *s = &rt->secs[rt->n++];
		*s = (section){0};
		at.len = 0;
		weir_buf_put(&at, where.data, where.len);
		weir_buf_putc(&at, '[');
		weir_buf_put_int(&at, (int64_t)i);
		weir_buf_putc(&at, ']');
		rc = read_section(r, &at, s);
	}
	weir_buf_free(&at);
	weir_buf_free(&where);
	return rc;
}

static int read_per_model(jreader *r, struct config *c) {
	weir_buf where = {0};
	weir_buf_puts(&where, "perModel");
	int has, rc = open_container(r, &where, '{', &has);
	weir_buf_free(&where);
	while (rc == 0 && has) {
		int k = peek(r);
		if (k < 0)
			return -1;
		if (k == '}')
			return close_tok(r);
		jtoken t;
		next(r, &t);
		rc = read_route(r, c);
	}
	return rc;
}

static int read_data(jreader *r, struct config *c) {
	for (size_t i = 0; i < c->ndata; i++)
		free(c->data[i].data);
	c->ndata = 0;
	weir_buf where = {0};
	weir_buf_puts(&where, "data");
	int has, rc = open_container(r, &where, '[', &has);
	for (size_t i = 0; rc == 0 && has; i++) {
		int k = peek(r);
		if (k < 0) {
			rc = -1;
			break;
		}
		if (k == ']') {
			rc = close_tok(r);
			break;
		}
		if (grow((void **)&c->data, c->ndata, sizeof *c->data)) {
			rc = jfail(r);
			break;
		}
		str *s = &c->data[c->ndata++];
		*s = (str){0};
		where.len = 0;
		weir_buf_puts(&where, "data[");
		weir_buf_put_int(&where, (int64_t)i);
		weir_buf_putc(&where, ']');
		rc = read_str(r, &where, s);
	}
	weir_buf_free(&where);
	return rc;
}

static int read_config(jreader *r, struct config *c) {
	weir_buf where = {0};
	weir_buf_puts(&where, "the configuration");
	int has, rc = open_container(r, &where, '{', &has);
	weir_buf_free(&where);
	while (rc == 0 && has) {
		int k = peek(r);
		if (k < 0)
			return -1;
		if (k == '}') {
			rc = close_tok(r);
			break;
		}
		jtoken t;
		next(r, &t);
		weir_str name = {r->text.data, r->text.len};
		if (weir_str_eq(name, "perModel"))
			rc = read_per_model(r, c);
		else if (weir_str_eq(name, "data"))
			rc = read_data(r, c);
		else {
			weir_buf_puts(r->err, "unknown field ");
			put_quoted(r->err, name.data, name.len);
			weir_buf_puts(r->err, ": the configuration has the fields perModel and data");
			rc = jfail(r);
		}
	}
	if (rc)
		return rc;
	jtoken t;
	skip_ws(r);
	if (r->pos < r->n) {
		weir_buf_puts(r->err, "data after the configuration object");
		return jfail(r);
	}
	(void)t;
	return 0;
}

static int str_less(const str *a, const str *b) {
	size_t n = a->len < b->len ? a->len : b->len;
	int c = n ? memcmp(a->data, b->data, n) : 0;
	return c < 0 || (c == 0 && a->len < b->len);
}

/* check applies the rules the syntax does not: routes in sorted order, so
 * the first mistake is the same every time. */
static int check(struct config *c, weir_buf *err) {
	for (size_t i = 1; i < c->nroutes; i++) /* insertion sort: a handful of routes */
		for (size_t j = i; j > 0 && str_less(&c->routes[j].name, &c->routes[j - 1].name); j--) {
			route t = c->routes[j];
			c->routes[j] = c->routes[j - 1];
			c->routes[j - 1] = t;
		}
	for (size_t i = 0; i < c->nroutes; i++) {
		route *rt = &c->routes[i];
		if (!rt->name.len) {
			weir_buf_puts(err, "perModel: a route key is empty; use \"provider/model\" or \"model\"");
			return -1;
		}
		for (size_t j = 0; j < rt->n; j++) {
			str key = rt->secs[j].key;
			int twice = 0;
			for (size_t k = 0; k < j && !twice; k++)
				twice = bytes_eq(rt->secs[k].key.data, rt->secs[k].key.len, key.data, key.len);
			if (!key.len || twice) {
				put_route_where(err, rt->name);
				weir_buf_putc(err, '[');
				weir_buf_put_int(err, (int64_t)j);
				weir_buf_putc(err, ']');
				if (!key.len) {
					weir_buf_puts(err, ": key is empty");
				} else {
					weir_buf_puts(err, ": section ");
					put_quoted(err, key.data, key.len);
					weir_buf_puts(err, " is listed twice");
				}
				return -1;
			}
		}
	}
	for (size_t i = 0; i < c->ndata; i++) {
		str k = c->data[i];
		int twice = 0;
		for (size_t j = 0; j < i && !twice; j++)
			twice = bytes_eq(c->data[j].data, c->data[j].len, k.data, k.len);
		if (!k.len || twice) {
			weir_buf_puts(err, "data[");
			weir_buf_put_int(err, (int64_t)i);
			weir_buf_puts(err, twice ? "]: key " : "]: key is empty");
			if (twice) {
				put_quoted(err, k.data, k.len);
				weir_buf_puts(err, " is listed twice");
			}
			return -1;
		}
	}
	return 0;
}

static int configure(weir_str raw, weir_buf *err) {
	config_free(&cfg);
	if (trim(raw).len == 0)
		return WEIR_STATUS_OK;
	weir_buf msg = {0};
	jreader r = {.p = raw.data, .n = raw.len, .err = &msg};
	int rc = read_config(&r, &cfg);
	reader_free(&r);
	if (rc == 0 && !weir_oom)
		rc = check(&cfg, &msg);
	if (rc == 0 && !weir_oom) {
		weir_buf_free(&msg);
		return WEIR_STATUS_OK;
	}
	config_free(&cfg);
	weir_buf_puts(err, "configure: system-prompt config: "); /* as the Go SDK words it */
	weir_buf_put(err, msg.data, msg.len);
	weir_buf_free(&msg);
	return WEIR_STATUS_PLUGIN_ERROR;
}

/* ------------------------------------------------------------ rendering */

static const route *route_named(const uint8_t *p, size_t n) {
	for (size_t i = 0; i < cfg.nroutes; i++)
		if (bytes_eq(cfg.routes[i].name.data, cfg.routes[i].name.len, p, n))
			return &cfg.routes[i];
	return NULL;
}

/* sections_for is the configured route of r: provider/model, else model. */
static const route *sections_for(weir_route r) {
	weir_buf full = {0};
	weir_buf_put(&full, r.provider.data, r.provider.len);
	weir_buf_putc(&full, '/');
	weir_buf_put(&full, r.model.data, r.model.len);
	const route *rt = route_named(full.data, full.len);
	weir_buf_free(&full);
	return rt ? rt : route_named(r.model.data, r.model.len);
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

static int render(const weir_render_request *req, weir_buf *out, weir_buf *err) {
	(void)err;
	const route *rt = sections_for(req->route);
	size_t n = req->nsections;
	weir_section *secs = req->sections;
	if (rt && rt->n) {
		/* the assembly with the route's sections: same key replaced in
		 * place, a new key added at the end */
		secs = malloc((n + rt->n) * sizeof *secs);
		if (!secs) {
			weir_oom = 1;
			return WEIR_STATUS_PLUGIN_ERROR;
		}
		if (n)
			memcpy(secs, req->sections, n * sizeof *secs);
		for (size_t i = 0; i < rt->n; i++) {
			weir_str key = {rt->secs[i].key.data, rt->secs[i].key.len};
			weir_str text = {rt->secs[i].text.data, rt->secs[i].text.len};
			int replaced = 0;
			for (size_t j = 0; j < n; j++)
				if (bytes_eq(secs[j].key.data, secs[j].key.len, key.data, key.len))
					secs[j].text = text, replaced = 1;
			if (!replaced)
				secs[n++] = (weir_section){key, text};
		}
	}
	for (size_t i = 0; i < n; i++)
		add(out, secs[i].text);
	if (secs != req->sections)
		free(secs);
	/* the Environment section: wanted host data, the first value of a key */
	int env = 0;
	for (size_t i = 0; i < cfg.ndata; i++) {
		str k = cfg.data[i];
		for (size_t j = 0; j < req->nhost_data; j++) {
			weir_kv kv = req->host_data[j];
			if (!bytes_eq(kv.key.data, kv.key.len, k.data, k.len))
				continue;
			weir_str v = trim(kv.value);
			if (v.len) {
				if (!env) {
					if (out->len)
						weir_buf_puts(out, "\n\n");
					weir_buf_puts(out, "# Environment");
					env = 1;
				}
				weir_buf_putc(out, '\n');
				weir_buf_put(out, k.data, k.len);
				weir_buf_puts(out, ": ");
				weir_buf_put(out, v.data, v.len);
			}
			break;
		}
	}
	return WEIR_STATUS_OK;
}

const struct weir_plugin weir_plugin = {
	.name = "system-prompt",
	.version = "1.0.0",
	.configure = configure,
	.render_prompt = render,
	/* render is a pure function of the request and the configuration */
	.render_on_change = 1,
};
