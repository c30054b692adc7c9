// Package fanout is the machinery behind a broker's fan-out: what it
// takes to ask every shard of an index and to put their answers together.
// The broker's run (package broker) decides what to ask and when, and
// keeps the state of one request; this package keeps what lives longer
// than a request and does the asking:
//
//   - the statistics cache (StatsCache): the global term statistics of
//     recent queries, and the bound on how stale they may be.
//
// It imports the wire types (api, planner, internal/wire) and NATS, never
// the broker or another service (internal/archtest checks it).
package fanout
