package main

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/quarrysearch/quarry/broker"
	"github.com/quarrysearch/quarry/internal/wasmtest"
	"github.com/quarrysearch/quarry/plugins"
	"github.com/quarrysearch/quarry/sdk/abi"
)

// BenchmarkDemoPlugins: each plugin of the demo pipeline
// (examples/pipelines/menu.json, with its configuration) called as the
// broker calls it, in WebAssembly and natively (the same Go through the
// same encoding), on requests like the bench's: a query with a misspelt
// word, and georank over 50 candidates with its four fields. The ratio of
// each pair is what WebAssembly costs that plugin.
//
//	go test -run XXX -bench DemoPlugins -benchmem ./cmd/quarry-bench/
func BenchmarkDemoPlugins(b *testing.B) {
	ctx := context.Background()
	pf, err := broker.ReadPipelineFile("../../examples/pipelines/menu.json")
	if err != nil {
		b.Fatal(err)
	}
	rt, err := plugins.NewRuntime(ctx, plugins.Config{CacheDir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	defer rt.Close(ctx)
	rewrite := &abi.RewriteRequest{Q: "spicy noodels with chips", Context: []byte(`{"lat":51.5,"lon":-0.12,"hour":20}`), Size: 10}
	rank := &abi.RankRequest{Q: "spicy noodles", Context: []byte(`{"lat":51.5,"lon":-0.12,"hour":20}`), Fields: []string{"rating", "open_hour", "close_hour", "location"}}
	for i := range 50 {
		rank.Candidates = append(rank.Candidates, abi.Candidate{ID: fmt.Sprintf("item-%05d", i*37), Score: 10 / float64(i+1), Values: []abi.Value{
			{Kind: abi.KindNumber, Num: 3 + float64(i%20)/10}, {Kind: abi.KindNumber, Num: float64(8 + i%6)}, {Kind: abi.KindNumber, Num: float64(18 + i%6)},
			{Kind: abi.KindList, List: []abi.Value{{Kind: abi.KindNumber, Num: -0.1 + float64(i%10)/100}, {Kind: abi.KindNumber, Num: 51.45 + float64(i%7)/100}}}}})
	}
	steps := append(pf.Rewriters, pf.Rankers...)
	for _, st := range steps {
		kind := plugins.Rewriter
		if len(st.Fields) > 0 || st.RerankDepth > 0 {
			kind = plugins.Ranker
		}
		spec := plugins.Spec{Name: st.Plugin, Kind: kind, Config: st.Config, Instances: 1, Budget: time.Second}
		wasmP, err := rt.Load(ctx, spec, wasmtest.GoPlugin(b, "../../examples/plugins/"+st.Plugin))
		if err != nil {
			b.Fatal(err)
		}
		nativeP, err := plugins.LoadNative(spec, nativePlugins[st.Plugin])
		if err != nil {
			b.Fatal(err)
		}
		for _, p := range []struct {
			name string
			p    *plugins.Plugin
		}{{"wasm", wasmP}, {"native", nativeP}} {
			b.Run(st.Plugin+"/"+p.name, func(b *testing.B) {
				call := func() error {
					if kind == plugins.Rewriter {
						_, err := p.p.Rewrite(ctx, rewrite)
						return err
					}
					resp, err := p.p.Rank(ctx, rank)
					if err == nil && len(resp.Ranked) != len(rank.Candidates) {
						err = fmt.Errorf("ranked %d of %d", len(resp.Ranked), len(rank.Candidates))
					}
					return err
				}
				if err := call(); err != nil { // warm: configuration read
					b.Fatal(err)
				}
				b.ReportAllocs()
				for b.Loop() {
					if err := call(); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
