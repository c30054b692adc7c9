package main

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/index/scorch"
	"github.com/blevesearch/bleve/v2/mapping"
	"github.com/blevesearch/bleve/v2/search"

	"github.com/quarrysearch/quarry/api"
	"github.com/quarrysearch/quarry/broker"
	"github.com/quarrysearch/quarry/client"
	"github.com/quarrysearch/quarry/examples/plugins/lib/georank"
	"github.com/quarrysearch/quarry/examples/plugins/lib/ltr"
	"github.com/quarrysearch/quarry/examples/plugins/lib/spelling"
	"github.com/quarrysearch/quarry/examples/plugins/lib/synonyms"
	"github.com/quarrysearch/quarry/indexer"
	"github.com/quarrysearch/quarry/internal/catalog"
	"github.com/quarrysearch/quarry/internal/demo"
	"github.com/quarrysearch/quarry/internal/indexmap"
	"github.com/quarrysearch/quarry/internal/shard"
	"github.com/quarrysearch/quarry/internal/subject"
	"github.com/quarrysearch/quarry/node"
	"github.com/quarrysearch/quarry/planner"
	"github.com/quarrysearch/quarry/plugins"
	"github.com/quarrysearch/quarry/sdk"
	"github.com/quarrysearch/quarry/searcher"
)

// The setups quarry bench compares, in the order it runs and prints them.
const (
	setupBleve        = "bleve"
	setupBleveAlias   = "bleve-alias"
	setupQuarry       = "quarry"
	setupQuarryWasm   = "quarry-wasm"
	setupQuarryNative = "quarry-native"
)

// benchSetupNames are every setup, in order.
var benchSetupNames = []string{setupBleve, setupBleveAlias, setupQuarry, setupQuarryWasm, setupQuarryNative}

// benchIndex is the name of the index Quarry serves the documents as.
const benchIndex = "menu"

// benchSetup is one way of answering the queries.
type benchSetup struct {
	name, about string
	// quarry is set on Quarry's setups (a node: a broker with statistics,
	// a writer), not on bleve's.
	quarry bool
	// search runs one query and returns its hits, best first.
	search func(ctx context.Context, req *api.SearchRequest) ([]benchHit, error)
	// before runs before each of the setup's measurements (Quarry's
	// setups share a broker: it installs the setup's pipeline).
	before func()
	// writer upserts documents for the mixed loop (Quarry's setups; nil
	// for the others).
	writer *benchWriter
	// pipeline is the setup's plugin pipeline (nil: none), whose calls
	// each closed loop reports (benchRun.Plugins).
	pipeline *broker.Pipeline
}

// benchHit is a hit as the checks compare them.
type benchHit struct {
	ID    string
	Score float64
}

// sameHits reports whether two setups returned the same documents in the
// same order. Documents whose scores tie within rounding (in either list)
// may come in either order: summing the same terms in another order moves
// a score by an ulp or two. Scores themselves are not compared: the
// check is about the order.
func sameHits(a, b []benchHit) bool {
	if len(a) != len(b) {
		return false
	}
	canon := func(hs []benchHit) []string {
		out := slices.Clone(hs)
		for i := range out {
			out[i].Score = roundScore(out[i].Score)
		}
		slices.SortStableFunc(out, func(x, y benchHit) int {
			if c := cmp.Compare(y.Score, x.Score); c != 0 {
				return c
			}
			return strings.Compare(x.ID, y.ID)
		})
		ids := make([]string, len(out))
		for i, h := range out {
			ids[i] = h.ID
		}
		return ids
	}
	return slices.Equal(canon(a), canon(b))
}

// roundScore keeps a score's 9 significant digits.
func roundScore(s float64) float64 {
	if s == 0 || math.IsNaN(s) || math.IsInf(s, 0) {
		return s
	}
	scale := math.Pow(10, 8-math.Floor(math.Log10(math.Abs(s))))
	return math.Round(s*scale) / scale
}

