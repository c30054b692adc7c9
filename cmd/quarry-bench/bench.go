package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/quarrysearch/quarry/api"
	"github.com/quarrysearch/quarry/broker"
	"github.com/quarrysearch/quarry/indexer"
	"github.com/quarrysearch/quarry/internal/catalog"
	"github.com/quarrysearch/quarry/internal/cmdline"
	"github.com/quarrysearch/quarry/internal/loadgen"
	"github.com/quarrysearch/quarry/internal/shard"
	"github.com/quarrysearch/quarry/plugins"
	"github.com/quarrysearch/quarry/searcher"
)

// The kinds of measurement quarry bench makes of every setup.
const (
	loopOpen   = "open"
	loopClosed = "closed"
)

// benchConfig is a checked quarry bench run.
type benchConfig struct {
	Setups         []string
	Loops          []string
	Rate           float64
	Duration       time.Duration
	Warmup         time.Duration
	Concurrency    int
	Docs           int
	Shards         int
	Seed           uint64
	QueriesFile    string
	QueryCount     int
	Size           int
	Fields         []string
	Pipeline       string
	Spin           time.Duration
	MaxOutstanding int
	Timeout        time.Duration
	Check          int
	Out            string
	DataDir        string
	PluginCache    string
	// WriteRates and WriteRounds: the mixed loop's upserts a second,
	// each run in turn, WriteRounds times.
	WriteRates  []float64
	WriteRounds int
	// ProfileDir, when set, receives a CPU profile of every closed loop
	// and mixed run, and the process's mutex and block profiles after it.
	ProfileDir string
	// Turns splits each setup's open and closed loops into this many
	// turns of Duration/Turns, the setups taking turns, so that the
	// machine's drift over a run falls on every setup alike (1: each
	// setup's loop at once).
	Turns int
	// Writes paces how Quarry's searcher applies updates, and
	// IndexerWrites its indexer (the roles' flags of the same names).
	Writes, IndexerWrites shard.WriteOptions
	// SeparateReplicas: the searcher keeps replicas of its own
	// (node.Config.SeparateReplicas, quarry serve's flag).
	SeparateReplicas bool
	// ShardsOverNATS: the broker asks its node's searcher through the
	// NATS server (node.Config.ShardsOverNATS, quarry serve's flag).
	ShardsOverNATS bool
	// TeamMaxPluginCalls caps the bench team's WebAssembly plugin calls
	// running at once (node.Config.TeamMaxPluginCalls, quarry serve's
	// flag; 0: its default, half the processors; negative: no cap).
	// Native plugins are not capped.
	TeamMaxPluginCalls int
	// ShardDepth is the broker's first-round depth for each shard
	// (broker.Config.ShardDepth, quarry serve's --shard-depth; 0: its
	// default; negative: every shard returns all K at once).
	ShardDepth float64
	// ColumnBytes bounds each replica's columns (searcher.Config's,
	// quarry serve's --column-bytes; 0: its default; negative: none, a
	// ranker's candidates' fields load from stored documents).
	ColumnBytes int64
	// StatsCache is the broker's statistics cache size (negative: none,
	// every query pays the statistics phase).
	StatsCache int
	// StatsCacheTerms is how many (field, term) statistics the broker
	// keeps to put a new query's statistics together (negative: none).
	StatsCacheTerms int
	// StatsDictionaryTerms bounds the fields whose whole dictionary the
	// broker caches (broker.Config.StatsDictionaryTerms).
	StatsDictionaryTerms int
	// NoSnapshotMerge leaves the bulk load's segments unmerged (the
	// indexer's flag of the same name).
	NoSnapshotMerge bool
}

