/*
 * tidy: a Quarry rewriter in freestanding C, written from
 * docs/plugin-abi.md alone. It lower-cases the user's text (ASCII) and
 * squeezes runs of white space to one space, trimming both ends:
 * "  Spicy   NOODLES " becomes "spicy noodles". Text already tidy is
 * left alone (flags 0).
 *
 * Build: clang --target=wasm32 -O2 -nostdlib -Wl,--no-entry -o rewriter.wasm rewriter.c
 */
#include "quarry.h"

static int is_space(u8 c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

/* Rewrite request: q string · query bytes · filter bytes · context bytes ·
 * size u32 · from u32. Only q is read. */
QUARRY_EXPORT("quarry_rewrite") u64 quarry_rewrite(const u8 *req, u32 len) {
	quarry_reader r = quarry_read(req, len);
	u32 qlen;
	const u8 *q = quarry_read_bytes(&r, &qlen);
	if (r.bad) {
		return quarry_error("tidy: request too short");
	}
	/* Response: status 0 · flags 1 (q) · q string, at most as long as q. */
	u8 *out = quarry_out(6 + qlen);
	if (!out) {
		return quarry_error("tidy: out of memory");
	}
	u8 *text = out + 6;
	u32 n = 0;
	int gap = 0;
	for (u32 i = 0; i < qlen; i++) {
		u8 c = q[i];
		if (is_space(c)) {
			gap = n > 0;
			continue;
		}
		if (gap) {
			text[n++] = ' ';
			gap = 0;
		}
		if (c >= 'A' && c <= 'Z') {
			c += 'a' - 'A';
		}
		text[n++] = c;
	}
	int same = n == qlen;
	for (u32 i = 0; same && i < n; i++) {
		same = text[i] == q[i];
	}
	out[0] = QUARRY_OK;
	if (same) {
		out[1] = 0; /* no flags: nothing changed */
		return quarry_result(out, 2);
	}
	out[1] = 1; /* flag 1: q follows */
	quarry_put_u32(out + 2, n);
	return quarry_result(out, 6 + n);
}
