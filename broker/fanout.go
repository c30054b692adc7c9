package broker

import (
	"time"

	"github.com/quarrysearch/quarry/broker/internal/fanout"
)

// Defaults of the statistics' freshness bound (SetStatsFreshness).
const (
	// DefaultStatsMaxUpdates is how many updates of one shard cached
	// statistics may miss.
	DefaultStatsMaxUpdates = fanout.DefaultStatsMaxUpdates
	// DefaultStatsMaxAge is how long statistics are cached.
	DefaultStatsMaxAge = fanout.DefaultStatsMaxAge
)

// SetStatsFreshness bounds how stale the cached statistics of a query may
// be: at most maxUpdates updates of any one shard missed (at most 4,096,
// what a searcher remembers; 0: DefaultStatsMaxUpdates) and at most maxAge
// old (0: DefaultStatsMaxAge). Lower bounds cost more statistics round
// trips while documents change.
func (b *Broker) SetStatsFreshness(maxUpdates int, maxAge time.Duration) {
	b.stats.SetFreshness(maxUpdates, maxAge)
}

// hedgeStats reports shard requests, hedges sent and hedges that answered
// first, since start (the quarry_broker_shard_requests_total,
// quarry_broker_hedges_total and quarry_broker_hedges_won_total metrics).
func (b *Broker) hedgeStats() (requests, hedges, won int64) {
	return b.fan.HedgeStats()
}
