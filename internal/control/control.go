// Package control serves the control API: what only a deployment's
// operator may do, on subjects no team's permissions name
// (quarry.v1.control.<operation>). Today that is creating an index:
// its bleve mapping checked and made canonical here, where bleve is
// linked, so the Go client that asks links none.
//
// Every process that runs a broker or an indexer serves it, on one queue
// group (subject.ControlQueue): an index can be created as soon as
// either role runs, whichever started first.
package control

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/quarrysearch/quarry/api"
	"github.com/quarrysearch/quarry/internal/indexmap"
	"github.com/quarrysearch/quarry/internal/meta"
	"github.com/quarrysearch/quarry/internal/requestid"
	"github.com/quarrysearch/quarry/internal/subject"
	"github.com/quarrysearch/quarry/internal/wire"
)

// RequestTimeout bounds one control request's work.
const RequestTimeout = 30 * time.Second

// readyFlushTimeout bounds the wait for the server to confirm the
// subscription before the service says it is ready.
const readyFlushTimeout = 10 * time.Second

// Service answers the control API's requests.
type Service struct {
	nc      *nats.Conn
	store   *meta.Store
	log     *slog.Logger
	replies subject.ReplyGuard
	ready   chan struct{}
}

// New makes the service; Run serves it.
func New(nc *nats.Conn, store *meta.Store, log *slog.Logger) *Service {
	if log == nil {
		log = slog.Default()
	}
	return &Service{nc: nc, store: store, log: log, replies: subject.ReplyGuard{Service: "control", Logger: log}, ready: make(chan struct{})}
}

// Ready is closed once the service takes requests.
func (s *Service) Ready() <-chan struct{} { return s.ready }

// Run serves requests until ctx is done; each runs in a goroutine of its
// own, which ends within RequestTimeout.
func (s *Service) Run(ctx context.Context) error {
	sub, err := s.nc.QueueSubscribe(subject.Control("index.create"), subject.ControlQueue, func(m *nats.Msg) {
		if s.replies.Allow(m.Subject, m.Reply) {
			go s.createIndex(ctx, m)
		}
	})
	if err != nil {
		return fmt.Errorf("control: subscribe: %w", err)
	}
	defer sub.Unsubscribe()
	// Ready once the server has the subscription: a client on another
	// connection that asks at once finds a responder.
	if err := s.nc.FlushTimeout(readyFlushTimeout); err != nil {
		return fmt.Errorf("control: subscribe: %w", err)
	}
	close(s.ready)
	<-ctx.Done()
	return nil
}

// createIndex answers index.create: the api.IndexDefinition in the body
// created, its stored form the answer.
func (s *Service) createIndex(ctx context.Context, m *nats.Msg) {
	ctx, cancel := context.WithTimeout(ctx, RequestTimeout)
	defer cancel()
	def, err := CreateIndex(ctx, s.store, m.Data)
	if err != nil {
		s.fail(m, err)
		return
	}
	body, err := json.Marshal(def)
	if err != nil {
		s.fail(m, err)
		return
	}
	if err := s.nc.Publish(m.Reply, body); err != nil {
		s.log.Warn("control answer failed", "subject", m.Subject, "err", err)
	}
}

// fail answers an error: an *api.Error as it is, any other as "internal
// error (request id …)", its detail logged under that id.
func (s *Service) fail(m *nats.Msg, err error) {
	var e *api.Error
	if !errors.As(err, &e) {
		id := m.Header.Get(requestid.Header)
		if !requestid.Valid(id) {
			id = requestid.New()
		}
		s.log.Error("internal error", "request_id", id, "subject", m.Subject, "err", err)
		e = api.Errorf(api.CodeInternal, "internal error (request id %s)", id)
	}
	if err := s.nc.PublishMsg(wire.ErrorReply(m.Reply, e)); err != nil {
		s.log.Warn("control answer failed", "subject", m.Subject, "err", err)
	}
}

// CreateIndex creates the index the JSON api.IndexDefinition data
// describes, its mapping made canonical (indexmap.Canonical), and returns
// it as stored.
func CreateIndex(ctx context.Context, st *meta.Store, data []byte) (api.IndexDefinition, error) {
	var def api.IndexDefinition
	if err := api.DecodeStrict("index definition", data, &def); err != nil {
		return def, err
	}
	m, err := indexmap.Canonical(def.Mapping)
	if err != nil {
		return def, err
	}
	def.Mapping = m
	return st.CreateIndex(ctx, def)
}
