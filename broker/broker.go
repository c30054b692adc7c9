package broker

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/blevesearch/bleve/v2/mapping"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nuid"
	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	oteltrace "go.opentelemetry.io/otel/trace"
	"golang.org/x/sync/singleflight"

	"github.com/quarrysearch/quarry/api"
	"github.com/quarrysearch/quarry/broker/internal/fanout"
	"github.com/quarrysearch/quarry/broker/internal/pipeline"
	"github.com/quarrysearch/quarry/internal/admission"
	"github.com/quarrysearch/quarry/internal/meta"
	"github.com/quarrysearch/quarry/internal/requestid"
	"github.com/quarrysearch/quarry/internal/service"
	"github.com/quarrysearch/quarry/internal/subject"
	"github.com/quarrysearch/quarry/internal/trace"
	"github.com/quarrysearch/quarry/internal/wire"
	"github.com/quarrysearch/quarry/planner"
)

// ShadowPublishEvery is how often a broker publishes its shadow tallies
// (quarry plugin shadow-stats reads them).
const ShadowPublishEvery = 2 * time.Second

// Config configures a broker. Zero values are documented defaults.
type Config struct {
	// DefaultTimeout bounds a request that gives no timeout_ms (default 2s).
	DefaultTimeout time.Duration
	// MaxTimeout caps timeout_ms (default 60s).
	MaxTimeout time.Duration
	// Registerer gets the broker's Prometheus metrics (nil: a registry of
	// its own, which nothing serves).
	Registerer prometheus.Registerer
	// SlowQuery logs, at warn level with the request id and the time of
	// each stage, every search that takes longer (0: 500ms; negative:
	// never).
	SlowQuery time.Duration
	// DrainTimeout bounds a shutdown: the broker stops taking requests
	// (its queue group subscription is drained first), then waits this
	// long at most for the requests it took (default 10s).
	DrainTimeout time.Duration
	// MaxInFlight caps the searches a broker holds, running (on as many
	// workers) or waiting for a heavy team's turn (see HeavyAfter); more
	// are refused at once as overloaded (HTTP 429, micro error code 429)
	// (default 1024).
	MaxInFlight int
	// TeamMaxInFlight caps the concurrent requests of one team (the teams
	// of api.IndexDefinition), unless its settings say otherwise
	// (api.TeamSettings, `quarry team set`), so that one team cannot take
	// every slot (default MaxInFlight/4, at least 1).
	TeamMaxInFlight int
	// TeamMaxSearchMemory caps the memory one team's searches in flight
	// hold on this broker, in bytes: each search is accounted an estimate
	// once it is planned (its shards' replies and its response, from its
	// shards, hits, fields and explain), then what its shards' replies
	// came to once they are decoded. A search that would take its team
	// over the cap is refused with 429 overloaded naming it (default
	// DefaultTeamMaxSearchMemory, 256 MiB).
	TeamMaxSearchMemory int64
	// MaxResponseBytes bounds a search's response, counted as its page is
	// cut, before it is encoded: its hits' ids, fields and explanations.
	// Past it the search stops with response_too_large. It is at most
	// what one reply carries on the broker's NATS connection (the
	// server's max_payload less 4 KiB, wire.ReplyRoom), which is also its
	// default (0).
	MaxResponseBytes int
	// MaxExplain caps from+size of a request that asks to explain
	// (planner.Config.MaxExplain; default planner.DefaultMaxExplain, 100):
	// every shard explains each of its from+size hits, kilobytes each.
	MaxExplain int
	// ShardDepth is how many times its share of a search's K hits (K /
	// shards) each of several shards is first asked for, plus
	// planner.ShardDepthSlack; a shard whose last hit still ranks in the
	// merged top K is asked again for all K (planner.Config.ShardDepth;
	// default planner.DefaultShardDepth, 1.5; negative: every shard
	// returns all K in one round).
	ShardDepth float64
	// HeavyAfter marks a team heavy on this broker when its recent
	// searches cost more than this on average: a search's cost is its
	// own work, its shards' search time on the searchers and its plugin
	// calls' time, not its latency, which other teams' load stretches (a
	// victim of contention is not classed heavy for it) (default 20ms;
	// negative: never). While another team is active, a heavy team
	// runs at most HeavySearches searches at once and the others wait
	// their turn in the queue (internal/admission, the searcher's too): a
	// Go program cannot give one goroutine priority over another, so the
	// only way to keep a heavy team's merging and encoding from taking
	// every core is not to start them.
	HeavyAfter time.Duration
	// HeavySearches is how many searches of one heavy team run at once on
	// this broker while other teams are active (default GOMAXPROCS/2, at
	// least 1).
	HeavySearches int
	// HeavyWait bounds a search's wait in the queue, for a heavy team's
	// turn or for a worker; past it the search is refused as overloaded
	// (429) (default 1s).
	HeavyWait time.Duration
	// RateUnit is what one search is under a team's rate limit
	// (api.TeamSettings.Rate): a search counts once for each RateUnit of
	// its cost begun (see HeavyAfter), so at 50ms a search costing 120ms
	// counts 3 times. It takes one count to start and pays the rest
	// when done, which may put the team in debt: its next searches are
	// refused (429, Retry-After when the debt is paid) until it is. A rate
	// in searches alone lets a team whose every search moves megabytes
	// take most of the cores at a rate fit for cheap ones (default 50ms;
	// negative: a search counts once, whatever its time).
	RateUnit time.Duration
	// NoHedge turns hedging off.
	NoHedge bool
	// HedgeMaxFraction caps hedges as a share of shard requests (default
	// 0.05).
	HedgeMaxFraction float64
	// StatsCacheSize is how many queries' global term statistics are kept
	// (default 4096; negative: no cache, a statistics round trip on every
	// request).
	StatsCacheSize int
	// StatsCacheTerms is how many (field, term) statistics are kept, from
	// which the statistics of a query seen for the first time are put
	// together when an earlier query read each of its terms (default
	// fanout.DefaultStatsCacheTerms, 65,536; negative: none, so only a
	// query seen before skips the statistics round trip). The same
	// freshness bounds hold.
	StatsCacheTerms int
	// StatsDictionaryTerms: a field whose dictionary has at most this
	// many terms over every shard is kept whole among the cached
	// statistics (counted in the background while queries read it,
	// again every half of StatsMaxAge), so a new query's statistics are
	// put together even when it reads a term no earlier query read, or
	// one no document holds (default fanout.DefaultDictionaryTerms,
	// 16,384, and all such fields together at most half of
	// StatsCacheTerms; negative: none).
	StatsDictionaryTerms int
	// StatsMaxUpdates bounds how stale cached statistics may be: at most
	// this many updates of any one shard missed (default
	// DefaultStatsMaxUpdates, 1000; at most MaxStatsMaxUpdates, what a
	// searcher remembers). Lower bounds cost more statistics round trips
	// while documents change.
	StatsMaxUpdates int
	// StatsMaxAge bounds how long statistics are cached (default
	// DefaultStatsMaxAge, 10 s).
	StatsMaxAge time.Duration
	// NoExactScoring skips the statistics phase: each shard scores with
	// its own statistics (faster, scores differ across shards).
	NoExactScoring bool
	// FallbackErrorRate, FallbackWindow and FallbackMinCalls: a fail-open
	// plugin step from the registry whose failures over its last
	// FallbackWindow calls (at least FallbackMinCalls) exceed
	// FallbackErrorRate is taken out until its pipeline changes, and the
	// event recorded (defaults 0.5, 100, 20). A fail-closed step is
	// rolled back to its plugin's last good version instead (a new
	// pipeline revision).
	FallbackErrorRate float64
	FallbackWindow    int
	FallbackMinCalls  int
	// FallbackSlowRate: a step with a latency budget (latency_budget_ms)
	// more of whose last FallbackWindow calls than this share took longer
	// than the budget trips the fallback as failures do (default 0.01:
	// its p99 is over the budget). It acts once the window holds enough
	// calls for that quantile (1/FallbackSlowRate, at least
	// FallbackMinCalls, at most FallbackWindow).
	FallbackSlowRate float64
	// FallbackVariantCooldown: variant searches (replays, relevance
	// evaluations' candidates) have the fallback too, over all of a
	// version's variant calls; a version that trips it is refused in
	// variant searches for this long (default 1m), and nothing is written.
	FallbackVariantCooldown time.Duration
	// RecordPercent records that share (0-100) of search requests to the
	// QUARRY_QUERIES stream, for `quarry plugin test` replays (default 0:
	// off).
	RecordPercent int
	// CompressThreshold is the request size above which shard requests are
	// zstd compressed (default wire.CompressThreshold).
	CompressThreshold int
	// PluginLogRate is the plugin log lines per second each team may
	// send from a broker (PluginLogsConfig.Rate: 0 is
	// DefaultPluginLogRate, negative none); the rest are dropped and
	// counted.
	PluginLogRate float64
	// PluginLogProcessRate is how many of those lines a second each team
	// may put in the process's own log (default
	// DefaultPluginLogProcessRate; negative: none).
	PluginLogProcessRate float64
	// PeerHeartbeat is how often each broker tells the others it is up
	// (subject.BrokerHeartbeat). Brokers count each other so that each
	// admits its share of a team's rate limit (api.TeamSettings.Rate over
	// the brokers up); a broker is counted out after 3 missed heartbeats
	// (default 2s).
	PeerHeartbeat time.Duration
	// QueueGroup is shared by every broker (default "quarry-broker").
	QueueGroup string
	// WaitForPipelines makes Run join QueueGroup only once WatchPipelines
	// has made every index's current pipeline live (or refused it), so
	// that no search runs without its index's plugins while a broker
	// starts. Set it when WatchPipelines runs beside Run, as node does.
	WaitForPipelines bool
	Logger           *slog.Logger
}