const benchAbout = `Measures Quarry side by side with bleve, on the same documents and the same
cores (everything runs in this process), and the demo plugin pipeline in
WebAssembly against the same Go code run natively. The setups (--setups):

  bleve          bleve in-process, one scorch index (the limit)
  bleve-alias    a bleve IndexAlias over the same documents split into --shards
                 indexes as Quarry splits them (sharding without Quarry)
  quarry         Quarry with --shards shards and no plugins: embedded NATS,
                 indexer, searcher and broker, queries through the Go client
  quarry-wasm    the same with the pipeline of --pipeline, in WebAssembly
  quarry-native  the same pipeline as native Go, through the same encoding

Each setup is measured in an open loop (--rate queries a second, latency
counted from each query's scheduled send time, so a stall is not hidden:
no coordinated omission) and a closed loop (--concurrency callers, each
sending its next query when the last is answered: maximum throughput).
Queries come from --queries (one a line: plain text, or a JSON search
request as 'quarry plugin test --queries' reads them) or are generated from
the sample catalogue. Prints p50, p90, p99, p99.9, max, throughput and
errors per setup and the ratios; --out writes the JSON report, which
'quarry bench plot REPORT' turns into an SVG latency plot.

--loops mixed measures Quarry's setups (not bleve's) in the open loop
while documents of the index are upserted at each of --write-rates a
second (0: none), one rate after another in the same run, --write-rounds
times: the searches' p50, p99 and p99.9 per write rate, their ratios to
the run without writes, and each upsert's freshness (from the call until
the searcher of its shard has applied it, so that searches see it).

  quarry bench --setups quarry --loops mixed --rate 100 --duration 30s

The defaults take about a minute and a half on 2 cores (the first run also
builds the example plugins with the Go toolchain: run from the repository's
root for the demo pipeline).

  quarry bench --out report.json
  quarry bench plot report.json > latency.svg`

// runBench runs `quarry bench` and `quarry bench plot`.
func runBench(ctx context.Context, args []string) error {
	if len(args) > 0 && args[0] == "plot" {
		return runBenchPlot(args[1:], os.Stdout)
	}
	cfg, rtf, err := parseBench(args)
	if err != nil {
		return err
	}
	log, err := rtf.Apply()
	if err != nil {
		return api.BadRequest("%v", err)
	}
	return bench(ctx, cfg, log, os.Stdout, os.Stderr, strings.Join(append([]string{"quarry", "bench"}, args...), " "))
}

