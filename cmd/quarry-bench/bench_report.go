package main

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"runtime"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/quarrysearch/quarry/broker"
	"github.com/quarrysearch/quarry/internal/cmdline"
	"github.com/quarrysearch/quarry/internal/loadgen"
	"github.com/quarrysearch/quarry/plugins"
)

// benchReportVersion is the version of the report's format.
const benchReportVersion = 1

// benchReport is quarry bench's JSON report (--out): the run's settings
// and machine, every setup's measurements, the ratios and the checks.
// `quarry bench plot` draws it. Durations are in microseconds (_us) or
// seconds (_s).
type benchReport struct {
	Version int                 `json:"version"`
	Quarry  string              `json:"quarry"`
	Command string              `json:"command"`
	Started time.Time           `json:"started"`
	TookS   float64             `json:"took_s"`
	Machine benchMachine        `json:"machine"`
	Config  benchReportConfig   `json:"config"`
	Setups  []*benchSetupReport `json:"setups"`
	Ratios  []benchRatio        `json:"ratios"`
	Checks  []benchCheck        `json:"checks,omitempty"`
	// Mixed is the mixed loop's runs (--loops mixed), in the order run.
	Mixed []*benchMixedRun `json:"mixed,omitempty"`
}

// benchMachine is where the run ran.
type benchMachine struct {
	CPUs       int    `json:"cpus"`
	GOMAXPROCS int    `json:"gomaxprocs"`
	GOOS       string `json:"goos"`
	GOARCH     string `json:"goarch"`
	Go         string `json:"go"`
}

// benchReportConfig is the run's settings.
type benchReportConfig struct {
	Setups         []string  `json:"setups"`
	Loops          []string  `json:"loops"`
	WriteRates     []float64 `json:"write_rates,omitempty"`
	WriteRounds    int       `json:"write_rounds,omitempty"`
	Turns          int       `json:"turns,omitempty"` // more than 1: the setups took turns (--turns)
	Docs           int       `json:"docs"`
	Shards         int       `json:"shards"`
	Seed           uint64    `json:"seed"`
	Queries        int       `json:"queries"`
	QuerySource    string    `json:"query_source"`
	Rate           float64   `json:"rate"`
	DurationS      float64   `json:"duration_s"`
	WarmupS        float64   `json:"warmup_s"`
	Concurrency    int       `json:"concurrency"`
	Pipeline       string    `json:"pipeline,omitempty"`
	SpinUS         float64   `json:"spin_us"`
	MaxOutstanding int       `json:"max_outstanding"`
	TimeoutS       float64   `json:"timeout_s"`
}

// benchSetupReport is one setup's measurements.
type benchSetupReport struct {
	Name   string    `json:"name"`
	About  string    `json:"about"`
	Open   *benchRun `json:"open,omitempty"`
	Closed *benchRun `json:"closed,omitempty"`
}

// benchRun is one open- or closed-loop measurement of a setup.
type benchRun struct {
	// OK and Errors count the measured queries; only the successes'
	// latencies are in the distributions.
	OK           int64    `json:"ok"`
	Errors       int64    `json:"errors"`
	ErrorSamples []string `json:"error_samples,omitempty"`
	ElapsedS     float64  `json:"elapsed_s"`
	// Throughput is successful queries a second.
	Throughput float64 `json:"throughput"`
	// Rate is the open loop's offered rate.
	Rate float64 `json:"rate,omitempty"`
	// Overloaded: the open loop's throughput fell short of its rate by
	// more than 10% (or queries failed): the setup could not keep up,
	// and its latencies measure a growing queue.
	Overloaded bool `json:"overloaded,omitempty"`
	// Concurrency: the closed loop's callers; the open loop's most queries
	// in flight at once.
	Concurrency int `json:"concurrency"`
	// Latency: from the scheduled send time (open loop), from the send
	// (closed loop).
	Latency benchDist `json:"latency"`
	// CPUPerQueryUS is the process's CPU time in the closed loop's
	// measured part over its successful queries: what a query costs every
	// role in the process together (the capacity model's input,
	// docs/scaling.md).
	CPUPerQueryUS float64 `json:"cpu_per_query_us,omitempty"`
	// Statistics counts, for a Quarry setup, where its searches' term
	// statistics came from (the broker's quarry_broker_statistics_total
	// over the loop, warm-up included): query_cache, terms, round_trip.
	Statistics map[string]float64 `json:"statistics,omitempty"`
	// Plugins are the calls of each plugin of a setup's pipeline over
	// the loop, warm-up included.
	Plugins []benchPluginCalls `json:"plugins,omitempty"`
	// Service (from the actual send) and SendLag (the sender's lateness)
	// of an open loop.
	Service *benchDist `json:"service,omitempty"`
	SendLag *benchDist `json:"send_lag,omitempty"`
}

