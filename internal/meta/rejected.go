package meta

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/quarrysearch/quarry/api"
	"github.com/quarrysearch/quarry/internal/subject"
)

// RejectedStreamConfig bounds the records of rejected documents: the last
// api.MaxRejectedDocuments of each index (one subject per index), 64 MiB
// in all, the oldest dropped first. A record published again within the
// duplicate window (an indexer that replays the stream, a second indexer)
// is stored once: its message id names the index, its creation, the shard
// and the stream sequence. Readers drop the duplicates stored outside the
// window (RejectedDocuments).
var RejectedStreamConfig = jetstream.StreamConfig{Name: subject.RejectedStream,
	Description: "Quarry documents the stream acknowledged that the indexer could not apply, the last ones per index",
	Subjects:    []string{subject.RejectedPrefix + ".>"}, MaxMsgsPerSubject: api.MaxRejectedDocuments,
	MaxBytes: 64 << 20, MaxMsgSize: 16 << 10, Discard: jetstream.DiscardOld, Duplicates: 2 * time.Minute}

// RejectedDocuments returns the kept records of index's rejected
// documents, one per shard and stream sequence, in stream order (the
// newest last), at most the last limit of them (0: all). An unknown index
// is an api.ErrNotFound error. Records left of an index deleted and
// created again under its name are not the new one's, and are left out.
func (s *Store) RejectedDocuments(ctx context.Context, index string, limit int) ([]api.RejectedDocument, error) {
	def, err := s.Index(ctx, index)
	if err != nil {
		return nil, err
	}
	created := strconv.FormatInt(def.Created.UnixMilli(), 10)
	var recs []api.RejectedDocument
	_, err = s.readSubject(ctx, subject.RejectedStream, subject.Rejected(index), 0, func(m jetstream.Msg) error {
		if c := m.Headers().Get(subject.HeaderIndexCreated); c != "" && c != created {
			return nil
		}
		var d api.RejectedDocument
		if json.Unmarshal(m.Data(), &d) != nil {
			return nil // not a record: skip it
		}
		recs = append(recs, d)
		return nil
	})
	if errors.Is(err, errStalled) {
		err = nil // what was kept then
	}
	if err != nil {
		return nil, fmt.Errorf("read the rejected documents of %s: %w", index, err)
	}
	return dedupeRejected(recs, limit), nil
}

// dedupeRejected keeps the first record of each shard and stream
// sequence, sorts them by sequence and keeps the last limit (0: all).
func dedupeRejected(recs []api.RejectedDocument, limit int) []api.RejectedDocument {
	type key struct {
		shard int
		seq   uint64
	}
	seen := make(map[key]bool, len(recs))
	out := make([]api.RejectedDocument, 0, len(recs))
	for _, d := range recs {
		k := key{d.Shard, d.Seq}
		if seen[k] {
			continue
		}
		seen[k] = true
		out = append(out, d)
	}
	slices.SortStableFunc(out, func(a, b api.RejectedDocument) int {
		return cmp.Or(cmp.Compare(a.Seq, b.Seq), cmp.Compare(a.Shard, b.Shard))
	})
	if limit > 0 && len(out) > limit {
		out = out[len(out)-limit:]
	}
	return out
}

// Bounds of a RejectRecorder.
const (
	// RejectQueue is how many records a RejectRecorder holds waiting to
	// be published; one more is dropped, and counted.
	RejectQueue = 1024
	// rejectPublishTimeout bounds the publication of one record.
	rejectPublishTimeout = 5 * time.Second
	// rejectFlushTimeout bounds how long Close spends publishing what is
	// queued.
	rejectFlushTimeout = 2 * time.Second
	// rejectLogEvery is the least time between two logs of failed
	// publications.
	rejectLogEvery = 10 * time.Second
)

// RejectRecorder publishes the records of rejected documents to
// RejectedStream from a goroutine of its own, so that the loop applying
// the stream never waits for it: Record queues a record (RejectQueue at
// most: one more is dropped) and returns at once. A record that cannot be
// published is logged and counted, never retried: the replica's own log
// and counter have it too.
type RejectRecorder struct {
	js  jetstream.JetStream
	log *slog.Logger

	queue     chan rejectRecord
	stop      chan struct{}
	done      chan struct{}
	closed    atomic.Bool
	startOnce sync.Once
	closeOnce sync.Once

	recorded, dropped, failed atomic.Uint64
}