// parseBench parses and checks quarry bench's flags.
func parseBench(args []string) (*benchConfig, *cmdline.Runtime, error) {
	fs := cmdline.NewFlagSet("bench", "", benchAbout)
	var (
		setups, loops, fields string
		seed                  uint64
		rtf                   cmdline.Runtime
	)
	cfg := &benchConfig{}
	fs.StringVar(&setups, "setups", "all", "setups to run, comma-separated: "+strings.Join(benchSetupNames, ", ")+", or all")
	fs.StringVar(&loops, "loops", "open,closed", "measurements to make of each setup: open (fixed rate), closed (max throughput), mixed (the open loop while documents are upserted at each of --write-rates; Quarry's setups only), comma-separated")
	var writeRates string
	fs.StringVar(&writeRates, "write-rates", "0,1,10,100", "mixed loop: upserts a second during the searches, comma-separated, each measured in turn (0: no writes, the reference)")
	fs.StringVar(&cfg.ProfileDir, "profile-dir", "", "write a CPU profile of each closed loop (SETUP-closed.cpu.pprof) and of each mixed run (SETUP-RATE-ROUND.cpu.pprof) and the mutex and block profiles so far after it (.mutex.pprof, .block.pprof) into DIR, for go tool pprof")
	fs.IntVar(&cfg.Turns, "turns", 1, "open and closed loops: split each setup's --duration into N turns, the setups taking turns (each turn warmed up again), and report each setup's turns together: a shared machine's drift over the run then falls on every setup alike. With --profile-dir, each closed turn writes SETUP-closed.TURN.cpu.pprof")
	fs.IntVar(&cfg.WriteRounds, "write-rounds", 1, "mixed loop: how many times to run every write rate in turn (alternating them; the ratios are the rounds' medians)")
	fs.Float64Var(&cfg.Rate, "rate", 50, "open loop: queries sent a second (keep it well below every setup's closed-loop throughput, or the latencies measure a growing queue; 50 is about half of quarry-wasm's on 2 cores)")
	fs.DurationVar(&cfg.Duration, "duration", 5*time.Second, "measured time of each setup's open loop and of its closed loop (for a p99.9, make it at least 1000/--rate seconds)")
	fs.DurationVar(&cfg.Warmup, "warmup", time.Second, "before each measurement, this long of the same load, not counted")
	fs.IntVar(&cfg.Concurrency, "concurrency", 8, "closed loop: concurrent callers")
	fs.IntVar(&cfg.Docs, "docs", catalog.DefaultSize, "documents: N items of the sample catalogue (generated with --seed)")
	fs.IntVar(&cfg.Shards, "shards", 4, "shards of the Quarry index and of the bleve alias")
	fs.IntVar(&cfg.StatsCache, "stats-cache", broker.Defaults.StatsCacheSize, "Quarry: queries whose global term statistics the broker caches (negative: none; with --stats-cache-terms -1 every query pays the statistics phase)")
	fs.BoolVar(&cfg.NoSnapshotMerge, "no-snapshot-merge", false, "Quarry: leave the bulk load's segments as they are (by default the snapshot it ends with merges each shard's into one)")
	fs.IntVar(&cfg.StatsCacheTerms, "stats-cache-terms", broker.Defaults.StatsCacheTerms, "Quarry: (field, term) statistics the broker caches, from which a new query's statistics are put together (negative: none, so a query seen for the first time pays the statistics phase)")
	fs.IntVar(&cfg.StatsDictionaryTerms, "stats-dictionary-terms", broker.Defaults.StatsDictionaryTerms, "Quarry: a field whose dictionary has at most this many terms is cached whole by the broker, so a new query's statistics need no round trip (negative: none)")
	fs.Uint64Var(&seed, "seed", catalog.DefaultSeed, "seed of the catalogue and of the generated queries")
	fs.StringVar(&cfg.QueriesFile, "queries", "", "FILE of queries, one a line (text, or a JSON search request); default: generated from the catalogue")
	fs.IntVar(&cfg.QueryCount, "query-count", 1000, "generated queries (without --queries); the runs cycle through them")
	fs.IntVar(&cfg.Size, "size", 10, "hits per generated query")
	fs.StringVar(&fields, "fields", "name,price", "stored fields returned by generated queries, comma-separated (empty: none)")
	fs.StringVar(&cfg.Pipeline, "pipeline", "examples/pipelines/menu.json", "pipeline file of quarry-wasm and quarry-native (its plugins must have native builds: spelling, synonyms, georank, ltr)")
	fs.DurationVar(&cfg.Spin, "spin", time.Millisecond, "open loop: the sender wakes this long before each send time and yields until it (Go's timers wake up to 1ms late, and that lateness would count as latency); 0: sleep only")
	fs.IntVar(&cfg.MaxOutstanding, "max-outstanding", 10000, "open loop: most queries in flight; at the cap the sender waits, and the wait counts as latency")
	fs.DurationVar(&cfg.Timeout, "timeout", 10*time.Second, "each query's deadline (a query over it is an error)")
	fs.IntVar(&cfg.Check, "check", 50, "before measuring, run the first N queries on every setup: any error stops the run, and the hits of Quarry and bleve (and of WebAssembly and native) are compared")
	fs.StringVar(&cfg.Out, "out", "", "write the JSON report to FILE")
	fs.StringVar(&cfg.DataDir, "data", "", "directory for the indexes (default: a temporary one, removed afterwards)")
	fs.StringVar(&cfg.PluginCache, "plugin-cache", "", "directory keeping built and compiled plugins between runs (default: in --data)")
	cmdline.RegisterWrites(fs, &cfg.Writes)
	var indexerApply time.Duration
	fs.DurationVar(&indexerApply, "indexer-apply-interval", indexer.DefaultApplyInterval, "the indexer's least time between two batches applied to a shard with --separate-replicas, as quarry serve's flag; negative: apply as they arrive")
	fs.IntVar(&cfg.TeamMaxPluginCalls, "team-max-plugin-calls", plugins.DefaultMaxCalls(), "most calls of the team's WebAssembly plugins running at once, as quarry serve's flag (negative: no cap); native plugins have none, so quarry-wasm / quarry-native compares the engines only with no cap")
	fs.Int64Var(&cfg.ColumnBytes, "column-bytes", searcher.Defaults.ColumnBytes, "most bytes of columns each shard's replica keeps of the short fields searches ask for, as quarry serve's flag (negative: none; the fields load from stored documents)")
	fs.Float64Var(&cfg.ShardDepth, "shard-depth", broker.Defaults.ShardDepth, "each of several shards is first asked for this many times its share of the hits the merge needs, plus 5, and asked again only if its last hit ranks among them, as quarry serve's flag (negative: every shard returns them all at once)")
	fs.BoolVar(&cfg.SeparateReplicas, "separate-replicas", false, "Quarry's searcher keeps replicas of its own instead of serving the indexer's, as quarry serve's flag (every update indexed twice)")
	fs.BoolVar(&cfg.ShardsOverNATS, "shards-over-nats", false, "Quarry's broker asks its node's searcher through the NATS server instead of directly, as quarry serve's flag")
	rtf.Register(fs)
	rtf.LogLevel = "error" // the roles' warnings (slow queries…) would flood the output under load
	fs.Lookup("log-level").DefValue = "error"
	if _, err := cmdline.Parse(fs, args, 0, 0); err != nil {
		return nil, nil, err
	}
	cfg.Seed = seed
	cfg.IndexerWrites = cfg.Writes
	cfg.IndexerWrites.ApplyInterval = indexerApply
	var err error
	if cfg.Setups, err = benchList("--setups", setups, benchSetupNames); err != nil {
		return nil, nil, err
	}
	if cfg.Loops, err = benchList("--loops", loops, []string{loopOpen, loopClosed, loopMixed}); err != nil {
		return nil, nil, err
	}
	if cfg.WriteRates, err = parseRates(writeRates); err != nil {
		return nil, nil, err
	}
	for _, f := range strings.Split(fields, ",") {
		if f = strings.TrimSpace(f); f != "" {
			cfg.Fields = append(cfg.Fields, f)
		}
	}
	if err := cfg.check(); err != nil {
		return nil, nil, err
	}
	return cfg, &rtf, nil
}