// benchEnv holds what the setups run on, and closes it.
type benchEnv struct {
	cfg      *benchConfig
	log      *slog.Logger
	progress io.Writer
	setups   []*benchSetup
	closers  []func()
	node     *node.Node // the Quarry setups' node, once started
}

// statistics returns the node's count of searches by where their term
// statistics came from (quarry_broker_statistics_total, every index).
func (e *benchEnv) statistics() map[string]float64 {
	if e.node == nil {
		return nil
	}
	families, err := e.node.Metrics.Gather()
	if err != nil {
		return nil
	}
	out := map[string]float64{}
	for _, f := range families {
		if f.GetName() != "quarry_broker_statistics_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "source" {
					out[l.GetValue()] += m.GetCounter().GetValue()
				}
			}
		}
	}
	return out
}

// statsSince is what the counts grew by from before to after, the
// sources that did not grow left out.
func statsSince(before, after map[string]float64) map[string]float64 {
	out := map[string]float64{}
	for src, n := range after {
		if d := n - before[src]; d > 0 {
			out[src] = d
		}
	}
	return out
}

// Close releases every setup's resources, the last opened first.
func (e *benchEnv) Close() {
	for i := len(e.closers) - 1; i >= 0; i-- {
		e.closers[i]()
	}
}

// ready reports a setup built.
func (e *benchEnv) ready(setup string, start time.Time) {
	fmt.Fprintf(e.progress, "  setup %s: ready in %s\n", setup, time.Since(start).Round(10*time.Millisecond))
}

// startBenchSetups builds every selected setup on the same documents. On
// error, what was started is closed.
func startBenchSetups(ctx context.Context, cfg *benchConfig, docs []byte, log *slog.Logger, progress io.Writer) (_ *benchEnv, err error) {
	env := &benchEnv{cfg: cfg, log: log, progress: progress}
	defer func() {
		if err != nil { // env, not the nil returned with err
			env.Close()
		}
	}()
	want := map[string]bool{}
	for _, s := range cfg.Setups {
		want[s] = true
	}
	// Read the pipeline file first: a bad one fails before anything slow.
	var pf *broker.PipelineFile
	if want[setupQuarryWasm] || want[setupQuarryNative] {
		if pf, err = broker.ReadPipelineFile(cfg.Pipeline); err != nil {
			if errors.Is(err, os.ErrNotExist) {
				return nil, api.BadRequest("%v (run from the repository's root for the demo pipeline, or give --pipeline)", err)
			}
			return nil, api.BadRequest("%v", err)
		}
	}
	if want[setupBleve] {
		s, err := env.bleveOne(docs)
		if err != nil {
			return nil, fmt.Errorf("setup %s: %w", setupBleve, err)
		}
		env.setups = append(env.setups, s)
	}
	if want[setupBleveAlias] {
		s, err := env.bleveAlias(docs)
		if err != nil {
			return nil, fmt.Errorf("setup %s: %w", setupBleveAlias, err)
		}
		env.setups = append(env.setups, s)
	}
	if want[setupQuarry] || want[setupQuarryWasm] || want[setupQuarryNative] {
		if err := env.quarry(ctx, docs, pf, want); err != nil {
			return nil, err
		}
	}
	return env, nil
}

// newBleveIndex makes a scorch index of the catalogue mapping in dir and
// loads docs (NDJSON) in batches of 512, as a program using bleve alone
// would.
func newBleveIndex(dir string, docs []byte) (bleve.Index, error) {
	m, err := indexmap.Build(catalog.Mapping())
	if err != nil {
		return nil, err
	}
	idx, err := bleve.NewUsing(dir, m, scorch.Name, scorch.Name, map[string]any{"unsafe_batch": true})
	if err != nil {
		return nil, fmt.Errorf("bleve index %s: %w", dir, err)
	}
	b := idx.NewBatch()
	flush := func() error {
		if err := idx.Batch(b); err != nil {
			return fmt.Errorf("bleve batch: %w", err)
		}
		b.Reset()
		return nil
	}
	for line := range bytes.Lines(docs) {
		var doc map[string]any
		if err := json.Unmarshal(line, &doc); err != nil {
			idx.Close()
			return nil, fmt.Errorf("document %.60q: %w", line, err)
		}
		id, _ := doc["id"].(string)
		if err := b.Index(id, doc); err != nil {
			idx.Close()
			return nil, fmt.Errorf("document %q: %w", id, err)
		}
		if b.Size() == 512 {
			if err := flush(); err != nil {
				idx.Close()
				return nil, err
			}
		}
	}
	if err := flush(); err != nil {
		idx.Close()
		return nil, err
	}
	return idx, nil
}