// benchDist is a latency distribution.
type benchDist struct {
	Count  int64   `json:"count"`
	MinUS  float64 `json:"min_us"`
	MeanUS float64 `json:"mean_us"`
	P50US  float64 `json:"p50_us"`
	P90US  float64 `json:"p90_us"`
	P99US  float64 `json:"p99_us"`
	P999US float64 `json:"p99_9_us"`
	MaxUS  float64 `json:"max_us"`
	// Spectrum is the latency at quantiles from 0 to 1 (the maximum),
	// as far as the sample count supports them: what the plot draws.
	Spectrum []benchPoint `json:"spectrum"`
}

// benchPoint is the latency at quantile Q.
type benchPoint struct {
	Q  float64 `json:"q"`
	US float64 `json:"us"`
}

// benchRatio compares two setups: latency from the open loop (the closed
// loop's without one), throughput from the closed loop.
type benchRatio struct {
	Setup       string  `json:"setup"`
	Over        string  `json:"over"`
	What        string  `json:"what"`
	LatencyLoop string  `json:"latency_loop,omitempty"`
	P50         float64 `json:"p50,omitempty"`
	P99         float64 `json:"p99,omitempty"`
	P999        float64 `json:"p99_9,omitempty"`
	Throughput  float64 `json:"throughput,omitempty"`
}

// benchCheck compares the hits two setups returned for the same queries.
type benchCheck struct {
	Setup   string `json:"setup"`
	Against string `json:"against"`
	Queries int    `json:"queries"`
	// Same is how many queries got the same hits, in the same order.
	Same int `json:"same"`
	// FirstDiff shows the first query that did not.
	FirstDiff string `json:"first_diff,omitempty"`
}

// benchRatios are the ratios a report gives, when both setups ran.
var benchRatios = []struct{ setup, over, what string }{
	{setupQuarry, setupBleve, "Quarry against bleve in-process (one index): the cost of the platform"},
	{setupQuarry, setupBleveAlias, "Quarry against bleve's own sharding (IndexAlias)"},
	{setupQuarryWasm, setupQuarryNative, "the pipeline in WebAssembly against the same Go natively: the cost of WebAssembly"},
	{setupQuarryWasm, setupQuarry, "Quarry with the pipeline in WebAssembly against no pipeline: the pipeline's whole cost"},
}

// benchQuantiles are the spectrum's quantiles (and 1, the maximum).
var benchQuantiles = []float64{0, 0.25, 0.5, 0.75, 0.9, 0.95, 0.99, 0.995, 0.999, 0.9995, 0.9999, 0.99995, 0.99999}

func newBenchReport(cfg *benchConfig, command string, started time.Time, queries int, source string) *benchReport {
	r := &benchReport{Version: benchReportVersion, Quarry: version, Command: command, Started: started.UTC().Truncate(time.Second),
		Machine: benchMachine{CPUs: runtime.NumCPU(), GOMAXPROCS: runtime.GOMAXPROCS(0), GOOS: runtime.GOOS, GOARCH: runtime.GOARCH, Go: runtime.Version()},
		Config: benchReportConfig{Setups: cfg.Setups, Loops: cfg.Loops, Docs: cfg.Docs, Shards: cfg.Shards, Seed: cfg.Seed,
			Queries: queries, QuerySource: source, Rate: cfg.Rate, DurationS: cfg.Duration.Seconds(), WarmupS: cfg.Warmup.Seconds(),
			Concurrency: cfg.Concurrency, SpinUS: us(cfg.Spin), MaxOutstanding: cfg.MaxOutstanding, TimeoutS: cfg.Timeout.Seconds()}}
	if slices.Contains(cfg.Loops, loopMixed) {
		r.Config.WriteRates, r.Config.WriteRounds = cfg.WriteRates, cfg.WriteRounds
	}
	if cfg.Turns > 1 {
		r.Config.Turns = cfg.Turns
	}
	for _, s := range cfg.Setups {
		if s == setupQuarryWasm || s == setupQuarryNative {
			r.Config.Pipeline = cfg.Pipeline
		}
	}
	return r
}

func us(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }

