// Package broker is Quarry's public search API. It answers
// quarry.v1.search.<index> as the NATS micro service "quarry" (visible in
// `nats micro ls`, queue group shared by every broker), turns the request
// into a retrieval query, fans it out to every shard of the index with a
// deadline, and merges the shards' top hits and facets into one answer.
//
// Brokers are stateless: any number may run. A shard with no searcher
// fails fast with a clear reason; by default a partial answer is returned
// and the failure reported in the response's "shards" section.
//
// Where things are: one search is a run (search.go), its stages as
// methods: decode, rewrite, plan, statistics, fan-out, merge, rank,
// page, encode. What lives longer than a request is beneath it:
// broker/internal/fanout asks the shards (replica choice, hedging, the
// statistics phase and its cache, the merge), and broker/internal/pipeline
// holds each index's live pipeline (steps, canaries, shadows, the
// fallback's decisions, interleaving, pipeline files). The broker keeps
// what touches NATS, the KV store and metrics: the doors, the registry
// watch (hotreload.go) and the one control-plane writer
// (controlplane.go) that turns what the query path observed into
// pipeline revisions and events.
package broker
