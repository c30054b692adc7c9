package fanout

import (
	"context"
	"maps"
	"slices"
	"time"

	"github.com/quarrysearch/quarry/internal/querystats"
	"github.com/quarrysearch/quarry/internal/wire"
	"github.com/quarrysearch/quarry/planner"
)

// Whole dictionaries. The table of terms (termstats.go) answers a new
// query only when earlier queries read every one of its terms; most new
// queries read one that none did, and a word the index lacks (a typo) is
// never in it. So the table also keeps the whole dictionary of a field
// whose dictionary is small (at most dictTerms terms over every shard,
// and all of them together at most half the table): counted by every
// shard (wire.PhaseDictionary: each term's live document frequency, as a
// query's statistics phase counts it, read from the term's postings
// without building searchers), the field is marked complete as of that
// count, and a term the table lacks in a complete field is one no
// document holds: document frequency 0, with no round trip. The same freshness bounds hold (the generation,
// maxAge; a shard refuses statistics that miss more than maxUpdates of
// its updates), so a complete field is counted again once half of maxAge
// has passed while queries still read it. A field over the bound is not
// asked for again for dictionaryRetry.

// DefaultDictionaryTerms is the most terms, over every shard, of a field
// whose whole dictionary the table keeps by default
// (StatsCache.SetDictionaryTerms).
const DefaultDictionaryTerms = 16384

// dictionaryRetry is how long a field found over the bound, or whose
// count failed, is not asked for again.
const dictionaryRetry = time.Minute

// dictState is what the cache knows of one field's dictionary beside the
// table: a count under way, or a field not to ask for until retry.
type dictState struct {
	counting bool
	retry    time.Time
}

// SetDictionaryTerms bounds the fields whose whole dictionary the table
// keeps: at most max terms over every shard (0: DefaultDictionaryTerms;
// negative: none, so only terms earlier queries read are kept).
func (c *StatsCache) SetDictionaryTerms(max int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.dictTerms = bound(max, DefaultDictionaryTerms)
}

// DictionaryTerms is the bound of SetDictionaryTerms (0: none kept).
func (c *StatsCache) DictionaryTerms() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return min(c.dictTerms, c.maxTerms/2)
}

// WantDictionaries returns the fields of index, of those a query reads
// (the keys of its terms, by field), whose whole dictionary should be
// counted now: not complete (or complete for more than half of maxAge),
// not being counted, not found over the bound lately. They are marked as
// being counted: the caller counts each (Router.CountDictionary) or calls
// DictionaryFailed.
func (c *StatsCache) WantDictionaries(index string, terms map[string][]string) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.dictTerms <= 0 || c.maxTerms <= 0 {
		return nil
	}
	var want []string
	now := time.Now()
	for f := range terms {
		ds := c.dicts[index][f]
		if ds != nil && (ds.counting || now.Before(ds.retry)) {
			continue
		}
		if it := c.terms[index]; it != nil {
			if from := it.complete[f]; c.fresh(index, from) && now.Sub(from.at) < c.maxAge/2 {
				continue
			}
		}
		if ds == nil {
			if c.dicts[index] == nil {
				c.dicts[index] = map[string]*dictState{}
			}
			ds = &dictState{}
			c.dicts[index][f] = ds
		}
		ds.counting = true
		want = append(want, f)
	}
	return want
}

// StaleDictionaries forgets which of index's fields are complete: a shard
// refused statistics put together from the table as missing more of its
// updates than the bound, and what was listed from a dictionary counted
// before them would be refused again by every query until its recount.
// The next query that reads such a field asks for it again.
func (c *StatsCache) StaleDictionaries(index string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if it := c.terms[index]; it != nil {
		it.complete, it.sorted = nil, nil
	}
}

// DictionaryFailed ends a count WantDictionaries asked for that gave no
// dictionary: the field is not asked for again for dictionaryRetry.
func (c *StatsCache) DictionaryFailed(index, field string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if ds := c.dicts[index][field]; ds != nil {
		ds.counting, ds.retry = false, time.Now().Add(dictionaryRetry)
	}
}

// putDictionary adds the statistics of a query that read every term of
// field, counted over all of index's shards, to the table, and marks the
// field complete; it reports false, and keeps nothing of the field's
// terms, when they are over the bound.
func (c *StatsCache) putDictionary(index, field string, s *wire.GlobalStats) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	ds := c.dicts[index][field]
	if ds == nil || !ds.counting {
		return false // the index was forgotten meanwhile
	}
	n := len(s.DocFreq[field])
	held := 0 // by the other complete fields (a recount replaces its own)
	for ix, it := range c.terms {
		for f := range it.complete {
			if ix != index || f != field {
				held += len(it.terms[f])
			}
		}
	}
	if n > min(c.dictTerms, c.maxTerms/2) || held+n > c.maxTerms/2 {
		ds.counting, ds.retry = false, time.Now().Add(dictionaryRetry)
		return false
	}
	from := c.putTerms(index, s)
	if from == nil {
		ds.counting, ds.retry = false, time.Now().Add(dictionaryRetry)
		return false
	}
	ds.counting = false
	it := c.terms[index]
	if it.complete == nil {
		it.complete = map[string]*counted{}
	}
	it.complete[field] = from
	// A new map, never changed once made: Dictionaries hands it out
	// without a copy.
	sorted := make(querystats.Dictionaries, len(it.sorted)+1)
	maps.Copy(sorted, it.sorted)
	sorted[field] = slices.Sorted(maps.Keys(s.DocFreq[field]))
	it.sorted = sorted
	return true
}

// Dictionaries returns the whole dictionaries of index's complete fields
// (nil: none), for listing what a query's fuzzy, prefix and range terms
// expand to (querystats.ListTerms). A field among them may no longer be
// fresh: Compose refuses statistics listed from it (its dicts). The map
// is shared and never changed (putDictionary makes a new one): the
// caller must not change it. No allocation: it runs for every query
// whose terms are listed.
func (c *StatsCache) Dictionaries(index string) querystats.Dictionaries {
	c.mu.Lock()
	defer c.mu.Unlock()
	if it := c.terms[index]; it != nil {
		return it.sorted
	}
	return nil
}

// CountDictionary counts the whole dictionary of field over every shard
// of plan's index (wire.PhaseDictionary, each shard reading at most the
// cache's bound) and adds it to the table of terms; the field must have
// been asked for by WantDictionaries.
// It reports whether the table now holds the dictionary; on false the
// field is not asked for again for a while.
func (rt *Router) CountDictionary(ctx context.Context, plan *planner.Plan, field string) bool {
	max := rt.stats.DictionaryTerms()
	req := &wire.ShardRequest{Phase: wire.PhaseDictionary, DictionaryField: field, MaxTerms: max}
	results := rt.fanOut(ctx, &planner.Plan{Index: plan.Index, Shards: plan.Shards}, req, planner.Hedge{})
	total := &wire.GlobalStats{}
	for _, r := range results {
		var st wire.GlobalStats
		if r.Err != nil || wire.Decode(r.Reply, &st) != nil {
			rt.stats.DictionaryFailed(plan.Index, field)
			return false
		}
		total.Add(&st)
	}
	rt.stats.NoteGeneration(plan.Index, total.Generation)
	return rt.stats.putDictionary(plan.Index, field, total)
}
