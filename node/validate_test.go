package node

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/quarrysearch/quarry/api"
	"github.com/quarrysearch/quarry/client"
	"github.com/quarrysearch/quarry/internal/wasmtest"
)

// spinOnceWAT is a rewriter whose first call spins (about a hundred
// milliseconds: the plugin's own setup, as a Go plugin reads its
// configuration on first use) and whose later calls return at once;
// with WARM 0 every call spins.
const spinOnceWAT = `(module (memory 1)
  (global $warm (mut i32) (i32.const 0))
  (func (export "quarry_abi_v1"))
  (func (export "quarry_alloc") (param i32) (result i32) (i32.const 1024))
  (func (export "quarry_rewrite") (param $p i32) (param i32) (result i64)
    (local $i i32)
    (if (i32.eqz (global.get $warm)) (then
      (global.set $warm (i32.const WARM))
      (local.set $i (i32.const 400000000))
      (loop $spin
        (local.set $i (i32.sub (local.get $i) (i32.const 1)))
        (br_if $spin (local.get $i)))))
    (i32.store16 (i32.const 40960) (i32.const 0))
    (i64.or (i64.shl (i64.const 40960) (i64.const 32)) (i64.const 2))))`

// TestValidationWarmsFirstCall: a push's validation holds an instance's
// first call (the plugin's setup) to the start budget and every later
// sample to the step's budget: a plugin slow only on its first call is
// valid (it was refused, and `quarry serve --demo` with it on a loaded
// machine), one slow on every call is refused, naming the budget.
func TestValidationWarmsFirstCall(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	n := startNode(t)
	c := n.Client()
	if _, err := c.CreateIndex(ctx, "wv", 1, nil); err != nil {
		t.Fatal(err)
	}
	step := client.PushOptions{Kind: "rewriter", Step: api.StepSpec{BudgetMS: 20}}
	once := wasmtest.WAT(t, strings.Replace(spinOnceWAT, "WARM", "1", 1))
	if v, err := c.PushPlugin(ctx, "wv", "once", once, step); err != nil || !v.Valid {
		t.Fatalf("a plugin slow on its first call only: %+v %v", v, err)
	}
	// refused pushes wasm as name and returns why it was refused.
	refused := func(name string, wasm []byte) string {
		t.Helper()
		v, err := c.PushPlugin(ctx, "wv", name, wasm, step)
		switch {
		case err != nil:
			return err.Error()
		case v.Valid:
			t.Fatalf("%s was valid", name)
		}
		return v.Error
	}
	msg := refused("always", wasmtest.WAT(t, strings.Replace(spinOnceWAT, "WARM", "0", 1))) // slow on every call
	if !strings.Contains(msg, "budget of 20ms exceeded") {
		t.Fatalf("refused with %q, want the budget named", msg)
	}
	// One that never returns is stopped at the start budget, and the
	// refusal says it was its first call.
	msg = refused("never", wasmtest.WAT(t, strings.NewReplacer("WARM", "1", "(br_if $spin (local.get $i))", "(br $spin)").Replace(spinOnceWAT)))
	if !strings.Contains(msg, "its first call (the plugin's setup), held to the start budget of 5s") {
		t.Fatalf("refused with %q, want its first call and the start budget named", msg)
	}
}
