package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/quarrysearch/quarry/api"
	"github.com/quarrysearch/quarry/broker"
	"github.com/quarrysearch/quarry/client"
	"github.com/quarrysearch/quarry/internal/loadgen"
	"github.com/quarrysearch/quarry/plugins"
)

// pluginAdminCmd is quarry plugin push|ls|show|activate|rollback|rm|
// canary|promote|shadow|events|canary-stats|shadow-stats (op).
func pluginAdminCmd(e *env, nf *natsFlags, op string) *cobra.Command {
	about := map[string][3]string{
		"push":     {"INDEX NAME FILE.wasm", "upload a version, validate it (and put it live)", "Uploads a plugin version (content-addressed), validates it (compile, ABI, imports,\nsample requests within its budget) and, with --activate, puts it live."},
		"ls":       {"INDEX", "list an index's pushed versions and its live pipeline", "Lists an index's pushed plugin versions and its live pipeline."},
		"show":     {"INDEX NAME", "show one plugin's versions and its live step", "Shows one plugin's versions and its live step."},
		"activate": {"INDEX NAME DIGEST", "put a validated version live (if it passes the index's relevance gate)", "Puts a validated version of a plugin live (brokers swap it in without a restart).\nWhen the index has a relevance gate (quarry judgements gate), the version must pass it;\na gate that runs on past the registry's --gate-wait goes on in the background, and\nthis waits for its outcome, saying how far it got (Ctrl-C stops only the waiting)."},
		"rollback": {"INDEX", "restore the previous pipeline", "Restores the index's previous pipeline."},
		"rm":       {"INDEX NAME", "take a plugin out of the pipeline", "Takes a plugin out of the index's pipeline."},
		"canary": {"INDEX NAME DIGEST", "send a share of the queries to a candidate version; rankers: or interleave it with the live one",
			"Sends --percent of the queries to a candidate version of a live plugin\n(sticky by a context field with --sticky; --percent 0 ends the canary).\n" +
				"With --interleave (rankers), the live and the candidate rankings are interleaved\n" +
				"for that share of the users; their clicks decide, and the candidate is promoted\n" +
				"or rolled back by itself (plugin canary-stats shows how far it got)."},
		"promote":      {"INDEX NAME", "make the canary the live version (if it passes the gate)", "Makes a plugin's canary its live version, if it passes the index's relevance gate."},
		"shadow":       {"INDEX NAME DIGEST", "run a candidate version (ranker or rewriter) on mirrored queries, for comparison", "Runs a candidate version of a live plugin on --percent of the queries, only to\ncompare it with the live one (--percent 0 ends the shadow); see shadow-stats.\nA ranker's shadow reorders the live ranker's candidates; a rewriter's shadow\nrewrites the request and the rest of the search runs again in the background\n(real extra load, bounded per broker) to compare the final top 10."},
		"events":       {"INDEX", "list what the platform did on its own (automatic fallbacks and rollbacks)", "Lists what the platform did to the index's plugins on its own (automatic fallbacks:\nfail-open steps taken out, fail-closed ones rolled back to their last good version)."},
		"canary-stats": {"INDEX NAME", "show the interleaving experiment's wins, losses, ties and test", "Shows a plugin's interleaving experiment (plugin canary --interleave): queries won, lost and tied,\nthe sequential test's state and, once it decided, what Quarry did."},
		"shadow-stats": {"INDEX NAME", "show overlap@10, rank correlation, latency and errors of the shadow", "Compares a plugin's shadow with the live version: overlap@10, rank correlation,\nlatency and errors, over every broker."},
	}[op]
	n := map[string]int{"push": 3, "ls": 1, "show": 2, "activate": 3, "rollback": 1, "rm": 2, "canary": 3, "promote": 2, "shadow": 3, "shadow-stats": 2, "canary-stats": 2, "events": 1}[op]
	cmd := newCommand(op+" "+about[0], about[1], about[2], n, n)
	fs := cmd.Flags()
	jsonOut := fs.Bool("json", false, "print JSON")
	var kind, configFile, policy, fields, samplesFile string
	var budget, latencyBudget, depth, instances int
	var activate bool
	var percent int
	var sticky string
	if op == "shadow" {
		fs.IntVar(&percent, "percent", 100, "share of queries mirrored to the candidate, 0-100 (0 ends the shadow)")
	}
	var interleave bool
	var test api.InterleaveSpec
	if op == "canary" {
		fs.IntVar(&percent, "percent", 10, "share of queries for the candidate, 0-100 (0 ends the canary)")
		fs.StringVar(&sticky, "sticky", "", "context field that keeps a user on one version (e.g. user)")
		fs.BoolVar(&interleave, "interleave", false, "rankers: interleave the live and the candidate rankings (team-draft) for the share; clicks decide, and the candidate is promoted or rolled back by itself (docs/relevance.md)")
		fs.Float64Var(&test.Delta, "delta", 0, "--interleave: the difference in the share of won queries the test tells (default 0.1)")
		fs.Float64Var(&test.Alpha, "alpha", 0, "--interleave: chance of promoting a candidate worse by delta (default 0.05)")
		fs.Float64Var(&test.Beta, "beta", 0, "--interleave: chance of rolling back a candidate better by delta (default 0.05)")
		fs.IntVar(&test.MaxQueries, "max-queries", 0, "--interleave: decided queries after which, undecided, the candidate is rolled back (default 2000)")
	}
	var wait time.Duration
	switch op {
	case "activate", "rollback", "rm", "canary", "promote", "shadow", "push":
		fs.DurationVar(&wait, "wait", 10*time.Second, "wait up to this long until every broker runs the changed pipeline, so a search sent next uses it (0: do not wait)")
	}
	var force bool
	var reason string
	if op == "activate" || op == "promote" {
		fs.BoolVar(&force, "force", false, "put the version live although the index's relevance gate refuses it (needs --reason; recorded as a plugin event)")
		fs.StringVar(&reason, "reason", "", "why --force: recorded with the event")
	}
	if op == "push" {
		fs.StringVar(&kind, "kind", "", "rewriter or ranker (required)")
		fs.StringVar(&configFile, "config", "", "the plugin's configuration (JSON file)")
		fs.StringVar(&policy, "policy", string(api.FailOpen), "fail-open or fail-closed")
		fs.IntVar(&budget, "budget-ms", int(plugins.DefaultBudget/time.Millisecond), "time budget per call: a longer call is stopped and fails")
		fs.IntVar(&latencyBudget, "latency-budget-ms", 0, "latency the plugin should keep under (at most --budget-ms); when more than the broker's --fallback-slow-rate of its calls take longer, the automatic fallback acts (0: none)")
		fs.StringVar(&fields, "fields", "", "rankers: stored fields the ranker reads, comma-separated")
		fs.IntVar(&depth, "rerank-depth", 0, "rankers: candidates the ranker sees (default from+size)")
		fs.IntVar(&instances, "instances", 0, fmt.Sprintf("warm instances per broker (default %d)", plugins.DefaultInstances))
		fs.BoolVar(&activate, "activate", false, "put the version live once validated")
		fs.StringVar(&samplesFile, "samples", "", "requests the version must handle before it is valid, one a line (JSON search requests or plain text); the index's recorded queries are added")
	}
	cmd.RunE = clientRun(nf, func(ctx context.Context, c *client.Client, pos []string) error {
		index := pos[0]
		switch op {
		case "push":
			wasm, err := os.ReadFile(pos[2])
			if err != nil {
				return err
			}
			step := api.StepSpec{Policy: api.Policy(policy), BudgetMS: budget, LatencyBudgetMS: latencyBudget, RerankDepth: depth, Instances: instances}
			if fields != "" {
				step.Fields = strings.Split(fields, ",")
			}
			if configFile != "" {
				if step.Config, err = os.ReadFile(configFile); err != nil {
					return err
				}
			}
			opts := client.PushOptions{Kind: kind, Step: step, Activate: activate}
			if samplesFile != "" {
				if opts.Samples, err = loadgen.ReadRequests(samplesFile); err != nil {
					return fmt.Errorf("--samples: %w", err)
				}
			}
			v, err := c.PushPlugin(ctx, index, pos[1], wasm, opts)
			if errors.Is(err, api.ErrGateRunning) { // --activate: the gate runs on
				_, err = waitGate(ctx, e.stderr, c, index, err)
			}
			if err != nil {
				return err
			}
			if *jsonOut {
				return printJSON(e.stdout, v)
			}
			fmt.Fprintf(e.stdout, "pushed %s %s (%s, %s): valid\n", v.Name, v.Digest, v.Kind, humanBytes(v.Size))
			if activate {
				fmt.Fprintln(e.stdout, "activated")
				l, err := c.Plugins(ctx, index)
				if err != nil || l.Pipeline == nil {
					return err
				}
				return waitBrokers(ctx, e.stdout, c, index, l.Pipeline.Revision, wait)
			}
			return nil
		case "events":
			evs, err := c.PluginEvents(ctx, index)
			if err != nil {
				return err
			}
			if *jsonOut {
				return printJSON(e.stdout, evs)
			}
			for _, ev := range evs {
				fmt.Fprintf(e.stdout, "%s  %s %s %s: %s\n", ev.Time.Local().Format(time.DateTime), ev.Plugin, ev.Version, ev.Event, ev.Reason)
			}
			if len(evs) == 0 {
				fmt.Fprintln(e.stdout, "no events")
			}
			return nil
		case "canary-stats":
			st, err := c.CanaryStats(ctx, index, pos[1])
			if err != nil {
				return err
			}
			if *jsonOut {
				return printJSON(e.stdout, st)
			}
			fmt.Fprintf(e.stdout, "interleaving of %s on %s: candidate sha256:%s against live sha256:%s, %s\n", st.Plugin, st.Index, api.ShortDigest(st.Candidate), api.ShortDigest(st.Live), st.State)
			fmt.Fprintf(e.stdout, "  queries won by the candidate %d, by the live version %d, tied %d (%d clicks credited)\n", st.Wins, st.Losses, st.Ties, st.Clicks)
			fmt.Fprintf(e.stdout, "  log likelihood ratio %.3f: promote at %.3f, roll back at %.3f (delta %g, alpha %g, beta %g, at most %d queries)\n",
				st.LLR, st.Upper, st.Lower, st.Test.Delta, st.Test.Alpha, st.Test.Beta, st.Test.MaxQueries)
			if st.Reason != "" {
				fmt.Fprintf(e.stdout, "  %s at %s: %s\n", st.State, st.Decided.Local().Format(time.DateTime), st.Reason)
			}
			return nil
		case "shadow-stats":
			st, err := c.ShadowStats(ctx, index, pos[1])
			if err != nil {
				return err
			}
			if *jsonOut {
				return printJSON(e.stdout, st)
			}
			fmt.Fprintf(e.stdout, "shadow of %s on %s: %d queries compared\n  overlap@10 %.3f, rank correlation %.3f\n  live %.3f ms, shadow %.3f ms; errors live %d, shadow %d\n",
				st.Plugin, st.Index, st.Queries, st.OverlapAt10, st.RankCorrelation, st.LiveMS, st.ShadowMS, st.LiveErrors, st.ShadowErrors)
			if st.Queries == 0 {
				fmt.Fprintf(e.stdout, "  (brokers publish their tallies every %s: a shadow set up moments ago, or with no searches since, has none yet)\n", broker.ShadowPublishEvery)
			}
			return nil
		case "activate", "rollback", "rm", "canary", "promote", "shadow":
			var spec *api.PipelineSpec
			var err error
			switch op {
			case "shadow":
				spec, err = c.ShadowPlugin(ctx, index, pos[1], pos[2], percent)
			case "canary":
				if interleave {
					spec, err = c.InterleavePlugin(ctx, index, pos[1], pos[2], percent, sticky, test)
				} else {
					spec, err = c.CanaryPlugin(ctx, index, pos[1], pos[2], percent, sticky)
				}
			case "promote":
				spec, err = c.PromotePlugin(ctx, index, pos[1], goLive(force, reason)...)
			case "activate":
				spec, err = c.ActivatePlugin(ctx, index, pos[1], pos[2], goLive(force, reason)...)
			case "rollback":
				spec, err = c.RollbackPipeline(ctx, index)
			case "rm":
				spec, err = c.RemovePlugin(ctx, index, pos[1])
			}
			if errors.Is(err, api.ErrGateRunning) {
				spec, err = waitGate(ctx, e.stderr, c, index, err)
			}
			if err != nil {
				return err
			}
			if *jsonOut {
				if err := printJSON(e.stdout, spec); err != nil {
					return err
				}
				return waitBrokers(ctx, io.Discard, c, index, spec.Revision, wait)
			}
			printPipeline(e.stdout, spec)
			return waitBrokers(ctx, e.stdout, c, index, spec.Revision, wait)
		}
		l, err := c.Plugins(ctx, index)
		if err != nil {
			return err
		}
		if op == "show" {
			var vs []api.PluginVersion
			for _, v := range l.Versions {
				if v.Name == pos[1] {
					vs = append(vs, v)
				}
			}
			if len(vs) == 0 {
				return api.NotFound("plugin %s was never pushed to index %q", pos[1], index)
			}
			l.Versions = vs
		}
		if *jsonOut {
			return printJSON(e.stdout, l)
		}
		tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "PLUGIN\tKIND\tDIGEST\tSIZE\tPUSHED\tVALID")
		for _, v := range l.Versions {
			valid := "yes"
			if !v.Valid {
				valid = "no: " + v.Error
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", v.Name, v.Kind, "sha256:"+api.ShortDigest(v.Digest), humanBytes(v.Size), v.Pushed.Local().Format(time.DateTime), valid)
		}
		tw.Flush()
		if op == "show" {
			for _, v := range l.Versions {
				if v.Gate != nil {
					fmt.Fprintf(e.stdout, "\ngate on sha256:%s: %s\n", api.ShortDigest(v.Digest), gateVerdict(v.Gate))
				}
			}
		}
		if g := l.Gate; g != nil && (op == "ls" || g.Plugin == pos[1] || g.Plugin == "pipeline") {
			fmt.Fprintf(e.stdout, "\n%s\n", gateRunning(g))
		}
		fmt.Fprintln(e.stdout)
		printPipeline(e.stdout, l.Pipeline)
		return nil
	})
	return cmd
}

