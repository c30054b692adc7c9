package plugins

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/quarrysearch/quarry/internal/wasmtest"
	"github.com/quarrysearch/quarry/sdk/abi"
)

func testRuntime(t testing.TB) *Runtime {
	t.Helper()
	return testRuntimeWith(t, Config{})
}

// testRuntimeWith is a runtime of cfg, with the tests' memory limit,
// compilation cache and logger where cfg leaves them out.
func testRuntimeWith(t testing.TB, cfg Config) *Runtime {
	t.Helper()
	if cfg.MemoryLimitPages == 0 {
		cfg.MemoryLimitPages = 256
	}
	if cfg.CacheDir == "" {
		cfg.CacheDir = wasmtest.PluginCache(t)
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	rt, err := NewRuntime(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close(context.Background()) })
	return rt
}

// mechanisms are the two ways a call over its budget is stopped: the
// fuel-counting instrumentation (the default) and wazero's own check.
// Every hostile-plugin case runs under both.
var mechanisms = []struct {
	name string
	cfg  Config
}{
	{"instrumented", Config{}},
	{"close-on-context-done", Config{CloseOnContextDone: true}},
}

// watPlugin wraps a rewrite body in a module that is otherwise a valid
// plugin: memory, the version marker and alloc (request at 1024).
func watPlugin(extra, rewriteBody string) string {
	imports := ""
	if strings.HasPrefix(extra, "(import") {
		imports, extra = extra, ""
	}
	return `(module
  ` + imports + `
  (memory 2)
  (func (export "quarry_abi_v1"))
  (func (export "quarry_alloc") (param i32) (result i32) (i32.const 1024))
  ` + extra + `
  (func (export "quarry_rewrite") (param $p i32) (param $n i32) (result i64)
    ` + rewriteBody + `))`
}

// okBody answers "status 0, no change" from offset 4096.
const okBody = `(i32.store8 (i32.const 4096) (i32.const 0))
    (i32.store8 (i32.const 4097) (i32.const 0))
    (i64.or (i64.shl (i64.const 4096) (i64.const 32)) (i64.const 2))`

func TestGoodWATPlugin(t *testing.T) {
	rt := testRuntime(t)
	p, err := rt.Load(context.Background(), Spec{Name: "ok", Kind: Rewriter}, wasmtest.WAT(t, watPlugin("", okBody)))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := p.Rewrite(context.Background(), &abi.RewriteRequest{Q: "x"})
	if err != nil || resp.Flags != 0 {
		t.Fatalf("%+v %v", resp, err)
	}
}

// Hostile plugins: each gets a clear error, at load or per call, and the
// host goes on serving the good plugin, under either time limit.
func TestHostilePlugins(t *testing.T) {
	for _, m := range mechanisms {
		t.Run(m.name, func(t *testing.T) { testHostilePlugins(t, testRuntimeWith(t, m.cfg)) })
	}
}

