package fanout

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	oteltrace "go.opentelemetry.io/otel/trace"

	"github.com/quarrysearch/quarry/api"
	"github.com/quarrysearch/quarry/internal/requestid"
	"github.com/quarrysearch/quarry/internal/subject"
	"github.com/quarrysearch/quarry/internal/trace"
	"github.com/quarrysearch/quarry/internal/tracenats"
	"github.com/quarrysearch/quarry/internal/wire"
	"github.com/quarrysearch/quarry/planner"
)

// Router asks the shards of an index over NATS: it chooses the replica
// of each shard a request goes to, hedges a slow one (within a budget),
// and runs the statistics and search phases of a plan. What it learns
// of shards and replicas (latencies, replicas seen, requests
// outstanding) and its hedge counts live as long as it does: one per
// broker. It is safe for concurrent use.
type Router struct {
	nc       *nats.Conn
	compress int
	stats    *StatsCache
	shards   shardStates
	hedge    hedgeBudget
	// local is a searcher in this process, asked directly (SetLocal);
	// localServed counts the requests it answered.
	local       atomic.Pointer[localSearcher]
	localServed atomic.Int64
}

// Local is a searcher in the broker's own process: the Router asks it
// directly, through its queue, instead of through the NATS server.
// ServeLocal answers a shard request as the searcher would over NATS, or
// returns nats.ErrNoResponders when it does not serve that shard now
// (the Router then asks over NATS); ID names its replicas
// (subject.Replica).
type Local interface {
	ServeLocal(ctx context.Context, msg *nats.Msg) (*nats.Msg, error)
	ID() string
}

type localSearcher struct {
	Local
	id string
}

// SetLocal makes the Router ask l first for every request it may answer:
// those to a shard's queue group, and those to l's own replicas. nil
// asks over NATS only.
func (rt *Router) SetLocal(l Local) {
	if l == nil {
		rt.local.Store(nil)
		return
	}
	rt.local.Store(&localSearcher{Local: l, id: l.ID()})
}

// LocalServed reports how many shard requests the searcher in this
// process answered directly (SetLocal), since the Router was made.
func (rt *Router) LocalServed() int64 { return rt.localServed.Load() }

// request sends msg to a shard: replica "" is the shard's queue group
// (msg.Subject a shard's), otherwise msg.Subject is that replica's. A
// searcher in this process that serves it answers directly, unless msg
// is a hedge to the queue group (the local searcher may be the slow one).
func (rt *Router) request(ctx context.Context, replica string, hedge bool, msg *nats.Msg) (*nats.Msg, error) {
	if l := rt.local.Load(); l != nil && (replica == "" && !hedge || replica == l.id) {
		reply, err := l.ServeLocal(ctx, msg)
		if !errors.Is(err, nats.ErrNoResponders) {
			rt.localServed.Add(1)
			return reply, err
		}
	}
	return rt.nc.RequestMsgWithContext(ctx, msg)
}

// NewRouter returns a Router that sends shard requests on nc, zstd
// compressed above compressThreshold bytes (wire.Encode), and keeps the
// statistics the statistics phase counts in stats.
func NewRouter(nc *nats.Conn, compressThreshold int, stats *StatsCache) *Router {
	return &Router{nc: nc, compress: compressThreshold, stats: stats}
}

// HedgeStats reports shard requests, hedges sent and hedges that answered
// first, since the Router was made.
func (rt *Router) HedgeStats() (requests, hedges, won int64) {
	return rt.hedge.requests.Load(), rt.hedge.hedges.Load(), rt.hedge.won.Load()
}

// Result is one shard's answer to one phase of a plan: its reply, or
// why there is none.
type Result struct {
	// Reply is the shard's answer, undecoded; nil when Err is set.
	Reply *nats.Msg
	// Resp is Reply decoded as a search response: the caller that decodes
	// it keeps it here (the Router never sets it).
	Resp *wire.ShardResponse
	// Err is why there is no reply to use: an api error (timeout,
	// unavailable, the shard's own error reply), or one of encoding or
	// decoding.
	Err error
	// Took is from the first request sent to the answer used, or to the
	// last failure.
	Took time.Duration
	// Hedged is whether a second replica was asked; HedgeWon whether its
	// answer was the one used.
	Hedged, HedgeWon bool
}

