package broker

import (
	"context"
	"sync"
	"time"

	"github.com/quarrysearch/quarry/api"
	"github.com/quarrysearch/quarry/internal/wire"
	"github.com/quarrysearch/quarry/planner"
)

// Defaults of the statistics' freshness bound (SetStatsFreshness).
const (
	// DefaultStatsMaxUpdates is how many updates of one shard cached
	// statistics may miss.
	DefaultStatsMaxUpdates = 1000
	// DefaultStatsMaxAge is how long statistics are cached.
	DefaultStatsMaxAge = 10 * time.Second
)

// statsCache keeps the global statistics of recent queries. An entry is
// used until the first of: a new snapshot generation is seen, it is older
// than maxAge, or a shard finds that it misses more than maxUpdates of the
// shard's updates (the shard refuses the search, searchShards fetches the
// statistics again and asks once more). So a query is scored with
// statistics that miss at most maxUpdates updates of any shard and are at
// most maxAge old.
type statsCache struct {
	mu         sync.Mutex
	max        int
	maxUpdates int
	maxAge     time.Duration
	gen        map[string]uint64                  // newest generation seen per index
	entries    map[string]map[string]*cachedStats // index → query JSON → stats
	n          int
}

type cachedStats struct {
	st *wire.GlobalStats
	at time.Time
}

func newStatsCache(max int) *statsCache {
	return &statsCache{max: max, maxUpdates: DefaultStatsMaxUpdates, maxAge: DefaultStatsMaxAge,
		gen: map[string]uint64{}, entries: map[string]map[string]*cachedStats{}}
}

// SetStatsFreshness bounds how stale the cached statistics of a query may
// be: at most maxUpdates updates of any one shard missed (at most 4,096,
// what a searcher remembers; 0: DefaultStatsMaxUpdates) and at most maxAge
// old (0: DefaultStatsMaxAge). Lower bounds cost more statistics round
// trips while documents change.
func (b *Broker) SetStatsFreshness(maxUpdates int, maxAge time.Duration) {
	c := b.stats
	c.mu.Lock()
	defer c.mu.Unlock()
	c.maxUpdates = min(cmpOr(maxUpdates, DefaultStatsMaxUpdates), 4096)
	c.maxAge = time.Duration(cmpOr(int64(maxAge), int64(DefaultStatsMaxAge)))
}

func cmpOr[T int | int64](v, def T) T {
	if v <= 0 {
		return def
	}
	return v
}

// staleUpdates is the bound searches send (wire.ShardRequest.MaxStaleUpdates).
func (c *statsCache) staleUpdates() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.maxUpdates
}

func (c *statsCache) get(index string, query []byte) *wire.GlobalStats {
	if c.max <= 0 {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.entries[index][string(query)] // no allocation for the lookup
	if e == nil || e.st.Generation < c.gen[index] || time.Since(e.at) > c.maxAge {
		return nil
	}
	return e.st
}

func (c *statsCache) put(index string, query []byte, s *wire.GlobalStats) {
	if c.max <= 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n >= c.max {
		clear(c.entries) // simple and bounded; a hot query is back after one miss
		c.n = 0
	}
	m := c.entries[index]
	if m == nil {
		m = map[string]*cachedStats{}
		c.entries[index] = m
	}
	if _, ok := m[string(query)]; !ok {
		c.n++
	}
	m[string(query)] = &cachedStats{st: s, at: time.Now()}
}

// drop forgets a query's statistics.
func (c *statsCache) drop(index string, query []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if m := c.entries[index]; m != nil {
		if _, ok := m[string(query)]; ok {
			delete(m, string(query))
			c.n--
		}
	}
}

// noteGeneration records a generation seen in a shard's answer; cached
// statistics of older generations stop being used.
func (c *statsCache) noteGeneration(index string, gen uint64) {
	c.mu.Lock()
	if gen > c.gen[index] {
		c.gen[index] = gen
	}
	c.mu.Unlock()
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
	b.stats.drop(plan.Index, plan.Query)
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
