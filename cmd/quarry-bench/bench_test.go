package main

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/quarrysearch/quarry/broker"
	"github.com/quarrysearch/quarry/internal/loadgen"
)

// TestBench runs quarry bench on a tiny configuration with every setup —
// real bleve, real NATS in-process, the demo pipeline built to real
// WebAssembly and natively — and checks the report and its plot.
func TestBench(t *testing.T) {
	dir := t.TempDir()
	pipeline := roomyPipeline(t, "../../examples/pipelines/menu.json", dir)
	report := filepath.Join(dir, "report.json")
	start := time.Now()
	out, errOut, code := cli(t, "", "bench", "--docs", "300", "--shards", "2", "--rate", "40", "--duration", "300ms", "--warmup", "100ms",
		"--concurrency", "2", "--query-count", "20", "--check", "20", "--pipeline", pipeline, "--data", filepath.Join(dir, "data"), "--out", report)
	if code != 0 {
		t.Fatalf("quarry bench: exit %d\n%s\n%s", code, out, errOut)
	}
	t.Logf("quarry bench took %v:\n%s", time.Since(start).Round(time.Millisecond), out)
	for _, want := range []string{"setup", "p99.9", "quarry / bleve", "quarry-wasm / quarry-native", "quarry-native returned quarry-wasm's for 20 of 20 queries"} {
		if !strings.Contains(out, want) {
			t.Errorf("the output lacks %q", want)
		}
	}
	rep := readBenchReport(t, report)
	if rep.Version != benchReportVersion || rep.Machine.CPUs == 0 || rep.Config.Docs != 300 || rep.Config.Queries != 20 || !strings.Contains(rep.Command, "--docs 300") {
		t.Errorf("report header: version %d, machine %+v, config %+v, command %q", rep.Version, rep.Machine, rep.Config, rep.Command)
	}
	var names []string
	for _, s := range rep.Setups {
		names = append(names, s.Name)
		for loop, run := range map[string]*benchRun{loopOpen: s.Open, loopClosed: s.Closed} {
			if run == nil {
				t.Errorf("%s: no %s loop", s.Name, loop)
				continue
			}
			l := run.Latency
			if run.OK == 0 || run.Errors != 0 || l.Count != run.OK || run.Throughput <= 0 {
				t.Errorf("%s %s loop: %d ok, %d errors %q, %d latencies, %.0f q/s", s.Name, loop, run.OK, run.Errors, run.ErrorSamples, l.Count, run.Throughput)
			}
			if !(l.MinUS <= l.P50US && l.P50US <= l.P90US && l.P90US <= l.P99US && l.P99US <= l.P999US && l.P999US <= l.MaxUS && l.MinUS > 0) {
				t.Errorf("%s %s loop: percentiles out of order: %+v", s.Name, loop, l)
			}
			if n := len(l.Spectrum); n < 3 || l.Spectrum[0].Q != 0 || l.Spectrum[n-1].Q != 1 || l.Spectrum[n-1].US != l.MaxUS {
				t.Errorf("%s %s loop: spectrum %+v", s.Name, loop, l.Spectrum)
			}
			if (loop == loopOpen) != (run.SendLag != nil && run.Service != nil && run.Rate == 40) {
				t.Errorf("%s %s loop: rate %g, service %v, send lag %v", s.Name, loop, run.Rate, run.Service, run.SendLag)
			}
			// The pipeline's three plugins, each called by every search.
			withPipeline := s.Name == setupQuarryWasm || s.Name == setupQuarryNative
			if withPipeline != (len(run.Plugins) == 3) {
				t.Errorf("%s %s loop: plugin calls %+v", s.Name, loop, run.Plugins)
			}
			for _, p := range run.Plugins {
				if p.Calls < run.OK || p.BudgetMS <= 0 || !strings.HasPrefix(p.P99, "≤ ") || p.Timeouts+p.Busy+p.Errors != 0 {
					t.Errorf("%s %s loop: %d searches, plugin calls %+v", s.Name, loop, run.OK, p)
				}
			}
		}
	}
	if !strings.Contains(out, "plugin calls: quarry-wasm closed loop, georank: ") {
		t.Error("the output lacks the plugin calls of quarry-wasm's closed loop")
	}
	if strings.Join(names, ",") != strings.Join(benchSetupNames, ",") {
		t.Errorf("setups %v, want %v", names, benchSetupNames)
	}
	if len(rep.Ratios) != len(benchRatios) {
		t.Errorf("%d ratios, want %d: %+v", len(rep.Ratios), len(benchRatios), rep.Ratios)
	}
	for _, r := range rep.Ratios {
		if r.P50 <= 0 || r.P99 <= 0 || r.P999 <= 0 || r.Throughput <= 0 || r.LatencyLoop != loopOpen {
			t.Errorf("ratio %+v", r)
		}
	}
	checked := map[string]benchCheck{}
	for _, c := range rep.Checks {
		checked[c.Setup+"/"+c.Against] = c
	}
	// WebAssembly and native run the same code: the same hits. Quarry's
	// match bleve's on most queries (see sameHits for why not all); a
	// setup that searched otherwise (another query, other settings) would
	// match on few. The alias keeps document frequencies per index.
	if c := checked[setupQuarryNative+"/"+setupQuarryWasm]; c.Queries != 20 || c.Same != c.Queries {
		t.Errorf("check %+v: WebAssembly and native returned different hits", c)
	}
	if c := checked[setupQuarry+"/"+setupBleve]; c.Queries != 20 || c.Same < c.Queries/2 {
		t.Errorf("check %+v: Quarry and bleve returned different hits", c)
	}
	if c, ok := checked[setupBleveAlias+"/"+setupBleve]; !ok || c.Queries != 20 {
		t.Errorf("check %+v: missing", c)
	}

	svg, errOut, code := cli(t, "", "bench", "plot", report)
	if code != 0 {
		t.Fatalf("quarry bench plot: exit %d: %s", code, errOut)
	}
	if got := checkSVG(t, []byte(svg)); got["polyline"] != 2*len(benchSetupNames) {
		t.Errorf("%d lines drawn, want %d (a setup a loop)", got["polyline"], 2*len(benchSetupNames))
	}
}

