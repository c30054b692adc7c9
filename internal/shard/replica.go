package shard

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/index/scorch"
	"github.com/blevesearch/bleve/v2/mapping"
	index "github.com/blevesearch/bleve_index_api"
	zap "github.com/blevesearch/zapx/v17"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/quarrysearch/quarry/api"
	"github.com/quarrysearch/quarry/api/strictjson"
	"github.com/quarrysearch/quarry/internal/indexmap"
	"github.com/quarrysearch/quarry/internal/meta"
	"github.com/quarrysearch/quarry/internal/snapshot"
	"github.com/quarrysearch/quarry/internal/subject"
)

// seqKey is the bleve internal key holding the last applied stream sequence.
var seqKey = []byte("quarry.seq")

// ErrClosed is returned by a replica used after Close.
var ErrClosed = errors.New("shard replica closed")

// ErrNotLent is returned by a lender of replicas (the indexer, to a
// searcher in the same process) that does not hold the replica asked for:
// the borrower opens its own.
var ErrNotLent = errors.New("replica not held by this process")

// Config describes a replica.
type Config struct {
	Index string
	Shard int
	// Shards is the index's shard count: a document on this shard's
	// subject whose id hashes to another shard (subject.ShardOf) was
	// written for another layout (an earlier index of this name with
	// other shards, by a client that had not learnt of the change yet,
	// or a writer that bypassed the client) and is skipped, counted as
	// rejected: applied, it would live beside the copy a later write puts
	// on the right shard. 0: not checked.
	Shards int
	// Mapping is the index's bleve mapping (see indexmap.Build).
	Mapping mapping.IndexMapping
	// Dir is the replica's index directory.
	Dir   string
	Store *meta.Store
	// MaxBatch caps the documents applied in one bleve batch (default
	// DefaultMaxBatch; 0 or negative: the default).
	MaxBatch int
	// MaxSnapshotBytes caps a downloaded snapshot's unpacked size
	// (default 16 GiB).
	MaxSnapshotBytes int64
	// Writes paces how updates are applied (WriteOptions).
	Writes WriteOptions
	// Documents are the index's document limits (its definition's; zero
	// fields: the defaults): a document over the per-document ones
	// (fields, depth), which a client would have refused, is skipped and
	// counted as rejected, never indexed (it may have reached the stream
	// before the limits, or from a writer that bypassed the client).
	Documents api.DocumentLimits
	// OnReject, when set, is called with the record of every message the
	// replica skips (rejected, above), once the batch that held it is
	// applied, from the loop applying the stream: it must not block
	// (meta.RejectRecorder.Record). The role that records rejections
	// sets it: the indexer, not the searchers, which apply the same
	// messages.
	OnReject func(api.RejectedDocument)
	// MaxPITs caps the points in time the replica holds at once
	// (OpenPIT; default DefaultMaxPITs, 0 or negative: the default).
	MaxPITs int
	// ColumnBytes bounds the bytes of the columns the replica keeps of
	// the fields searches ask for, in all its segments (columns.go: a
	// ranker's candidates' fields are read from them, not from stored
	// documents; default DefaultColumnBytes, 0: the default; negative:
	// none kept, every field loads from stored documents).
	ColumnBytes int64
	Logger      *slog.Logger
}

func (c Config) maxPITs() int {
	if c.MaxPITs <= 0 {
		return DefaultMaxPITs
	}
	return c.MaxPITs
}

