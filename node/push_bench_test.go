package node

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/quarrysearch/quarry/api"
	"github.com/quarrysearch/quarry/broker"
	"github.com/quarrysearch/quarry/client"
	"github.com/quarrysearch/quarry/indexer"
	"github.com/quarrysearch/quarry/internal/wasmtest"
	"github.com/quarrysearch/quarry/searcher"
)

// BenchmarkPushLive: a team pushes a Go ranker (examples/plugins/ltr,
// 3 MB) with --activate to a node that has never compiled it (a fresh
// compilation cache each time, as on a new version), until its searches
// run it. The registry validates the push (compiling it) and the team's
// runtime on the broker loads it: with the two sharing one compilation
// cache, the second finds the first's compiled code.
//
//	go test -run XXX -bench PushLive -benchtime 5x ./node
func BenchmarkPushLive(b *testing.B) {
	ltr := wasmtest.GoPlugin(b, "../examples/plugins/ltr")
	ctx := context.Background()
	step := api.StepSpec{Config: json.RawMessage(`{"weights":{"price":-1}}`), Fields: []string{"price"}, RerankDepth: 30, BudgetMS: 2000}
	for b.Loop() {
		b.StopTimer()
		n := startConfig(b, Config{PluginCacheDir: b.TempDir(), NATSSync: time.Minute, Indexer: &indexer.Config{SnapshotInterval: -1}, Searcher: &searcher.Config{}, Broker: &broker.Config{}})
		c := n.Client()
		loadCatalog(b, n, "push", 1, catalogNDJSON(b, 50))
		b.StartTimer()
		if _, err := c.PushPlugin(ctx, "push", "ltr", ltr, client.PushOptions{Kind: "ranker", Step: step, Activate: true}); err != nil {
			b.Fatal(err)
		}
		for deadline := time.Now().Add(5 * time.Minute); ; {
			r, err := c.Search(ctx, "push", &api.SearchRequest{Q: "pizza", Profile: true})
			if err == nil && r.Profile != nil && strings.Contains(stageNames(r.Profile), "rank ltr") {
				break
			}
			if time.Now().After(deadline) {
				b.Fatalf("the ranker never went live: %v", err)
			}
			// The measure ends here: looked at every 1 ms, as testwait's
			// backoff (to 50 ms) would blur it.
			time.Sleep(time.Millisecond)
		}
		b.StopTimer()
		n.Close()
		b.StartTimer()
	}
}

func stageNames(p *api.Profile) string {
	var names []string
	for _, st := range p.Stages {
		names = append(names, st.Name)
	}
	return strings.Join(names, " ")
}
