package broker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/quarrysearch/quarry/api"
	"github.com/quarrysearch/quarry/broker/internal/pipeline"
	"github.com/quarrysearch/quarry/internal/testwait"
	"github.com/quarrysearch/quarry/planner"
	"github.com/quarrysearch/quarry/plugins"
	"github.com/quarrysearch/quarry/sdk/abi"
)

// shadowsIdle waits for every running shadow call to end.
func shadowsIdle(t *testing.T, sh *pipeline.Shadows) {
	t.Helper()
	testwait.Until(t, 30*time.Second, "every shadow call ended", func() bool { return sh.Running() == 0 })
}

// order answers a rank request with the candidates at idx, scored down.
func order(idx ...uint32) func(*abi.RankRequest) []byte {
	return func(*abi.RankRequest) []byte {
		es := make([]abi.Ranked, len(idx))
		for i, x := range idx {
			es[i] = abi.Ranked{Index: x, Score: float64(len(idx) - i)}
		}
		return rankAnswer(0, es...)
	}
}

// seq is 0..n-1, reversed if rev.
func seq(n int, rev bool) []uint32 {
	out := make([]uint32, n)
	for i := range out {
		out[i] = uint32(i)
		if rev {
			out[i] = uint32(n - 1 - i)
		}
	}
	return out
}

// A ranker's shadow gets the live ranker's request; its order is compared
// with the live one's: overlap of the first 10, Spearman's rho over the
// candidates both placed; an error on either side is counted, not
// compared.
func TestMirrorRanker(t *testing.T) {
	cases := []struct {
		name        string
		n           int
		live        []uint32
		liveErr     error
		shadow      func(*abi.RankRequest) []byte
		wantCompare bool
		overlap     float64
		rho         float64
		wantErrs    [2]int64 // live, shadow
	}{
		{"same order", 5, seq(5, false), nil, order(seq(5, false)...), true, 1, 1, [2]int64{}},
		{"reversed", 5, seq(5, false), nil, order(seq(5, true)...), true, 1, -1, [2]int64{}},
		// Top 10 of 12: the reverse shares 8 of them.
		{"reversed past the top", 12, seq(12, false), nil, order(seq(12, true)...), true, 0.8, -1, [2]int64{}},
		{"shadow drops half", 4, seq(4, false), nil, order(0, 1), true, 0.5, 1, [2]int64{}},
		{"shadow refused (NaN)", 3, seq(3, false), nil, func(*abi.RankRequest) []byte { return rankAnswer(0, abi.Ranked{Score: math.NaN()}) },
			false, 0, 0, [2]int64{0, 1}},
		{"live failed", 3, nil, errors.New("live failed"), order(0), false, 0, 0, [2]int64{1, 0}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b := testBroker(t)
			rec := &recorder{}
			s := &Step{Plugin: nativeRanker(t, "live", nil, order()), Shadow: &Step{Plugin: nativeRanker(t, "shadow", rec, c.shadow)}, ShadowPercent: 100}
			var hits []api.Hit
			for i := range c.n {
				hits = append(hits, api.Hit{ID: fmt.Sprint("d", i), Score: float64(i), Fields: map[string]any{"price": float64(i)}})
			}
			in := rankInput("thai", hits, []string{"price"})
			var live *abi.RankResponse
			if c.liveErr == nil {
				live = &abi.RankResponse{}
				for i, x := range c.live {
					live.Ranked = append(live.Ranked, abi.Ranked{Index: x, Score: float64(-i)})
				}
			}
			b.mirror("idx", s, in, live, c.liveErr, 7*time.Millisecond)
			shadowsIdle(t, b.shadows)
			got := b.shadows.Tally("idx.live")
			if got.Calls != 1 || got.LiveNS != int64(7*time.Millisecond) || got.ShadowNS <= 0 ||
				got.LiveErrors != c.wantErrs[0] || got.ShadowErrors != c.wantErrs[1] {
				t.Fatalf("tally %+v", got)
			}
			if !c.wantCompare {
				if got.Queries != 0 || got.OverlapSum != 0 || got.RhoSum != 0 {
					t.Fatalf("compared with an error: %+v", got)
				}
				return
			}
			if got.Queries != 1 || math.Abs(got.OverlapSum-c.overlap) > 1e-9 || math.Abs(got.RhoSum-c.rho) > 1e-9 {
				t.Fatalf("tally %+v, want overlap %v rho %v", got, c.overlap, c.rho)
			}
			sent := rec.lastRank(t)
			if sent.Q != "thai" || len(sent.Candidates) != c.n || sent.Candidates[c.n-1].ID != fmt.Sprint("d", c.n-1) || sent.Candidates[1].Values[0].Num != 1 {
				t.Fatalf("the shadow got %+v", sent)
			}
		})
	}
}