// settleBleve waits (up to a minute) until scorch has persisted and merged
// every index's segments, so that background merging does not run during
// the measurements.
func settleBleve(ctx context.Context, log *slog.Logger, idxs ...bleve.Index) (fileSegments string) {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	state, err := shard.Settle(ctx, 100*time.Millisecond, idxs...)
	if errors.Is(err, context.DeadlineExceeded) {
		log.Warn("bleve still merging segments after a minute; measuring anyway", "file_segments", state)
	}
	return state
}

// bleveSearch runs req on an index or alias the way the planner builds it
// for Quarry's shards (the index's query settings, ties broken by id),
// scored with st when given (else bleve's own statistics).
func bleveSearch(ctx context.Context, idx bleve.Index, members []bleve.Index, req *api.SearchRequest, settings api.QuerySettings, st *search.BM25Stats) ([]benchHit, error) {
	typos, err := bleveTypoWords(ctx, members, req, settings, idx.Mapping())
	if err != nil {
		return nil, err
	}
	q, err := planner.BuildQuery(req, settings, idx.Mapping(), typos)
	if err != nil {
		return nil, err
	}
	sreq := bleve.NewSearchRequestOptions(q, req.EffectiveSize(), req.From, false)
	sreq.Fields = req.Fields
	if len(req.Sort) > 0 {
		sreq.SortBy(append(append([]string(nil), req.Sort...), "_id"))
	} else {
		sreq.SortBy([]string{"-_score", "_id"})
	}
	if st != nil {
		sreq.PreSearchData = map[string]any{search.BM25PreSearchDataKey: st}
	}
	res, err := idx.SearchInContext(ctx, sreq)
	if err != nil {
		return nil, err
	}
	hits := make([]benchHit, len(res.Hits))
	for i, h := range res.Hits {
		hits[i] = benchHit{h.ID, h.Score}
	}
	return hits, nil
}

// bleveTypoWords are the words of req that take typos under typo
// tolerance "auto", as Quarry's broker chooses them
// (planner.TypoCandidates, planner.UnknownWords): those no field of the
// index (members, all the index's) holds as typed. The bleve setups ask
// for them, so that they run the query Quarry runs (fuzzy terms included)
// and return its hits.
func bleveTypoWords(ctx context.Context, members []bleve.Index, req *api.SearchRequest, settings api.QuerySettings, m mapping.IndexMapping) (map[string][]string, error) {
	candidates := planner.TypoCandidates(req, settings)
	if candidates == nil {
		return nil, nil
	}
	docFreq := map[string]map[string]uint64{}
	for _, idx := range members {
		adv, err := idx.Advanced()
		if err != nil {
			return nil, err
		}
		r, err := adv.Reader()
		if err != nil {
			return nil, err
		}
		for field, words := range candidates {
			a := m.AnalyzerNamed(m.AnalyzerNameForPath(field))
			if a == nil {
				continue
			}
			if docFreq[field] == nil {
				docFreq[field] = map[string]uint64{}
			}
			for _, w := range words {
				for _, t := range a.Analyze([]byte(w)) {
					tfr, err := r.TermFieldReader(ctx, t.Term, field, false, false, false)
					if err != nil {
						r.Close()
						return nil, err
					}
					docFreq[field][string(t.Term)] += tfr.Count()
					tfr.Close()
				}
			}
		}
		r.Close()
	}
	return planner.UnknownWords(candidates, docFreq, m), nil
}

