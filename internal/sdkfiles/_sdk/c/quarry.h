/*
 * quarry.h: the C SDK for Quarry plugins (plugin ABI version 1,
 * docs/plugin-abi.md). One header, no libc, no WASI imports:
 *
 *     clang --target=wasm32 -O2 -mbulk-memory -nostdlib -Wl,--no-entry -I sdk/c -o plugin.wasm plugin.c
 *
 * (-mbulk-memory is optional: with it, a copy of unknown size is one
 * memory.copy instead of the byte loop below; a ranker over 1,000
 * candidates takes a quarter less time.)
 *
 * Include it in exactly one .c file of a plugin: it defines the exports
 * (quarry_abi_v1, quarry_alloc, and the hook registered with
 * QUARRY_REWRITER or QUARRY_RANKER).
 *
 * A rewriter:
 *
 *     #include "quarry.h"
 *     static const char *tidy(const quarry_rewrite_request *req, quarry_rewrite_response *resp) {
 *         char *q = quarry_scratch(req->q.len);          // valid until the next call
 *         ...
 *         quarry_set_q(resp, q, n);
 *         return 0;                                      // or an error message
 *     }
 *     QUARRY_REWRITER(tidy)
 *
 * A ranker sees the candidates as columns (a batch): scores[] to
 * overwrite, numeric fields read in place as double arrays:
 *
 *     static const char *boost(quarry_batch *b) {
 *         const double *rating = quarry_numbers(b, quarry_field(b, "rating"));
 *         for (uint32_t i = 0; rating && i < b->n; i++)
 *             if (rating[i] == rating[i]) b->scores[i] += 0.5 * rating[i]; // NaN: missing
 *         return 0;
 *     }
 *     QUARRY_RANKER(boost)
 *
 * The candidates are sorted by their new scores by the host, unless the
 * ranker calls quarry_keep_order. A field may also come as a values
 * column (when some value is not a number): quarry_numbers returns NULL
 * then, and quarry_number_of / quarry_value_of read either kind.
 *
 * Memory: the request buffer quarry_alloc hands out starts at the heap
 * (8-aligned, so numbers columns are 8-aligned in memory); after it, a
 * scratch arena (quarry_scratch) that every call starts afresh, which
 * holds the response too. Both grow with memory.grow, which fails at the
 * broker's memory cap: quarry_scratch returns NULL and the SDK answers
 * status 1 ("out of memory"). The configuration is kept in a static
 * buffer of QUARRY_CONFIG_MAX bytes (64 KiB unless defined before the
 * #include).
 */
#ifndef QUARRY_H
#define QUARRY_H

#include <stddef.h>
#include <stdint.h>

#define QUARRY_EXPORT(name) __attribute__((export_name(name)))
#define QUARRY_IMPORT(name) __attribute__((import_module("quarry_abi_v1"), import_name(name)))

#ifndef QUARRY_CONFIG_MAX
#define QUARRY_CONFIG_MAX 65536
#endif

/* Without libc (not wasm32-wasi), clang still calls memcpy, memmove and
 * memset for copies whose size it does not know: weak definitions, which
 * a libc's own replace. (LLVM does not turn these loops into calls to the
 * functions they define.) */
#if !defined(__wasi__) && !defined(QUARRY_NO_MEMFUNCS)
__attribute__((weak)) void *memcpy(void *dst, const void *src, size_t n) {
	uint8_t *d = (uint8_t *)dst;
	const uint8_t *s = (const uint8_t *)src;
	while (n--) {
		*d++ = *s++;
	}
	return dst;
}
__attribute__((weak)) void *memmove(void *dst, const void *src, size_t n) {
	uint8_t *d = (uint8_t *)dst;
	const uint8_t *s = (const uint8_t *)src;
	if (d < s) {
		while (n--) {
			*d++ = *s++;
		}
	} else {
		while (n--) {
			d[n] = s[n];
		}
	}
	return dst;
}
__attribute__((weak)) void *memset(void *dst, int c, size_t n) {
	uint8_t *d = (uint8_t *)dst;
	while (n--) {
		*d++ = (uint8_t)c;
	}
	return dst;
}
#endif

/* ---- host imports ---- */

/* Log levels for quarry_log. */
enum { QUARRY_LOG_DEBUG = 0, QUARRY_LOG_INFO = 1, QUARRY_LOG_WARN = 2, QUARRY_LOG_ERROR = 3 };

