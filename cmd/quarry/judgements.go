package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/quarrysearch/quarry/api"
	"github.com/quarrysearch/quarry/broker"
	"github.com/quarrysearch/quarry/client"
	"github.com/quarrysearch/quarry/internal/relevance"
)

func judgementsCmd(e *env, nf *natsFlags) *cobra.Command {
	g := newGroup("judgements", "push, list, show or remove judgement lists; set the relevance gate",
		"Judgement lists say which documents are relevant to a query, graded 0-3. One is\n"+
			"NDJSON, a query a line:\n"+
			`  {"q": "pad thai", "ratings": {"r0012-i03": 3, "r0140-i01": 1, "r0007-i11": 0}}`+"\n"+
			`  {"q": "noodles", "filter": {...}, "context": {"user": "u1"}, "ratings": {...}}`+"\n"+
			"See docs/relevance.md; quarry eval runs one, and an index's relevance gate runs\n"+
			"them on every plugin activate and promote.")
	for _, op := range []string{"push", "ls", "show", "rm", "gate", "from-events"} {
		g.AddCommand(judgementsOpCmd(e, nf, op))
	}
	return g
}

// judgementsOpCmd is judgements push|ls|show|rm|gate|from-events (op).
func judgementsOpCmd(e *env, nf *natsFlags, op string) *cobra.Command {
	about := map[string][3]string{
		"push": {"INDEX NAME FILE.ndjson|-", "store a judgement list (a new version of NAME)",
			"Stores a judgement list as the next version of NAME; a bad line refuses the whole list, naming the line."},
		"ls":   {"INDEX", "list the index's judgement lists", "Lists the index's judgement lists."},
		"show": {"INDEX NAME", "print one list's queries and ratings (default: its latest version)", "Prints a judgement list's queries and ratings."},
		"rm":   {"INDEX NAME", "remove a list and its earlier versions", "Removes a judgement list and its earlier versions."},
		"from-events": {"INDEX NAME", "build a list from users' clicks, carts and purchases (quarry events)",
			"Builds a judgement list from the index's user events with a position-debiased click\nmodel (docs/relevance.md) and prints it as NDJSON, or with --push stores it as NAME."},
		"gate": {"INDEX", "set, show or remove the index's relevance gate, which plugin activate and promote must pass",
			"Sets, shows or removes the index's relevance gate: plugin activate and promote\nrun it and refuse a version whose metric drops by more than --max-drop at --confidence.\n\n" +
				"  quarry judgements gate INDEX --set NAME[,NAME] --metric ndcg|mrr|precision|recall [--k 10] [--max-drop 0.01] [--confidence 0.95]\n" +
				"  quarry judgements gate INDEX [--off]"},
	}[op]
	n := map[string]int{"push": 3, "ls": 1, "show": 2, "rm": 2, "gate": 1, "from-events": 2}[op]
	cmd := newCommand(op+" "+about[0], about[1], about[2], n, n)
	fs := cmd.Flags()
	jsonOut := fs.Bool("json", false, "print JSON")
	var version, k int
	var sets, metric string
	var maxDrop, confidence float64
	var off, push bool
	var since string
	var minQueries int
	var eta float64
	switch op {
	case "from-events":
		fs.StringVar(&since, "since", "", "read the events of this long ago on, e.g. 168h (default: every event kept, 30 days)")
		fs.IntVar(&minQueries, "min-queries", relevance.DefaultMinQueries, "leave out texts searched fewer times")
		fs.Float64Var(&eta, "eta", relevance.DefaultEta, "position bias: rank p is examined with probability (1/p)^eta")
		fs.BoolVar(&push, "push", false, "store the list as NAME instead of printing it")
	case "show":
		fs.IntVar(&version, "version", 0, "the version to show (default: the latest)")
	case "gate":
		fs.StringVar(&sets, "set", "", "judgement lists the gate runs, comma-separated (each must pass)")
		fs.StringVar(&metric, "metric", relevance.NDCG, "ndcg, mrr, precision or recall")
		fs.IntVar(&k, "k", relevance.DefaultK, "depth")
		fs.Float64Var(&maxDrop, "max-drop", 0.01, "largest acceptable drop of the metric's mean")
		fs.Float64Var(&confidence, "confidence", relevance.DefaultConfidence, "confidence of the bound on the drop")
		fs.BoolVar(&off, "off", false, "remove the gate")
	}
	cmd.RunE = func(cmd *cobra.Command, pos []string) error {
		ctx := cmd.Context()
		var ndjson []byte
		var err error
		if op == "push" { // read before connecting: a missing file is the user's to fix
			if pos[2] == "-" {
				ndjson, err = io.ReadAll(io.LimitReader(e.stdin, api.MaxJudgementBytes+1))
			} else {
				ndjson, err = os.ReadFile(pos[2])
			}
			if err != nil {
				return err
			}
			if _, err := relevance.Decode(strings.NewReader(string(ndjson))); err != nil {
				return fmt.Errorf("%s: %w", pos[2], err)
			}
		}
		nc, c, err := nf.connect(ctx)
		if err != nil {
			return err
		}
		defer nc.Close()
		index := pos[0]
		switch op {
		case "push":
			set, err := c.PushJudgements(ctx, index, pos[1], ndjson)
			if err != nil {
				return err
			}
			if *jsonOut {
				return printJSON(e.stdout, set)
			}
			fmt.Fprintf(e.stdout, "pushed judgements %s version %d to %s (team %s): %d queries, %d ratings\n", set.Name, set.Version, set.Index, set.Team, set.NumQueries, set.NumRatings)
			return nil
		case "ls":
			sets, err := c.JudgementSets(ctx, index)
			if err != nil {
				return err
			}
			if *jsonOut {
				return printJSON(e.stdout, sets)
			}
			tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "NAME\tVERSION\tQUERIES\tRATINGS\tTEAM\tUPDATED")
			for _, s := range sets {
				fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%s\t%s\n", s.Name, s.Version, s.NumQueries, s.NumRatings, s.Team, s.Updated.Local().Format(time.DateTime))
			}
			tw.Flush()
			if g, err := c.Gate(ctx, index); err == nil {
				fmt.Fprintf(e.stdout, "\ngate: %s\n", gateLine(g))
			}
			return nil
		case "show":
			set, err := c.JudgementSet(ctx, index, pos[1], version)
			if err != nil {
				return err
			}
			if *jsonOut {
				return printJSON(e.stdout, set)
			}
			fmt.Fprintf(e.stdout, "judgements %s of %s, version %d (team %s, %s): %d queries, %d ratings\n", set.Name, set.Index, set.Version, set.Team,
				set.Updated.Local().Format(time.DateTime), set.NumQueries, set.NumRatings)
			for _, q := range set.Queries {
				var parts []string
				for _, id := range sortedKeys(q.Ratings) {
					parts = append(parts, fmt.Sprintf("%s:%d", id, q.Ratings[id]))
				}
				text := q.Q
				if text == "" {
					text = string(q.Query)
				}
				fmt.Fprintf(e.stdout, "%4d  %-30.30q  %s\n", q.Line, text, strings.Join(parts, " "))
			}
			return nil
		case "from-events":
			rep, err := c.JudgementsFromEvents(ctx, index, api.FromEventsRequest{Since: since, MinQueries: minQueries, Eta: eta})
			if err != nil {
				return err
			}
			if len(rep.Queries) == 0 {
				return api.BadRequest("%d events of %s gave no query with a relevant document (%d texts searched too few times or clicked too little; see --min-queries)", rep.Events, index, rep.Skipped)
			}
			var buf strings.Builder
			for _, q := range rep.Queries {
				q.Line = 0
				b, err := json.Marshal(q)
				if err != nil {
					return err
				}
				buf.Write(append(b, '\n'))
			}
			if !push {
				fmt.Fprint(e.stdout, buf.String())
				fmt.Fprintf(e.stderr, "%d queries from %d events (%d texts left out)\n", len(rep.Queries), rep.Events, rep.Skipped)
				return nil
			}
			set, err := c.PushJudgements(ctx, index, pos[1], []byte(buf.String()))
			if err != nil {
				return err
			}
			fmt.Fprintf(e.stdout, "pushed judgements %s version %d to %s: %d queries from %d events (%d texts left out)\n", set.Name, set.Version, index, set.NumQueries, rep.Events, rep.Skipped)
			return nil
		case "rm":
			if err := c.RemoveJudgements(ctx, index, pos[1]); err != nil {
				return err
			}
			fmt.Fprintf(e.stdout, "removed judgements %s of %s\n", pos[1], index)
			return nil
		}
		// gate
		var g *api.Gate
		switch {
		case off && sets != "":
			return api.BadRequest("--off and --set: give one")
		case off:
			if err := c.RemoveGate(ctx, index); err != nil {
				return err
			}
			fmt.Fprintf(e.stdout, "removed the gate of %s\n", index)
			return nil
		case sets != "":
			g, err = c.SetGate(ctx, index, &api.Gate{Sets: strings.Split(sets, ","), Metric: metric, K: k, MaxDrop: maxDrop, Confidence: confidence})
		default:
			g, err = c.Gate(ctx, index)
		}
		if err != nil {
			return err
		}
		if *jsonOut {
			return printJSON(e.stdout, g)
		}
		fmt.Fprintf(e.stdout, "gate of %s: %s\n", index, gateLine(g))
		return nil
	}
	return cmd
}

