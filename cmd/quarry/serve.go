package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/quarrysearch/quarry/api"
	"github.com/quarrysearch/quarry/broker"
	"github.com/quarrysearch/quarry/client"
	"github.com/quarrysearch/quarry/indexer"
	"github.com/quarrysearch/quarry/internal/catalog"
	"github.com/quarrysearch/quarry/internal/cmdline"
	"github.com/quarrysearch/quarry/internal/demo"
	"github.com/quarrysearch/quarry/internal/embednats"
	"github.com/quarrysearch/quarry/internal/shard"
	"github.com/quarrysearch/quarry/node"
	"github.com/quarrysearch/quarry/plugins"
	"github.com/quarrysearch/quarry/registry"
	"github.com/quarrysearch/quarry/searcher"
)

// roleFlags are the tuning flags of each role.
type roleFlags struct {
	snapshotInterval time.Duration
	noSnapshotMerge  bool
	workers          int
	maxBatch         int
	maxPITs          int
	columnBytes      int64
	defaultTimeout   time.Duration
	maxInFlight      int
	teamInFlight     int
	faultDelay       time.Duration
	faultEvery       int
	faultStats       bool
	heavyAfter       time.Duration
	heavyPause       time.Duration
	heavyLinger      time.Duration
	heavyWorkers     int
	heavySearch      time.Duration
	heavySearches    int
	heavyWait        time.Duration
	rateUnit         time.Duration
	noHedge          bool
	statsCache       int
	statsCacheTerms  int
	statsDictTerms   int
	statsMaxUpdates  int
	statsMaxAge      time.Duration
	recordPercent    int
	pluginLogRate    float64
	pluginLogProcess float64
	fallbackRate     float64
	fallbackWindow   int
	fallbackMin      int
	fallbackSlow     float64
	fallbackVariant  time.Duration
	pluginPages      uint
	teamInstances    int
	teamCalls        int
	warmInstances    int
	maxBudget        time.Duration
	compileLimits    compileLimitsFlag
	compileTimeout   time.Duration
	gateTimeout      time.Duration
	gateWait         time.Duration
	minFreeDisk      bytesFlag
	drainTimeout     time.Duration
	slowQuery        time.Duration
	slowShard        time.Duration
	writes           shard.WriteOptions
	indexerApply     time.Duration
	separateReplicas bool
	maxShardReply    bytesFlag
	maxResponse      bytesFlag
	teamMemory       bytesFlag
	maxExplain       int
	shardDepth       float64
}

// registerWrites adds the flags pacing how replicas apply updates (the
// indexer's and the searcher's alike; registered once per command: a
// second call does nothing).
func (f *roleFlags) registerWrites(fs *pflag.FlagSet) {
	if fs.Lookup("apply-interval") == nil {
		cmdline.RegisterWrites(fs, &f.writes)
	}
}

// registerDrain adds the shutdown flag every long-running command takes.
// One flag serves the broker and the searcher, whose defaults
// (broker.Defaults.DrainTimeout, searcher.Defaults.DrainTimeout) are the
// same (TestRoleFlagDefaults).
func (f *roleFlags) registerDrain(fs *pflag.FlagSet) {
	fs.DurationVar(&f.drainTimeout, "drain-timeout", broker.Defaults.DrainTimeout, "on SIGTERM, how long brokers and searchers keep answering the requests they took after leaving their queue groups")
}

func (f *roleFlags) registerIndexer(fs *pflag.FlagSet) {
	fs.DurationVar(&f.snapshotInterval, "snapshot-interval", indexer.Defaults.SnapshotInterval, "how often an index that changed is snapshotted (0 or negative: only after bulk ingests)")
	fs.IntVar(&f.maxBatch, "max-batch", indexer.Defaults.MaxBatch, "most documents applied to a shard in one bleve batch")
	fs.BoolVar(&f.noSnapshotMerge, "no-snapshot-merge", false, "publish the snapshot a bulk load ends with as its segments are, without merging each shard's into one first (searches visit every segment)")
	fs.DurationVar(&f.indexerApply, "indexer-apply-interval", indexer.Defaults.Writes.ApplyInterval, "the indexer's least time between two batches applied to a shard, when its replicas serve no search (quarry indexer, or quarry serve --separate-replicas; else --apply-interval paces them): longer batches cost it less, and a snapshot waits at most this long for the last updates; negative: apply as they arrive")
	f.registerWrites(fs)
}