// roomyPipeline copies a pipeline file into dir with every step's budget
// raised to 5 s: on a loaded machine (the suite runs under -race on 2
// cores) a WebAssembly spelling call can overrun its 20 ms, which the
// bench rightly counts as an error; this test checks the setups, not the
// machine.
func roomyPipeline(t *testing.T, path, dir string) string {
	t.Helper()
	f, err := broker.ReadPipelineFile(path)
	if err != nil {
		t.Fatal(err)
	}
	base, err := filepath.Abs(filepath.Dir(path))
	if err != nil {
		t.Fatal(err)
	}
	for _, steps := range [][]broker.StepFile{f.Rewriters, f.Rankers} {
		for i := range steps {
			steps[i].BudgetMS = 5000
			for _, p := range []*string{&steps[i].Go, &steps[i].Wasm} {
				if *p != "" { // relative to the copy
					if *p, err = filepath.Rel(dir, filepath.Join(base, *p)); err != nil {
						t.Fatal(err)
					}
				}
			}
		}
	}
	raw, err := json.Marshal(f)
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "pipeline.json")
	if err := os.WriteFile(out, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	return out
}

// checkSVG parses an SVG document with encoding/xml and counts its
// elements by name.
func checkSVG(t *testing.T, svg []byte) map[string]int {
	t.Helper()
	dec := xml.NewDecoder(bytes.NewReader(svg))
	counts := map[string]int{}
	root, depth := "", 0
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("not valid XML: %v\n%s", err, svg)
		}
		switch el := tok.(type) {
		case xml.StartElement:
			if depth == 0 {
				root = el.Name.Space + " " + el.Name.Local
			}
			depth++
			counts[el.Name.Local]++
		case xml.EndElement:
			depth--
		}
	}
	if root != "http://www.w3.org/2000/svg svg" || depth != 0 {
		t.Fatalf("root element %q (depth %d at the end), want an svg element in the SVG namespace", root, depth)
	}
	return counts
}