// dist summarises a histogram.
func dist(h *loadgen.Histogram) benchDist {
	d := benchDist{Count: h.Count(), MinUS: us(h.Min()), MeanUS: us(h.Mean()), P50US: us(h.Quantile(0.5)), P90US: us(h.Quantile(0.9)),
		P99US: us(h.Quantile(0.99)), P999US: us(h.Quantile(0.999)), MaxUS: us(h.Max())}
	if d.Count == 0 {
		return d
	}
	for _, q := range benchQuantiles {
		if q > 0 && float64(d.Count)*(1-q) < 1 {
			break // fewer samples than the quantile needs: the max says it
		}
		d.Spectrum = append(d.Spectrum, benchPoint{Q: q, US: us(h.Quantile(q))})
	}
	d.Spectrum = append(d.Spectrum, benchPoint{Q: 1, US: d.MaxUS})
	return d
}

// add records a setup's measurement and returns it.
func (r *benchReport) add(s *benchSetup, loop string, res *loadgen.Result) *benchRun {
	var sr *benchSetupReport
	for _, x := range r.Setups {
		if x.Name == s.name {
			sr = x
		}
	}
	if sr == nil {
		sr = &benchSetupReport{Name: s.name, About: s.about}
		r.Setups = append(r.Setups, sr)
	}
	run := &benchRun{OK: res.OK, Errors: res.Errors, ErrorSamples: res.ErrorSamples, ElapsedS: res.Elapsed.Seconds(),
		Throughput: res.Throughput, Concurrency: res.Concurrency, Latency: dist(res.Latency)}
	if loop == loopOpen {
		run.Rate = res.Offered
		run.Overloaded = res.Throughput < 0.9*res.Offered || res.Errors > 0
		service, lag := dist(res.Service), dist(res.SendLag)
		run.Service, run.SendLag = &service, &lag
		sr.Open = run
	} else {
		if res.OK > 0 {
			run.CPUPerQueryUS = float64(res.CPU.Microseconds()) / float64(res.OK)
		}
		sr.Closed = run
	}
	return run
}

func (r *benchReport) setup(name string) *benchSetupReport {
	for _, s := range r.Setups {
		if s.Name == name {
			return s
		}
	}
	return nil
}

func ratio(a, b float64) float64 {
	if b == 0 || math.IsNaN(a) || math.IsNaN(b) {
		return 0
	}
	return math.Round(a/b*1000) / 1000
}

// finish computes the ratios.
func (r *benchReport) finish(took time.Duration) {
	r.TookS = math.Round(took.Seconds()*10) / 10
	r.Ratios = nil
	for _, def := range benchRatios {
		a, b := r.setup(def.setup), r.setup(def.over)
		if a == nil || b == nil {
			continue
		}
		rt := benchRatio{Setup: def.setup, Over: def.over, What: def.what}
		la, lb, loop := a.Open, b.Open, loopOpen
		if la == nil || lb == nil {
			la, lb, loop = a.Closed, b.Closed, loopClosed
		}
		if la != nil && lb != nil {
			rt.LatencyLoop = loop
			rt.P50, rt.P99, rt.P999 = ratio(la.Latency.P50US, lb.Latency.P50US), ratio(la.Latency.P99US, lb.Latency.P99US), ratio(la.Latency.P999US, lb.Latency.P999US)
		}
		if a.Closed != nil && b.Closed != nil {
			rt.Throughput = ratio(a.Closed.Throughput, b.Closed.Throughput)
		}
		r.Ratios = append(r.Ratios, rt)
	}
}

// save writes the report as indented JSON.
func (r *benchReport) save(path string) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("write the report: %w", err)
	}
	return nil
}

// loadBenchReport reads a report written by save.
func loadBenchReport(path string) (*benchReport, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var r benchReport
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("%s: not a quarry bench report: %w", path, err)
	}
	if r.Version != benchReportVersion {
		return nil, fmt.Errorf("%s: report version %d, this quarry reads version %d", path, r.Version, benchReportVersion)
	}
	return &r, nil
}

// fmtUS formats microseconds for people: 412µs, 1.23ms, 15.2ms, 230ms, 1.52s.
func fmtUS(v float64) string {
	switch {
	case v < 1000:
		return fmt.Sprintf("%.0fµs", v)
	case v < 10_000:
		return fmt.Sprintf("%.2fms", v/1000)
	case v < 100_000:
		return fmt.Sprintf("%.1fms", v/1000)
	case v < 1_000_000:
		return fmt.Sprintf("%.0fms", v/1000)
	}
	return fmt.Sprintf("%.2fs", v/1e6)
}

// fmtRatio formats a ratio ("—" when unknown).
func fmtRatio(v float64) string {
	if v == 0 {
		return "—"
	}
	return fmt.Sprintf("%.2f×", v)
}