// CountStats returns the plan's term statistics summed over every shard,
// from a statistics round trip, and caches them; nil when a shard did not
// answer in time (the shards then score with their own statistics). A
// shard that refuses the query itself (IsClientError) fails it.
func (rt *Router) CountStats(ctx context.Context, plan *planner.Plan) (*wire.GlobalStats, error) {
	req := &wire.ShardRequest{Query: plan.Query, Phase: wire.PhaseStats, MaxTerms: plan.MaxTerms}
	if plan.PIT != nil {
		req.PIT = plan.PIT.ID
	}
	results := rt.fanOut(ctx, plan, req, planner.Hedge{})
	total := &wire.GlobalStats{}
	complete := true
	for i, r := range results {
		if r.Err != nil {
			if IsClientError(r.Err) {
				return nil, r.Err
			}
			complete = false // the search phase reports this shard
			continue
		}
		var st wire.GlobalStats
		if err := wire.Decode(r.Reply, &st); err != nil {
			complete = false
			results[i].Err = err
			continue
		}
		total.Add(&st)
	}
	if !complete {
		// Partial sums would be wrong, and a field only the missing shards
		// hold would have no statistics at all (bleve then fails the
		// search). Shards score with their own statistics instead: not
		// exact, but an answer.
		return nil, nil
	}
	if plan.PIT == nil { // a point in time's are its own: not the index's now
		rt.stats.NoteGeneration(plan.Index, total.Generation)
		rt.stats.Put(plan.Index, plan.Query, total)
	}
	return total, nil
}

// OpenPIT opens point in time id on one replica of every shard of the
// plan, held for keepAlive, and returns it: which replica holds each
// shard's. A shard that fails fails it all (the others expire).
func (rt *Router) OpenPIT(ctx context.Context, plan *planner.Plan, id string, keepAlive time.Duration) (*planner.PointInTime, error) {
	req := &wire.ShardRequest{Phase: wire.PhasePIT, PIT: id, PITKeepAliveMS: keepAlive.Milliseconds()}
	pit := &planner.PointInTime{ID: id, KeepAlive: keepAlive, Replicas: make(map[int]string, len(plan.Shards))}
	for i, r := range rt.fanOut(ctx, plan, req, planner.Hedge{}) {
		var opened wire.PITOpened
		err := r.Err
		if err == nil {
			err = wire.Decode(r.Reply, &opened)
		}
		if err == nil && opened.Replica == "" {
			err = errors.New("the searcher named no replica")
		}
		if err != nil {
			return nil, fmt.Errorf("open a point in time on shard %d: %w", plan.Shards[i], err)
		}
		pit.Replicas[plan.Shards[i]] = opened.Replica
	}
	return pit, nil
}

// Search runs the search phase: sreq to every shard of the plan, in
// parallel under ctx's deadline, hedged as the plan says; a result per
// shard, in the plan's order, and the request they answered. When a
// shard refuses the statistics as stale (wire.CodeStaleStats: more of
// its updates since they were counted than the bound, or, put together,
// lacking a term it reads), they are counted again and every shard asked
// once more, without the bound (the statistics are a moment old): the
// request they answered is then that second one, not sreq.
func (rt *Router) Search(ctx context.Context, plan *planner.Plan, sreq *wire.ShardRequest) ([]Result, *wire.ShardRequest) {
	results := rt.fanOut(ctx, plan, sreq, plan.Hedge)
	if sreq.Stats == nil || sreq.MaxStaleUpdates == 0 || !anyStale(results) {
		return results, sreq
	}
	rt.stats.Drop(plan.Index, plan.Query)
	if sreq.StatsComposed {
		rt.stats.StaleDictionaries(plan.Index)
	}
	statsCtx, cancel := context.WithTimeout(ctx, plan.ShardTimeout/4)
	st, err := rt.CountStats(statsCtx, plan)
	cancel()
	retry := *sreq
	retry.MaxStaleUpdates, retry.StatsComposed = 0, false
	if err == nil {
		retry.Stats = st // nil when a shard did not answer: each scores with its own
	}
	return rt.fanOut(ctx, plan, &retry, plan.Hedge), &retry
}

// Deepen asks the plan's shards at positions idx (of plan.Shards) again,
// for all plan.K hits: sreq is the first round's request as the shards
// answered it (Search), so scores are those of the first round. Only
// hits are wanted: no facets or suggestions, and no bound on stale
// statistics (the first round took them a moment ago). A result per
// position of idx.
func (rt *Router) Deepen(ctx context.Context, plan *planner.Plan, sreq *wire.ShardRequest, idx []int) []Result {
	more := *sreq
	more.K, more.Facets, more.Suggest, more.MaxStaleUpdates = plan.K, nil, nil, 0
	sub := *plan
	sub.Shards = make([]int, len(idx))
	for j, i := range idx {
		sub.Shards[j] = plan.Shards[i]
	}
	return rt.fanOut(ctx, &sub, &more, plan.Hedge)
}