// gateLine says what a gate asks, in one line.
func gateLine(g *api.Gate) string {
	return fmt.Sprintf("%s@%d must not drop by more than %g at %g%% confidence on %s", g.Metric, g.K, g.MaxDrop, g.Confidence*100, strings.Join(g.Sets, ", "))
}

func sortedKeys(m map[string]int) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// evalCmd is quarry eval.
func evalCmd(e *env, nf *natsFlags) *cobra.Command {
	cmd := newCommand("eval INDEX --judgements NAME [--variant PLUGIN=FILE.wasm|PLUGIN=DIGEST | --pipeline FILE] [--k 10]",
		"measure the live pipeline and a candidate on a judgement list (nDCG, MRR, P@k, R@k)",
		"Runs each query of a judgement list through the index's live pipeline and, with --variant,\n"+
			"through the same pipeline with a candidate version of one plugin (a .wasm file is pushed and\n"+
			"validated, not activated; a plugin not yet live is added, as activating it would), or with\n"+
			"--pipeline through a whole candidate pipeline file (its plugins pushed, not activated), and prints\n"+
			"nDCG@k, reciprocal rank, precision@k and recall@k per query, and in sum with bootstrap\n"+
			"confidence intervals, the paired difference and a paired randomization test (docs/relevance.md).\n"+
			"Two runs on the same index print the same numbers.", 1, 1)
	fs := cmd.Flags()
	set := fs.String("judgements", "", "the judgement list (required)")
	variant := fs.String("variant", "", "the candidate: PLUGIN=FILE.wasm, or PLUGIN=DIGEST of a pushed version")
	pipelineFile := fs.String("pipeline", "", "the candidate: a whole pipeline file (as quarry serve --pipeline takes; its plugins are pushed, not activated)")
	k := fs.Int("k", relevance.DefaultK, "depth")
	confidence := fs.Float64("confidence", relevance.DefaultConfidence, "confidence of the intervals")
	kind := fs.String("kind", "", "the candidate's kind, rewriter or ranker (default: the live plugin's)")
	configFile := fs.String("config", "", "the candidate's configuration (default: none)")
	jsonOut := fs.Bool("json", false, "print JSON")
	cmd.RunE = func(cmd *cobra.Command, pos []string) error {
		ctx := cmd.Context()
		if *set == "" {
			return api.BadRequest("--judgements is required")
		}
		if _, err := relevance.CheckOptions(relevance.Options{K: *k, Confidence: *confidence}); err != nil {
			return err
		}
		if *variant != "" && *pipelineFile != "" {
			return api.BadRequest("--variant and --pipeline: give one")
		}
		var pf *broker.PipelineFile
		var err error
		if *pipelineFile != "" {
			if pf, err = broker.ReadPipelineFile(*pipelineFile); err != nil {
				return err
			}
		}
		var name, target string
		if *variant != "" {
			var ok bool
			if name, target, ok = strings.Cut(*variant, "="); !ok || name == "" || target == "" {
				return api.BadRequest("--variant %q: want PLUGIN=FILE.wasm or PLUGIN=DIGEST", *variant)
			}
		}
		nc, c, err := nf.connect(ctx)
		if err != nil {
			return err
		}
		defer nc.Close()
		index := pos[0]
		req := api.EvalRequest{Set: *set, K: *k, Confidence: *confidence}
		if name != "" {
			digest := target
			if strings.HasSuffix(target, ".wasm") || fileExists(target) {
				wasm, err := os.ReadFile(target)
				if err != nil {
					return err
				}
				v, err := pushCandidate(ctx, c, index, name, wasm, candidate{kind: *kind, configFile: *configFile, notLive: true})
				if err != nil {
					return err
				}
				digest = v.Digest
			}
			req.Variant = &api.Variant{Plugin: name, Digest: digest}
		}
		if pf != nil {
			if req.Pipeline, err = pushPipelineFile(ctx, c, index, *pipelineFile, pf); err != nil {
				return err
			}
		}
		rep, err := c.Evaluate(ctx, index, req)
		if err != nil {
			return err
		}
		if *jsonOut {
			return printJSON(e.stdout, rep)
		}
		printEval(e.stdout, rep)
		return nil
	}
	return cmd
}

