package plugins

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/tetratelabs/wazero"
	wapi "github.com/tetratelabs/wazero/api"

	"github.com/quarrysearch/quarry/internal/wasmtest"
	"github.com/quarrysearch/quarry/sdk/abi"
)

// The C and AssemblyScript SDKs' own tests: each has a test module
// (sdk/c/test/sdk_test.c, sdk/assemblyscript/tests/sdk_test.ts) with the
// same exports, built with the language's compiler, called with wazero
// directly (its reader, through an echo export) and through the host (its
// hooks and writers). A missing compiler fails the tests.

func cSDKModule(t *testing.T) []byte { return wasmtest.C(t, "../sdk/c/test/sdk_test.c") }

func asSDKModule(t *testing.T) []byte {
	return wasmtest.AssemblyScript(t, "../sdk/assemblyscript", "tests/sdk_test.ts", "--config", "tests/asconfig.json")
}

func TestCSDKReader(t *testing.T)  { testSDKReader(t, cSDKModule(t)) }
func TestCSDKHooks(t *testing.T)   { testSDKHooks(t, cSDKModule(t)) }
func TestASSDKReader(t *testing.T) { testSDKReader(t, asSDKModule(t)) }
func TestASSDKHooks(t *testing.T)  { testSDKHooks(t, asSDKModule(t)) }

// sdkEcho is a test module instantiated on a bare wazero runtime, with
// the ABI's two imports.
type sdkEcho struct {
	mod   wapi.Module
	alloc wapi.Function
	echo  wapi.Function
	rank  wapi.Function
}

func newSDKEcho(t *testing.T, wasm []byte) *sdkEcho {
	t.Helper()
	ctx := context.Background()
	rt := wazero.NewRuntime(ctx)
	t.Cleanup(func() { rt.Close(ctx) })
	_, err := rt.NewHostModuleBuilder(abi.ImportModule).
		NewFunctionBuilder().WithFunc(func(context.Context, wapi.Module, uint32, uint32, uint32) {}).Export(abi.ImportLog).
		NewFunctionBuilder().WithFunc(func(context.Context, wapi.Module, uint32, uint32) uint32 { return 0 }).Export(abi.ImportConfig).
		Instantiate(ctx)
	if err != nil {
		t.Fatal(err)
	}
	mod, err := rt.Instantiate(ctx, wasm)
	if err != nil {
		t.Fatal(err)
	}
	return &sdkEcho{mod: mod, alloc: mod.ExportedFunction("quarry_alloc"), echo: mod.ExportedFunction("echo_rank"), rank: mod.ExportedFunction("quarry_rank")}
}

// call writes req where quarry_alloc says and calls fn on it: the
// response's status byte and body.
func (e *sdkEcho) call(t *testing.T, fn wapi.Function, req []byte) (byte, []byte) {
	t.Helper()
	ctx := context.Background()
	r, err := e.alloc.Call(ctx, uint64(max(len(req), 1)))
	if err != nil {
		t.Fatal(err)
	}
	ptr := uint32(r[0])
	if ptr%8 != 0 {
		t.Fatalf("quarry_alloc returned %d: not 8-aligned", ptr)
	}
	if !e.mod.Memory().Write(ptr, req) {
		t.Fatalf("request of %d bytes at %d: outside memory", len(req), ptr)
	}
	res, err := fn.Call(ctx, uint64(ptr), uint64(len(req)))
	if err != nil {
		t.Fatalf("call on %d bytes: %v", len(req), err)
	}
	out, ok := e.mod.Memory().Read(uint32(res[0]>>32), uint32(res[0]))
	if !ok || len(out) == 0 {
		t.Fatalf("response %#x outside memory or empty", res[0])
	}
	return out[0], append([]byte(nil), out[1:]...)
}

