package plugins

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/quarrysearch/quarry/internal/testwait"
	"github.com/quarrysearch/quarry/internal/wasmtest"
	"github.com/quarrysearch/quarry/sdk/abi"
)

// StopCalls stops a call that would run to the end of a long budget, under
// either mechanism, and leaves the plugin serving: the next call runs.
func TestStopCalls(t *testing.T) {
	for _, m := range mechanisms {
		t.Run(m.name, func(t *testing.T) {
			ctx := context.Background()
			rt := testRuntimeWith(t, m.cfg)
			p, err := rt.Load(ctx, Spec{Name: "stuck", Version: "v1", Kind: Rewriter, Budget: DefaultMaxBudget, Instances: 2}, wasmtest.WAT(t, stuckWAT))
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close(ctx)
			done := make(chan error, 1)
			go func() {
				_, err := p.Rewrite(ctx, &abi.RewriteRequest{Q: "slow"})
				done <- err
			}()
			testwait.Until(t, 5*time.Second, "the stuck call is running", func() bool {
				p.mu.Lock()
				defer p.mu.Unlock()
				for in := range p.instances {
					if in.state.Load() == running {
						return true
					}
				}
				return false
			})
			start := time.Now()
			p.StopCalls()
			var ce *CallError
			select {
			case err := <-done:
				if !errors.As(err, &ce) || ce.Kind != KindStopped || !strings.Contains(err.Error(), "removed or replaced") {
					t.Fatalf("a stopped call: %v, want kind %s", err, KindStopped)
				}
				t.Logf("stopped in %s: %v", time.Since(start), err)
			case <-time.After(DefaultMaxBudget / 2):
				t.Fatalf("StopCalls did not stop the call within %s", DefaultMaxBudget/2)
			}
			if _, err := p.Rewrite(ctx, &abi.RewriteRequest{Q: "quick!"}); err != nil {
				t.Fatalf("a call after StopCalls: %v", err)
			}
		})
	}
}

// A budget over the runtime's MaxBudget is refused, the maximum named.
func TestMaxBudget(t *testing.T) {
	ctx := context.Background()
	rt, err := NewRuntime(ctx, Config{MaxBudget: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close(ctx)
	wasm := wasmtest.WAT(t, stuckWAT)
	if _, err := rt.Load(ctx, Spec{Name: "long", Kind: Rewriter, Budget: 201 * time.Millisecond, Instances: 1}, wasm); !errors.Is(err, ErrLimit) || !strings.Contains(err.Error(), "maximum of 200ms") {
		t.Fatalf("a budget over the maximum: %v", err)
	}
	if rt.Instances() != 0 {
		t.Fatalf("a refused load reserves %d instances", rt.Instances())
	}
	p, err := rt.Load(ctx, Spec{Name: "at", Kind: Rewriter, Budget: 200 * time.Millisecond, Instances: 1}, wasm)
	if err != nil {
		t.Fatalf("a budget at the maximum: %v", err)
	}
	p.Close(ctx)
}