// WriteOptions pace how a replica applies the stream's updates, so that
// searches do not pay for writes (docs/RATIONALE.md, "Writes and the
// search tail"). The zero value of every field is its default.
type WriteOptions struct {
	// ApplyInterval is the least time between the starts of two batches:
	// updates that arrive sooner wait, and go into the next batch
	// together. An update after a quiet spell is applied at once; under a
	// stream of updates each waits at most this long, and the index gets
	// at most one new segment per interval. Default 50ms; negative: apply
	// updates as they arrive.
	ApplyInterval time.Duration
	// PersistNap is how long scorch's persister waits before writing
	// fresh in-memory segments as files, so that the segments of many
	// batches are merged in memory and written as one file, not merged
	// again and again on disk (scorch's PersisterNapTimeMSec). Updates are
	// searchable before they are persisted, and the stream, not the index,
	// is what must be durable. Default 1s; negative: no nap (bleve's
	// default).
	PersistNap time.Duration
	// MergeFloor is the size, in documents, under which scorch's merge
	// planner counts a segment as this size (its FloorSegmentSize).
	// bleve's 2,000 makes a one-document segment look as large as a shard
	// of a few thousand documents, so the planner merges fresh small
	// segments into the shard's large ones, rewriting them for every few
	// updates; a small floor merges small segments with small ones.
	// Default 10; negative: bleve's default (2,000).
	MergeFloor int
	// SegmentsPerTier is how many segments of about one size the merge
	// planner lets a shard keep before it merges them (its
	// MaxSegmentsPerTier). A stream of updates persists a small segment
	// each nap; with bleve's 10, a shard gathers up to ten of each size
	// (tens, hundreds of documents) beside its large one, and every search
	// visits each: about 20 a shard after a few thousand updates, against
	// 5 with 2. Merging small segments is cheap. Default 2; negative:
	// bleve's default (10).
	SegmentsPerTier int
	// FreshSegments is the most in-memory segments (fresh batches not yet
	// persisted) a replica lets searches visit: a batch that would leave
	// more also indexes again, unchanged, the documents of the ones before
	// it, so that its one segment replaces them all (fold.go). Every search
	// looks each term up in every segment. Default 4; negative: no folding.
	FreshSegments int
}

// DefaultMaxBatch is Config.MaxBatch's default: the most documents
// applied to a replica in one bleve batch.
const DefaultMaxBatch = 512

// Defaults of WriteOptions.
const (
	DefaultApplyInterval   = 50 * time.Millisecond
	DefaultPersistNap      = time.Second
	DefaultMergeFloor      = 10
	DefaultSegmentsPerTier = 2
	DefaultFreshSegments   = 4
)

func (w *WriteOptions) defaults() {
	if w.ApplyInterval == 0 {
		w.ApplyInterval = DefaultApplyInterval
	}
	if w.PersistNap == 0 {
		w.PersistNap = DefaultPersistNap
	}
	if w.MergeFloor == 0 {
		w.MergeFloor = DefaultMergeFloor
	}
	if w.SegmentsPerTier == 0 {
		w.SegmentsPerTier = DefaultSegmentsPerTier
	}
	if w.FreshSegments == 0 {
		w.FreshSegments = DefaultFreshSegments
	}
}

