/*
 * The C SDK's own test module: plugins/csdk_test.go builds it with clang
 * and calls it with wazero. It exercises quarry.h's reader and writer:
 *
 *   echo_rank     decodes a rank request with quarry_decode_rank and
 *                 encodes it again (every column as values) from what the
 *                 accessors read: ids, scores, fields, values, lists;
 *   quarry_rank   a ranker whose behaviour q chooses (below);
 *   quarry_rewrite  a rewriter that sets every response field.
 */
#include "quarry.h"

enum { QUARRY_OK_STATUS = 0 };

/* A growing output buffer in the scratch arena. */
static uint8_t *out_buf, *out_at;

static void put_u8(uint8_t v) { *out_at++ = v; }
static void put_u32(uint32_t v) {
	quarry_store_u32(out_at, v);
	out_at += 4;
}
static void put_f64(double v) {
	quarry_store_f64(out_at, v);
	out_at += 8;
}
static void put_bytes(quarry_bytes b) {
	put_u32(b.len);
	for (uint32_t i = 0; i < b.len; i++) {
		*out_at++ = b.ptr[i];
	}
}

static void put_value(quarry_value *v) {
	put_u8(v->kind);
	switch (v->kind) {
	case QUARRY_NUMBER:
		put_f64(v->num);
		break;
	case QUARRY_STRING:
		put_bytes(v->str);
		break;
	case QUARRY_BOOL:
		put_u8((uint8_t)v->boolean);
		break;
	case QUARRY_LIST: {
		put_u32(v->count);
		quarry_value item;
		while (quarry_list_next(v, &item)) {
			put_value(&item);
		}
		break;
	}
	}
}

QUARRY_EXPORT("echo_rank") uint64_t echo_rank(const uint8_t *req, uint32_t len) {
	quarry_scratch_reset();
	quarry_batch b;
	if (!quarry_decode_rank(req, len, &b)) {
		return quarry_error("decode rank request: malformed");
	}
	/* Every value re-encoded is at most as long as the request's, plus
	 * the kinds of numbers columns. */
	out_buf = out_at = quarry_scratch(2 * len + 16 * b.n * (b.nfields + 1) + 64);
	if (!out_buf) {
		return quarry_error("out of memory");
	}
	put_u8(QUARRY_OK_STATUS);
	put_bytes(b.q);
	put_bytes(b.context);
	put_u32(b.nfields);
	for (uint32_t j = 0; j < b.nfields; j++) {
		put_bytes(b.cols[j].name);
	}
	put_u32(b.n);
	uint32_t total = 0;
	for (uint32_t i = 0; i < b.n; i++) {
		total += 4 + quarry_id(&b, i).len;
	}
	put_u32(total);
	for (uint32_t i = 0; i < b.n; i++) {
		put_bytes(quarry_id(&b, i));
	}
	for (uint32_t i = 0; i < b.n; i++) {
		put_f64(b.scores[i]);
	}
	for (uint32_t j = 0; j < b.nfields; j++) {
		const double *nums = quarry_numbers(&b, (int)j);
		put_u8(QUARRY_COLUMN_VALUES);
		for (uint32_t i = 0; i < b.n; i++) {
			quarry_value v;
			quarry_value_of(&b, (int)j, i, &v);
			/* A numbers column read in place agrees with quarry_value_of. */
			if (nums && !(nums[i] != nums[i] ? v.kind == QUARRY_MISSING : v.kind == QUARRY_NUMBER && v.num == nums[i])) {
				return quarry_error("quarry_numbers and quarry_value_of disagree");
			}
			double x;
			int has = quarry_number_of(&b, (int)j, i, &x);
			if (has != (v.kind == QUARRY_NUMBER) && v.kind != QUARRY_LIST) {
				return quarry_error("quarry_number_of disagrees with the value's kind");
			}
			put_value(&v);
		}
	}
	return quarry_result(out_buf, (uint32_t)(out_at - out_buf));
}

/* test_rank, by q:
 *   "reverse"   keeps the candidates in reverse order (no sort), scores unchanged
 *   "drop-odd"  drops odd candidates, score = 2 * score
 *   "nan"       a NaN score: the SDK answers status 1
 *   "id-length" score = the id's length
 *   "config"    score = score + the configuration's "w"
 *   "field"     score = the first number of field "x" (0 if none)
 *   "error"     the ranker's own error */
static const char *test_rank(quarry_batch *b) {
	if (quarry_equal(b->q, "reverse")) {
		uint32_t *order = quarry_scratch(4 * b->n);
		for (uint32_t i = 0; i < b->n; i++) {
			order[i] = b->n - 1 - i;
		}
		quarry_keep_order(b, order, b->n);
	} else if (quarry_equal(b->q, "drop-odd")) {
		for (uint32_t i = 0; i < b->n; i++) {
			b->scores[i] *= 2;
			if (i % 2) {
				quarry_drop(b, i);
			}
		}
	} else if (quarry_equal(b->q, "nan")) {
		if (b->n) {
			b->scores[b->n - 1] = __builtin_nan("");
		}
	} else if (quarry_equal(b->q, "id-length")) {
		for (uint32_t i = 0; i < b->n; i++) {
			b->scores[i] = quarry_id(b, i).len;
		}
	} else if (quarry_equal(b->q, "config")) {
		quarry_bytes cfg;
		double w = 0;
		if (!quarry_config_get(&cfg) || quarry_json_number(cfg, "w", &w) != 1) {
			return "no \"w\" in the configuration";
		}
		for (uint32_t i = 0; i < b->n; i++) {
			b->scores[i] += w;
		}
	} else if (quarry_equal(b->q, "field")) {
		int f = quarry_field(b, "x");
		for (uint32_t i = 0; i < b->n; i++) {
			double x = 0;
			quarry_number_of(b, f, i, &x);
			b->scores[i] = x;
		}
	} else if (quarry_equal(b->q, "error")) {
		quarry_logs(QUARRY_LOG_WARN, "test_rank: failing on purpose");
		return "failing on purpose";
	}
	return 0;
}

QUARRY_RANKER(test_rank)

/* test_rewrite sets every field: q = q + "!", query = the request's
 * filter, filter = the request's query, rerank_depth = 100 * size + from.
 * With q "same" it changes nothing. */
static const char *test_rewrite(const quarry_rewrite_request *req, quarry_rewrite_response *resp) {
	if (quarry_equal(req->q, "same")) {
		return 0;
	}
	uint8_t *q = quarry_scratch(req->q.len + 1);
	for (uint32_t i = 0; i < req->q.len; i++) {
		q[i] = req->q.ptr[i];
	}
	q[req->q.len] = '!';
	quarry_set_q(resp, q, req->q.len + 1);
	quarry_set_query(resp, req->filter.ptr, req->filter.len);
	quarry_set_filter(resp, req->query.ptr, req->query.len);
	quarry_set_rerank_depth(resp, 100 * req->size + req->from);
	return 0;
}

QUARRY_REWRITER(test_rewrite)