// Defaults are the values EnsureDefaults gives a Config's zero fields, and
// the defaults the CLI's flags show. HeavySearches' default depends on the
// machine (GOMAXPROCS/2, at least 1) and is 0 here.
var Defaults = Config{
	DefaultTimeout: 2 * time.Second, MaxTimeout: 60 * time.Second,
	MaxInFlight: 1024, HeavyAfter: 20 * time.Millisecond, HeavyWait: time.Second, RateUnit: 50 * time.Millisecond,
	DrainTimeout: 10 * time.Second, SlowQuery: 500 * time.Millisecond,
	FallbackErrorRate: 0.5, FallbackWindow: 100, FallbackMinCalls: 20, FallbackSlowRate: 0.01,
	FallbackVariantCooldown: pipeline.DefaultVariantCooldown,
	StatsCacheSize:          4096, StatsCacheTerms: fanout.DefaultStatsCacheTerms, StatsDictionaryTerms: fanout.DefaultDictionaryTerms, StatsMaxUpdates: DefaultStatsMaxUpdates, StatsMaxAge: DefaultStatsMaxAge, CompressThreshold: wire.CompressThreshold, QueueGroup: "quarry-broker",
	PeerHeartbeat: 2 * time.Second, TeamMaxSearchMemory: DefaultTeamMaxSearchMemory, MaxExplain: planner.DefaultMaxExplain,
	ShardDepth: planner.DefaultShardDepth,
}

