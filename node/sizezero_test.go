package node

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/quarrysearch/quarry/api"
	"github.com/quarrysearch/quarry/broker"
	"github.com/quarrysearch/quarry/indexer"
	"github.com/quarrysearch/quarry/internal/wasmtest"
	"github.com/quarrysearch/quarry/searcher"
)

// "size": 0 over HTTP returns the total and the facet counts and no hits,
// with or without rankers in the pipeline (one with a rerank depth, one
// without: zero candidates).
func TestHTTPSizeZero(t *testing.T) {
	t.Parallel()
	n := startConfig(t, Config{Indexer: &indexer.Config{SnapshotInterval: -1}, Searcher: &searcher.Config{}, Broker: &broker.Config{}})
	loadCatalog(t, n, "menu", 2, catalogNDJSON(t, 300))
	url := "http://" + n.HTTPAddr + "/v1/indexes/menu/search"
	const facets = `"facets":{"cuisine":{"field":"cuisine","size":5}}`

	var full api.SearchResponse
	if code, body := postJSON(t, url, `{"q":"chicken","size":10,`+facets+`}`, &full); code != 200 {
		t.Fatalf("search: %d %s", code, body)
	}
	if full.Total == 0 || len(full.Facets["cuisine"].Terms) == 0 {
		t.Fatalf("search found nothing to compare with: %+v", full)
	}
	// stages lists a profile's stage names, with the fan-out's detail.
	stages := func(r *api.SearchResponse) string {
		var out []string
		for _, st := range r.Profile.Stages {
			if st.Name == "fan-out" {
				out = append(out, st.Name+" ("+st.Detail+")")
			} else if !strings.HasPrefix(st.Name, "shard ") {
				out = append(out, st.Name)
			}
		}
		return strings.Join(out, ", ")
	}
	check := func(t *testing.T, what string) {
		t.Helper()
		for _, req := range []string{`"size":0`, `"size":0,"from":20`} {
			var r api.SearchResponse
			code, body := postJSON(t, url, `{"q":"chicken",`+req+`,"profile":true,`+facets+`}`, &r)
			switch {
			case code != 200:
				t.Fatalf("%s, %s: %d %s", what, req, code, body)
			case !strings.Contains(body, `"hits":[]`):
				t.Errorf("%s, %s: hits are not an empty list: %s", what, req, body)
			case r.Total != full.Total:
				t.Errorf("%s, %s: total %d, want %d", what, req, r.Total, full.Total)
			case len(r.Pipeline) != 0:
				t.Errorf("%s, %s: a pipeline step failed: %+v", what, req, r.Pipeline)
			}
			got, _ := json.Marshal(r.Facets)
			want, _ := json.Marshal(full.Facets)
			if string(got) != string(want) {
				t.Errorf("%s, %s: facets\n%s\nwant\n%s", what, req, got, want)
			}
			// No hits: shards return none, no statistics are gathered
			// for scores nobody sees, no ranker runs.
			if st := stages(&r); st != "decode, plan, fan-out (2 shards, k=0 each, shard deadline 1.98s), merge, encode" {
				t.Errorf("%s, %s: stages %s", what, req, st)
			}
		}
	}
	check(t, "no pipeline")

	// The C example ranker: small, so quick to validate and compile.
	ranker := wasmtest.C(t, "../examples/plugins/c/ranker.c")
	cfg := json.RawMessage(`{"field":"rating","weight":0.5}`)
	path := writePipeline(t, map[string][]byte{"ranker.wasm": ranker}, broker.PipelineFile{Rankers: []broker.StepFile{
		{Plugin: "deep", Wasm: "ranker.wasm", Fields: []string{"rating"}, Config: cfg, RerankDepth: 50, BudgetMS: 2000, Policy: api.FailClosed},
		{Plugin: "shallow", Wasm: "ranker.wasm", Fields: []string{"rating"}, Config: cfg, BudgetMS: 2000, Policy: api.FailClosed},
	}})
	if _, err := n.ApplyPipelineFile(context.Background(), "menu", path); err != nil {
		t.Fatal(err)
	}
	check(t, "with rankers")

	// With hits the rankers run; over no candidates (nothing matches) a
	// ranker is not called, and nothing fails.
	var r api.SearchResponse
	if code, body := postJSON(t, url, `{"q":"chicken","size":3,"profile":true}`, &r); code != 200 || len(r.Hits) != 3 || !strings.Contains(stages(&r), "rank deep, rank shallow") {
		t.Fatalf("search with rankers: %d %s", code, body)
	}
	code, body := postJSON(t, url, `{"q":"zzzznothing","size":3,"profile":true}`, &r)
	if code != 200 || r.Total != 0 || len(r.Pipeline) != 0 {
		t.Fatalf("search matching nothing, with rankers: %d %s", code, body)
	}
	for _, st := range r.Profile.Stages {
		if strings.HasPrefix(st.Name, "rank ") && st.Detail != "no candidates: not called" {
			t.Errorf("stage %s over no candidates: %q", st.Name, st.Detail)
		}
	}

	// A sorted request is in its sort's order: the rankers (which order
	// by rating) do not run on it, and a full page has a cursor. They
	// did, and the demo's "sort":["-price"] answered 35.95 before 57.5.
	var sorted api.SearchResponse
	code, body = postJSON(t, url, `{"q":"chicken","size":20,"sort":["-price"],"fields":["price"],"profile":true}`, &sorted)
	if code != 200 || len(sorted.Hits) != 20 || sorted.Next == "" || strings.Contains(stages(&sorted), "rank ") {
		t.Fatalf("sorted search with rankers: %d %s", code, body)
	}
	for i := 1; i < len(sorted.Hits); i++ {
		if a, b := sorted.Hits[i-1].Fields["price"].(float64), sorted.Hits[i].Fields["price"].(float64); a < b {
			t.Fatalf("sorted by -price, hit %d costs %v after %v: %s", i, b, a, body)
		}
	}
}