func (e *benchEnv) bleveOne(docs []byte) (*benchSetup, error) {
	start := time.Now()
	idx, err := newBleveIndex(filepath.Join(e.cfg.DataDir, "bleve-one"), docs)
	if err != nil {
		return nil, err
	}
	e.closers = append(e.closers, func() { idx.Close() })
	state := settleBleve(context.Background(), e.log, idx)
	fmt.Fprintf(e.progress, "  setup %s: segments (files): %s\n", setupBleve, state)
	// Scored as Quarry scores (token totals, docs/RATIONALE.md "Exact
	// distributed scoring"), so that both return the same hits.
	st, err := shard.IndexStats(idx)
	if err != nil {
		return nil, err
	}
	e.ready(setupBleve, start)
	return &benchSetup{name: setupBleve, about: "bleve in-process, one scorch index (scored with Quarry's statistics)",
		search: func(ctx context.Context, req *api.SearchRequest) ([]benchHit, error) {
			return bleveSearch(ctx, idx, []bleve.Index{idx}, req, demo.Query, st)
		}}, nil
}

func (e *benchEnv) bleveAlias(docs []byte) (*benchSetup, error) {
	start := time.Now()
	parts := make([][]byte, e.cfg.Shards)
	for line := range bytes.Lines(docs) {
		var doc struct {
			ID string `json:"id"`
		}
		if err := json.Unmarshal(line, &doc); err != nil || doc.ID == "" {
			return nil, fmt.Errorf("document %.60q: no id (%v)", line, err)
		}
		s := subject.ShardOf(doc.ID, e.cfg.Shards)
		parts[s] = append(parts[s], line...)
	}
	shards := make([]bleve.Index, e.cfg.Shards)
	for i, part := range parts {
		idx, err := newBleveIndex(filepath.Join(e.cfg.DataDir, fmt.Sprintf("bleve-shard%d", i)), part)
		if err != nil {
			return nil, err
		}
		e.closers = append(e.closers, func() { idx.Close() })
		shards[i] = idx
	}
	alias := bleve.NewIndexAlias(shards...)
	// Without the mapping the alias ignores global scoring (it reads the
	// scoring model from its own mapping) and scores per index.
	m, err := indexmap.Build(catalog.Mapping())
	if err != nil {
		return nil, err
	}
	if err := alias.SetIndexMapping(m); err != nil {
		return nil, fmt.Errorf("alias mapping: %w", err)
	}
	settleBleve(context.Background(), e.log, shards...)
	e.ready(setupBleveAlias, start)
	return &benchSetup{name: setupBleveAlias, about: fmt.Sprintf("bleve in-process, an IndexAlias over %d scorch indexes (global scoring), split as Quarry shards", e.cfg.Shards),
		search: func(ctx context.Context, req *api.SearchRequest) ([]benchHit, error) {
			return bleveSearch(context.WithValue(ctx, search.SearchTypeKey, search.GlobalScoring), alias, shards, req, demo.Query, nil)
		}}, nil
}

