package plugins

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/quarrysearch/quarry/internal/wasmtest"
	"github.com/quarrysearch/quarry/sdk"
	"github.com/quarrysearch/quarry/sdk/abi"
)

// Native twins of examples/plugins/synonyms and examples/plugins/ltr (a
// batch ranker): the same logic, compiled natively and called through the
// same encoding (sdk.HandleRewrite/HandleRank), for the WASM-against-native
// ratio.

var nativeSynonyms = map[string][]string{"pop": {"soda"}, "chips": {"fries"}}

func nativeRewrite(r *sdk.RewriteRequest) error {
	words := strings.Fields(r.Q)
	out := words
	for _, w := range words {
		out = append(out, nativeSynonyms[strings.ToLower(w)]...)
	}
	if len(out) > len(words) {
		r.Q = strings.Join(out, " ")
	}
	return nil
}

type nativeWeight struct {
	f string
	w float64
}

var nativeWeights = func() []nativeWeight {
	ws := []nativeWeight{{"rating", 0.3}, {"rating_count", 0.001}, {"price", -0.02}}
	sort.Slice(ws, func(i, j int) bool { return ws[i].f < ws[j].f })
	return ws
}()

func nativeBatchRank(b *sdk.Batch) error {
	for _, w := range nativeWeights {
		for i, v := range b.Numbers(w.f) {
			if v == v {
				b.Scores[i] += w.w * v
			}
		}
	}
	return nil
}

const (
	synonymsConfig = `{"synonyms":{"pop":["soda"],"chips":["fries"]}}`
	ltrConfig      = `{"weights":{"_score":1,"rating":0.3,"rating_count":0.001,"price":-0.02}}`
)

func rankRequest(n int) *abi.RankRequest {
	req := &abi.RankRequest{Q: "spicy noodles", Fields: []string{"rating", "rating_count", "price"}}
	for i := range n {
		req.Candidates = append(req.Candidates, abi.Candidate{ID: fmt.Sprintf("r%04d-i%02d", i/20, i%20), Score: 1 / float64(i+1),
			Values: []abi.Value{{Kind: abi.KindNumber, Num: 3 + float64(i%20)/10}, {Kind: abi.KindNumber, Num: float64(i % 300)}, {Kind: abi.KindNumber, Num: 5 + float64(i%40)}}})
	}
	return req
}

// measure runs op in b.Loop, failing on its first error, and reports the
// p50 and p99 of the first 65,536 calls next to ns/op and allocations.
func measure(b *testing.B, op func() error) {
	b.Helper()
	lat := make([]time.Duration, 0, 1<<16)
	b.ReportAllocs()
	for b.Loop() {
		start := time.Now()
		if err := op(); err != nil {
			b.Fatal(err)
		}
		if len(lat) < cap(lat) {
			lat = append(lat, time.Since(start))
		}
	}
	slices.Sort(lat)
	p := func(q float64) float64 { return float64(lat[int(q*float64(len(lat)-1))].Nanoseconds()) / 1000 }
	b.ReportMetric(p(0.5), "p50-µs")
	b.ReportMetric(p(0.99), "p99-µs")
}

func loadExample(b *testing.B, rt *Runtime, dir, config string, kind Kind) *Plugin {
	b.Helper()
	p, err := rt.Load(context.Background(), Spec{Name: dir, Kind: kind, Config: []byte(config), Instances: 1, Budget: time.Second},
		wasmtest.GoPlugin(b, "../examples/plugins/"+dir))
	if err != nil {
		b.Fatal(err)
	}
	return p
}

// BenchmarkRewrite: a warm rewriter call with a small request, WASM (the
// synonyms example) against the same logic natively.
func BenchmarkRewrite(b *testing.B) {
	req := &abi.RewriteRequest{Q: "pop and chips", Context: []byte(`{"user":"u1"}`), Size: 10}
	b.Run("wasm", func(b *testing.B) {
		p := loadExample(b, testRuntime(b), "synonyms", synonymsConfig, Rewriter)
		ctx := context.Background()
		if _, err := p.Rewrite(ctx, req); err != nil { // warm: config parsed
			b.Fatal(err)
		}
		measure(b, func() error {
			resp, err := p.Rewrite(ctx, req)
			if err != nil {
				return err
			}
			if resp.Q != "pop and chips soda fries" {
				return fmt.Errorf("rewrite = %q", resp.Q)
			}
			return nil
		})
	})
	b.Run("native", func(b *testing.B) {
		sdk.Rewriter(nativeRewrite)
		var out []byte
		measure(b, func() error {
			out = sdk.HandleRewrite(abi.AppendRewriteRequest(nil, req), out[:0])
			var resp abi.RewriteResponse
			if err := abi.DecodeRewriteResponse(out, &resp); err != nil || resp.Q != "pop and chips soda fries" {
				return fmt.Errorf("rewrite = %q, %v", resp.Q, err)
			}
			return nil
		})
	})
}