// DefaultTeamMaxSearchMemory is Config.TeamMaxSearchMemory's default:
// room for about five searches of 10,000 hits with every field of
// kilobyte documents from four shards at once, and for thousands of
// ordinary ones.
const DefaultTeamMaxSearchMemory = 256 << 20

// EnsureDefaults gives every zero field its default (Defaults;
// TeamMaxInFlight: a quarter of MaxInFlight). It changes nothing else, and
// running it twice changes nothing more.
func (c *Config) EnsureDefaults() {
	d := &Defaults
	c.DefaultTimeout = cmp.Or(c.DefaultTimeout, d.DefaultTimeout)
	c.MaxTimeout = cmp.Or(c.MaxTimeout, d.MaxTimeout)
	c.MaxInFlight = cmp.Or(c.MaxInFlight, d.MaxInFlight)
	c.TeamMaxInFlight = cmp.Or(c.TeamMaxInFlight, max(1, c.MaxInFlight/4))
	c.HeavyAfter = cmp.Or(c.HeavyAfter, d.HeavyAfter)
	c.HeavySearches = cmp.Or(c.HeavySearches, max(1, runtime.GOMAXPROCS(0)/2))
	c.HeavyWait = cmp.Or(c.HeavyWait, d.HeavyWait)
	c.RateUnit = cmp.Or(c.RateUnit, d.RateUnit)
	c.DrainTimeout = cmp.Or(c.DrainTimeout, d.DrainTimeout)
	c.SlowQuery = cmp.Or(c.SlowQuery, d.SlowQuery)
	c.FallbackErrorRate = cmp.Or(c.FallbackErrorRate, d.FallbackErrorRate)
	c.FallbackWindow = cmp.Or(c.FallbackWindow, d.FallbackWindow)
	c.FallbackMinCalls = cmp.Or(c.FallbackMinCalls, d.FallbackMinCalls)
	c.FallbackSlowRate = cmp.Or(c.FallbackSlowRate, d.FallbackSlowRate)
	c.FallbackVariantCooldown = cmp.Or(c.FallbackVariantCooldown, d.FallbackVariantCooldown)
	c.StatsCacheSize = cmp.Or(c.StatsCacheSize, d.StatsCacheSize)
	c.StatsCacheTerms = cmp.Or(c.StatsCacheTerms, d.StatsCacheTerms)
	c.StatsDictionaryTerms = cmp.Or(c.StatsDictionaryTerms, d.StatsDictionaryTerms)
	c.StatsMaxUpdates = cmp.Or(c.StatsMaxUpdates, d.StatsMaxUpdates)
	c.StatsMaxAge = cmp.Or(c.StatsMaxAge, d.StatsMaxAge)
	c.CompressThreshold = cmp.Or(c.CompressThreshold, d.CompressThreshold)
	c.QueueGroup = cmp.Or(c.QueueGroup, d.QueueGroup)
	c.PeerHeartbeat = cmp.Or(c.PeerHeartbeat, d.PeerHeartbeat)
	c.TeamMaxSearchMemory = cmp.Or(c.TeamMaxSearchMemory, d.TeamMaxSearchMemory)
	c.MaxExplain = cmp.Or(c.MaxExplain, d.MaxExplain)
	c.ShardDepth = cmp.Or(c.ShardDepth, d.ShardDepth)
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
}

// Validate reports every setting that is wrong, each naming the setting
// and its value (run EnsureDefaults first: zero values are wrong here). It
// changes nothing.
func (c *Config) Validate() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf("broker: "+format, args...)) }
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"default timeout", c.DefaultTimeout}, {"max timeout", c.MaxTimeout}, {"heavy wait", c.HeavyWait}, {"drain timeout", c.DrainTimeout}, {"peer heartbeat", c.PeerHeartbeat}, {"stats max age", c.StatsMaxAge},
		{"fallback variant cooldown", c.FallbackVariantCooldown}} {
		if d.v <= 0 {
			bad("%s must be above 0, got %s", d.name, d.v)
		}
	}
	if c.DefaultTimeout > c.MaxTimeout {
		bad("default timeout %s is over the max timeout %s", c.DefaultTimeout, c.MaxTimeout)
	}
	for _, n := range []struct {
		name string
		v    int
	}{{"max in flight", c.MaxInFlight}, {"team max in flight", c.TeamMaxInFlight}, {"heavy searches", c.HeavySearches},
		{"fallback window", c.FallbackWindow}, {"fallback min calls", c.FallbackMinCalls}} {
		if n.v <= 0 {
			bad("%s must be 1 or more, got %d", n.name, n.v)
		}
	}
	if c.StatsMaxUpdates <= 0 || c.StatsMaxUpdates > MaxStatsMaxUpdates {
		bad("stats max updates must be 1-%d (what a searcher remembers of its updates), got %d", MaxStatsMaxUpdates, c.StatsMaxUpdates)
	}
	if c.RecordPercent < 0 || c.RecordPercent > 100 {
		bad("record percent must be 0-100, got %d", c.RecordPercent)
	}
	if c.FallbackErrorRate < 0 || c.FallbackErrorRate > 1 {
		bad("fallback error rate must be in [0,1], got %g", c.FallbackErrorRate)
	}
	if c.FallbackMinCalls > c.FallbackWindow {
		bad("fallback min calls (%d) must not be above the fallback window (%d)", c.FallbackMinCalls, c.FallbackWindow)
	}
	if c.FallbackSlowRate < 0 || c.FallbackSlowRate > 1 {
		bad("fallback slow rate must be in [0,1], got %g", c.FallbackSlowRate)
	}
	if c.RateUnit > 0 && c.RateUnit < time.Millisecond {
		bad("rate unit must be 1ms or more (negative: a search counts once), got %s", c.RateUnit)
	}
	if c.HedgeMaxFraction < 0 || c.HedgeMaxFraction > 1 {
		bad("hedge max fraction must be in [0,1], got %g", c.HedgeMaxFraction)
	}
	if c.TeamMaxSearchMemory <= 0 {
		bad("team max search memory must be above 0, got %d", c.TeamMaxSearchMemory)
	}
	if c.MaxResponseBytes < 0 {
		bad("max response bytes must be 0 (what one NATS reply carries) or more, got %d", c.MaxResponseBytes)
	}
	if c.MaxExplain <= 0 || c.MaxExplain > api.MaxWindow {
		bad("max explain must be 1-%d, got %d", api.MaxWindow, c.MaxExplain)
	}
	if math.IsNaN(c.ShardDepth) || math.IsInf(c.ShardDepth, 0) {
		bad("shard depth must be a number, got %v", c.ShardDepth)
	}
	return errors.Join(errs...)
}