func testHostilePlugins(t *testing.T, rt *Runtime) {
	ctx := context.Background()
	good, err := rt.Load(ctx, Spec{Name: "good", Kind: Rewriter}, wasmtest.WAT(t, watPlugin("", okBody)))
	if err != nil {
		t.Fatal(err)
	}
	loadCases := []struct {
		name string
		wasm []byte
		want error
		msg  string
	}{
		{"not wasm", []byte("MZ\x90\x00 definitely not wasm"), ErrNotWasm, "not a WebAssembly module"},
		{"truncated", wasmtest.WAT(t, watPlugin("", okBody))[:20], ErrNotWasm, ""},
		{"missing export", wasmtest.WAT(t, `(module (memory 1) (func (export "quarry_abi_v1")) (func (export "quarry_alloc") (param i32) (result i32) (i32.const 0)))`),
			ErrMissingExport, "must export quarry_rewrite"},
		{"no version marker", wasmtest.WAT(t, `(module (memory 1) (func (export "quarry_alloc") (param i32) (result i32) (i32.const 0)))`),
			ErrABIVersion, "does not export quarry_abi_v1"},
		{"wrong ABI version", wasmtest.WAT(t, strings.Replace(watPlugin("", okBody), `"quarry_abi_v1"`, `"quarry_abi_v2"`, 1)),
			ErrABIVersion, "plugin speaks quarry_abi_v2"},
		{"file system import", wasmtest.WAT(t, watPlugin(`(import "wasi_snapshot_preview1" "path_open" (func (param i32 i32 i32 i32 i32 i64 i64 i32 i32) (result i32)))`, okBody)),
			ErrForbiddenImport, "wasi_snapshot_preview1.path_open"},
		{"unknown host import", wasmtest.WAT(t, watPlugin(`(import "env" "socket" (func))`, okBody)),
			ErrForbiddenImport, "env.socket"},
		{"trap in _initialize", wasmtest.WAT(t, watPlugin(`(func (export "_initialize") unreachable)`, okBody)),
			ErrInit, "_initialize"},
		{"Go panic in init", wasmtest.GoPlugin(t, "testdata/panicinit"), ErrInit, "_initialize"},
		{"memory over the limit", wasmtest.WAT(t, strings.Replace(watPlugin("", okBody), "(memory 2)", "(memory 300)", 1)),
			ErrMemoryLimit, "min 300 pages"},
		{"no memory", wasmtest.WAT(t, strings.Replace(watPlugin("", `(i64.const 0)`), "(memory 2)", "", 1)),
			ErrMissingExport, "a plugin must define a memory"},
		{"hook of the wrong type", wasmtest.WAT(t, `(module (memory 1) (func (export "quarry_abi_v1"))
			(func (export "quarry_alloc") (param i32) (result i32) (i32.const 1024))
			(func (export "quarry_rewrite") (param i32 i32) (result i32) (i32.const 0)))`),
			ErrMissingExport, "must export quarry_rewrite as (i32, i32) -> i64; this one is (i32, i32) -> i32"},
		{"alloc of the wrong type", wasmtest.WAT(t, strings.Replace(watPlugin("", okBody), "(param i32) (result i32) (i32.const 1024)", "(param i64) (result i32) (i32.const 1024)", 1)),
			ErrMissingExport, "must export quarry_alloc as (i32) -> i32; this one is (i64) -> i32"},
		{"start function that never returns", wasmtest.WAT(t, watPlugin(`(func $start (loop $l (br $l))) (start $start)`, okBody)),
			ErrInit, "start function: budget of 300ms exceeded"},
		{"_initialize that never returns", wasmtest.WAT(t, watPlugin(`(func (export "_initialize") (loop $l (br $l)))`, okBody)),
			ErrInit, "_initialize: budget of 300ms exceeded"},
		{"start function that traps", wasmtest.WAT(t, watPlugin(`(func $start unreachable) (start $start)`, okBody)),
			ErrInit, "start function"},
		{"_initialize of the wrong type", wasmtest.WAT(t, watPlugin(`(func (export "_initialize") (result i32) (i32.const 0))`, okBody)),
			ErrMissingExport, "must export _initialize as () -> (); this one is () -> i32"},
	}
	for _, c := range loadCases {
		t.Run("load/"+c.name, func(t *testing.T) {
			// A start that never returns is refused once over its
			// budget (before the fix, Load never returned).
			_, err := rt.Load(ctx, Spec{Name: c.name, Kind: Rewriter, InitBudget: 300 * time.Millisecond}, c.wasm)
			if !errors.Is(err, c.want) || !strings.Contains(err.Error(), c.msg) {
				t.Fatalf("got %v, want %v containing %q", err, c.want, c.msg)
			}
		})
	}

	callCases := []struct {
		name string
		wasm []byte
		kind ErrorKind
	}{
		{"infinite loop", wasmtest.WAT(t, watPlugin("", `(loop $l (br $l)) (i64.const 0)`)), KindTimeout},
		{"trap", wasmtest.WAT(t, watPlugin("", `unreachable`)), KindTrap},
		{"memory bomb (wasm)", wasmtest.WAT(t, watPlugin("", `(drop (memory.grow (i32.const 60000))) unreachable`)), KindTrap},
		// Out of memory, or out of time first on a slow (-race) machine:
		// either way the instance is discarded.
		{"memory bomb (Go)", wasmtest.GoPlugin(t, "testdata/memorybomb"), KindTrap + "|" + KindTimeout},
		{"output over the cap", wasmtest.WAT(t, watPlugin("", `(i64.or (i64.shl (i64.const 0) (i64.const 32)) (i64.const 100000000))`)), KindOutput},
		{"output outside memory", wasmtest.WAT(t, watPlugin("", `(i64.or (i64.shl (i64.const 200000) (i64.const 32)) (i64.const 10))`)), KindMalformed},
		{"malformed output", wasmtest.WAT(t, watPlugin("", `(i32.store8 (i32.const 4096) (i32.const 9)) (i64.or (i64.shl (i64.const 4096) (i64.const 32)) (i64.const 1))`)), KindMalformed},
		{"plugin error", wasmtest.WAT(t, watPlugin("", `(i32.store8 (i32.const 4096) (i32.const 1)) (i32.store8 (i32.const 4097) (i32.const 98)) (i64.or (i64.shl (i64.const 4096) (i64.const 32)) (i64.const 2))`)), KindPlugin},
	}
	for _, c := range callCases {
		t.Run("call/"+c.name, func(t *testing.T) {
			p, err := rt.Load(ctx, Spec{Name: c.name, Kind: Rewriter, Budget: 200 * time.Millisecond, Instances: 1, MaxOutput: 1 << 20}, c.wasm)
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close(ctx)
			for range 2 { // twice: the discarded instance is replaced
				_, err := p.Rewrite(ctx, &abi.RewriteRequest{Q: "x"})
				var ce *CallError
				if !errors.As(err, &ce) || !slices.Contains(strings.Split(string(c.kind), "|"), string(ce.Kind)) || ce.Plugin != c.name {
					t.Fatalf("got %v, want a %s error", err, c.kind)
				}
			}
			var n int64
			for _, k := range strings.Split(string(c.kind), "|") {
				n += p.Metrics.Errors()[ErrorKind(k)]
			}
			if n != 2 {
				t.Fatalf("metrics count %d %s errors, want 2", n, c.kind)
			}
			// The host and the other plugins are unharmed.
			if _, err := good.Rewrite(ctx, &abi.RewriteRequest{Q: "y"}); err != nil {
				t.Fatalf("good plugin after %s: %v", c.name, err)
			}
		})
	}
}
