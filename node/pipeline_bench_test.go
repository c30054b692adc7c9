package node

import (
	"context"
	"encoding/json"
	"os"
	"testing"
	"time"

	"github.com/quarrysearch/quarry/api"
	"github.com/quarrysearch/quarry/broker"
	"github.com/quarrysearch/quarry/internal/catalog"
	"github.com/quarrysearch/quarry/internal/wasmtest"
)

// BenchmarkPipelineShare: the demo pipeline's share of end-to-end latency.
// The same queries on the same 4-shard catalogue, with the demo pipeline
// (spelling and synonyms rewriters, georank over 50 candidates) and
// without; the queries carry a location and an hour for georank.
func BenchmarkPipelineShare(b *testing.B) {
	modules := map[string][]byte{
		"spelling.wasm": wasmtest.GoPlugin(b, "../examples/plugins/spelling"),
		"synonyms.wasm": wasmtest.GoPlugin(b, "../examples/plugins/synonyms"),
		"georank.wasm":  wasmtest.GoPlugin(b, "../examples/plugins/georank"),
	}
	var demo broker.PipelineFile
	raw, err := os.ReadFile("../examples/pipelines/menu.json")
	if err != nil {
		b.Fatal(err)
	}
	if err := json.Unmarshal(raw, &demo); err != nil {
		b.Fatal(err)
	}
	for i := range demo.Rewriters {
		demo.Rewriters[i].Go, demo.Rewriters[i].Wasm = "", demo.Rewriters[i].Plugin+".wasm"
	}
	for i := range demo.Rankers {
		demo.Rankers[i].Go, demo.Rankers[i].Wasm = "", demo.Rankers[i].Plugin+".wasm"
	}
	path := writePipelineB(b, modules, demo)
	docs := catalogNDJSON(b, catalog.DefaultSize)
	n := e2eQuarry(b, docs, e2eShards)
	pl, err := broker.LoadPipelineFile(context.Background(), mustRuntime(b), path, b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	c := n.Client()
	where := json.RawMessage(`{"lat":51.5074,"lon":-0.1278,"hour":20}`)
	run := func(b *testing.B) {
		for _, q := range benchQueries { // warm: plugins' config parsed, stats cached
			if _, err := c.Search(context.Background(), "menu", &api.SearchRequest{Q: q, Context: where, Fields: e2eFields}); err != nil {
				b.Fatal(err)
			}
		}
		lat := make([]time.Duration, 0, 1<<16)
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			start := time.Now()
			r, err := c.Search(context.Background(), "menu", &api.SearchRequest{Q: benchQueries[i%len(benchQueries)], Context: where, Fields: e2eFields})
			if err != nil || len(r.Pipeline) > 0 {
				b.Fatal(err, r.Pipeline)
			}
			if len(lat) < cap(lat) {
				lat = append(lat, time.Since(start))
			}
			i++
		}
		reportPercentiles(b, lat)
	}
	b.Run("no-pipeline", func(b *testing.B) { n.Broker.SetPipeline("menu", nil); run(b) })
	b.Run("demo-pipeline", func(b *testing.B) { n.Broker.SetPipeline("menu", pl); run(b) })
}
