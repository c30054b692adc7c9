package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/quarrysearch/quarry/api"
	"github.com/quarrysearch/quarry/internal/cmdline"
	"github.com/quarrysearch/quarry/internal/loadgen"
)

// loopMixed is quarry bench's mixed workload: searches in an open loop
// while documents are upserted at each of --write-rates, on the same
// index (Quarry's setups only).
const loopMixed = "mixed"

// benchWriter upserts documents into a Quarry setup's index and tells
// when the searcher serves them.
type benchWriter struct {
	// put upserts document number i (the runs cycle through the
	// catalogue) and returns its shard and the stream sequence storing it.
	put func(ctx context.Context, i int) (shard int, seq uint64, err error)
	// applied returns, per shard, the last stream sequence the searcher
	// serving it has applied (and so answers searches with).
	applied func() []uint64
	// segments returns the segments each shard's replica holds now, on
	// average: persisted files, and in memory (fresh batches not yet
	// persisted). Every search visits each.
	segments func() (files, memory float64)
}

// benchMixedRun is one measurement of the mixed workload: searches at
// --rate in an open loop while documents are upserted at WriteRate.
type benchMixedRun struct {
	Setup     string  `json:"setup"`
	WriteRate float64 `json:"write_rate"`
	Round     int     `json:"round"`
	// Search is the searches' measurement, as an open loop's.
	Search *benchRun `json:"search"`
	// Writes and WriteErrors count the upserts sent during the run
	// (warm-up included) that were acknowledged, and that failed.
	Writes            int64    `json:"writes"`
	WriteErrors       int64    `json:"write_errors"`
	WriteErrorSamples []string `json:"write_error_samples,omitempty"`
	// Freshness is from each upsert's call to the moment the searcher
	// of its shard had applied it (searches see it): write → searchable.
	Freshness *benchDist `json:"freshness,omitempty"`
	// Unseen counts acknowledged upserts the searcher had not applied
	// when the run gave up waiting (--timeout after the run's end).
	Unseen int64 `json:"unseen,omitempty"`
	// MemorySegments and FileSegments are the means of the in-memory and
	// persisted segments a shard held, sampled every 20 ms through the run
	// (shard.WriteOptions' FreshSegments bounds the first, its merge
	// planner's options the second).
	MemorySegments float64 `json:"memory_segments"`
	FileSegments   float64 `json:"file_segments"`
}

// parseRates parses --write-rates: upserts a second, comma-separated.
func parseRates(s string) ([]float64, error) {
	var out []float64
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		v, err := strconv.ParseFloat(f, 64)
		if err != nil || v < 0 || v > 100_000 {
			return nil, api.BadRequest("--write-rates: %q is not a rate of 0 to 100,000 upserts a second", f)
		}
		out = append(out, v)
	}
	if len(out) == 0 {
		return nil, api.BadRequest("--write-rates: no rate given")
	}
	return out, nil
}

// freshnessWatch records, for every acknowledged upsert, how long after
// its call the searcher applied it. It polls the searcher's applied
// sequences every millisecond while upserts are pending.
type freshnessWatch struct {
	applied func() []uint64
	hist    loadgen.Histogram

	mu      sync.Mutex
	pending []pendingWrite
	wake    chan struct{}
}

type pendingWrite struct {
	shard int
	seq   uint64
	at    time.Time
}

func newFreshnessWatch(applied func() []uint64) *freshnessWatch {
	return &freshnessWatch{applied: applied, wake: make(chan struct{}, 1)}
}

func (f *freshnessWatch) add(w pendingWrite) {
	f.mu.Lock()
	f.pending = append(f.pending, w)
	f.mu.Unlock()
	select {
	case f.wake <- struct{}{}:
	default:
	}
}