// Broker answers search requests.
type Broker struct {
	nc      *nats.Conn
	replies subject.ReplyGuard // drops requests whose reply is not an inbox
	store   *meta.Store
	cfg     Config
	planner *planner.Planner
	// admit admits and queues each team's searches for the workers
	// (serve.go).
	admit *admission.Admission[searchJob]
	// served is the search endpoint, whose figures `nats micro stats`
	// shows (set by startService).
	served *service.Endpoint
	// queries is the query log the admin API reads (queries.report).
	queries queryLog
	stats   *fanout.StatsCache
	// id names this broker among the others (a NUID).
	id      string
	shadows *pipeline.Shadows
	// fan asks the shards (replica choice, hedging, the statistics and
	// search phases).
	fan      *fanout.Router
	fallback pipeline.FallbackLimits
	// pipelines are the live pipelines, and their registry revisions.
	pipelines pipeline.Live

	mu   sync.RWMutex
	defs map[string]api.IndexDefinition
	// aliases maps each alias to the index it points at (the aliases
	// bucket, followed like the definitions).
	aliases map[string]string
	// lookups bound the store reads of indexes the watch has not
	// delivered (lookupIndex).
	lookups chan struct{}
	// dictionaries are the whole dictionaries the statistics cache wants
	// counted (dictionaries.go), for Run's counter.
	dictionaries chan dictionaryCount
	// dictionariesKept and dictionariesNotKept count the counts the
	// statistics cache kept, and those over its bound or failed.
	dictionariesKept, dictionariesNotKept atomic.Int64
	// lookupGroup makes the searches of one name that arrive together
	// share one store read (lookupIndex).
	lookupGroup singleflight.Group
	// lookupsWaiting counts the distinct names waiting for one of the
	// lookups (at most maxIndexLookupsWaiting).
	lookupsWaiting atomic.Int64
	peers          *peers           // the brokers up, which share each team's rate
	loader         *pipeline.Loader // set by WatchPipelines: loads variants too
	ready          chan struct{}
	draining       atomic.Bool
	metrics        *metrics
	// cp is the control-plane writer: the query path's writes to the KV
	// store (the automatic fallback's, interleaved searches' sides) go
	// through it; Run starts and stops its goroutine.
	cp *controlPlane

	pipelinesReady     chan struct{}
	pipelinesReadyOnce func()

	// sortTypes say, per index, what its sort fields hold: how the sort
	// values of a page are decoded.
	sortTypes sortTypeCache
	// mappings are the indexes' bleve mappings, for listing a query's
	// terms (run.composeStats) and for the planner's analysis of q's
	// words (planner.Config.Mapping).
	mappings mappingCache
}

// New makes a broker. Call Run to serve the NATS API; Search works once
// Ready is closed.
func New(nc *nats.Conn, store *meta.Store, cfg Config) (*Broker, error) {
	cfg.EnsureDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg.Logger = cfg.Logger.With("role", "broker")
	var b *Broker
	p, err := planner.New(planner.Config{DefaultTimeout: cfg.DefaultTimeout, MaxTimeout: cfg.MaxTimeout, MaxExplain: cfg.MaxExplain, ShardDepth: cfg.ShardDepth,
		Hedge: planner.Hedge{Enabled: !cfg.NoHedge, MaxFraction: cfg.HedgeMaxFraction}, Mapping: func(def *api.IndexDefinition) mapping.IndexMapping { return b.mappings.get(def) }})
	if err != nil {
		return nil, err
	}
	stats := fanout.NewStatsCache(cfg.StatsCacheSize)
	stats.SetFreshness(cfg.StatsMaxUpdates, cfg.StatsMaxAge)
	stats.SetTerms(cfg.StatsCacheTerms)
	stats.SetDictionaryTerms(cfg.StatsDictionaryTerms)
	b = &Broker{nc: nc, replies: subject.ReplyGuard{Service: "broker", Logger: cfg.Logger}, store: store, cfg: cfg, planner: p,
		admit: admission.New[searchJob](admission.Config{MaxQueued: cfg.MaxInFlight, MaxHeld: cfg.MaxInFlight, MaxWait: cfg.HeavyWait, HeavyAfter: cfg.HeavyAfter, HeavyTurns: cfg.HeavySearches,
			TeamInFlight: cfg.TeamMaxInFlight, RateUnit: cfg.RateUnit}),
		stats: stats, fan: fanout.NewRouter(nc, cfg.CompressThreshold, stats), id: nuid.Next(), shadows: pipeline.NewShadows(), fallback: newFallbackLimits(&cfg),
		defs: map[string]api.IndexDefinition{}, aliases: map[string]string{}, lookups: make(chan struct{}, maxIndexLookups), dictionaries: make(chan dictionaryCount, dictionaryQueue), ready: make(chan struct{})}
	if b.metrics, err = newMetrics(b, cfg.Registerer); err != nil {
		return nil, err
	}
	b.peers = newPeers(b.id, cfg.PeerHeartbeat, func(n int) {
		b.admit.SetBrokers(n)
		b.cfg.Logger.Info("brokers up", "brokers", n, "note", "each admits its share of a team's rate limit")
	})
	b.cp = newControlPlane(cfg.Logger, b.metrics.cpDropped, [numLanes]int{fallbackQueue, interleaveQueue}, b.writeControlPlane)
	b.pipelinesReady = make(chan struct{})
	b.pipelinesReadyOnce = sync.OnceFunc(func() { close(b.pipelinesReady) })
	return b, nil
}