// isQuarrySetup reports whether a setup runs Quarry (and so can take
// writes).
func isQuarrySetup(name string) bool {
	return name == setupQuarry || name == setupQuarryWasm || name == setupQuarryNative
}

// benchList parses a comma-separated choice among names ("all": every
// one), keeping the order of names.
func benchList(flagName, value string, names []string) ([]string, error) {
	if strings.TrimSpace(value) == "all" {
		return names, nil
	}
	chosen := map[string]bool{}
	for _, v := range strings.Split(value, ",") {
		v = strings.TrimSpace(v)
		if !slices.Contains(names, v) {
			return nil, api.BadRequest("%s: unknown %q (choose from %s, or all)", flagName, v, strings.Join(names, ", "))
		}
		chosen[v] = true
	}
	var out []string
	for _, n := range names {
		if chosen[n] {
			out = append(out, n)
		}
	}
	return out, nil
}

// check refuses settings that cannot make a meaningful run.
func (c *benchConfig) check() error {
	switch {
	case !(c.Rate > 0) || c.Rate > 1e6:
		return api.BadRequest("--rate must be more than 0 and at most 1,000,000 queries a second, got %g", c.Rate)
	case c.Duration <= 0 || c.Duration > 24*time.Hour:
		return api.BadRequest("--duration must be more than 0 and at most 24h, got %s", c.Duration)
	case c.Warmup < 0 || c.Warmup > time.Hour:
		return api.BadRequest("--warmup must be 0 to 1h, got %s", c.Warmup)
	case c.Concurrency < 1 || c.Concurrency > 10000:
		return api.BadRequest("--concurrency must be 1 to 10,000, got %d", c.Concurrency)
	case c.Docs < 1 || c.Docs > 10_000_000:
		return api.BadRequest("--docs must be 1 to 10,000,000, got %d", c.Docs)
	case c.Shards < 1 || c.Shards > 1024:
		return api.BadRequest("--shards must be 1 to 1024, got %d", c.Shards)
	case c.QueryCount < 1:
		return api.BadRequest("--query-count must be at least 1, got %d", c.QueryCount)
	case c.Size < 1 || c.Size > api.MaxWindow:
		return api.BadRequest("--size must be 1 to %d, got %d", api.MaxWindow, c.Size)
	case c.Spin < 0 || c.Spin > 100*time.Millisecond:
		return api.BadRequest("--spin must be 0 to 100ms, got %s", c.Spin)
	case c.MaxOutstanding < 1:
		return api.BadRequest("--max-outstanding must be at least 1, got %d", c.MaxOutstanding)
	case c.Timeout <= 0:
		return api.BadRequest("--timeout must be more than 0, got %s", c.Timeout)
	case c.Turns < 1 || c.Turns > 1000:
		return api.BadRequest("--turns must be 1 to 1,000, got %d", c.Turns)
	case c.Duration/time.Duration(c.Turns) < 100*time.Millisecond:
		return api.BadRequest("--duration %s over --turns %d leaves turns under 100ms", c.Duration, c.Turns)
	case c.WriteRounds < 1 || c.WriteRounds > 1000:
		return api.BadRequest("--write-rounds must be 1 to 1,000, got %d", c.WriteRounds)
	case slices.Contains(c.Loops, loopMixed) && !slices.ContainsFunc(c.Setups, isQuarrySetup):
		return api.BadRequest("--loops mixed measures Quarry's setups: add quarry, quarry-wasm or quarry-native to --setups")
	case c.Check < 0:
		return api.BadRequest("--check must be 0 or more, got %d", c.Check)
	case float64(c.Duration+c.Warmup)/float64(time.Second)*c.Rate > 1e8:
		return api.BadRequest("--rate %g for --duration %s is too many queries", c.Rate, c.Duration)
	}
	return nil
}

