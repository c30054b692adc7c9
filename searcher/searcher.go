package searcher

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nuid"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/quarrysearch/quarry/api"
	"github.com/quarrysearch/quarry/internal/admission"
	"github.com/quarrysearch/quarry/internal/backoff"
	"github.com/quarrysearch/quarry/internal/indexmap"
	"github.com/quarrysearch/quarry/internal/meta"
	"github.com/quarrysearch/quarry/internal/shard"
	"github.com/quarrysearch/quarry/internal/subject"
	"github.com/quarrysearch/quarry/internal/wire"
)

// Config configures a searcher. The zero value of every field but DataDir
// is a documented default.
type Config struct {
	// DataDir holds downloaded snapshots, under DataDir/shards. Required.
	// A searcher starts from the published snapshot each time, so what
	// DataDir/shards held is removed at start (nothing else in DataDir is
	// touched).
	DataDir string
	// Index limits the searcher to one index; empty serves every index.
	Index string
	// Shards limits the searcher to these shards (with Index); nil serves
	// every shard.
	Shards []int
	// Workers is how many shard requests run at once (default 2×GOMAXPROCS).
	Workers int
	// DrainTimeout bounds a shutdown: the searcher leaves its queue
	// groups first (a drain: requests already delivered are still taken),
	// then waits this long at most for queued and running requests before
	// closing its replicas (default 10s).
	DrainTimeout time.Duration
	// SlowRequest logs, at warn level with the request id, every shard
	// request that takes longer, its queue wait included (0: 250ms;
	// negative: never).
	SlowRequest time.Duration
	// QueueLen is how many requests may wait for a worker before new ones
	// are refused as overloaded (default 1024). Waiting requests are
	// served round-robin between teams (see HeavyAfter).
	QueueLen int
	// HeavyAfter marks a team heavy when the mean service time of its
	// recent shard requests is over it (default 10ms; negative: never).
	// While another team is active, a heavy team runs at most
	// HeavyWorkers requests at once, so that its expensive queries leave
	// cores for everyone else's.
	HeavyAfter time.Duration
	// HeavyWorkers is how many requests of a heavy team run at once
	// while other teams are active (default GOMAXPROCS/2, at least 1).
	HeavyWorkers int
	// HeavyPause is how long, in all, one running request of a heavy team
	// waits at its checkpoints (shard.Checkpoint: every few hits it
	// collects or documents it loads) while requests of teams that are not
	// heavy are queued or running, each wait ending when they are done or
	// after 2ms (default 250ms; negative: never waits). On a machine with
	// few cores it keeps a light search from sharing one with a heavy one.
	HeavyPause time.Duration
	// HeavyLinger is how long after a light request is done a heavy one
	// still waits at its checkpoints, within HeavyPause (default 2ms;
	// negative: not at all). A light team's next request usually follows
	// its last one's reply within a millisecond or two; without the
	// linger the heavy request takes the core back in that gap and the
	// next light request shares it (docs/performance.md).
	HeavyLinger time.Duration
	// MaxBatch caps documents per bleve batch when replaying (default
	// shard.DefaultMaxBatch, 512).
	MaxBatch int
	// MaxPITs caps the points in time (search cursors' snapshots) each
	// replica holds at once (default shard.DefaultMaxPITs, 64): each
	// keeps the segments merged away since it opened.
	MaxPITs int
	// ColumnBytes bounds the bytes of the columns each replica keeps of
	// the short fields searches ask for (a ranker's candidates' fields
	// are read from them, not from stored documents; default
	// shard.DefaultColumnBytes, 64 MiB; negative: none kept).
	ColumnBytes int64
	// Writes paces how replicas apply updates so that searches do not pay
	// for them: the least time between batches, the persister's nap and
	// the merge planner's floor (shard.WriteOptions; the zero value is
	// its defaults).
	Writes shard.WriteOptions
	// CatchUpTimeout bounds the replay of a new replica before it serves
	// (default 10m).
	CatchUpTimeout time.Duration
	// Replicas, when set, lends the searcher the replicas another role of
	// the same process keeps up to date: node sets it to the indexer when
	// both run in one process, so that every update is indexed once, not
	// once by the indexer and again by the searcher. A lent replica is
	// served as it is (no snapshot is downloaded, no generation swapped
	// in: it is the one snapshots are made from) and never closed by the
	// searcher. Shards the lender does not hold (shard.ErrNotLent) get a
	// replica of the searcher's own, as without it.
	Replicas Lender
	// CompressThreshold is the response size above which replies are zstd
	// compressed (default wire.CompressThreshold).
	CompressThreshold int
	// MaxReplyBytes bounds one shard reply as the search builds it, before
	// it is compressed: its hits' ids and sort keys, stored fields and
	// explanations, counted as each hit is added (wire.ShardRequest's
	// MaxReplyBytes). Past it the search stops and answers
	// response_too_large. It is at most what one reply carries on the
	// searcher's NATS connection (the server's max_payload less 4 KiB,
	// wire.ReplyRoom), which is also its default (0).
	MaxReplyBytes int
	// FaultDelay and FaultEvery inject slowness, for fault tests and
	// demonstrations of hedging: every FaultEvery-th shard request (1: all)
	// waits FaultDelay before it is searched. FaultDelay zero: off;
	// FaultEvery's default is 1.
	FaultDelay time.Duration
	FaultEvery int
	// FaultStats delays the statistics phase (and a dictionary's
	// statistics) instead of the search phase (a shard slow to give its
	// term statistics).
	FaultStats bool
	// FaultPanic makes every FaultEvery-th shard search panic while it
	// holds its shard (fault injection, for tests): the searcher answers
	// that request with an internal error and serves on.
	FaultPanic bool
	// Registerer gets the searcher's Prometheus metrics (nil: a registry
	// of its own, which nothing serves).
	Registerer prometheus.Registerer
	// Logger gets the searcher's logs, with role=searcher (default
	// slog.Default()).
	Logger *slog.Logger
}

