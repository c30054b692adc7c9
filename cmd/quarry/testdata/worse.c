/*
 * worse: a ranker made worse on purpose, for the relevance gate's tests
 * (cmd/quarry/relevance_test.go). It buries the best-rated documents:
 *
 *     score - 10 * rating
 *
 * The step must list "rating" in its fields.
 */
#include "quarry.h"

static const char *bury(quarry_batch *b) {
	int f = quarry_field(b, "rating");
	for (uint32_t i = 0; f >= 0 && i < b->n; i++) {
		quarry_value v;
		quarry_value_of(b, f, i, &v);
		if (v.kind == QUARRY_NUMBER) {
			b->scores[i] -= 10 * v.num;
		}
	}
	return 0;
}

QUARRY_RANKER(bury)