/* quarry_log writes a UTF-8 message to the broker's log (at most 4096
 * bytes are kept). */
QUARRY_IMPORT("log") void quarry_log(uint32_t level, const void *ptr, uint32_t len);

/* quarry_config copies the plugin's configuration (JSON) to ptr if it
 * fits in cap bytes; it returns its length either way (0: none). Most
 * plugins call quarry_config_get instead. */
QUARRY_IMPORT("config") uint32_t quarry_config(void *ptr, uint32_t cap);

/* ---- bytes and strings ---- */

/* quarry_bytes is a byte string: not NUL-terminated. */
typedef struct {
	const uint8_t *ptr;
	uint32_t len;
} quarry_bytes;

static inline uint32_t quarry_strlen(const char *s) {
	uint32_t n = 0;
	while (s[n]) {
		n++;
	}
	return n;
}

/* quarry_str makes bytes of a C string. */
static inline quarry_bytes quarry_str(const char *s) {
	quarry_bytes b = {(const uint8_t *)s, quarry_strlen(s)};
	return b;
}

/* quarry_equal reports whether bytes b equal the C string s. */
static inline int quarry_equal(quarry_bytes b, const char *s) {
	uint32_t n = quarry_strlen(s);
	if (n != b.len) {
		return 0;
	}
	for (uint32_t i = 0; i < n; i++) {
		if (b.ptr[i] != (uint8_t)s[i]) {
			return 0;
		}
	}
	return 1;
}

/* quarry_logs logs a C string. */
static inline void quarry_logs(uint32_t level, const char *msg) { quarry_log(level, msg, quarry_strlen(msg)); }

/* Little-endian loads and stores at any alignment (WebAssembly is
 * little-endian; __builtin_memcpy of a constant size is one load). */
static inline uint32_t quarry_load_u32(const uint8_t *p) {
	uint32_t v;
	__builtin_memcpy(&v, p, 4);
	return v;
}
static inline double quarry_load_f64(const uint8_t *p) {
	double v;
	__builtin_memcpy(&v, p, 8);
	return v;
}
static inline void quarry_store_u32(uint8_t *p, uint32_t v) { __builtin_memcpy(p, &v, 4); }
static inline void quarry_store_f64(uint8_t *p, double v) { __builtin_memcpy(p, &v, 8); }

/* ---- memory ---- */

extern uint8_t __heap_base; /* defined by wasm-ld: the first byte after the stack */

static uint32_t quarry__req_cap; /* the request buffer's size */
static uintptr_t quarry__arena;  /* the scratch arena's next free byte */

static inline uintptr_t quarry__base(void) { return ((uintptr_t)&__heap_base + 7) & ~(uintptr_t)7; }

/* quarry__reserve makes memory at least end bytes long: 0 if memory.grow
 * refused (the broker's cap). */
static inline int quarry__reserve(uint64_t end) {
	uint64_t have = (uint64_t)__builtin_wasm_memory_size(0) * 65536;
	if (end <= have) {
		return 1;
	}
	if (end > 0xffffffffull) {
		return 0;
	}
	return __builtin_wasm_memory_grow(0, (size_t)((end - have + 65535) / 65536)) != (size_t)-1;
}

/* The version marker. */
QUARRY_EXPORT("quarry_abi_v1") void quarry_abi_v1(void) {}

/* quarry_alloc: the host asks for a buffer before the first request and
 * again only for a bigger one, when the old one is no longer used; so the
 * buffer stays at the heap's start and grows. */
QUARRY_EXPORT("quarry_alloc") uint8_t *quarry_alloc(uint32_t size) {
	uintptr_t base = quarry__base();
	if (!quarry__reserve((uint64_t)base + size)) {
		__builtin_trap(); /* no memory for the request: the call fails */
	}
	quarry__req_cap = size;
	return (uint8_t *)base;
}

/* quarry_scratch_reset empties the scratch arena; the hooks QUARRY_REWRITER
 * and QUARRY_RANKER define call it first. */
static inline void quarry_scratch_reset(void) { quarry__arena = (quarry__base() + quarry__req_cap + 7) & ~(uintptr_t)7; }

/* quarry_scratch returns size bytes, 8-aligned, valid until the next call
 * into the plugin (its response is sent first), or NULL past the memory
 * cap. */
