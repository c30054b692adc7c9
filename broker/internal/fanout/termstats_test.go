package fanout

import (
	"errors"
	"maps"
	"testing"
	"time"

	"github.com/quarrysearch/quarry/internal/testwait"
	"github.com/quarrysearch/quarry/internal/wire"
)

// answer is a statistics answer over two shards counted at seqs.
func answer(gen uint64, seqs map[int]uint64, docs uint64, df map[string]map[string]uint64) *wire.GlobalStats {
	return &wire.GlobalStats{DocCount: docs, Generation: gen, Seqs: seqs, DocFreq: df,
		FieldTokens: map[string]int{"*": 0, "name": int(docs) * 3}}
}

// The table of terms: a query's statistics are put together when every
// term and field it needs was in an answer, with the newest document
// count, each term's own frequency and, per shard, the oldest sequence
// used; never from a field left local or truncated, an older generation,
// an entry past maxAge, a forgotten index, or with the table off.
func TestStatsCacheTerms(t *testing.T) {
	c := NewStatsCache(10)
	if c.HasTerms("menu") {
		t.Fatal("an empty table has terms")
	}
	c.Put("menu", []byte("a"), answer(2, map[int]uint64{0: 10, 1: 20}, 100, map[string]map[string]uint64{"name": {"spicy": 7, "noodles": 4}}))
	c.Put("menu", []byte("b"), answer(2, map[int]uint64{0: 15, 1: 18}, 101, map[string]map[string]uint64{"name": {"curry": 9}}))
	fields := []string{"*", "name"}
	got := c.Compose("menu", map[string][]string{"name": {"curry", "noodles"}}, fields, nil)
	if got == nil {
		t.Fatal("not put together")
	}
	if got.DocCount != 101 || got.FieldTokens["name"] != 303 || got.DocFreq["name"]["curry"] != 9 || got.DocFreq["name"]["noodles"] != 4 || len(got.DocFreq["name"]) != 2 {
		t.Fatalf("put together: %+v", got)
	}
	if want := map[int]uint64{0: 10, 1: 18}; !maps.Equal(got.Seqs, want) || got.Generation != 2 {
		t.Fatalf("sequences %v generation %d, want %v and 2 (the oldest of what was used)", got.Seqs, got.Generation, want)
	}
	for name, q := range map[string]map[string][]string{
		"a term no answer had":  {"name": {"curry", "soup"}},
		"a field no answer had": {"description": {"curry"}},
	} {
		if c.Compose("menu", q, fields, nil) != nil {
			t.Errorf("%s: put together", name)
		}
	}
	if c.Compose("menu", map[string][]string{"name": {"curry"}}, []string{"*", "name", "description"}, nil) != nil {
		t.Error("a field without token totals: put together")
	}
	if c.Compose("other", map[string][]string{"name": {"curry"}}, fields, nil) != nil {
		t.Error("another index's terms used")
	}
	local := answer(2, map[int]uint64{0: 30, 1: 30}, 101, map[string]map[string]uint64{"ip": {"x": 1}})
	local.Local = []string{"ip"}
	c.Put("menu", []byte("c"), local)
	if c.Compose("menu", map[string][]string{"ip": {"x"}}, fields, nil) != nil {
		t.Error("a local field's terms used")
	}
	c.NoteGeneration("menu", 3)
	if c.Compose("menu", map[string][]string{"name": {"curry"}}, fields, nil) != nil {
		t.Error("generation 2's terms used at generation 3")
	}
	c.Put("menu", []byte("d"), answer(3, map[int]uint64{0: 40, 1: 40}, 120, map[string]map[string]uint64{"name": {"curry": 11}}))
	if got := c.Compose("menu", map[string][]string{"name": {"curry"}}, fields, nil); got == nil || got.DocFreq["name"]["curry"] != 11 || got.DocCount != 120 {
		t.Fatalf("a newer answer not used: %+v", got)
	}
	if !c.HasTerms("menu") {
		t.Fatal("a table with fresh terms says it has none")
	}
	c.Forget("menu")
	if c.HasTerms("menu") || c.Compose("menu", map[string][]string{"name": {"curry"}}, fields, nil) != nil || c.Get("menu", []byte("d")) != nil {
		t.Error("a forgotten index's statistics used")
	}
	c.Put("menu", []byte("d"), answer(0, map[int]uint64{0: 1, 1: 1}, 5, map[string]map[string]uint64{"name": {"curry": 1}}))
	if c.Compose("menu", map[string][]string{"name": {"curry"}}, fields, nil) == nil {
		t.Error("an index made again under a forgotten name starts from generation 0")
	}
	c.SetFreshness(0, time.Nanosecond)
	// Older than 1 ns as soon as the clock moves: then they are unused.
	testwait.UntilErr(t, time.Second, "the terms aged past maxAge", func() error {
		if c.Compose("menu", map[string][]string{"name": {"curry"}}, fields, nil) != nil {
			return errors.New("terms past maxAge used")
		}
		return nil
	})

	off := NewStatsCache(10)
	off.SetTerms(-1)
	off.Put("menu", []byte("a"), answer(1, map[int]uint64{0: 1}, 5, map[string]map[string]uint64{"name": {"curry": 1}}))
	if off.HasTerms("menu") || off.Compose("menu", map[string][]string{"name": {"curry"}}, fields, nil) != nil {
		t.Error("a table of size -1 kept terms")
	}
	small := NewStatsCache(10)
	small.SetTerms(2)
	small.Put("menu", []byte("a"), answer(1, map[int]uint64{0: 1}, 5, map[string]map[string]uint64{"name": {"curry": 1, "soup": 2}}))
	small.Put("menu", []byte("b"), answer(1, map[int]uint64{0: 1}, 5, map[string]map[string]uint64{"name": {"rice": 1}}))
	if small.Compose("menu", map[string][]string{"name": {"curry"}}, fields, nil) != nil || small.Compose("menu", map[string][]string{"name": {"rice"}}, fields, nil) == nil {
		t.Error("a full table did not start again")
	}
}
