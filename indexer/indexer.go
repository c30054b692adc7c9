package indexer

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nuid"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/quarrysearch/quarry/api"
	"github.com/quarrysearch/quarry/internal/indexmap"
	"github.com/quarrysearch/quarry/internal/meta"
	"github.com/quarrysearch/quarry/internal/shard"
	"github.com/quarrysearch/quarry/internal/subject"
)

// DefaultApplyInterval is the indexer's least time between two batches
// applied to a shard (Config.Writes.ApplyInterval): its replicas serve no
// search, so fewer, larger batches (fewer segments to build and merge)
// cost only a snapshot's wait for the last updates, at most this long.
const DefaultApplyInterval = time.Second

// Config configures an indexer. The zero value of every field but DataDir
// is a documented default.
type Config struct {
	// DataDir holds the indexer's shard replicas. Required.
	DataDir string
	// Index limits the indexer to one index; empty serves every index.
	Index string
	// SnapshotInterval is how often an index that changed is snapshotted
	// (default 1m; negative disables periodic snapshots).
	SnapshotInterval time.Duration
	// MaxBatch caps documents per bleve batch (default
	// shard.DefaultMaxBatch, 512).
	MaxBatch int
	// Writes paces how the indexer's replicas apply updates: in `quarry
	// serve` they share the cores with the searchers
	// (shard.WriteOptions; the zero value of a field is its default, but
	// ApplyInterval's is DefaultApplyInterval: nobody searches the
	// indexer's replicas, so it gathers updates for longer).
	Writes shard.WriteOptions
	// Serving is what a searcher that serves the indexer's replicas
	// (quarry serve, node.Config's lending) holds them to: its
	// --max-points-in-time and --column-bytes (shard.Config's MaxPITs and
	// ColumnBytes; zero: the shard's defaults). Nobody searches an
	// indexer's replicas otherwise.
	Serving struct {
		MaxPITs     int
		ColumnBytes int64
	}
	// SnapshotTimeout bounds one snapshot of one index (default 5m).
	SnapshotTimeout time.Duration
	// NoSnapshotMerge publishes the segments of an explicit snapshot (the
	// one a bulk load ends with, `quarry index snapshot`) as they are. By
	// default each replica's segments are merged into one first
	// (shard.Replica.Compact, within half of SnapshotTimeout; if it does
	// not finish the snapshot goes on unmerged): every search visits every
	// segment, so searches of a freshly loaded index are cheaper
	// (docs/performance.md, "One segment a shard after a bulk load").
	// Periodic snapshots never merge: scorch's own merging keeps up with
	// updates.
	NoSnapshotMerge bool
	// Registerer gets the indexer's Prometheus metrics (nil: a registry
	// of its own, which nothing serves).
	Registerer prometheus.Registerer
	// Logger gets the indexer's logs, with role=indexer (default
	// slog.Default()).
	Logger *slog.Logger
}

// Defaults are the values EnsureDefaults gives a Config's zero fields, and
// the defaults the CLI's flags show. Writes' fields other than
// ApplyInterval are left to the shard's own defaults (shard.WriteOptions).
var Defaults = Config{
	SnapshotInterval: time.Minute, SnapshotTimeout: 5 * time.Minute, MaxBatch: shard.DefaultMaxBatch,
	Writes: shard.WriteOptions{ApplyInterval: DefaultApplyInterval},
}

// EnsureDefaults gives every zero field its default (Defaults; Logger:
// slog.Default()). It changes nothing else, and running it twice changes
// nothing more.
func (c *Config) EnsureDefaults() {
	d := &Defaults
	c.SnapshotInterval = cmp.Or(c.SnapshotInterval, d.SnapshotInterval)
	c.SnapshotTimeout = cmp.Or(c.SnapshotTimeout, d.SnapshotTimeout)
	c.MaxBatch = cmp.Or(c.MaxBatch, d.MaxBatch)
	c.Writes.ApplyInterval = cmp.Or(c.Writes.ApplyInterval, d.Writes.ApplyInterval)
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
}

// Validate reports every setting that is wrong, each naming the setting
// and its value (run EnsureDefaults first: zero values are wrong here). It
// changes nothing.
func (c *Config) Validate() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf("indexer: "+format, args...)) }
	if c.DataDir == "" {
		bad("data dir is required")
	}
	if c.Index != "" {
		if err := subject.ValidIndexName(c.Index); err != nil {
			bad("index: %w", err)
		}
	}
	if c.SnapshotTimeout <= 0 {
		bad("snapshot timeout must be above 0, got %s", c.SnapshotTimeout)
	}
	if c.MaxBatch <= 0 {
		bad("max batch must be 1 or more, got %d", c.MaxBatch)
	}
	return errors.Join(errs...)
}