static inline void *quarry_scratch(uint32_t size) {
	if (quarry__arena == 0) {
		quarry_scratch_reset();
	}
	uintptr_t at = quarry__arena;
	uint64_t end = (uint64_t)at + size;
	if (!quarry__reserve(end)) {
		return 0;
	}
	quarry__arena = (uintptr_t)((end + 7) & ~7ull);
	return (void *)at;
}

/* ---- results ---- */

/* A hook's result packs a response's address and length. */
static inline uint64_t quarry_result(const void *ptr, uint32_t len) { return ((uint64_t)(uintptr_t)ptr << 32) | len; }

/* quarry_error answers status 1 with a message: the step's failure policy
 * applies. */
static inline uint64_t quarry_error(const char *msg) {
	static uint8_t fallback[2] = {1, '!'};
	uint32_t n = quarry_strlen(msg);
	uint8_t *out = (uint8_t *)quarry_scratch(1 + n);
	if (!out) {
		return quarry_result(fallback, 2);
	}
	out[0] = 1;
	__builtin_memcpy(out + 1, msg, n);
	return quarry_result(out, 1 + n);
}

/* ---- a bounds-checked reader ---- */

/* quarry_reader reads a request: once a read would pass the end, bad is
 * set and every later read returns nothing. */
typedef struct {
	const uint8_t *start, *p, *end;
	int bad;
} quarry_reader;

static inline quarry_reader quarry_read(const uint8_t *req, uint32_t len) {
	quarry_reader r = {req, req, req + len, 0};
	return r;
}

/* quarry_skip returns the next n bytes' address and moves past them. */
static inline const uint8_t *quarry_skip(quarry_reader *r, uint32_t n) {
	if (r->bad || (uint32_t)(r->end - r->p) < n) {
		r->bad = 1;
		return 0;
	}
	const uint8_t *at = r->p;
	r->p += n;
	return at;
}

static inline uint8_t quarry_read_u8(quarry_reader *r) {
	const uint8_t *p = quarry_skip(r, 1);
	return p ? *p : 0;
}

static inline uint32_t quarry_read_u32(quarry_reader *r) {
	const uint8_t *p = quarry_skip(r, 4);
	return p ? quarry_load_u32(p) : 0;
}

static inline double quarry_read_f64(quarry_reader *r) {
	const uint8_t *p = quarry_skip(r, 8);
	return p ? quarry_load_f64(p) : 0;
}

/* quarry_read_bytes reads a string or bytes: u32 length, then the bytes. */
static inline quarry_bytes quarry_read_bytes(quarry_reader *r) {
	quarry_bytes b = {0, quarry_read_u32(r)};
	b.ptr = quarry_skip(r, b.len);
	if (!b.ptr) {
		b.len = 0;
	}
	return b;
}

/* quarry_align8 skips a numbers column's padding: up to an offset from
 * the request's start that is a multiple of 8. */
static inline void quarry_align8(quarry_reader *r) {
	uint32_t off = (uint32_t)(r->p - r->start);
	quarry_skip(r, (8 - off % 8) % 8);
}

/* ---- configuration ---- */

/* quarry_config_get returns the plugin's configuration (JSON; length 0
 * when there is none), read from the host once and kept. It returns 0 if
 * the configuration is over QUARRY_CONFIG_MAX bytes. */
static inline int quarry_config_get(quarry_bytes *out) {
	static uint8_t buf[QUARRY_CONFIG_MAX];
	static uint32_t len;
	static int state; /* 0 unread, 1 read, 2 too big */
	if (state == 0) {
		len = quarry_config(buf, sizeof buf);
		state = len > sizeof buf ? 2 : 1;
	}
	out->ptr = buf;
	out->len = state == 1 ? len : 0;
	return state == 1;
}

/* quarry__json_key finds "key": at the top level of a JSON object (a
 * plain search for the quoted key followed by a colon: keys must not
 * appear inside string values) and returns the index of its value, or -1. */
static inline int32_t quarry__json_key(quarry_bytes json, const char *key) {
	uint32_t k = quarry_strlen(key), n = json.len;
	const uint8_t *s = json.ptr;
	for (uint32_t i = 0; i + k + 2 <= n; i++) {
		if (s[i] != '"' || s[i + k + 1] != '"') {
			continue;
		}
		uint32_t j = 0;
		while (j < k && s[i + 1 + j] == (uint8_t)key[j]) {
			j++;
		}
		if (j != k) {
			continue;
		}
		uint32_t at = i + k + 2;
		while (at < n && (s[at] == ' ' || s[at] == '\t' || s[at] == '\n' || s[at] == '\r')) {
			at++;
		}
		if (at >= n || s[at] != ':') {
			continue;
		}
		for (at++; at < n && (s[at] == ' ' || s[at] == '\t' || s[at] == '\n' || s[at] == '\r'); at++) {
		}
		return (int32_t)at;
	}
	return -1;
}

