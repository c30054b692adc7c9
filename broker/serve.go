package broker

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/micro"

	"github.com/quarrysearch/quarry/api"
	"github.com/quarrysearch/quarry/internal/admission"
	"github.com/quarrysearch/quarry/internal/requestid"
	"github.com/quarrysearch/quarry/internal/subject"
	"github.com/quarrysearch/quarry/internal/tracenats"
	"github.com/quarrysearch/quarry/internal/wire"
)

// A search request takes this path: the search subscription's one
// goroutine (receive) checks its reply subject and admits its team (rate,
// searches in flight) and queues it; one of Config.MaxInFlight workers
// takes it from the queue (admission: round-robin between teams, a heavy
// team's searches held to their turns) and answers it (serve). The
// service's figures for `nats micro stats` are counted there, from a
// request's arrival to its answer.

// lookupTeam is the queue of the searches of an index the broker's watch
// has not delivered (just created): their team is known once a worker has
// read the index's definition (lookupIndex), and admitted then.
const lookupTeam = ""

// searchJob is one search request waiting for a worker.
type searchJob struct {
	msg     *nats.Msg
	arrived time.Time
	asked   string // the index or alias named in the subject
	index   string // what asked resolves to, if the watch has it
	known   bool
	// admitted is the team Admit let in (nil for lookupTeam's searches):
	// its slot is released when the search ends.
	admitted *admission.Team
}

// receive is the search subscription's handler: it admits the request's
// team and queues it, and does not block.
func (b *Broker) receive(msg *nats.Msg) {
	j := searchJob{msg: msg, arrived: time.Now(), asked: strings.TrimPrefix(msg.Subject, subject.SearchPrefix+".")}
	var def api.IndexDefinition
	j.index, def, j.known = b.known(j.asked)
	if !b.replies.Allow(msg.Subject, msg.Reply) {
		b.metrics.refused(j.index)
		b.served.done(j.arrived, nil)
		return
	}
	team := lookupTeam
	if j.known {
		team = def.TeamOf()
		if !b.replies.AllowTeam(msg.Subject, msg.Reply, team) {
			b.metrics.refused(j.index)
			b.served.done(j.arrived, nil)
			return
		}
		var err error
		if j.admitted, err = b.admit.Admit(team, j.arrived); err != nil {
			b.metrics.refused(j.index)
			b.refuse(j, err)
			return
		}
	}
	if err := b.admit.Push(team, j); err != nil {
		if j.admitted != nil {
			b.admit.Release(j.admitted, 0)
		}
		b.metrics.refused(j.index)
		b.refuse(j, &api.Error{Code: api.CodeOverloaded, RetryAfterMS: 100,
			Message: fmt.Sprintf("broker overloaded: %d requests in flight, try again", b.cfg.MaxInFlight)})
	}
}

// refuse answers j with err and counts it done.
func (b *Broker) refuse(j searchJob, err error) {
	b.served.done(j.arrived, b.respondError(j.msg.Reply, err))
}

// work serves queued searches until the queue is closed.
func (b *Broker) work() {
	for {
		it, ok := b.admit.Next()
		if !ok {
			return
		}
		cost := b.serve(it)
		b.admit.Done(it, cost)
		if it.Job.admitted != nil {
			b.admit.Release(it.Job.admitted, cost)
		}
	}
}

