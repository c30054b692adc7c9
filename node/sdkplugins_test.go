package node

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/quarrysearch/quarry/api"
	"github.com/quarrysearch/quarry/broker"
	"github.com/quarrysearch/quarry/internal/wasmtest"
)

// Plugins on the C SDK (sdk/c) and the AssemblyScript SDK
// (sdk/assemblyscript), built from examples/plugins/c and
// examples/plugins/assemblyscript, validated by the registry and run by
// the broker: the C rewriter tidies the text, the AssemblyScript one drops
// stop words, the AssemblyScript ranker orders by rating and the C one by
// price within it.
func TestPipelineSDKPlugins(t *testing.T) {
	t.Parallel()
	const asDir = "../examples/plugins/assemblyscript"
	modules := map[string][]byte{
		"tidy.wasm":      wasmtest.C(t, "../examples/plugins/c/rewriter.c"),
		"cboost.wasm":    wasmtest.C(t, "../examples/plugins/c/ranker.c"),
		"stopwords.wasm": wasmtest.AssemblyScript(t, asDir, "rewriter/index.ts", "--config", wasmtest.ASConfig),
		"asboost.wasm":   wasmtest.AssemblyScript(t, asDir, "ranker/index.ts", "--config", wasmtest.ASConfig),
	}
	path := writePipeline(t, modules, broker.PipelineFile{
		Rewriters: []broker.StepFile{
			{Plugin: "tidy", Wasm: "tidy.wasm", BudgetMS: 2000, Policy: api.FailClosed},
			{Plugin: "stopwords", Wasm: "stopwords.wasm", BudgetMS: 2000, Policy: api.FailClosed},
		},
		Rankers: []broker.StepFile{
			// rating × 1000 then price × -1: by rating, the cheapest first
			// among equal ratings.
			{Plugin: "asboost", Wasm: "asboost.wasm", Fields: []string{"rating"}, RerankDepth: 100, BudgetMS: 2000, Policy: api.FailClosed,
				Config: json.RawMessage(`{"field": "rating", "weight": 1000}`)},
			{Plugin: "cboost", Wasm: "cboost.wasm", Fields: []string{"price"}, RerankDepth: 100, BudgetMS: 2000, Policy: api.FailClosed,
				Config: json.RawMessage(`{"field": "price", "weight": -1}`)},
		},
	})
	n := startWithPipeline(t, path)
	r, err := n.Client().Search(context.Background(), "menu", &api.SearchRequest{Q: "  The NOODLES with   Chicken ", Size: 20, Fields: []string{"rating", "price"}, Profile: true})
	if err != nil {
		t.Fatal(err)
	}
	if r.Total == 0 || len(r.Pipeline) != 0 {
		t.Fatalf("found nothing or a step failed: total %d, pipeline %+v", r.Total, r.Pipeline)
	}
	var rewrites []string
	for _, st := range r.Profile.Stages {
		if strings.HasPrefix(st.Name, "rewrite ") {
			rewrites = append(rewrites, st.Detail)
		}
	}
	if len(rewrites) != 2 || !strings.Contains(rewrites[0], `→ "the noodles with chicken"`) || !strings.Contains(rewrites[1], `"the noodles with chicken" → "noodles chicken"`) {
		t.Fatalf("rewrites: %q", rewrites)
	}
	type key struct{ rating, price float64 }
	var got []key
	for _, h := range r.Hits {
		rating, _ := h.Fields["rating"].(float64)
		price, _ := h.Fields["price"].(float64)
		got = append(got, key{rating, price})
		if want := (rating*1000 - price); h.Score < want-1e-6 || h.Score > want+50 {
			t.Fatalf("hit %s: score %v, want the BM25 score plus %v", h.ID, h.Score, want)
		}
	}
	for i := 1; i < len(got); i++ {
		if got[i].rating > got[i-1].rating {
			t.Fatalf("hits not ordered by rating: %v", got)
		}
	}
}