// PipelinesReady is closed once WatchPipelines has loaded every pipeline
// the registry held when it started (those it could not load are refused
// and recorded).
func (b *Broker) PipelinesReady() <-chan struct{} { return b.pipelinesReady }

// Ready is closed once the broker knows every index definition and takes
// requests.
func (b *Broker) Ready() <-chan struct{} { return b.ready }

// Run registers the micro service and keeps the index definitions current
// until ctx is done. The broker's background goroutines run as long as
// Run: the control-plane writer (stopped last, once the requests in
// flight are answered, writing what they queued within a bound), the
// shadow tallies' publisher, the team limits' watch and the brokers'
// heartbeats (peers).
func (b *Broker) Run(ctx context.Context) error {
	// Deferred first, so stopped last: after the service and the
	// requests it took.
	defer b.cp.start()()
	w, err := b.store.Follow(ctx, b.store.Indexes, false)
	if err != nil {
		return fmt.Errorf("broker: watch indexes: %w", err)
	}
	defer w.Stop()
	aw, err := b.store.Follow(ctx, b.store.Aliases, false)
	if err != nil {
		return fmt.Errorf("broker: watch aliases: %w", err)
	}
	defer aw.Stop()
	// Learn every index and alias before taking requests: a broker that
	// joined its queue group first would answer "does not exist" for a
	// moment.
	for known, aliasesKnown := false, false; !known || !aliasesKnown; {
		select {
		case <-ctx.Done():
			return nil
		case e, ok := <-w.Updates():
			if !ok {
				return meta.WatchEnded(ctx, "broker: index")
			}
			if e == nil {
				known = true
			} else {
				b.applyIndex(e)
			}
		case e, ok := <-aw.Updates():
			if !ok {
				return meta.WatchEnded(ctx, "broker: alias")
			}
			if e == nil {
				aliasesKnown = true
			} else {
				b.applyAlias(e)
			}
		}
	}
	if b.cfg.WaitForPipelines {
		// Nor before every index's pipeline is live: a search would run
		// without its rewriters and rankers (a rolling start answered
		// with no spelling step for seconds).
		select {
		case <-ctx.Done():
			return nil
		case <-b.pipelinesReady:
		}
	}
	// The workers first, then the subscription that feeds them.
	var workers sync.WaitGroup
	for range b.cfg.MaxInFlight {
		workers.Go(b.work)
	}
	defer workers.Wait()
	defer b.admit.Close()
	svc, err := b.startService()
	if err != nil {
		return err
	}
	defer svc.Stop()
	status, err := b.nc.Subscribe(subject.PipelineStatus, b.answerPipelineStatus)
	if err != nil {
		return fmt.Errorf("broker: subscribe %s: %w", subject.PipelineStatus, err)
	}
	defer status.Unsubscribe()
	queries, err := b.nc.Subscribe(subject.BrokerQueries, b.answerQueries)
	if err != nil {
		return fmt.Errorf("broker: subscribe %s: %w", subject.BrokerQueries, err)
	}
	defer queries.Unsubscribe()
	// Ready once the server has the subscriptions: a client on another
	// connection that searches at once must find a responder (in-process
	// CLI tests did not, now and then: "no broker is running").
	if err := b.nc.FlushTimeout(readyFlushTimeout); err != nil {
		return fmt.Errorf("broker: subscribe: %w", err)
	}
	close(b.ready)
	shadowsDone := make(chan struct{})
	go func() {
		defer close(shadowsDone)
		b.publishShadows(ctx, ShadowPublishEvery)
	}()
	defer func() { <-shadowsDone }()
	teamsDone := make(chan struct{})
	go func() {
		defer close(teamsDone)
		if err := b.watchTeams(ctx); err != nil {
			b.cfg.Logger.Error("team limits are no longer followed", "err", err)
		}
	}()
	defer func() { <-teamsDone }()
	peersDone := make(chan struct{})
	go func() {
		defer close(peersDone)
		if err := b.peers.run(ctx, b.nc); err != nil {
			b.cfg.Logger.Error("brokers are no longer counted: each admits a team's whole rate", "err", err)
		}
	}()
	defer func() { <-peersDone }()
	dictsDone := make(chan struct{})
	go func() {
		defer close(dictsDone)
		b.countDictionaries(ctx)
	}()
	defer func() { <-dictsDone }()
	for {
		select {
		case <-ctx.Done():
			b.drain(svc)
			return nil
		case e, ok := <-w.Updates():
			if !ok {
				return meta.WatchEnded(ctx, "broker: index")
			}
			if e != nil {
				b.applyIndex(e)
			}
		case e, ok := <-aw.Updates():
			if !ok {
				return meta.WatchEnded(ctx, "broker: alias")
			}
			if e != nil {
				b.applyAlias(e)
			}
		}
	}
}

