package preempt

import (
	"bytes"
	"context"
	"errors"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/quarrysearch/quarry/internal/wasmtest"
	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
)

// instantiate instruments wasm and instantiates it on a runtime without
// wazero's own termination checks: only the instrumented ones can stop it.
func instantiate(t *testing.T, wasm []byte) (api.Module, api.MutableGlobal) {
	t.Helper()
	out, err := Instrument(wasm, Limits{})
	if err != nil {
		t.Fatalf("Instrument: %v", err)
	}
	ctx := context.Background()
	rt := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfig().WithCloseOnContextDone(false))
	t.Cleanup(func() { rt.Close(ctx) })
	mod, err := rt.InstantiateWithConfig(ctx, out, wazero.NewModuleConfig().WithName(""))
	if err != nil {
		t.Fatalf("instantiate the instrumented module: %v", err)
	}
	g, ok := mod.ExportedGlobal(Export).(api.MutableGlobal)
	if !ok {
		t.Fatalf("no mutable global %q exported", Export)
	}
	return mod, g
}

// TestInterruptStops: each guest would run for hours (or for ever); set
// the interrupt and it traps at once, whether it loops, recurses without
// a loop, or loops in a callee.
func TestInterruptStops(t *testing.T) {
	// Each module has a memory, as every plugin must: without one the
	// tick has no memory.grow to enter Go by, and a garbage collection
	// that began while the guest spun would wait for it for ever.
	for _, tc := range []struct{ name, wat string }{
		{"loop", `(module (memory 1) (func (export "run") (loop $l (br $l))))`},
		{"loop with params", `(module (memory 1) (type $t (func (param i32))) (func (export "run") (i32.const 1) (loop $l (type $t) (param i32) (drop) (i32.const 2) (br $l))))`},
		{"loop in a callee", `(module (memory 1) (func $spin (loop $l (br $l))) (func (export "run") (call $spin)))`},
		{"recursion without a loop", `(module (memory 1)
			(func $fib (param $n i64) (result i64)
				(if (result i64) (i64.lt_u (local.get $n) (i64.const 2))
					(then (local.get $n))
					(else (i64.add (call $fib (i64.sub (local.get $n) (i64.const 1))) (call $fib (i64.sub (local.get $n) (i64.const 2)))))))
			(func (export "run") (drop (call $fib (i64.const 90)))))`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mod, g := instantiate(t, wasmtest.WAT(t, tc.wat))
			timer := time.AfterFunc(20*time.Millisecond, func() { g.Set(1) })
			defer timer.Stop()
			done := make(chan error, 1)
			go func() {
				_, err := mod.ExportedFunction("run").Call(context.Background())
				done <- err
			}()
			select {
			case err := <-done:
				if err == nil || !strings.Contains(err.Error(), "unreachable") {
					t.Fatalf("call returned %v, want the interrupt's trap (unreachable)", err)
				}
			case <-time.After(20 * time.Second):
				t.Fatal("the guest was not stopped 20 s after the interrupt")
			}
		})
	}
}

// TestInterruptStopsEveryProcessor: with more guests spinning than the Go
// scheduler has processors, the timers that set the interrupts still
// fire (machine code cannot be preempted: the ticks are where it can be).
func TestInterruptStopsEveryProcessor(t *testing.T) {
	wasm := wasmtest.WAT(t, `(module (memory 1) (func (export "run") (loop $l (br $l))))`)
	n := runtime.GOMAXPROCS(0) + 1
	done := make(chan error, n)
	for range n {
		mod, g := instantiate(t, wasm)
		time.AfterFunc(50*time.Millisecond, func() { g.Set(1) })
		go func() {
			_, err := mod.ExportedFunction("run").Call(context.Background())
			done <- err
		}()
	}
	deadline := time.After(20 * time.Second)
	for range n {
		select {
		case err := <-done:
			if err == nil || !strings.Contains(err.Error(), "unreachable") {
				t.Fatalf("call returned %v, want the interrupt's trap", err)
			}
		case <-deadline:
			t.Fatalf("%d guests on %d processors: not all stopped 20 s after their interrupts", n, n-1)
		}
	}
}