func (c *Config) defaults() {
	c.Writes.defaults()
	if c.MaxBatch <= 0 {
		c.MaxBatch = DefaultMaxBatch
	}
	if c.MaxSnapshotBytes <= 0 {
		c.MaxSnapshotBytes = 16 << 30
	}
	if c.ColumnBytes == 0 {
		c.ColumnBytes = DefaultColumnBytes
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	c.Logger = c.Logger.With("index", c.Index, "shard", c.Shard)
	c.Documents = c.Documents.Effective()
}

// Replica is one shard's index following the document stream.
type Replica struct {
	cfg Config
	idx bleve.Index
	// generation: see Generation and SetGeneration.
	generation atomic.Uint64

	seq     atomic.Uint64 // last applied stream sequence
	applyMu sync.Mutex    // held while a batch is applied or the index copied
	// mappingRev is the revision of the last mapping marker applied
	// (applyMapping; only the goroutine that follows the stream uses it).
	mappingRev uint64
	// pending, indexed, deleted, rejected and reindexed: see Progress.
	pending, indexed, deleted, rejected atomic.Uint64
	batches, reindexed                  atomic.Uint64
	// fresh: the documents applied since the index last held no
	// in-memory segment (fold.go); the apply loop's alone.
	fresh freshDocs
	// updates remembers the sequences of the latest updates applied, to
	// tell how many a search's statistics miss.
	updates updateLog

	// pits are the points in time open on the replica (pit.go).
	pits pits

	// mu guards closed; searches hold it for reading so Close waits for
	// them.
	mu     sync.RWMutex
	closed bool

	cancel context.CancelFunc
	done   chan struct{}
	// warmCancel stops the background token counting (warmLoop), which
	// closes warmDone; it runs from Start.
	warmCancel context.CancelFunc
	warmCtx    context.Context
	warmDone   chan struct{}
	caughtUp   chan struct{}
	caughtOnce sync.Once
	startOnce  sync.Once
}

// scorchConfig: the index is rebuilt from snapshot + stream after a crash,
// so batches need not wait for fsync (unsafe_batch), which keeps update
// visibility in milliseconds. The persister's nap and the merge planner's
// floor come from w (see WriteOptions).
func scorchConfig(w WriteOptions) map[string]any {
	cfg := map[string]any{"unsafe_batch": true}
	if w.PersistNap > 0 {
		cfg["scorchPersisterOptions"] = map[string]any{"PersisterNapTimeMSec": int(w.PersistNap / time.Millisecond)}
	}
	plan := map[string]any{}
	if w.MergeFloor > 0 {
		plan["FloorSegmentSize"] = w.MergeFloor
	}
	if w.SegmentsPerTier > 0 {
		plan["MaxSegmentsPerTier"] = w.SegmentsPerTier
	}
	if len(plan) > 0 {
		cfg["scorchMergePlanOptions"] = plan
	}
	return cfg
}

// OpenLocal opens the index in cfg.Dir, or creates an empty one if there is
// none (or it cannot be opened).
func OpenLocal(cfg Config) (*Replica, error) {
	cfg.defaults()
	idx, err := bleve.OpenUsing(cfg.Dir, scorchConfig(cfg.Writes))
	if err != nil {
		if _, statErr := os.Stat(cfg.Dir); statErr == nil {
			cfg.Logger.Warn("local index unusable, starting empty", "dir", cfg.Dir, "err", err)
			if err := os.RemoveAll(cfg.Dir); err != nil {
				return nil, err
			}
		}
		idx, err = bleve.NewUsing(cfg.Dir, cfg.Mapping, IndexType, scorch.Name, scorchConfig(cfg.Writes))
		if err != nil {
			return nil, fmt.Errorf("create index %s/%d: %w", cfg.Index, cfg.Shard, err)
		}
	}
	return newReplica(cfg, idx, 0)
}

// OpenSnapshot downloads snap from the object store into cfg.Dir (which
// must not exist), verifies its digest and opens it. On a digest mismatch
// it returns an error wrapping snapshot.ErrDigestMismatch and leaves
// nothing behind.
func OpenSnapshot(ctx context.Context, cfg Config, generation uint64, snap meta.ShardSnapshot) (*Replica, error) {
	cfg.defaults()
	obj, err := cfg.Store.Segments.Get(ctx, snap.Object)
	if err != nil {
		return nil, fmt.Errorf("download snapshot %s: %w", snap.Object, err)
	}
	defer obj.Close()
	if err := snapshot.Unpack(obj, cfg.Dir, snap.Digest, cfg.MaxSnapshotBytes); err != nil {
		return nil, fmt.Errorf("snapshot %s: %w", snap.Object, err)
	}
	idx, err := bleve.OpenUsing(cfg.Dir, scorchConfig(cfg.Writes))
	if err != nil {
		os.RemoveAll(cfg.Dir)
		return nil, fmt.Errorf("open snapshot %s: %w", snap.Object, err)
	}
	r, err := newReplica(cfg, idx, generation)
	if err != nil {
		return nil, err
	}
	if got := r.Seq(); got != snap.Seq {
		r.Destroy()
		return nil, fmt.Errorf("snapshot %s holds sequence %d, manifest says %d", snap.Object, got, snap.Seq)
	}
	return r, nil
}

func newReplica(cfg Config, idx bleve.Index, generation uint64) (*Replica, error) {
	r := &Replica{cfg: cfg, idx: idx, done: make(chan struct{}), caughtUp: make(chan struct{})}
	r.generation.Store(generation)
	if cols := columnsOf(idx); cols != nil {
		cols.maxBytes.Store(cfg.ColumnBytes)
	}
	r.warmCtx, r.warmCancel = context.WithCancel(context.Background())
	v, err := idx.GetInternal(seqKey)
	if err != nil {
		idx.Close()
		return nil, fmt.Errorf("read sequence of %s/%d: %w", cfg.Index, cfg.Shard, err)
	}
	if len(v) == 8 {
		r.seq.Store(binary.BigEndian.Uint64(v))
	}
	if v, err = idx.GetInternal(mappingRevKey); err != nil {
		idx.Close()
		return nil, fmt.Errorf("read mapping revision of %s/%d: %w", cfg.Index, cfg.Shard, err)
	}
	if len(v) == 8 {
		r.mappingRev = binary.BigEndian.Uint64(v)
	}
	r.updates.init(r.seq.Load())
	return r, nil
}

// Seq is the last stream sequence applied.
func (r *Replica) Seq() uint64 { return r.seq.Load() }

// Generation is the snapshot generation the replica was opened from (0 if
// it was not opened from a snapshot), or the last one published from it
// (SetGeneration).
func (r *Replica) Generation() uint64 { return r.generation.Load() }

// SetGeneration records that a snapshot of the replica was published as
// generation g: an indexer's replica that a searcher serves reports the
// generation it now holds at least.
func (r *Replica) SetGeneration(g uint64) { r.generation.Store(g) }

// Progress is what a replica has applied of its shard's stream.
type Progress struct {
	// Seq is the last stream sequence applied.
	Seq uint64
	// Pending is how many messages of the shard the stream held after the
	// last one applied, when that one was delivered: the replay lag, as of
	// the last batch.
	Pending uint64
	// Indexed, Deleted and Rejected count the messages applied since the
	// replica was opened: documents indexed, deletes, and messages skipped
	// (a bad subject, malformed JSON, a document bleve refused).
	Indexed, Deleted, Rejected uint64
	// Batches counts the bleve batches applied since the replica was
	// opened (each a new segment; see WriteOptions.ApplyInterval).
	Batches uint64
	// Reindexed counts the documents indexed again, unchanged, to fold
	// fresh segments into one (WriteOptions.FreshSegments).
	Reindexed uint64
}

// Progress reports what the replica has applied of the stream.
func (r *Replica) Progress() Progress {
	return Progress{Seq: r.seq.Load(), Pending: r.pending.Load(),
		Indexed: r.indexed.Load(), Deleted: r.deleted.Load(), Rejected: r.rejected.Load(), Batches: r.batches.Load(),
		Reindexed: r.reindexed.Load()}
}

// DocCount is the number of documents in the replica.
func (r *Replica) DocCount() (uint64, error) {
	idx, err := r.acquire()
	if err != nil {
		return 0, err
	}
	defer r.mu.RUnlock()
	return idx.DocCount()
}

// Segments returns how many segments the replica's index is made of now:
// persisted files and fresh ones still in memory (scorch's root). Every
// search visits each.
func (r *Replica) Segments() (files, memory uint64) {
	sc, err := r.scorch()
	if err != nil {
		return 0, 0
	}
	return rootSegments(sc)
}

// Start follows the stream from Seq()+1 until Close. It returns once the
// consumer exists; use WaitCaughtUp to wait for the replay.
func (r *Replica) Start(ctx context.Context) error {
	err := ErrClosed
	r.startOnce.Do(func() { err = r.start(ctx) })
	return err
}

// followHeartbeat is how often the server tells an idle replica's
// consumer it is there; after two missed the consumer is made again, at
// the next sequence. (The client's default for an ordered consumer, 5 s,
// left a replica 10 s behind when the NATS cluster member holding its
// consumer went down: TestFaultNATSClusterLosesNode; meta.Ordered makes
// it again without nats.go's 10 s wait when the meta leader is lost.)
const followHeartbeat = time.Second

func (r *Replica) start(ctx context.Context) error {
	cc := meta.OrderedConfig{
		FilterSubjects: []string{subject.DocsOfShard(r.cfg.Index, r.cfg.Shard)},
		DeliverPolicy:  jetstream.DeliverAllPolicy,
		Heartbeat:      followHeartbeat,
		MaxMessages:    r.cfg.MaxBatch,
	}
	if s := r.Seq(); s > 0 {
		cc.DeliverPolicy = jetstream.DeliverByStartSequencePolicy
		cc.OptStartSeq = s + 1
	}
	msgs := make(chan jetstream.Msg, r.cfg.MaxBatch)
	runCtx, cancel := context.WithCancel(context.Background())
	ord, info, err := meta.NewOrdered(ctx, r.cfg.Store.JS, subject.DocsStream, cc, func(m jetstream.Msg) {
		select {
		case msgs <- m:
		case <-runCtx.Done():
		}
	})
	if err != nil {
		cancel()
		return fmt.Errorf("follow %s/%d: %w", r.cfg.Index, r.cfg.Shard, err)
	}
	r.pending.Store(info.NumPending)
	if info.NumPending == 0 {
		r.markCaughtUp()
	}
	r.cancel = cancel
	if err := ord.Start(); err != nil {
		cancel()
		return fmt.Errorf("follow %s/%d: %w", r.cfg.Index, r.cfg.Shard, err)
	}
	go func() {
		defer close(r.done)
		defer ord.Stop()
		r.applyLoop(runCtx, msgs)
	}()
	r.warmDone = make(chan struct{})
	go r.warmLoop(r.warmCtx)
	return nil
}

func (r *Replica) markCaughtUp() { r.caughtOnce.Do(func() { close(r.caughtUp) }) }

// WaitCaughtUp waits until the replica has, at some instant since Start,
// applied every message the stream held for its shard.
func (r *Replica) WaitCaughtUp(ctx context.Context) error {
	select {
	case <-r.caughtUp:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("replay %s/%d: %w (at sequence %d)", r.cfg.Index, r.cfg.Shard, ctx.Err(), r.Seq())
	}
}

// WaitSeq waits until the replica has applied stream sequence seq.
func (r *Replica) WaitSeq(ctx context.Context, seq uint64) error {
	t := time.NewTicker(time.Millisecond)
	defer t.Stop()
	for r.Seq() < seq {
		select {
		case <-t.C:
		case <-ctx.Done():
			return fmt.Errorf("wait for sequence %d on %s/%d (at %d): %w", seq, r.cfg.Index, r.cfg.Shard, r.Seq(), ctx.Err())
		}
	}
	return nil
}

func (r *Replica) applyLoop(ctx context.Context, msgs <-chan jetstream.Msg) {
	batch := make([]jetstream.Msg, 0, r.cfg.MaxBatch)
	var last time.Time // when the last batch started
	wait := time.NewTimer(0)
	defer wait.Stop()
	for {
		batch = batch[:0]
		select {
		case m := <-msgs:
			batch = append(batch, m)
		case <-ctx.Done():
			return
		}
		// Within ApplyInterval of the last batch, gather what arrives
		// until the interval is over (or the batch is full): one segment
		// for all of them.
		// (The interval is checked first: time.Since of the zero time
		// saturates, and a negative interval minus it would overflow.)
		if iv := r.cfg.Writes.ApplyInterval; iv > 0 && !last.IsZero() && time.Since(last) < iv {
			d := iv - time.Since(last)
			wait.Reset(d)
		gather:
			for len(batch) < r.cfg.MaxBatch {
				select {
				case m := <-msgs:
					batch = append(batch, m)
				case <-wait.C:
					break gather
				case <-ctx.Done():
					return
				}
			}
			if !wait.Stop() {
				select { // drained by the loop, or fired meanwhile
				case <-wait.C:
				default:
				}
			}
		}
		last = time.Now()
	drain:
		for len(batch) < r.cfg.MaxBatch {
			select {
			case m := <-msgs:
				batch = append(batch, m)
			default:
				break drain
			}
		}
		if err := r.apply(ctx, batch); err != nil {
			if ctx.Err() != nil {
				return
			}
			// The index is unusable (disk full, closed under us): stop
			// following rather than skip updates silently.
			r.cfg.Logger.Error("apply updates failed; replica stops following the stream", "err", err, "seq", r.Seq())
			return
		}
	}
}

// apply writes one batch of stream messages and the new sequence: the
// documents, in bleve batches between the mapping markers among them
// (applyMapping), which each apply at their point of the stream.
func (r *Replica) apply(ctx context.Context, msgs []jetstream.Msg) error {
	for len(msgs) > 0 {
		i := slices.IndexFunc(msgs, isMappingMarker)
		if i < 0 {
			return r.applyDocs(msgs)
		}
		if i > 0 {
			if err := r.applyDocs(msgs[:i]); err != nil {
				return err
			}
		}
		if err := r.applyMapping(ctx, msgs[i]); err != nil {
			return err
		}
		msgs = msgs[i+1:]
	}
	return nil
}

// isMappingMarker reports whether a stream message is a mapping marker
// (subject.MappingMarker), not a document.
func isMappingMarker(m jetstream.Msg) bool {
	return m.Headers().Get(subject.HeaderOp) == subject.OpMapping
}

// applyMapping applies a mapping marker: the index's mapping (the
// marker's body, canonical JSON) from this point of the stream on. Bleve
// reads a mapping only when it opens an index, so the replica writes it
// where bleve keeps it, with the marker's sequence, in one batch, and
// opens the index again: searches wait the moment that takes. A marker
// whose mapping the index has already (replayed, or after a snapshot
// taken since) only moves the sequence, and so does one of a revision
// (subject.HeaderMappingRevision) not above the last applied; one
// without a revision, or whose mapping does not build, is skipped and
// counted as rejected, as a document that cannot be applied is.
func (r *Replica) applyMapping(ctx context.Context, m jetstream.Msg) error {
	md, err := m.Metadata()
	if err != nil {
		return fmt.Errorf("message metadata: %w", err)
	}
	seq := md.Sequence.Stream
	rev, err := strconv.ParseUint(m.Headers().Get(subject.HeaderMappingRevision), 10, 64)
	if err != nil || rev == 0 {
		err = fmt.Errorf("no revision (%s): %v", subject.HeaderMappingRevision, err)
	}
	changed, later := false, err == nil && rev > r.mappingRev
	if later {
		var next *mapping.IndexMappingImpl
		if next, err = indexmap.Build(m.Data()); err == nil {
			var cur, want []byte
			if cur, err = json.Marshal(r.idx.Mapping()); err == nil {
				want, err = json.Marshal(next)
				changed = !bytes.Equal(cur, want)
			}
		}
	}
	var rejected uint64
	if err != nil {
		r.cfg.Logger.Warn("skipping a mapping marker that cannot be applied", "seq", seq, "err", err)
		rejected, changed, later = 1, false, false
	}
	b := r.idx.NewBatch()
	var seqBuf [8]byte
	binary.BigEndian.PutUint64(seqBuf[:], seq)
	b.SetInternal(seqKey, seqBuf[:])
	if later {
		var revBuf [8]byte
		binary.BigEndian.PutUint64(revBuf[:], rev)
		b.SetInternal(mappingRevKey, revBuf[:])
	}
	persisted := make(chan error, 1)
	if changed {
		b.SetInternal(mappingKey, m.Data())
		b.SetPersistedCallback(func(err error) { persisted <- err })
	}
	r.applyMu.Lock()
	err = r.idx.Batch(b)
	r.applyMu.Unlock()
	if err != nil {
		return fmt.Errorf("apply the mapping marker at %d: %w", seq, err)
	}
	if changed {
		// Scorch keeps recent batches in memory until its persister
		// writes them, and closing the index drops those: wait until the
		// batch (and every one before it) is on disk, searches still
		// served. No batch applies meanwhile: this goroutine applies them.
		// (A persister that keeps failing, a full disk, never calls back:
		// the replica's end stops the wait.)
		select {
		case err := <-persisted:
			if err != nil {
				return fmt.Errorf("persist the mapping marker at %d: %w", seq, err)
			}
		case <-ctx.Done():
			return ctx.Err()
		}
		if err := r.reopen(); err != nil {
			return fmt.Errorf("apply the mapping marker at %d: %w", seq, err)
		}
		r.cfg.Logger.Info("mapping changed", "index", r.cfg.Index, "shard", r.cfg.Shard, "seq", seq)
	}
	if later {
		r.mappingRev = rev
	}
	r.updates.add([]uint64{seq})
	r.pending.Store(md.NumPending)
	r.rejected.Add(rejected)
	r.seq.Store(seq)
	if md.NumPending == 0 {
		r.markCaughtUp()
	}
	return nil
}

// mappingRevKey holds the revision of the last mapping marker applied
// (subject.HeaderMappingRevision).
var mappingRevKey = []byte("quarry.mapping.rev")

// mappingKey is where bleve keeps an index's mapping (its internal
// "_mapping", read when the index is opened).
var mappingKey = []byte("_mapping")

// reopen closes the index and opens it again (to read a new mapping),
// while searches and snapshots' copies wait: r.mu before applyMu, the
// order a copy takes them in.
func (r *Replica) reopen() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return ErrClosed
	}
	r.applyMu.Lock()
	defer r.applyMu.Unlock()
	r.closePITs(false) // they read the index closed here
	if err := r.idx.Close(); err != nil {
		return fmt.Errorf("close the index: %w", err)
	}
	idx, err := bleve.OpenUsing(r.cfg.Dir, scorchConfig(r.cfg.Writes))
	if err != nil {
		return fmt.Errorf("open the index again: %w", err)
	}
	r.idx = idx
	return nil
}

