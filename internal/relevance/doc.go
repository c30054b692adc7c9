// Package relevance measures how good an index's rankings are against
// judgement lists: people's graded ratings of documents for queries.
//
// It reads judgement lists (Decode: NDJSON, one query a line, each error
// naming its line), computes per-query metrics (nDCG@k with exponential
// gain and a log2 discount, reciprocal rank, precision@k, recall@k, and
// whether the top k holds no relevant document), and the statistics that
// say whether a difference is real: a seeded percentile bootstrap of each
// mean, a paired bootstrap of the mean difference between two rankings,
// and a paired randomization (sign-flip) test. Evaluate runs a judgement
// set through a live and a candidate search side by side.
//
// Everything here is deterministic: the same rankings give the same
// numbers, to the last digit, on every run. docs/relevance.md explains
// each metric and the statistics. The package is pure: it knows the API
// types, not NATS; callers hand it a function that searches.
package relevance