func (f *roleFlags) registerSearcher(fs *pflag.FlagSet) {
	fs.IntVar(&f.workers, "workers", 0, "shard requests run at once (default 2×GOMAXPROCS)")
	fs.Int64Var(&f.columnBytes, "column-bytes", searcher.Defaults.ColumnBytes, "most bytes of columns each shard's replica keeps of the short fields searches ask for (a ranker's candidates' fields are read from them, not from stored documents); negative: none")
	fs.IntVar(&f.maxPITs, "max-points-in-time", searcher.Defaults.MaxPITs, "most points in time (search cursors' snapshots, a search's \"pit\") each shard's replica holds at once; over it, opening one is refused as overloaded")
	fs.DurationVar(&f.slowShard, "slow-shard", searcher.Defaults.SlowRequest, "log shard requests slower than this (queue wait included) at warn level, with the request id (negative: never)")
	fs.DurationVar(&f.faultDelay, "fault-delay", 0, "fault injection, for tests: delay shard requests by this much")
	fs.IntVar(&f.faultEvery, "fault-every", searcher.Defaults.FaultEvery, "fault injection: delay every Nth shard request (with --fault-delay)")
	fs.BoolVar(&f.faultStats, "fault-stats", false, "fault injection: delay the term-statistics phase instead of the search (with --fault-delay)")
	fs.DurationVar(&f.heavyAfter, "heavy-request", searcher.Defaults.HeavyAfter, "a team whose recent shard requests take longer than this on average is heavy: while other teams are active it runs at most --heavy-workers at once (negative: never)")
	fs.DurationVar(&f.heavyPause, "heavy-pause", searcher.Defaults.HeavyPause, "the most one running request of a heavy team waits, in all, for other teams' shard requests to finish, checking every few hits (negative: never)")
	fs.DurationVar(&f.heavyLinger, "heavy-linger", searcher.Defaults.HeavyLinger, "how long after another team's shard request is done a heavy team's running request still waits at its checkpoints, within --heavy-pause (negative: not at all)")
	fs.IntVar(&f.heavyWorkers, "heavy-workers", 0, "shard requests of a heavy team run at once while other teams are active (default GOMAXPROCS/2, at least 1)")
	fs.Var(&f.maxShardReply, "max-shard-reply-bytes", "most one shard reply may hold, counted as the search adds its hits (ids, stored fields, explanations), e.g. 4MiB: past it the search stops and answers response_too_large (default 0: what one NATS reply carries, the server's max_payload less 4 KiB, which is also its most)")
	f.registerWrites(fs)
}