// quarry starts every Quarry role in this process (embedded NATS, indexer,
// searcher, broker), loads the documents and adds the selected Quarry
// setups: they share the node, each installing its own pipeline.
func (e *benchEnv) quarry(ctx context.Context, docs []byte, pf *broker.PipelineFile, want map[string]bool) error {
	start := time.Now()
	n, err := node.Start(ctx, node.Config{DataDir: filepath.Join(e.cfg.DataDir, "quarry"), NATSHost: "127.0.0.1", NATSPort: -1,
		Indexer: &indexer.Config{SnapshotInterval: -1, Writes: e.cfg.IndexerWrites, NoSnapshotMerge: e.cfg.NoSnapshotMerge}, Searcher: &searcher.Config{Writes: e.cfg.Writes, ColumnBytes: e.cfg.ColumnBytes}, Broker: &broker.Config{StatsCacheSize: e.cfg.StatsCache, StatsCacheTerms: e.cfg.StatsCacheTerms, StatsDictionaryTerms: e.cfg.StatsDictionaryTerms, ShardDepth: e.cfg.ShardDepth}, SeparateReplicas: e.cfg.SeparateReplicas, ShardsOverNATS: e.cfg.ShardsOverNATS, TeamMaxPluginCalls: e.cfg.TeamMaxPluginCalls, Logger: e.log})
	if err != nil {
		return fmt.Errorf("setup %s: start the roles: %w", setupQuarry, err)
	}
	e.closers = append(e.closers, n.Close)
	e.node = n
	if err := n.WaitReady(ctx); err != nil {
		return fmt.Errorf("setup %s: roles not ready: %w", setupQuarry, err)
	}
	c := n.Client()
	def := api.IndexDefinition{Name: benchIndex, Shards: e.cfg.Shards, Mapping: catalog.Mapping(), Query: demo.Query}
	if _, err := c.CreateIndexDef(ctx, def); err != nil {
		return fmt.Errorf("setup %s: create index: %w", setupQuarry, err)
	}
	res, err := c.Bulk(ctx, benchIndex, bytes.NewReader(docs), client.BulkOptions{})
	if err != nil {
		return fmt.Errorf("setup %s: bulk load: %w", setupQuarry, err)
	}
	want64 := uint64(bytes.Count(docs, []byte("\n")))
	var gen uint64
	if res.Snapshot != nil {
		gen = res.Snapshot.Generation
	}
	if err := waitServed(ctx, n, want64, gen); err != nil {
		return fmt.Errorf("setup %s: %w", setupQuarry, err)
	}
	e.ready(setupQuarry, start)
	var segs []string
	for _, st := range n.Searcher.Stats() {
		if st.Index == benchIndex {
			segs = append(segs, fmt.Sprintf("%d+%d", st.FileSegments, st.MemorySegments))
		}
	}
	fmt.Fprintf(e.progress, "  setup %s: segments of each shard (files+memory): %s\n", setupQuarry, strings.Join(segs, " "))
	search := func(ctx context.Context, req *api.SearchRequest) ([]benchHit, error) {
		r := *req
		resp, err := c.Search(ctx, benchIndex, &r)
		if err != nil {
			return nil, err
		}
		if resp.Shards.Failed > 0 {
			return nil, fmt.Errorf("%d of %d shards failed", resp.Shards.Failed, resp.Shards.Total)
		}
		if len(resp.Pipeline) > 0 { // a skipped step is a degraded answer
			st := resp.Pipeline[0]
			return nil, fmt.Errorf("%s %s %s: %s", st.Kind, st.Plugin, st.Status, st.Error)
		}
		hits := make([]benchHit, len(resp.Hits))
		for i, h := range resp.Hits {
			hits[i] = benchHit{h.ID, h.Score}
		}
		return hits, nil
	}
	setPipeline := func(p *broker.Pipeline) func() { return func() { n.Broker.SetPipeline(benchIndex, p) } }
	writer := quarryWriter(c, n, docs, e.cfg.Shards)
	if want[setupQuarry] {
		e.setups = append(e.setups, &benchSetup{name: setupQuarry, search: search, before: setPipeline(nil), writer: writer, quarry: true,
			about: fmt.Sprintf("Quarry, %d shards, no plugins: client → NATS → broker → searchers, every role in this process", e.cfg.Shards)})
	}
	if want[setupQuarryWasm] {
		start := time.Now()
		rt, err := plugins.NewRuntime(ctx, plugins.Config{CacheDir: filepath.Join(e.cfg.PluginCache, "compiled"), Logger: e.log})
		if err != nil {
			return fmt.Errorf("setup %s: %w", setupQuarryWasm, err)
		}
		e.closers = append(e.closers, func() { rt.Close(context.Background()) })
		fmt.Fprintf(e.progress, "  setup %s: building and compiling the plugins of %s (the first time takes a while)\n", setupQuarryWasm, e.cfg.Pipeline)
		pl, err := broker.LoadPipelineFile(ctx, rt, e.cfg.Pipeline, filepath.Join(e.cfg.PluginCache, "built"))
		if err != nil {
			return fmt.Errorf("setup %s: %w", setupQuarryWasm, err)
		}
		e.ready(setupQuarryWasm, start)
		e.setups = append(e.setups, &benchSetup{name: setupQuarryWasm, search: search, before: setPipeline(pl), writer: writer, quarry: true, pipeline: pl,
			about: "Quarry with the pipeline " + pipelineSummary(pf) + " in WebAssembly (wazero)"})
	}
	if want[setupQuarryNative] {
		pl, err := broker.NativePipeline(pf, nativePlugins)
		if err != nil {
			return fmt.Errorf("setup %s: %w", setupQuarryNative, err)
		}
		e.setups = append(e.setups, &benchSetup{name: setupQuarryNative, search: search, before: setPipeline(pl), writer: writer, quarry: true, pipeline: pl,
			about: "Quarry with the same pipeline natively (the same Go code and encoding, no WebAssembly)"})
	}
	return nil
}

