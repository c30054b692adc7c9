package plugins

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/quarrysearch/quarry/internal/wasmtest"
	"github.com/quarrysearch/quarry/sdk/abi"
)

// BenchmarkLanguages: the same two plugins in each language a team can
// write one in, side by side in one run: a no-op rewrite call (the call's
// own cost: the host, the ABI and the language's runtime and SDK) and a
// ranker over 1,000 candidates computing score + 0.3 × rating, read in
// place from a numbers column (testdata/ltr.wat, the C and AssemblyScript
// example rankers, testdata/boost on the Go SDK's batch form).
//
//	go test -run XXX -bench Languages -benchmem -count 3 ./plugins/
func BenchmarkLanguages(b *testing.B) {
	const asSDK, asExamples = "../sdk/assemblyscript", "../examples/plugins/assemblyscript"
	boostConfig := []byte(`{"field": "rating", "weight": 0.3}`)
	noops := []struct {
		lang string
		wasm func() []byte
	}{
		{"wat", func() []byte { return wasmtest.WAT(b, watPlugin("", okBody)) }},
		{"c", func() []byte { return wasmtest.C(b, "testdata/cnoop.c") }},
		{"assemblyscript", func() []byte {
			return wasmtest.AssemblyScript(b, asSDK, "tests/noop.ts", "--config", "tests/asconfig.json")
		}},
		{"go", func() []byte { return wasmtest.GoPlugin(b, "testdata/noop") }},
	}
	rankers := []struct {
		lang   string
		wasm   func() []byte
		config []byte
	}{
		{"wat", func() []byte { return wasmtest.WATFile(b, "testdata/ltr.wat") }, nil},
		{"c", func() []byte { return wasmtest.C(b, "../examples/plugins/c/ranker.c") }, boostConfig},
		{"assemblyscript", func() []byte {
			return wasmtest.AssemblyScript(b, asExamples, "ranker/index.ts", "--config", wasmtest.ASConfig)
		}, boostConfig},
		{"go", func() []byte { return wasmtest.GoPlugin(b, "testdata/boost") }, nil},
	}
	ctx := context.Background()
	for _, c := range noops {
		b.Run("noop/"+c.lang, func(b *testing.B) {
			p, err := testRuntime(b).Load(ctx, Spec{Name: "noop-" + c.lang, Kind: Rewriter, Instances: 1, Budget: time.Second}, c.wasm())
			if err != nil {
				b.Fatal(err)
			}
			req := &abi.RewriteRequest{Q: "pop and chips", Size: 10}
			measure(b, func() error {
				resp, err := p.Rewrite(ctx, req)
				if err == nil && resp.Flags != 0 {
					err = fmt.Errorf("no-op rewrite changed something: %+v", resp)
				}
				return err
			})
		})
	}
	req := rankRequest(1000)
	for _, c := range rankers {
		b.Run("rank1000/"+c.lang, func(b *testing.B) {
			p, err := testRuntime(b).Load(ctx, Spec{Name: "boost-" + c.lang, Kind: Ranker, Config: c.config, Instances: 1, Budget: time.Second}, c.wasm())
			if err != nil {
				b.Fatal(err)
			}
			// Every language computes the same scores.
			resp, err := p.Rank(ctx, req)
			if err != nil || len(resp.Ranked) != 1000 {
				b.Fatalf("rank: %v", err)
			}
			for _, e := range resp.Ranked {
				c := req.Candidates[e.Index]
				if want := c.Score + 0.3*c.Values[0].Num; e.Score != want {
					b.Fatalf("candidate %d: score %v, want %v", e.Index, e.Score, want)
				}
			}
			measure(b, func() error {
				_, err := p.Rank(ctx, req)
				return err
			})
		})
	}
}
