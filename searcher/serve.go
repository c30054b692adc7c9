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

// enqueue hands a team's request to the workers, refusing it at once when
// the queue is full rather than letting it time out.
func (s *Searcher) enqueue(team string, msg *nats.Msg) {
	if !s.replies.Allow(msg.Subject, msg.Reply) {
		return
	}
	if err := s.queue.Push(s.queue.Team(team), msg); err != nil {
		s.metrics.refused[refusedOverloaded].Inc()
		respondError(msg, api.Errorf(api.CodeOverloaded, "searcher overloaded: %d requests queued", s.cfg.QueueLen))
	}
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
func (s *Searcher) serveOne(ctx context.Context, msg *nats.Msg, queued time.Duration) {
	defer func() {
		if p := recover(); p != nil {
			id := msg.Header.Get(requestid.Header)
			if !requestid.Valid(id) {
				id = requestid.New()
			}
			s.metrics.panics.Inc()
			s.cfg.Logger.Error("shard request panicked", "request_id", id, "subject", msg.Subject, "panic", p, "stack", string(debug.Stack()))
			respondError(msg, api.Errorf(api.CodeInternal, "internal error (request id %s)", id))
		}
	}()
	if s.cfg.FaultPanic && s.requests.Add(1)%int64(s.cfg.FaultEvery) == 0 {
		ctx = shard.WithInjectedPanic(ctx)
	}
	s.handle(ctx, msg, queued)
}

func (s *Searcher) handle(ctx context.Context, msg *nats.Msg, queued time.Duration) {
	s.metrics.queueWait.Observe(queued.Seconds())
	if d := msg.Header.Get(subject.HeaderDeadline); d != "" {
		ns, err := strconv.ParseInt(d, 10, 64)
		if err != nil {
			s.metrics.refused[refusedBadRequest].Inc()
			respondError(msg, api.BadRequest("bad %s header %q", subject.HeaderDeadline, d))
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
		respondError(msg, api.BadRequest("bad shard subject %q", msg.Subject))
		return
	}
	var req wire.ShardRequest
	if err := wire.Decode(msg, &req); err != nil {
		s.metrics.refused[refusedBadRequest].Inc()
		respondError(msg, api.BadRequest("%v", err))
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
	if s.cfg.FaultDelay > 0 && (req.Phase == wire.PhaseStats) == s.cfg.FaultStats && s.requests.Add(1)%int64(s.cfg.FaultEvery) == 0 {
		select { // injected fault: a slow replica
		case <-time.After(s.cfg.FaultDelay):
		case <-ctx.Done():
			s.metrics.refused[refusedExpired].Inc()
			return
		}
	}
	for attempt := 0; ; attempt++ {
		sl := s.slot(idx, sh)
		if sl == nil {
			s.metrics.refused[refusedNotServed].Inc()
			respondError(msg, api.Errorf(api.CodeUnavailable, "shard %d of %q is not served here", sh, idx))
			return
		}
		out := nats.NewMsg("")
		var err error
		switch req.Phase {
		case wire.PhaseStats:
			var st *wire.GlobalStats
			if st, err = sl.cur.Load().Stats(ctx, &req); err == nil {
				err = wire.Encode(out, st, s.cfg.CompressThreshold)
			}
		case wire.PhasePIT:
			opened := wire.PITOpened{Replica: s.id}
			if opened.ID, opened.Seq, err = sl.cur.Load().OpenPIT(req.PIT, time.Duration(req.PITKeepAliveMS)*time.Millisecond); err == nil {
				err = wire.Encode(out, &opened, s.cfg.CompressThreshold)
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
				if err = wire.EncodeShardResponse(out, resp, s.cfg.CompressThreshold); err == nil && len(out.Data) > room {
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
			respondError(msg, err)
			return
		}
		msg.RespondMsg(out)
		wire.Recycle(out) // sent: nats.go copied it
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

// respondError replies with the error's code in a header and its message
// as the body.
func respondError(msg *nats.Msg, err error) {
	out := nats.NewMsg("")
	out.Header.Set(subject.HeaderError, string(api.CodeOf(err)))
	out.Data = []byte(err.Error())
	msg.RespondMsg(out)
}