// run polls until ctx ends.
func (f *freshnessWatch) run(ctx context.Context) {
	t := time.NewTicker(time.Millisecond)
	defer t.Stop()
	for {
		f.mu.Lock()
		idle := len(f.pending) == 0
		f.mu.Unlock()
		if idle {
			select {
			case <-ctx.Done():
				return
			case <-f.wake:
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		f.check(time.Now())
	}
}

// check records the pending writes the searcher has applied by now.
func (f *freshnessWatch) check(now time.Time) {
	seqs := f.applied()
	f.mu.Lock()
	defer f.mu.Unlock()
	keep := f.pending[:0]
	for _, w := range f.pending {
		if w.shard < len(seqs) && seqs[w.shard] >= w.seq {
			f.hist.Record(now.Sub(w.at))
			continue
		}
		keep = append(keep, w)
	}
	f.pending = keep
}

// left is how many acknowledged writes the searcher has not applied yet.
func (f *freshnessWatch) left() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.pending)
}

// benchMixed runs the mixed workload on s: for each round, the searches
// of the open loop once at every write rate, in turn.
func benchMixed(ctx context.Context, cfg *benchConfig, s *benchSetup, queries []api.SearchRequest, progress io.Writer) ([]*benchMixedRun, error) {
	if cfg.ProfileDir != "" {
		if err := os.MkdirAll(cfg.ProfileDir, 0o755); err != nil {
			return nil, fmt.Errorf("--profile-dir: %w", err)
		}
		runtime.SetMutexProfileFraction(10)
		runtime.SetBlockProfileRate(int(100 * time.Microsecond))
		defer runtime.SetMutexProfileFraction(0)
		defer runtime.SetBlockProfileRate(0)
	}
	var out []*benchMixedRun
	for round := 1; round <= cfg.WriteRounds; round++ {
		for _, rate := range cfg.WriteRates {
			if err := ctx.Err(); err != nil {
				return out, err
			}
			stop, err := startProfiles(cfg.ProfileDir, fmt.Sprintf("%s-%g-%d", s.name, rate, round))
			if err != nil {
				return out, err
			}
			run, err := benchMixedOnce(ctx, cfg, s, queries, rate)
			if perr := stop(); err == nil {
				err = perr
			}
			if err != nil {
				return out, fmt.Errorf("%s, mixed loop at %g upserts/s: %w", s.name, rate, err)
			}
			run.Round = round
			out = append(out, run)
			fresh := "—"
			if run.Freshness != nil && run.Freshness.Count > 0 {
				fresh = fmtUS(run.Freshness.P99US)
			}
			fmt.Fprintf(progress, "  mixed  loop  %-13s %5g upserts/s (round %d)  p50 %s  p99 %s  p99.9 %s  freshness p99 %s  segments a shard %.1f in files, %.1f in memory\n", s.name, rate, round,
				fmtUS(run.Search.Latency.P50US), fmtUS(run.Search.Latency.P99US), fmtUS(run.Search.Latency.P999US), fresh, run.FileSegments, run.MemorySegments)
		}
	}
	return out, nil
}

// startProfiles starts a CPU profile into dir/name.cpu.pprof (nothing
// without dir); the function it returns stops it and writes the mutex and
// block profiles.
func startProfiles(dir, name string) (func() error, error) {
	if dir == "" {
		return func() error { return nil }, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("--profile-dir: %w", err)
	}
	base := filepath.Join(dir, name)
	f, err := os.Create(base + ".cpu.pprof")
	if err != nil {
		return nil, fmt.Errorf("--profile-dir: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("cpu profile: %w", err)
	}
	return func() error {
		pprof.StopCPUProfile()
		if err := f.Close(); err != nil {
			return fmt.Errorf("cpu profile: %w", err)
		}
		for _, p := range []string{"mutex", "block"} {
			pf, err := os.Create(base + "." + p + ".pprof")
			if err != nil {
				return fmt.Errorf("--profile-dir: %w", err)
			}
			err = pprof.Lookup(p).WriteTo(pf, 0)
			if cerr := pf.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return fmt.Errorf("%s profile: %w", p, err)
			}
		}
		return nil
	}, nil
}