// SnapshotRequest asks the indexer for a new generation of an index that
// includes every update up to stream sequence MinSeq.
type SnapshotRequest struct {
	MinSeq uint64 `json:"min_seq"`
}

// SnapshotReply is the answer to a SnapshotRequest.
type SnapshotReply struct {
	Manifest meta.Manifest `json:"manifest"`
	Error    string        `json:"error,omitempty"`
}

// Indexer follows the document stream and publishes snapshots.
type Indexer struct {
	nc      *nats.Conn
	store   *meta.Store
	cfg     Config
	metrics *metrics

	mu      sync.Mutex
	indexes map[string]*indexState
	failed  map[string]error // indexes that could not be loaded, and why
	ready   chan struct{}
	id      string // in micro discovery
	// rejects records the documents the replicas skip
	// (api.RejectedDocument): the indexer is where they are recorded,
	// once, not the searchers, which apply the same messages.
	rejects *meta.RejectRecorder
}

type indexState struct {
	def      api.IndexDefinition
	dir      string
	replicas []*shard.Replica
	snapMu   sync.Mutex // one snapshot of this index at a time
}

// New makes an indexer. Call Run to start it.
func New(nc *nats.Conn, store *meta.Store, cfg Config) (*Indexer, error) {
	cfg.EnsureDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg.Logger = cfg.Logger.With("role", "indexer")
	ix := &Indexer{nc: nc, store: store, cfg: cfg, indexes: map[string]*indexState{}, failed: map[string]error{}, ready: make(chan struct{}), id: nuid.Next(),
		rejects: store.NewRejectRecorder(cfg.Logger)}
	var err error
	if ix.metrics, err = newMetrics(ix, cfg.Registerer); err != nil {
		return nil, err
	}
	return ix, nil
}

// Ready is closed once every index that existed at start-up is loaded.
func (ix *Indexer) Ready() <-chan struct{} { return ix.ready }

// workPrefix starts the name of a snapshot's working directory in DataDir:
// the dot, which no index name holds, keeps it apart from replicas.
const workPrefix = ".snapshot-"

// Run serves until ctx is done, then closes every replica.
func (ix *Indexer) Run(ctx context.Context) error {
	ix.rejects.Start()
	defer ix.rejects.Close() // after the replicas: what their last batches rejected
	defer ix.closeAll()
	// A process killed while building a snapshot left its working
	// directory (a copy of the index) behind.
	if left, _ := filepath.Glob(filepath.Join(ix.cfg.DataDir, workPrefix+"*")); len(left) > 0 {
		for _, dir := range left {
			os.RemoveAll(dir)
		}
		ix.cfg.Logger.Info("removed the working directories of interrupted snapshots", "count", len(left))
	}
	w, err := ix.store.Follow(ctx, ix.store.Indexes, false)
	if err != nil {
		return fmt.Errorf("indexer: watch indexes: %w", err)
	}
	defer w.Stop()
	var tick <-chan time.Time
	if ix.cfg.SnapshotInterval > 0 {
		t := time.NewTicker(ix.cfg.SnapshotInterval)
		defer t.Stop()
		tick = t.C
	}
	target := "*"
	if ix.cfg.Index != "" {
		target = ix.cfg.Index
	}
	sub, err := ix.nc.QueueSubscribe(subject.Snapshot(target), "quarry-indexer", func(msg *nats.Msg) { go ix.handleSnapshot(ctx, msg) })
	if err != nil {
		return fmt.Errorf("indexer: subscribe: %w", err)
	}
	defer sub.Unsubscribe()
	svc, err := ix.serveStatus()
	if err != nil {
		return fmt.Errorf("indexer: %w", err)
	}
	defer svc.Stop()
	readyOnce := sync.OnceFunc(func() { close(ix.ready) })
	for {
		select {
		case <-ctx.Done():
			return nil
		case e, ok := <-w.Updates():
			if !ok {
				return meta.WatchEnded(ctx, "indexer: index")
			}
			if e == nil { // initial values delivered
				readyOnce()
				continue
			}
			ix.onIndexChange(ctx, e)
		case <-tick:
			ix.snapshotChanged(ctx)
		}
	}
}