// quarryWriter upserts the catalogue's documents again, unchanged (so
// that the hits and scores of the searches do not move), each a Put of
// its own through the client, in a fixed pseudo-random order; the
// searcher's applied sequences come from the node.
func quarryWriter(c *client.Client, n *node.Node, docs []byte, shards int) *benchWriter {
	type line struct {
		doc   []byte
		shard int
	}
	var lines []line
	for l := range bytes.Lines(docs) {
		var d struct {
			ID string `json:"id"`
		}
		if json.Unmarshal(l, &d) != nil || d.ID == "" {
			continue // bulk loading checked them
		}
		lines = append(lines, line{bytes.TrimSpace(l), subject.ShardOf(d.ID, shards)})
	}
	return &benchWriter{
		put: func(ctx context.Context, i int) (int, uint64, error) {
			l := lines[(i*7919)%len(lines)]
			seq, err := c.Put(ctx, benchIndex, l.doc)
			if err != nil {
				return 0, 0, fmt.Errorf("upsert: %w", err)
			}
			return l.shard, seq, nil
		},
		applied: func() []uint64 {
			out := make([]uint64, shards)
			for _, st := range n.Searcher.Stats() {
				if st.Index == benchIndex && st.Shard < shards {
					out[st.Shard] = st.Seq
				}
			}
			return out
		},
		segments: func() (files, memory float64) {
			var count float64
			for _, st := range n.Searcher.Stats() {
				if st.Index == benchIndex {
					files, memory, count = files+float64(st.FileSegments), memory+float64(st.MemorySegments), count+1
				}
			}
			return files / max(count, 1), memory / max(count, 1)
		},
	}
}