// Lender lends a searcher replicas kept by another role of its process
// (Config.Replicas; *indexer.Indexer is one).
type Lender interface {
	// Lend returns the replica of shard i of index def once it is
	// loaded; an error wrapping shard.ErrNotLent if the lender does not
	// hold it.
	Lend(ctx context.Context, def api.IndexDefinition, i int) (*shard.Replica, error)
}

// Defaults are the values EnsureDefaults gives a Config's zero fields, and
// the defaults the CLI's flags show. Workers' and HeavyWorkers' defaults
// depend on the machine (2×GOMAXPROCS; GOMAXPROCS/2, at least 1) and are 0
// here. Writes is left to the shard's own defaults (shard.WriteOptions).
var Defaults = Config{
	QueueLen: 1024, HeavyAfter: 10 * time.Millisecond, HeavyPause: 250 * time.Millisecond,
	HeavyLinger:  2 * time.Millisecond,
	DrainTimeout: 10 * time.Second, SlowRequest: 250 * time.Millisecond, CatchUpTimeout: 10 * time.Minute,
	MaxBatch: shard.DefaultMaxBatch, MaxPITs: shard.DefaultMaxPITs, ColumnBytes: shard.DefaultColumnBytes, CompressThreshold: wire.CompressThreshold, FaultEvery: 1,
}

// EnsureDefaults gives every zero field its default (Defaults; Workers:
// 2×GOMAXPROCS; HeavyWorkers: GOMAXPROCS/2, at least 1; Logger:
// slog.Default()). It changes nothing else, and running it twice changes
// nothing more.
func (c *Config) EnsureDefaults() {
	d := &Defaults
	c.Workers = cmp.Or(c.Workers, 2*runtime.GOMAXPROCS(0))
	c.HeavyWorkers = cmp.Or(c.HeavyWorkers, max(1, runtime.GOMAXPROCS(0)/2))
	c.QueueLen = cmp.Or(c.QueueLen, d.QueueLen)
	c.HeavyAfter = cmp.Or(c.HeavyAfter, d.HeavyAfter)
	c.HeavyPause = cmp.Or(c.HeavyPause, d.HeavyPause)
	c.HeavyLinger = cmp.Or(c.HeavyLinger, d.HeavyLinger)
	c.DrainTimeout = cmp.Or(c.DrainTimeout, d.DrainTimeout)
	c.SlowRequest = cmp.Or(c.SlowRequest, d.SlowRequest)
	c.CatchUpTimeout = cmp.Or(c.CatchUpTimeout, d.CatchUpTimeout)
	c.MaxBatch = cmp.Or(c.MaxBatch, d.MaxBatch)
	c.MaxPITs = cmp.Or(c.MaxPITs, d.MaxPITs)
	c.ColumnBytes = cmp.Or(c.ColumnBytes, d.ColumnBytes)
	c.CompressThreshold = cmp.Or(c.CompressThreshold, d.CompressThreshold)
	c.FaultEvery = cmp.Or(c.FaultEvery, d.FaultEvery)
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
}

