package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/quarrysearch/quarry/api"
	"github.com/quarrysearch/quarry/client"
	"github.com/quarrysearch/quarry/internal/gobuild"
	"github.com/quarrysearch/quarry/internal/loadgen"
	"github.com/quarrysearch/quarry/plugins"
)

// quarry dev: the loop from a save to what it changes. Each time a source
// file of the plugin folder changes, the plugin is built as its folder
// builds it, run on the folder's sample requests (checked against
// expected.ndjson), pushed (validated, never activated) and run as a
// variant of the index's live pipeline on the samples' texts and the
// index's recorded queries; the report is the diff against the live
// pipeline, the latencies, and any failure with the guest's log lines.

const devUsage = `Watches a plugin folder (as quarry plugin new writes it) and, on every save, builds
the plugin, runs it on the folder's requests.ndjson (checked against expected.ndjson),
pushes it to INDEX as a version that is never activated, and runs it as a variant
of the live pipeline on those requests' texts and the index's recorded queries
(brokers record with --record-queries). It prints the diff against the live pipeline
(overlap@10, moved hits, rewritten queries), latency percentiles, and any failure
with the plugin's log lines. A plugin not in the pipeline runs as its last step of
its kind.`

// devOptions are quarry dev's settings.
type devOptions struct {
	index, dir, name, kind string
	fields                 []string
	queries                int
	interval               time.Duration
	once                   bool
}

func devCmd(e *env, nf *natsFlags) *cobra.Command {
	cmd := newCommand("dev INDEX DIR", "rebuild a plugin folder on every save and compare it, as a variant, with the live pipeline", devUsage, 2, 2)
	fs := cmd.Flags()
	var o devOptions
	fs.StringVar(&o.name, "name", "", "the plugin's name (default: DIR's base name)")
	fs.StringVar(&o.kind, "kind", "", "rewriter or ranker (default: the live plugin's, else the one DIR/test.sh runs)")
	fields := fs.String("fields", "", "stored fields a new ranker reads, comma-separated (default: the live step's)")
	fs.IntVar(&o.queries, "queries", 100, "distinct recorded queries to replay, the oldest first (0: none)")
	fs.DurationVar(&o.interval, "interval", 500*time.Millisecond, "how often to look for saved files")
	fs.BoolVar(&o.once, "once", false, "build and report once, then exit (non-zero if anything failed)")
	cmd.RunE = func(cmd *cobra.Command, pos []string) error {
		ctx := cmd.Context()
		o.index, o.dir = pos[0], pos[1]
		if *fields != "" {
			o.fields = strings.Split(*fields, ",")
		}
		if o.interval <= 0 {
			return api.BadRequest("--interval %s: want a positive duration", o.interval)
		}
		if o.queries < 0 || o.queries > 10000 {
			return api.BadRequest("--queries %d: want 0-10000", o.queries)
		}
		if st, err := os.Stat(o.dir); err != nil || !st.IsDir() {
			return api.BadRequest("DIR %s: not a folder (want a plugin folder, as quarry plugin new writes)", o.dir)
		}
		var err error
		if o.dir, err = filepath.Abs(o.dir); err != nil {
			return err
		}
		if o.name == "" {
			o.name = filepath.Base(o.dir)
		}
		if err := validPluginName(o.name); err != nil {
			return err
		}
		nc, c, err := nf.connect(ctx)
		if err != nil {
			return err
		}
		defer nc.Close()
		if o.once {
			return devRound(ctx, c, &o, e.stdout, "")
		}
		// Until ctx ends: on Ctrl-C (main).
		return devWatch(ctx, c, &o, e.stdout)
	}
	return cmd
}