func (f *roleFlags) registerBroker(fs *pflag.FlagSet) {
	fs.DurationVar(&f.defaultTimeout, "search-timeout", broker.Defaults.DefaultTimeout, "deadline of a search that gives no timeout_ms")
	fs.IntVar(&f.maxInFlight, "max-in-flight", broker.Defaults.MaxInFlight, "searches held at once, running (on as many workers) or waiting for a heavy team's turn; more are refused at once with 429 (overloaded)")
	fs.IntVar(&f.teamInFlight, "team-max-in-flight", 0, "searches of one team served at once, unless its limits say otherwise (quarry team set); default --max-in-flight/4")
	f.teamMemory = bytesFlag(broker.Defaults.TeamMaxSearchMemory)
	fs.Var(&f.teamMemory, "team-max-search-memory", "most memory one team's searches in flight may hold on a broker (each estimated once planned, then counted from its shards' replies), e.g. 512MiB; a search that would take its team over it is refused with 429")
	fs.Var(&f.maxResponse, "max-response-bytes", "most one search response may hold, counted as its page is cut (ids, fields, explanations, profile), e.g. 4MiB: past it the search stops with response_too_large (default 0: what one NATS reply carries, the server's max_payload less 4 KiB, which is also its most)")
	fs.IntVar(&f.maxExplain, "max-explain", broker.Defaults.MaxExplain, "most hits (from+size) a search may ask to explain (\"explain\": true); more is refused at once with query_too_complex (400)")
	fs.Float64Var(&f.shardDepth, "shard-depth", broker.Defaults.ShardDepth, "a search over several shards first asks each for this many times its share of the hits it needs (from+size, or the rankers' depth, over the shards), plus 5; a shard whose last hit still ranks among the merged hits it needs is asked again for all of them (metric quarry_broker_shard_second_rounds_total). Negative: every shard returns all of them in one round")
	fs.DurationVar(&f.heavySearch, "heavy-search", broker.Defaults.HeavyAfter, "a team whose recent searches cost more than this on average (their shards' search time and plugin calls, not their latency) is heavy: while other teams are active its searches take turns, --heavy-searches at once (negative: never)")
	fs.IntVar(&f.heavySearches, "heavy-searches", 0, "searches of one heavy team run at once on this broker while other teams are active (default GOMAXPROCS/2, at least 1)")
	fs.DurationVar(&f.heavyWait, "heavy-wait", broker.Defaults.HeavyWait, "how long a search waits in the broker's queue (a heavy team's for its turn, any for a worker) before it is refused with 429")
	fs.DurationVar(&f.rateUnit, "rate-unit", broker.Defaults.RateUnit, "under a team's rate limit a search counts once for each --rate-unit of its cost begun (its shards' search time and plugin calls), so expensive searches use up the rate sooner (negative: once, whatever its cost)")
	fs.BoolVar(&f.noHedge, "no-hedge", false, "never ask a second replica when a shard is slow")
	fs.IntVar(&f.statsCache, "stats-cache", broker.Defaults.StatsCacheSize, "queries whose global term statistics are cached per index generation (negative: none)")
	fs.IntVar(&f.statsCacheTerms, "stats-cache-terms", broker.Defaults.StatsCacheTerms, "(field, term) statistics cached, from which a new query's statistics are put together when earlier queries read its terms (negative: none)")
	fs.IntVar(&f.statsDictTerms, "stats-dictionary-terms", broker.Defaults.StatsDictionaryTerms, "a field queries read whose dictionary has at most this many terms over every shard is cached whole, so a new query's statistics are put together without a round trip even for terms no earlier query read (negative: none)")
	fs.IntVar(&f.statsMaxUpdates, "stats-max-updates", broker.Defaults.StatsMaxUpdates, fmt.Sprintf("cached statistics are fetched again once a shard has applied more than this many updates since (1-%d); lower: fresher scores while documents change, more statistics round trips", broker.MaxStatsMaxUpdates))
	fs.DurationVar(&f.statsMaxAge, "stats-max-age", broker.Defaults.StatsMaxAge, "cached statistics are fetched again once this old")
	fs.DurationVar(&f.slowQuery, "slow-query", broker.Defaults.SlowQuery, "log searches slower than this at warn level, with the request id and the profile (negative: never)")
	fs.IntVar(&f.recordPercent, "record-queries", 0, "record this percentage of search requests for replays (quarry queries export)")
	fs.Float64Var(&f.pluginLogRate, "plugin-log-rate", broker.DefaultPluginLogRate, "plugin log lines per second each team may send from a broker (quarry plugin logs); the rest are dropped and counted; negative: none")
	fs.Float64Var(&f.pluginLogProcess, "plugin-log-process-rate", broker.DefaultPluginLogProcessRate, "of those, the plugin log lines per second each team may put in this process's own log (each cut to "+strconv.Itoa(broker.PluginLogProcessBytes)+" bytes); negative: none")
	fs.Float64Var(&f.fallbackRate, "fallback-error-rate", broker.Defaults.FallbackErrorRate, "take a fail-open plugin out when more than this share of its recent calls failed")
	fs.IntVar(&f.fallbackWindow, "fallback-window", broker.Defaults.FallbackWindow, "recent calls the fallback looks at")
	fs.IntVar(&f.fallbackMin, "fallback-min-calls", broker.Defaults.FallbackMinCalls, "calls before the fallback can act")
	fs.UintVar(&f.pluginPages, "plugin-memory-pages", plugins.DefaultMemoryLimitPages, "most memory of one plugin instance, in 64 KiB pages (1024: 64 MiB)")
	fs.IntVar(&f.teamCalls, "team-max-plugin-calls", plugins.DefaultMaxCalls(), "most calls of one team's plugins running at once on this broker (negative: no cap): a plugin call takes a processor until it returns or its budget stops it, so this bounds the processors one team's plugins take from the others; the default is half of them")
	fs.IntVar(&f.teamInstances, "team-max-instances", plugins.DefaultMaxInstances, "most warm plugin instances one team's plugins may hold on this broker (negative: no cap); with --plugin-memory-pages it bounds a team's plugin memory")
	fs.IntVar(&f.warmInstances, "plugin-warm-instances", plugins.DefaultWarmInstances, "instances of each plugin made when it loads; the rest of its pool (its instances setting, "+strconv.Itoa(plugins.DefaultInstances)+" by default) is made when calls overlap, so a plugin holds the memory its concurrency needs")
	fs.DurationVar(&f.maxBudget, "plugin-max-budget", plugins.DefaultMaxBudget, "the longest time budget a plugin call may be given (a step's budget_ms): a push or activation asking for more is refused; every call also stops at its search's deadline")
	f.compileLimits = compileLimitsFlag(plugins.DefaultCompileLimits)
	fs.Var(&f.compileLimits, "plugin-compile-limits", "what a plugin module may ask of the compiler, refused before compiling when over: functions=N,body-bytes=N,locals=N,nesting=N,nesting-work=N (any of them; the others keep their defaults)")
	fs.DurationVar(&f.compileTimeout, "plugin-compile-timeout", plugins.DefaultCompileTimeout, "the longest one plugin module's compile may take: a longer one is stopped and the module refused")
	fs.DurationVar(&f.gateTimeout, "gate-timeout", registry.DefaultGateTimeout, "the longest an index's relevance gate may run on an activation, promotion or pipeline set (one at a time per index, in the background once --gate-wait is over): a gate still running then refuses the change")
	f.minFreeDisk = node.DefaultMinFreeDisk
	fs.Var(&f.minFreeDisk, "min-free-disk", "free space kept on the disks of the embedded NATS's store and of --data: below it, writes of documents are held, refused at once with insufficient_storage (507) naming the directory, until it is back above it and a half (0: not watched)")
	fs.DurationVar(&f.gateWait, "gate-wait", registry.DefaultGateWait, "how long an activation, promotion or pipeline set waits for its relevance gate before it answers gate_running (202) and the gate goes on in the background, the change going live by itself if it passes (under 1m)")
	fs.DurationVar(&f.fallbackVariant, "fallback-variant-cooldown", broker.Defaults.FallbackVariantCooldown, "a plugin version that trips the fallback in replays and evaluations (variant searches) is refused in them for this long")
	fs.Float64Var(&f.fallbackSlow, "fallback-slow-rate", broker.Defaults.FallbackSlowRate, "take a plugin with a latency budget out when more than this share of its recent calls took longer (0.01: its p99 is over the budget)")
}