func anyStale(results []Result) bool {
	for _, r := range results {
		if r.Err != nil && api.CodeOf(r.Err) == wire.CodeStaleStats {
			return true
		}
	}
	return false
}

// IsClientError reports whether a shard refused the request itself (bad,
// over the index's limits, asking for more fields than a reply carries,
// or reading a point in time it no longer holds): partial results
// without that shard's hits are no answer.
func IsClientError(err error) bool {
	return errors.Is(err, api.ErrBadRequest) || errors.Is(err, api.ErrQueryTooComplex) || errors.Is(err, api.ErrResponseTooLarge) ||
		errors.Is(err, api.ErrNotFound)
}

// fanOut asks every shard of the plan in parallel under ctx's deadline.
func (rt *Router) fanOut(ctx context.Context, plan *planner.Plan, sreq *wire.ShardRequest, hedge planner.Hedge) []Result {
	results := make([]Result, len(plan.Shards))
	proto := nats.NewMsg("")
	if err := wire.Encode(proto, sreq, rt.compress); err != nil {
		for i := range results {
			results[i].Err = err
		}
		return results
	}
	deadline, _ := ctx.Deadline()
	hdr := nats.Header{subject.HeaderDeadline: []string{strconv.FormatInt(deadline.UnixNano(), 10)}}
	if enc := proto.Header.Get(subject.HeaderEncoding); enc != "" {
		hdr.Set(subject.HeaderEncoding, enc)
	}
	if id := requestid.From(ctx); id != "" {
		hdr.Set(requestid.Header, id)
	}
	var wg sync.WaitGroup
	for i, sh := range plan.Shards {
		wg.Go(func() {
			if plan.PIT != nil && sreq.Phase != wire.PhasePIT {
				results[i] = rt.askPinned(ctx, plan.Index, sh, plan.PIT.Replicas[sh], proto.Data, hdr)
				return
			}
			results[i] = rt.askShard(ctx, plan.Index, sh, proto.Data, hdr, hedge)
		})
	}
	wg.Wait()
	return results
}

type attempt struct {
	reply   *nats.Msg
	err     error
	replica string // "" when sent to the queue group
	hedge   bool
}

// askShard sends one shard request and, if the shard is slower than its
// recent hedge quantile, a second one to a different replica; the first
// good answer wins.
func (rt *Router) askShard(ctx context.Context, index string, sh int, data []byte, hdr nats.Header, hedge planner.Hedge) (res Result) {
	start := time.Now()
	st := rt.shards.get(index, sh)
	rt.hedge.request(hedge.MaxFraction)
	if trace.Enabled() {
		// The shard's span, and its context in this shard's headers.
		var span oteltrace.Span
		ctx, span = trace.Start(ctx, "quarry.shard", oteltrace.WithSpanKind(oteltrace.SpanKindClient),
			oteltrace.WithAttributes(attribute.String("quarry.index", index), attribute.Int("quarry.shard", sh)))
		own := make(nats.Header, len(hdr)+1)
		for k, v := range hdr {
			own[k] = v
		}
		hdr = tracenats.Inject(ctx, own)
		defer func() {
			span.SetAttributes(attribute.Bool("quarry.hedged", res.Hedged), attribute.Bool("quarry.hedge_won", res.HedgeWon))
			if res.Err != nil {
				span.SetStatus(codes.Error, res.Err.Error())
			}
			span.End()
		}()
	}
	out := make(chan attempt, 4)
	// A request that loses to a hedge is not cancelled: it runs to its
	// deadline, so its replica's real latency and outstanding count are
	// known and the next requests avoid a stuck replica.
	deadline, _ := ctx.Deadline()
	reqCtx, cancelReq := context.WithDeadline(context.WithoutCancel(ctx), deadline)
	var inflight sync.WaitGroup
	defer func() { go func() { inflight.Wait(); cancelReq() }() }()
	send := func(replica string, isHedge bool) {
		subj := st.subjectOf(replica)
		st.begin(replica)
		sent := time.Now()
		inflight.Go(func() {
			reply, err := rt.request(reqCtx, replica, isHedge, &nats.Msg{Subject: subj, Data: data, Header: hdr})
			st.end(replica)
			if replica != "" && (err == nil || errors.Is(err, context.DeadlineExceeded)) {
				st.observeReplica(replica, time.Since(sent))
			}
			out <- attempt{reply: reply, err: err, replica: replica, hedge: isHedge}
		})
	}
	// With two or more known replicas the broker picks the primary itself
	// (the better of two), so a hedge can go to another; otherwise the
	// shard's queue group does. Replicas are discovered in the background.
	primary := ""
	if hedge.Enabled {
		st.discover(rt.nc, index, sh)
		primary, _ = st.choosePrimary()
	}
	send(primary, false)
	pending := 1
	var timer <-chan time.Time
	var hedgeTimer *time.Timer
	if hedge.Enabled {
		delay := hedge.InitialDelay
		if q, ok := st.quantile(hedge.Quantile); ok {
			delay = max(q, hedge.MinDelay)
		}
		hedgeTimer = time.NewTimer(delay)
		defer hedgeTimer.Stop()
		timer = hedgeTimer.C
	}
	var lastErr error
	for pending > 0 {
		select {
		case a := <-out:
			pending--
			err := replyError(a.reply, a.err)
			if err == nil {
				res.Reply, res.Took = a.reply, time.Since(start)
				res.HedgeWon = a.hedge
				if a.hedge {
					rt.hedge.won.Add(1)
				}
				replica := a.replica
				if replica == "" {
					// A queue-group answer names its replica in the reply.
					replica = replicaOf(a.reply)
				}
				st.observe(res.Took, replica)
				return res
			}
			if a.replica != "" && errors.Is(a.err, nats.ErrNoResponders) {
				// That replica is gone: forget it, ask the queue group.
				st.forget(a.replica)
				send("", a.hedge)
				pending++
				continue
			}
			lastErr = err
		case <-timer:
			timer = nil
			if primary == "" && st.soleReplica() {
				// One searcher serves the shard and has the request: asked
				// again, it would do the slow work twice.
				continue
			}
			// A primary found gone (no responders) since is a failover,
			// not extra load: it needs no budget.
			if gone := primary != "" && !st.known(primary); gone || rt.hedge.allow() {
				target, _ := st.chooseHedge(primary)
				send(target, true)
				pending++
				res.Hedged = true
			} else if primary != "" {
				// Look again later: the primary may be found gone meanwhile.
				hedgeTimer.Reset(hedgeRecheck)
				timer = hedgeTimer.C
			}
		}
	}
	res.Err, res.Took = lastErr, time.Since(start)
	return res
}