// BenchmarkRank1000: a ranker over 1,000 candidates with three fields, WASM
// (the ltr example) against the same model natively.
func BenchmarkRank1000(b *testing.B) {
	req := rankRequest(1000)
	b.Run("wasm", func(b *testing.B) {
		p := loadExample(b, testRuntime(b), "ltr", ltrConfig, Ranker)
		ctx := context.Background()
		if _, err := p.Rank(ctx, req); err != nil {
			b.Fatal(err)
		}
		measure(b, func() error {
			resp, err := p.Rank(ctx, req)
			if err != nil {
				return err
			}
			if len(resp.Ranked) != 1000 {
				return fmt.Errorf("ranked %d, want 1000", len(resp.Ranked))
			}
			return nil
		})
	})
	b.Run("native", func(b *testing.B) {
		sdk.BatchRanker(nativeBatchRank)
		var out []byte
		measure(b, func() error {
			out = sdk.HandleRank(abi.AppendRankRequest(nil, req), out[:0])
			var resp abi.RankResponse
			if err := abi.DecodeRankResponse(out, 1000, &resp); err != nil || len(resp.Ranked) != 1000 {
				return fmt.Errorf("ranked %d, %v", len(resp.Ranked), err)
			}
			return nil
		})
	})
}

// BenchmarkCold: compiling a Go plugin (3.4 MB) with an empty and with a
// warm on-disk compilation cache, and starting one instance (_initialize).
func BenchmarkCold(b *testing.B) {
	wasm := wasmtest.GoPlugin(b, "../examples/plugins/synonyms")
	ctx := context.Background()
	b.Run("compile-uncached", func(b *testing.B) {
		for b.Loop() {
			rt, err := NewRuntime(ctx, Config{CacheDir: b.TempDir()})
			if err != nil {
				b.Fatal(err)
			}
			if _, err := rt.rt.CompileModule(ctx, wasm); err != nil {
				b.Fatal(err)
			}
			rt.Close(ctx)
		}
	})
	b.Run("compile-cached", func(b *testing.B) {
		dir := b.TempDir()
		warm, _ := NewRuntime(ctx, Config{CacheDir: dir})
		if _, err := warm.rt.CompileModule(ctx, wasm); err != nil {
			b.Fatal(err)
		}
		warm.Close(ctx)
		for b.Loop() {
			rt, err := NewRuntime(ctx, Config{CacheDir: dir})
			if err != nil {
				b.Fatal(err)
			}
			if _, err := rt.rt.CompileModule(ctx, wasm); err != nil {
				b.Fatal(err)
			}
			rt.Close(ctx)
		}
	})
	b.Run("instance-start", func(b *testing.B) {
		rt := testRuntime(b)
		p, err := rt.Load(ctx, Spec{Name: "s", Kind: Rewriter, Config: []byte(synonymsConfig), Instances: 1}, wasm)
		if err != nil {
			b.Fatal(err)
		}
		for b.Loop() {
			in, err := p.newInstance(ctx)
			if err != nil {
				b.Fatal(err)
			}
			in.mod.Close(ctx)
		}
	})
}

// BenchmarkCallOverhead: a rewriter that does nothing: the cost of the call itself (copy in, guest decode and encode,
// copy out, host decode).
func BenchmarkCallOverhead(b *testing.B) {
	rt := testRuntime(b)
	wasm := wasmtest.GoPlugin(b, "testdata/noop")
	ctx := context.Background()
	b.Run("rewrite", func(b *testing.B) {
		p, err := rt.Load(ctx, Spec{Name: "noop", Kind: Rewriter, Instances: 1}, wasm)
		if err != nil {
			b.Fatal(err)
		}
		req := &abi.RewriteRequest{Q: "pop and chips", Size: 10}
		measure(b, func() error {
			_, err := p.Rewrite(ctx, req)
			return err
		})
	})
}