// goLive is the client options of --force and --reason.
func goLive(force bool, reason string) []client.GoLiveOption {
	if !force {
		return nil
	}
	return []client.GoLiveOption{client.Force(reason)}
}

// gateRunning says how far a relevance gate running in the background
// got: "relevance gate running on sha256:1a2b3c4d5e6f: 340 of 1000
// queries, 12s (plugin activate boost 1a2b3c4d5e6f)".
func gateRunning(g *api.GateProgress) string {
	on := "the pipeline"
	if g.Digest != "" {
		on = "sha256:" + api.ShortDigest(g.Digest)
	}
	return fmt.Sprintf("relevance gate running on %s: %d of %d queries, %s (%s)", on, g.Done, g.Total, time.Since(g.Started).Round(time.Second), g.What)
}

// gateProgressEvery is how often waitGate says how far the gate got.
const gateProgressEvery = 2 * time.Second

// waitGate waits for the relevance gate a change's request left running
// in the background (err, its gate_running error), saying on w how far
// it got every gateProgressEvery, and returns its outcome as the request
// would have: the pipeline, or the refusal with its figures. The end of
// ctx (Ctrl-C) stops only the waiting.
func waitGate(ctx context.Context, w io.Writer, c *client.Client, index string, err error) (*api.PipelineSpec, error) {
	var ae *api.Error
	if !errors.As(err, &ae) || ae.Running == nil {
		return nil, err
	}
	job := ae.Running
	fmt.Fprintf(w, "%s\nrelevance gate: %d of %d queries (Ctrl-C stops waiting; the gate goes on)\n", ae.Message, job.Done, job.Total)
	last := time.Now()
	spec, err := c.WaitGate(ctx, index, job, func(p api.GateProgress) {
		if time.Since(last) >= gateProgressEvery {
			fmt.Fprintf(w, "relevance gate: %d of %d queries\n", p.Done, p.Total)
			last = time.Now()
		}
	})
	if err != nil && ctx.Err() != nil {
		show := "quarry plugin ls " + index
		if job.Digest != "" {
			show = "quarry plugin show " + index + " " + job.Plugin
		}
		return nil, fmt.Errorf("stopped waiting; the relevance gate goes on, and %s goes live by itself if it passes (%s shows the outcome)", job.What, show)
	}
	return spec, err
}

