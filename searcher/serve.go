package searcher

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"
	"go.opentelemetry.io/otel/attribute"
	oteltrace "go.opentelemetry.io/otel/trace"

	"github.com/quarrysearch/quarry/api"
	"github.com/quarrysearch/quarry/internal/admission"
	"github.com/quarrysearch/quarry/internal/requestid"
	"github.com/quarrysearch/quarry/internal/shard"
	"github.com/quarrysearch/quarry/internal/subject"
	"github.com/quarrysearch/quarry/internal/trace"
	"github.com/quarrysearch/quarry/internal/tracenats"
	"github.com/quarrysearch/quarry/internal/wire"
)

// request is one shard request in the queue: from NATS, or from a broker
// in this process (ServeLocal), which waits on local for the reply.
type request struct {
	msg   *nats.Msg
	local chan *nats.Msg
}

// respond sends out, the reply: over NATS (its buffer is recycled once
// sent), or to the local broker, which keeps it.
func (r request) respond(out *nats.Msg) {
	if r.local != nil {
		select { // room for one reply: the worker never waits on a broker gone
		case r.local <- out:
		default: // a second reply (a panic after the first): the first stands
		}
		return
	}
	r.msg.RespondMsg(out)
	wire.Recycle(out) // sent: nats.go copied it
}

// fail replies with the error's code in a header and its message as the
// body.
func (r request) fail(err error) {
	out := nats.NewMsg("")
	out.Header.Set(subject.HeaderError, string(api.CodeOf(err)))
	out.Data = []byte(err.Error())
	r.respond(out)
}

// enqueue hands a team's request to the workers, refusing it at once when
// the queue is full rather than letting it time out.
func (s *Searcher) enqueue(team string, msg *nats.Msg) {
	if !s.replies.Allow(msg.Subject, msg.Reply) {
		return
	}
	if err := s.queue.Push(s.queue.Team(team), request{msg: msg}); err != nil {
		s.metrics.refused[refusedOverloaded].Inc()
		request{msg: msg}.fail(api.Errorf(api.CodeOverloaded, "searcher overloaded: %d requests queued", s.cfg.QueueLen))
	}
}