// Validate reports every setting that is wrong, each naming the setting
// and its value (run EnsureDefaults first: zero values are wrong here). It
// changes nothing.
func (c *Config) Validate() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf("searcher: "+format, args...)) }
	if c.DataDir == "" {
		bad("data dir is required")
	}
	if c.Index != "" {
		if err := subject.ValidIndexName(c.Index); err != nil {
			bad("index: %w", err)
		}
	}
	if len(c.Shards) > 0 && c.Index == "" {
		bad("shards %v need an index", c.Shards)
	}
	for _, s := range c.Shards {
		if s < 0 || s >= api.MaxShards {
			bad("shards: bad shard %d (0-%d)", s, api.MaxShards-1)
		}
	}
	for _, n := range []struct {
		name string
		v    int
	}{{"workers", c.Workers}, {"heavy workers", c.HeavyWorkers}, {"queue len", c.QueueLen}, {"max batch", c.MaxBatch}, {"max points in time", c.MaxPITs}, {"fault every", c.FaultEvery}} {
		if n.v <= 0 {
			bad("%s must be 1 or more, got %d", n.name, n.v)
		}
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"drain timeout", c.DrainTimeout}, {"catch-up timeout", c.CatchUpTimeout}} {
		if d.v <= 0 {
			bad("%s must be above 0, got %s", d.name, d.v)
		}
	}
	if c.FaultDelay < 0 {
		bad("fault delay must be 0 or more, got %s", c.FaultDelay)
	}
	if c.MaxReplyBytes < 0 {
		bad("max reply bytes must be 0 (what one NATS reply carries) or more, got %d", c.MaxReplyBytes)
	}
	return errors.Join(errs...)
}

// Searcher serves shards.
type Searcher struct {
	nc *nats.Conn
	// replies drops requests whose reply subject is not an inbox.
	replies subject.ReplyGuard
	store   *meta.Store
	cfg     Config
	queue   *admission.Admission[request]
	// metrics are the searcher's Prometheus metrics.
	metrics *metrics
	// id names this searcher process in replies and in its replica
	// subjects.
	id string

	mu       sync.Mutex
	indexes  map[string]*indexState
	ready    chan struct{}
	wg       sync.WaitGroup
	requests atomic.Int64 // shard requests taken by workers (fault injection counts these)
	busy     atomic.Int64 // shard requests being handled now
	// answered and failed count the shard requests answered, and those
	// answered with an error, since start (Status).
	answered, failed atomic.Uint64
	draining         atomic.Bool
}

type indexState struct {
	def    api.IndexDefinition
	dir    string
	ctx    context.Context // cancelled when the index is dropped
	cancel context.CancelFunc
	done   chan struct{} // closed when the initial load ends
	shards map[int]*slot
	// swapMu serializes generation swaps with drop, so a replica swapped in
	// while the index goes away is never leaked.
	swapMu sync.Mutex
}

// slot is one served shard: the replica answering, swapped atomically.
type slot struct {
	cur atomic.Pointer[shard.Replica]
	// lent: cur is Config.Replicas' replica, never swapped or closed here.
	lent     bool
	metrics  *shardMetrics
	sub      *nats.Subscription // the shard's queue group
	direct   *nats.Subscription // this replica only (routing, hedges)
	announce *nats.Subscription // answers replica discovery
}

func (sl *slot) unsubscribe() {
	for _, sub := range []*nats.Subscription{sl.sub, sl.direct, sl.announce} {
		if sub != nil {
			sub.Unsubscribe()
		}
	}
}