// gateVerdict says what a gate found for a version, with the figures.
func gateVerdict(r *api.GateResult) string {
	verdict := "passed"
	switch {
	case r.Forced:
		verdict = "FAILED, forced live: " + r.Reason
	case !r.Passed:
		verdict = "FAILED, refused"
	}
	out := fmt.Sprintf("%s (%s, %s)", verdict, gateLine(&r.Gate), r.Time.Local().Format(time.DateTime))
	for _, s := range r.Sets {
		if s.Error != "" {
			out += fmt.Sprintf("\n  set %s: %s", s.Set, s.Error)
			continue
		}
		out += fmt.Sprintf("\n  set %s v%d, %d queries: live %.4f, candidate %.4f, diff %+.4f, lower bound %+.4f (max drop %g), p=%.4f",
			s.Set, s.Version, s.Queries, s.Live, s.Candidate, s.Diff, s.Lower, r.Gate.MaxDrop, s.P)
	}
	return out
}

func printPipeline(w io.Writer, spec *api.PipelineSpec) {
	fmt.Fprintf(w, "pipeline of %s (revision %d", spec.Index, spec.Revision)
	if spec.Change != "" {
		fmt.Fprintf(w, ", by %s", spec.Change)
	}
	fmt.Fprintln(w, "):")
	if len(spec.Rewriters)+len(spec.Rankers) == 0 {
		fmt.Fprintln(w, "  (no plugins)")
	}
	if spec.Gate != nil {
		fmt.Fprintf(w, "  relevance gate: %s\n", strings.ReplaceAll(gateVerdict(spec.Gate), "\n", "\n  "))
	}
	for _, s := range spec.Rewriters {
		fmt.Fprintf(w, "  rewriter %-12s %s  %s\n", s.Plugin, "sha256:"+api.ShortDigest(s.Digest), stepDetail(s))
		printCandidates(w, s)
	}
	for _, s := range spec.Rankers {
		fmt.Fprintf(w, "  ranker   %-12s %s  %s\n", s.Plugin, "sha256:"+api.ShortDigest(s.Digest), stepDetail(s))
		printCandidates(w, s)
	}
}

