package plugins

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/quarrysearch/quarry/internal/wasmtest"
)

// Compiling is bounded: a module past a compile limit is refused before
// wazero compiles it (80,000 nested blocks took 26 s), a compile stops at
// CompileTimeout and when its caller's context ends (quarry plugin run on
// a signal), under either mechanism.
func TestCompileBounded(t *testing.T) {
	// 10 bodies of 3,000 nested blocks: within the limits, 0.3 s or more
	// to compile.
	slow := wasmtest.Nested(10, 3000, 0)
	cases := []struct {
		name    string
		cfg     Config
		wasm    []byte
		timeout time.Duration // the caller's
		want    error
		msg     string
	}{
		{"nesting", Config{}, wasmtest.Nested(1, 80000, 0), 0, ErrCompileLimit, "blocks nested 4097 deep"},
		{"nesting work", Config{}, wasmtest.Nested(20, 4000, 0), 0, ErrCompileLimit, "depths add up"},
		{"locals", Config{}, wasmtest.Nested(1, 1, 1<<20), 0, ErrCompileLimit, "1048576 locals, over the limit of 50000"},
		{"compile timeout", Config{CompileTimeout: 20 * time.Millisecond}, slow, 0, ErrCompileLimit, "compiling took over 20ms"},
		{"caller's deadline", Config{}, slow, 20 * time.Millisecond, context.DeadlineExceeded, "compile stopped"},
	}
	for _, m := range mechanisms {
		for _, c := range cases {
			t.Run(m.name+"/"+c.name, func(t *testing.T) {
				cfg := c.cfg
				cfg.CloseOnContextDone = m.cfg.CloseOnContextDone
				cfg.CacheDir = t.TempDir() // never a cached compile
				rt := testRuntimeWith(t, cfg)
				ctx := context.Background()
				if c.timeout > 0 {
					var cancel context.CancelFunc
					ctx, cancel = context.WithTimeout(ctx, c.timeout)
					defer cancel()
				}
				start := time.Now()
				_, err := rt.Load(ctx, Spec{Name: "deep", Kind: Rewriter, Instances: 1}, c.wasm)
				took := time.Since(start)
				if !errors.Is(err, c.want) || !strings.Contains(err.Error(), c.msg) {
					t.Fatalf("got %v, want %v with %q", err, c.want, c.msg)
				}
				if took > time.Second {
					t.Errorf("refused after %s", took)
				}
				if rt.Instances() != 0 {
					t.Errorf("a refused load holds %d instances", rt.Instances())
				}
			})
		}
	}
}