// TestInstrumentKeepsResults: instrumented code computes what the original
// did, and the interrupt at zero changes nothing.
func TestInstrumentKeepsResults(t *testing.T) {
	wasm := wasmtest.WAT(t, `(module
		(global $g (mut i32) (i32.const 7))
		(memory 1)
		(func $sum (param $n i32) (result i32) (local $i i32) (local $s i32)
			(block $done (loop $l
				(br_if $done (i32.ge_u (local.get $i) (local.get $n)))
				(local.set $s (i32.add (local.get $s) (local.get $i)))
				(local.set $i (i32.add (local.get $i) (i32.const 1)))
				(br $l)))
			(i32.add (local.get $s) (global.get $g)))
		(func (export "run") (param i32) (result i32) (call $sum (local.get 0)))
		(export "g" (global $g)))`)
	mod, g := instantiate(t, wasm)
	res, err := mod.ExportedFunction("run").Call(context.Background(), 100)
	if err != nil || res[0] != 4950+7 {
		t.Fatalf("run(100) = %v, %v; want 4957", res, err)
	}
	if got := g.Get(); got != 0 {
		t.Fatalf("interrupt starts at %d, want 0", got)
	}
	if mod.ExportedGlobal("g").Get() != 7 {
		t.Fatal("the module's own global changed")
	}
}

// TestInstrumentAddsSections: a module with no global or export section
// gets both, in the order the binary format requires.
func TestInstrumentAddsSections(t *testing.T) {
	for _, wat := range []string{
		`(module)`,
		`(module (func (loop $l)) (start 0))`,
		`(module (memory 1) (data (i32.const 0) "hi") (func (loop $l)) (elem (i32.const 0) 0) (table 1 funcref))`,
		`(module (import "env" "g" (global i32)) (func (result i32) (global.get 0)))`,
	} {
		instantiateWithImports(t, wasmtest.WAT(t, wat))
	}
}

func instantiateWithImports(t *testing.T, wasm []byte) {
	t.Helper()
	out, err := Instrument(wasm, Limits{})
	if err != nil {
		t.Fatalf("Instrument: %v", err)
	}
	ctx := context.Background()
	rt := wazero.NewRuntime(ctx)
	defer rt.Close(ctx)
	if _, err := rt.InstantiateWithConfig(ctx, wasmtest.WAT(t, `(module (global (export "g") i32 (i32.const 5)))`), wazero.NewModuleConfig().WithName("env")); err != nil {
		t.Fatal(err)
	}
	mod, err := rt.InstantiateWithConfig(ctx, out, wazero.NewModuleConfig().WithName(""))
	if err != nil {
		t.Fatalf("instantiate the instrumented module: %v", err)
	}
	if _, ok := mod.ExportedGlobal(Export).(api.MutableGlobal); !ok {
		t.Fatalf("%s not exported as a mutable global", Export)
	}
}

// TestStartExported: a start function does not run at instantiation (where
// nothing could interrupt it) but is exported as StartExport, and called
// there it can be interrupted like any call.
func TestStartExported(t *testing.T) {
	// With a memory, as every plugin has (the host refuses one without,
	// before any of its code runs): without one the tick has no
	// memory.grow to enter Go by, and a garbage collection that starts
	// while the guest spins waits for it for ever, the timer that would
	// interrupt it included.
	mod, g := instantiate(t, wasmtest.WAT(t, `(module (memory 1)
		(global $ran (export "ran") (mut i32) (i32.const 0))
		(func $start (global.set $ran (i32.const 1)) (loop $l (br $l)))
		(start $start))`))
	if ran := mod.ExportedGlobal("ran").Get(); ran != 0 {
		t.Fatalf("the start function ran at instantiation")
	}
	start := mod.ExportedFunction(StartExport)
	if start == nil {
		t.Fatalf("no %s export", StartExport)
	}
	timer := time.AfterFunc(20*time.Millisecond, func() { g.Set(1) })
	defer timer.Stop()
	if _, err := start.Call(context.Background()); err == nil || !strings.Contains(err.Error(), "unreachable") {
		t.Fatalf("start returned %v, want the interrupt's trap", err)
	}
	if ran := mod.ExportedGlobal("ran").Get(); ran != 1 {
		t.Fatalf("the exported start function did not run")
	}
}

