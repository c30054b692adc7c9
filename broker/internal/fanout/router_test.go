package fanout

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/quarrysearch/quarry/api"
	"github.com/quarrysearch/quarry/internal/natstest"
	"github.com/quarrysearch/quarry/internal/subject"
	"github.com/quarrysearch/quarry/internal/testwait"
	"github.com/quarrysearch/quarry/internal/wire"
	"github.com/quarrysearch/quarry/planner"
)

// fakeShard answers one shard's requests on its queue group with what
// answer returns (a *wire.ShardResponse, a *wire.GlobalStats or an
// error), each request in its own goroutine; it records the requests.
type fakeShard struct {
	mu   sync.Mutex
	reqs []wire.ShardRequest
	hdrs []nats.Header
}

func serveShard(t *testing.T, nc *nats.Conn, index string, sh int, answer func(n int, req *wire.ShardRequest) any) *fakeShard {
	t.Helper()
	f := &fakeShard{}
	_, err := nc.QueueSubscribe(subject.Shard(index, sh), "shard", func(msg *nats.Msg) {
		var req wire.ShardRequest
		if err := wire.Decode(msg, &req); err != nil {
			t.Errorf("shard %d: decode: %v", sh, err)
			return
		}
		f.mu.Lock()
		f.reqs = append(f.reqs, req)
		f.hdrs = append(f.hdrs, msg.Header)
		n := len(f.reqs)
		f.mu.Unlock()
		go func() {
			out := nats.NewMsg("")
			switch a := answer(n, &req).(type) {
			case error:
				out.Header.Set(subject.HeaderError, string(api.CodeOf(a)))
				out.Data = []byte(a.Error())
			case *wire.ShardResponse:
				if err := wire.EncodeShardResponse(out, a, 0); err != nil {
					t.Error(err)
				}
			default:
				if err := wire.Encode(out, a, 0); err != nil {
					t.Error(err)
				}
			}
			msg.RespondMsg(out)
		}()
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	return f
}

func (f *fakeShard) requests() []wire.ShardRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]wire.ShardRequest(nil), f.reqs...)
}