// New makes a searcher. Call Run to start it.
func New(nc *nats.Conn, store *meta.Store, cfg Config) (*Searcher, error) {
	cfg.EnsureDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg.Logger = cfg.Logger.With("role", "searcher")
	s := &Searcher{nc: nc, store: store, cfg: cfg, indexes: map[string]*indexState{},
		queue: admission.New[request](admission.Config{MaxQueued: cfg.QueueLen, HeavyTurns: cfg.HeavyWorkers, HeavyAfter: cfg.HeavyAfter, NewTeamsHeavy: true}), ready: make(chan struct{}), id: nuid.Next(),
		replies: subject.ReplyGuard{Service: "searcher", Logger: cfg.Logger}}
	var err error
	if s.metrics, err = newMetrics(s, cfg.Registerer); err != nil {
		return nil, err
	}
	return s, nil
}

// Ready is closed once every shard of the indexes that existed at start-up
// is caught up and serving.
func (s *Searcher) Ready() <-chan struct{} { return s.ready }

// Run serves until ctx is done, then unsubscribes, finishes in-flight
// requests and closes every replica.
func (s *Searcher) Run(ctx context.Context) error {
	if err := os.RemoveAll(s.shardsDir()); err != nil {
		return fmt.Errorf("searcher: clean %s: %w", s.shardsDir(), err)
	}
	if err := os.MkdirAll(s.shardsDir(), 0o755); err != nil {
		return fmt.Errorf("searcher: %w", err)
	}
	var workers sync.WaitGroup
	for range s.cfg.Workers {
		workers.Go(s.worker)
	}
	defer func() {
		s.drain()
		s.closeAll()
		s.queue.Close()
		workers.Wait()
	}()

	w, err := s.store.Follow(ctx, s.store.Indexes, false)
	if err != nil {
		return fmt.Errorf("searcher: watch indexes: %w", err)
	}
	defer w.Stop()
	mw, err := s.store.Follow(ctx, s.store.Manifests, true)
	if err != nil {
		return fmt.Errorf("searcher: watch manifests: %w", err)
	}
	defer mw.Stop()
	svc, err := s.serveStatus()
	if err != nil {
		return fmt.Errorf("searcher: %w", err)
	}
	defer svc.Stop()
	// The indexes the watcher delivers before its end-of-initial-values
	// marker (a nil entry) are the ones that exist at start: Ready waits
	// for each of them to be loaded.
	var initial []*indexState
	loading := true
	for {
		select {
		case <-ctx.Done():
			return nil
		case e, ok := <-w.Updates():
			if !ok {
				return meta.WatchEnded(ctx, "searcher: index")
			}
			if e == nil {
				if loading {
					go s.markReady(ctx, initial)
					initial, loading = nil, false
				}
				continue
			}
			if st := s.onIndexChange(ctx, e); st != nil && loading {
				initial = append(initial, st)
			}
		case e, ok := <-mw.Updates():
			if !ok {
				return meta.WatchEnded(ctx, "searcher: manifest")
			}
			if e != nil && e.Operation() == jetstream.KeyValuePut {
				s.onManifest(e)
			}
		}
	}
}

func (s *Searcher) shardsDir() string { return filepath.Join(s.cfg.DataDir, "shards") }

func (s *Searcher) markReady(ctx context.Context, initial []*indexState) {
	for _, st := range initial {
		select {
		case <-st.done:
		case <-ctx.Done():
			return
		}
	}
	close(s.ready)
}

func (s *Searcher) onIndexChange(ctx context.Context, e jetstream.KeyValueEntry) *indexState {
	name := e.Key()
	if s.cfg.Index != "" && name != s.cfg.Index {
		return nil
	}
	s.mu.Lock()
	old := s.indexes[name]
	s.mu.Unlock()
	if e.Operation() != jetstream.KeyValuePut {
		if old != nil {
			s.drop(name, old)
		}
		return nil
	}
	def, err := meta.DecodeIndex(e.Value())
	if err != nil {
		s.cfg.Logger.Error("skipping index with a bad definition", "index", name, "err", err)
		return nil
	}
	if old != nil {
		if old.def.Created.Equal(def.Created) {
			return nil
		}
		s.drop(name, old)
	}
	ictx, cancel := context.WithCancel(ctx)
	st := &indexState{def: def, ctx: ictx, cancel: cancel, done: make(chan struct{}), shards: map[int]*slot{},
		dir: filepath.Join(s.shardsDir(), name+"-"+strconv.FormatInt(def.Created.UnixMilli(), 10))}
	s.mu.Lock()
	s.indexes[name] = st
	s.mu.Unlock()
	s.wg.Go(func() {
		defer close(st.done)
		if err := s.load(ictx, st); err != nil && ictx.Err() == nil {
			s.cfg.Logger.Error("cannot serve index", "index", name, "err", err)
		}
	})
	return st
}

