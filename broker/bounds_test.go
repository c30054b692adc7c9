package broker

import (
	"errors"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/quarrysearch/quarry/api"
)

// A team's search memory: each run holds what it was last accounted, a
// run that would take the team over its limit is refused naming it and
// holds nothing more, accounting less always passes, and what a run holds
// is given back whole; another team's account is its own.
func TestTeamSearchMemoryAccount(t *testing.T) {
	b, err := New(nil, nil, Config{Logger: quietLog(), TeamMaxSearchMemory: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	food := api.IndexDefinition{Name: "menu", Team: "food"}
	books := api.IndexDefinition{Name: "shelf", Team: "books"}
	held := func(team string) int64 { return b.admit.Team(team).Memory.Load() }
	first, second, other := &run{b: b, def: food}, &run{b: b, def: food}, &run{b: b, def: books}
	steps := []struct {
		name   string
		r      *run
		bytes  int64
		refuse string // "" when it passes
		food   int64  // the team's account after
	}{
		{"first, estimated", first, 600 << 10, "", 600 << 10},
		{"second, over with the first", second, 600 << 10, "team food's searches in flight on this broker would hold 1.2 MiB of memory with this one's 0.6 MiB (estimated), over the team's limit of 1.0 MiB (the broker's --team-max-search-memory)", 600 << 10},
		{"another team, not touched", other, 900 << 10, "", 600 << 10},
		{"first, counted lower", first, 100 << 10, "", 100 << 10},
		{"second, now within", second, 600 << 10, "", 700 << 10},
		{"first, counted higher, over", first, 500 << 10, "would hold 1.1 MiB of memory with this one's 0.5 MiB (counted)", 700 << 10},
		{"one alone over the limit", &run{b: b, def: food}, 2 << 20, "with this one's 2.0 MiB", 700 << 10},
	}
	for _, s := range steps {
		what := "estimated"
		if strings.Contains(s.name, "counted") {
			what = "counted"
		}
		err := s.r.account(s.bytes, what)
		if s.refuse == "" && err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		if s.refuse != "" && (!errors.Is(err, api.ErrOverloaded) || !strings.Contains(err.Error(), s.refuse)) {
			t.Fatalf("%s: %v, want overloaded saying %q", s.name, err, s.refuse)
		}
		if got := held("food"); got != s.food {
			t.Fatalf("%s: food holds %d, want %d", s.name, got, s.food)
		}
	}
	if held("books") != 900<<10 {
		t.Fatalf("books holds %d", held("books"))
	}
	for _, r := range []*run{first, second, other, first} { // twice: nothing more
		r.releaseMemory()
	}
	if held("food") != 0 || held("books") != 0 {
		t.Fatalf("after every run: food %d, books %d", held("food"), held("books"))
	}
	if got := testutil.ToFloat64(b.metrics.bounds[boundTeamMemory]); got != 3 {
		t.Errorf("%g refusals counted, want 3", got)
	}
}
