package meta

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// followHeartbeat is how often the server tells an idle follower's
// consumer it is there; after two missed the consumer is made again.
const followHeartbeat = time.Second

// Follow watches every key of kv for a role that follows the bucket as long
// as it runs. Like kv.WatchAll, it delivers the current value of every key
// (none with updatesOnly), then a nil entry (not with updatesOnly), then
// every change in order, until ctx is done or Stop. Unlike it, it does not
// stall after a NATS outage: a KeyValue watch is an ordered push consumer
// that the client makes again only after two missed 5 s heartbeats, so for
// 10 to 20 s after the NATS server restarts, or after the cluster member
// holding the consumer goes down, a role would not see a new index, a
// deleted one or a new snapshot. Follow reads with an ordered pull
// consumer (Ordered) that is made again, at the next revision, as soon as
// the connection is back or heartbeats (every second) stop, without
// nats.go's 10 s wait when the meta leader is lost.
func (s *Store) Follow(ctx context.Context, kv jetstream.KeyValue, updatesOnly bool) (jetstream.KeyWatcher, error) {
	bucket := kv.Bucket()
	stream := "KV_" + bucket
	prefix := "$KV." + bucket + "."
	cfg := OrderedConfig{FilterSubjects: []string{prefix + ">"}, DeliverPolicy: jetstream.DeliverLastPerSubjectPolicy, Heartbeat: followHeartbeat}
	if updatesOnly {
		// From the next revision, explicitly: a consumer made again
		// before any update keeps that start rather than "new from now",
		// which would miss the updates of an outage.
		st, err := s.JS.Stream(ctx, stream)
		if err != nil {
			return nil, fmt.Errorf("follow %s: %w", bucket, err)
		}
		cfg.DeliverPolicy, cfg.OptStartSeq = jetstream.DeliverByStartSequencePolicy, st.CachedInfo().State.LastSeq+1
	}
	ctx, cancel := context.WithCancel(ctx)
	f := &follower{updates: make(chan jetstream.KeyValueEntry, 256), cancel: cancel}
	initial := !updatesOnly // the current values are still to come
	ord, info, err := NewOrdered(ctx, s.JS, stream, cfg, func(m jetstream.Msg) {
		md, err := m.Metadata()
		if err != nil {
			return
		}
		e := &entry{bucket: bucket, key: strings.TrimPrefix(m.Subject(), prefix), value: m.Data(),
			revision: md.Sequence.Stream, created: md.Timestamp, delta: md.NumPending, op: operation(m.Headers())}
		f.mu.Lock()
		defer f.mu.Unlock()
		if f.closed || !f.send(ctx, e) {
			return
		}
		if initial && md.NumPending == 0 {
			initial = false
			f.send(ctx, nil)
		}
	})
	if err != nil {
		cancel()
		return nil, fmt.Errorf("follow %s: %w", bucket, err)
	}
	if initial && info.NumPending == 0 {
		f.updates <- nil
		initial = false
	}
	if err := ord.Start(); err != nil {
		cancel()
		return nil, fmt.Errorf("follow %s: %w", bucket, err)
	}
	go func() {
		<-ctx.Done()
		ord.Stop()
		f.mu.Lock()
		f.closed = true
		close(f.updates)
		f.mu.Unlock()
	}()
	return f, nil
}

// follower is a Follow in progress.
type follower struct {
	updates chan jetstream.KeyValueEntry
	cancel  context.CancelFunc
	mu      sync.Mutex // held while delivering; closed is set under it
	closed  bool
}

// send delivers e, or gives up when ctx is done.
func (f *follower) send(ctx context.Context, e jetstream.KeyValueEntry) bool {
	select {
	case f.updates <- e:
		return true
	case <-ctx.Done():
		return false
	}
}

// Updates delivers the entries; it is closed once the follower stops.
func (f *follower) Updates() <-chan jetstream.KeyValueEntry { return f.updates }

// Stop stops following.
func (f *follower) Stop() error {
	f.cancel()
	return nil
}

// operation reads a KeyValue entry's operation from its headers, as the
// jetstream package does.
func operation(h nats.Header) jetstream.KeyValueOp {
	switch h.Get("KV-Operation") {
	case "DEL":
		return jetstream.KeyValueDelete
	case "PURGE":
		return jetstream.KeyValuePurge
	}
	switch h.Get(jetstream.MarkerReasonHeader) {
	case "MaxAge", "Purge":
		return jetstream.KeyValuePurge
	case "Remove":
		return jetstream.KeyValueDelete
	}
	return jetstream.KeyValuePut
}

// entry is a KeyValue entry read by Follow.
type entry struct {
	bucket, key     string
	value           []byte
	revision, delta uint64
	created         time.Time
	op              jetstream.KeyValueOp
}

func (e *entry) Bucket() string                  { return e.bucket }
func (e *entry) Key() string                     { return e.key }
func (e *entry) Value() []byte                   { return e.value }
func (e *entry) Revision() uint64                { return e.revision }
func (e *entry) Created() time.Time              { return e.created }
func (e *entry) Delta() uint64                   { return e.delta }
func (e *entry) Operation() jetstream.KeyValueOp { return e.op }

// WatchEnded is what a role's loop over a Follow watch returns when its
// updates channel closes: nil when ctx has ended (the role is shutting
// down, which closed it), else an error naming the watch (role and what
// it followed, "broker: index"): the role no longer sees changes and
// must stop rather than serve stale ones.
func WatchEnded(ctx context.Context, what string) error {
	if ctx.Err() != nil {
		return nil
	}
	return fmt.Errorf("%s watch ended", what)
}
