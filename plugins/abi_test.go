package plugins

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/quarrysearch/quarry/internal/wasmtest"
	"github.com/quarrysearch/quarry/sdk/abi"
)

// fixedPlugin is a plugin of kind whose hook answers every request with
// out, kept in a data segment at 40000.
func fixedPlugin(t *testing.T, kind Kind, out []byte) []byte {
	t.Helper()
	var data strings.Builder
	for _, c := range out {
		fmt.Fprintf(&data, `\%02x`, c)
	}
	return wasmtest.WAT(t, fmt.Sprintf(`(module
  (memory 1)
  (data (i32.const 40000) "%s")
  (func (export "quarry_abi_v1"))
  (func (export "quarry_alloc") (param i32) (result i32) (i32.const 1024))
  (func (export "%s") (param i32 i32) (result i64) (i64.const %d)))`, data.String(), export(kind), 40000<<32|len(out)))
}

// A malformed answer fails the call as malformed output (errors.Is
// abi.ErrMalformed), naming the rule broken; the instance is replaced
// and the plugin's metrics count it.
func TestMalformedOutputNamesTheRule(t *testing.T) {
	rt := testRuntime(t)
	ctx := context.Background()
	entries := func(flags byte, e ...abi.Ranked) []byte {
		return abi.AppendRankResponse(nil, &abi.RankResponse{Flags: flags, Ranked: e})
	}
	nan, inf := math.NaN(), math.Inf(1)
	cases := []struct {
		name string
		kind Kind
		out  []byte
		want string
	}{
		{"NaN score", Ranker, entries(1, abi.Ranked{Index: 0, Score: 1}, abi.Ranked{Index: 1, Score: nan}), "entry 1: NaN score"},
		{"+Inf score", Ranker, entries(0, abi.Ranked{Index: 0, Score: 1}, abi.Ranked{Index: 1, Score: 2}, abi.Ranked{Index: 2, Score: inf}), "entry 2: +Inf score"},
		{"-Inf score", Ranker, entries(1, abi.Ranked{Index: 3, Score: -inf}), "entry 0: -Inf score"},
		{"index out of range", Ranker, entries(0, abi.Ranked{Index: 17, Score: 1}), "entry 0: index 17 out of range (4 candidates)"},
		{"repeated index", Ranker, entries(0, abi.Ranked{Index: 2}, abi.Ranked{Index: 1}, abi.Ranked{Index: 2}), "entry 2 repeats index 2 (entry 0's)"},
		{"count over the candidates", Ranker, entries(0, make([]abi.Ranked, 5)...), "count 5 is more than the 4 candidates"},
		{"truncated", Ranker, entries(0, abi.Ranked{Index: 0}, abi.Ranked{Index: 1})[:20], "truncated at byte 20 (want 2 more bytes for entry 1's index)"},
		{"unknown rank flag", Ranker, entries(4), "flags 0x04: unknown bits 0x04"},
		{"unknown status", Ranker, []byte{9}, "status byte 9 (want 0, ok, or 1, error)"},
		{"unknown rewrite flag", Rewriter, []byte{abi.StatusOK, 0x20}, "flags 0x20: unknown bits 0x20"},
		{"rewrite trailing bytes", Rewriter, []byte{abi.StatusOK, 0, 0}, "1 byte after the end of the response (it ends at byte 2, not 3)"},
	}
	req := &abi.RankRequest{Candidates: []abi.Candidate{{ID: "a"}, {ID: "b"}, {ID: "c"}, {ID: "d"}}}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p, err := rt.Load(ctx, Spec{Name: "bad", Kind: c.kind, Instances: 1, Budget: time.Second}, fixedPlugin(t, c.kind, c.out))
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close(ctx)
			if c.kind == Ranker {
				_, err = p.Rank(ctx, req)
			} else {
				_, err = p.Rewrite(ctx, &abi.RewriteRequest{Q: "x"})
			}
			var ce *CallError
			if !errors.As(err, &ce) || ce.Kind != KindMalformed || !errors.Is(err, abi.ErrMalformed) {
				t.Fatalf("got %v, want malformed output", err)
			}
			if want := "plugin bad: malformed_output: malformed plugin message: " + c.want; !strings.HasPrefix(err.Error(), want) {
				t.Fatalf("got  %q\nwant %q", err, want)
			}
			if n := p.Metrics.Errors()[KindMalformed]; n != 1 {
				t.Fatalf("metrics: %d malformed outputs, want 1", n)
			}
			if p.LiveInstances() != 0 {
				t.Fatalf("%d live instances after malformed output, want 0 (discarded)", p.LiveInstances())
			}
		})
	}
}