// benchMixedOnce measures the searches at cfg.Rate while upserting at
// rate documents a second (0: none), through the warm-up and the run.
func benchMixedOnce(ctx context.Context, cfg *benchConfig, s *benchSetup, queries []api.SearchRequest, rate float64) (*benchMixedRun, error) {
	if s.before != nil {
		s.before()
	}
	runtime.GC()
	watch := newFreshnessWatch(s.writer.applied)
	wctx, stopWatch := context.WithCancel(ctx)
	watchDone := make(chan struct{})
	go func() { defer close(watchDone); watch.run(wctx) }()
	var memSum, fileSum float64
	var segSamples int
	segsDone := make(chan struct{})
	go func() {
		defer close(segsDone)
		t := time.NewTicker(20 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-wctx.Done():
				return
			case <-t.C:
				files, memory := s.writer.segments()
				fileSum, memSum = fileSum+files, memSum+memory
				segSamples++
			}
		}
	}()
	defer func() { stopWatch(); <-watchDone; <-segsDone }()

	run := &benchMixedRun{Setup: s.name, WriteRate: rate}
	var (
		mu      sync.Mutex
		writers sync.WaitGroup
	)
	stopWrites := make(chan struct{})
	writesDone := make(chan struct{})
	go func() {
		defer close(writesDone)
		if rate <= 0 {
			return
		}
		start := time.Now()
		for i := 0; ; i++ {
			at := start.Add(time.Duration(float64(i) / rate * float64(time.Second)))
			select {
			case <-stopWrites:
				return
			case <-ctx.Done():
				return
			case <-time.After(time.Until(at)):
			}
			writers.Add(1)
			go func(i int) {
				defer writers.Done()
				pctx, cancel := context.WithTimeout(ctx, cfg.Timeout)
				defer cancel()
				called := time.Now()
				shard, seq, err := s.writer.put(pctx, i)
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					run.WriteErrors++
					if len(run.WriteErrorSamples) < 3 && !slices.Contains(run.WriteErrorSamples, err.Error()) {
						run.WriteErrorSamples = append(run.WriteErrorSamples, err.Error())
					}
					return
				}
				run.Writes++
				watch.add(pendingWrite{shard: shard, seq: seq, at: called})
			}(i)
		}
	}()
	target := func(ctx context.Context, i int) error {
		_, err := s.search(ctx, &queries[i%len(queries)])
		return err
	}
	res, err := loadgen.OpenLoop(ctx, loadgen.OpenConfig{Rate: cfg.Rate, Duration: cfg.Duration, Warmup: cfg.Warmup,
		MaxInFlight: cfg.MaxOutstanding, Spin: cfg.Spin, Timeout: cfg.Timeout}, target)
	close(stopWrites)
	<-writesDone
	writers.Wait()
	if err != nil {
		return nil, err
	}
	// Wait for the searcher to apply what was acknowledged, so that the
	// next run starts caught up and every write's freshness is known.
	deadline := time.Now().Add(cfg.Timeout)
	for watch.left() > 0 && time.Now().Before(deadline) && ctx.Err() == nil {
		time.Sleep(5 * time.Millisecond)
	}
	run.Unseen = int64(watch.left())
	stopWatch()
	<-segsDone
	if segSamples > 0 {
		run.MemorySegments, run.FileSegments = memSum/float64(segSamples), fileSum/float64(segSamples)
	}
	search := &benchRun{OK: res.OK, Errors: res.Errors, ErrorSamples: res.ErrorSamples, ElapsedS: res.Elapsed.Seconds(),
		Throughput: res.Throughput, Concurrency: res.Concurrency, Latency: dist(res.Latency), Rate: res.Offered,
		Overloaded: res.Throughput < 0.9*res.Offered || res.Errors > 0}
	service, lag := dist(res.Service), dist(res.SendLag)
	search.Service, search.SendLag = &service, &lag
	run.Search = search
	if watch.hist.Count() > 0 {
		d := dist(&watch.hist)
		run.Freshness = &d
	}
	return run, nil
}