// TestBenchPlot draws reports made from real histograms: one per loop, a
// closed loop only, names that need escaping; a report with nothing to
// draw is refused.
func TestBenchPlot(t *testing.T) {
	run := func(base time.Duration, n int, open bool) *benchRun {
		var h loadgen.Histogram
		for i := range n {
			h.Record(base + time.Duration(i*i)*time.Microsecond)
		}
		r := &benchRun{OK: int64(n), Throughput: 100, Concurrency: 4, Latency: dist(&h)}
		if open {
			r.Rate = 100
		}
		return r
	}
	cases := []struct {
		name   string
		setups []*benchSetupReport
		lines  int
	}{
		{"both loops", []*benchSetupReport{
			{Name: "bleve", Open: run(300*time.Microsecond, 2000, true), Closed: run(200*time.Microsecond, 5000, false)},
			{Name: "quarry", Open: run(time.Millisecond, 2000, true), Closed: run(800*time.Microsecond, 3000, false)},
		}, 4},
		{"closed only, odd names", []*benchSetupReport{
			{Name: `a<b & "c"`, Closed: run(time.Microsecond, 1, false)},
			{Name: "slow", Closed: run(2*time.Second, 10, false)},
		}, 2},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rep := &benchReport{Version: benchReportVersion, Quarry: version, Setups: c.setups,
				Config: benchReportConfig{Docs: 10, Shards: 1, Rate: 100, Concurrency: 4}, Machine: benchMachine{CPUs: 2}}
			path := filepath.Join(t.TempDir(), "r.json")
			if err := rep.save(path); err != nil {
				t.Fatal(err)
			}
			var out bytes.Buffer
			if err := runBenchPlot([]string{path}, &out); err != nil {
				t.Fatal(err)
			}
			if got := checkSVG(t, out.Bytes()); got["polyline"] != c.lines {
				t.Errorf("%d lines, want %d", got["polyline"], c.lines)
			}
		})
	}
	empty := filepath.Join(t.TempDir(), "empty.json")
	if err := (&benchReport{Version: benchReportVersion}).save(empty); err != nil {
		t.Fatal(err)
	}
	if err := runBenchPlot([]string{empty}, io.Discard); err == nil {
		t.Error("a report without measurements plotted")
	}
}

// Bad flags are refused with a message naming the flag.
func TestBenchFlags(t *testing.T) {
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"--rate", "0"}, "--rate"},
		{[]string{"--rate", "-5"}, "--rate"},
		{[]string{"--duration", "0s"}, "--duration"},
		{[]string{"--warmup", "-1s"}, "--warmup"},
		{[]string{"--concurrency", "0"}, "--concurrency"},
		{[]string{"--docs", "0"}, "--docs"},
		{[]string{"--shards", "0"}, "--shards"},
		{[]string{"--setups", "bleve,elastic"}, `--setups: unknown "elastic"`},
		{[]string{"--loops", "open,sideways"}, `--loops: unknown "sideways"`},
		{[]string{"--size", "0"}, "--size"},
		{[]string{"--spin", "1s"}, "--spin"},
		{[]string{"--query-count", "0"}, "--query-count"},
		{[]string{"--turns", "0"}, "--turns must be 1 to 1,000"},
		{[]string{"--duration", "300ms", "--turns", "4"}, "leaves turns under 100ms"},
	}
	for _, c := range cases {
		_, _, err := parseBench(c.args)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: got %v, want an error about %s", c.args, err, c.want)
		}
	}
	cfg, _, err := parseBench([]string{"--setups", "quarry-native,bleve", "--loops", "closed"})
	if err != nil || strings.Join(cfg.Setups, ",") != "bleve,quarry-native" || strings.Join(cfg.Loops, ",") != "closed" {
		t.Errorf("setups and loops in their canonical order: %+v, %v", cfg, err)
	}
	// Through the binary: a clear message and exit code 2.
	_, errOut, code := cli(t, "", "bench", "--rate", "0")
	if code != 2 || !strings.Contains(errOut, "--rate must be more than 0") {
		t.Errorf("quarry bench --rate 0: exit %d, %q", code, errOut)
	}
	_, errOut, code = cli(t, "", "bench", "plot", "missing.json")
	if code != 2 || !strings.Contains(errOut, "missing.json") {
		t.Errorf("quarry bench plot missing.json: exit %d, %q", code, errOut)
	}
}