// ServeLocal answers a shard request (its subject: a shard's, or this
// searcher's replica's) from a broker in this process, as the request
// would be answered over NATS and through the same queue: the team's fair
// share, the queue's bound, the deadline header and every fault hook hold;
// only the hops through the NATS server are left out (RATIONALE: "A
// broker beside a searcher asks it directly"). It returns
// nats.ErrNoResponders when this searcher does not serve the shard now
// (not loaded yet, dropped, shutting down) or its queue is full: the
// broker then asks over NATS. ctx ending returns its error, as a NATS
// request would.
func (s *Searcher) ServeLocal(ctx context.Context, msg *nats.Msg) (*nats.Msg, error) {
	team, ok := s.localTeam(msg.Subject)
	if !ok || s.draining.Load() {
		return nil, nats.ErrNoResponders
	}
	r := request{msg: msg, local: make(chan *nats.Msg, 1)}
	if s.queue.Push(s.queue.Team(team), r) != nil {
		return nil, nats.ErrNoResponders
	}
	select {
	case out := <-r.local:
		return out, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// localTeam is the team of the index a shard subject names, when this
// searcher serves that shard now (it subscribed it).
func (s *Searcher) localTeam(subj string) (string, bool) {
	idx, sh, ok := subject.ParseShard(subj)
	if !ok {
		var id string
		if id, idx, sh, ok = subject.ParseReplica(subj); !ok || id != s.id {
			return "", false
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.indexes[idx]
	if st == nil || st.shards[sh] == nil {
		return "", false
	}
	return st.def.TeamOf(), true
}

// worker serves queued requests until the queue is closed.
func (s *Searcher) worker() {
	for {
		it, ok := s.queue.Next()
		if !ok {
			return
		}
		s.busy.Add(1)
		start := time.Now()
		ctx := context.Background()
		var turn *admission.Turn
		if !it.Light && s.cfg.HeavyPause > 0 {
			turn = s.queue.Turn(s.cfg.HeavyPause, s.cfg.HeavyLinger)
			ctx = shard.WithCheckpoint(ctx, turn.Checkpoint)
		}
		s.serveOne(ctx, it.Job, it.Queued)
		s.queue.Done(it, time.Since(start))
		if turn != nil && turn.Waited() > 0 {
			s.metrics.heavyWaited.Add(turn.Waited().Seconds())
		}
		s.busy.Add(-1)
	}
}

// serveOne handles one shard request; a panic in it (a bug one request
// trips) answers that request with an internal error, is logged with the
// request id and counted, and leaves the worker serving every team's
// other requests.
func (s *Searcher) serveOne(ctx context.Context, req request, queued time.Duration) {
	msg := req.msg
	defer func() {
		if p := recover(); p != nil {
			id := msg.Header.Get(requestid.Header)
			if !requestid.Valid(id) {
				id = requestid.New()
			}
			s.metrics.panics.Inc()
			s.cfg.Logger.Error("shard request panicked", "request_id", id, "subject", msg.Subject, "panic", p, "stack", string(debug.Stack()))
			req.fail(api.Errorf(api.CodeInternal, "internal error (request id %s)", id))
		}
	}()
	if s.cfg.FaultPanic && s.requests.Add(1)%int64(s.cfg.FaultEvery) == 0 {
		ctx = shard.WithInjectedPanic(ctx)
	}
	s.handle(ctx, req, queued)
}

func (s *Searcher) handle(ctx context.Context, r request, queued time.Duration) {
	msg := r.msg
	s.metrics.queueWait.Observe(queued.Seconds())
	if d := msg.Header.Get(subject.HeaderDeadline); d != "" {
		ns, err := strconv.ParseInt(d, 10, 64)
		if err != nil {
			s.metrics.refused[refusedBadRequest].Inc()
			r.fail(api.BadRequest("bad %s header %q", subject.HeaderDeadline, d))
			return
		}
		deadline := time.Unix(0, ns)
		if time.Until(deadline) <= 0 {
			s.metrics.refused[refusedExpired].Inc()
			return // the broker gave up already: drop the work
		}
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, deadline)
		defer cancel()
	}
	idx, sh, ok := subject.ParseShard(msg.Subject)
	if !ok {
		_, idx, sh, ok = subject.ParseReplica(msg.Subject)
	}
	if !ok {
		s.metrics.refused[refusedBadRequest].Inc()
		r.fail(api.BadRequest("bad shard subject %q", msg.Subject))
		return
	}
	var req wire.ShardRequest
	if err := wire.Decode(msg, &req); err != nil {
		s.metrics.refused[refusedBadRequest].Inc()
		r.fail(api.BadRequest("%v", err))
		return
	}
	start := time.Now()
	if trace.Enabled() {
		var span oteltrace.Span
		ctx, span = trace.Start(tracenats.Extract(ctx, msg.Header), "quarry.shard.search", oteltrace.WithSpanKind(oteltrace.SpanKindServer),
			oteltrace.WithAttributes(attribute.String("quarry.index", idx), attribute.Int("quarry.shard", sh),
				attribute.String("quarry.phase", req.Phase), attribute.String("quarry.replica", s.id),
				attribute.Int64("quarry.queued_us", queued.Microseconds())))
		defer span.End()
	}
	if s.cfg.SlowRequest > 0 {
		defer func() {
			if took := queued + time.Since(start); took > s.cfg.SlowRequest {
				s.cfg.Logger.Warn("slow shard request", "request_id", msg.Header.Get(requestid.Header), "index", idx, "shard", sh,
					"phase", req.Phase, "queued_ms", float64(queued.Microseconds())/1000, "took_ms", float64(took.Microseconds())/1000)
			}
		}()
	}
	if s.cfg.FaultDelay > 0 && (phaseOf(req.Phase) == phaseStats) == s.cfg.FaultStats && s.requests.Add(1)%int64(s.cfg.FaultEvery) == 0 {
		select { // injected fault: a slow replica
		case <-time.After(s.cfg.FaultDelay):
		case <-ctx.Done():
			s.metrics.refused[refusedExpired].Inc()
			return
		}
	}
	compress := s.cfg.CompressThreshold
	if r.local != nil {
		compress = 0 // in-process: never compressed
	}
	for attempt := 0; ; attempt++ {
		sl := s.slot(idx, sh)
		if sl == nil {
			s.metrics.refused[refusedNotServed].Inc()
			r.fail(api.Errorf(api.CodeUnavailable, "shard %d of %q is not served here", sh, idx))
			return
		}
		out := nats.NewMsg("")
		var err error
		switch req.Phase {
		case wire.PhaseStats:
			var st *wire.GlobalStats
			if st, err = sl.cur.Load().Stats(ctx, &req); err == nil {
				err = wire.Encode(out, st, compress)
			}
		case wire.PhaseDictionary:
			var st *wire.GlobalStats
			if st, err = sl.cur.Load().Dictionary(ctx, &req); err == nil {
				err = wire.Encode(out, st, compress)
			}
		case wire.PhasePIT:
			opened := wire.PITOpened{Replica: s.id}
			if opened.ID, opened.Seq, err = sl.cur.Load().OpenPIT(req.PIT, time.Duration(req.PITKeepAliveMS)*time.Millisecond); err == nil {
				err = wire.Encode(out, &opened, compress)
			}
		case wire.PhasePITClose:
			sl.cur.Load().ClosePIT(req.PIT)
			out.Data = []byte("{}")
		default:
			var resp *wire.ShardResponse
			room := wire.ReplyRoom(s.nc)
			req.MaxReplyBytes = room
			if s.cfg.MaxReplyBytes > 0 {
				req.MaxReplyBytes = min(room, s.cfg.MaxReplyBytes)
			}
			if resp, err = sl.cur.Load().Search(ctx, &req); err == nil {
				resp.Replica, resp.QueueNS = s.id, queued.Nanoseconds()
				sl.metrics.search.Observe(time.Duration(resp.TookNS).Seconds())
				if err = wire.EncodeShardResponse(out, resp, compress); err == nil && len(out.Data) > room {
					err = api.ResponseTooLarge(fmt.Sprintf("shard %d's reply is %d bytes, over the %d bytes one reply carries", sh, len(out.Data), room))
				}
			}
		}
		if shard.IsClosed(err) && attempt < 3 {
			continue // swapped out under us: retry on the new replica
		}
		sl.metrics.answered(req.Phase, err)
		s.answered.Add(1)
		if err != nil {
			s.failed.Add(1)
		}
		if errors.Is(err, api.ErrResponseTooLarge) {
			s.metrics.tooLarge.Inc()
		}
		if err != nil {
			r.fail(err)
			return
		}
		r.respond(out)
		return
	}
}

func (s *Searcher) slot(index string, sh int) *slot {
	s.mu.Lock()
	defer s.mu.Unlock()
	if st := s.indexes[index]; st != nil {
		return st.shards[sh]
	}
	return nil
}