func validPluginName(name string) error {
	if !regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,63}$`).MatchString(name) {
		return api.BadRequest("plugin name %q: use 1-64 of a-z, 0-9, '-' and '_', starting with a letter or digit (--name)", name)
	}
	return nil
}

// devWatch runs a round at start and after every save, until ctx is done.
func devWatch(ctx context.Context, c *client.Client, o *devOptions, w io.Writer) error {
	last, _ := sourceState(o.dir)
	devRound(ctx, c, o, w, "start")
	fmt.Fprintf(w, "watching %s (every %s; Ctrl-C to stop)\n", o.dir, o.interval)
	t := time.NewTicker(o.interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		now, changed := sourceState(o.dir)
		if now == last {
			continue
		}
		last = now
		devRound(ctx, c, o, w, changed)
	}
}

// sourceState is a fingerprint of the folder's source files (names, sizes
// and modification times) and the most recently changed one's name.
func sourceState(dir string) (state, newest string) {
	var b strings.Builder
	var newestT time.Time
	filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		name := d.Name()
		if d.IsDir() {
			if path != dir && (name == "node_modules" || strings.HasPrefix(name, ".") || name == "build") {
				return filepath.SkipDir
			}
			return nil
		}
		if !isSource(name) {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return nil
		}
		fmt.Fprintf(&b, "%s %d %d\n", path, info.Size(), info.ModTime().UnixNano())
		if info.ModTime().After(newestT) {
			newestT, newest = info.ModTime(), strings.TrimPrefix(path, dir+string(filepath.Separator))
		}
		return nil
	})
	return b.String(), newest
}

// isSource says whether a file is one a save of which rebuilds.
func isSource(name string) bool {
	switch filepath.Ext(name) {
	case ".go", ".c", ".h", ".ts", ".json", ".ndjson", ".mod", ".sum", ".sh":
		return name != "got.ndjson" && name != "package-lock.json"
	}
	return false
}

// devReport is one round's findings.
type devReport struct {
	failures []string
}

func (r *devReport) fail(format string, args ...any) {
	r.failures = append(r.failures, fmt.Sprintf(format, args...))
}

// devRound builds, checks, pushes and compares once, printing to w; the
// error says what failed (for --once).
func devRound(ctx context.Context, c *client.Client, o *devOptions, w io.Writer, why string) error {
	start := time.Now()
	head := fmt.Sprintf("== %s", start.Format("15:04:05"))
	if why != "" {
		head += " " + why
	}
	fmt.Fprintln(w, head)
	rep := &devReport{}
	err := devRun(ctx, c, o, w, rep)
	if err != nil {
		rep.fail("%v", err)
	}
	if len(rep.failures) > 0 {
		fmt.Fprintf(w, "FAILED (%s): %s\n\n", time.Since(start).Round(time.Millisecond), strings.Join(rep.failures, "; "))
		return fmt.Errorf("dev: %s", strings.Join(rep.failures, "; "))
	}
	fmt.Fprintf(w, "ok (%s)\n\n", time.Since(start).Round(time.Millisecond))
	return nil
}

func devRun(ctx context.Context, c *client.Client, o *devOptions, w io.Writer, rep *devReport) error {
	live, err := c.Pipeline(ctx, o.index)
	if err != nil {
		return fmt.Errorf("index %s: %w", o.index, err)
	}
	liveStep, liveKind := live.Step(o.name)
	kind := o.kind
	if kind == "" && liveStep != nil {
		kind = string(liveKind)
	}
	if kind == "" {
		kind = scaffoldKind(o.dir)
	}
	if kind != "rewriter" && kind != "ranker" {
		return api.BadRequest("--kind %q: want rewriter or ranker (the plugin is not live on %s and DIR/test.sh does not say)", kind, o.index)
	}
	if kind == "ranker" && liveStep == nil && len(o.fields) == 0 {
		// Not an error (a ranker may rank by score alone), but the
		// usual reason for "the same" rounds, and what it goes live with.
		fmt.Fprintf(w, "note: a new ranker without --fields reads no stored field: its candidates carry only their ids and scores, and a version activated from here goes live so (quarry dev %s %s --fields price,rating)\n", o.index, o.dir)
	}

	// Build.
	built := time.Now()
	wasm, lang, err := devBuild(ctx, o.dir, o.name)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "built %s.wasm (%s, %d bytes) in %s\n", o.name, lang, len(wasm), time.Since(built).Round(time.Millisecond))

	// The folder's config.json, else the live step's configuration.
	var config []byte
	if liveStep != nil {
		config = liveStep.Config
	}
	if cfg, err := os.ReadFile(filepath.Join(o.dir, "config.json")); err == nil {
		config = bytes.TrimSpace(cfg)
	} else if !errors.Is(err, fs.ErrNotExist) {
		return err
	}

	// The folder's samples, with the broker's host and limits.
	samples, err := devSamples(ctx, o.dir, plugins.Kind(kind), config, wasm, w, rep)
	if err != nil {
		return err
	}

	// Push (validated, not activated), then compare with the live pipeline.
	v, err := pushCandidate(ctx, c, o.index, o.name, wasm, candidate{
		live:      live,
		kind:      kind,
		fields:    o.fields,
		config:    config,
		instances: 1, // a variant: one warm instance is enough
		notLive:   true,
	})
	if err != nil {
		return fmt.Errorf("push: %w", err)
	}
	where := "in place of the live version"
	if liveStep == nil {
		where = "as the pipeline's last " + kind
	}
	fmt.Fprintf(w, "pushed %s (validated; never activated); running it %s\n", api.ShortDigest(v.Digest), where)
	// Each distinct request once: the samples' texts, then the recorded
	// queries (which hold every search, replays' live halves too).
	var reqs []api.SearchRequest
	seen := map[string]bool{}
	add := func(req api.SearchRequest) {
		req.Profile, req.Variant = false, nil
		key, _ := json.Marshal(req)
		if !seen[string(key)] {
			seen[string(key)] = true
			reqs = append(reqs, req)
		}
	}
	for _, q := range samples {
		add(api.SearchRequest{Q: q})
	}
	nSamples := len(reqs)
	if o.queries > 0 {
		// The oldest recorded, up to --queries distinct ones among ten
		// times as many.
		recorded, err := c.RecordedQueries(ctx, o.index, 10*o.queries)
		if err != nil {
			fmt.Fprintf(w, "recorded queries: %v (replaying the samples only)\n", err)
		}
		for i := 0; i < len(recorded) && len(reqs)-nSamples < o.queries; i++ {
			if req, err := loadgen.ParseRequestLine(bytes.TrimSpace(recorded[i]), i+1); err == nil {
				add(req)
			}
		}
	}
	since := time.Now()
	devCompare(ctx, c, o, kind, v.Digest, reqs, nSamples, w, rep)
	devRelevance(ctx, c, o, v.Digest, w, rep)
	devLogs(ctx, c, o, v.Digest, since, w)
	return nil
}

// devRelevance evaluates the version against the live pipeline on each of
// the index's judgement lists (docs/relevance.md), and says so when the
// index has none.
func devRelevance(ctx context.Context, c *client.Client, o *devOptions, digest string, w io.Writer, rep *devReport) {
	sets, err := c.JudgementSets(ctx, o.index)
	if err != nil {
		rep.fail("judgement lists: %v", err)
		return
	}
	if len(sets) == 0 {
		fmt.Fprintf(w, "\nno judgement lists on %s: with one (quarry judgements push %s NAME FILE), each round prints nDCG, MRR, P and R against the live pipeline\n", o.index, o.index)
		return
	}
	for _, set := range sets {
		ev, err := c.Evaluate(ctx, o.index, api.EvalRequest{Set: set.Name, Variant: &api.Variant{Plugin: o.name, Digest: digest}})
		if err != nil {
			rep.fail("judgements %s: %v", set.Name, err)
			continue
		}
		fmt.Fprintf(w, "\njudgements %s (version %d, %d queries, k=%d):\n", set.Name, ev.Version, len(ev.Queries), ev.K)
		printEvalSummary(w, ev)
	}
}

// scaffoldKind reads the kind quarry plugin new wrote into DIR/test.sh.
func scaffoldKind(dir string) string {
	b, err := os.ReadFile(filepath.Join(dir, "test.sh"))
	if err != nil {
		return ""
	}
	m := regexp.MustCompile(`--kind (rewriter|ranker)`).FindSubmatch(b)
	if m == nil {
		return ""
	}
	return string(m[1])
}

// devBuild builds the folder's plugin as the folder builds it: its
// build.sh (what quarry plugin new writes: go build for wasip1, clang,
// or asc through npm), or, without one, by its language — Go with
// internal/gobuild, C with clang as the C SDK's examples, AssemblyScript
// with the package's npm build script.
func devBuild(ctx context.Context, dir, name string) ([]byte, string, error) {
	lang := folderLang(dir)
	if lang == "" {
		return nil, "", api.BadRequest("%s: no plugin sources (want main.go and go.mod, a .c file, or package.json and assembly/index.ts)", dir)
	}
	out := filepath.Join(dir, name+".wasm")
	run := func(name string, args ...string) error {
		cmd := exec.CommandContext(ctx, name, args...)
		cmd.Dir = dir
		if msg, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("build failed (%s %s): %v\n%s", name, strings.Join(args, " "), err, bytes.TrimSpace(msg))
		}
		return nil
	}
	var err error
	switch {
	case fileExists(filepath.Join(dir, "build.sh")):
		err = run("sh", "build.sh")
	case lang == "go":
		err = gobuild.Build(ctx, dir, out, gobuild.Reactor)
	case lang == "c":
		srcs, _ := filepath.Glob(filepath.Join(dir, "*.c"))
		clang := newestTool("clang")
		if clang == "" {
			return nil, lang, api.BadRequest("%s: building C needs clang (Debian: apt-get install clang lld), or a build.sh", dir)
		}
		err = run(clang, append([]string{"--target=wasm32", "-O2", "-mbulk-memory", "-nostdlib", "-Wl,--no-entry", "-Wall", "-I", ".", "-o", out}, srcs...)...)
	case lang == "assemblyscript":
		err = run("npm", "run", "--silent", "build")
	}
	if err != nil {
		return nil, lang, err
	}
	wasm, err := os.ReadFile(out)
	if err != nil {
		return nil, lang, fmt.Errorf("the build wrote no %s.wasm: %w", name, err)
	}
	return wasm, lang, nil
}

// newestTool finds a tool on PATH by its plain name, or else the newest
// of its versioned names (clang-14 over clang-9: Debian installs clang-NN
// without a plain clang unless the clang package is added), as the C
// scaffold's build.sh does; "" when there is none.
func newestTool(name string) string {
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	best, bestVersion := "", -1
	for _, dir := range filepath.SplitList(os.Getenv("PATH")) {
		matches, _ := filepath.Glob(filepath.Join(dir, name+"-*"))
		for _, m := range matches {
			v, err := strconv.Atoi(strings.TrimPrefix(filepath.Base(m), name+"-"))
			if err != nil || v <= bestVersion {
				continue
			}
			if fi, err := os.Stat(m); err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
				best, bestVersion = m, v
			}
		}
	}
	return best
}

func folderLang(dir string) string {
	switch {
	case fileExists(filepath.Join(dir, "go.mod")):
		return "go"
	case fileExists(filepath.Join(dir, "package.json")):
		return "assemblyscript"
	}
	if cs, _ := filepath.Glob(filepath.Join(dir, "*.c")); len(cs) > 0 {
		return "c"
	}
	return ""
}

// logLines is a plugins.LogSink that keeps the lines of local runs.
type logLines struct {
	mu    sync.Mutex
	lines []plugins.LogLine
}

func (l *logLines) PluginLog(line plugins.LogLine) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.lines) < 1000 {
		l.lines = append(l.lines, line)
	}
}

// devSamples runs DIR/requests.ndjson through the plugin with the broker's
// host (as quarry plugin run and the folder's test.sh do), checks the
// answers against DIR/expected.ndjson when there is one, and returns the
// samples' texts, for searches.
func devSamples(ctx context.Context, dir string, kind plugins.Kind, config, wasm []byte, w io.Writer, rep *devReport) ([]string, error) {
	in, err := os.ReadFile(filepath.Join(dir, "requests.ndjson"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var expected [][]byte
	if b, err := os.ReadFile(filepath.Join(dir, "expected.ndjson")); err == nil {
		for l := range bytes.Lines(b) {
			if l = bytes.TrimSpace(l); len(l) > 0 {
				expected = append(expected, l)
			}
		}
	}
	logs := &logLines{}
	rt, err := plugins.NewRuntime(ctx, plugins.Config{LogSink: logs})
	if err != nil {
		return nil, err
	}
	defer rt.Close(context.Background())
	p, err := rt.Load(ctx, plugins.Spec{Name: filepath.Base(dir), Kind: kind, Config: config, Instances: 1}, wasm)
	if err != nil {
		return nil, fmt.Errorf("load: %w", err)
	}
	defer p.Close(context.Background())
	var texts []string
	n, same := 0, 0
	sc := bufio.NewScanner(bytes.NewReader(in))
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for line := 1; sc.Scan(); line++ {
		raw := bytes.TrimSpace(sc.Bytes())
		if len(raw) == 0 {
			continue
		}
		var q struct {
			Q string `json:"q"`
		}
		if json.Unmarshal(raw, &q) == nil && q.Q != "" && !slices.Contains(texts, q.Q) {
			texts = append(texts, q.Q)
		}
		before := len(logs.lines)
		out, err := runOne(ctx, p, kind, raw)
		if err != nil {
			rep.fail("requests.ndjson line %d: %v", line, err)
			fmt.Fprintf(w, "sample line %d failed: %v\n", line, err)
			logs.mu.Lock()
			printGuestLines(w, logs.lines[before:])
			logs.mu.Unlock()
			n++
			continue
		}
		got, _ := json.Marshal(out)
		if n < len(expected) {
			if bytes.Equal(got, expected[n]) {
				same++
			} else {
				rep.fail("requests.ndjson line %d: not as expected.ndjson says", line)
				fmt.Fprintf(w, "sample line %d: got %s, expected.ndjson says %s\n", line, got, expected[n])
			}
		}
		n++
	}
	if len(expected) > 0 {
		fmt.Fprintf(w, "samples: %d of %d as expected.ndjson says\n", same, n)
	} else {
		fmt.Fprintf(w, "samples: %d run (no expected.ndjson to check them against)\n", n)
	}
	return texts, nil
}

func printGuestLines(w io.Writer, lines []plugins.LogLine) {
	for _, l := range lines {
		fmt.Fprintf(w, "  guest %s %-5s %s\n", l.Source, l.Level, l.Message)
	}
}

// devCompare replays reqs on the live pipeline and with the pushed
// version (quarry plugin test's replay) and prints the diff and the
// latencies.
func devCompare(ctx context.Context, c *client.Client, o *devOptions, kind, digest string, reqs []api.SearchRequest, nSamples int, w io.Writer, rep *devReport) {
	if len(reqs) == 0 {
		fmt.Fprintln(w, "queries: none to replay (no samples with a q, no recorded queries)")
		return
	}
	variant := &api.Variant{Plugin: o.name, Digest: digest}
	stage := map[string]string{"rewriter": "rewrite ", "ranker": "rank "}[kind] + o.name
	var overlap float64
	var same, failed, liveFailed, n int
	var pluginMS, liveMS, candMS []float64
	var moved, rewrites []string
	for i, req := range reqs {
		req.Profile = true
		res, live, cand := replay(ctx, c, o.index, req, i+1, variant)
		if res.LiveError != "" {
			// Not the version's failure: the round does not fail for it.
			liveFailed++
			fmt.Fprintf(w, "query %q fails on the live pipeline already (not counted): %s\n", req.Q, res.LiveError)
			continue
		}
		if res.Error != "" {
			failed++
			rep.fail("query %q: %s", req.Q, res.Error)
			fmt.Fprintf(w, "query %q failed: %s\n", req.Q, res.Error)
			continue
		}
		n++
		overlap += res.OverlapAt10
		liveMS, candMS = append(liveMS, live.TookMS), append(candMS, cand.TookMS)
		for _, s := range cand.Profile.Stages {
			if s.Name != stage {
				continue
			}
			pluginMS = append(pluginMS, s.TookMS)
			if strings.HasPrefix(s.Detail, "skipped: ") {
				failed++
				rep.fail("query %q: %s %s", req.Q, stage, s.Detail)
				fmt.Fprintf(w, "query %q: %s %s\n", req.Q, stage, s.Detail)
			} else if kind == "rewriter" && len(rewrites) < 10 {
				if d := rewriteDetail(s.Detail); d != "" && !slices.Contains(rewrites, d) {
					rewrites = append(rewrites, d)
				}
			}
		}
		if res.Same {
			same++
		} else if len(moved) < 10 {
			moved = append(moved, fmt.Sprintf("  %-28.28q overlap@10 %.2f  moved: %s", req.Q, res.OverlapAt10, movedHits(res.Live, res.Candidate)))
		}
	}
	mean := 0.0
	if n > 0 {
		mean = overlap / float64(n)
	}
	fmt.Fprintf(w, "queries: %d distinct (%d samples' texts, %d recorded): %d the same, %d changed, %d failed; mean overlap@10 %.3f\n",
		len(reqs), nSamples, len(reqs)-nSamples, same, n-same, failed, mean)
	if liveFailed > 0 {
		fmt.Fprintf(w, "  %d more fail on the live pipeline already: not counted\n", liveFailed)
	}
	for _, m := range moved {
		fmt.Fprintln(w, m)
	}
	for _, r := range rewrites {
		fmt.Fprintf(w, "  rewritten: %s\n", r)
	}
	if len(pluginMS) > 0 {
		fmt.Fprintf(w, "latency: %s %s; search live %s, with it %s\n", stage, percentiles(pluginMS), percentiles(liveMS), percentiles(candMS))
	}
}

// rewriteDetail is the "q before → after" of a rewrite stage's detail
// when the text changed, or "".
func rewriteDetail(detail string) string {
	m := regexp.MustCompile(`q ("(?:[^"\\]|\\.)*") → ("(?:[^"\\]|\\.)*")`).FindStringSubmatch(detail)
	if m == nil || m[1] == m[2] {
		return ""
	}
	return m[1] + " → " + m[2]
}

// movedHits says how the candidate's top ten moved from the live one's:
// "b 3→1, x new, a out".
func movedHits(live, cand []string) string {
	live, cand = head(live, 10), head(cand, 10)
	pos := map[string]int{}
	for i, id := range live {
		pos[id] = i + 1
	}
	var parts []string
	for i, id := range cand {
		switch p, ok := pos[id]; {
		case !ok:
			parts = append(parts, id+" new")
		case p != i+1:
			parts = append(parts, fmt.Sprintf("%s %d→%d", id, p, i+1))
		}
		delete(pos, id)
	}
	out := make([]string, 0, len(pos))
	for id := range pos {
		out = append(out, id)
	}
	sort.Strings(out)
	for _, id := range out {
		parts = append(parts, id+" out")
	}
	if len(parts) > 6 {
		parts = append(parts[:6], fmt.Sprintf("… %d more", len(parts)-6))
	}
	return strings.Join(parts, ", ")
}

// percentiles prints p50, p95 and p99 of ms.
func percentiles(ms []float64) string {
	if len(ms) == 0 {
		return "-"
	}
	s := slices.Sorted(slices.Values(ms))
	at := func(q float64) float64 { return s[min(len(s)-1, int(q*float64(len(s))))] }
	return fmt.Sprintf("p50 %.3f ms, p95 %.3f ms, p99 %.3f ms", at(0.5), at(0.95), at(0.99))
}

// devLogs prints what the pushed version logged on the brokers during the
// replay (the broker's lines take a moment to be kept).
func devLogs(ctx context.Context, c *client.Client, o *devOptions, digest string, since time.Time, w io.Writer) {
	var logs *api.PluginLogs
	var err error
	deadline := time.Now().Add(500 * time.Millisecond)
	for {
		logs, err = c.PluginLogs(ctx, o.index, o.name, api.PluginLogsRequest{Version: api.ShortDigest(digest), Since: since, Limit: 10})
		if err != nil || len(logs.Lines) > 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil {
		fmt.Fprintf(w, "plugin logs: %v\n", err)
		return
	}
	if len(logs.Lines) == 0 {
		return
	}
	fmt.Fprintf(w, "plugin log (last %d lines):\n", len(logs.Lines))
	for _, l := range logs.Lines {
		fmt.Fprint(w, "  ")
		printLogLine(w, l, false)
	}
}