// TestBenchTurns: with --turns, each setup's closed loop is measured in
// turns, the setups taking turns: a profile a turn, and the report adds
// each setup's turns together (their measured time, every answer).
func TestBenchTurns(t *testing.T) {
	dir := t.TempDir()
	report, profiles := filepath.Join(dir, "report.json"), filepath.Join(dir, "profiles")
	out, errOut, code := cli(t, "", "bench", "--docs", "300", "--shards", "2", "--setups", "bleve,quarry", "--loops", "closed",
		"--duration", "400ms", "--turns", "2", "--warmup", "50ms", "--concurrency", "2", "--query-count", "20", "--check", "0",
		"--profile-dir", profiles, "--data", filepath.Join(dir, "data"), "--out", report)
	if code != 0 {
		t.Fatalf("quarry bench --turns 2: exit %d\n%s\n%s", code, out, errOut)
	}
	if !strings.Contains(out, "in 2 turns of 0.2s") {
		t.Errorf("the output does not say the loop took turns:\n%s", out)
	}
	rep := readBenchReport(t, report)
	if rep.Config.Turns != 2 || len(rep.Setups) != 2 {
		t.Fatalf("report: turns %d, %d setups", rep.Config.Turns, len(rep.Setups))
	}
	for _, s := range rep.Setups {
		run := s.Closed
		// Two turns of 200ms measured: about 400ms in all, not one turn's.
		if run == nil || run.OK == 0 || run.Errors != 0 || run.Latency.Count != run.OK || run.ElapsedS < 0.3 || run.ElapsedS > 0.45 {
			t.Fatalf("%s closed loop: %+v", s.Name, run)
		}
		if math.Abs(run.Throughput-float64(run.OK)/run.ElapsedS) > 0.01*run.Throughput {
			t.Errorf("%s: throughput %.1f for %d in %.3fs", s.Name, run.Throughput, run.OK, run.ElapsedS)
		}
		for turn := 1; turn <= 2; turn++ {
			if _, err := os.Stat(filepath.Join(profiles, fmt.Sprintf("%s-closed.%d.cpu.pprof", s.Name, turn))); err != nil {
				t.Error(err)
			}
		}
	}
}