// waitServed waits until the node's searcher serves docs documents and
// generation gen (or newer) on every shard: the bulk load's snapshot swapped
// in, so that the swap does not happen during the measurements.
func waitServed(ctx context.Context, n *node.Node, docs, gen uint64) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	for {
		var served uint64
		behind := 0
		for _, st := range n.Searcher.Stats() {
			if st.Index != benchIndex {
				continue
			}
			served += st.Docs
			if st.Generation < gen {
				behind++
			}
		}
		if served == docs && behind == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the searcher serves %d of %d documents, %d shards before generation %d: %w", served, docs, behind, gen, ctx.Err())
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// pipelineSummary names a pipeline's steps: "spelling → synonyms → georank".
func pipelineSummary(pf *broker.PipelineFile) string {
	var names []string
	for _, s := range pf.Rewriters {
		names = append(names, s.Plugin)
	}
	for _, s := range pf.Rankers {
		names = append(names, s.Plugin)
	}
	return strings.Join(names, " → ")
}

// nativePlugins are the example plugins (examples/plugins/lib) run
// natively, by the name a pipeline file gives their step.
var nativePlugins = map[string]plugins.NativeFactory{
	"spelling": nativeRewriter(spelling.Hooks),
	"synonyms": nativeRewriter(synonyms.Hooks),
	"georank":  nativeRanker(georank.Hooks),
	"ltr":      nativeRanker(ltr.Hooks),
}

func nativeRewriter(hooks func([]byte) (*sdk.Hooks, error)) plugins.NativeFactory {
	return func(config []byte) (plugins.NativeHandler, error) {
		h, err := hooks(config)
		if err != nil {
			return nil, err
		}
		return h.HandleRewrite, nil
	}
}

func nativeRanker(hooks func([]byte) (*sdk.Hooks, error)) plugins.NativeFactory {
	return func(config []byte) (plugins.NativeHandler, error) {
		h, err := hooks(config)
		if err != nil {
			return nil, err
		}
		return h.HandleRank, nil
	}
}

// benchDocs is the sample catalogue, as NDJSON.
func benchDocs(seed uint64, n int) ([]catalog.Item, []byte, error) {
	items := catalog.Generate(seed, n)
	var buf bytes.Buffer
	if err := catalog.WriteNDJSON(&buf, items); err != nil {
		return nil, nil, err
	}
	return items, buf.Bytes(), nil
}

// typoWords are words the demo pipeline's spelling plugin knows: a
// generated query sometimes misspells one.
var typoWords = []string{"noodles", "spicy", "burger", "pizza", "sushi", "curry", "chicken", "vegan", "ramen", "tacos", "salad", "dumplings", "pasta"}

// synonymWords trigger the demo pipeline's synonyms plugin.
var synonymWords = []string{"pop", "soda", "chips", "fries", "hot"}

// generateQueries makes n typical searches of the catalogue items, the same
// for a given seed: words of dish names, with a cuisine or a dietary tag,
// some misspelt, some with synonyms; each with a context (a place near the
// item's restaurant and an hour) for rankers such as georank, asking for
// size hits with fields.
func generateQueries(items []catalog.Item, n int, seed uint64, size int, fields []string) []api.SearchRequest {
	r := rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15))
	words := func(it *catalog.Item) []string { return strings.Fields(strings.ToLower(it.Name)) }
	pick := func(ws []string) string { return ws[r.IntN(len(ws))] }
	out := make([]api.SearchRequest, n)
	for i := range out {
		it := &items[r.IntN(len(items))]
		ws := words(it)
		var q string
		switch k := r.IntN(20); {
		case k < 7: // a dish name, or its last two words
			if len(ws) > 2 && r.IntN(2) == 0 {
				ws = ws[len(ws)-2:]
			}
			q = strings.Join(ws, " ")
		case k < 10:
			q = pick(ws) + " " + it.Cuisine
		case k < 13:
			if len(it.Tags) > 0 {
				q = pick(it.Tags) + " " + pick(ws)
			} else {
				q = pick(ws)
			}
		case k < 17: // a misspelling: two letters swapped
			w := []byte(pick(typoWords))
			j := r.IntN(len(w) - 1)
			w[j], w[j+1] = w[j+1], w[j]
			q = string(w)
			if r.IntN(2) == 0 {
				q = pick(ws) + " " + q
			}
		default:
			q = pick(synonymWords) + " " + pick(ws)
		}
		where, _ := json.Marshal(map[string]any{
			"lat":  float64(int((it.Location.Lat+(r.Float64()-0.5)*0.05)*1e4)) / 1e4,
			"lon":  float64(int((it.Location.Lon+(r.Float64()-0.5)*0.05)*1e4)) / 1e4,
			"hour": r.IntN(24),
		})
		out[i] = api.SearchRequest{Q: q, Size: size, Fields: fields, Context: where}
	}
	return out
}