/* quarry_json_number reads the number under key in a flat JSON object
 * (the configuration): 1 found, 0 absent, -1 not a number. */
static inline int quarry_json_number(quarry_bytes json, const char *key, double *out) {
	int32_t at = quarry__json_key(json, key);
	if (at < 0) {
		return 0;
	}
	const uint8_t *s = json.ptr;
	uint32_t i = (uint32_t)at, n = json.len;
	double sign = 1, v = 0, scale = 1;
	int digits = 0;
	if (i < n && s[i] == '-') {
		sign = -1;
		i++;
	}
	for (; i < n && s[i] >= '0' && s[i] <= '9'; i++, digits++) {
		v = v * 10 + (s[i] - '0');
	}
	if (i < n && s[i] == '.') {
		for (i++; i < n && s[i] >= '0' && s[i] <= '9'; i++, digits++) {
			v = v * 10 + (s[i] - '0');
			scale *= 10;
		}
	}
	if (!digits) {
		return -1;
	}
	v /= scale;
	if (i < n && (s[i] == 'e' || s[i] == 'E')) {
		int neg = 0, e = 0;
		i++;
		if (i < n && (s[i] == '+' || s[i] == '-')) {
			neg = s[i] == '-';
			i++;
		}
		for (; i < n && s[i] >= '0' && s[i] <= '9' && e < 400; i++) {
			e = e * 10 + (s[i] - '0');
		}
		for (; e > 0; e--) {
			v = neg ? v / 10 : v * 10;
		}
	}
	*out = sign * v;
	return 1;
}

/* quarry_json_string reads the string under key in a flat JSON object
 * (without unescaping: the bytes between the quotes): 1 found, 0 absent,
 * -1 not a string. The bytes point into json. */
static inline int quarry_json_string(quarry_bytes json, const char *key, quarry_bytes *out) {
	int32_t at = quarry__json_key(json, key);
	if (at < 0) {
		return 0;
	}
	uint32_t i = (uint32_t)at, n = json.len;
	if (i >= n || json.ptr[i] != '"') {
		return -1;
	}
	uint32_t start = ++i;
	for (; i < n && json.ptr[i] != '"'; i++) {
		if (json.ptr[i] == '\\') {
			i++;
		}
	}
	if (i >= n) {
		return -1;
	}
	out->ptr = json.ptr + start;
	out->len = i - start;
	return 1;
}

/* ---- rewrite ---- */

/* quarry_rewrite_request is a decoded rewrite request; its bytes point
 * into the request (valid during the call). query, filter and context
 * have length 0 when absent. */
typedef struct {
	quarry_bytes q, query, filter, context;
	uint32_t size, from;
} quarry_rewrite_request;

/* Rewrite response flags: which fields the response replaces. */
enum { QUARRY_SET_Q = 1, QUARRY_SET_QUERY = 2, QUARRY_SET_FILTER = 4, QUARRY_SET_RERANK_DEPTH = 8 };

/* quarry_rewrite_response is what a rewriter changes: only the fields
 * whose flag is set (use the setters). */
typedef struct {
	uint8_t flags;
	quarry_bytes q, query, filter;
	uint32_t rerank_depth;
} quarry_rewrite_response;

static inline void quarry_set_q(quarry_rewrite_response *r, const void *ptr, uint32_t len) {
	r->flags |= QUARRY_SET_Q;
	r->q.ptr = (const uint8_t *)ptr;
	r->q.len = len;
}
static inline void quarry_set_query(quarry_rewrite_response *r, const void *json, uint32_t len) {
	r->flags |= QUARRY_SET_QUERY;
	r->query.ptr = (const uint8_t *)json;
	r->query.len = len;
}
static inline void quarry_set_filter(quarry_rewrite_response *r, const void *json, uint32_t len) {
	r->flags |= QUARRY_SET_FILTER;
	r->filter.ptr = (const uint8_t *)json;
	r->filter.len = len;
}
static inline void quarry_set_rerank_depth(quarry_rewrite_response *r, uint32_t depth) {
	r->flags |= QUARRY_SET_RERANK_DEPTH;
	r->rerank_depth = depth;
}