// waitBrokers waits up to wait (0: not at all) until every broker runs
// the index's pipeline revision rev, then says so (printBrokers).
func waitBrokers(ctx context.Context, w io.Writer, c *client.Client, index string, rev uint64, wait time.Duration) error {
	if wait <= 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	status, err := c.WaitPipeline(ctx, index, rev)
	if err != nil {
		return fmt.Errorf("the pipeline changed, but %w", err)
	}
	printBrokers(w, index, rev, status)
	return nil
}

// printBrokers says which revision each broker runs for the index.
func printBrokers(w io.Writer, index string, live uint64, status []api.PipelineStatus) {
	if len(status) == 0 {
		fmt.Fprintln(w, "brokers: none answered")
		return
	}
	byRev := map[uint64]int{}
	for _, st := range status {
		byRev[st.Revisions[index]]++
	}
	if len(byRev) == 1 && byRev[live] == len(status) {
		fmt.Fprintf(w, "brokers: all %d run revision %d\n", len(status), live)
		return
	}
	for _, st := range status {
		rev := st.Revisions[index]
		note := ""
		if rev != live {
			note = fmt.Sprintf(" (not yet revision %d)", live)
		}
		fmt.Fprintf(w, "broker %s runs revision %d%s\n", st.Broker, rev, note)
	}
}

