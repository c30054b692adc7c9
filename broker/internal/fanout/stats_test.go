package fanout

import (
	"errors"
	"testing"
	"time"

	"github.com/quarrysearch/quarry/internal/testwait"
	"github.com/quarrysearch/quarry/internal/wire"
)

// TestStatsCache: an entry is used until a newer generation is seen, it
// is dropped, or the cache is full (then it starts again).
func TestStatsCache(t *testing.T) {
	c := NewStatsCache(2)
	q := []byte(`{"match":"soup"}`)
	if c.Get("menu", q) != nil {
		t.Fatal("an empty cache answered")
	}
	st := &wire.GlobalStats{Generation: 3}
	c.Put("menu", q, st)
	if c.Get("menu", q) != st || c.Get("other", q) != nil {
		t.Fatal("a query's statistics are not kept per index")
	}
	c.NoteGeneration("menu", 2) // older: no effect
	if c.Get("menu", q) != st {
		t.Fatal("an older generation hid the entry")
	}
	c.NoteGeneration("menu", 4)
	if c.Get("menu", q) != nil {
		t.Fatal("statistics of generation 3 used at generation 4")
	}
	c.Put("menu", q, &wire.GlobalStats{Generation: 4})
	c.Drop("menu", q)
	if c.Get("menu", q) != nil {
		t.Fatal("a dropped entry answered")
	}
	for i, query := range []string{"a", "b", "c"} {
		c.Put("menu", []byte(query), &wire.GlobalStats{Generation: 4})
		if i == 2 && (c.Get("menu", []byte("a")) != nil || c.Get("menu", []byte("c")) == nil) {
			t.Fatal("a full cache did not start again")
		}
	}
	off := NewStatsCache(0)
	off.Put("menu", q, st)
	if off.Get("menu", q) != nil {
		t.Fatal("a cache of size 0 kept an entry")
	}
}

// TestStatsFreshness: the bound's defaults, its cap, and an entry older
// than maxAge unused.
func TestStatsFreshness(t *testing.T) {
	c := NewStatsCache(10)
	if got := c.StaleUpdates(); got != DefaultStatsMaxUpdates {
		t.Fatalf("default bound %d", got)
	}
	c.SetFreshness(1<<20, time.Nanosecond)
	if got := c.StaleUpdates(); got != 4096 {
		t.Fatalf("bound over what a searcher remembers: %d, want 4096", got)
	}
	q := []byte("q")
	c.Put("menu", q, &wire.GlobalStats{})
	// Older than 1 ns as soon as the clock moves: then it is unused.
	testwait.UntilErr(t, time.Second, "the entry aged past maxAge", func() error {
		if c.Get("menu", q) != nil {
			return errors.New("an entry older than maxAge answered")
		}
		return nil
	})
	c.SetFreshness(0, 0)
	if c.StaleUpdates() != DefaultStatsMaxUpdates || c.Get("menu", q) == nil {
		t.Fatal("0, 0 did not restore the defaults")
	}
}