// applyDocs writes a batch of document messages and the new sequence.
func (r *Replica) applyDocs(msgs []jetstream.Msg) error {
	b := r.idx.NewBatch()
	var last, pending uint64
	var indexed, deleted, rejected uint64
	seqs := make([]uint64, 0, len(msgs))
	// ops are the batch's documents in order, for the fresh documents
	// (WriteOptions.FreshSegments).
	var ops []freshOp
	folding := r.cfg.Writes.FreshSegments > 0
	// rejects are the records of the messages skipped, for OnReject.
	var rejects []api.RejectedDocument
	reject := func(md *jetstream.MsgMetadata, id string, err error) {
		rejected++
		if r.cfg.OnReject != nil {
			rejects = append(rejects, api.RejectedDocument{Index: r.cfg.Index, Shard: r.cfg.Shard, Seq: md.Sequence.Stream,
				ID: id, Reason: err.Error(), Time: md.Timestamp.UTC()})
		}
	}
	for _, m := range msgs {
		md, err := m.Metadata()
		if err != nil {
			return fmt.Errorf("message metadata: %w", err)
		}
		last, pending = md.Sequence.Stream, md.NumPending
		seqs = append(seqs, last)
		_, _, id, err := subject.ParseDoc(m.Subject())
		if err != nil {
			r.cfg.Logger.Warn("skipping message on a bad subject", "subject", m.Subject(), "seq", last, "err", err)
			reject(md, "", err)
			continue
		}
		if m.Headers().Get(subject.HeaderOp) == subject.OpDelete {
			b.Delete(id)
			deleted++
			if folding {
				ops = append(ops, freshOp{id: id})
			}
			continue
		}
		if n := r.cfg.Shards; n > 0 && subject.ShardOf(id, n) != r.cfg.Shard {
			err := fmt.Errorf("on shard %d, but its id belongs on shard %d of the index's %d: written for another layout of the index (an earlier index of this name with other shards?)", r.cfg.Shard, subject.ShardOf(id, n), n)
			r.cfg.Logger.Warn("skipping a document on the wrong shard", "id", id, "seq", last, "err", err)
			reject(md, id, err)
			continue
		}
		if err := r.addDoc(b, id, m.Data()); err != nil {
			// Skipped for good: the stream keeps it, and a replay skips
			// it again, so it can neither stop nor loop the replica.
			r.cfg.Logger.Warn("skipping a document that cannot be applied", "id", id, "seq", last, "err", err)
			reject(md, id, err)
			continue
		}
		indexed++
		if folding {
			ops = append(ops, freshOp{id: id, data: m.Data()})
		}
	}
	var folded int
	if folding {
		folded = r.fold(b, ops)
	}
	var seqBuf [8]byte
	binary.BigEndian.PutUint64(seqBuf[:], last)
	b.SetInternal(seqKey, seqBuf[:])
	r.applyMu.Lock()
	err := r.idx.Batch(b)
	if err == nil {
		r.updates.add(seqs)
		// The counts first: whoever sees the sequence (WaitSeq) sees
		// the batch counted.
		r.pending.Store(pending)
		r.batches.Add(1)
		r.reindexed.Add(uint64(folded))
		r.indexed.Add(indexed)
		r.deleted.Add(deleted)
		r.rejected.Add(rejected)
		r.seq.Store(last)
	}
	r.applyMu.Unlock()
	if err != nil {
		return fmt.Errorf("apply batch up to %d: %w", last, err)
	}
	for _, o := range ops {
		if o.data == nil {
			r.fresh.deleted(o.id)
		} else {
			r.fresh.indexed(o.id, o.data)
		}
	}
	for _, d := range rejects {
		r.cfg.OnReject(d)
	}
	if pending == 0 {
		r.markCaughtUp()
	}
	return nil
}