// pushPipelineFile pushes every step of a pipeline file (its Go plugins
// built with the local toolchain) as a version, validated, not
// activated, and returns the pipeline of those versions.
func pushPipelineFile(ctx context.Context, c *client.Client, index, path string, f *broker.PipelineFile) (*api.PipelineSpec, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	base := filepath.Dir(abs)
	buildDir, err := os.MkdirTemp("", "quarry-eval-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(buildDir)
	spec := &api.PipelineSpec{Index: index}
	for _, k := range []struct {
		kind  string
		steps []broker.StepFile
		into  *[]api.StepSpec
	}{{"rewriter", f.Rewriters, &spec.Rewriters}, {"ranker", f.Rankers, &spec.Rankers}} {
		for i, s := range k.steps {
			var wasm []byte
			switch {
			case s.Wasm != "" && s.Go == "":
				wasm, err = os.ReadFile(filepath.Join(base, s.Wasm))
			case s.Go != "" && s.Wasm == "":
				wasm, err = broker.BuildGoPlugin(ctx, filepath.Join(base, s.Go), buildDir)
			default:
				err = errors.New(`give exactly one of "wasm" and "go"`)
			}
			if err != nil {
				return nil, fmt.Errorf("--pipeline %s: %s %d (%s): %w", path, k.kind, i, s.Plugin, err)
			}
			st := s.Spec(wasm)
			if _, err := c.PushPlugin(ctx, index, s.Plugin, wasm, client.PushOptions{Kind: k.kind, Step: st}); err != nil {
				return nil, fmt.Errorf("--pipeline %s: %s %s: %w", path, k.kind, s.Plugin, err)
			}
			*k.into = append(*k.into, st)
		}
	}
	return spec, nil
}

func fileExists(path string) bool {
	st, err := os.Stat(path)
	return err == nil && !st.IsDir()
}

// printEval prints an evaluation: a line per query, then the summary.
func printEval(w io.Writer, rep *api.EvalReport) {
	cand := ""
	switch v := rep.Variant; {
	case v != nil && v.Pipeline != nil:
		var steps []string
		for _, st := range append(slices.Clone(v.Pipeline.Rewriters), v.Pipeline.Rankers...) {
			steps = append(steps, st.Plugin+" "+api.ShortDigest(st.Digest))
		}
		cand = "; candidate pipeline: " + strings.Join(steps, ", ")
		if len(steps) == 0 {
			cand = "; candidate pipeline: no plugins"
		}
	case v != nil:
		cand = fmt.Sprintf("; candidate %s %s", v.Plugin, "sha256:"+api.ShortDigest(v.Digest))
	}
	fmt.Fprintf(w, "evaluation of %s on judgements %s version %d: %d queries, k=%d%s\n\n", rep.Index, rep.Set, rep.Version, len(rep.Queries), rep.K, cand)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	pair := func(l float64, c *api.QueryMetrics, get func(api.QueryMetrics) float64) string {
		if c == nil {
			return fmt.Sprintf("%.3f", l)
		}
		return fmt.Sprintf("%.3f → %.3f", l, get(*c))
	}
	fmt.Fprintf(tw, "LINE\tQUERY\tRELEVANT\tNDCG@%d\tRR\tP@%d\tR@%d\n", rep.K, rep.K, rep.K)
	for _, q := range rep.Queries {
		if q.Error != "" {
			fmt.Fprintf(tw, "%d\t%.30q\t%d\terror: %s\t\t\t\n", q.Line, q.Q, q.Relevant, q.Error)
			continue
		}
		fmt.Fprintf(tw, "%d\t%.30q\t%d\t%s\t%s\t%s\t%s\n", q.Line, q.Q, q.Relevant,
			pair(q.Live.NDCG, q.Candidate, func(m api.QueryMetrics) float64 { return m.NDCG }),
			pair(q.Live.RR, q.Candidate, func(m api.QueryMetrics) float64 { return m.RR }),
			pair(q.Live.Precision, q.Candidate, func(m api.QueryMetrics) float64 { return m.Precision }),
			pair(q.Live.Recall, q.Candidate, func(m api.QueryMetrics) float64 { return m.Recall }))
	}
	tw.Flush()
	fmt.Fprintln(w)
	printEvalSummary(w, rep)
}

// printEvalSummary prints an evaluation's summary: each metric, live and
// candidate, with intervals, the difference and its p.
func printEvalSummary(w io.Writer, rep *api.EvalReport) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	ci := fmt.Sprintf("%g%% CI", rep.Confidence*100)
	if rep.Variant == nil {
		fmt.Fprintf(tw, "METRIC\tLIVE\t%s\n", ci)
	} else {
		fmt.Fprintf(tw, "METRIC\tLIVE\t%s\tCANDIDATE\t%s\tDIFF\t%s\tp\n", ci, ci, ci)
	}
	est := func(e api.Estimate) string { return fmt.Sprintf("%.4f\t[%.4f, %.4f]", e.Mean, e.Low, e.High) }
	for _, m := range rep.Summary {
		label := m.Metric
		if m.Metric != relevance.MRR {
			label = fmt.Sprintf("%s@%d", m.Metric, rep.K)
		}
		if m.Diff == nil {
			fmt.Fprintf(tw, "%s\t%s\n", label, est(m.Live))
			continue
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%.4f\n", label, est(m.Live), est(*m.Candidate),
			fmt.Sprintf("%+.4f\t[%+.4f, %+.4f]", m.Diff.Mean, m.Diff.Low, m.Diff.High), m.P)
	}
	tw.Flush()
	failed := 0
	for _, q := range rep.Queries {
		if q.Error != "" {
			failed++
		}
	}
	if failed > 0 {
		fmt.Fprintf(w, "\n%d queries failed and are left out of the summary (both sides)\n", failed)
	}
	fmt.Fprintf(w, "\n(zero_relevant: the share of queries with no relevant document in the top %d; lower is better)\n", rep.K)
}