func (ix *Indexer) onIndexChange(ctx context.Context, e jetstream.KeyValueEntry) {
	name := e.Key()
	if ix.cfg.Index != "" && name != ix.cfg.Index {
		return
	}
	ix.mu.Lock()
	old := ix.indexes[name]
	ix.mu.Unlock()
	ix.mu.Lock()
	delete(ix.failed, name)
	ix.mu.Unlock()
	if e.Operation() != jetstream.KeyValuePut {
		if old != nil {
			ix.drop(name, old, true)
		}
		return
	}
	def, err := meta.DecodeIndex(e.Value())
	if err != nil {
		ix.cfg.Logger.Error("skipping index with a bad definition", "index", name, "err", err)
		return
	}
	if old != nil {
		if old.def.Created.Equal(def.Created) {
			return
		}
		ix.drop(name, old, true) // deleted and created again
	}
	st, err := ix.load(ctx, def)
	if err != nil && ctx.Err() != nil {
		return // shutting down
	}
	if err != nil {
		ix.cfg.Logger.Error("cannot load index", "index", name, "err", err)
		ix.mu.Lock()
		ix.failed[name] = err
		ix.mu.Unlock()
		return
	}
	ix.mu.Lock()
	ix.indexes[name] = st
	ix.mu.Unlock()
}

func (ix *Indexer) load(ctx context.Context, def api.IndexDefinition) (*indexState, error) {
	m, err := indexmap.Build(def.Mapping)
	if err != nil {
		return nil, err
	}
	st := &indexState{def: def, dir: filepath.Join(ix.cfg.DataDir, def.Name+"-"+strconv.FormatInt(def.Created.UnixMilli(), 10))}
	manifest, _, err := ix.store.Manifest(ctx, def.Name)
	if err != nil {
		return nil, err
	}
	for i := range def.Shards {
		cfg := shard.Config{Index: def.Name, Shard: i, Shards: def.Shards, Mapping: m, Dir: filepath.Join(st.dir, strconv.Itoa(i)),
			Store: ix.store, MaxBatch: ix.cfg.MaxBatch, Writes: ix.cfg.Writes, MaxPITs: ix.cfg.Serving.MaxPITs, ColumnBytes: ix.cfg.Serving.ColumnBytes, Documents: def.Documents, Logger: ix.cfg.Logger,
			OnReject: func(d api.RejectedDocument) { ix.rejects.Record(def.Created, d) }}
		r, err := ix.openReplica(ctx, cfg, manifest)
		if err == nil {
			err = r.Start(ctx)
		}
		if err == nil && r.Generation() == 0 {
			// A local copy was made by this indexer, which published
			// the manifest from it: once it has replayed the stream's
			// tail (a searcher it is lent to waits for that) it holds
			// the current generation's updates and more.
			r.SetGeneration(manifest.Generation)
		}
		if err != nil {
			for _, r := range st.replicas {
				r.Close()
			}
			return nil, fmt.Errorf("load shard %d of %q: %w", i, def.Name, err)
		}
		st.replicas = append(st.replicas, r)
	}
	ix.cfg.Logger.Info("index loaded", "index", def.Name, "shards", def.Shards, "generation", manifest.Generation)
	return st, nil
}

// openReplica reuses the local copy if there is one, else starts from the
// current snapshot, else from empty (a full replay of the stream).
func (ix *Indexer) openReplica(ctx context.Context, cfg shard.Config, m meta.Manifest) (*shard.Replica, error) {
	if _, err := os.Stat(cfg.Dir); err == nil {
		return shard.OpenLocal(cfg)
	}
	for _, s := range m.Shards {
		if s.Shard != cfg.Shard {
			continue
		}
		if err := os.MkdirAll(filepath.Dir(cfg.Dir), 0o755); err != nil {
			return nil, err
		}
		r, err := shard.OpenSnapshot(ctx, cfg, m.Generation, s)
		if err == nil {
			return r, nil
		}
		ix.cfg.Logger.Warn("snapshot unusable, replaying the stream from the start", "index", cfg.Index, "shard", cfg.Shard, "err", err)
	}
	return shard.OpenLocal(cfg)
}

func (ix *Indexer) drop(name string, st *indexState, remove bool) {
	ix.mu.Lock()
	if ix.indexes[name] == st {
		delete(ix.indexes, name)
	}
	ix.mu.Unlock()
	st.snapMu.Lock()
	defer st.snapMu.Unlock()
	for _, r := range st.replicas {
		r.Close()
	}
	if remove {
		os.RemoveAll(st.dir)
		ix.metrics.drop(name)
		ix.cfg.Logger.Info("index removed", "index", name)
	}
}