// printCandidates prints a step's canary and shadow versions.
func printCandidates(w io.Writer, s api.StepSpec) {
	if c := s.Canary; c != nil {
		sticky := "random"
		if c.StickyKey != "" {
			sticky = "sticky by " + c.StickyKey
		}
		mode := "canary"
		if c.Interleave != nil {
			mode = "interleaving canary"
		}
		fmt.Fprintf(w, "    %s %d%% (%s) → %s  %s\n", mode, c.Percent, sticky, "sha256:"+api.ShortDigest(c.Step.Digest), stepDetail(c.Step))
	}
	if sh := s.Shadow; sh != nil {
		fmt.Fprintf(w, "    shadow %d%% → %s  %s\n", sh.Percent, "sha256:"+api.ShortDigest(sh.Step.Digest), stepDetail(sh.Step))
	}
	if t := s.TakenOut; t != nil {
		fmt.Fprintf(w, "    TAKEN OUT by the automatic fallback at %s: %s (activate a version to put it back)\n", t.Time.Format(time.RFC3339), t.Reason)
	}
}

func stepDetail(s api.StepSpec) string {
	var parts []string
	if s.Policy != "" {
		parts = append(parts, string(s.Policy))
	}
	if s.BudgetMS > 0 {
		parts = append(parts, fmt.Sprintf("budget %dms", s.BudgetMS))
	}
	if s.LatencyBudgetMS > 0 {
		parts = append(parts, fmt.Sprintf("latency budget %dms", s.LatencyBudgetMS))
	}
	if len(s.Fields) > 0 {
		parts = append(parts, "fields "+strings.Join(s.Fields, ","))
	}
	if s.RerankDepth > 0 {
		parts = append(parts, fmt.Sprintf("depth %d", s.RerankDepth))
	}
	if len(s.Config) > 0 {
		parts = append(parts, "config "+string(s.Config))
	}
	return strings.Join(parts, ", ")
}

