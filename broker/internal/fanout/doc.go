// Package fanout is the machinery behind a broker's fan-out: what it
// takes to ask every shard of an index and to put their answers together.
// The broker's run (package broker) decides what to ask and when, and
// keeps the state of one request; this package keeps what lives longer
// than a request and does the asking:
//
//   - the Router sends a plan's statistics and search phases to every
//     shard in parallel under the shard deadline (CountStats, Search). It
//     chooses each request's replica (the better of two, by requests
//     outstanding then answer time), hedges a shard slower than its recent
//     latency quantile to another replica within a budget (never when
//     its discovery found one replica: that would ask the slow searcher
//     again), discovers
//     replicas in the background, and asks again with fresh statistics
//     when a shard finds them stale. A Result is one shard's answer.
//   - the statistics cache (StatsCache): the global term statistics of
//     recent queries, and the bound on how stale they may be.
//   - the merge: what each shard counts of the facets asked (ShardFacets),
//     the shards' responses in one order with totals and facets summed
//     (Merge), and the page of it the caller asked for (Page).
//
// It imports the wire types (api, planner, internal/wire), the shared
// internals below the services and NATS, never the broker or another
// service (internal/archtest checks it).
package fanout
