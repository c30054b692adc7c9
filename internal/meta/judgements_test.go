package meta

import (
	"context"
	"errors"
	"testing"

	"github.com/quarrysearch/quarry/api"
	"github.com/quarrysearch/quarry/internal/natstest"
)

// Judgement lists are versioned per index, earlier versions readable,
// and go with their index.
func TestJudgementSetsVersioned(t *testing.T) {
	ns := natstest.Start(t)
	ctx := context.Background()
	st, err := Open(ctx, ns.JS, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.CreateIndex(ctx, api.IndexDefinition{Name: "menu", Shards: 1, Team: "food"}); err != nil {
		t.Fatal(err)
	}
	q := func(q string, n int) []api.JudgedQuery {
		return []api.JudgedQuery{{Q: q, Line: 1, Ratings: map[string]int{"a": n, "b": 0}}}
	}
	for i := 1; i <= 3; i++ {
		set, err := st.PutJudgementSet(ctx, &api.JudgementSet{Index: "menu", Name: "golden", Team: "food", Queries: q("pad thai", i)})
		if err != nil || set.Version != i || set.NumQueries != 1 || set.NumRatings != 2 {
			t.Fatalf("push %d: %+v %v", i, set, err)
		}
	}
	if _, err := st.PutJudgementSet(ctx, &api.JudgementSet{Index: "menu", Name: "tail", Team: "food", Queries: q("x", 1)}); err != nil {
		t.Fatal(err)
	}
	latest, err := st.JudgementSet(ctx, "menu", "golden", 0)
	if err != nil || latest.Version != 3 || latest.Queries[0].Ratings["a"] != 3 {
		t.Fatalf("latest: %+v %v", latest, err)
	}
	if v1, err := st.JudgementSet(ctx, "menu", "golden", 1); err != nil || v1.Version != 1 || v1.Queries[0].Ratings["a"] != 1 {
		t.Fatalf("version 1: %+v %v", v1, err)
	}
	if _, err := st.JudgementSet(ctx, "menu", "golden", 9); !errors.Is(err, api.ErrNotFound) {
		t.Fatalf("version 9: %v", err)
	}
	sets, err := st.JudgementSets(ctx, "menu")
	if err != nil || len(sets) != 2 || sets[0].Name != "golden" || sets[0].Queries != nil || sets[1].Name != "tail" {
		t.Fatalf("ls: %+v %v", sets, err)
	}
	if err := st.PutGate(ctx, "menu", &api.Gate{Sets: []string{"golden"}, Metric: "ndcg", K: 10, Confidence: 0.95}); err != nil {
		t.Fatal(err)
	}
	if err := st.DeleteJudgementSet(ctx, "menu", "tail"); err != nil {
		t.Fatal(err)
	}
	if _, err := st.JudgementSet(ctx, "menu", "tail", 0); !errors.Is(err, api.ErrNotFound) {
		t.Fatalf("removed: %v", err)
	}
	// The index's lists and gate go with it; a new index of the name
	// starts afresh.
	if err := st.DeleteIndex(ctx, "menu"); err != nil {
		t.Fatal(err)
	}
	if sets, err := st.JudgementSets(ctx, "menu"); err != nil || len(sets) != 0 {
		t.Fatalf("after the index: %+v %v", sets, err)
	}
	if g, err := st.Gate(ctx, "menu"); err != nil || g != nil {
		t.Fatalf("gate after the index: %+v %v", g, err)
	}
	set, err := st.PutJudgementSet(ctx, &api.JudgementSet{Index: "menu", Name: "golden", Queries: q("y", 2)})
	if err != nil || set.Version != 1 {
		t.Fatalf("afresh: %+v %v", set, err)
	}
	if _, err := st.JudgementSet(ctx, "menu", "golden", 2); !errors.Is(err, api.ErrNotFound) {
		t.Fatalf("an old version came back: %v", err)
	}
}