// rankInput is the rank request for hits, as the rank stage makes it.
func rankInput(q string, hits []api.Hit, fields []string) *abi.RankRequest {
	return plugins.RankInput(q, nil, hits, fields)
}

// The shadow runs on the share of the queries ShadowPercent says, and not
// at all without a shadow.
func TestMirrorSampling(t *testing.T) {
	const n = 600
	cases := []struct {
		percent  int
		noShadow bool
		min, max int64
	}{
		{0, false, 0, 0},
		{100, false, n, n},
		{30, false, n * 20 / 100, n * 40 / 100}, // 180 expected; far tails
		{100, true, 0, 0},
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("%d%% shadow %v", c.percent, !c.noShadow), func(t *testing.T) {
			b := testBroker(t)
			s := &Step{Plugin: nativeRanker(t, "live", nil, order()), ShadowPercent: c.percent}
			if !c.noShadow {
				s.Shadow = &Step{Plugin: nativeRanker(t, "shadow", nil, order(0))}
			}
			in := rankInput("q", []api.Hit{{ID: "a"}}, nil)
			live := &abi.RankResponse{Ranked: []abi.Ranked{{Index: 0, Score: 1}}}
			for range n {
				b.mirror("idx", s, in, live, nil, time.Millisecond)
				shadowsIdle(t, b.shadows) // never dropped for being busy
			}
			got := b.shadows.Tally("idx.live").Calls
			if got < c.min || got > c.max {
				t.Fatalf("%d of %d queries mirrored, want %d to %d", got, n, c.min, c.max)
			}
		})
	}
}

// At most pipeline.MaxShadowCalls shadow calls run at once; more are
// dropped, not queued, and each call is bounded by pipeline.ShadowTimeout.
func TestShadowCallsCapped(t *testing.T) {
	sh := pipeline.NewShadows()
	release := make(chan struct{})
	started := make(chan time.Duration, pipeline.MaxShadowCalls)
	for i := range pipeline.MaxShadowCalls {
		if !sh.Run(func(ctx context.Context) {
			d, ok := ctx.Deadline()
			if !ok {
				d = time.Now().Add(time.Hour)
			}
			started <- time.Until(d)
			<-release
		}) {
			t.Fatalf("call %d of %d refused", i+1, pipeline.MaxShadowCalls)
		}
	}
	for range pipeline.MaxShadowCalls {
		if left := <-started; left > pipeline.ShadowTimeout || left <= 0 {
			t.Fatalf("a shadow call has %v left, want at most %v", left, pipeline.ShadowTimeout)
		}
	}
	ran := make(chan struct{}, 1)
	if sh.Run(func(context.Context) { ran <- struct{}{} }) {
		t.Fatalf("call %d accepted", pipeline.MaxShadowCalls+1)
	}

	// A ranker's mirror is dropped too while the broker is busy.
	b := testBroker(t)
	b.shadows = sh
	s := &Step{Plugin: nativeRanker(t, "live", nil, order()), Shadow: &Step{Plugin: nativeRanker(t, "shadow", nil, order(0))}, ShadowPercent: 100}
	b.mirror("idx", s, rankInput("q", []api.Hit{{ID: "a"}}, nil), &abi.RankResponse{}, nil, time.Millisecond)

	close(release)
	shadowsIdle(t, sh)
	select {
	case <-ran:
		t.Fatal("a dropped call ran")
	default:
	}
	if got := sh.Tally("idx.live"); got.Calls != 0 {
		t.Fatalf("a dropped mirror was tallied: %+v", got)
	}
	if !sh.Run(func(ctx context.Context) { ran <- struct{}{} }) {
		t.Fatal("refused once the others ended")
	}
	<-ran
}

