package fanout

import (
	"sync"
	"time"

	"github.com/quarrysearch/quarry/internal/wire"
)

// Defaults of the statistics' freshness bound (StatsCache.SetFreshness).
const (
	// DefaultStatsMaxUpdates is how many updates of one shard cached
	// statistics may miss.
	DefaultStatsMaxUpdates = 1000
	// DefaultStatsMaxAge is how long statistics are cached.
	DefaultStatsMaxAge = 10 * time.Second
)

// MaxStaleUpdates caps the freshness bound: it is what a searcher
// remembers of its updates.
const MaxStaleUpdates = 4096

// StatsCache keeps the global statistics of recent queries. An entry is
// used until the first of: a new snapshot generation is seen, it is older
// than maxAge, or a shard finds that it misses more than maxUpdates of the
// shard's updates (the shard refuses the search, the search phase fetches
// the statistics again and asks once more). So a query is scored with
// statistics that miss at most maxUpdates updates of any shard and are at
// most maxAge old. A StatsCache lives as long as its broker and is safe
// for concurrent use.
type StatsCache struct {
	mu         sync.Mutex
	max        int
	maxUpdates int
	maxAge     time.Duration
	gen        map[string]uint64                  // newest generation seen per index
	entries    map[string]map[string]*cachedStats // index → query JSON → stats
	n          int
	// The table of terms (termstats.go).
	maxTerms int
	terms    map[string]*indexTerms
	nTerms   int
	// Whole dictionaries (dictionaries.go).
	dictTerms int
	dicts     map[string]map[string]*dictState // index → field
}

type cachedStats struct {
	st *wire.GlobalStats
	at time.Time
}

// NewStatsCache returns a cache of the statistics of at most max queries
// (0 or less: nothing is cached), with the default freshness bound.
func NewStatsCache(max int) *StatsCache {
	return &StatsCache{max: max, maxUpdates: DefaultStatsMaxUpdates, maxAge: DefaultStatsMaxAge,
		gen: map[string]uint64{}, entries: map[string]map[string]*cachedStats{},
		maxTerms: DefaultStatsCacheTerms, terms: map[string]*indexTerms{},
		dictTerms: DefaultDictionaryTerms, dicts: map[string]map[string]*dictState{}}
}

// SetFreshness bounds how stale the cached statistics of a query may be:
// at most maxUpdates updates of any one shard missed (at most 4,096, what
// a searcher remembers; 0: DefaultStatsMaxUpdates) and at most maxAge old
// (0: DefaultStatsMaxAge).
func (c *StatsCache) SetFreshness(maxUpdates int, maxAge time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.maxUpdates = min(cmpOr(maxUpdates, DefaultStatsMaxUpdates), MaxStaleUpdates)
	c.maxAge = time.Duration(cmpOr(int64(maxAge), int64(DefaultStatsMaxAge)))
}

func cmpOr[T int | int64](v, def T) T {
	if v <= 0 {
		return def
	}
	return v
}

// StaleUpdates is the bound searches send (wire.ShardRequest.MaxStaleUpdates).
func (c *StatsCache) StaleUpdates() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.maxUpdates
}

// Get returns the cached statistics of a query (its JSON) on an index,
// or nil when there are none fresh enough.
func (c *StatsCache) Get(index string, query []byte) *wire.GlobalStats {
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

// Put caches a query's statistics, counted now over every shard of the
// index, and adds them to the table of terms.
func (c *StatsCache) Put(index string, query []byte, s *wire.GlobalStats) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.putTerms(index, s)
	if c.max <= 0 {
		return
	}
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

// Drop forgets a query's statistics.
func (c *StatsCache) Drop(index string, query []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if m := c.entries[index]; m != nil {
		if _, ok := m[string(query)]; ok {
			delete(m, string(query))
			c.n--
		}
	}
}

// Forget drops everything cached of an index (it was deleted: one made
// again under its name starts afresh).
func (c *StatsCache) Forget(index string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n -= len(c.entries[index])
	delete(c.entries, index)
	delete(c.gen, index)
	c.dropTerms(index)
	delete(c.dicts, index)
}

// NoteGeneration records a generation seen in a shard's answer; cached
// statistics of older generations stop being used.
func (c *StatsCache) NoteGeneration(index string, gen uint64) {
	c.mu.Lock()
	if gen > c.gen[index] {
		c.gen[index] = gen
	}
	c.mu.Unlock()
}