func (ix *Indexer) closeAll() {
	ix.mu.Lock()
	all := ix.indexes
	ix.indexes = map[string]*indexState{}
	ix.mu.Unlock()
	for name, st := range all {
		ix.drop(name, st, false)
	}
}

func (ix *Indexer) handleSnapshot(ctx context.Context, msg *nats.Msg) {
	var req SnapshotRequest
	var reply SnapshotReply
	name := strings.TrimSuffix(strings.TrimPrefix(msg.Subject, subject.IndexerPrefix+"."), ".snapshot")
	if err := json.Unmarshal(msg.Data, &req); err != nil {
		reply.Error = fmt.Sprintf("bad snapshot request: %v", err)
	} else {
		ctx, cancel := context.WithTimeout(ctx, ix.cfg.SnapshotTimeout)
		reply.Manifest, err = ix.SnapshotIndex(ctx, name, req.MinSeq)
		cancel()
		if err != nil {
			reply.Error = err.Error()
		}
	}
	b, _ := json.Marshal(reply)
	msg.Respond(b)
}

// snapshotChanged snapshots every index whose replicas moved past the
// current manifest.
func (ix *Indexer) snapshotChanged(ctx context.Context) {
	ix.mu.Lock()
	var all []*indexState
	for _, st := range ix.indexes {
		all = append(all, st)
	}
	ix.mu.Unlock()
	for _, st := range all {
		sctx, cancel := context.WithTimeout(ctx, ix.cfg.SnapshotTimeout)
		if _, err := ix.Snapshot(sctx, st, 0, false); err != nil {
			ix.cfg.Logger.Error("periodic snapshot failed", "index", st.def.Name, "err", err)
		}
		cancel()
	}
}

// Snapshot publishes a new generation of an index once each replica holds
// every update up to minSeq. Unless force is set, an index unchanged since
// its current manifest is left alone and the current manifest returned.
func (ix *Indexer) Snapshot(ctx context.Context, st *indexState, minSeq uint64, force bool) (_ meta.Manifest, err error) {
	st.snapMu.Lock()
	defer st.snapMu.Unlock()
	name := st.def.Name
	defer func() {
		if err != nil {
			ix.metrics.failed(name)
		}
	}()
	if err := ix.waitApplied(ctx, st, minSeq); err != nil {
		return meta.Manifest{}, err
	}
	cur, rev, err := ix.store.Manifest(ctx, name)
	if err != nil {
		return cur, err
	}
	if !force && !changed(cur, st.replicas) {
		return cur, nil
	}
	start := time.Now()
	if force && !ix.cfg.NoSnapshotMerge {
		ix.compact(ctx, st)
	}
	next := meta.Manifest{Index: name, Generation: cur.Generation + 1, Created: time.Now().UTC()}
	tmp, err := os.MkdirTemp(ix.cfg.DataDir, workPrefix)
	if err != nil {
		return cur, err
	}
	defer os.RemoveAll(tmp)
	var bytes int64
	for _, r := range st.replicas {
		s, err := r.Publish(ctx, tmp, next.Generation)
		if err != nil {
			return cur, fmt.Errorf("snapshot %q: %w", name, err)
		}
		bytes += s.Size
		next.Shards = append(next.Shards, s)
	}
	if err := ix.store.PutManifest(ctx, next, rev); err != nil {
		return cur, err
	}
	for _, r := range st.replicas {
		r.SetGeneration(next.Generation) // a searcher serving it reports this generation
	}
	if next.Generation > 1 {
		// Keep the previous generation: a searcher may still be downloading it.
		if err := ix.store.PruneSnapshots(ctx, name, next.Generation-1); err != nil {
			ix.cfg.Logger.Warn("pruning old snapshots failed", "index", name, "err", err)
		}
	}
	took := time.Since(start)
	ix.metrics.published(name, next.Generation, bytes, took)
	ix.cfg.Logger.Info("snapshot published", "index", name, "generation", next.Generation,
		"bytes", bytes, "took", took.Round(time.Millisecond))
	return next, nil
}

