package fanout

import (
	"slices"
	"testing"
	"time"
)

// Whole dictionaries: a field's dictionary, counted and kept, answers for
// a term it lacks (document frequency 0) as for one no query read; a
// field being counted is not asked for twice, one counted lately not
// again until half of maxAge; one over the bound is kept out and not
// asked for again; a newer generation, a forgotten index or the bound at
// none leaves nothing to answer from.
func TestStatsCacheDictionaries(t *testing.T) {
	c := NewStatsCache(10)
	c.SetFreshness(0, time.Hour)
	c.SetDictionaryTerms(3)
	fields := []string{"*", "name"}
	seqs := map[int]uint64{0: 10, 1: 20}
	if got := c.WantDictionaries("menu", map[string][]string{"description": nil, "name": nil}); !slices.Equal(slices.Sorted(slices.Values(got)), []string{"description", "name"}) {
		t.Fatalf("wanted %v", got)
	}
	if got := c.WantDictionaries("menu", map[string][]string{"name": nil}); got != nil {
		t.Fatalf("a field being counted is wanted again: %v", got)
	}
	if c.Compose("menu", map[string][]string{"name": {"curry", "quokka"}}, fields, nil) != nil {
		t.Fatal("put together before any answer")
	}
	if !c.putDictionary("menu", "name", answer(2, seqs, 100, map[string]map[string]uint64{"name": {"spicy": 7, "noodles": 4, "curry": 9}})) {
		t.Fatal("a dictionary within the bound not kept")
	}
	got := c.Compose("menu", map[string][]string{"name": {"curry", "quokka"}}, fields, nil)
	if got == nil || got.DocFreq["name"]["curry"] != 9 || got.DocFreq["name"]["quokka"] != 0 || len(got.DocFreq["name"]) != 2 || got.Seqs[1] != 20 {
		t.Fatalf("put together from the dictionary: %+v", got)
	}
	if d := c.Dictionaries("menu"); len(d) != 1 || !slices.Equal(d["name"], []string{"curry", "noodles", "spicy"}) {
		t.Fatalf("dictionaries %v, want name's sorted", d)
	}
	// What every query whose terms are listed asks: no allocation.
	terms := map[string][]string{"name": {"curry"}}
	if n := testing.AllocsPerRun(100, func() {
		c.Dictionaries("menu")
		c.WantDictionaries("menu", terms)
	}); n != 0 {
		t.Errorf("a query's look at the dictionaries allocates %.0f times", n)
	}
	// A newer answer for curry: put together from it alone, its
	// sequences; listed from the dictionary, the dictionary's.
	c.Put("menu", []byte("q"), answer(2, map[int]uint64{0: 30, 1: 40}, 100, map[string]map[string]uint64{"name": {"curry": 10}}))
	if got := c.Compose("menu", map[string][]string{"name": {"curry"}}, fields, nil); got == nil || got.Seqs[0] != 30 {
		t.Fatalf("the newer answer: %+v", got)
	}
	if got := c.Compose("menu", map[string][]string{"name": {"curry"}}, fields, []string{"name"}); got == nil || got.Seqs[0] != 10 || got.DocFreq["name"]["curry"] != 10 {
		t.Fatalf("listed from the dictionary: %+v, want the dictionary's sequences", got)
	}
	if c.Compose("menu", map[string][]string{"name": {"curry"}}, fields, []string{"description"}) != nil {
		t.Error("listed from a dictionary the cache lacks: put together")
	}
	if c.Compose("menu", map[string][]string{"description": {"curry"}}, fields, nil) != nil {
		t.Error("a field whose dictionary was not counted answers for a term it lacks")
	}
	if got := c.WantDictionaries("menu", map[string][]string{"name": nil}); got != nil {
		t.Fatalf("a dictionary counted now is wanted again: %v", got)
	}
	big := answer(2, seqs, 100, map[string]map[string]uint64{"description": {"a": 1, "b": 1, "c": 1, "d": 1}})
	if c.putDictionary("menu", "description", big) {
		t.Fatal("a dictionary over the bound kept")
	}
	if c.Compose("menu", map[string][]string{"description": {"quokka"}}, []string{"*", "description"}, nil) != nil {
		t.Error("a dictionary over the bound answers")
	}
	if got := c.WantDictionaries("menu", map[string][]string{"description": nil}); got != nil {
		t.Fatalf("a field over the bound is wanted again at once: %v", got)
	}
	// Half of maxAge on, the dictionary is counted again while it still
	// answers.
	c.SetFreshness(0, 2*time.Millisecond)
	c.mu.Lock()
	c.terms["menu"].complete["name"].at = time.Now().Add(-time.Millisecond)
	c.mu.Unlock()
	if got := c.WantDictionaries("menu", map[string][]string{"name": nil}); !slices.Equal(got, []string{"name"}) {
		t.Fatalf("a dictionary half of maxAge old is not wanted again: %v", got)
	}
	c.SetFreshness(0, time.Hour)
	// A shard refused what was put together as stale: the dictionary
	// answers no more, and is wanted again.
	c.StaleDictionaries("menu")
	if c.Compose("menu", map[string][]string{"name": {"quokka"}}, fields, nil) != nil || c.Dictionaries("menu") != nil {
		t.Error("a dictionary found stale still answers")
	}
	c.DictionaryFailed("menu", "name") // the count asked for above, ended
	c.mu.Lock()
	c.dicts["menu"]["name"].retry = time.Time{}
	c.mu.Unlock()
	if got := c.WantDictionaries("menu", map[string][]string{"name": nil}); !slices.Equal(got, []string{"name"}) {
		t.Fatalf("a dictionary found stale is not wanted again: %v", got)
	}
	c.NoteGeneration("menu", 3)
	if c.Compose("menu", map[string][]string{"name": {"quokka"}}, fields, nil) != nil {
		t.Error("generation 2's dictionary answers at generation 3")
	}
	if !c.putDictionary("menu", "name", answer(3, seqs, 100, map[string]map[string]uint64{"name": {"curry": 9}})) {
		t.Fatal("a dictionary counted again not kept")
	}
	c.Forget("menu")
	if c.Compose("menu", map[string][]string{"name": {"quokka"}}, fields, nil) != nil {
		t.Error("a forgotten index's dictionary answers")
	}
	if c.putDictionary("menu", "name", answer(0, seqs, 100, map[string]map[string]uint64{"name": {"curry": 9}})) {
		t.Error("a count asked for before the index was forgotten is kept")
	}
	c.SetDictionaryTerms(-1)
	if got := c.WantDictionaries("menu", map[string][]string{"name": nil}); got != nil {
		t.Fatalf("dictionaries wanted with the bound at none: %v", got)
	}
}