// pluginLimits sets the broker's plugin limits, and its admin service's
// relevance gate bounds (node.Start checks those), on a node's config.
func (f *roleFlags) pluginLimits(cfg *node.Config) error {
	if f.pluginPages < 1 || f.pluginPages > 65536 {
		return fmt.Errorf("--plugin-memory-pages must be between 1 and 65536 (4 GiB), got %d", f.pluginPages)
	}
	if f.teamInstances == 0 {
		return fmt.Errorf("--team-max-instances must be 1 or more, or negative for no cap, got 0")
	}
	if f.teamCalls == 0 {
		return fmt.Errorf("--team-max-plugin-calls must be 1 or more, or negative for no cap, got 0")
	}
	if f.warmInstances < 1 {
		return fmt.Errorf("--plugin-warm-instances must be 1 or more, got %d", f.warmInstances)
	}
	if f.maxBudget <= 0 {
		return fmt.Errorf("--plugin-max-budget must be positive, got %s", f.maxBudget)
	}
	if f.compileTimeout <= 0 {
		return fmt.Errorf("--plugin-compile-timeout must be positive, got %s", f.compileTimeout)
	}
	cfg.PluginMemoryPages, cfg.TeamMaxInstances, cfg.PluginWarmInstances, cfg.PluginMaxBudget = uint32(f.pluginPages), f.teamInstances, f.warmInstances, f.maxBudget
	cfg.PluginCompile, cfg.PluginCompileTimeout = plugins.CompileLimits(f.compileLimits), f.compileTimeout
	cfg.GateTimeout, cfg.GateWait = f.gateTimeout, f.gateWait
	cfg.MinFreeDisk = int64(f.minFreeDisk)
	if cfg.MinFreeDisk == 0 {
		cfg.MinFreeDisk = -1 // not watched
	}
	cfg.TeamMaxPluginCalls = f.teamCalls
	return nil
}

func (f *roleFlags) indexer() *indexer.Config {
	iv := f.snapshotInterval
	if iv <= 0 {
		iv = -1
	}
	w := f.writes
	w.ApplyInterval = f.indexerApply
	return &indexer.Config{SnapshotInterval: iv, MaxBatch: f.maxBatch, Writes: w, NoSnapshotMerge: f.noSnapshotMerge}
}

func (f *roleFlags) searcher() *searcher.Config {
	return &searcher.Config{Workers: f.workers, MaxBatch: f.maxBatch, MaxPITs: f.maxPITs, ColumnBytes: f.columnBytes, Writes: f.writes, FaultDelay: f.faultDelay, FaultEvery: f.faultEvery, FaultStats: f.faultStats, DrainTimeout: f.drainTimeout,
		SlowRequest: f.slowShard, HeavyAfter: f.heavyAfter, HeavyWorkers: f.heavyWorkers, HeavyPause: f.heavyPause, HeavyLinger: f.heavyLinger, MaxReplyBytes: int(f.maxShardReply)}
}

func (f *roleFlags) broker() *broker.Config {
	return &broker.Config{DefaultTimeout: f.defaultTimeout, MaxInFlight: f.maxInFlight, TeamMaxInFlight: f.teamInFlight,
		HeavyAfter: f.heavySearch, HeavySearches: f.heavySearches, HeavyWait: f.heavyWait, RateUnit: f.rateUnit, NoHedge: f.noHedge, StatsCacheSize: f.statsCache, StatsCacheTerms: f.statsCacheTerms, StatsDictionaryTerms: f.statsDictTerms, StatsMaxUpdates: f.statsMaxUpdates, StatsMaxAge: f.statsMaxAge, RecordPercent: f.recordPercent, PluginLogRate: f.pluginLogRate, PluginLogProcessRate: f.pluginLogProcess,
		FallbackErrorRate: f.fallbackRate, FallbackWindow: f.fallbackWindow, FallbackMinCalls: f.fallbackMin, FallbackSlowRate: f.fallbackSlow, FallbackVariantCooldown: f.fallbackVariant,
		DrainTimeout: f.drainTimeout, SlowQuery: f.slowQuery, TeamMaxSearchMemory: int64(f.teamMemory), MaxResponseBytes: int(f.maxResponse), MaxExplain: f.maxExplain, ShardDepth: f.shardDepth}
}

