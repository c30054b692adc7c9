package fanout

import (
	"time"

	"github.com/quarrysearch/quarry/internal/querystats"
	"github.com/quarrysearch/quarry/internal/wire"
)

// DefaultStatsCacheTerms is how many (field, term) statistics a broker
// keeps by default (StatsCache.SetTerms).
const DefaultStatsCacheTerms = 65536

// The cache of terms. A query seen for the first time usually reads terms
// that earlier queries read: its statistics can be put together from
// theirs (Compose) with no statistics round trip, when the broker knows
// which terms it reads (the planner's query analysed with the index's
// mapping, querystats.ListTerms). Every statistics answer counted over all
// of an index's shards feeds the table (Put). Each term's document
// frequency, each field's token total and the document count are kept with the
// moment and the shards' stream sequences they were counted at; what a
// query is given is fresh by the cache's bound (the generation, maxAge)
// and carries, per shard, the oldest sequence of what it was put together
// from, so a shard still refuses statistics that miss more than
// maxUpdates of its updates. A shard that reads a term they lack refuses
// them too (wire.ShardRequest.StatsComposed): the search phase then counts
// the query's own.

// counted is when one statistics answer was counted.
type counted struct {
	at         time.Time
	seqs       map[int]uint64
	generation uint64
}

type termEntry struct {
	df   uint64
	from *counted
}

type fieldEntry struct {
	tokens      int
	cardinality int
	hasCard     bool // bleve's own statistic was sent (for older searchers)
	from        *counted
}

// indexTerms is one index's table.
type indexTerms struct {
	terms    map[string]map[string]termEntry // field → term
	fields   map[string]fieldEntry
	docCount uint64
	last     *counted // the newest answer, whose document count is kept
	// complete are the fields whose whole dictionary the table holds
	// (dictionaries.go), each with when it was counted: a term the table
	// lacks there is one no document held then.
	complete map[string]*counted
	// sorted are the complete fields' terms as counted, sorted: what
	// queries' expansions are listed from (querystats.Dictionaries).
	sorted querystats.Dictionaries
}

// SetTerms bounds how many (field, term) statistics the cache keeps over
// every index (0: DefaultStatsCacheTerms; negative: none, so only a query
// seen before skips the round trip).
func (c *StatsCache) SetTerms(max int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.maxTerms = bound(max, DefaultStatsCacheTerms)
	clear(c.terms)
	c.nTerms = 0
}

// bound is a configured bound: def for 0, none (0) for a negative max.
func bound(max, def int) int {
	switch {
	case max < 0:
		return 0
	case max == 0:
		return def
	}
	return max
}

// putTerms adds an answer's statistics, counted over every shard, to the
// table, and returns when they were counted. Statistics with a field
// whose terms could not all be recorded, or without token totals or
// sequences (from searchers that predate them), are left out (nil).
func (c *StatsCache) putTerms(index string, s *wire.GlobalStats) *counted {
	if c.maxTerms <= 0 || s.Truncated || len(s.Local) > 0 || s.FieldTokens == nil || len(s.Seqs) == 0 {
		return nil
	}
	n := 0
	for _, ts := range s.DocFreq {
		n += len(ts)
	}
	if c.nTerms+n > c.maxTerms {
		clear(c.terms) // simple and bounded, as the queries' entries
		c.nTerms = 0
	}
	it := c.terms[index]
	if it == nil {
		it = &indexTerms{terms: map[string]map[string]termEntry{}, fields: map[string]fieldEntry{}}
		c.terms[index] = it
	}
	from := &counted{at: time.Now(), seqs: s.Seqs, generation: s.Generation}
	if it.last == nil || from.generation >= it.last.generation {
		it.docCount, it.last = s.DocCount, from
	}
	for f, tokens := range s.FieldTokens {
		card, hasCard := s.FieldCardinality[f]
		it.fields[f] = fieldEntry{tokens: tokens, cardinality: card, hasCard: hasCard, from: from}
	}
	for f, ts := range s.DocFreq {
		m := it.terms[f]
		if m == nil {
			m = make(map[string]termEntry, len(ts))
			it.terms[f] = m
		}
		for t, df := range ts {
			if _, ok := m[t]; !ok {
				c.nTerms++
			}
			m[t] = termEntry{df: df, from: from}
		}
	}
	return from
}

