package broker

import (
	"github.com/quarrysearch/quarry/broker/internal/fanout"
)

// Defaults and bounds of the statistics' freshness (Config.StatsMaxUpdates,
// Config.StatsMaxAge).
const (
	// DefaultStatsMaxUpdates is how many updates of one shard cached
	// statistics may miss.
	DefaultStatsMaxUpdates = fanout.DefaultStatsMaxUpdates
	// MaxStatsMaxUpdates is the most StatsMaxUpdates may be: what a
	// searcher remembers of its updates.
	MaxStatsMaxUpdates = fanout.MaxStaleUpdates
	// DefaultStatsMaxAge is how long statistics are cached.
	DefaultStatsMaxAge = fanout.DefaultStatsMaxAge
)

// hedgeStats reports shard requests, hedges sent and hedges that answered
// first, since start (the quarry_broker_shard_requests_total,
// quarry_broker_hedges_total and quarry_broker_hedges_won_total metrics).
func (b *Broker) hedgeStats() (requests, hedges, won int64) {
	return b.fan.HedgeStats()
}

// LocalSearcher is a searcher in the broker's own process
// (searcher.Searcher), which the broker asks directly rather than through
// the NATS server (UseLocal).
type LocalSearcher = fanout.Local

// UseLocal makes the broker ask s, a searcher in its own process, for
// every shard request s may answer: those to a shard's queue group it
// serves (hedges aside) and those pinned to its replicas. The request
// goes through s's queue as over NATS (the team's share, the queue's
// bound, the deadline); what is saved is the hops through the NATS
// server, about half a millisecond a shard on an idle machine
// (docs/RATIONALE.md, "A broker beside a searcher asks it directly").
// Call it before the broker serves; nil asks over NATS only.
func (b *Broker) UseLocal(s LocalSearcher) {
	b.fan.SetLocal(s)
}