/* quarry_decode_rewrite decodes a rewrite request: 1, or 0 if malformed. */
static inline int quarry_decode_rewrite(const uint8_t *req, uint32_t len, quarry_rewrite_request *out) {
	quarry_reader r = quarry_read(req, len);
	out->q = quarry_read_bytes(&r);
	out->query = quarry_read_bytes(&r);
	out->filter = quarry_read_bytes(&r);
	out->context = quarry_read_bytes(&r);
	out->size = quarry_read_u32(&r);
	out->from = quarry_read_u32(&r);
	return !r.bad && r.p == r.end;
}

static inline uint8_t *quarry__put_bytes(uint8_t *w, quarry_bytes b) {
	quarry_store_u32(w, b.len);
	if (b.len) {
		__builtin_memcpy(w + 4, b.ptr, b.len);
	}
	return w + 4 + b.len;
}

/* quarry_encode_rewrite writes a rewrite response (status 0) in the
 * scratch arena and returns the hook's result. */
static inline uint64_t quarry_encode_rewrite(const quarry_rewrite_response *resp) {
	uint8_t flags = resp->flags;
	if (flags & ~15) {
		return quarry_error("quarry.h: unknown rewrite response flags");
	}
	uint64_t size = 2;
	if (flags & QUARRY_SET_Q) {
		size += 4ull + resp->q.len;
	}
	if (flags & QUARRY_SET_QUERY) {
		size += 4ull + resp->query.len;
	}
	if (flags & QUARRY_SET_FILTER) {
		size += 4ull + resp->filter.len;
	}
	if (flags & QUARRY_SET_RERANK_DEPTH) {
		size += 4;
	}
	uint8_t *out = size < 0xffffffffull ? (uint8_t *)quarry_scratch((uint32_t)size) : 0;
	if (!out) {
		return quarry_error("out of memory");
	}
	uint8_t *w = out;
	*w++ = 0;
	*w++ = flags;
	if (flags & QUARRY_SET_Q) {
		w = quarry__put_bytes(w, resp->q);
	}
	if (flags & QUARRY_SET_QUERY) {
		w = quarry__put_bytes(w, resp->query);
	}
	if (flags & QUARRY_SET_FILTER) {
		w = quarry__put_bytes(w, resp->filter);
	}
	if (flags & QUARRY_SET_RERANK_DEPTH) {
		quarry_store_u32(w, resp->rerank_depth);
		w += 4;
	}
	return quarry_result(out, (uint32_t)(w - out));
}

/* quarry_rewrite_fn is a rewriter: it reads req, sets what it changes in
 * resp, and returns NULL, or an error message (status 1). */
typedef const char *(*quarry_rewrite_fn)(const quarry_rewrite_request *req, quarry_rewrite_response *resp);

/* quarry_handle_rewrite runs a rewriter on an encoded request. */
static inline uint64_t quarry_handle_rewrite(quarry_rewrite_fn fn, const uint8_t *req, uint32_t len) {
	quarry_scratch_reset();
	quarry_rewrite_request in;
	if (!quarry_decode_rewrite(req, len, &in)) {
		return quarry_error("decode rewrite request: malformed");
	}
	quarry_rewrite_response out = {0};
	const char *err = fn(&in, &out);
	if (err) {
		return quarry_error(err);
	}
	return quarry_encode_rewrite(&out);
}

/* QUARRY_REWRITER(fn) makes fn the plugin's rewrite hook. */
#define QUARRY_REWRITER(fn)                                                                      \
	QUARRY_EXPORT("quarry_rewrite") uint64_t quarry_rewrite(const uint8_t *req, uint32_t len) { \
		return quarry_handle_rewrite(fn, req, len);                                              \
	}

/* ---- rank ---- */

/* Value kinds. */
enum { QUARRY_MISSING = 0, QUARRY_NUMBER = 1, QUARRY_STRING = 2, QUARRY_BOOL = 3, QUARRY_LIST = 4 };

/* quarry_value is one stored field value of a candidate. A list's items
 * are read with quarry_list_next. */
typedef struct {
	uint8_t kind;
	double num;       /* QUARRY_NUMBER */
	quarry_bytes str; /* QUARRY_STRING */
	int boolean;      /* QUARRY_BOOL */
	uint32_t count;   /* QUARRY_LIST: the number of items */
	const uint8_t *items;
} quarry_value;