// serve answers one queued search and returns its cost: its own work
// (shards' search time and plugin calls), what its team is charged.
func (b *Broker) serve(it admission.Item[searchJob]) (cost time.Duration) {
	j := it.Job
	var failed *api.Error
	defer func() { b.served.done(j.arrived, failed) }()
	reply := j.msg.Reply
	index := j.index
	if it.Expired {
		b.metrics.refused(index)
		failed = b.respondError(reply, b.waitedTooLong(it))
		return 0
	}
	ctx := tracenats.Extract(context.Background(), j.msg.Header)
	if j.msg.Header.Get(subject.HeaderInternal) != "" {
		ctx = withInternal(ctx)
	}
	if requestid.From(ctx) == "" {
		ctx = requestid.With(ctx, requestid.New())
	}
	defer func() {
		// A bug one request trips must not take the broker, and every
		// team's searches, down with it.
		if p := recover(); p != nil {
			failed = b.respondError(reply, internalError(ctx, b.cfg.Logger, fmt.Errorf("panic: %v\n%s", p, debug.Stack()), "index", index))
		}
	}()
	if !j.known {
		// An index the watch has not delivered yet (just created) is
		// read from the store, its team admitted like any other, and
		// searched as read.
		if err := subject.ValidIndexName(index); err != nil {
			err = api.BadRequest("%v", err)
			b.metrics.answered(index, j.arrived, err)
			failed = b.respondError(reply, err)
			return 0
		}
		def, err := b.lookupIndex(ctx, index)
		if err != nil {
			b.metrics.answered(index, j.arrived, err)
			failed = b.respondError(reply, b.public(ctx, err, "index", index))
			return 0
		}
		index = def.Name // an alias's, read with it
		if !b.replies.AllowTeam(j.msg.Subject, reply, def.TeamOf()) {
			b.metrics.refused(index)
			return 0
		}
		team, err := b.admit.Admit(def.TeamOf(), time.Now())
		if err != nil {
			b.metrics.refused(index)
			failed = b.respondError(reply, err)
			return 0
		}
		defer func() { b.admit.Release(team, cost) }()
		ctx = withLookedUp(ctx, def)
	}
	buf := responseBuffers.Get().(*bytes.Buffer)
	defer putResponseBuffer(buf)
	if index != j.asked {
		ctx = withAlias(ctx)
	}
	cost, err := b.searchJSON(ctx, index, j.msg.Data, buf)
	if err != nil {
		failed = b.respondError(reply, b.public(ctx, err, "index", index))
		return cost
	}
	// The request id is in the body (request_id): no header for it.
	// nats.go copies the body before PublishMsg returns: buf may go back
	// to the pool.
	msg := &nats.Msg{Subject: reply, Data: buf.Bytes(), Header: nats.Header{"Content-Type": []string{"application/json"}}}
	if err := b.nc.PublishMsg(msg); err != nil {
		b.cfg.Logger.Warn("reply failed", "index", index, "err", err)
	}
	return cost
}

// waitedTooLong is the refusal of a search that waited past
// Config.HeavyWait in the queue: for its heavy team's turn, or for a
// worker.
func (b *Broker) waitedTooLong(it admission.Item[searchJob]) *api.Error {
	e := &api.Error{Code: api.CodeOverloaded, RetryAfterMS: int(b.cfg.HeavyWait.Milliseconds())}
	if cost := it.Team.Cost(); b.cfg.HeavyAfter > 0 && cost > b.cfg.HeavyAfter {
		e.Message = fmt.Sprintf("team %s's searches cost %s of searcher and plugin time on average (heavy) and waited %s for a turn while other teams search; try again",
			it.Team.Name(), cost.Round(time.Millisecond), b.cfg.HeavyWait)
	} else {
		e.Message = fmt.Sprintf("broker overloaded: waited %s for one of its %d workers, try again", b.cfg.HeavyWait, b.cfg.MaxInFlight)
	}
	return e
}

// respondError replies with a micro service error: the HTTP-like status as
// the code, the message as the description, and the api.Error as the body.
// It returns the error sent, for the service's figures.
func (b *Broker) respondError(reply string, err error) *api.Error {
	e := &api.Error{Code: api.CodeOf(err), Message: err.Error()}
	var ae *api.Error
	if errors.As(err, &ae) {
		e.RetryAfterMS = ae.RetryAfterMS
	}
	if perr := b.nc.PublishMsg(wire.ErrorReply(reply, e)); perr != nil {
		b.cfg.Logger.Warn("error reply failed", "err", perr)
	}
	return e
}

// searchService is the broker's search service as NATS' service protocol
// (micro) describes it: the search endpoint's queue subscription, and the
// answers to $SRV.PING, $SRV.INFO and $SRV.STATS (`nats micro ls`, `nats
// micro info quarry`, `nats micro stats quarry`), in micro's own types.
//
// micro.AddService would count a request from when its handler is called
// to when it returns, on the subscription's one goroutine: truthful only
// if the handler answers before returning, one request at a time. The
// broker answers from a pool of workers, so it speaks the protocol
// itself, its figures counted from a request's arrival to its answer
// (RATIONALE.md, "The broker speaks micro's protocol itself").
type searchService struct {
	nc       *nats.Conn
	identity micro.ServiceIdentity
	started  time.Time
	endpoint micro.EndpointInfo
	stats    *endpointStats
	search   *nats.Subscription
	control  []*nats.Subscription
	stopOnce sync.Once
}