func (s *Searcher) served(def api.IndexDefinition) []int {
	var out []int
	for i := range def.Shards {
		if len(s.cfg.Shards) == 0 || slices.Contains(s.cfg.Shards, i) {
			out = append(out, i)
		}
	}
	return out
}

// load opens every served shard of an index and subscribes each once it is
// caught up. Shards load one after the other, to bound memory and disk I/O.
func (s *Searcher) load(ctx context.Context, st *indexState) error {
	m, _, err := s.store.Manifest(ctx, st.def.Name)
	if err != nil {
		return err
	}
	for _, i := range s.served(st.def) {
		r, lent, err := s.borrowReplica(ctx, st, i)
		if err == nil && r == nil {
			r, err = s.openReplica(ctx, st, i, m, true)
		}
		if err != nil {
			return err
		}
		sl := &slot{metrics: s.metrics.shard(st.def.Name, i), lent: lent}
		sl.cur.Store(r)
		team := st.def.TeamOf()
		enqueue := func(msg *nats.Msg) { s.enqueue(team, msg) }
		sl.sub, err = s.nc.QueueSubscribe(subject.Shard(st.def.Name, i), subject.ShardQueue(st.def.Name, i), enqueue)
		if err == nil {
			sl.direct, err = s.nc.Subscribe(subject.Replica(s.id, st.def.Name, i), enqueue)
		}
		if err == nil {
			id := []byte(s.id)
			sl.announce, err = s.nc.Subscribe(subject.Replicas(st.def.Name, i), func(m *nats.Msg) {
				if s.replies.Allow(m.Subject, m.Reply) {
					m.Respond(id)
				}
			})
		}
		if err != nil {
			sl.unsubscribe()
			if !lent {
				r.Close()
			}
			return fmt.Errorf("subscribe shard %d: %w", i, err)
		}
		s.mu.Lock()
		st.shards[i] = sl
		s.mu.Unlock()
		s.cfg.Logger.Info("shard serving", "index", st.def.Name, "shard", i, "generation", r.Generation(), "seq", r.Seq(), "lent", lent)
	}
	return nil
}

// borrowReplica returns shard i's replica from Config.Replicas once it is
// caught up, or nil (and no error) when there is no lender or it does not
// hold the shard.
func (s *Searcher) borrowReplica(ctx context.Context, st *indexState, i int) (*shard.Replica, bool, error) {
	if s.cfg.Replicas == nil {
		return nil, false, nil
	}
	cctx, cancel := context.WithTimeout(ctx, s.cfg.CatchUpTimeout)
	defer cancel()
	r, err := s.cfg.Replicas.Lend(cctx, st.def, i)
	if errors.Is(err, shard.ErrNotLent) {
		s.cfg.Logger.Info("serving a replica of its own", "index", st.def.Name, "shard", i, "why", err)
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("shard %d: %w", i, err)
	}
	if err := r.WaitCaughtUp(cctx); err != nil {
		return nil, false, fmt.Errorf("shard %d: %w", i, err)
	}
	return r, true, nil
}

// openReplica opens shard i from the manifest's snapshot, then replays the
// stream until caught up. If there is no snapshot, or (with fallback) it is
// refused, it starts empty and replays the whole stream, which is the
// source of truth.
func (s *Searcher) openReplica(ctx context.Context, st *indexState, i int, m meta.Manifest, fallback bool) (*shard.Replica, error) {
	mapping, err := indexmap.Build(st.def.Mapping)
	if err != nil {
		return nil, err
	}
	cfg := shard.Config{Index: st.def.Name, Shard: i, Shards: st.def.Shards, Mapping: mapping, Store: s.store,
		MaxBatch: s.cfg.MaxBatch, MaxPITs: s.cfg.MaxPITs, ColumnBytes: s.cfg.ColumnBytes, Writes: s.cfg.Writes, Documents: st.def.Documents, Logger: s.cfg.Logger,
		Dir: filepath.Join(st.dir, fmt.Sprintf("%d-g%d-%s", i, m.Generation, nuid.Next()))}
	if err := os.MkdirAll(st.dir, 0o755); err != nil {
		return nil, err
	}
	var r *shard.Replica
	for _, snap := range m.Shards {
		if snap.Shard == i {
			r, err = shard.OpenSnapshot(ctx, cfg, m.Generation, snap)
			if err != nil && !fallback {
				return nil, err
			}
			if err != nil {
				s.cfg.Logger.Error("snapshot refused; replaying the whole stream instead", "index", st.def.Name, "shard", i, "generation", m.Generation, "err", err)
				r = nil
			}
		}
	}
	if r == nil {
		if r, err = shard.OpenLocal(cfg); err != nil {
			return nil, err
		}
	}
	if err := r.Start(ctx); err != nil {
		r.Destroy()
		return nil, err
	}
	cctx, cancel := context.WithTimeout(ctx, s.cfg.CatchUpTimeout)
	defer cancel()
	if err := r.WaitCaughtUp(cctx); err != nil {
		r.Destroy()
		return nil, err
	}
	return r, nil
}