/* quarry__value decodes one value at *p (already checked) and moves past. */
static inline const uint8_t *quarry__value(const uint8_t *p, quarry_value *v);

/* quarry__skip_value moves past one value at p (already checked). */
static inline const uint8_t *quarry__skip_value(const uint8_t *p) {
	quarry_value v;
	return quarry__value(p, &v);
}

static inline const uint8_t *quarry__value(const uint8_t *p, quarry_value *v) {
	v->kind = *p++;
	switch (v->kind) {
	case QUARRY_NUMBER:
		v->num = quarry_load_f64(p);
		return p + 8;
	case QUARRY_STRING:
		v->str.len = quarry_load_u32(p);
		v->str.ptr = p + 4;
		return p + 4 + v->str.len;
	case QUARRY_BOOL:
		v->boolean = *p != 0;
		return p + 1;
	case QUARRY_LIST:
		v->count = quarry_load_u32(p);
		v->items = p + 4;
		p += 4;
		for (uint32_t i = 0; i < v->count; i++) {
			p = quarry__skip_value(p);
		}
		return p;
	}
	return p;
}

/* quarry_list_next reads a list's next item into item and moves the
 * list on: 0 when there is none left. */
static inline int quarry_list_next(quarry_value *list, quarry_value *item) {
	if (list->kind != QUARRY_LIST || list->count == 0) {
		return 0;
	}
	list->items = quarry__value(list->items, item);
	list->count--;
	return 1;
}

/* quarry__check_value checks one value of a values column (kinds, bounds,
 * nesting at most 4 deep). */
static inline void quarry__check_value(quarry_reader *r, int depth) {
	switch (quarry_read_u8(r)) {
	case QUARRY_MISSING:
		break;
	case QUARRY_NUMBER:
		quarry_skip(r, 8);
		break;
	case QUARRY_STRING:
		quarry_read_bytes(r);
		break;
	case QUARRY_BOOL:
		quarry_skip(r, 1);
		break;
	case QUARRY_LIST: {
		uint32_t n = quarry_read_u32(r);
		if (depth >= 4 || n > (uint32_t)(r->end - r->p)) {
			r->bad = 1;
		}
		for (uint32_t i = 0; i < n && !r->bad; i++) {
			quarry__check_value(r, depth + 1);
		}
		break;
	}
	default:
		r->bad = 1;
	}
}

/* Column kinds. */
enum { QUARRY_COLUMN_VALUES = 0, QUARRY_COLUMN_NUMBERS = 1 };

typedef struct {
	quarry_bytes name;
	uint8_t kind;
	const double *numbers;  /* QUARRY_COLUMN_NUMBERS: n doubles in place */
	const uint8_t **values; /* QUARRY_COLUMN_VALUES: each candidate's value */
} quarry__column;

/* quarry_batch is a rank request as columns. n candidates, best first;
 * scores holds their scores, which the ranker overwrites (scores must be
 * finite). Everything is valid during the call only. */
typedef struct {
	quarry_bytes q, context;
	uint32_t n;
	double *scores;
	uint32_t nfields;

	quarry__column *cols;
	const uint8_t *ids;         /* the first id's length prefix */
	const uint8_t **id_at;      /* filled on the first quarry_id */
	uint8_t *dropped;           /* n flags */
	const uint32_t *order;      /* quarry_keep_order's */
	uint32_t order_len;
} quarry_batch;

/* quarry_decode_rank decodes a rank request into b, in place (scores are
 * copied to the scratch arena): 1, or 0 if malformed or out of memory. */