// A rewriter's shadow: the live rewriter keeps the request as it got it
// for the queries it samples; the shadow rewrites that request, and an
// answer it cannot apply counts as a shadow error. (The shadow search that
// follows when both succeed needs shards: not here.)
func TestMirrorRewriter(t *testing.T) {
	shadowRec := &recorder{}
	live := nativeRewriter(t, "live", nil, func(*abi.RewriteRequest) []byte {
		return rewriteAnswer(abi.RewriteResponse{Flags: abi.FlagQ, Q: "changed by live"})
	})
	good := nativeRewriter(t, "good", shadowRec, func(*abi.RewriteRequest) []byte {
		return rewriteAnswer(abi.RewriteResponse{Flags: abi.FlagQ, Q: "changed by shadow"})
	})
	bad := nativeRewriter(t, "bad", nil, func(*abi.RewriteRequest) []byte {
		return rewriteAnswer(abi.RewriteResponse{Flags: abi.FlagQuery, Query: []byte("{")})
	})
	first := nativeRewriter(t, "first", nil, func(*abi.RewriteRequest) []byte {
		return rewriteAnswer(abi.RewriteResponse{Flags: abi.FlagQ | abi.FlagRerankDepth, Q: "by first", RerankDepth: 30})
	})
	b := testBroker(t)
	pl := &Pipeline{Rewriters: []Step{{Plugin: first}, {Plugin: live, Shadow: &Step{Plugin: good}, ShadowPercent: 100}}}
	r := &run{b: b, req: api.SearchRequest{Q: "original", Context: json.RawMessage(`{"u":1}`), Size: 5}, hints: &planner.Hints{}, mirroring: true}
	if err := r.rewrite(context.Background(), "idx", pl.Rewriters); err != nil {
		t.Fatal(err)
	}
	if len(r.mirrors) != 1 || r.mirrors[0].at != 1 || r.mirrors[0].req.Q != "by first" || r.mirrors[0].hints.RerankDepth != 30 || r.mirrors[0].err != nil {
		t.Fatalf("mirrors %+v", r.mirrors)
	}
	if r.req.Q != "changed by live" {
		t.Fatalf("the live request: %+v", r.req)
	}

	// Not sampled: no mirror; not mirroring (a shadow search): none.
	pl.Rewriters[1].ShadowPercent = 0
	r2 := &run{b: b, req: api.SearchRequest{Q: "original"}, hints: &planner.Hints{}, mirroring: true}
	if err := r2.rewrite(context.Background(), "idx", pl.Rewriters); err != nil || len(r2.mirrors) != 0 {
		t.Fatalf("0%%: %v, mirrors %+v", err, r2.mirrors)
	}
	pl.Rewriters[1].ShadowPercent = 100
	r3 := &run{b: b, req: api.SearchRequest{Q: "original"}, hints: &planner.Hints{}}
	if err := r3.rewrite(context.Background(), "idx", pl.Rewriters); err != nil || len(r3.mirrors) != 0 {
		t.Fatalf("not mirroring: %v, mirrors %+v", err, r3.mirrors)
	}

	// The live query failed: the shadow is called and timed, not compared.
	b.shadowRewrite(context.Background(), "idx", api.IndexDefinition{}, pl, r.mirrors[0], nil, false)
	if got := shadowRec.lastRewrite(t); got.Q != "by first" || string(got.Context) != `{"u":1}` || got.Size != 5 {
		t.Fatalf("the shadow got %+v", got)
	}
	if got := b.shadows.Tally("idx.live"); got.Calls != 1 || got.ShadowErrors != 0 || got.Queries != 0 || got.LiveNS != r.mirrors[0].took.Nanoseconds() {
		t.Fatalf("tally %+v", got)
	}
	// A shadow answer that cannot be applied is a shadow error.
	pl.Rewriters[1].Shadow = &Step{Plugin: bad}
	b.shadowRewrite(context.Background(), "idx", api.IndexDefinition{}, pl, r.mirrors[0], []string{"a"}, true)
	if got := b.shadows.Tally("idx.live"); got.Calls != 2 || got.ShadowErrors != 1 || got.Queries != 0 {
		t.Fatalf("tally %+v", got)
	}
}