func serveCmd(e *env) *cobra.Command {
	cmd := local(newCommand("serve", "run every role in one process on an embedded NATS server", "Runs an embedded NATS server with JetStream and every Quarry role (indexer,\nsearcher, broker, HTTP API) in one process. With --demo it also creates the\n`menu` index (4 shards) from the bundled sample catalogue.", 0, 0))
	fs := cmd.Flags()
	data := fs.String("data", defaultDataDir(e.getenv, "serve"), "directory for JetStream and shard data, locked while in use (env QUARRY_DATA)")
	natsHost := fs.String("nats-host", "127.0.0.1", "address the embedded NATS server listens on")
	natsPort := fs.Int("nats-port", 4222, "port the embedded NATS server listens on (-1: any free port)")
	natsConfig := fs.String("nats-config", "", "nats-server configuration file for the embedded server: users and permissions per team (docs/teams.md)")
	var natsSync syncFlag
	fs.Var(&natsSync, "sync", "when JetStream puts writes on disk: always (before it acknowledges them) or an interval such as 2m (faster, but a machine crash loses up to that much acknowledged data); default: the --nats-config file's sync_interval, else always (docs/operations.md)")
	natsUser := fs.String("nats-user", "", "NATS user Quarry's own roles connect as, when --nats-config requires one")
	natsPassword := fs.String("nats-password", e.getenv("QUARRY_NATS_PASSWORD"), "password of --nats-user (env QUARRY_NATS_PASSWORD)")
	httpAddr := fs.String("http", "127.0.0.1:7700", "HTTP API listen address (empty: none)")
	var hf httpAuthFlags
	hf.register(fs)
	var df httpDoorFlags
	df.register(fs)
	mf := addMetricsFlags(fs)
	demo := fs.Bool("demo", false, "create and load the demo index \"menu\" (20,000 catalogue items, 4 shards, the spelling → synonyms → georank pipeline) if it does not exist, or finish loading it if a run was stopped while loading it")
	var pipelines pipelineFlag
	fs.Var(&pipelines, "pipeline", "run the index INDEX through the plugin pipeline in FILE (repeatable)")
	var rf roleFlags
	rf.registerIndexer(fs)
	rf.registerSearcher(fs)
	fs.BoolVar(&rf.separateReplicas, "separate-replicas", false, "the searcher keeps replicas of its own (downloaded snapshots, the stream followed again) instead of serving the indexer's, as on separate machines: every update is then indexed twice in this process")
	shardsOverNATS := fs.Bool("shards-over-nats", false, "the broker asks this process's searcher through the NATS server, as it asks one on another machine, instead of directly (the same queue and limits either way; directly saves about half a millisecond a shard)")
	rf.registerBroker(fs)
	rf.registerDrain(fs)
	var rt cmdline.Runtime
	rt.Register(fs)
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		ctx := cmd.Context()
		log, err := e.logger(&rt)
		if err != nil {
			return err
		}
		stopTracing, err := rt.Tracing(ctx, "quarry-serve")
		if err != nil {
			return err
		}
		defer stopTracing()
		if err := pipelines.check(); err != nil {
			return err
		}
		startCtx, cancel := context.WithTimeout(ctx, 5*time.Minute)
		defer cancel()
		var natsOpts []nats.Option
		if *natsUser != "" {
			natsOpts = append(natsOpts, nats.UserInfo(*natsUser, *natsPassword))
		}
		cfg := node.Config{
			HTTPAuth: hf.required(*httpAddr),
			DataDir:  *data, NATSHost: *natsHost, NATSPort: *natsPort, NATSConfigFile: *natsConfig, NATSSync: time.Duration(natsSync), NATSOptions: natsOpts, HTTPAddr: *httpAddr,
			MetricsAddr: *mf.addr, Profiling: *mf.pprof, Indexer: rf.indexer(), Searcher: rf.searcher(), Broker: rf.broker(), SeparateReplicas: rf.separateReplicas, ShardsOverNATS: *shardsOverNATS, Logger: log,
		}
		if err := rf.pluginLimits(&cfg); err != nil {
			return err
		}
		if err := df.apply(&cfg); err != nil {
			return err
		}
		n, err := node.Start(startCtx, cfg)
		if err != nil {
			return df.explain(err)
		}
		defer n.Close()
		// Not ready (GET /readyz) until the demo and the pipeline files are
		// in place: traffic would find an empty index.
		release := n.Hold("loading the demo index and pipeline files")
		if err := n.WaitReady(startCtx); err != nil {
			return err
		}
		if *demo {
			if err := loadDemo(startCtx, n, log); err != nil {
				if ctx.Err() != nil {
					return fmt.Errorf("interrupted while loading the demo index; `quarry serve --demo` again finishes it")
				}
				return fmt.Errorf("loading the demo index: %w", err)
			}
		}
		if err := pipelines.apply(startCtx, n); err != nil {
			return err
		}
		release()
		log.Info("quarry is serving", "nats", n.NATSURL(), "http", n.HTTPAddr, "metrics", n.MetricsAddr, "data", *data)
		select {
		case <-ctx.Done():
			log.Info("shutting down")
			return nil
		case err := <-n.Errors():
			return err
		}
	}
	return cmd
}

