package broker

import (
	"context"
	"time"

	"github.com/quarrysearch/quarry/api"
	"github.com/quarrysearch/quarry/broker/internal/fanout"
	"github.com/quarrysearch/quarry/internal/wire"
	"github.com/quarrysearch/quarry/planner"
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

// searchShards runs the search phase. When a shard refuses the statistics
// as stale (wire.CodeStaleStats: more of its updates since they were
// counted than the bound), they are counted again and every shard asked
// once more, without the bound (the statistics are a moment old). It
// reports whether that happened.
func (b *Broker) searchShards(ctx context.Context, plan *planner.Plan, sreq *wire.ShardRequest) ([]shardResult, bool) {
	results := b.fanOut(ctx, plan, sreq, plan.Hedge)
	if sreq.Stats == nil || sreq.MaxStaleUpdates == 0 || !anyStale(results) {
		return results, false
	}
	b.stats.Drop(plan.Index, plan.Query)
	statsCtx, cancel := context.WithTimeout(ctx, plan.ShardTimeout/4)
	st, err := b.countStats(statsCtx, plan)
	cancel()
	retry := *sreq
	retry.MaxStaleUpdates = 0
	if err == nil {
		retry.Stats = st // nil when a shard did not answer: each scores with its own
	}
	return b.fanOut(ctx, plan, &retry, plan.Hedge), true
}

func anyStale(results []shardResult) bool {
	for _, r := range results {
		if r.err != nil && api.CodeOf(r.err) == wire.CodeStaleStats {
			return true
		}
	}
	return false
}