func withTimeout(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// TestSearchAsksEveryShard: a result per shard in the plan's order, the
// deadline and request id in each request's headers, and a shard that
// nothing serves reported unavailable.
func TestSearchAsksEveryShard(t *testing.T) {
	s := natstest.Start(t)
	shards := make([]*fakeShard, 2)
	for sh := range shards {
		shards[sh] = serveShard(t, s.NC, "menu", sh, func(int, *wire.ShardRequest) any {
			return &wire.ShardResponse{Total: uint64(sh + 1), Replica: "r"}
		})
	}
	rt := NewRouter(s.NC, 0, NewStatsCache(10))
	plan := &planner.Plan{Index: "menu", Shards: []int{1, 0, 2}, ShardTimeout: time.Second}
	sreq := &wire.ShardRequest{Query: []byte(`{"match":"soup"}`), K: 3}
	results, used := rt.Search(withTimeout(t, 5*time.Second), plan, sreq)
	if refreshed := used != sreq; refreshed || len(results) != 3 {
		t.Fatalf("%d results, refreshed %v", len(results), refreshed)
	}
	for i, want := range []uint64{2, 1} {
		var sr wire.ShardResponse
		if results[i].Err != nil || wire.DecodeShardResponse(results[i].Reply, &sr) != nil || sr.Total != want || results[i].Took <= 0 {
			t.Fatalf("result %d: %+v, total %d, want %d", i, results[i], sr.Total, want)
		}
	}
	if api.CodeOf(results[2].Err) != api.CodeUnavailable || results[2].Reply != nil {
		t.Fatalf("shard without a searcher: %+v", results[2])
	}
	for sh, f := range shards {
		reqs := f.requests()
		if len(reqs) != 1 || reqs[0].K != 3 || f.hdrs[0].Get(subject.HeaderDeadline) == "" {
			t.Fatalf("shard %d asked %+v, headers %v", sh, reqs, f.hdrs)
		}
	}
	if requests, hedges, won := rt.HedgeStats(); requests != 3 || hedges != 0 || won != 0 {
		t.Fatalf("hedge stats %d %d %d", requests, hedges, won)
	}
}

// TestSearchRefreshesStaleStats: a shard that finds the statistics stale
// makes the Router count them again, cache them and ask every shard once
// more, without the bound.
func TestSearchRefreshesStaleStats(t *testing.T) {
	s := natstest.Start(t)
	shards := make([]*fakeShard, 2)
	for sh := range shards {
		shards[sh] = serveShard(t, s.NC, "menu", sh, func(_ int, req *wire.ShardRequest) any {
			switch {
			case req.Phase == wire.PhaseStats:
				return &wire.GlobalStats{DocCount: 5, Generation: 2}
			case sh == 1 && req.MaxStaleUpdates > 0:
				return api.Errorf(wire.CodeStaleStats, "statistics miss 11 updates")
			}
			return &wire.ShardResponse{Total: 1}
		})
	}
	stats := NewStatsCache(10)
	q := []byte(`{"match":"soup"}`)
	old := &wire.GlobalStats{DocCount: 3, Generation: 1}
	stats.Put("menu", q, old)
	rt := NewRouter(s.NC, 0, stats)
	plan := &planner.Plan{Index: "menu", Query: q, Shards: []int{0, 1}, ShardTimeout: 2 * time.Second}
	sreq := &wire.ShardRequest{Query: q, Stats: old, MaxStaleUpdates: 10}
	results, used := rt.Search(withTimeout(t, 5*time.Second), plan, sreq)
	if used == sreq || used.Stats == nil || used.Stats.DocCount != 10 || used.MaxStaleUpdates != 0 {
		t.Fatalf("not refreshed: the shards answered %+v", used)
	}
	for i, r := range results {
		if r.Err != nil {
			t.Fatalf("shard %d: %v", i, r.Err)
		}
	}
	if got := stats.Get("menu", q); got == nil || got.DocCount != 10 {
		t.Fatalf("cached after the refresh: %+v", got)
	}
	for sh, f := range shards {
		reqs := f.requests()
		if len(reqs) != 3 || reqs[1].Phase != wire.PhaseStats {
			t.Fatalf("shard %d asked %d times: %+v", sh, len(reqs), reqs)
		}
		if last := reqs[2]; last.MaxStaleUpdates != 0 || last.Stats == nil || last.Stats.DocCount != 10 {
			t.Fatalf("shard %d asked again with %+v", sh, last)
		}
	}
}

// TestCountStats: the shards' statistics summed and cached; none (and no
// error) when a shard does not answer; the shard's error when it refuses
// the query itself.
func TestCountStats(t *testing.T) {
	s := natstest.Start(t)
	for sh := range 2 {
		serveShard(t, s.NC, "menu", sh, func(int, *wire.ShardRequest) any {
			return &wire.GlobalStats{DocCount: uint64(sh + 1), Generation: 4}
		})
	}
	serveShard(t, s.NC, "bad", 0, func(int, *wire.ShardRequest) any { return api.BadRequest("bad query: x") })
	stats := NewStatsCache(10)
	rt := NewRouter(s.NC, 0, stats)
	ctx := withTimeout(t, 5*time.Second)
	q := []byte(`{"match":"soup"}`)
	st, err := rt.CountStats(ctx, &planner.Plan{Index: "menu", Query: q, Shards: []int{0, 1}})
	if err != nil || st == nil || st.DocCount != 3 || stats.Get("menu", q) != st {
		t.Fatalf("two shards: %+v, %v", st, err)
	}
	if st, err := rt.CountStats(ctx, &planner.Plan{Index: "menu", Query: []byte("other"), Shards: []int{0, 1, 2}}); st != nil || err != nil {
		t.Fatalf("a shard missing: %+v, %v; want none and no error", st, err)
	}
	if _, err := rt.CountStats(ctx, &planner.Plan{Index: "bad", Query: q, Shards: []int{0}}); !IsClientError(err) {
		t.Fatalf("a refused query: %v", err)
	}
}

// TestHedgeWins: a shard slower than the hedge delay is asked again, and
// the hedge's answer is the one used.
func TestHedgeWins(t *testing.T) {
	s := natstest.Start(t)
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	serveShard(t, s.NC, "menu", 0, func(n int, _ *wire.ShardRequest) any {
		if n == 1 {
			<-release // the first request is stuck
		}
		return &wire.ShardResponse{Total: uint64(n)}
	})
	rt := NewRouter(s.NC, 0, NewStatsCache(10))
	plan := &planner.Plan{Index: "menu", Shards: []int{0}, ShardTimeout: time.Second,
		Hedge: planner.Hedge{Enabled: true, Quantile: 0.95, MinDelay: time.Millisecond, InitialDelay: 20 * time.Millisecond, MaxFraction: 0.05}}
	results, _ := rt.Search(withTimeout(t, 5*time.Second), plan, &wire.ShardRequest{Query: []byte(`{"match":"soup"}`)})
	r := results[0]
	var sr wire.ShardResponse
	if r.Err != nil || !r.Hedged || !r.HedgeWon || wire.DecodeShardResponse(r.Reply, &sr) != nil || sr.Total != 2 {
		t.Fatalf("result %+v, total %d", r, sr.Total)
	}
	if requests, hedges, won := rt.HedgeStats(); requests != 1 || hedges != 1 || won != 1 {
		t.Fatalf("hedge stats %d %d %d", requests, hedges, won)
	}
}

// A shard that one searcher serves (its discovery found one replica) is
// not hedged: the hedge would go to the searcher that is slow already and
// double its work.
func TestNoHedgeToTheSoleReplica(t *testing.T) {
	s := natstest.Start(t)
	if _, err := s.NC.Subscribe(subject.Replicas("menu", 0), func(m *nats.Msg) { m.Respond([]byte("only")) }); err != nil {
		t.Fatal(err)
	}
	f := serveShard(t, s.NC, "menu", 0, func(n int, _ *wire.ShardRequest) any {
		if n > 1 {
			time.Sleep(100 * time.Millisecond) // the slow replica under test: slower than the hedge delay
		}
		return &wire.ShardResponse{Total: 1}
	})
	rt := NewRouter(s.NC, 0, NewStatsCache(10))
	plan := &planner.Plan{Index: "menu", Shards: []int{0}, ShardTimeout: time.Second,
		Hedge: planner.Hedge{Enabled: true, Quantile: 0.95, MinDelay: time.Millisecond, InitialDelay: 20 * time.Millisecond, MaxFraction: 0.05}}
	req := &wire.ShardRequest{Query: []byte(`{"match":"soup"}`)}
	if results, _ := rt.Search(withTimeout(t, 5*time.Second), plan, req); results[0].Err != nil {
		t.Fatal(results[0].Err) // starts the discovery
	}
	st := rt.shards.get("menu", 0)
	testwait.Until(t, 5*time.Second, "the discovery over, one replica found", st.soleReplica)
	results, _ := rt.Search(withTimeout(t, 5*time.Second), plan, req)
	if r := results[0]; r.Err != nil || r.Hedged {
		t.Fatalf("the slow search of a shard with one replica: %+v", r)
	}
	if _, hedges, _ := rt.HedgeStats(); hedges != 0 || len(f.requests()) != 2 {
		t.Fatalf("%d hedges, %d requests for 2 searches", hedges, len(f.requests()))
	}
}

// TestReplyError: transport failures and error replies as api errors.
func TestReplyError(t *testing.T) {
	errReply := nats.NewMsg("")
	errReply.Header.Set(subject.HeaderError, string(api.CodeQueryTooComplex))
	errReply.Data = []byte("too many terms")
	cases := []struct {
		reply *nats.Msg
		err   error
		code  api.Code
	}{
		{nil, nats.ErrNoResponders, api.CodeUnavailable},
		{nil, context.DeadlineExceeded, api.CodeTimeout},
		{nil, nats.ErrTimeout, api.CodeTimeout},
		{nil, context.Canceled, api.CodeTimeout},
		{nil, nats.ErrConnectionClosed, api.CodeUnavailable},
		{errReply, nil, api.CodeQueryTooComplex},
	}
	for _, c := range cases {
		if got := replyError(c.reply, c.err); api.CodeOf(got) != c.code {
			t.Errorf("%v: %v (%s), want %s", c.err, got, api.CodeOf(got), c.code)
		}
	}
	if err := replyError(nats.NewMsg(""), nil); err != nil {
		t.Fatalf("a good reply: %v", err)
	}
}