func pipelineCmd(e *env, nf *natsFlags) *cobra.Command {
	return newGroup("pipeline", "show or set an index's plugin pipeline", pipelineAbout,
		pipelineOpCmd(e, nf, "show"), pipelineOpCmd(e, nf, "set"))
}

// pipelineAbout is the help of pipeline and pipeline set.
const pipelineAbout = "Shows an index's live plugin pipeline, or replaces it with FILE (api.PipelineSpec JSON:\n" +
	`{"rewriters": [{"plugin": "...", "digest": "sha256:...", "config": {...}, "budget_ms": 20}], "rankers": [...]}` + ").\n" +
	"Every step must name a validated version pushed to the index; with a relevance gate\n(quarry judgements gate), the pipeline must pass it."

// pipelineOpCmd is pipeline show and pipeline set (op).
func pipelineOpCmd(e *env, nf *natsFlags, op string) *cobra.Command {
	cmd := newCommand("show INDEX", "show an index's live plugin pipeline, and which revision each broker runs",
		"Shows an index's live plugin pipeline, and which revision each broker runs.", 1, 1)
	if op == "set" {
		cmd = newCommand("set INDEX FILE.json", "replace an index's plugin pipeline with FILE", pipelineAbout, 2, 2)
	}
	fs := cmd.Flags()
	jsonOut := fs.Bool("json", false, "print JSON")
	var force bool
	var reason string
	if op == "set" {
		fs.BoolVar(&force, "force", false, "set the pipeline although the index's relevance gate refuses it (needs --reason; recorded as a plugin event)")
		fs.StringVar(&reason, "reason", "", "why --force: recorded with the event")
	}
	cmd.RunE = clientRun(nf, func(ctx context.Context, c *client.Client, pos []string) error {
		var spec *api.PipelineSpec
		var err error
		if op == "show" {
			spec, err = c.Pipeline(ctx, pos[0])
		} else {
			var in api.PipelineSpec
			b, rerr := os.ReadFile(pos[1])
			if rerr != nil {
				return rerr
			}
			if err := json.Unmarshal(b, &in); err != nil {
				return api.BadRequest("pipeline file %s: %v", pos[1], err)
			}
			spec, err = c.SetPipeline(ctx, pos[0], &in, goLive(force, reason)...)
			if errors.Is(err, api.ErrGateRunning) {
				spec, err = waitGate(ctx, e.stderr, c, pos[0], err)
			}
		}
		if err != nil {
			return err
		}
		if *jsonOut {
			return printJSON(e.stdout, spec)
		}
		printPipeline(e.stdout, spec)
		if op == "show" {
			status, err := c.BrokerPipelines(ctx, 0)
			if err != nil {
				return err
			}
			printBrokers(e.stdout, pos[0], spec.Revision, status)
		}
		return nil
	})
	return cmd
}