// randomRankRequest makes a request with every kind of value and column.
func randomRankRequest(rng *rand.Rand, n int) *abi.RankRequest {
	var value func(depth int) abi.Value
	value = func(depth int) abi.Value {
		switch k := rng.IntN(5); {
		case k == 1:
			return abi.Value{Kind: abi.KindNumber, Num: rng.NormFloat64() * 100}
		case k == 2:
			return abi.Value{Kind: abi.KindString, Str: strings.Repeat("é", rng.IntN(4))}
		case k == 3:
			return abi.Value{Kind: abi.KindBool, Bool: rng.IntN(2) == 1}
		case k == 4 && depth < 3:
			l := make([]abi.Value, rng.IntN(4))
			for i := range l {
				l[i] = value(depth + 1)
			}
			return abi.Value{Kind: abi.KindList, List: l}
		}
		return abi.Value{}
	}
	req := &abi.RankRequest{Q: strings.Repeat("q", rng.IntN(9)), Fields: []string{"nums", "mixed", "missing", "sparse"}}
	if rng.IntN(2) == 0 {
		req.Context = []byte(`{"user":"u1"}`)
	}
	for i := range n {
		c := abi.Candidate{ID: strings.Repeat("d", rng.IntN(9)) + fmt.Sprint(i), Score: rng.Float64() * 10, Values: []abi.Value{
			{Kind: abi.KindNumber, Num: float64(i) + 0.5}, value(0), {}, {}}}
		if i%3 == 0 {
			c.Values[3] = abi.Value{Kind: abi.KindNumber, Num: -float64(i)}
		}
		req.Candidates = append(req.Candidates, c)
	}
	return req
}

// testSDKReader: every request decoded by the SDK and encoded again from
// what its accessors read is the request (numbers columns read in place,
// values columns, lists, ids, scores); a request cut short anywhere, or
// with a byte too many, is status 1, never a trap.
func testSDKReader(t *testing.T, wasm []byte) {
	e := newSDKEcho(t, wasm)
	rng := rand.New(rand.NewPCG(3, 5))
	reqs := []*abi.RankRequest{docRankRequest(), {Q: "none"}, randomRankRequest(rng, 0)}
	for n := range 40 {
		reqs = append(reqs, randomRankRequest(rng, n))
	}
	reqs = append(reqs, randomRankRequest(rng, 1000))
	for k, req := range reqs {
		enc := abi.AppendRankRequest(nil, req)
		var want abi.RankRequest
		if err := abi.DecodeRankRequest(enc, &want); err != nil {
			t.Fatal(err)
		}
		status, body := e.call(t, e.echo, enc)
		if status != abi.StatusOK {
			t.Fatalf("request %d (%d candidates): status %d: %s", k, len(req.Candidates), status, body)
		}
		var got abi.RankRequest
		if err := abi.DecodeRankRequest(body, &got); err != nil {
			t.Fatalf("request %d: the echo does not decode: %v", k, err)
		}
		if !reflect.DeepEqual(&got, &want) {
			t.Fatalf("request %d (%d candidates): the C SDK read\n%+v\nwant\n%+v", k, len(req.Candidates), got, want)
		}
	}
	enc := abi.AppendRankRequest(nil, randomRankRequest(rng, 12))
	for cut := range len(enc) {
		if status, body := e.call(t, e.echo, enc[:cut]); status != abi.StatusError || !strings.Contains(string(body), "malformed") {
			t.Fatalf("request cut at byte %d of %d: status %d %q, want a malformed request error", cut, len(enc), status, body)
		}
		if status, _ := e.call(t, e.rank, enc[:cut]); status != abi.StatusError {
			t.Fatalf("quarry_rank on a request cut at byte %d of %d: status %d, want 1", cut, len(enc), status)
		}
	}
	if status, _ := e.call(t, e.echo, append(enc, 0)); status != abi.StatusError {
		t.Fatalf("a byte after the request: status %d, want 1", status)
	}
	// A list nested deeper than 4 is malformed.
	deep := abi.Value{Kind: abi.KindNumber, Num: 1}
	for range 5 {
		deep = abi.Value{Kind: abi.KindList, List: []abi.Value{deep}}
	}
	deepReq := abi.AppendRankRequest(nil, &abi.RankRequest{Fields: []string{"x"}, Candidates: []abi.Candidate{{ID: "a", Values: []abi.Value{deep}}}})
	if status, _ := e.call(t, e.echo, deepReq); status != abi.StatusError {
		t.Fatalf("a list nested 5 deep: status %d, want 1", status)
	}
}

