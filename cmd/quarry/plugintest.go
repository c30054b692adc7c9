package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/quarrysearch/quarry/api"
	"github.com/quarrysearch/quarry/client"
	"github.com/quarrysearch/quarry/internal/loadgen"
	"github.com/quarrysearch/quarry/internal/rankcmp"
)

// replayResult is one recorded query run on the live and the candidate
// version.
type replayResult struct {
	Line        int      `json:"line"`
	Q           string   `json:"q,omitempty"`
	OverlapAt10 float64  `json:"overlap_at_10"`
	Same        bool     `json:"same"`
	Live        []string `json:"live"`
	Candidate   []string `json:"candidate"`
	// Error is the candidate's failure; LiveError the live pipeline's,
	// when the query fails there already (the candidate is then not
	// asked: its failure would not be its own).
	Error     string `json:"error,omitempty"`
	LiveError string `json:"live_error,omitempty"`
}

// pluginTestCmd pushes a candidate version (validated, not activated) and
// replays recorded queries on the live pipeline and on the same pipeline
// with the candidate in place of the live version, printing the diff.
// Plugins are deterministic, so a replay gives the same answer every time.
func pluginTestCmd(e *env, nf *natsFlags) *cobra.Command {
	cmd := newCommand("test INDEX NAME FILE.wasm --queries FILE.ndjson", "replay recorded queries on the live version and on FILE.wasm; print the diff",
		"Replays recorded queries (one search request JSON a line, or plain text) on the live\n"+
			"pipeline and with FILE.wasm in place of the live NAME, and prints the difference per\n"+
			"query and in sum. The candidate is pushed and validated but not activated.", 3, 3)
	fs := cmd.Flags()
	queries := fs.String("queries", "", "recorded queries, NDJSON (- for stdin)")
	kind := fs.String("kind", "", "rewriter or ranker (default: the live plugin's)")
	configFile := fs.String("config", "", "the candidate's configuration (default: none)")
	jsonOut := fs.Bool("json", false, "print JSON lines")
	cmd.RunE = func(cmd *cobra.Command, pos []string) error {
		ctx := cmd.Context()
		if *queries == "" {
			return api.BadRequest("--queries is required")
		}
		wasm, err := os.ReadFile(pos[2])
		if err != nil {
			return err
		}
		nc, c, err := nf.connect(ctx)
		if err != nil {
			return err
		}
		defer nc.Close()
		index, name := pos[0], pos[1]
		v, err := pushCandidate(ctx, c, index, name, wasm, candidate{kind: *kind, configFile: *configFile})
		if err != nil {
			return err
		}
		in := io.Reader(e.stdin)
		if *queries != "-" {
			f, err := os.Open(*queries)
			if err != nil {
				return err
			}
			defer f.Close()
			in = f
		}
		sc := bufio.NewScanner(in)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		enc := json.NewEncoder(e.stdout)
		var n, same, failed, liveFailed int
		var overlap float64
		line := 0
		for sc.Scan() {
			line++
			raw := bytes.TrimSpace(sc.Bytes())
			if len(raw) == 0 {
				continue
			}
			req, err := loadgen.ParseRequestLine(raw, line)
			if err != nil {
				return err
			}
			req.Profile = false
			res, _, _ := replay(ctx, c, index, req, line, &api.Variant{Plugin: name, Digest: v.Digest})
			switch {
			case res.LiveError != "":
				liveFailed++
			case res.Error != "":
				failed++
			default:
				n++
				overlap += res.OverlapAt10
				if res.Same {
					same++
				}
			}
			if *jsonOut {
				enc.Encode(res)
				continue
			}
			switch {
			case res.LiveError != "":
				fmt.Fprintf(e.stdout, "%4d  %-30.30q  fails on the live pipeline already (not counted): %s\n", line, res.Q, res.LiveError)
			case res.Error != "":
				fmt.Fprintf(e.stdout, "%4d  %-30.30q  error: %s\n", line, res.Q, res.Error)
			case res.Same:
				fmt.Fprintf(e.stdout, "%4d  %-30.30q  same\n", line, res.Q)
			default:
				fmt.Fprintf(e.stdout, "%4d  %-30.30q  overlap@10 %.2f  live %v → candidate %v\n", line, res.Q, res.OverlapAt10, head(res.Live, 3), head(res.Candidate, 3))
			}
		}
		if err := sc.Err(); err != nil {
			return err
		}
		mean := 0.0
		if n > 0 {
			mean = overlap / float64(n)
		}
		if *jsonOut {
			enc.Encode(map[string]any{"queries": n, "same": same, "changed": n - same, "failed": failed, "failed_on_live": liveFailed, "mean_overlap_at_10": mean, "candidate": v.Digest})
		} else {
			fmt.Fprintf(e.stdout, "\n%d queries: %d the same, %d changed, %d failed; mean overlap@10 %.3f (candidate %s)\n", n, same, n-same, failed, mean, v.Digest)
			if liveFailed > 0 {
				fmt.Fprintf(e.stdout, "%d more fail on the live pipeline already: not the candidate's failures, not counted\n", liveFailed)
			}
			if n > 0 && same == n && v.Digest != liveDigest(ctx, c, index, name) {
				fmt.Fprintf(e.stdout, "note: the candidate changed nothing on any query: is %s a version of %s that should differ? (a module of another plugin pushed under this name is accepted if it handles the %s hook)\n", pos[2], name, v.Kind)
			}
		}
		if failed > 0 {
			return fmt.Errorf("%d of %d queries failed", failed, n+failed)
		}
		return nil
	}
	return cmd
}