// onManifest swaps in a new generation for every served shard of the index.
// A generation that cannot be loaded is refused and the serving replica
// stays.
func (s *Searcher) onManifest(e jetstream.KeyValueEntry) {
	m, err := meta.DecodeManifest(e.Value())
	if err != nil {
		s.cfg.Logger.Error("bad manifest", "index", e.Key(), "err", err)
		return
	}
	s.mu.Lock()
	st := s.indexes[m.Index]
	s.mu.Unlock()
	if st == nil {
		return
	}
	s.wg.Go(func() {
		<-st.done // the initial load finishes first
		for _, i := range s.served(st.def) {
			s.mu.Lock()
			sl := st.shards[i]
			s.mu.Unlock()
			if sl == nil || sl.lent || sl.cur.Load().Generation() >= m.Generation {
				continue // a lent replica is the one the snapshot was made from
			}
			hasSnap := false
			for _, snap := range m.Shards {
				hasSnap = hasSnap || snap.Shard == i
			}
			if !hasSnap {
				continue
			}
			r, err := s.openGeneration(st, sl, i, m)
			if err != nil {
				if st.ctx.Err() != nil {
					return // the index or the searcher is going away
				}
				sl.metrics.swapFailed.Inc()
				continue
			}
			// Count the token totals queries read on the serving replica,
			// and make the columns its searches read, now, so that the
			// first queries on the new one do not wait for them (exact
			// scoring's average field lengths) or load stored documents.
			if err := r.Warm(st.ctx, sl.cur.Load()); err != nil && st.ctx.Err() == nil {
				s.cfg.Logger.Warn("warming a new generation failed; queries count token totals and load fields themselves", "index", m.Index, "shard", i, "err", err)
			}
			st.swapMu.Lock()
			if st.ctx.Err() != nil || sl.cur.Load().Generation() >= m.Generation {
				// Going away, or a newer generation won the race.
				st.swapMu.Unlock()
				r.Destroy()
				continue
			}
			old := sl.cur.Swap(r)
			st.swapMu.Unlock()
			sl.metrics.swapped.Inc()
			old.Destroy() // waits for searches in flight on it
			s.cfg.Logger.Info("generation swapped", "index", m.Index, "shard", i, "generation", m.Generation, "seq", r.Seq())
		}
	})
}

// swapAttempts and swapBackoff bound the retries of a generation that
// could not be loaded (a download cut short, a timeout under load); a
// snapshot that fails its digest fails them all and is refused.
const (
	swapAttempts = 5
	swapBackoff  = time.Second
)

// openGeneration opens shard i of generation m, retrying with backoff
// while no newer generation is being served.
func (s *Searcher) openGeneration(st *indexState, sl *slot, i int, m meta.Manifest) (*shard.Replica, error) {
	pause := backoff.New(swapBackoff, swapBackoff<<(swapAttempts-2)) // 1, 2, 4, 8 s
	for attempt := 1; ; attempt++ {
		r, err := s.openReplica(st.ctx, st, i, m, false)
		if err == nil || st.ctx.Err() != nil {
			return r, err
		}
		s.cfg.Logger.Error("new generation refused; still serving the old one", "index", m.Index, "shard", i,
			"generation", m.Generation, "serving", sl.cur.Load().Generation(), "attempt", attempt, "err", err)
		if attempt == swapAttempts || sl.cur.Load().Generation() >= m.Generation {
			return nil, err
		}
		if err := pause.Wait(st.ctx); err != nil {
			return nil, err
		}
	}
}