// TestBenchMixed runs quarry bench's mixed loop briefly on the quarry
// setup (real NATS, indexer, searcher and broker in process): searches
// at each write rate in turn, two rounds, and every acknowledged upsert
// seen applied by the searcher, with its freshness measured.
func TestBenchMixed(t *testing.T) {
	dir := t.TempDir()
	report := filepath.Join(dir, "report.json")
	out, errOut, code := cli(t, "", "bench", "--setups", "quarry", "--loops", "mixed", "--write-rates", "0,20", "--write-rounds", "2",
		"--docs", "300", "--shards", "2", "--rate", "40", "--duration", "500ms", "--warmup", "100ms", "--query-count", "20", "--check", "5",
		"--data", filepath.Join(dir, "data"), "--out", report)
	if code != 0 {
		t.Fatalf("quarry bench: exit %d\n%s\n%s", code, out, errOut)
	}
	t.Logf("%s", out)
	for _, want := range []string{"mixed loop: 40 searches/s", "fresh p99", "search latency with writes over the same round's without"} {
		if !strings.Contains(out, want) {
			t.Errorf("the output lacks %q", want)
		}
	}
	rep := readBenchReport(t, report)
	if len(rep.Setups) != 0 || len(rep.Config.WriteRates) != 2 || rep.Config.WriteRounds != 2 {
		t.Errorf("report: setups %d, config %+v", len(rep.Setups), rep.Config)
	}
	if len(rep.Mixed) != 4 {
		t.Fatalf("%d mixed runs, want 4 (2 rates, 2 rounds)", len(rep.Mixed))
	}
	for i, r := range rep.Mixed {
		wantRate, wantRound := []float64{0, 20}[i%2], i/2+1
		if r.Setup != setupQuarry || r.WriteRate != wantRate || r.Round != wantRound {
			t.Errorf("run %d: %s at %g, round %d; want quarry at %g, round %d", i, r.Setup, r.WriteRate, r.Round, wantRate, wantRound)
		}
		if r.Search == nil || r.Search.OK == 0 || r.Search.Errors != 0 || r.Search.Latency.P50US <= 0 {
			t.Errorf("run %d: searches %+v", i, r.Search)
			continue
		}
		if r.WriteErrors != 0 || r.Unseen != 0 {
			t.Errorf("run %d: %d upserts failed (%v), %d not applied", i, r.WriteErrors, r.WriteErrorSamples, r.Unseen)
		}
		if wantRate == 0 {
			if r.Writes != 0 || r.Freshness != nil {
				t.Errorf("run %d without writes: %d writes, freshness %+v", i, r.Writes, r.Freshness)
			}
			continue
		}
		// 20/s for 0.6 s: about 12 upserts, each one's freshness known.
		if r.Writes < 5 || r.Freshness == nil || r.Freshness.Count != r.Writes || r.Freshness.P50US <= 0 || r.Freshness.P99US > r.Freshness.MaxUS {
			t.Errorf("run %d: %d writes, freshness %+v", i, r.Writes, r.Freshness)
		}
	}
}

// TestBenchMixedNeedsQuarry: the mixed loop writes into Quarry's index, so
// a run of bleve setups alone is refused at once.
func TestBenchMixedNeedsQuarry(t *testing.T) {
	for _, args := range [][]string{
		{"--setups", "bleve", "--loops", "mixed"},
		{"--setups", "quarry", "--loops", "mixed", "--write-rates", "0,-1"},
		{"--setups", "quarry", "--loops", "mixed", "--write-rounds", "0"},
	} {
		out, errOut, code := cli(t, "", append([]string{"bench"}, args...)...)
		if code == 0 {
			t.Errorf("quarry bench %v: exit 0\n%s", args, out)
		} else if !strings.Contains(errOut, "--") {
			t.Errorf("quarry bench %v: %s", args, errOut)
		}
	}
}

// readBenchReport reads the JSON report `quarry bench --report` wrote.
func readBenchReport(t *testing.T, path string) benchReport {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var rep benchReport
	if err := json.Unmarshal(raw, &rep); err != nil {
		t.Fatal(err)
	}
	return rep
}

// TestOpenWarning: the report warns of an open loop that could not keep
// up with its rate, and, apart, of one that kept up but had queries fail
// (it used to say "could not keep up" of 50 answered a second of 50 with
// one plugin step skipped); nothing of one that did neither.
func TestOpenWarning(t *testing.T) {
	closed := &benchRun{Throughput: 805}
	for _, c := range []struct {
		name string
		open *benchRun
		want string // "" for no warning
	}{
		{"kept up", &benchRun{Rate: 50, Throughput: 50}, ""},
		{"fell behind", &benchRun{Rate: 50, Throughput: 30, Overloaded: true}, "answered 30 queries/s of the 50 offered (its closed loop served 805/s): it could not keep up"},
		{"kept up, one failed", &benchRun{Rate: 50, Throughput: 50, Errors: 1, Overloaded: true}, "kept up with the open loop's 50 queries/s, but 1 of them failed"},
		{"fell behind and failed", &benchRun{Rate: 50, Throughput: 20, Errors: 1200, Overloaded: true}, "could not keep up"},
	} {
		got := openWarning(&benchSetupReport{Name: "quarry-wasm", Open: c.open, Closed: closed})
		if (c.want == "") != (got == "") || !strings.Contains(got, c.want) {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}
