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