// The tallies are published under <index>.<plugin>.<broker id>, each time
// they changed, and not rewritten while they did not.
func TestPublishShadows(t *testing.T) {
	s, store, ctx := startStore(t)
	b, err := New(s.NC, store, Config{Logger: quietLog()})
	if err != nil {
		t.Fatal(err)
	}
	b.shadows.Add("menu.ltr", pipeline.ShadowResult{LiveTook: 5, ShadowTook: 7, Compared: true, Overlap: 0.9, Rho: 0.5})
	b.shadows.Add("menu.syn", pipeline.ShadowResult{LiveTook: 1, ShadowTook: 2, ShadowErr: true})

	pctx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); b.publishShadows(pctx, 5*time.Millisecond) }()
	defer func() { stop(); <-done }()

	key := "menu.ltr." + b.id
	get := func(t *testing.T, key string, after uint64) (api.ShadowTally, uint64) {
		t.Helper()
		var tally api.ShadowTally
		var rev uint64
		testwait.Until(t, 30*time.Second, fmt.Sprintf("%s published after revision %d", key, after), func() bool {
			e, err := store.Shadow.Get(ctx, key)
			if err != nil && !errors.Is(err, jetstream.ErrKeyNotFound) {
				t.Fatal(err)
			}
			if err != nil || e.Revision() <= after {
				return false
			}
			if err := json.Unmarshal(e.Value(), &tally); err != nil {
				t.Fatal(err)
			}
			rev = e.Revision()
			return true
		})
		return tally, rev
	}
	got, rev := get(t, key, 0)
	if want := (api.ShadowTally{Calls: 1, Queries: 1, LiveNS: 5, ShadowNS: 7, OverlapSum: 0.9, RhoSum: 0.5}); got != want {
		t.Fatalf("published %+v, want %+v", got, want)
	}
	if got, _ := get(t, "menu.syn."+b.id, 0); got != (api.ShadowTally{Calls: 1, LiveNS: 1, ShadowNS: 2, ShadowErrors: 1}) {
		t.Fatalf("menu.syn published %+v", got)
	}

	// The exposure time: 20 intervals with nothing new. A round that
	// publishes nothing leaves no trace, and a marker would be a change
	// (any change republishes every tally).
	time.Sleep(100 * time.Millisecond)
	if e, err := store.Shadow.Get(ctx, key); err != nil {
		t.Fatal(err)
	} else if e.Revision() != rev {
		t.Fatalf("republished unchanged tallies: revision %d, was %d", e.Revision(), rev)
	}

	b.shadows.Add("menu.ltr", pipeline.ShadowResult{LiveTook: 1, ShadowTook: 1, LiveErr: true})
	got, _ = get(t, key, rev)
	if got.Calls != 2 || got.LiveErrors != 1 || got.Queries != 1 {
		t.Fatalf("after one more: %+v", got)
	}
}