static inline int quarry_decode_rank(const uint8_t *req, uint32_t len, quarry_batch *b) {
	quarry_reader r = quarry_read(req, len);
	__builtin_memset(b, 0, sizeof *b);
	b->q = quarry_read_bytes(&r);
	b->context = quarry_read_bytes(&r);
	uint32_t nf = quarry_read_u32(&r);
	if (r.bad || nf > len / 4) {
		return 0;
	}
	b->nfields = nf;
	b->cols = (quarry__column *)quarry_scratch(nf * (uint32_t)sizeof(quarry__column));
	if (!b->cols) {
		return 0;
	}
	for (uint32_t j = 0; j < nf; j++) {
		b->cols[j].name = quarry_read_bytes(&r);
	}
	uint32_t n = quarry_read_u32(&r);
	uint32_t ids_len = quarry_read_u32(&r);
	if (r.bad || n > len / 12) { /* each candidate takes at least 12 bytes */
		return 0;
	}
	b->n = n;
	b->ids = quarry_skip(&r, ids_len);
	const uint8_t *scores = quarry_skip(&r, 8 * n);
	b->scores = (double *)quarry_scratch(8 * n);
	b->dropped = (uint8_t *)quarry_scratch(n);
	if (r.bad || !b->scores || !b->dropped) {
		return 0;
	}
	__builtin_memcpy(b->scores, scores, 8 * n);
	__builtin_memset(b->dropped, 0, n);
	for (uint32_t j = 0; j < nf && !r.bad; j++) {
		quarry__column *c = &b->cols[j];
		c->kind = quarry_read_u8(&r);
		if (c->kind == QUARRY_COLUMN_NUMBERS) {
			quarry_align8(&r);
			c->numbers = (const double *)quarry_skip(&r, 8 * n);
		} else if (c->kind == QUARRY_COLUMN_VALUES) {
			c->values = (const uint8_t **)quarry_scratch(n * (uint32_t)sizeof(uint8_t *));
			if (!c->values) {
				return 0;
			}
			for (uint32_t i = 0; i < n && !r.bad; i++) {
				c->values[i] = r.p;
				quarry__check_value(&r, 0);
			}
		} else {
			r.bad = 1;
		}
	}
	return !r.bad && r.p == r.end;
}

/* quarry_field returns the index of a field the request carries, or -1. */
static inline int quarry_field(const quarry_batch *b, const char *name) {
	for (uint32_t j = 0; j < b->nfields; j++) {
		if (quarry_equal(b->cols[j].name, name)) {
			return (int)j;
		}
	}
	return -1;
}

/* quarry_numbers returns a field's numbers column, read in place: n
 * doubles indexed like scores, NaN where a candidate has no value; NULL
 * if field is -1 or the field came as a values column (read it with
 * quarry_number_of or quarry_value_of). */
static inline const double *quarry_numbers(const quarry_batch *b, int field) {
	if (field < 0 || (uint32_t)field >= b->nfields || b->cols[field].kind != QUARRY_COLUMN_NUMBERS) {
		return 0;
	}
	return b->cols[field].numbers;
}

/* quarry_value_of reads candidate i's value of a field, from either
 * column kind (missing, when the field is -1 or i out of range). */
static inline void quarry_value_of(const quarry_batch *b, int field, uint32_t i, quarry_value *v) {
	__builtin_memset(v, 0, sizeof *v);
	if (field < 0 || (uint32_t)field >= b->nfields || i >= b->n) {
		return;
	}
	const quarry__column *c = &b->cols[field];
	if (c->kind == QUARRY_COLUMN_NUMBERS) {
		double x = c->numbers[i];
		if (x == x) {
			v->kind = QUARRY_NUMBER;
			v->num = x;
		}
		return;
	}
	quarry__value(c->values[i], v);
}

/* quarry_number_of reads candidate i's number in a field (a list's first
 * item, if a number): 1, or 0 if it has none. */
static inline int quarry_number_of(const quarry_batch *b, int field, uint32_t i, double *out) {
	quarry_value v;
	quarry_value_of(b, field, i, &v);
	if (v.kind == QUARRY_LIST) {
		quarry_value item;
		if (!quarry_list_next(&v, &item)) {
			return 0;
		}
		v = item;
	}
	if (v.kind != QUARRY_NUMBER) {
		return 0;
	}
	*out = v.num;
	return 1;
}

/* quarry_id returns candidate i's document id (an empty one if i is out
 * of range or memory ran out). */
static inline quarry_bytes quarry_id(quarry_batch *b, uint32_t i) {
	quarry_bytes id = {0, 0};
	if (i >= b->n) {
		return id;
	}
	if (!b->id_at) {
		b->id_at = (const uint8_t **)quarry_scratch(b->n * (uint32_t)sizeof(uint8_t *));
		if (!b->id_at) {
			return id;
		}
		const uint8_t *p = b->ids;
		for (uint32_t j = 0; j < b->n; j++) {
			b->id_at[j] = p;
			p += 4 + quarry_load_u32(p);
		}
	}
	id.len = quarry_load_u32(b->id_at[i]);
	id.ptr = b->id_at[i] + 4;
	return id;
}