// BenchmarkGoEntry: what a Go guest's call is made of. Entering one: an
// empty //go:wasmexport function (the SDK's quarry_abi_v1) called
// straight through wazero, against a hand-written WAT module's empty
// export (the same: Go's wasip1 runtime costs nothing to enter). Then one
// part of a call each (testdata/goparts): a string allocated, a hook
// called under a deferred recover, a rewrite request decoded.
//
//	go test -run XXX -bench GoEntry -benchmem ./plugins/
func BenchmarkGoEntry(b *testing.B) {
	ctx := context.Background()
	for _, c := range []struct {
		name string
		wasm []byte
	}{
		{"go", wasmtest.GoPlugin(b, "testdata/noop")},
		{"wat", wasmtest.WAT(b, watPlugin("", okBody))},
	} {
		b.Run(c.name, func(b *testing.B) {
			p, err := testRuntime(b).Load(ctx, Spec{Name: "noop", Kind: Rewriter, Instances: 1}, c.wasm)
			if err != nil {
				b.Fatal(err)
			}
			in, err := p.newInstance(ctx)
			if err != nil {
				b.Fatal(err)
			}
			defer in.mod.Close(ctx)
			fn := in.mod.ExportedFunction(abi.ExportVersion)
			if fn == nil {
				b.Fatalf("no %s export", abi.ExportVersion)
			}
			stack := make([]uint64, 2)
			measure(b, func() error { return fn.CallWithStack(ctx, stack) })
		})
	}
	p, err := testRuntime(b).Load(ctx, Spec{Name: "parts", Kind: Rewriter, Instances: 1}, wasmtest.GoPlugin(b, "testdata/goparts"))
	if err != nil {
		b.Fatal(err)
	}
	in, err := p.newInstance(ctx)
	if err != nil {
		b.Fatal(err)
	}
	for _, name := range []string{"part_alloc", "part_defer", "part_decode"} {
		b.Run(name, func(b *testing.B) {
			fn := in.mod.ExportedFunction(name)
			stack := make([]uint64, 2)
			measure(b, func() error { return fn.CallWithStack(ctx, stack) })
		})
	}
}

// BenchmarkRankOverhead: the noop ranker over 1,000 candidates: decoding
// and encoding alone, without a model or a sort.
func BenchmarkRankOverhead(b *testing.B) {
	rt := testRuntime(b)
	p, err := rt.Load(context.Background(), Spec{Name: "noop", Kind: Ranker, Instances: 1}, wasmtest.GoPlugin(b, "testdata/noop"))
	if err != nil {
		b.Fatal(err)
	}
	req := rankRequest(1000)
	measure(b, func() error {
		_, err := p.Rank(context.Background(), req)
		return err
	})
}

// BenchmarkCallOverheadWAT: the same no-op rewrite in a hand-written
// module with no language runtime: the host's and wazero's share of a call.
func BenchmarkCallOverheadWAT(b *testing.B) { benchNoopWAT(b, Config{}) }

// benchNoopWAT measures calls of the hand-written no-op rewriter in a
// runtime of cfg.
func benchNoopWAT(b *testing.B, cfg Config) {
	rt := testRuntimeWith(b, cfg)
	p, err := rt.Load(context.Background(), Spec{Name: "noop-wat", Kind: Rewriter, Instances: 1}, wasmtest.WAT(b, watPlugin("", okBody)))
	if err != nil {
		b.Fatal(err)
	}
	req := &abi.RewriteRequest{Q: "pop and chips", Size: 10}
	measure(b, func() error {
		_, err := p.Rewrite(context.Background(), req)
		return err
	})
}

// BenchmarkCallCap: BenchmarkCallOverheadWAT's call with the team's cap
// on calls running at once (Config.MaxCalls, the default) and without:
// what taking and giving back a call's token costs.
func BenchmarkCallCap(b *testing.B) {
	for _, c := range []struct {
		name  string
		calls int
	}{{"cap=default", 0}, {"cap=none", -1}} {
		b.Run(c.name, func(b *testing.B) { benchNoopWAT(b, Config{MaxCalls: c.calls}) })
	}
}

// BenchmarkRank1000WAT: a linear ranker over 1,000 candidates written by
// hand in WAT: the ABI's and the host's share of a ranker call (encode,
// copy, call, decode, sort), with no language runtime in the guest.
func BenchmarkRank1000WAT(b *testing.B) {
	rt := testRuntime(b)
	p, err := rt.Load(context.Background(), Spec{Name: "ltr-wat", Kind: Ranker, Instances: 1}, wasmtest.WATFile(b, "testdata/ltr.wat"))
	if err != nil {
		b.Fatal(err)
	}
	req := rankRequest(1000)
	resp, err := p.Rank(context.Background(), req)
	if err != nil || len(resp.Ranked) != 1000 {
		b.Fatal(err)
	}
	if top := resp.Ranked[0]; top.Score != req.Candidates[top.Index].Score+0.3*req.Candidates[top.Index].Values[0].Num {
		b.Fatalf("wrong score %+v", top)
	}
	measure(b, func() error {
		_, err := p.Rank(context.Background(), req)
		return err
	})
}