// addDoc adds one document to a batch, if it is within the index's
// per-document limits, decodes and is indexable; a panic in bleve's
// mapping of it is its error, not the process's end.
func (r *Replica) addDoc(b *bleve.Batch, id string, data []byte) (err error) {
	lim := r.cfg.Documents
	if _, err := strictjson.CheckDocument(data, "", lim.MaxDepth, lim.MaxFields); err != nil {
		// The client's words (api.DocumentID), naming the limit.
		var se *strictjson.Error
		switch {
		case errors.As(err, &se) && se.TooManyFields():
			return fmt.Errorf("more than %d fields (distinct field paths; field %d starts at byte %d), over the index's limit of %d (documents.max_fields)", se.Limit(), se.Limit()+1, se.Offset, lim.MaxFields)
		case errors.As(err, &se) && se.TooDeep() && se.Limit() == lim.MaxDepth:
			return fmt.Errorf("nests deeper than %d levels (at byte %d), over the index's limit of %d (documents.max_depth)", se.Limit(), se.Offset, lim.MaxDepth)
		}
		return fmt.Errorf("malformed: %w", err)
	}
	var doc map[string]any
	if err := json.Unmarshal(data, &doc); err != nil {
		return fmt.Errorf("malformed: %w", err)
	}
	for _, f := range api.ReservedFields {
		if _, ok := doc[f]; ok {
			return api.ReservedFieldError(id, f)
		}
	}
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("unindexable: bleve panicked: %v", p)
		}
	}()
	if err := r.index(b, id, doc); err != nil {
		return fmt.Errorf("unindexable: %w", err)
	}
	return nil
}