// HasTerms reports whether the table holds fresh statistics of index:
// without, Compose cannot answer, and a caller need not list a query's
// terms for it (the table is off, or no statistics answer came yet).
func (c *StatsCache) HasTerms(index string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	it := c.terms[index]
	return it != nil && c.fresh(index, it.last)
}

// Compose puts together the statistics of a query that reads terms
// (field → terms) and needs the token totals of fields, from the table;
// nil unless every one is there and fresh. Its expansions listed from the
// whole dictionaries of dicts (Dictionaries) make it only as fresh as
// them. The caller sends them with wire.ShardRequest.StatsComposed.
func (c *StatsCache) Compose(index string, terms map[string][]string, fields, dicts []string) *wire.GlobalStats {
	c.mu.Lock()
	defer c.mu.Unlock()
	it := c.terms[index]
	if it == nil || !c.fresh(index, it.last) {
		return nil
	}
	comp := composition{out: &wire.GlobalStats{DocCount: it.docCount, FieldTokens: make(map[string]int, len(fields)),
		DocFreq: make(map[string]map[string]uint64, len(terms))}}
	comp.use(it.last)
	for _, f := range dicts {
		from := it.complete[f]
		if !c.fresh(index, from) {
			return nil
		}
		comp.use(from)
	}
	for _, f := range fields {
		e, ok := it.fields[f]
		if !ok || !c.fresh(index, e.from) {
			return nil
		}
		comp.out.FieldTokens[f] = e.tokens
		if e.hasCard {
			if comp.out.FieldCardinality == nil {
				comp.out.FieldCardinality = make(map[string]int, len(fields))
			}
			comp.out.FieldCardinality[f] = e.cardinality
		}
		comp.use(e.from)
	}
	for f, ts := range terms {
		m := it.terms[f]
		df := make(map[string]uint64, len(ts))
		for _, t := range ts {
			e, ok := m[t]
			if !ok {
				// In a field whose whole dictionary was counted, a term
				// the table lacks was in no document.
				e = termEntry{from: it.complete[f]}
			}
			if !c.fresh(index, e.from) {
				return nil
			}
			df[t] = e.df
			comp.use(e.from)
		}
		comp.out.DocFreq[f] = df
	}
	return comp.out
}

// fresh says whether what was counted then may still be used.
func (c *StatsCache) fresh(index string, from *counted) bool {
	return from != nil && from.generation >= c.gen[index] && time.Since(from.at) <= c.maxAge
}

// composition is statistics being put together: their sequences are, per
// shard, the oldest of the answers used, and their generation the oldest.
type composition struct {
	out  *wire.GlobalStats
	seen []*counted
}

func (p *composition) use(from *counted) {
	for _, s := range p.seen {
		if s == from {
			return
		}
	}
	p.seen = append(p.seen, from)
	if p.out.Seqs == nil {
		p.out.Seqs = make(map[int]uint64, len(from.seqs))
		for sh, seq := range from.seqs {
			p.out.Seqs[sh] = seq
		}
		p.out.Generation = from.generation
		return
	}
	for sh, seq := range from.seqs {
		if cur, ok := p.out.Seqs[sh]; !ok || seq < cur {
			p.out.Seqs[sh] = seq
		}
	}
	p.out.Generation = min(p.out.Generation, from.generation)
}

// dropTerms forgets an index's table.
func (c *StatsCache) dropTerms(index string) {
	if it := c.terms[index]; it != nil {
		for _, ts := range it.terms {
			c.nTerms -= len(ts)
		}
		delete(c.terms, index)
	}
}