// bench runs every setup and loop of cfg, printing progress to progress
// and the results to out. command is recorded in the report.
func bench(ctx context.Context, cfg *benchConfig, log *slog.Logger, out, progress io.Writer, command string) error {
	started := time.Now()
	if cfg.DataDir == "" {
		dir, err := os.MkdirTemp("", "quarry-bench-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		cfg.DataDir = dir
	} else if err := os.MkdirAll(cfg.DataDir, 0o755); err != nil {
		return fmt.Errorf("--data: %w", err)
	}
	if cfg.PluginCache == "" {
		cfg.PluginCache = filepath.Join(cfg.DataDir, "plugins")
	}
	if cfg.Out != "" { // fail now, not after the run
		f, err := os.OpenFile(cfg.Out, os.O_WRONLY|os.O_CREATE, 0o644)
		if err != nil {
			return fmt.Errorf("--out: %w", err)
		}
		f.Close()
	}
	items, docs, err := benchDocs(cfg.Seed, cfg.Docs)
	if err != nil {
		return err
	}
	source := "generated"
	var queries []api.SearchRequest
	if cfg.QueriesFile != "" {
		if queries, err = loadgen.ReadRequests(cfg.QueriesFile); err != nil {
			return api.BadRequest("--queries: %v", err)
		}
		if len(queries) == 0 {
			return api.BadRequest("--queries: %s holds no query", cfg.QueriesFile)
		}
		source = cfg.QueriesFile
	} else {
		queries = generateQueries(items, cfg.QueryCount, cfg.Seed, cfg.Size, cfg.Fields)
	}
	fmt.Fprintf(progress, "quarry bench: %s documents, %d shards, %d queries (%s); setting up %s\n",
		cmdline.Thousands(int64(cfg.Docs)), cfg.Shards, len(queries), source, strings.Join(cfg.Setups, ", "))
	env, err := startBenchSetups(ctx, cfg, docs, log, progress)
	if err != nil {
		return err
	}
	defer env.Close()
	checks, err := benchChecks(ctx, env, queries, cfg.Check)
	if err != nil {
		return err
	}
	rep := newBenchReport(cfg, command, started, len(queries), source)
	rep.Checks = checks
	for _, loop := range cfg.Loops {
		if loop == loopMixed {
			for _, s := range env.setups {
				if !s.quarry {
					continue // the mixed loop is Quarry's setups'
				}
				runs, err := benchMixed(ctx, cfg, s, queries, progress)
				if err != nil {
					return err
				}
				rep.Mixed = append(rep.Mixed, runs...)
			}
			continue
		}
		if err := benchLoop(ctx, cfg, env, rep, loop, queries, progress); err != nil {
			return err
		}
	}
	rep.finish(time.Since(started))
	rep.writeText(out)
	if cfg.Out != "" {
		if err := rep.save(cfg.Out); err != nil {
			return err
		}
		fmt.Fprintf(progress, "report written to %s (plot it: quarry bench plot %s > latency.svg)\n", cfg.Out, cfg.Out)
	}
	return nil
}

// benchLoop measures loop (open or closed) on every setup of env, in
// cfg.Turns turns of cfg.Duration/cfg.Turns each, the setups taking
// turns, and adds each setup's turns together to rep.
func benchLoop(ctx context.Context, cfg *benchConfig, env *benchEnv, rep *benchReport, loop string, queries []api.SearchRequest, progress io.Writer) error {
	results := make([]*loadgen.Result, len(env.setups))
	stats := make([]map[string]float64, len(env.setups))
	calls := make([][]pluginCounts, len(env.setups))
	turn := cfg.Duration / time.Duration(cfg.Turns)
	for t := range cfg.Turns {
		for i, s := range env.setups {
			if err := ctx.Err(); err != nil {
				return err
			}
			if s.before != nil {
				s.before()
			}
			runtime.GC() // every measurement starts from a collected heap
			statsBefore := env.statistics()
			if t == 0 {
				// A setup's own pipeline: only its searches call it.
				calls[i] = pluginCalls(s.pipeline)
			}
			target := func(ctx context.Context, i int) error {
				_, err := s.search(ctx, &queries[i%len(queries)])
				return err
			}
			var res *loadgen.Result
			var err error
			if loop == loopOpen {
				res, err = loadgen.OpenLoop(ctx, loadgen.OpenConfig{Rate: cfg.Rate, Duration: turn, Warmup: cfg.Warmup,
					MaxInFlight: cfg.MaxOutstanding, Spin: cfg.Spin, Timeout: cfg.Timeout}, target)
			} else {
				name := s.name + "-closed"
				if cfg.Turns > 1 {
					name = fmt.Sprintf("%s.%d", name, t+1)
				}
				stop, perr := startProfiles(cfg.ProfileDir, name)
				if perr != nil {
					return perr
				}
				res, err = loadgen.ClosedLoop(ctx, loadgen.ClosedConfig{Concurrency: cfg.Concurrency, Duration: turn, Warmup: cfg.Warmup,
					Timeout: cfg.Timeout}, target)
				if perr := stop(); perr != nil && err == nil {
					err = perr
				}
			}
			if err != nil {
				return fmt.Errorf("%s, %s loop: %w", s.name, loop, err)
			}
			if results[i] == nil {
				results[i], stats[i] = res, map[string]float64{}
			} else {
				results[i].Merge(res)
			}
			for src, n := range statsSince(statsBefore, env.statistics()) {
				stats[i][src] += n
			}
			if t < cfg.Turns-1 {
				continue
			}
			// The setup's last turn: its measurement, all turns together.
			run := rep.add(s, loop, results[i])
			if s.quarry {
				run.Statistics = stats[i]
			}
			run.Plugins = callsSince(calls[i], pluginCalls(s.pipeline))
			fmt.Fprintf(progress, "  %-6s loop  %-13s %7s ok %4d errors  %8.1f q/s  p50 %s  p99 %s\n", loop, s.name,
				cmdline.Thousands(run.OK), run.Errors, run.Throughput, fmtUS(run.Latency.P50US), fmtUS(run.Latency.P99US))
		}
	}
	return nil
}

// benchChecks runs the first n queries once on every setup (which warms
// them too): an error stops the run. It then compares the hits of setups
// that should agree.
func benchChecks(ctx context.Context, env *benchEnv, queries []api.SearchRequest, n int) ([]benchCheck, error) {
	n = min(n, len(queries))
	if n == 0 {
		return nil, nil
	}
	hits := map[string][][]benchHit{}
	for _, s := range env.setups {
		if s.before != nil {
			s.before()
		}
		for i := range n {
			qctx, cancel := context.WithTimeout(ctx, env.cfg.Timeout)
			got, err := s.search(qctx, &queries[i])
			cancel()
			if err != nil {
				return nil, fmt.Errorf("setup %s: query %d (%q): %w", s.name, i+1, queries[i].Q, err)
			}
			hits[s.name] = append(hits[s.name], got)
		}
	}
	var out []benchCheck
	for _, p := range [][2]string{{setupQuarry, setupBleve}, {setupBleveAlias, setupBleve}, {setupQuarryNative, setupQuarryWasm}} {
		a, b := hits[p[0]], hits[p[1]]
		if a == nil || b == nil {
			continue
		}
		c := benchCheck{Setup: p[0], Against: p[1], Queries: n}
		for i := range a {
			if sameHits(a[i], b[i]) {
				c.Same++
			} else if c.FirstDiff == "" {
				c.FirstDiff = fmt.Sprintf("query %d %q: %v, against %v", i+1, queries[i].Q, a[i], b[i])
			}
		}
		out = append(out, c)
	}
	return out, nil
}
