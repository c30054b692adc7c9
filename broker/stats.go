package broker

import (
	"sync"

	"github.com/quarrysearch/quarry/internal/wire"
)

// statsCache keeps the global term statistics of recent queries, per index
// generation: a repeated query skips the statistics round trip until a new
// generation is published. Updates that arrive through the stream between
// generations are not in cached statistics; scores drift by those until
// the next snapshot (the indexer's --snapshot-interval).
type statsCache struct {
	mu      sync.Mutex
	max     int
	gen     map[string]uint64                       // newest generation seen per index
	entries map[string]map[string]*wire.GlobalStats // index → query JSON → stats
	n       int
}

func newStatsCache(max int) *statsCache {
	return &statsCache{max: max, gen: map[string]uint64{}, entries: map[string]map[string]*wire.GlobalStats{}}
}

func (c *statsCache) get(index string, query []byte) *wire.GlobalStats {
	if c.max <= 0 {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.entries[index][string(query)] // no allocation for the lookup
	if s == nil || s.Generation < c.gen[index] {
		return nil
	}
	return s
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
		m = map[string]*wire.GlobalStats{}
		c.entries[index] = m
	}
	if _, ok := m[string(query)]; !ok {
		c.n++
	}
	m[string(query)] = s
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