// applyAlias records an alias's change.
func (b *Broker) applyAlias(e jetstream.KeyValueEntry) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if e.Operation() == jetstream.KeyValuePut {
		if a, err := meta.DecodeAlias(e.Value()); err == nil {
			b.aliases[e.Key()] = a.Index
			return
		}
	}
	delete(b.aliases, e.Key())
}

// resolve is the index name names: the alias's, or name itself.
func (b *Broker) resolve(name string) string {
	index, _, _ := b.known(name)
	return index
}

// known is the index name names (the alias's, or name itself) and its
// definition, if the watch has delivered it: one lock a search.
func (b *Broker) known(name string) (index string, def api.IndexDefinition, ok bool) {
	b.mu.RLock()
	defer b.mu.RUnlock()
	index = name
	if to, alias := b.aliases[name]; alias {
		index = to
	}
	def, ok = b.defs[index]
	return index, def, ok
}

// applyIndex records an index definition's change.
func (b *Broker) applyIndex(e jetstream.KeyValueEntry) {
	b.mu.Lock()
	if e.Operation() == jetstream.KeyValuePut {
		if def, err := meta.DecodeIndex(e.Value()); err == nil {
			b.defs[e.Key()] = def
		}
	} else {
		delete(b.defs, e.Key())
	}
	b.mu.Unlock()
	if e.Operation() != jetstream.KeyValuePut {
		b.metrics.drop(e.Key())
		b.sortTypes.drop(e.Key())
		b.queries.forget(e.Key())
		b.mappings.drop(e.Key())
		b.stats.Forget(e.Key())
	}
}