// serviceDescription is the search service's description in `nats micro
// info`.
const serviceDescription = "Quarry search API: JSON SearchRequest in, SearchResponse out"

// startService subscribes the search endpoint (handled by receive) and
// the service's control subjects.
func (b *Broker) startService() (*searchService, error) {
	s := &searchService{nc: b.nc, started: time.Now().UTC(), stats: &b.served,
		identity: micro.ServiceIdentity{Name: subject.ServiceName, ID: b.id, Version: api.Version, Metadata: map[string]string{}},
		endpoint: micro.EndpointInfo{Name: "search", Subject: subject.SearchPrefix + ".*", QueueGroup: b.cfg.QueueGroup,
			Metadata: map[string]string{"format": "application/json"}}}
	var err error
	if s.search, err = b.nc.QueueSubscribe(s.endpoint.Subject, s.endpoint.QueueGroup, b.receive); err != nil {
		return nil, fmt.Errorf("broker: subscribe %s: %w", s.endpoint.Subject, err)
	}
	for verb, answer := range map[micro.Verb]func() any{micro.PingVerb: s.ping, micro.InfoVerb: s.info, micro.StatsVerb: s.statsNow} {
		for _, id := range []struct{ name, id string }{{"", ""}, {s.identity.Name, ""}, {s.identity.Name, s.identity.ID}} {
			subj, err := micro.ControlSubject(verb, id.name, id.id)
			if err != nil {
				s.stop()
				return nil, fmt.Errorf("broker: %s subject: %w", verb, err)
			}
			sub, err := b.nc.Subscribe(subj, func(m *nats.Msg) {
				data, err := json.Marshal(answer())
				if err == nil {
					err = m.Respond(data)
				}
				if err != nil {
					b.cfg.Logger.Warn("service protocol answer failed", "subject", m.Subject, "err", err)
				}
			})
			if err != nil {
				s.stop()
				return nil, fmt.Errorf("broker: subscribe %s: %w", subj, err)
			}
			s.control = append(s.control, sub)
		}
	}
	return s, nil
}

func (s *searchService) ping() any {
	return micro.Ping{ServiceIdentity: s.identity, Type: micro.PingResponseType}
}

func (s *searchService) info() any {
	return micro.Info{ServiceIdentity: s.identity, Type: micro.InfoResponseType, Description: serviceDescription,
		Endpoints: []micro.EndpointInfo{s.endpoint}}
}

func (s *searchService) statsNow() any {
	e := s.stats.endpoint()
	e.Name, e.Subject, e.QueueGroup = s.endpoint.Name, s.endpoint.Subject, s.endpoint.QueueGroup
	return micro.Stats{ServiceIdentity: s.identity, Type: micro.StatsResponseType, Started: s.started, Endpoints: []*micro.EndpointStats{e}}
}

// stop drains the search subscription (requests already delivered are
// still received) and ends the control subscriptions.
func (s *searchService) stop() error {
	var err error
	s.stopOnce.Do(func() {
		if s.search != nil {
			err = s.search.Drain()
		}
		for _, sub := range s.control {
			_ = sub.Unsubscribe()
		}
	})
	return err
}

// endpointStats are the search endpoint's figures: every request from its
// arrival to its answer (or to its being dropped, for a reply subject the
// broker does not answer).
type endpointStats struct {
	requests, errors, processingNS atomic.Int64
	lastError                      atomic.Pointer[string]
}

// done counts a request that arrived at start, failed with e (nil: it did
// not).
func (s *endpointStats) done(start time.Time, e *api.Error) {
	s.processingNS.Add(int64(time.Since(start)))
	s.requests.Add(1)
	if e != nil {
		s.errors.Add(1)
		msg := fmt.Sprintf("%d:%s", api.HTTPStatus(e.Code), e.Message)
		s.lastError.Store(&msg)
	}
}

// endpoint is the figures as micro reports them.
func (s *endpointStats) endpoint() *micro.EndpointStats {
	e := &micro.EndpointStats{NumRequests: int(s.requests.Load()), NumErrors: int(s.errors.Load()), ProcessingTime: time.Duration(s.processingNS.Load())}
	if e.NumRequests > 0 {
		e.AverageProcessingTime = e.ProcessingTime / time.Duration(e.NumRequests)
	}
	if msg := s.lastError.Load(); msg != nil {
		e.LastError = *msg
	}
	return e
}
