package shard

import (
	"testing"

	index "github.com/blevesearch/bleve_index_api"

	"github.com/quarrysearch/quarry/internal/querystats"
)

// TestFuzzyDictAsScorch: a shard's reader walks a fuzzy term's
// dictionary with the process's cached automaton (querystats) and gives
// the terms and edit distances scorch's own walk gives, over many
// segments, with and without a prefix, at distances 1 and 2.
func TestFuzzyDictAsScorch(t *testing.T) {
	t.Parallel()
	docs, mapping := oddCatalog(t, 800)
	r := loadReplicas(t, 1, mapping, docs)[0]
	snap, closeSnap, err := openSnapshot(r.idx)
	if err != nil {
		t.Fatal(err)
	}
	defer closeSnap()
	if n := len(snap.Segments()); n < 2 {
		t.Logf("%d segment(s)", n)
	}
	ours := querystats.NewReader(snap, newTokenCache())
	walk := func(fd index.FieldDict) (out []index.DictEntry) {
		t.Helper()
		for {
			e, err := fd.Next()
			if err != nil {
				t.Fatal(err)
			}
			if e == nil {
				return out
			}
			out = append(out, index.DictEntry{Term: e.Term, EditDistance: e.EditDistance})
		}
	}
	cases := 0
	for _, c := range []struct {
		field, term, prefix string
		fuzziness           int
	}{
		{"name", "chiken", "", 1}, {"name", "chiken", "", 2}, {"name", "noodels", "", 2},
		{"description", "spicey", "", 1}, {"description", "spicey", "s", 2}, {"name", "xqzzy", "", 2},
		{"tags", "vegann", "", 1}, {"name", "ra", "", 1}, {"nosuchfield", "chicken", "", 1},
		{"description", "rice", "", 2}, {"name", "soup", "", 2}, {"description", "fresh", "", 2}, {"description", "with", "w", 2},
	} {
		want, wa, err := snap.FieldDictFuzzyAutomaton(c.field, c.term, c.fuzziness, c.prefix)
		if err != nil {
			t.Fatal(err)
		}
		got, ga, err := ours.FieldDictFuzzyAutomaton(c.field, c.term, c.fuzziness, c.prefix)
		if err != nil {
			t.Fatal(err)
		}
		if got.Cardinality() != want.Cardinality() {
			t.Errorf("%+v: cardinality %d, scorch's %d", c, got.Cardinality(), want.Cardinality())
		}
		g, w := walk(got), walk(want)
		if len(g) != len(w) {
			t.Fatalf("%+v: %d terms %v, scorch's %d %v", c, len(g), g, len(w), w)
		}
		for i := range g {
			if g[i] != w[i] {
				t.Fatalf("%+v: term %d %+v, scorch's %+v", c, i, g[i], w[i])
			}
		}
		for _, e := range w {
			gm, gd := ga.MatchAndDistance(e.Term)
			wm, wd := wa.MatchAndDistance(e.Term)
			if gm != wm || gd != wd {
				t.Fatalf("%+v: %q matches %v at %d, scorch's %v at %d", c, e.Term, gm, gd, wm, wd)
			}
		}
		cases += len(w)
	}
	if cases < 10 {
		t.Fatalf("only %d terms matched in all: the cases test little", cases)
	}
}