// growPlugin answers a rewrite with rerank_depth = memory.grow(pages): the
// old size in pages, or 0xffffffff (-1) when growing fails.
func growPlugin(t *testing.T, memory string, pages int) []byte {
	t.Helper()
	return wasmtest.WAT(t, strings.Replace(watPlugin("", fmt.Sprintf(`(i32.store8 (i32.const 4096) (i32.const 0))
    (i32.store8 (i32.const 4097) (i32.const 8))
    (i32.store (i32.const 4098) (memory.grow (i32.const %d)))
    (i64.or (i64.shl (i64.const 4096) (i64.const 32)) (i64.const 6))`, pages)), "(memory 2)", memory, 1))
}

// Past the runtime's memory cap (256 pages in these tests), memory.grow
// returns -1: it does not trap, and the instance goes on. A declared
// maximum over the cap is lowered to it, not refused.
func TestMemoryGrowAtTheCap(t *testing.T) {
	rt := testRuntime(t)
	ctx := context.Background()
	cases := []struct {
		name   string
		memory string
		pages  int
		want   uint32
	}{
		{"within the cap", "(memory 2)", 10, 2},
		{"up to the cap", "(memory 2)", 254, 2},
		{"past the cap", "(memory 2)", 255, math.MaxUint32},
		{"far past the cap", "(memory 2)", 60000, math.MaxUint32},
		{"declared maximum over the cap", "(memory 2 60000)", 300, math.MaxUint32},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p, err := rt.Load(ctx, Spec{Name: "grow", Kind: Rewriter, Instances: 1, Budget: 5 * time.Second}, growPlugin(t, c.memory, c.pages))
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close(ctx)
			resp, err := p.Rewrite(ctx, &abi.RewriteRequest{Q: "x"})
			if err != nil || resp.RerankDepth != c.want {
				t.Fatalf("memory.grow(%d) = %d, %v; want %d", c.pages, resp.RerankDepth, err, c.want)
			}
			if p.LiveInstances() != 1 {
				t.Fatal("the instance was discarded")
			}
		})
	}
	// An access outside memory is a trap, of kind memory.
	p, err := rt.Load(ctx, Spec{Name: "oob", Kind: Rewriter, Instances: 1}, wasmtest.WAT(t, watPlugin("", `(drop (i32.load (i32.const -16))) (i64.const 0)`)))
	if err != nil {
		t.Fatal(err)
	}
	var ce *CallError
	if _, err := p.Rewrite(ctx, &abi.RewriteRequest{}); !errors.As(err, &ce) || ce.Kind != KindMemory {
		t.Fatalf("out-of-bounds load: %v, want a memory error", err)
	}
}

// What the host does with each build mode: a reactor's _initialize runs
// once per instance before anything else; a command's _start never runs
// (a Go command, whose runtime _start would start, traps at every call);
// a freestanding module needs neither (TestCRewriter, TestCRanker).
func TestBuildModes(t *testing.T) {
	rt := testRuntime(t)
	ctx := context.Background()
	// rerank_depth = how many times _initialize ran, times 1000, plus
	// how many times quarry_alloc ran before it.
	reactor := watPlugin(`(global $init (mut i32) (i32.const 0))
  (global $allocs (mut i32) (i32.const 0))
  (func (export "_initialize") (global.set $init (i32.add (global.get $init) (i32.const 1))))
  (func (export "_start") unreachable)`, `(i32.store8 (i32.const 4096) (i32.const 0))
    (i32.store8 (i32.const 4097) (i32.const 8))
    (i32.store (i32.const 4098) (i32.add (i32.mul (global.get $init) (i32.const 1000)) (global.get $allocs)))
    (i64.or (i64.shl (i64.const 4096) (i64.const 32)) (i64.const 6))`)
	reactor = strings.Replace(reactor, `(func (export "quarry_alloc") (param i32) (result i32) (i32.const 1024))`,
		`(func (export "quarry_alloc") (param i32) (result i32)
    (if (i32.eqz (global.get $init)) (then (global.set $allocs (i32.add (global.get $allocs) (i32.const 1)))))
    (i32.const 1024))`, 1)
	p, err := rt.Load(ctx, Spec{Name: "reactor", Kind: Rewriter, Instances: 2}, wasmtest.WAT(t, reactor))
	if err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		resp, err := p.Rewrite(ctx, &abi.RewriteRequest{Q: "x"})
		if err != nil || resp.RerankDepth != 1000 {
			t.Fatalf("call %d: %+v %v; want _initialize run once, first, and _start never", i, resp, err)
		}
	}

	cmd, err := rt.Load(ctx, Spec{Name: "go-command", Kind: Rewriter, Instances: 1}, wasmtest.GoCommand(t, "testdata/gocommand"))
	if err != nil {
		t.Fatalf("a Go command should load (the host cannot tell it will not work): %v", err)
	}
	var ce *CallError
	if _, err := cmd.Rewrite(ctx, &abi.RewriteRequest{Q: "x"}); !errors.As(err, &ce) || ce.Kind != KindTrap || !strings.Contains(err.Error(), "unreachable") {
		t.Fatalf("a Go command's call: %v, want a trap (unreachable)", err)
	}
}
