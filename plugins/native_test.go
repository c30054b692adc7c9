package plugins

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/quarrysearch/quarry/sdk"
	"github.com/quarrysearch/quarry/sdk/abi"
)

// upper is a native rewriter whose configuration is a suffix it appends
// to the upper-cased text; "panic", "fail" and "slow" misbehave.
func upper(config []byte) (NativeHandler, error) {
	if string(config) == "bad" {
		return nil, errors.New("bad configuration")
	}
	suffix := string(config)
	h := &sdk.Hooks{Rewrite: func(r *sdk.RewriteRequest) error {
		switch r.Q {
		case "fail":
			return errors.New("no thanks")
		case "slow":
			time.Sleep(800 * time.Millisecond) // the misbehaviour under test: well past the budget
		}
		r.Q = strings.ToUpper(r.Q) + suffix
		return nil
	}}
	return h.HandleRewrite, nil
}

// TestNativeRewriter: the budget is generous (a 10 ms budget failed an
// ordinary call on a loaded CI machine under -race) and "slow" sleeps
// well past it.
func TestNativeRewriter(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name, q, want string
		kind          ErrorKind
	}{
		{"ok", "pad thai", "PAD THAI!", ""},
		{"plugin error", "fail", "", KindPlugin},
		{"over budget", "slow", "", KindTimeout},
		{"ok after", "x", "X!", ""},
	}
	p, err := LoadNative(Spec{Name: "upper", Kind: Rewriter, Config: []byte("!"), Budget: 250 * time.Millisecond, Instances: 2}, upper)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close(ctx)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			resp, err := p.Rewrite(ctx, &abi.RewriteRequest{Q: c.q})
			if c.kind != "" {
				var ce *CallError
				if !errors.As(err, &ce) || ce.Kind != c.kind {
					t.Fatalf("got %v, want a %s error", err, c.kind)
				}
				return
			}
			if err != nil || resp.Flags&abi.FlagQ == 0 || resp.Q != c.want {
				t.Fatalf("got %+v, %v; want %q", resp, err, c.want)
			}
		})
	}
	if n := p.Metrics.Calls.Load(); n != int64(len(cases)) {
		t.Errorf("%d calls counted, want %d", n, len(cases))
	}
}

// A native ranker's instances each keep their own sdk state: concurrent
// calls (under -race) get their own candidates back.
func TestNativeRankerConcurrent(t *testing.T) {
	ctx := context.Background()
	p, err := LoadNative(Spec{Name: "byrating", Kind: Ranker, Instances: 3}, func([]byte) (NativeHandler, error) {
		h := &sdk.Hooks{BatchRank: func(b *sdk.Batch) error {
			copy(b.Scores, b.Numbers("rating"))
			return nil
		}}
		return h.HandleRank, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close(ctx)
	var wg sync.WaitGroup
	for g := range 6 {
		wg.Go(func() {
			for i := range 50 {
				n := 2 + (g+i)%5
				req := &abi.RankRequest{Fields: []string{"rating"}}
				for j := range n {
					req.Candidates = append(req.Candidates, abi.Candidate{ID: string(rune('a' + j)), Score: 1,
						Values: []abi.Value{{Kind: abi.KindNumber, Num: float64(j)}}})
				}
				resp, err := p.Rank(ctx, req)
				if err != nil {
					t.Error(err)
					return
				}
				if len(resp.Ranked) != n || int(resp.Ranked[0].Index) != n-1 || resp.Ranked[0].Score != float64(n-1) {
					t.Errorf("%d candidates: ranked %+v", n, resp.Ranked)
					return
				}
			}
		})
	}
	wg.Wait()
}

func TestNativeFailures(t *testing.T) {
	ctx := context.Background()
	calls := 0
	panicky := func([]byte) (NativeHandler, error) {
		calls++
		return func(in, out []byte) []byte {
			if len(in) > 0 && strings.Contains(string(in), "boom") {
				panic("boom")
			}
			return append(out, abi.StatusOK, 0)
		}, nil
	}
	p, err := LoadNative(Spec{Name: "panicky", Kind: Rewriter, Instances: 1}, panicky)
	if err != nil {
		t.Fatal(err)
	}
	var ce *CallError
	if _, err := p.Rewrite(ctx, &abi.RewriteRequest{Q: "boom"}); !errors.As(err, &ce) || ce.Kind != KindTrap {
		t.Fatalf("a panic: %v, want a trap", err)
	}
	if calls != 2 {
		t.Errorf("factory called %d times, want 2 (a new handler after the panic)", calls)
	}
	if _, err := p.Rewrite(ctx, &abi.RewriteRequest{Q: "fine"}); err != nil {
		t.Fatalf("after the panic: %v", err)
	}

	for _, c := range []struct {
		name    string
		spec    Spec
		factory NativeFactory
		want    error
	}{
		{"bad kind", Spec{Name: "k", Kind: "filter"}, upper, nil},
		{"no factory", Spec{Name: "f", Kind: Rewriter}, nil, nil},
		{"factory fails", Spec{Name: "c", Kind: Rewriter, Config: []byte("bad")}, upper, ErrInit},
	} {
		_, err := LoadNative(c.spec, c.factory)
		if err == nil || (c.want != nil && !errors.Is(err, c.want)) || !strings.Contains(err.Error(), c.spec.Name) {
			t.Errorf("%s: %v", c.name, err)
		}
	}
}