// writeText prints the report as tables.
func (r *benchReport) writeText(w io.Writer) {
	c := r.Config
	fmt.Fprintf(w, "\n%s documents, %d shards, %d queries (%s); %d CPUs, GOMAXPROCS %d, %s %s/%s\n",
		cmdline.Thousands(int64(c.Docs)), c.Shards, c.Queries, c.QuerySource, r.Machine.CPUs, r.Machine.GOMAXPROCS, r.Machine.Go, r.Machine.GOOS, r.Machine.GOARCH)
	turns := ""
	if c.Turns > 1 {
		turns = fmt.Sprintf(", in %d turns of %gs (each after its warm-up), the setups taking turns", c.Turns, c.DurationS/float64(c.Turns))
	}
	for _, l := range c.Loops {
		if l == loopMixed {
			continue
		}
		if l == loopOpen {
			fmt.Fprintf(w, "open loop: %g queries/s for %gs after %gs of warm-up%s, latency from each query's scheduled time\n", c.Rate, c.DurationS, c.WarmupS, turns)
		} else {
			fmt.Fprintf(w, "closed loop: %d callers for %gs after %gs of warm-up%s\n", c.Concurrency, c.DurationS, c.WarmupS, turns)
		}
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	if len(r.Setups) > 0 {
		fmt.Fprintln(w)
		fmt.Fprintln(tw, "setup\tloop\tqueries\terrors\tq/s\tp50\tp90\tp99\tp99.9\tmax\tcpu/query\t")
	}
	for _, s := range r.Setups {
		for _, run := range []struct {
			name string
			run  *benchRun
		}{{loopOpen, s.Open}, {loopClosed, s.Closed}} {
			if run.run == nil {
				continue
			}
			l := run.run.Latency
			loop := fmt.Sprintf("closed ×%d", run.run.Concurrency)
			if run.name == loopOpen {
				loop = fmt.Sprintf("open %g/s", run.run.Rate)
			}
			cpu := ""
			if run.run.CPUPerQueryUS > 0 {
				cpu = fmtUS(run.run.CPUPerQueryUS)
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%.0f\t%s\t%s\t%s\t%s\t%s\t%s\t\n", s.Name, loop, cmdline.Thousands(run.run.OK), run.run.Errors, run.run.Throughput,
				fmtUS(l.P50US), fmtUS(l.P90US), fmtUS(l.P99US), fmtUS(l.P999US), fmtUS(l.MaxUS), cpu)
		}
	}
	tw.Flush()
	if len(r.Ratios) > 0 {
		fmt.Fprintln(w, "\nratios (latency from the open loop, throughput from the closed loop):")
		tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "\tp50\tp99\tp99.9\tthroughput\t")
		for _, rt := range r.Ratios {
			fmt.Fprintf(tw, "%s / %s\t%s\t%s\t%s\t%s\t\n", rt.Setup, rt.Over, fmtRatio(rt.P50), fmtRatio(rt.P99), fmtRatio(rt.P999), fmtRatio(rt.Throughput))
		}
		tw.Flush()
	}
	writeMixedText(w, r.Mixed, c.Rate)
	var lag float64
	for _, s := range r.Setups {
		if s.Open != nil && s.Open.SendLag != nil {
			lag = max(lag, s.Open.SendLag.P99US)
		}
	}
	if lag > 0 {
		fmt.Fprintf(w, "\nthe open loop's sender was late by at most %s at p99 (counted in the latencies above)\n", fmtUS(lag))
	}
	for _, s := range r.Setups {
		for _, run := range []*benchRun{s.Open, s.Closed} {
			if run == nil || len(run.Statistics) == 0 {
				continue
			}
			loop := "closed"
			if run == s.Open {
				loop = "open"
			}
			var all float64
			for _, n := range run.Statistics {
				all += n
			}
			var parts []string
			for _, src := range slices.Sorted(maps.Keys(run.Statistics)) {
				parts = append(parts, fmt.Sprintf("%s %.0f%%", src, 100*run.Statistics[src]/all))
			}
			fmt.Fprintf(w, "statistics: %s %s loop, %s searches: %s\n", s.Name, loop, cmdline.Thousands(int64(all)), strings.Join(parts, ", "))
		}
	}
	for _, s := range r.Setups {
		if s.Closed == nil {
			continue
		}
		for _, p := range s.Closed.Plugins {
			fmt.Fprintf(w, "plugin calls: %s closed loop, %s: %s calls, p50 %s, p99 %s (budget %s), %d over budget, %d busy, %d other errors\n",
				s.Name, p.Plugin, cmdline.Thousands(p.Calls), p.P50, p.P99, time.Duration(p.BudgetMS)*time.Millisecond, p.Timeouts, p.Busy, p.Errors)
		}
	}
	for _, ch := range r.Checks {
		fmt.Fprintf(w, "hits: %s returned %s's for %d of %d queries\n", ch.Setup, ch.Against, ch.Same, ch.Queries)
	}
	for _, s := range r.Setups {
		if warning := openWarning(s); warning != "" {
			fmt.Fprintln(w, warning)
		}
	}
	var errs []string
	for _, s := range r.Setups {
		for _, run := range []*benchRun{s.Open, s.Closed} {
			if run != nil && run.Errors > 0 {
				errs = append(errs, fmt.Sprintf("%s: %d errors, e.g. %s", s.Name, run.Errors, strings.Join(run.ErrorSamples, "; ")))
			}
		}
	}
	if len(errs) > 0 {
		fmt.Fprintf(w, "\nerrors:\n  %s\n", strings.Join(errs, "\n  "))
	}
}