// index adds doc (decoded JSON) to b as id: mapped by the index's
// mapping, with the keyword sub-fields of its dynamic strings
// (mapDocument), as bleve's Batch.Index would otherwise.
func (r *Replica) index(b *bleve.Batch, id string, doc map[string]any) error {
	mapped, err := mapDocument(r.idx.Mapping(), id, doc)
	if err != nil {
		return err
	}
	if e, ok := r.idx.(index.EventIndex); ok { // as Batch.Index does
		e.FireIndexEvent()
	}
	return b.IndexAdvanced(mapped)
}

// acquire returns the index for a search, or ErrClosed; release with
// r.mu.RUnlock.
func (r *Replica) acquire() (bleve.Index, error) {
	r.mu.RLock()
	if r.closed {
		r.mu.RUnlock()
		return nil, ErrClosed
	}
	return r.idx, nil
}

// Close stops following the stream, waits for in-flight searches and
// closes the index. The directory stays.
func (r *Replica) Close() error {
	r.warmCancel() // a count in progress gives up, releasing the replica
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return nil
	}
	r.closed = true
	r.mu.Unlock()
	r.startOnce.Do(func() {}) // a replica closed before Start never starts
	if r.cancel != nil {
		r.cancel()
		<-r.done
	}
	if r.warmDone != nil {
		<-r.warmDone
	}
	r.closePITs(true)
	r.applyMu.Lock()
	defer r.applyMu.Unlock()
	return r.idx.Close()
}

// Destroy closes the replica and removes its directory.
func (r *Replica) Destroy() error {
	err := r.Close()
	if rmErr := os.RemoveAll(r.cfg.Dir); err == nil {
		err = rmErr
	}
	return err
}

// segmentBufferBump replaces zap's NewSegmentBufferNumResultsBump (100):
// zap sizes a new segment's buffer for the batch's documents plus this
// many more, at the last segment's bytes a document, and the segment
// keeps that buffer until it is merged. bleve's 100 made every one-document
// segment (an update applied alone) allocate and zero a buffer a hundred
// documents long: 1.7 MB a batch where 0.5 MB is used
// (BenchmarkApplyBatch). With 0 a batch larger than the last grows its
// buffer once.
const segmentBufferBump = 0

func init() { zap.NewSegmentBufferNumResultsBump = segmentBufferBump }
