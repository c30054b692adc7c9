/*
 * boost: a Quarry ranker in C on the C SDK (sdk/c/quarry.h). Each
 * candidate's new score is
 *
 *     score + weight * field
 *
 * where field is a numeric stored field (the pipeline step must list it
 * in "fields"); a candidate without a number there keeps its score. The
 * host sorts the result. Configuration, both optional:
 *
 *     {"field": "rating", "weight": 0.5}     (defaults: "rating", 1)
 *
 * It reads the field in either column kind: a numbers column in place, or
 * a values column (when some candidate's value is not a number).
 *
 * Build: clang --target=wasm32 -O2 -mbulk-memory -nostdlib -Wl,--no-entry -I ../../../sdk/c -o ranker.wasm ranker.c
 */
#include "quarry.h"

static int configured;
static double weight = 1;
static char field[64] = "rating";

/* configure reads the configuration once. */
static const char *configure(void) {
	quarry_bytes cfg, name;
	if (!quarry_config_get(&cfg)) {
		return "boost: configuration too big";
	}
	if (quarry_json_number(cfg, "weight", &weight) < 0) {
		return "boost: \"weight\" must be a number";
	}
	switch (quarry_json_string(cfg, "field", &name)) {
	case -1:
		return "boost: \"field\" must be a string";
	case 1:
		if (name.len >= sizeof field) {
			return "boost: \"field\" is too long";
		}
		__builtin_memcpy(field, name.ptr, name.len);
		field[name.len] = 0;
	}
	configured = 1;
	return 0;
}

static const char *boost(quarry_batch *b) {
	if (!configured) {
		const char *err = configure();
		if (err) {
			return err;
		}
	}
	int f = quarry_field(b, field);
	const double *col = quarry_numbers(b, f);
	if (col) { /* a numbers column, in place: NaN where missing */
		for (uint32_t i = 0; i < b->n; i++) {
			if (col[i] == col[i]) {
				b->scores[i] += weight * col[i];
			}
		}
		return 0;
	}
	for (uint32_t i = 0; f >= 0 && i < b->n; i++) { /* a values column */
		quarry_value v;
		quarry_value_of(b, f, i, &v);
		if (v.kind == QUARRY_NUMBER) {
			b->scores[i] += weight * v.num;
		}
	}
	return 0;
}

QUARRY_RANKER(boost)