// logger applies rt's process knobs (cmdline.Runtime.Apply, which also
// makes its logger, on the process's stderr, the default one) and returns
// the command's logger: rt's level and format, on e's stderr.
func (e *env) logger(rt *cmdline.Runtime) (*slog.Logger, error) {
	if _, err := rt.Apply(); err != nil {
		return nil, err
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(rt.LogLevel)); err != nil {
		return nil, fmt.Errorf("--log-level: %w", err)
	}
	opts := &slog.HandlerOptions{Level: level}
	if rt.LogFormat == "json" {
		return slog.New(slog.NewJSONHandler(e.stderr, opts)), nil
	}
	return slog.New(slog.NewTextHandler(e.stderr, opts)), nil
}

// httpAuthFlags say whether the HTTP API asks for tokens.
type httpAuthFlags struct {
	auth, insecure bool
}

func (f *httpAuthFlags) register(fs *pflag.FlagSet) {
	fs.BoolVar(&f.auth, "http-auth", false, "the HTTP API asks for a token (quarry token create) on every request and keeps each team to its own indexes; on by default when --http listens beyond loopback")
	fs.BoolVar(&f.insecure, "insecure-http", false, "serve the HTTP API without tokens even when --http listens beyond loopback: anyone who reaches it may do anything")
}

// required reports whether the HTTP API on addr asks for tokens: when
// asked to, or when it listens beyond loopback unless told not to.
func (f *httpAuthFlags) required(addr string) bool {
	if f.auth || addr == "" {
		return f.auth
	}
	return !f.insecure && !loopback(addr)
}

// loopback reports whether a listen address is only reachable from this
// machine.
func loopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// defaultDataDir is where a command keeps its data when --data is not
// given: $QUARRY_DATA, else the user's data directory
// ($XDG_DATA_HOME/quarry or ~/.local/share/quarry), one folder per command
// (serve, indexer, searcher, broker), so that nothing is written where
// quarry is run from, such as a source tree. It reads the variables with
// getenv (the home directory, with os.UserHomeDir, is the process's).
func defaultDataDir(getenv func(string) string, command string) string {
	if d := getenv("QUARRY_DATA"); d != "" {
		return d
	}
	base := getenv("XDG_DATA_HOME")
	if base == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return filepath.Join("quarry-data", command)
		}
		base = filepath.Join(home, ".local", "share")
	}
	return filepath.Join(base, "quarry", command)
}

// syncFlag is --sync: embednats.SyncAlways ("always") or an interval; zero
// when not given.
type syncFlag time.Duration

func (s *syncFlag) String() string {
	switch d := time.Duration(*s); {
	case d == embednats.SyncAlways:
		return "always"
	case d > 0:
		return d.String()
	}
	return ""
}

func (s *syncFlag) Type() string { return "always|interval" }

func (s *syncFlag) Set(v string) error {
	d, err := embednats.ParseSync(v)
	if err != nil {
		return err
	}
	*s = syncFlag(d)
	return nil
}

// pipelineFlag collects --pipeline INDEX=FILE flags.
type pipelineFlag map[string]string

func (p *pipelineFlag) String() string {
	if len(*p) == 0 {
		return ""
	}
	return fmt.Sprint(map[string]string(*p))
}

func (p *pipelineFlag) Type() string { return "INDEX=FILE" }

func (p *pipelineFlag) Set(v string) error {
	index, file, ok := strings.Cut(v, "=")
	if !ok || index == "" || file == "" {
		return fmt.Errorf("want INDEX=FILE, got %q", v)
	}
	if *p == nil {
		*p = pipelineFlag{}
	}
	(*p)[index] = file
	return nil
}

// check reads every pipeline file before anything starts: a bad one is a
// start-up error naming the flag.
func (p pipelineFlag) check() error {
	for index, file := range p {
		if _, err := broker.ReadPipelineFile(file); err != nil {
			return &node.SettingError{Setting: node.SettingPipelines, Err: fmt.Errorf("%s=%s: %w", index, file, err)}
		}
	}
	return nil
}

// apply makes each file its index's pipeline in the registry (see
// node.ApplyPipelineFile).
func (p pipelineFlag) apply(ctx context.Context, n *node.Node) error {
	for index, file := range p {
		if _, err := n.ApplyPipelineFile(ctx, index, file); err != nil {
			if api.CodeOf(err) == api.CodeNotFound {
				err = fmt.Errorf("index %q does not exist; create it first (quarry index create %s)", index, index)
			}
			return &node.SettingError{Setting: node.SettingPipelines, Err: fmt.Errorf("%s=%s: %w", index, file, err)}
		}
	}
	return nil
}

