package broker

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"strings"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/quarrysearch/quarry/api"
	"github.com/quarrysearch/quarry/internal/admission"
	"github.com/quarrysearch/quarry/internal/requestid"
	"github.com/quarrysearch/quarry/internal/service"
	"github.com/quarrysearch/quarry/internal/subject"
	"github.com/quarrysearch/quarry/internal/tracenats"
	"github.com/quarrysearch/quarry/internal/wire"
)

// A search request takes this path: the search subscription's one
// goroutine (receive) checks its reply subject and admits its team (rate,
// searches in flight) and queues it; one of Config.MaxInFlight workers
// takes it from the queue (admission: round-robin between teams, a heavy
// team's searches held to their turns) and answers it (serve). The
// search endpoint's figures for `nats micro stats` (internal/service) are
// counted there, from a request's arrival to its answer.

// serviceDescription is the search service's description in `nats micro
// info`.
const serviceDescription = "Quarry search API: JSON SearchRequest in, SearchResponse out"

// startService serves the search endpoint (handled by receive) as the
// service subject.ServiceName.
func (b *Broker) startService() (*service.Service, error) {
	b.served = &service.Endpoint{Name: "search", Subject: subject.SearchPrefix + ".*",
		Metadata: map[string]string{"format": "application/json"}, Handler: b.receive}
	return service.Start(b.nc, service.Config{Name: subject.ServiceName, ID: b.id, Version: api.Version, Description: serviceDescription,
		QueueGroup: b.cfg.QueueGroup, Logger: b.cfg.Logger}, b.served)
}

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
		b.served.Done(j.arrived, nil)
		return
	}
	var team *admission.Team
	if j.known {
		if !b.replies.AllowTeam(msg.Subject, msg.Reply, def.TeamOf()) {
			b.metrics.refused(j.index)
			b.served.Done(j.arrived, nil)
			return
		}
		var err error
		if j.admitted, err = b.admit.Admit(def.TeamOf(), j.arrived); err != nil {
			b.metrics.refused(j.index)
			b.refuse(j, err)
			return
		}
		team = j.admitted
	} else {
		team = b.admit.Team(lookupTeam)
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
	b.served.Done(j.arrived, b.respondError(j.msg.Reply, err))
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
	defer func() { b.served.Done(j.arrived, failed) }()
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
