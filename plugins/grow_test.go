package plugins

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/quarrysearch/quarry/internal/testwait"
	"github.com/quarrysearch/quarry/internal/wasmtest"
	"github.com/quarrysearch/quarry/sdk/abi"
)

// stuckWAT is a rewriter that loops for ever on a 4-byte q ("slow") and
// answers at once otherwise.
const stuckWAT = `(module (memory 1)
  (func (export "quarry_abi_v1"))
  (func (export "quarry_alloc") (param i32) (result i32) (i32.const 1024))
  (func (export "quarry_rewrite") (param $p i32) (param i32) (result i64)
    (if (i32.eq (i32.load (local.get $p)) (i32.const 4))
      (then (loop $spin (br $spin))))
    (i32.store16 (i32.const 40960) (i32.const 0))
    (i64.or (i64.shl (i64.const 40960) (i64.const 32)) (i64.const 2))))`

// Calls stuck on a plugin's slow path hold every pooled instance; a call
// that would not take the slow path still runs at once, on an extra
// instance within the team's budget, instead of failing as busy. With the
// team's budget spent it waits for a pooled one, and fails as busy only
// at its deadline.
func TestBusyPoolGrows(t *testing.T) {
	ctx := context.Background()
	rt, err := NewRuntime(ctx, Config{MaxInstances: 3, MaxCalls: -1}) // instances alone (TestTeamMaxCalls: calls)
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close(ctx)
	p, err := rt.Load(ctx, Spec{Name: "stuck", Version: "v1", Kind: Rewriter, Budget: 500 * time.Millisecond, Instances: 1}, wasmtest.WAT(t, stuckWAT))
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for range 2 { // hold the pooled instance and one extra
		wg.Go(func() {
			if _, err := p.Rewrite(ctx, &abi.RewriteRequest{Q: "slow"}); !errors.Is(err, context.DeadlineExceeded) && err == nil {
				t.Errorf("the slow path answered: %v", err)
			}
		})
	}
	// Both hold an instance once the second has grown one: it found the
	// pooled one taken.
	testwait.Until(t, 5*time.Second, "the two stuck calls hold two instances", func() bool { return rt.Instances() == 2 })
	start := time.Now()
	if _, err := p.Rewrite(ctx, &abi.RewriteRequest{Q: "quick!"}); err != nil {
		t.Fatalf("a fast call beside two stuck ones: %v", err)
	}
	if took := time.Since(start); took > 200*time.Millisecond {
		t.Errorf("a fast call waited %s", took)
	}
	if p.Metrics.grown.Load() < 2 {
		t.Errorf("grown %d times, want 2 (a stuck call and the fast one)", p.Metrics.grown.Load())
	}
	// Three stuck: the team's 3 instances are spent; a fourth call waits
	// and is busy at its deadline.
	wg.Go(func() { p.Rewrite(ctx, &abi.RewriteRequest{Q: "slow"}) })
	testwait.Until(t, 5*time.Second, "the third stuck call holds the team's third instance", func() bool { return rt.Instances() == 3 })
	var ce *CallError
	short, cancel := context.WithTimeout(ctx, 100*time.Millisecond) // before a stuck call's budget ends
	defer cancel()
	if _, err := p.Rewrite(short, &abi.RewriteRequest{Q: "quick!"}); !errors.As(err, &ce) || ce.Kind != KindBusy {
		t.Errorf("with the team's instances spent: %v, want busy", err)
	}
	wg.Wait()
	if n := rt.Instances(); n != 1 {
		t.Errorf("the runtime still reserves %d instances after the extra ones returned, want 1", n)
	}
}

// A team's plugin calls running at once are capped (Config.MaxCalls): a
// guest holds its processor until it returns, so calls stuck in a loop
// would otherwise hold every processor. A call past the cap waits for one
// to end, fails as busy at its deadline, and runs once one has ended.
func TestTeamMaxCalls(t *testing.T) {
	ctx := context.Background()
	rt := testRuntimeWith(t, Config{MaxCalls: 1})
	p, err := rt.Load(ctx, Spec{Name: "stuck", Version: "v1", Kind: Rewriter, Budget: 500 * time.Millisecond, Instances: 2}, wasmtest.WAT(t, stuckWAT))
	if err != nil {
		t.Fatal(err)
	}
	stuck := make(chan error, 1)
	go func() {
		_, err := p.Rewrite(ctx, &abi.RewriteRequest{Q: "slow"})
		stuck <- err
	}()
	testwait.Until(t, 5*time.Second, "the stuck call is running", func() bool { return rt.calls.running.Load() == 1 })
	short, cancel := context.WithTimeout(ctx, 100*time.Millisecond) // before the stuck call's budget ends
	defer cancel()
	var ce *CallError
	start := time.Now()
	if _, err := p.Rewrite(short, &abi.RewriteRequest{Q: "quick!"}); !errors.As(err, &ce) || ce.Kind != KindBusy || !strings.Contains(err.Error(), "--team-max-plugin-calls") {
		t.Fatalf("a call beside the team's one running call: %v, want busy naming the cap", err)
	} else if took := time.Since(start); took < 90*time.Millisecond {
		t.Fatalf("busy after %s, before its deadline", took)
	}
	// One that can wait runs once the stuck call's budget stops it.
	if _, err := p.Rewrite(ctx, &abi.RewriteRequest{Q: "quick!"}); err != nil {
		t.Fatalf("a call that waited for the stuck one: %v", err)
	}
	if err := <-stuck; err == nil {
		t.Fatal("the stuck call answered")
	}
	if n := rt.callsWaited(); n != 2 {
		t.Errorf("%d calls waited, want 2", n)
	}
	if got := DefaultMaxCalls(); got != max(1, runtime.GOMAXPROCS(0)/2) {
		t.Errorf("DefaultMaxCalls() = %d", got)
	}
}