// loadDemo creates the demo index from the sample catalogue, with the
// demo pipeline (embedded in the binary: internal/demo), unless it exists
// already.
func loadDemo(ctx context.Context, n *node.Node, log *slog.Logger) error {
	c := n.Client()
	name := demo.Index
	items := catalog.Generate(catalog.DefaultSeed, catalog.DefaultSize)
	if _, err := c.Index(ctx, name); err == nil {
		done, err := demoLoaded(ctx, c, name, items[len(items)-1].ID)
		if err != nil {
			return err
		}
		if done {
			log.Info("demo index exists; not loading it again", "index", name)
			return nil
		}
		// A first run stopped while loading it (Ctrl-C, a crash): the
		// pipeline and the documents go in again, each at most once more
		// (the same pipeline is applied once; documents are upserts).
		log.Info("demo index exists but its loading did not finish; finishing it", "index", name)
	} else if !errors.Is(err, api.ErrNotFound) {
		return err
	} else {
		def := api.IndexDefinition{Name: name, Shards: 4, Mapping: catalog.Mapping(), Query: demo.Query}
		if _, err := c.CreateIndexDef(ctx, def); err != nil {
			return err
		}
	}
	file, modules, err := demo.Pipeline()
	if err != nil {
		return err
	}
	log.Info("registering the demo pipeline (spelling, synonyms, georank)", "index", name)
	if _, err := n.ApplyPipelineModules(ctx, name, demo.PipelineName, file, modules, "demo"); err != nil {
		return err
	}
	var buf bytes.Buffer
	if err := catalog.WriteNDJSON(&buf, items); err != nil {
		return err
	}
	log.Info("loading demo catalogue", "index", name, "docs", catalog.DefaultSize)
	start := time.Now()
	res, err := c.Bulk(ctx, name, &buf, client.BulkOptions{})
	if err != nil {
		return err
	}
	buf = bytes.Buffer{}
	// Every shard served before the demo is called ready: after an
	// interrupted first run the searchers replay the stream, which the
	// load above made longer, before they serve a shard.
	for {
		st, err := c.Status(ctx, name)
		if err != nil {
			return err
		}
		if st.DocsFrom == client.DocsFromSearchers {
			break
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
	// Loading took several times the memory serving needs (the catalogue,
	// the batches, the segments built and merged): give the freed part
	// back to the operating system now rather than as the scavenger gets
	// to it (docs/performance.md, "Memory of quarry serve --demo").
	debug.FreeOSMemory()
	log.Info("demo ready", "index", name, "docs", res.Stored, "generation", res.Snapshot.Generation,
		"took", time.Since(start).Round(time.Millisecond), "try", `quarry search menu "spicy noodles"`)
	return nil
}

// demoLoaded says whether the demo index's loading finished: its pipeline
// was registered and the catalogue's last item stored (the bulk load
// stores the items in order, after the pipeline). A deleted last item was
// stored too.
func demoLoaded(ctx context.Context, c *client.Client, name, lastID string) (bool, error) {
	spec, err := c.Pipeline(ctx, name)
	if err != nil {
		return false, err
	}
	if spec.Revision == 0 {
		return false, nil
	}
	_, err = c.Get(ctx, name, lastID)
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, api.ErrNotFound):
		return strings.Contains(err.Error(), "was deleted"), nil
	}
	return false, err
}