// drain stops taking requests and waits, up to DrainTimeout, for those in
// flight to be answered.
func (b *Broker) drain(svc *service.Service) {
	b.draining.Store(true)
	if err := svc.Stop(); err != nil { // drains the queue group subscription
		b.cfg.Logger.Warn("stop the search service", "err", err)
	}
	deadline := time.Now().Add(b.cfg.DrainTimeout)
	idle := 0
	for idle < 3 { // idle three times in a row: no drained message is on its way in
		if b.admit.Len()+b.admit.Running() == 0 {
			idle++
		} else {
			idle = 0
		}
		if time.Now().After(deadline) {
			b.cfg.Logger.Warn("drain timed out", "in_flight", b.admit.Len()+b.admit.Running(), "after", b.cfg.DrainTimeout)
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	b.cfg.Logger.Info("broker drained")
}

// logSlow logs a search that took longer than Config.SlowQuery, with the
// time of each stage (the query's text is cut to 200 bytes).
func (b *Broker) logSlow(ctx context.Context, index string, req *api.SearchRequest, resp *api.SearchResponse, took time.Duration, times *stageTimes) {
	q := req.Q
	if len(q) > 200 {
		q = q[:200] + "…"
	}
	stages := make([]any, 0, numStages)
	for i, d := range times {
		if d > 0 {
			stages = append(stages, slog.Float64(stageNames[i], float64(d.Microseconds())/1000))
		}
	}
	trace.Logger(ctx, b.cfg.Logger).Warn("slow query", "index", index, "took_ms", float64(took.Microseconds())/1000, "q", q,
		"total", resp.Total, "shards_failed", resp.Shards.Failed, slog.Group("stages_ms", stages...))
}

// Draining reports whether the broker is shutting down (no longer ready).
func (b *Broker) Draining() bool { return b.draining.Load() }

// MaxRequestBytes caps a search request's JSON.
const MaxRequestBytes = 1 << 20

// DecodeRequest decodes and validates a JSON search request: at most
// MaxRequestBytes, one JSON object, read strictly (api.SearchRequest's
// UnmarshalJSON: valid UTF-8, every key known, spelled exactly and given
// once, values of the right types), fields in range. Errors are
// api.ErrBadRequest errors naming the field, or api.ErrQueryTooComplex
// for a request no index allows (a query or filter nested deeper, a q
// longer: api.MaxLimits), refused before it is decoded.
func DecodeRequest(data []byte) (*api.SearchRequest, error) {
	if len(data) > MaxRequestBytes {
		return nil, api.BadRequest("request is %d bytes, over the limit of %d", len(data), MaxRequestBytes)
	}
	req := new(api.SearchRequest)
	if err := req.UnmarshalJSON(data); err != nil {
		return nil, err
	}
	if err := req.Validate(); err != nil {
		return nil, err
	}
	return req, nil
}

// responseBuffers holds the buffers search responses are encoded into
// between requests: a 10,000-hit response with every field is megabytes,
// and made anew for each search it brought on garbage collections that
// stop every team's searches (docs/performance.md, "Buffers that are
// reused, and which heavy request hurts").
var responseBuffers = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// maxPooledResponse is the largest response buffer kept for reuse.
const maxPooledResponse = 32 << 20

// putResponseBuffer gives buf back to responseBuffers, emptied, unless
// it grew over maxPooledResponse.
func putResponseBuffer(buf *bytes.Buffer) {
	if buf.Cap() > maxPooledResponse {
		return
	}
	buf.Reset()
	responseBuffers.Put(buf)
}

// searchJSON decodes a JSON request, searches and encodes the response
// into out: the one code path behind the NATS and HTTP doors (the HTTP
// API sends its searches over NATS).
func (b *Broker) searchJSON(ctx context.Context, index string, data []byte, out *bytes.Buffer) (cost time.Duration, err error) {
	start := time.Now()
	if trace.Enabled() {
		var span oteltrace.Span
		ctx, span = trace.Start(ctx, "quarry.search", oteltrace.WithSpanKind(oteltrace.SpanKindServer),
			oteltrace.WithAttributes(attribute.String("quarry.index", index), attribute.String("quarry.request_id", requestid.From(ctx))))
		defer func() {
			if err != nil {
				span.SetStatus(codes.Error, err.Error())
			}
			span.End()
		}()
	}
	sreq, err := DecodeRequest(data)
	if err != nil {
		b.metrics.answered(index, start, err)
		return cost, err
	}
	decoded := time.Since(start)
	// Quarry's own searches (validation samples, gates, evaluations) and
	// replays are not the index's traffic: neither recorded nor counted.
	traffic := sreq.Variant == nil && !internal(ctx)
	if b.cfg.RecordPercent > 0 && traffic && rand.IntN(100) < b.cfg.RecordPercent {
		// Recorded as received, after validation: fire and forget. A
		// replay (a variant: quarry plugin test, quarry dev) is not
		// traffic to record.
		b.nc.Publish(subject.QueriesPrefix+"."+index, data)
	}
	qid := nuid.Next()
	resp, times, cost, err := b.search(withQueryID(ctx, qid), index, sreq) // times: for the slow-query log
	if err != nil {
		if errors.Is(err, api.ErrTimeout) {
			// Shards that ran out of time answered no cost: the search
			// held its share of the searchers until its deadline.
			cost = time.Since(start)
		}
		b.metrics.answered(index, start, err)
		return cost, err
	}
	resp.RequestID, resp.QueryID = requestid.From(ctx), qid
	if viaAlias(ctx) {
		resp.Index = index
	}
	if took := time.Since(start); b.cfg.SlowQuery > 0 && took > b.cfg.SlowQuery {
		times[stageDecode] = decoded
		b.logSlow(ctx, index, sreq, resp, took, &times)
		if traffic {
			b.queries.add(index, sreq, resp.Total, took, &times)
		}
	} else if traffic {
		b.queries.add(index, sreq, resp.Total, took, nil)
	}
	// The profile, asked for, holds the encode's time too: the response
	// is encoded without it, timed, and the profile, finished, is encoded
	// on its own and added as the object's last key (the hits are
	// encoded once). took_ms is the time until the encode.
	prof := resp.Profile
	resp.Profile = nil
	encStart := time.Now()
	if err = encodeResponse(out, resp); err != nil {
		err = fmt.Errorf("encode response: %w", err)
		b.metrics.answered(index, start, err)
		return cost, err
	}
	encoded := time.Now()
	if prof != nil {
		prof.Stages = append([]api.Stage{{Name: "decode", TookMS: ms(decoded)}}, prof.Stages...)
		prof.Stages = append(prof.Stages, api.Stage{Name: "encode", TookMS: ms(encoded.Sub(encStart))})
		resp.Profile = prof
		p, err := json.Marshal(prof)
		if err != nil {
			return cost, fmt.Errorf("encode profile: %w", err)
		}
		out.Truncate(out.Len() - 1) // the closing brace
		out.WriteString(`,"profile":`)
		out.Write(p)
		out.WriteByte('}')
	}
	// The page was counted as it was cut (run.page); this is the exact
	// size, the profile included. Sent, a response over what one reply
	// carries would be refused by the server, and the client left waiting
	// to its own deadline.
	if max := b.responseCap(); out.Len() > max {
		err = api.ResponseTooLarge(fmt.Sprintf("the response is %d bytes, over the %d bytes one response may hold (the broker's --max-response-bytes, at most what one reply carries)", out.Len(), max))
		b.metrics.bound(boundResponseBytes)
		b.metrics.answered(index, start, err)
		return cost, err
	}
	b.metrics.served(index, encoded.Sub(start), decoded, encoded.Sub(encStart), resp.Shards.Failed > 0)
	return cost, nil
}

// hitsNull is how encoding/json begins a SearchResponse without hits:
// "hits" is its first field.
const hitsNull = `{"hits":null`

// encodeResponse appends resp's JSON to out, exactly as encoding/json
// writes it, for less: the hits by api.Hit.AppendJSON, their fields
// copied from the shards' JSON (api.Hit.FieldsJSON) rather than decoded
// into maps and encoded by reflection, the rest (totals, facets, shard
// counts: small) by encoding/json, into which the hits go where its
// "hits":null was. BenchmarkEncodeResponse measures both ways.
func encodeResponse(out *bytes.Buffer, resp *api.SearchResponse) error {
	hits := resp.Hits
	resp.Hits = nil
	start := out.Len()
	err := json.NewEncoder(out).Encode(resp) // from encoding/json's own pooled buffer
	resp.Hits = hits
	if err != nil {
		return err
	}
	rest := out.Bytes()[start:]
	if !bytes.HasPrefix(rest, []byte(hitsNull)) {
		return fmt.Errorf("the response's JSON begins %.20q, not %q", rest, hitsNull)
	}
	if hits == nil {
		out.Truncate(out.Len() - 1) // Encode's newline
		return nil
	}
	tail := bytes.Clone(rest[len(hitsNull) : len(rest)-1]) // Encode's newline dropped
	out.Truncate(start + len(hitsNull) - len("null"))
	size := len(tail) + 2
	for i := range hits {
		size += len(hits[i].ID) + len(hits[i].FieldsJSON) + 64
	}
	out.Grow(size)
	b := append(out.AvailableBuffer(), '[')
	for i := range hits {
		if i > 0 {
			b = append(b, ',')
		}
		if b, err = hits[i].AppendJSON(b); err != nil {
			return err
		}
	}
	b = append(append(b, ']'), tail...)
	out.Write(b)
	return nil
}

// public is err as a caller may see it. An *api.Error says what the caller
// can act on and is returned as it is; any other error is an internal
// one, whose detail (a Go error's text, a library's words) is for the
// logs: it is logged at error level with the request id and attrs, and
// the caller gets "internal error (request id …)", code internal (500).
func (b *Broker) public(ctx context.Context, err error, attrs ...any) error {
	var e *api.Error
	if errors.As(err, &e) {
		return err
	}
	return internalError(ctx, b.cfg.Logger, err, attrs...)
}

// internalError logs err under the request's id and returns the error the
// caller sees in its place.
func internalError(ctx context.Context, log *slog.Logger, err error, attrs ...any) *api.Error {
	id := requestid.From(ctx)
	trace.Logger(ctx, log).Error("internal error", append(attrs, "err", err)...)
	return api.Errorf(api.CodeInternal, "internal error (request id %s)", id)
}

// Index returns a known index definition.
func (b *Broker) Index(name string) (api.IndexDefinition, bool) {
	b.mu.RLock()
	defer b.mu.RUnlock()
	def, ok := b.defs[name]
	return def, ok
}

// lookedUpKey carries, in a search's context, the definition of its
// index as read from the store (lookupIndex) when the watch had not
// delivered it yet: the search uses it rather than read it again.
type internalKey struct{}

// withInternal marks ctx's search as Quarry's own (subject.HeaderInternal).
func withInternal(ctx context.Context) context.Context {
	return context.WithValue(ctx, internalKey{}, true)
}

// internal reports a search withInternal marked.
func internal(ctx context.Context) bool {
	b, _ := ctx.Value(internalKey{}).(bool)
	return b
}

type aliasKey struct{}

// withAlias marks a search asked of an alias: its response names the
// index that answered (api.SearchResponse.Index).
func withAlias(ctx context.Context) context.Context {
	return context.WithValue(ctx, aliasKey{}, true)
}

// viaAlias reports a search withAlias marked.
func viaAlias(ctx context.Context) bool {
	b, _ := ctx.Value(aliasKey{}).(bool)
	return b
}

type lookedUpKey struct{}

// withLookedUp returns ctx carrying def, read from the store.
func withLookedUp(ctx context.Context, def api.IndexDefinition) context.Context {
	return context.WithValue(ctx, lookedUpKey{}, def)
}

// lookedUp is the definition withLookedUp put in ctx, if any.
func lookedUp(ctx context.Context) (api.IndexDefinition, bool) {
	def, ok := ctx.Value(lookedUpKey{}).(api.IndexDefinition)
	return def, ok
}

// readyFlushTimeout bounds the wait for the server to confirm the
// broker's subscriptions before it says it is ready.
const readyFlushTimeout = 10 * time.Second

// maxIndexLookups is how many store reads of unknown indexes a broker
// makes at once (lookupIndex); a read waits for one of them, within
// indexLookupTimeout.
const maxIndexLookups = 4

// maxIndexLookupsWaiting is how many distinct names may wait for one of
// the maxIndexLookups reads; beyond it a lookup answers "does not exist"
// at once, so a flood of made-up names holds no more than that many
// requests for up to indexLookupTimeout.
const maxIndexLookupsWaiting = 64

// indexLookupTimeout bounds one lookup of an unknown index: the wait for
// a read and the read.
const indexLookupTimeout = time.Second

// lookupIndex finds an index (or alias: Store.Resolve) the watch has not delivered: one created a
// moment ago, searched through a broker that has not heard of it yet
// (the index watch is asynchronous; TestNewIndexIsNeverMissing), which
// must not answer "does not exist" for an index its creator was told
// exists. It reads the store and uses what it read for this request
// only: the watch stays the one writer of the broker's definitions, so
// a deletion it delivers meanwhile is never undone. The searches of one
// name that arrive together share one read (a burst on a new index), and
// at most maxIndexLookups reads of different names run at once, so a
// flood of made-up names costs the store little; a lookup waits for its
// turn (with at most maxIndexLookupsWaiting others) rather than answer
// "does not exist" (TestNewIndexBurst).
func (b *Broker) lookupIndex(ctx context.Context, name string) (api.IndexDefinition, error) {
	v, err, _ := b.lookupGroup.Do(name, func() (any, error) {
		// The read is the group's, not the first caller's: a caller that
		// gives up does not fail the others.
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), indexLookupTimeout)
		defer cancel()
		if !b.takeLookup(ctx) {
			return api.IndexDefinition{}, api.NotFound("index %q does not exist", name)
		}
		defer func() { <-b.lookups }()
		def, err := b.store.Resolve(ctx, name)
		if err != nil && api.CodeOf(err) != api.CodeNotFound {
			b.cfg.Logger.Warn("read an index the watch has not delivered", "index", name, "err", err)
			return def, api.NotFound("index %q does not exist", name)
		}
		return def, err
	})
	def, _ := v.(api.IndexDefinition)
	return def, err
}

// takeLookup takes one of the lookups, waiting until ctx is done if
// fewer than maxIndexLookupsWaiting names wait already; it reports
// whether it got one.
func (b *Broker) takeLookup(ctx context.Context) bool {
	select {
	case b.lookups <- struct{}{}:
		return true
	default:
	}
	if b.lookupsWaiting.Add(1) > maxIndexLookupsWaiting {
		b.lookupsWaiting.Add(-1)
		return false
	}
	defer b.lookupsWaiting.Add(-1)
	select {
	case b.lookups <- struct{}{}:
		return true
	case <-ctx.Done():
		return false
	}
}