// testSDKHooks: the hooks and writers, through the host (whose decoder
// refuses any response that breaks a rule of the ABI).
func testSDKHooks(t *testing.T, wasm []byte) {
	ctx := context.Background()
	load := func(kind Kind, config string) *Plugin {
		p, err := testRuntime(t).Load(ctx, Spec{Name: "csdk", Kind: kind, Config: []byte(config), Instances: 1, Budget: time.Second}, wasm)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}

	rw := load(Rewriter, "")
	resp, err := rw.Rewrite(ctx, &abi.RewriteRequest{Q: "pad thai", Query: []byte(`{"match":"x"}`), Filter: []byte(`{"term":"y"}`), Size: 7, From: 3})
	if err != nil {
		t.Fatal(err)
	}
	want := &abi.RewriteResponse{Flags: abi.FlagQ | abi.FlagQuery | abi.FlagFilter | abi.FlagRerankDepth, Q: "pad thai!",
		Query: []byte(`{"term":"y"}`), Filter: []byte(`{"match":"x"}`), RerankDepth: 703}
	if !reflect.DeepEqual(resp, want) {
		t.Fatalf("rewrite: %+v, want %+v", resp, want)
	}
	if resp, err := rw.Rewrite(ctx, &abi.RewriteRequest{Q: "same"}); err != nil || resp.Flags != 0 {
		t.Fatalf("rewrite changing nothing: %+v %v", resp, err)
	}
	// A big request: quarry_alloc again, memory grows, the arena moves.
	big := strings.Repeat("x", 300_000)
	if resp, err := rw.Rewrite(ctx, &abi.RewriteRequest{Q: big}); err != nil || resp.Q != big+"!" {
		t.Fatalf("rewrite of 300 KB: %d bytes, %v", len(resp.Q), err)
	}

	rk := load(Ranker, `{"w": 2.5}`)
	req := &abi.RankRequest{Fields: []string{"x"}}
	for i := range 9 {
		v := abi.Value{Kind: abi.KindNumber, Num: float64(i * i)}
		if i == 4 {
			v = abi.Value{Kind: abi.KindList, List: []abi.Value{{Kind: abi.KindNumber, Num: 100}, {Kind: abi.KindString, Str: "s"}}}
		}
		req.Candidates = append(req.Candidates, abi.Candidate{ID: strings.Repeat("i", i), Score: float64(10 - i), Values: []abi.Value{v}})
	}
	rank := func(q string) []abi.Ranked {
		t.Helper()
		r := *req
		r.Q = q
		resp, err := rk.Rank(ctx, &r)
		if err != nil {
			t.Fatalf("rank %q: %v", q, err)
		}
		return resp.Ranked
	}
	entries := func(pairs ...float64) []abi.Ranked {
		var out []abi.Ranked
		for i := 0; i < len(pairs); i += 2 {
			out = append(out, abi.Ranked{Index: uint32(pairs[i]), Score: pairs[i+1]})
		}
		return out
	}
	if got, want := rank("reverse"), entries(8, 2, 7, 3, 6, 4, 5, 5, 4, 6, 3, 7, 2, 8, 1, 9, 0, 10); !reflect.DeepEqual(got, want) {
		t.Fatalf("reverse: %v, want %v", got, want)
	}
	if got, want := rank("drop-odd"), entries(0, 20, 2, 16, 4, 12, 6, 8, 8, 4); !reflect.DeepEqual(got, want) {
		t.Fatalf("drop-odd: %v, want %v", got, want)
	}
	if got, want := rank("id-length"), entries(8, 8, 7, 7, 6, 6, 5, 5, 4, 4, 3, 3, 2, 2, 1, 1, 0, 0); !reflect.DeepEqual(got, want) {
		t.Fatalf("id-length: %v, want %v", got, want)
	}
	if got, want := rank("config"), entries(0, 12.5, 1, 11.5, 2, 10.5, 3, 9.5, 4, 8.5, 5, 7.5, 6, 6.5, 7, 5.5, 8, 4.5); !reflect.DeepEqual(got, want) {
		t.Fatalf("config: %v, want %v", got, want)
	}
	// A values column (a list among numbers): the list's first number.
	if got, want := rank("field"), entries(4, 100, 8, 64, 7, 49, 6, 36, 5, 25, 3, 9, 2, 4, 1, 1, 0, 0); !reflect.DeepEqual(got, want) {
		t.Fatalf("field: %v, want %v", got, want)
	}
	var ce *CallError
	for q, msg := range map[string]string{"nan": "not finite", "error": "failing on purpose"} {
		r := *req
		r.Q = q
		if _, err := rk.Rank(ctx, &r); !errors.As(err, &ce) || ce.Kind != KindPlugin || !strings.Contains(err.Error(), msg) {
			t.Fatalf("rank %q: %v, want a plugin error %q", q, err, msg)
		}
	}
	// The instance is kept after status 1 and still answers.
	if got := rank("id-length"); len(got) != 9 {
		t.Fatalf("after errors: %v", got)
	}
}