// roleCmd runs one role against an external NATS deployment.
func roleCmd(e *env, nf *natsFlags, role string) *cobra.Command {
	short := map[string]string{
		"indexer":  "run the indexer against a NATS deployment",
		"searcher": "run a searcher against a NATS deployment",
		"broker":   "run a broker (and the HTTP API) against a NATS deployment",
	}[role]
	about := map[string]string{
		"indexer":  "Follows the document stream, keeps a replica of every shard and publishes\nsnapshot generations to the object store.",
		"searcher": "Downloads shard snapshots, replays the stream after them and answers shard\nrequests on quarry.v1.shard.<index>.<shard> (a queue group per shard).",
		"broker":   "Answers quarry.v1.search.<index> (micro service `quarry`): fans a query out\nto every shard and merges the results. With --http it also serves the HTTP API.",
	}[role] + "\nIt makes none of Quarry's JetStream streams and buckets: `quarry init` does\n(once, before or beside the roles); it waits for them, up to --timeout."
	cmd := newCommand(role, short, about, 0, 0)
	fs := cmd.Flags()
	data := fs.String("data", defaultDataDir(e.getenv, role), "directory for this role's local files, locked while in use: one per process (env QUARRY_DATA)")
	index := fs.String("index", "", "serve only this index (default: every index)")
	shards := fs.String("shards", "", "searcher: serve only these shards, e.g. 0,1 (needs --index)")
	httpAddr := fs.String("http", "", "broker: HTTP API listen address (default: none)")
	var hf httpAuthFlags
	var df httpDoorFlags
	if role == "broker" {
		hf.register(fs)
		df.register(fs)
	}
	mf := addMetricsFlags(fs)
	replicas := fs.Int("replicas", 0, "the JetStream replicas this role expects of Quarry's streams and buckets, 1 to 5: it refuses to start if the deployment's differ (quarry init --replicas N decides them) (default: no check)")
	var pipelines pipelineFlag
	if role == "broker" {
		fs.Var(&pipelines, "pipeline", "run the index INDEX through the plugin pipeline in FILE (repeatable)")
	}
	var rf roleFlags
	switch role {
	case "indexer":
		rf.registerIndexer(fs)
	case "searcher":
		rf.registerSearcher(fs)
		rf.registerDrain(fs)
		fs.IntVar(&rf.maxBatch, "max-batch", searcher.Defaults.MaxBatch, "most documents applied to a shard in one bleve batch")
	case "broker":
		rf.registerBroker(fs)
		rf.registerDrain(fs)
	}
	var rt cmdline.Runtime
	rt.Register(fs)
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		ctx := cmd.Context()
		log, err := e.logger(&rt)
		if err != nil {
			return err
		}
		stopTracing, err := rt.Tracing(ctx, "quarry-"+role)
		if err != nil {
			return err
		}
		defer stopTracing()
		opts, err := nf.options()
		if err != nil {
			return err
		}
		if *replicas != 0 {
			if err := api.CheckReplicas(*replicas); err != nil {
				return fmt.Errorf("--%w", err)
			}
		}
		cfg := node.Config{DataDir: *data, NATSURL: nf.url, NATSOptions: opts, Replicas: *replicas, BindResources: true, MetricsAddr: *mf.addr, Profiling: *mf.pprof, Logger: log}
		switch role {
		case "indexer":
			cfg.Indexer = rf.indexer()
			cfg.Indexer.Index = *index
		case "searcher":
			cfg.Searcher = rf.searcher()
			cfg.Searcher.Index = *index
			if cfg.Searcher.Shards, err = parseShards(*shards); err != nil {
				return err
			}
		case "broker":
			cfg.Broker = rf.broker()
			if err := rf.pluginLimits(&cfg); err != nil {
				return err
			}
			cfg.HTTPAddr, cfg.HTTPAuth = *httpAddr, hf.required(*httpAddr)
			if err := df.apply(&cfg); err != nil {
				return err
			}
		}
		if *shards != "" && role != "searcher" {
			return fmt.Errorf("--shards is a searcher flag")
		}
		if err := pipelines.check(); err != nil {
			return err
		}
		startCtx, cancel := context.WithTimeout(ctx, nf.timeout)
		defer cancel()
		n, err := node.Start(startCtx, cfg)
		if err != nil {
			return df.explain(err)
		}
		defer n.Close()
		if len(pipelines) > 0 {
			if err := n.WaitReady(startCtx); err != nil {
				return err
			}
			if err := pipelines.apply(startCtx, n); err != nil {
				return err
			}
		}
		log.Info("role started", "role", role, "nats", nf.url, "metrics", n.MetricsAddr)
		select {
		case <-ctx.Done():
			log.Info("shutting down", "role", role)
			return nil
		case err := <-n.Errors():
			return err
		}
	}
	return cmd
}

func parseShards(s string) ([]int, error) {
	if s == "" {
		return nil, nil
	}
	var out []int
	for _, part := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(part))
		if err != nil || n < 0 || n >= api.MaxShards {
			return nil, fmt.Errorf("--shards: bad shard %q", part)
		}
		out = append(out, n)
	}
	return out, nil
}

// compileLimitsFlag is --plugin-compile-limits: name=value pairs, each
// changing one of plugins.CompileLimits.
type compileLimitsFlag plugins.CompileLimits

func (f *compileLimitsFlag) String() string {
	return fmt.Sprintf("functions=%d,body-bytes=%d,locals=%d,nesting=%d,nesting-work=%d", f.Functions, f.BodyBytes, f.Locals, f.Nesting, f.NestingWork)
}

func (f *compileLimitsFlag) Type() string { return "limits" }

func (f *compileLimitsFlag) Set(s string) error {
	for part := range strings.SplitSeq(s, ",") {
		name, value, ok := strings.Cut(strings.TrimSpace(part), "=")
		n, err := strconv.ParseUint(value, 10, 64)
		if !ok || err != nil || n == 0 {
			return fmt.Errorf("%q: want name=N with N a positive whole number, names functions, body-bytes, locals, nesting and nesting-work", part)
		}
		small := func(dst *uint32) error {
			if n > 1<<32-1 {
				return fmt.Errorf("%s=%d: at most %d", name, n, uint32(1<<32-1))
			}
			*dst = uint32(n)
			return nil
		}
		switch name {
		case "functions":
			err = small(&f.Functions)
		case "body-bytes":
			err = small(&f.BodyBytes)
		case "locals":
			err = small(&f.Locals)
		case "nesting":
			err = small(&f.Nesting)
		case "nesting-work":
			f.NestingWork = n
		default:
			err = fmt.Errorf("%q: unknown limit %q (functions, body-bytes, locals, nesting, nesting-work)", part, name)
		}
		if err != nil {
			return err
		}
	}
	return nil
}