// compact merges each replica's segments into one, the
// replicas in parallel, within half of what is left of ctx's time; one
// that does not finish is logged and published as it is.
func (ix *Indexer) compact(ctx context.Context, st *indexState) {
	start := time.Now()
	bound := ix.cfg.SnapshotTimeout / 2
	if deadline, ok := ctx.Deadline(); ok {
		bound = time.Until(deadline) / 2
	}
	mctx, cancel := context.WithTimeout(ctx, bound)
	defer cancel()
	var wg sync.WaitGroup
	errs := make([]error, len(st.replicas))
	for i, r := range st.replicas {
		wg.Go(func() { errs[i] = r.Compact(mctx) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		ix.cfg.Logger.Warn("segments not merged before the snapshot; publishing them as they are", "index", st.def.Name, "err", err)
		return
	}
	ix.cfg.Logger.Info("segments merged before the snapshot", "index", st.def.Name, "shards", len(st.replicas), "took", time.Since(start).Round(time.Millisecond))
}

func changed(m meta.Manifest, replicas []*shard.Replica) bool {
	if len(m.Shards) != len(replicas) {
		return true
	}
	for i, r := range replicas {
		if m.Shards[i].Seq != r.Seq() {
			return true
		}
	}
	return false
}

// waitApplied waits until every replica has applied the last message of
// its shard with a sequence <= minSeq.
func (ix *Indexer) waitApplied(ctx context.Context, st *indexState, minSeq uint64) error {
	if minSeq == 0 {
		for _, r := range st.replicas {
			if err := r.WaitCaughtUp(ctx); err != nil {
				return err
			}
		}
		return nil
	}
	for i, r := range st.replicas {
		last, err := ix.store.ShardLastSeq(ctx, st.def.Name, i)
		if err != nil {
			return err
		}
		if last == 0 {
			continue
		}
		if err := r.WaitSeq(ctx, min(last, minSeq)); err != nil {
			return err
		}
	}
	return nil
}

// lendPoll is how often Lend looks again for an index still loading.
const lendPoll = 10 * time.Millisecond

// Lend returns the indexer's replica of shard i of index def, once the
// indexer has loaded that index, for a searcher in the same process to
// serve (searcher.Config.Replicas): the process then indexes every update
// once, not once for the indexer and again for the searcher. The replica
// stays the indexer's: the borrower neither closes nor destroys it, and
// stops using it before the indexer stops (node stops searchers first).
//
// Lend returns an error wrapping shard.ErrNotLent when this indexer does
// not hold that index (it serves another one, holds a newer incarnation,
// or could not load it); the borrower then opens a replica of its own.
// It waits while the index is loading, until ctx is done.
func (ix *Indexer) Lend(ctx context.Context, def api.IndexDefinition, i int) (*shard.Replica, error) {
	if ix.cfg.Index != "" && def.Name != ix.cfg.Index {
		return nil, fmt.Errorf("index %q: this indexer serves only %q: %w", def.Name, ix.cfg.Index, shard.ErrNotLent)
	}
	t := time.NewTicker(lendPoll)
	defer t.Stop()
	for {
		ix.mu.Lock()
		st, failed := ix.indexes[def.Name], ix.failed[def.Name]
		ix.mu.Unlock()
		switch {
		case st != nil && st.def.Created.Equal(def.Created):
			if i < 0 || i >= len(st.replicas) {
				return nil, fmt.Errorf("index %q has no shard %d: %w", def.Name, i, shard.ErrNotLent)
			}
			return st.replicas[i], nil
		case st != nil && st.def.Created.After(def.Created):
			return nil, fmt.Errorf("index %q was created again: %w", def.Name, shard.ErrNotLent)
		case failed != nil:
			return nil, fmt.Errorf("indexer could not load index %q (%v): %w", def.Name, failed, shard.ErrNotLent)
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("wait for the indexer to load index %q: %w", def.Name, ctx.Err())
		case <-t.C:
		}
	}
}

// SnapshotIndex publishes a new generation of an index once it holds every
// update up to minSeq. An index created a moment ago may still be loading:
// SnapshotIndex waits for it while the index exists.
func (ix *Indexer) SnapshotIndex(ctx context.Context, name string, minSeq uint64) (meta.Manifest, error) {
	for {
		ix.mu.Lock()
		st, failed := ix.indexes[name], ix.failed[name]
		ix.mu.Unlock()
		if st != nil {
			return ix.Snapshot(ctx, st, minSeq, true)
		}
		if failed != nil {
			return meta.Manifest{}, fmt.Errorf("indexer could not load index %q: %w", name, failed)
		}
		if _, err := ix.store.Index(ctx, name); err != nil {
			return meta.Manifest{}, err
		}
		select {
		case <-ctx.Done():
			return meta.Manifest{}, fmt.Errorf("index %q is not loaded by this indexer: %w", name, ctx.Err())
		case <-time.After(10 * time.Millisecond):
		}
	}
}
