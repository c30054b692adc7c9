// Package broker is Quarry's public search API. It answers
// quarry.v1.search.<index> as the NATS micro service "quarry" (visible in
// `nats micro ls`, queue group shared by every broker), turns the request
// into a retrieval query, fans it out to every shard of the index with a
// deadline, and merges the shards' top hits and facets into one answer.
//
// Brokers are stateless: any number may run. A shard with no searcher
// fails fast with a clear reason; by default a partial answer is returned
// and the failure reported in the response's "shards" section.
package broker