func (s *Searcher) drop(name string, st *indexState) {
	s.mu.Lock()
	if s.indexes[name] == st {
		delete(s.indexes, name)
	}
	shards := st.shards
	st.shards = map[int]*slot{}
	s.mu.Unlock()
	st.cancel()
	for _, sl := range shards {
		sl.unsubscribe()
	}
	<-st.done
	st.swapMu.Lock() // no swap can start after this: st.ctx is done
	for _, sl := range shards {
		if !sl.lent { // a lent replica is its lender's to close
			sl.cur.Load().Destroy()
		}
	}
	st.swapMu.Unlock()
	os.RemoveAll(st.dir)
	s.metrics.drop(name)
	s.cfg.Logger.Info("index dropped", "index", name)
}

// drain stops taking shard requests (every subscription is drained, so
// requests already delivered are still queued), then waits up to
// DrainTimeout for the queue to empty and the workers to finish.
func (s *Searcher) drain() {
	s.draining.Store(true)
	s.mu.Lock()
	var subs []*nats.Subscription
	for _, st := range s.indexes {
		for _, sl := range st.shards {
			for _, sub := range []*nats.Subscription{sl.sub, sl.direct, sl.announce} {
				if sub != nil {
					subs = append(subs, sub)
				}
			}
		}
	}
	s.mu.Unlock()
	for _, sub := range subs {
		sub.Drain()
	}
	deadline := time.Now().Add(s.cfg.DrainTimeout)
	for time.Now().Before(deadline) {
		drained := true
		for _, sub := range subs {
			drained = drained && !sub.IsValid()
		}
		if drained && s.queue.Len() == 0 && s.busy.Load() == 0 {
			s.cfg.Logger.Info("searcher drained")
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	s.cfg.Logger.Warn("drain timed out", "queued", s.queue.Len(), "running", s.busy.Load(), "after", s.cfg.DrainTimeout)
}

// Draining reports whether the searcher is shutting down (no longer ready).
func (s *Searcher) Draining() bool { return s.draining.Load() }

func (s *Searcher) closeAll() {
	s.mu.Lock()
	all := s.indexes
	s.mu.Unlock()
	for name, st := range all {
		s.drop(name, st)
	}
	s.wg.Wait()
}

// Stats is a searcher's view of one served shard.
type Stats struct {
	Index      string
	Shard      int
	Generation uint64
	Seq        uint64
	// Lag is the replay lag: messages of the shard the stream held after
	// the last one applied, as of the last batch.
	Lag  uint64
	Docs uint64
	// Rejected counts the messages the replica skipped, unappliable
	// (shard.Progress.Rejected).
	Rejected uint64
	// Lent: the replica served is Config.Replicas' (the indexer's).
	Lent bool
	// FileSegments and MemorySegments are the segments the replica's
	// index is made of (shard.Replica.Segments).
	FileSegments, MemorySegments uint64
}

// ForceMerge merges the segments of every shard of index this searcher
// serves (shard.Replica.ForceMerge): for tests and operators.
func (s *Searcher) ForceMerge(ctx context.Context, index string) error {
	for _, sh := range s.shardStates() {
		if sh.index != index {
			continue
		}
		if err := sh.replica.ForceMerge(ctx); err != nil {
			return fmt.Errorf("index %q: %w", index, err)
		}
	}
	return nil
}

// ID names this searcher process (its replica id).
func (s *Searcher) ID() string { return s.id }

// Stats lists the shards this searcher serves.
func (s *Searcher) Stats() []Stats {
	var out []Stats
	for _, sh := range s.shardStates() {
		docs, _ := sh.replica.DocCount()
		p := sh.replica.Progress()
		files, memory := sh.replica.Segments()
		out = append(out, Stats{Index: sh.index, Shard: sh.shard, Generation: sh.replica.Generation(), Seq: p.Seq, Lag: p.Pending, Docs: docs, Rejected: p.Rejected, Lent: sh.lent,
			FileSegments: files, MemorySegments: memory})
	}
	slices.SortFunc(out, func(a, b Stats) int {
		if a.Index != b.Index {
			if a.Index < b.Index {
				return -1
			}
			return 1
		}
		return a.Shard - b.Shard
	})
	return out
}
