// Package control serves the control API: what only a deployment's
// operator may do, on subjects no team's permissions name
// (quarry.v1.control.<operation>): creating an index and changing its
// mapping, the mapping checked and made canonical here, where bleve is
// linked, so the Go client that asks links none.
//
// Every process that runs a broker or an indexer serves it, on one queue
// group (subject.ControlQueue): an index can be created as soon as
// either role runs, whichever started first.
package control

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

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
	for op, serve := range map[string]func(context.Context, *meta.Store, []byte) (api.IndexDefinition, error){
		"index.create": CreateIndex, "index.mapping": ChangeMapping,
	} {
		sub, err := s.nc.QueueSubscribe(subject.Control(op), subject.ControlQueue, func(m *nats.Msg) {
			if s.replies.Allow(m.Subject, m.Reply) {
				go s.answer(ctx, m, serve)
			}
		})
		if err != nil {
			return fmt.Errorf("control: subscribe: %w", err)
		}
		defer sub.Unsubscribe()
	}
	// Ready once the server has the subscription: a client on another
	// connection that asks at once finds a responder.
	if err := s.nc.FlushTimeout(readyFlushTimeout); err != nil {
		return fmt.Errorf("control: subscribe: %w", err)
	}
	close(s.ready)
	<-ctx.Done()
	return nil
}

// answer answers a request with the index definition serve returns
// (index.create, index.mapping).
func (s *Service) answer(ctx context.Context, m *nats.Msg, serve func(context.Context, *meta.Store, []byte) (api.IndexDefinition, error)) {
	ctx, cancel := context.WithTimeout(ctx, RequestTimeout)
	defer cancel()
	def, err := serve(ctx, s.store, m.Data)
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

// ChangeMapping changes an index's mapping in place (the JSON
// api.MappingChange in data) where that is safe, and returns the
// definition as stored. The new mapping may only add (indexmap.Additions:
// fields, types, analysis components; anything else is refused, pointing
// to reindex) and only fields no document of the index was sent with
// (the index's field paths, meta.Store.IndexFields: documents indexed
// already keep how the old mapping indexed them; refused with
// api.ErrConflict). The definition changes first (a compare-and-set: of
// two concurrent changes one is refused), then a marker on every shard
// of the stream carries the mapping and the definition's new revision,
// where every replica changes its mapping (shard.Replica): documents
// before it indexed the old way, those after it the new way. A field
// that turns up in a document between the check and the markers undoes
// the change (the old mapping, at a later revision) and refuses it: the
// door records a document's new fields before it publishes the document,
// so one published before the markers is seen by the check after them.
// A mapping the index has already publishes the markers of its revision
// that are missing, so a change whose markers failed part way is
// finished by asking again (publishMarkers).
func ChangeMapping(ctx context.Context, st *meta.Store, data []byte) (api.IndexDefinition, error) {
	var ch api.MappingChange
	if err := api.DecodeStrict("mapping change", data, &ch); err != nil {
		return api.IndexDefinition{}, err
	}
	if m := bytes.TrimSpace(ch.Mapping); len(m) == 0 || bytes.Equal(m, []byte("null")) {
		return api.IndexDefinition{}, api.BadRequest("mapping change: give the whole new mapping (\"mapping\")")
	}
	def, rev, err := st.IndexRevision(ctx, ch.Index)
	if err != nil {
		return def, err
	}
	next, err := indexmap.Canonical(ch.Mapping)
	if err != nil {
		return def, err
	}
	if bytes.Equal(next, def.Mapping) {
		return def, publishMarkers(ctx, st, def, rev)
	}
	added, err := indexmap.Additions(def.Mapping, next)
	if err != nil {
		return def, err
	}
	if err := checkUnheld(ctx, st, def, added); err != nil {
		return def, err
	}
	old := def.Mapping
	def, nextRev, err := st.SetMapping(ctx, def, rev, next)
	if err != nil {
		return def, err
	}
	if err := publishMarkers(ctx, st, def, nextRev); err != nil {
		return def, err
	}
	markersPublished()
	if held := checkUnheld(ctx, st, def, added); held != nil {
		// A document with a new field was written while the mapping
		// changed: it may precede the markers, indexed the old way.
		undone, undoneRev, err := st.SetMapping(ctx, def, nextRev, old)
		if err == nil {
			err = publishMarkers(ctx, st, undone, undoneRev)
		}
		if err != nil {
			return def, fmt.Errorf("undo the mapping change of index %q (%v): %w", def.Name, held, err)
		}
		return undone, held
	}
	return def, nil
}

// markersPublished is called between a mapping change's markers and its
// second check of the index's fields: a test's way into that moment.
var markersPublished = func() {}

// checkUnheld refuses a mapping change that adds a field (one of added,
// field paths) a document of the index was sent with.
func checkUnheld(ctx context.Context, st *meta.Store, def api.IndexDefinition, added []string) error {
	if len(added) == 0 {
		return nil
	}
	have, _, err := st.IndexFields(ctx, def)
	if err != nil {
		return err
	}
	for _, path := range added {
		if slices.Contains(have, api.FieldHash(path)) {
			return api.Errorf(api.CodeConflict, "mapping of index %q: documents of the index already hold field %q, indexed by the mapping they were written under; a mapping of it applies only to a new index: reindex into one with the new mapping (quarry index reindex %s NEW --mapping FILE) and switch an alias to it", def.Name, path, def.Name)
		}
	}
	return nil
}

// publishMarkers publishes def's mapping, at definition revision rev, as
// a marker on every shard of its stream (subject.MappingMarker), each
// acknowledged. A revision's marker has one subject a shard and is
// published only while that subject has none (the stream keeps one
// message a subject, and a marker moved later would apply later on a
// replica replaying the stream): asking again finishes a change whose
// markers did not all go out, and adds nothing to the stream otherwise,
// however often it is asked.
func publishMarkers(ctx context.Context, st *meta.Store, def api.IndexDefinition, rev uint64) error {
	update := strconv.FormatUint(rev, 10)
	for shard := range def.Shards {
		m := nats.NewMsg(subject.MappingMarker(def.Name, shard, update))
		m.Header.Set(subject.HeaderOp, subject.OpMapping)
		m.Header.Set(subject.HeaderMappingRevision, update)
		m.Data = def.Mapping
		_, err := st.JS.PublishMsg(ctx, m, jetstream.WithExpectLastSequencePerSubject(0))
		if err != nil && !meta.IsWrongRevision(err) { // published already
			return fmt.Errorf("publish the mapping of index %q to shard %d: %w", def.Name, shard, err)
		}
	}
	return nil
}