// candidate says how pushCandidate pushes a candidate version. The zero
// value is quarry plugin test's: the live step's settings, no
// configuration, and the plugin must be live.
type candidate struct {
	// live is the index's pipeline when the caller has it already (nil:
	// pushCandidate asks for it).
	live *api.PipelineSpec
	// kind is rewriter or ranker ("": the live step's).
	kind string
	// fields, when not nil, replace the live step's stored fields.
	fields []string
	// config is the candidate's configuration (nil: none); configFile,
	// when set, is read for it instead.
	config     []byte
	configFile string
	// instances, when not 0, replaces the live step's instance count.
	instances int
	// notLive accepts a plugin that is not live: kind is then required
	// and the other settings are the defaults.
	notLive bool
}

// pushCandidate pushes wasm as a candidate version of plugin name
// (validated, not activated) with the live step's settings: its kind
// (unless cd.kind is given), budgets, fields and depth, changed as cd
// says. A plugin that is not live is refused unless cd.notLive.
func pushCandidate(ctx context.Context, c *client.Client, index, name string, wasm []byte, cd candidate) (*api.PluginVersion, error) {
	live := cd.live
	if live == nil {
		var err error
		if live, err = c.Pipeline(ctx, index); err != nil {
			return nil, err
		}
	}
	kind := cd.kind
	liveStep, liveKind := live.Step(name)
	if liveStep != nil && kind == "" {
		kind = string(liveKind)
	}
	var step api.StepSpec
	switch {
	case liveStep != nil:
		step = *liveStep
		// A version goes live in: never taken out (activating brings a
		// taken-out step back).
		step.Digest, step.Canary, step.Shadow, step.TakenOut = "", nil, nil, nil
	case !cd.notLive:
		return nil, api.NotFound("plugin %s is not live on index %q: nothing to compare with", name, index)
	case kind == "":
		return nil, api.BadRequest("plugin %s is not live on index %q: give its --kind (rewriter or ranker)", name, index)
	}
	if cd.fields != nil {
		step.Fields = cd.fields
	}
	if cd.instances != 0 {
		step.Instances = cd.instances
	}
	step.Config = cd.config
	if cd.configFile != "" {
		var err error
		if step.Config, err = os.ReadFile(cd.configFile); err != nil {
			return nil, err
		}
	}
	return c.PushPlugin(ctx, index, name, wasm, client.PushOptions{Kind: kind, Step: step})
}

// liveDigest is the digest of plugin name's live step on index ("" when
// it has none, or on an error).
func liveDigest(ctx context.Context, c *client.Client, index, name string) string {
	l, err := c.Plugins(ctx, index)
	if err != nil || l.Pipeline == nil {
		return ""
	}
	if st, _ := l.Pipeline.Step(name); st != nil {
		return st.Digest
	}
	return ""
}

// replay runs req on the index's live pipeline and with variant (a
// pushed version in place of, or beside, the live one) and compares the
// two; it returns both answers (nil on an error, which res names: a
// query that fails on the live pipeline already is not tried with the
// variant).
func replay(ctx context.Context, c *client.Client, index string, req api.SearchRequest, line int, variant *api.Variant) (res replayResult, live, cand *api.SearchResponse) {
	req.Variant = nil
	res = replayResult{Line: line, Q: req.Q}
	live, err := c.Search(ctx, index, &req)
	if err != nil {
		res.LiveError = err.Error()
		return res, nil, nil
	}
	req.Variant = variant
	if cand, err = c.Search(ctx, index, &req); err == nil {
		res.Live, res.Candidate = live.IDs(len(live.Hits)), cand.IDs(len(cand.Hits))
		res.OverlapAt10 = rankcmp.OverlapAt(10, res.Live, res.Candidate)
		res.Same = strings.Join(res.Live, ",") == strings.Join(res.Candidate, ",")
	}
	if err != nil {
		res.Error = err.Error()
		return res, nil, nil
	}
	return res, live, cand
}

func head(s []string, n int) []string { return s[:min(n, len(s))] }

func queriesCmd(e *env, nf *natsFlags) *cobra.Command {
	export := newCommand("export INDEX", "print an index's recorded search requests as NDJSON",
		"Prints the search requests brokers recorded for an index (brokers record with\n"+
			"--record-queries PERCENT), one JSON object a line: input for quarry plugin test.\n\n"+
			"  quarry queries export INDEX [--limit N] > queries.ndjson", 1, 1)
	limit := export.Flags().Int("limit", 0, "at most this many (default: all)")
	export.RunE = func(cmd *cobra.Command, pos []string) error {
		ctx := cmd.Context()
		nc, c, err := nf.connect(ctx)
		if err != nil {
			return err
		}
		defer nc.Close()
		qs, err := c.RecordedQueries(ctx, pos[0], *limit)
		for _, q := range qs {
			e.stdout.Write(append(bytes.TrimSpace(q), '\n'))
		}
		if err == nil && len(qs) == 0 {
			// Nothing to export is not a success for a pipeline that feeds
			// plugin test: say why it may be.
			return fmt.Errorf("no recorded queries for %q: brokers record a share of searches only when started with --record-queries PERCENT (quarry serve --record-queries 10)", pos[0])
		}
		return err
	}
	return newGroup("queries", "export recorded search requests (for plugin test replays)",
		"Search requests the brokers recorded (quarry serve or broker --record-queries\n"+
			"PERCENT), to replay on a candidate plugin (quarry plugin test, quarry dev).", export)
}