type rejectRecord struct {
	created time.Time // the index's
	doc     api.RejectedDocument
}

// NewRejectRecorder makes a recorder publishing to s's stream of rejected
// documents. Start it, and Close it when done.
func (s *Store) NewRejectRecorder(log *slog.Logger) *RejectRecorder {
	if log == nil {
		log = slog.Default()
	}
	return &RejectRecorder{js: s.JS, log: log, queue: make(chan rejectRecord, RejectQueue),
		stop: make(chan struct{}), done: make(chan struct{})}
}

// Record queues the record of a document of the index created at created
// that its shard rejected. It never blocks: with RejectQueue records
// waiting, or once the recorder is closed, the record is dropped (counted
// in Counts).
func (r *RejectRecorder) Record(created time.Time, d api.RejectedDocument) {
	if r.closed.Load() {
		r.dropped.Add(1)
		return
	}
	select {
	case r.queue <- rejectRecord{created: created, doc: d}:
	default:
		r.dropped.Add(1)
	}
}

// Counts says how many records were published, dropped (the queue was
// full, or the recorder closed) and failed (publication refused or timed
// out) since the recorder was made.
func (r *RejectRecorder) Counts() (recorded, dropped, failed uint64) {
	return r.recorded.Load(), r.dropped.Load(), r.failed.Load()
}

// Start starts publishing queued records.
func (r *RejectRecorder) Start() {
	r.startOnce.Do(func() { go r.run() })
}

// Close stops taking records, publishes those queued for at most
// rejectFlushTimeout (the rest are dropped; one publication under way
// may take rejectPublishTimeout) and returns once the recorder's
// goroutine has ended.
func (r *RejectRecorder) Close() {
	r.closeOnce.Do(func() {
		r.closed.Store(true)
		close(r.stop)
		// A recorder closed before Start never starts.
		r.startOnce.Do(func() {
			r.dropped.Add(uint64(len(r.queue)))
			close(r.done)
		})
	})
	<-r.done
}

func (r *RejectRecorder) run() {
	defer close(r.done)
	var lastLog time.Time
	publish := func(ctx context.Context, rec rejectRecord) {
		err := r.publish(ctx, rec)
		if err == nil {
			r.recorded.Add(1)
			return
		}
		n := r.failed.Add(1)
		if time.Since(lastLog) >= rejectLogEvery {
			lastLog = time.Now()
			r.log.Warn("cannot record a rejected document", "index", rec.doc.Index, "shard", rec.doc.Shard, "seq", rec.doc.Seq, "id", rec.doc.ID, "failed_total", n, "err", err)
		}
	}
	for {
		select {
		case rec := <-r.queue:
			ctx, cancel := context.WithTimeout(context.Background(), rejectPublishTimeout)
			publish(ctx, rec)
			cancel()
		case <-r.stop:
			ctx, cancel := context.WithTimeout(context.Background(), rejectFlushTimeout)
			defer cancel()
			for {
				select {
				case rec := <-r.queue:
					if ctx.Err() != nil {
						r.dropped.Add(1)
						continue
					}
					publish(ctx, rec)
				default:
					return
				}
			}
		}
	}
}

// publish stores one record, with the message id
// <index>.<created unix ms>.<shard>.<seq>.
func (r *RejectRecorder) publish(ctx context.Context, rec rejectRecord) error {
	d := rec.doc
	d.ID, d.Reason = cut(d.ID, api.MaxRejectedReason), cut(d.Reason, api.MaxRejectedReason)
	body, err := json.Marshal(d)
	if err != nil {
		return err
	}
	created := strconv.FormatInt(rec.created.UnixMilli(), 10)
	msg := nats.NewMsg(subject.Rejected(d.Index))
	msg.Header.Set(subject.HeaderIndexCreated, created)
	msg.Data = body
	id := d.Index + "." + created + "." + strconv.Itoa(d.Shard) + "." + strconv.FormatUint(d.Seq, 10)
	_, err = r.js.PublishMsg(ctx, msg, jetstream.WithMsgID(id), jetstream.WithExpectStream(subject.RejectedStream))
	return err
}

// cut shortens s to at most n bytes, ending in "…", at a rune boundary.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	const ell = "…"
	end := n - len(ell)
	for end > 0 && !utf8.RuneStart(s[end]) {
		end--
	}
	return s[:end] + ell
}
