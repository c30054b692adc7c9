/*
 * quarry.h: the Quarry plugin ABI, version 1, for freestanding C (no libc),
 * written from docs/plugin-abi.md alone. Include it in exactly one .c file
 * per plugin: it defines the version marker and quarry_alloc.
 *
 * Memory: the request buffer quarry_alloc hands out starts at the heap
 * (8-aligned, so the request's numbers columns are 8-aligned in memory
 * too); a response is written after it. Both grow with memory.grow, which
 * returns -1 at the broker's memory cap.
 */
#ifndef QUARRY_H
#define QUARRY_H

typedef unsigned char u8;
typedef unsigned int u32;
typedef unsigned long long u64;

#define QUARRY_EXPORT(name) __attribute__((export_name(name)))
#define QUARRY_IMPORT(name) __attribute__((import_module("quarry_abi_v1"), import_name(name)))

/* Host imports. */
QUARRY_IMPORT("log") void quarry_log(u32 level, const void *ptr, u32 len);
QUARRY_IMPORT("config") u32 quarry_config(void *ptr, u32 cap);

enum { QUARRY_OK = 0, QUARRY_ERROR = 1 };

/* The ABI version marker. */
QUARRY_EXPORT("quarry_abi_v1") void quarry_abi_v1(void) {}

extern u8 __heap_base; /* defined by wasm-ld: the first byte after the stack */

static u32 quarry_req_cap; /* the request buffer's size */

static inline u8 *quarry_base(void) {
	return (u8 *)(((unsigned long)&__heap_base + 7) & ~7ul);
}

/* quarry_reserve makes memory at least end bytes long: 0 if memory.grow
 * refused (the broker's cap). */
static inline int quarry_reserve(u64 end) {
	u64 have = (u64)__builtin_wasm_memory_size(0) * 65536;
	if (end <= have) {
		return 1;
	}
	return __builtin_wasm_memory_grow(0, (unsigned long)((end - have + 65535) / 65536)) != (unsigned long)-1;
}

/* The host asks for a buffer before the first request and again only for
 * a bigger one; the old one is no longer used then, so the buffer stays
 * where it is and grows. */
QUARRY_EXPORT("quarry_alloc") u8 *quarry_alloc(u32 size) {
	u8 *base = quarry_base();
	if (!quarry_reserve((u64)(unsigned long)base + size)) {
		__builtin_trap(); /* no memory for the request: the call fails */
	}
	quarry_req_cap = size;
	return base;
}

/* quarry_out returns size bytes for a response, after the request buffer,
 * or 0 past the memory cap. */
static inline u8 *quarry_out(u32 size) {
	u8 *out = (u8 *)(((unsigned long)quarry_base() + quarry_req_cap + 7) & ~7ul);
	return quarry_reserve((u64)(unsigned long)out + size) ? out : 0;
}

/* quarry_result packs a hook's result: (ptr << 32) | len. */
static inline u64 quarry_result(const u8 *ptr, u32 len) {
	return ((u64)(unsigned long)ptr << 32) | len;
}

/* quarry_error answers status 1 and a message; the step's failure policy
 * applies. The message is a C string literal. */
static inline u64 quarry_error(const char *msg) {
	static u8 buf[128];
	u32 n = 0;
	buf[n++] = QUARRY_ERROR;
	while (*msg && n < sizeof buf) {
		buf[n++] = (u8)*msg++;
	}
	return quarry_result(buf, n);
}

/* Little-endian loads and stores at any alignment (WebAssembly is
 * little-endian; __builtin_memcpy of a constant size is a plain load or
 * store). */
static inline u32 quarry_u32(const u8 *p) {
	u32 v;
	__builtin_memcpy(&v, p, 4);
	return v;
}
static inline double quarry_f64(const u8 *p) {
	double v;
	__builtin_memcpy(&v, p, 8);
	return v;
}
static inline void quarry_put_u32(u8 *p, u32 v) { __builtin_memcpy(p, &v, 4); }
static inline void quarry_put_f64(u8 *p, double v) { __builtin_memcpy(p, &v, 8); }

/* A reader of a request with bounds checks: bad is set, and every later
 * read returns nothing, once a read would pass the end. */
typedef struct {
	const u8 *start, *p, *end;
	int bad;
} quarry_reader;

static inline quarry_reader quarry_read(const u8 *req, u32 len) {
	quarry_reader r = {req, req, req + len, 0};
	return r;
}

/* quarry_skip returns the next n bytes' address and moves past them. */
static inline const u8 *quarry_skip(quarry_reader *r, u32 n) {
	if (r->bad || (u32)(r->end - r->p) < n) {
		r->bad = 1;
		return 0;
	}
	const u8 *at = r->p;
	r->p += n;
	return at;
}

static inline u32 quarry_read_u32(quarry_reader *r) {
	const u8 *p = quarry_skip(r, 4);
	return p ? quarry_u32(p) : 0;
}

static inline u8 quarry_read_u8(quarry_reader *r) {
	const u8 *p = quarry_skip(r, 1);
	return p ? *p : 0;
}

/* quarry_read_bytes reads a string or bytes: u32 length, then the bytes. */
static inline const u8 *quarry_read_bytes(quarry_reader *r, u32 *len) {
	*len = quarry_read_u32(r);
	return quarry_skip(r, *len);
}

/* quarry_align8 skips a numbers column's padding: zero bytes up to an
 * offset from the request's start that is a multiple of 8. */
static inline void quarry_align8(quarry_reader *r) {
	u32 off = (u32)(r->p - r->start);
	quarry_skip(r, (8 - off % 8) % 8);
}

#endif