// TestInstrumentRefuses: what Instrument cannot or must not rewrite is
// refused with ErrMalformed and a message naming it.
func TestInstrumentRefuses(t *testing.T) {
	header := []byte("\x00asm\x01\x00\x00\x00")
	// A function that reads global 0 in a module without globals
	// (wat2wasm refuses to write it, so it is assembled here): type
	// section (one func type () -> ()), function section, code section.
	badGlobal := append(append([]byte{}, header...),
		1, 4, 1, 0x60, 0, 0,
		3, 2, 1, 0,
		10, 7, 1, 5, 0, 0x23, 0, 0x1a, 0x0b)
	unknownOp := append(append([]byte{}, header...),
		1, 4, 1, 0x60, 0, 0,
		3, 2, 1, 0,
		10, 5, 1, 3, 0, 0xff, 0x0b)
	for _, tc := range []struct {
		name string
		wasm []byte
		want string
	}{
		{"empty", nil, "magic"},
		{"text", []byte("(module)"), "magic"},
		{"a component", []byte("\x00asm\x0d\x00\x01\x00"), "version"},
		{"truncated section", append(append([]byte{}, header...), 1, 10, 1), "past the end"},
		{"unknown section", append(append([]byte{}, header...), 99, 0), "section id 99"},
		{"a global that does not exist", badGlobal, "global 0 does not exist"},
		{"an unknown opcode", unknownOp, "unknown opcode"},
		{"the reserved export", wasmtest.WAT(t, `(module (global $g (mut i32) (i32.const 0)) (export "quarry_interrupt" (global $g)))`), "reserves"},
		{"the reserved start export", wasmtest.WAT(t, `(module (func (export "quarry_start")))`), "reserves"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Instrument(tc.wasm, Limits{})
			if !errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Instrument = %v, want ErrMalformed naming %q", err, tc.want)
			}
		})
	}
}

// TestInstrumentDropsDebugInfo: DWARF sections, whose offsets would be
// wrong, are dropped; other custom sections stay.
func TestInstrumentDropsDebugInfo(t *testing.T) {
	custom := func(name, body string) []byte {
		b := []byte{0}
		payload := appendU32(nil, uint32(len(name)))
		payload = append(payload, name...)
		payload = append(payload, body...)
		b = appendU32(b, uint32(len(payload)))
		return append(b, payload...)
	}
	wasm := append([]byte("\x00asm\x01\x00\x00\x00"), custom(".debug_info", "xx")...)
	wasm = append(wasm, custom("producers", "yy")...)
	out, err := Instrument(wasm, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(out, []byte(".debug_info")) || !bytes.Contains(out, []byte("producers")) {
		t.Fatalf("debug section kept or other custom section dropped: %q", out)
	}
}

// FuzzInstrument: Instrument never panics, and a module it accepts that
// wazero compiles still compiles once instrumented. (Modules Instrument
// refuses are not given to wazero here: some of those, with vectors
// longer than their bytes, took the fuzzing worker down, in wazero.)
func FuzzInstrument(f *testing.F) {
	for _, wat := range []string{
		`(module)`,
		`(module (memory 1) (func (export "f") (param i32) (result i32) (local i64) (block (loop (br_if 1 (local.get 0)) (br 0))) (i32.load offset=4 (local.get 0))))`,
		`(module (global (mut i64) (i64.const -1)) (func (result i64) (global.get 0)) (export "x" (func 0)))`,
		`(module (table 2 funcref) (type $t (func)) (func $a) (func (call_indirect (type $t) (i32.const 0)) (br_table 0 0 (i32.const 1))) (elem (i32.const 0) $a))`,
		`(module (memory 1) (func (memory.fill (i32.const 0) (i32.const 0) (i32.const 8)) (memory.copy (i32.const 0) (i32.const 8) (i32.const 8)) (drop (i32.trunc_sat_f32_s (f32.const 1.5)))))`,
		`(module (func (result f64) (f64.const 2.5) (f64.const 1) (i32.const 0) (select)))`,
	} {
		f.Add(wasmtest.WAT(f, wat))
	}
	ctx := context.Background()
	var runs int
	f.Fuzz(func(t *testing.T, wasm []byte) {
		out, err := Instrument(wasm, Limits{})
		if err != nil {
			return
		}
		// wazero unmaps a closed module's machine code in a finalizer:
		// collect now and then, or the fuzzing worker runs out of
		// memory mappings after a few thousand modules.
		if runs++; runs%256 == 0 {
			runtime.GC()
		}
		rt := wazero.NewRuntime(ctx)
		defer rt.Close(ctx)
		cm, err := rt.CompileModule(ctx, wasm)
		if err != nil {
			return
		}
		cm.Close(ctx)
		cm, err = rt.CompileModule(ctx, out)
		if err != nil {
			t.Fatalf("the instrumented module does not compile: %v", err)
		}
		cm.Close(ctx)
	})
}