// median is the median of vs (the mean of the middle two for an even
// count), 0 for none.
func median(vs []float64) float64 {
	if len(vs) == 0 {
		return 0
	}
	s := slices.Clone(vs)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// writeMixedText prints the mixed workload's table: per setup, write rate
// and round, the searches' latency and the upserts' freshness, and the
// ratios of each rate's search latency to the no-write run's (medians of
// the rounds' ratios, each round against its own no-write run).
func writeMixedText(w io.Writer, rs []*benchMixedRun, searchRate float64) {
	if len(rs) == 0 {
		return
	}
	fmt.Fprintf(w, "\nmixed loop: %g searches/s in an open loop while documents are upserted at each rate (latency from each search's scheduled time; freshness from each upsert's call until its shard's searcher applied it)\n\n", searchRate)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "setup\tupserts/s\tround\tsearches\terrors\tp50\tp99\tp99.9\tmax\twrites\tfresh p50\tfresh p99\tfresh max\tfile segs\tmem segs\t")
	for _, r := range rs {
		l := r.Search.Latency
		fp50, fp99, fmax := "—", "—", "—"
		if f := r.Freshness; f != nil {
			fp50, fp99, fmax = fmtUS(f.P50US), fmtUS(f.P99US), fmtUS(f.MaxUS)
		}
		fmt.Fprintf(tw, "%s\t%g\t%d\t%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%.1f\t%.1f\t\n", r.Setup, r.WriteRate, r.Round, cmdline.Thousands(r.Search.OK), r.Search.Errors,
			fmtUS(l.P50US), fmtUS(l.P99US), fmtUS(l.P999US), fmtUS(l.MaxUS), cmdline.Thousands(r.Writes), fp50, fp99, fmax, r.FileSegments, r.MemorySegments)
	}
	tw.Flush()
	type key struct {
		setup string
		rate  float64
	}
	base := map[[2]any]*benchMixedRun{}
	for _, r := range rs {
		if r.WriteRate == 0 {
			base[[2]any{r.Setup, r.Round}] = r
		}
	}
	ratios := map[key][3][]float64{}
	var order []key
	for _, r := range rs {
		b := base[[2]any{r.Setup, r.Round}]
		if b == nil || r.WriteRate == 0 {
			continue
		}
		k := key{r.Setup, r.WriteRate}
		if _, ok := ratios[k]; !ok {
			order = append(order, k)
		}
		v := ratios[k]
		v[0] = append(v[0], ratio(r.Search.Latency.P50US, b.Search.Latency.P50US))
		v[1] = append(v[1], ratio(r.Search.Latency.P99US, b.Search.Latency.P99US))
		v[2] = append(v[2], ratio(r.Search.Latency.P999US, b.Search.Latency.P999US))
		ratios[k] = v
	}
	if len(order) > 0 {
		fmt.Fprintln(w, "\nsearch latency with writes over the same round's without (medians of the rounds):")
		tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "setup\tupserts/s\tp50\tp99\tp99.9\t")
		for _, k := range order {
			v := ratios[k]
			fmt.Fprintf(tw, "%s\t%g\t%s\t%s\t%s\t\n", k.setup, k.rate, fmtRatio(median(v[0])), fmtRatio(median(v[1])), fmtRatio(median(v[2])))
		}
		tw.Flush()
	}
	for _, r := range rs {
		if r.Search.Overloaded {
			fmt.Fprintf(w, "warning: %s at %g upserts/s answered %.0f searches/s of the %g offered: its latencies measure a growing queue\n", r.Setup, r.WriteRate, r.Search.Throughput, r.Search.Rate)
		}
		if r.Search.Errors > 0 {
			fmt.Fprintf(w, "warning: %s at %g upserts/s: %d searches failed, e.g. %s\n", r.Setup, r.WriteRate, r.Search.Errors, strings.Join(r.Search.ErrorSamples, "; "))
		}
		if r.WriteErrors > 0 || r.Unseen > 0 {
			fmt.Fprintf(w, "warning: %s at %g upserts/s: %d upserts failed (%s), %d acknowledged ones not applied in time\n", r.Setup, r.WriteRate, r.WriteErrors, strings.Join(r.WriteErrorSamples, "; "), r.Unseen)
		}
	}
}