// eventsCmd is quarry events: store user events.
func eventsCmd(e *env, nf *natsFlags) *cobra.Command {
	cmd := newCommand("events INDEX FILE.ndjson|-", "store what users did with search results (clicks, carts, purchases, dwell)",
		"Stores what users did with an index's search results, one event a line (OpenSearch UBI's shape):\n"+
			`  {"action_name": "click", "query_id": "…", "user_query": "pad thai", "client_id": "u1",`+"\n"+
			`   "event_attributes": {"object": {"object_id": "r0012-i03"}, "position": {"ordinal": 3}}}`+"\n"+
			"action_name: click, add_to_cart, purchase or dwell (with event_attributes.dwell_time, seconds);\n"+
			"query_id is the search response's. A file with a bad event is refused whole, naming its line.\n"+
			"quarry judgements from-events builds a judgement list from them.", 2, 2)
	cmd.RunE = func(cmd *cobra.Command, pos []string) error {
		ctx := cmd.Context()
		in := io.Reader(e.stdin)
		if pos[1] != "-" {
			f, err := os.Open(pos[1])
			if err != nil {
				return err
			}
			defer f.Close()
			in = f
		}
		raw, err := io.ReadAll(io.LimitReader(in, 64<<20))
		if err != nil {
			return err
		}
		var evs []api.UserEvent
		lines := []int{}
		for i, line := range strings.Split(string(raw), "\n") {
			if line = strings.TrimSpace(line); line == "" {
				continue
			}
			var ev api.UserEvent
			if err := api.DecodeStrict("event", []byte(line), &ev); err != nil {
				return api.BadRequest("%s: line %d: %v", pos[1], i+1, err)
			}
			if err := ev.Validate(); err != nil {
				return api.BadRequest("%s: line %d: %v", pos[1], i+1, err)
			}
			evs = append(evs, ev)
			lines = append(lines, i+1)
		}
		if len(evs) == 0 {
			return api.BadRequest("%s: no events", pos[1])
		}
		nc, c, err := nf.connect(ctx)
		if err != nil {
			return err
		}
		defer nc.Close()
		stored := 0
		for from := 0; from < len(evs); from += api.MaxEventsPerRequest {
			batch := evs[from:min(from+api.MaxEventsPerRequest, len(evs))]
			res, err := c.PutEvents(ctx, pos[0], batch)
			if err != nil {
				return fmt.Errorf("events from line %d on (%d stored before): %w", lines[from], stored, err)
			}
			stored += res.Accepted
		}
		fmt.Fprintf(e.stdout, "stored %d events of %s\n", stored, pos[0])
		return nil
	}
	return cmd
}
