package plugins

import (
	"context"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/quarrysearch/quarry/internal/wasmtest"
	"github.com/quarrysearch/quarry/sdk/abi"
)

// BenchmarkBudget: the two ways of keeping a call's time budget, side by
// side in one run: wazero's own (Config.CloseOnContextDone: an exit into
// Go at every loop iteration and a goroutine per call) and Quarry's
// instrumented modules (plugins/internal/preempt, the default), on a
// no-op call and a ranker over 1,000 candidates, each by hand in WAT and
// in Go.
//
//	go test -run XXX -bench Budget -benchmem -count 3 ./plugins/
func BenchmarkBudget(b *testing.B) {
	noopWAT := wasmtest.WAT(b, watPlugin("", okBody))
	noopGo := wasmtest.GoPlugin(b, "testdata/noop")
	ltrWAT := wasmtest.WATFile(b, "testdata/ltr.wat")
	ltrGo := wasmtest.GoPlugin(b, "../examples/plugins/ltr")
	ctx := context.Background()
	rewrite := &abi.RewriteRequest{Q: "pop and chips", Size: 10}
	rank := rankRequest(1000)
	modes := []struct {
		name string
		cfg  Config
	}{{"wazero", Config{CloseOnContextDone: true}}, {"instrumented", Config{}}}
	cases := []struct {
		name, config string
		kind         Kind
		wasm         []byte
	}{
		{"noop-wat", "", Rewriter, noopWAT},
		{"noop-go", "", Rewriter, noopGo},
		{"rank1000-wat", "", Ranker, ltrWAT},
		{"rank1000-go", ltrConfig, Ranker, ltrGo},
	}
	for _, c := range cases {
		for _, mode := range modes { // the two modes one after the other, per case
			b.Run(c.name+"/"+mode.name, func(b *testing.B) {
				cfg := mode.cfg
				cfg.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
				rt, err := NewRuntime(ctx, cfg)
				if err != nil {
					b.Fatal(err)
				}
				b.Cleanup(func() { rt.Close(ctx) })
				p, err := rt.Load(ctx, Spec{Name: "bench", Kind: c.kind, Instances: 1, Budget: time.Second, Config: []byte(c.config)}, c.wasm)
				if err != nil {
					b.Fatal(err)
				}
				measure(b, func() error {
					if c.kind == Rewriter {
						_, err := p.Rewrite(ctx, rewrite)
						return err
					}
					_, err := p.Rank(ctx, rank)
					return err
				})
			})
		}
	}
}
