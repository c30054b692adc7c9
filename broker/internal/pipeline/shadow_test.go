package pipeline

import (
	"testing"

	"github.com/quarrysearch/quarry/api"
)

// A tally sums calls, times and errors of every mirrored query, and
// overlap and rho of the compared ones only.
func TestShadowTallyAdd(t *testing.T) {
	cases := []struct {
		name    string
		results []ShadowResult
		want    api.ShadowTally
	}{
		{"none", nil, api.ShadowTally{}},
		{"compared", []ShadowResult{{LiveTook: 2, ShadowTook: 3, Compared: true, Overlap: 0.8, Rho: -0.5}},
			api.ShadowTally{Calls: 1, Queries: 1, LiveNS: 2, ShadowNS: 3, OverlapSum: 0.8, RhoSum: -0.5}},
		{"errors are not compared", []ShadowResult{
			{LiveTook: 1, ShadowTook: 1, LiveErr: true},
			{LiveTook: 1, ShadowTook: 1, ShadowErr: true},
			{LiveTook: 1, ShadowTook: 1, LiveErr: true, ShadowErr: true},
		}, api.ShadowTally{Calls: 3, LiveNS: 3, ShadowNS: 3, LiveErrors: 2, ShadowErrors: 2}},
		{"sums", []ShadowResult{
			{LiveTook: 10, ShadowTook: 20, Compared: true, Overlap: 1, Rho: 1},
			{LiveTook: 30, ShadowTook: 40, Compared: true, Overlap: 0.5, Rho: 0},
			{LiveTook: 5, ShadowTook: 6, ShadowErr: true},
		}, api.ShadowTally{Calls: 3, Queries: 2, LiveNS: 45, ShadowNS: 66, ShadowErrors: 1, OverlapSum: 1.5, RhoSum: 1}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			sh := NewShadows()
			for _, r := range c.results {
				sh.Add("idx.p", r)
			}
			sh.Add("other.p", ShadowResult{LiveErr: true}) // another key's tally is its own
			got := sh.tally["idx.p"]
			if len(c.results) == 0 {
				if got != nil {
					t.Fatalf("a tally with no results: %+v", got)
				}
				return
			}
			if *got != c.want || !sh.dirty {
				t.Fatalf("tally %+v (dirty %v), want %+v", *got, sh.dirty, c.want)
			}
		})
	}
}

// Changed gives every tally once after a change, and nothing while
// nothing changed.
func TestShadowsChanged(t *testing.T) {
	sh := NewShadows()
	if got := sh.Changed(); got != nil {
		t.Fatalf("changed before any result: %+v", got)
	}
	sh.Add("idx.a", ShadowResult{LiveTook: 1, ShadowTook: 2})
	sh.Add("idx.b", ShadowResult{LiveErr: true})
	want := map[string]api.ShadowTally{"idx.a": {Calls: 1, LiveNS: 1, ShadowNS: 2}, "idx.b": {Calls: 1, LiveErrors: 1}}
	if got := sh.Changed(); len(got) != 2 || got["idx.a"] != want["idx.a"] || got["idx.b"] != want["idx.b"] {
		t.Fatalf("changed %+v, want %+v", got, want)
	}
	if got := sh.Changed(); got != nil {
		t.Fatalf("changed again with nothing new: %+v", got)
	}
	sh.Add("idx.a", ShadowResult{ShadowErr: true})
	if got := sh.Changed(); len(got) != 2 || got["idx.a"].ShadowErrors != 1 || sh.Tally("idx.a") != got["idx.a"] {
		t.Fatalf("after one more: %+v", got)
	}
}
