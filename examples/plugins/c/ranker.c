/*
 * boost: a Quarry ranker in freestanding C, written from
 * docs/plugin-abi.md alone. Each candidate's new score is
 *
 *     score + weight * field
 *
 * where field is a numeric stored field (the pipeline step must list it
 * in "fields"); a candidate without a number there keeps its score. The
 * host sorts the result (flag 1). Configuration, both optional:
 *
 *     {"field": "rating", "weight": 0.5}     (defaults: "rating", 1)
 *
 * It reads the field in either column kind: a numbers column in place,
 * or a values column (when some candidate's value is not a number).
 *
 * Build: clang --target=wasm32 -O2 -nostdlib -Wl,--no-entry -o ranker.wasm ranker.c
 */
#include "quarry.h"

static int configured;
static double weight = 1;
static u8 field[64] = "rating";
static u32 field_len = 6;

/* find returns the position just after the first "key" in s, or -1. A
 * configuration this small needs no real JSON parser. */
static int find(const u8 *s, u32 n, const char *key) {
	u32 k = 0;
	while (key[k]) {
		k++;
	}
	for (u32 i = 0; i + k + 2 <= n; i++) {
		if (s[i] != '"' || s[i + k + 1] != '"') {
			continue;
		}
		u32 j = 0;
		while (j < k && s[i + 1 + j] == (u8)key[j]) {
			j++;
		}
		if (j == k) {
			return (int)(i + k + 2);
		}
	}
	return -1;
}

/* value skips white space and the colon after a key. */
static u32 value(const u8 *s, u32 n, u32 i) {
	while (i < n && (s[i] == ' ' || s[i] == ':' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r')) {
		i++;
	}
	return i;
}

/* number parses a JSON number: -?digits(.digits)?([eE][+-]?digits)?. */
static int number(const u8 *s, u32 n, u32 i, double *out) {
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
		return 0;
	}
	v /= scale;
	if (i < n && (s[i] == 'e' || s[i] == 'E')) {
		int esign = 1, e = 0;
		i++;
		if (i < n && (s[i] == '+' || s[i] == '-')) {
			esign = s[i] == '-' ? -1 : 1;
			i++;
		}
		for (; i < n && s[i] >= '0' && s[i] <= '9'; i++) {
			e = e * 10 + (s[i] - '0');
		}
		for (; e > 0; e--) {
			v = esign > 0 ? v * 10 : v / 10;
		}
	}
	*out = sign * v;
	return 1;
}

/* configure reads the configuration once; absent, it is empty (length 0). */
static const char *configure(void) {
	static u8 cfg[1024];
	u32 n = quarry_config(cfg, sizeof cfg);
	if (n > sizeof cfg) {
		return "boost: configuration over 1 KiB";
	}
	int at = find(cfg, n, "weight");
	if (at >= 0 && !number(cfg, n, value(cfg, n, (u32)at), &weight)) {
		return "boost: \"weight\" must be a number";
	}
	at = find(cfg, n, "field");
	if (at >= 0) {
		u32 i = value(cfg, n, (u32)at);
		if (i >= n || cfg[i] != '"') {
			return "boost: \"field\" must be a string";
		}
		field_len = 0;
		for (i++; i < n && cfg[i] != '"' && field_len < sizeof field; i++) {
			field[field_len++] = cfg[i];
		}
	}
	configured = 1;
	return 0;
}

/* read_value reads one value of a values column: kind u8, then 0 missing
 * (nothing) · 1 number f64 · 2 string · 3 bool u8 · 4 list (u32 count,
 * then values). It returns the number, or NaN for anything else. */
static double read_value(quarry_reader *r, int depth) {
	u32 len;
	switch (quarry_read_u8(r)) {
	case 0:
		break;
	case 1: {
		const u8 *p = quarry_skip(r, 8);
		return p ? quarry_f64(p) : __builtin_nan("");
	}
	case 2:
		quarry_read_bytes(r, &len);
		break;
	case 3:
		quarry_skip(r, 1);
		break;
	case 4:
		len = quarry_read_u32(r);
		if (depth > 8) {
			r->bad = 1;
		}
		for (u32 i = 0; i < len && !r->bad; i++) {
			read_value(r, depth + 1);
		}
		break;
	default:
		r->bad = 1;
	}
	return __builtin_nan("");
}

/* boost adds weight * v to entry i's score (entries are 12 bytes: index
 * u32, score f64) unless v is NaN (missing). */
static void boost(u8 *entries, u32 i, double v) {
	if (v == v) {
		u8 *score = entries + 12 * i + 4;
		quarry_put_f64(score, quarry_f64(score) + weight * v);
	}
}

/* Rank request: q string · context bytes · field count u32, each field
 * name (string) · n u32 · the ids' total size u32 (u32 prefixes included)
 * · n ids · n scores f64 · one column per field. */
QUARRY_EXPORT("quarry_rank") u64 quarry_rank(const u8 *req, u32 len) {
	if (!configured) {
		const char *err = configure();
		if (err) {
			return quarry_error(err);
		}
	}
	quarry_reader r = quarry_read(req, len);
	u32 skip;
	quarry_read_bytes(&r, &skip); /* q */
	quarry_read_bytes(&r, &skip); /* context */
	u32 nf = quarry_read_u32(&r);
	u32 want = nf; /* the field's column, nf if it is not sent */
	for (u32 j = 0; j < nf && !r.bad; j++) {
		u32 n;
		const u8 *name = quarry_read_bytes(&r, &n);
		int same = name && n == field_len;
		for (u32 k = 0; same && k < n; k++) {
			same = name[k] == field[k];
		}
		if (same && want == nf) {
			want = j;
		}
	}
	u32 n = quarry_read_u32(&r);
	if (n > len / 12) { /* each candidate takes at least 12 bytes: id length, score */
		r.bad = 1;
	}
	quarry_skip(&r, quarry_read_u32(&r)); /* the ids, in one step */
	const u8 *scores = quarry_skip(&r, 8 * n);
	if (r.bad) {
		return quarry_error("boost: request too short");
	}
	/* Response: status 0 · flags 1 (sort by score) · count u32 · entries. */
	u8 *out = quarry_out(6 + 12 * n);
	if (!out) {
		return quarry_error("boost: out of memory");
	}
	u8 *entries = out + 6;
	for (u32 i = 0; i < n; i++) {
		quarry_put_u32(entries + 12 * i, i);
		quarry_put_f64(entries + 12 * i + 4, quarry_f64(scores + 8 * i));
	}
	for (u32 j = 0; j < nf && !r.bad; j++) {
		u8 kind = quarry_read_u8(&r);
		if (kind == 1) { /* numbers: padding, then n f64 (NaN: missing) */
			quarry_align8(&r);
			const u8 *col = quarry_skip(&r, 8 * n);
			for (u32 i = 0; j == want && col && i < n; i++) {
				boost(entries, i, quarry_f64(col + 8 * i));
			}
		} else if (kind == 0) { /* values: n values, each with its kind */
			for (u32 i = 0; i < n && !r.bad; i++) {
				double v = read_value(&r, 0);
				if (j == want) {
					boost(entries, i, v);
				}
			}
		} else {
			r.bad = 1;
		}
	}
	if (r.bad || r.p != r.end) {
		return quarry_error("boost: malformed request");
	}
	out[0] = QUARRY_OK;
	out[1] = 1; /* the host sorts by score */
	quarry_put_u32(out + 2, n);
	return quarry_result(out, 6 + 12 * n);
}