/* quarry_drop removes candidate i from the results. */
static inline void quarry_drop(quarry_batch *b, uint32_t i) {
	if (i < b->n) {
		b->dropped[i] = 1;
	}
}

/* quarry_keep_order makes order (count candidate indexes, each at most
 * once) the result, in that order, with their scores; the host does not
 * sort. Candidates not listed are dropped. order must stay valid until the
 * ranker returns (use quarry_scratch). */
static inline void quarry_keep_order(quarry_batch *b, const uint32_t *order, uint32_t count) {
	b->order = order;
	b->order_len = count;
}

/* quarry_rank_writer writes a rank response: quarry_rank_begin,
 * quarry_rank_put for each entry, quarry_rank_end. */
typedef struct {
	uint8_t *out;
	uint32_t count, cap;
	int bad;
} quarry_rank_writer;

/* Rank response flags. */
enum { QUARRY_SORT_BY_SCORE = 1 };

/* quarry_rank_begin starts a response of at most cap entries: 0 if out of
 * memory. flags: QUARRY_SORT_BY_SCORE, or 0 to keep the entries' order. */
static inline int quarry_rank_begin(quarry_rank_writer *w, uint8_t flags, uint32_t cap) {
	w->count = 0;
	w->cap = cap;
	w->bad = 0;
	w->out = cap < 0x15555550u ? (uint8_t *)quarry_scratch(6 + 12 * cap) : 0;
	if (!w->out) {
		return 0;
	}
	w->out[0] = 0;
	w->out[1] = flags;
	return 1;
}

/* quarry_rank_put adds an entry: the index of a request's candidate and
 * its score (finite). */
static inline void quarry_rank_put(quarry_rank_writer *w, uint32_t index, double score) {
	if (w->count >= w->cap || !__builtin_isfinite(score)) {
		w->bad = 1;
		return;
	}
	uint8_t *e = w->out + 6 + 12 * w->count++;
	quarry_store_u32(e, index);
	quarry_store_f64(e + 4, score);
}

/* quarry_rank_end finishes the response and returns the hook's result. */
static inline uint64_t quarry_rank_end(quarry_rank_writer *w) {
	if (!w->out) {
		return quarry_error("out of memory");
	}
	if (w->bad) {
		return quarry_error("quarry.h: a score that is not finite, or more entries than begun with");
	}
	quarry_store_u32(w->out + 2, w->count);
	return quarry_result(w->out, 6 + 12 * w->count);
}

/* quarry_rank_fn is a ranker over a batch: it overwrites b->scores (and
 * may drop candidates or fix the order) and returns NULL, or an error
 * message (status 1). */
typedef const char *(*quarry_rank_fn)(quarry_batch *b);

/* quarry_handle_rank runs a ranker on an encoded request. */
static inline uint64_t quarry_handle_rank(quarry_rank_fn fn, const uint8_t *req, uint32_t len) {
	quarry_scratch_reset();
	quarry_batch b;
	if (!quarry_decode_rank(req, len, &b)) {
		return quarry_error("decode rank request: malformed (or out of memory)");
	}
	const char *err = fn(&b);
	if (err) {
		return quarry_error(err);
	}
	quarry_rank_writer w;
	if (b.order) {
		if (!quarry_rank_begin(&w, 0, b.order_len)) {
			return quarry_error("out of memory");
		}
		for (uint32_t k = 0; k < b.order_len; k++) {
			uint32_t i = b.order[k];
			if (i >= b.n || b.dropped[i] == 2) {
				return quarry_error("quarry.h: quarry_keep_order: an index out of range or repeated");
			}
			b.dropped[i] = 2;
			quarry_rank_put(&w, i, b.scores[i]);
		}
		return quarry_rank_end(&w);
	}
	if (!quarry_rank_begin(&w, QUARRY_SORT_BY_SCORE, b.n)) {
		return quarry_error("out of memory");
	}
	for (uint32_t i = 0; i < b.n; i++) {
		if (!b.dropped[i]) {
			quarry_rank_put(&w, i, b.scores[i]);
		}
	}
	return quarry_rank_end(&w);
}

/* QUARRY_RANKER(fn) makes fn the plugin's rank hook. */
#define QUARRY_RANKER(fn)                                                                    \
	QUARRY_EXPORT("quarry_rank") uint64_t quarry_rank(const uint8_t *req, uint32_t len) { \
		return quarry_handle_rank(fn, req, len);                                             \
	}

#endif