// ClosePIT ends the plan's point in time on every replica holding it.
// Ending one already gone is no error; a shard that does not answer in
// time keeps its until its keep-alive ends.
func (rt *Router) ClosePIT(ctx context.Context, plan *planner.Plan) {
	rt.fanOut(ctx, plan, &wire.ShardRequest{Phase: wire.PhasePITClose, PIT: plan.PIT.ID}, planner.Hedge{})
}

// askPinned sends one shard request to the replica that holds the
// plan's point in time: no other has its documents, so there is neither
// hedge nor failover.
func (rt *Router) askPinned(ctx context.Context, index string, sh int, replica string, data []byte, hdr nats.Header) (res Result) {
	start := time.Now()
	if replica == "" {
		res.Err = api.Errorf(api.CodeNotFound, "the point in time holds no replica of shard %d: open another", sh)
		return res
	}
	reply, err := rt.request(ctx, replica, false, &nats.Msg{Subject: subject.Replica(replica, index, sh), Data: data, Header: hdr})
	if errors.Is(err, nats.ErrNoResponders) {
		err = api.Errorf(api.CodeNotFound, "the point in time's replica of shard %d is gone (its searcher stopped): open another", sh)
	} else {
		err = replyError(reply, err)
	}
	if err != nil {
		res.Err = err
	} else {
		res.Reply = reply
	}
	res.Took = time.Since(start)
	return res
}

// replicaOf reads the replica id of a binary shard response without
// decoding it all: it follows the fixed header fields.
func replicaOf(msg *nats.Msg) string {
	if msg == nil || msg.Header.Get(subject.HeaderEncoding) != "" {
		return ""
	}
	return wire.PeekReplica(msg.Data)
}

// replyError classifies a failed request or an error reply.
func replyError(reply *nats.Msg, err error) error {
	switch {
	case errors.Is(err, nats.ErrNoResponders):
		return api.Errorf(api.CodeUnavailable, "no searcher serves this shard")
	case errors.Is(err, context.DeadlineExceeded) || errors.Is(err, nats.ErrTimeout):
		return api.Errorf(api.CodeTimeout, "no answer before the deadline")
	case errors.Is(err, context.Canceled):
		return api.Errorf(api.CodeTimeout, "request cancelled")
	case err != nil:
		return api.Errorf(api.CodeUnavailable, "%v", err)
	}
	if code := reply.Header.Get(subject.HeaderError); code != "" {
		return api.Errorf(api.Code(code), "%s", reply.Data)
	}
	return nil
}
