/*
 * tidy: a Quarry rewriter in C on the C SDK (sdk/c/quarry.h). It
 * lower-cases the user's text (ASCII) and squeezes runs of white space to
 * one space, trimming both ends: "  Spicy   NOODLES " becomes
 * "spicy noodles". Text already tidy is left alone.
 *
 * Build: clang --target=wasm32 -O2 -mbulk-memory -nostdlib -Wl,--no-entry -I ../../../sdk/c -o rewriter.wasm rewriter.c
 */
#include "quarry.h"

static int is_space(uint8_t c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

static const char *tidy(const quarry_rewrite_request *req, quarry_rewrite_response *resp) {
	const uint8_t *q = req->q.ptr;
	uint8_t *text = quarry_scratch(req->q.len);
	if (!text) {
		return "tidy: out of memory";
	}
	uint32_t n = 0;
	int gap = 0;
	for (uint32_t i = 0; i < req->q.len; i++) {
		uint8_t c = q[i];
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
	int same = n == req->q.len;
	for (uint32_t i = 0; same && i < n; i++) {
		same = text[i] == q[i];
	}
	if (!same) {
		quarry_set_q(resp, text, n);
	}
	return 0;
}

QUARRY_REWRITER(tidy)