// benchPluginCalls are one plugin's calls over a loop: their count,
// their latency's p50 and p99 as the bucket of the plugin's histogram
// that holds them ("≤ 5ms": plugins.LatencyBounds), and the calls that
// failed, by kind.
type benchPluginCalls struct {
	Plugin   string `json:"plugin"`
	BudgetMS int64  `json:"budget_ms"`
	Calls    int64  `json:"calls"`
	P50      string `json:"p50"`
	P99      string `json:"p99"`
	Timeouts int64  `json:"over_budget"`
	Busy     int64  `json:"busy"`
	Errors   int64  `json:"other_errors"`
}

// pluginCounts are a plugin's counters at one moment.
type pluginCounts struct {
	name       string
	budget     time.Duration
	cumulative []uint64
	count      uint64
	errors     map[plugins.ErrorKind]int64
}

// pluginCalls reads the counters of every plugin of pl (nil: none).
func pluginCalls(pl *broker.Pipeline) []pluginCounts {
	if pl == nil {
		return nil
	}
	var out []pluginCounts
	for p := range pl.Plugins {
		cum, n, _ := p.Metrics.Latency()
		out = append(out, pluginCounts{name: p.Spec().Name, budget: p.Spec().Budget, cumulative: cum, count: n, errors: p.Metrics.Errors()})
	}
	return out
}

// callsSince is each plugin's calls between two readings of pluginCalls.
func callsSince(before, after []pluginCounts) []benchPluginCalls {
	var out []benchPluginCalls
	for i, a := range after {
		if i >= len(before) || before[i].name != a.name {
			continue
		}
		b := before[i]
		n := a.count - b.count
		c := benchPluginCalls{Plugin: a.name, BudgetMS: a.budget.Milliseconds(), Calls: int64(n)}
		quantile := func(q float64) string {
			bounds := plugins.LatencyBounds()
			for j := range a.cumulative {
				if float64(a.cumulative[j]-b.cumulative[j]) >= q*float64(n) {
					return "≤ " + bounds[j].String()
				}
			}
			return "> " + bounds[len(bounds)-1].String()
		}
		if n > 0 {
			c.P50, c.P99 = quantile(0.5), quantile(0.99)
		}
		for k, v := range a.errors {
			d := v - b.errors[k]
			switch k {
			case plugins.KindTimeout:
				c.Timeouts += d
			case plugins.KindBusy:
				c.Busy += d
			default:
				c.Errors += d
			}
		}
		out = append(out, c)
	}
	return out
}

// openWarning is what the text report warns of s's open loop: a rate it
// could not keep up with, or queries that failed at a rate it kept up
// with; "" for neither.
func openWarning(s *benchSetupReport) string {
	o := s.Open
	if o == nil || !o.Overloaded {
		return ""
	}
	if o.Throughput >= 0.9*o.Rate {
		return fmt.Sprintf("warning: %s kept up with the open loop's %g queries/s, but %s of them failed (errors below): its open-loop latencies are the answered ones'",
			s.Name, o.Rate, cmdline.Thousands(o.Errors))
	}
	capacity := ""
	if s.Closed != nil {
		capacity = fmt.Sprintf(" (its closed loop served %.0f/s)", s.Closed.Throughput)
	}
	return fmt.Sprintf("warning: %s answered %.0f queries/s of the %g offered%s: it could not keep up, and its open-loop latencies measure a growing queue; lower --rate",
		s.Name, o.Throughput, o.Rate, capacity)
}
