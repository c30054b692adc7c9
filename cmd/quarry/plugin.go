package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"

	"github.com/quarrysearch/quarry/api"
	"github.com/quarrysearch/quarry/internal/cmdline"
	"github.com/quarrysearch/quarry/plugins"
	"github.com/quarrysearch/quarry/sdk/abi"
)

const pluginUsage = `Usage: quarry plugin COMMAND ...

  push INDEX NAME FILE.wasm --kind rewriter|ranker [--config FILE] [--activate] [step flags]
                                  upload a version, validate it (and put it live)
  ls INDEX [--json]               pushed versions and the live pipeline
  show INDEX NAME [--json]        one plugin's versions and its live step
  activate INDEX NAME DIGEST [--force --reason TEXT]
                                  put a validated version live (if it passes the index's relevance gate)
  rollback INDEX                  restore the previous pipeline
  rm INDEX NAME                   take a plugin out of the pipeline
  canary INDEX NAME DIGEST --percent N [--sticky KEY]
                                  send N% of the queries to a candidate version
  canary INDEX NAME DIGEST --interleave [--percent N] [--sticky KEY] [--delta 0.1 --alpha 0.05 --beta 0.05 --max-queries 2000]
                                  rankers: interleave live and candidate for N% of the users; clicks decide; promoted or rolled back by itself
  canary-stats INDEX NAME         the interleaving experiment's wins, losses, ties and test
  promote INDEX NAME [--force --reason TEXT]
                                  make the canary the live version (if it passes the gate)
  shadow INDEX NAME DIGEST --percent N
                                  run a candidate version (ranker or rewriter) on mirrored queries, for comparison
  shadow-stats INDEX NAME         overlap@10, rank correlation, latency and errors of the shadow
  events INDEX                    what the platform did on its own (automatic fallbacks and rollbacks)
  logs INDEX NAME [--follow] [--version V] [--since D]
                                  the plugin's log lines (log import, stdout, stderr) with their request ids
  test INDEX NAME FILE.wasm --queries FILE.ndjson
                                  replay recorded queries on the live version and on FILE.wasm; print the diff
  new NAME --lang go|c|assemblyscript --kind rewriter|ranker [--dir DIR] [--sdk DIR]
                                  write a plugin folder (plugin, test, build.sh, sample requests) that builds and passes its test
  run FILE.wasm --kind ... [REQUESTS.ndjson|-]
                                  run a built plugin on sample requests (one JSON object a line):
      rewriter: {"q": "pop", "query": {...}, "filter": {...}, "context": {...}, "size": 10}
      ranker:   {"q": "...", "context": {...}, "candidates": [{"id": "a", "score": 1.2, "fields": {"rating": 4.5}}]}
`

func runPlugin(ctx context.Context, e *env, args []string) error {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" {
		fmt.Fprint(e.stderr, pluginUsage)
		if len(args) == 0 {
			return errUsage
		}
		return nil
	}
	switch args[0] {
	case "push", "ls", "show", "activate", "rollback", "rm", "canary", "promote", "shadow", "shadow-stats", "canary-stats", "events":
		return pluginAdmin(ctx, e, args[0], args[1:])
	case "test":
		return runPluginTest(ctx, e, args[1:])
	case "logs":
		return runPluginLogs(ctx, e, args[1:])
	case "new":
		return runPluginNew(ctx, e, args[1:])
	case "run":
	default:
		fmt.Fprintf(e.stderr, "quarry plugin: unknown subcommand %q\n\n%s", args[0], pluginUsage)
		return errUsage
	}
	fs := e.newFlags("plugin run", "FILE.wasm [REQUESTS.ndjson|-]", "Runs a built plugin on sample requests (one JSON object a line) and prints its responses.")
	kind := fs.String("kind", "rewriter", "the plugin's hook: rewriter or ranker")
	configFile := fs.String("config", "", "the plugin's configuration (JSON file)")
	budget := fs.Duration("budget", plugins.DefaultBudget, "time budget per call")
	pos, err := cmdline.Parse(fs, args[1:], 1, 2)
	if err != nil {
		return err
	}
	wasm, err := os.ReadFile(pos[0])
	if err != nil {
		return err
	}
	var config []byte
	if *configFile != "" {
		if config, err = os.ReadFile(*configFile); err != nil {
			return err
		}
	}
	in := io.Reader(e.stdin)
	if len(pos) == 2 && pos[1] != "-" {
		f, err := os.Open(pos[1])
		if err != nil {
			return err
		}
		defer f.Close()
		in = f
	}
	rt, err := plugins.NewRuntime(ctx, plugins.Config{})
	if err != nil {
		return err
	}
	defer rt.Close(ctx)
	p, err := rt.Load(ctx, plugins.Spec{Name: pos[0], Kind: plugins.Kind(*kind), Config: config, Budget: *budget, Instances: 1}, wasm)
	if err != nil {
		return err
	}
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	enc := json.NewEncoder(e.stdout)
	line, failed := 0, 0
	for sc.Scan() {
		line++
		if len(bytes.TrimSpace(sc.Bytes())) == 0 {
			continue
		}
		out, err := runOne(ctx, p, plugins.Kind(*kind), sc.Bytes())
		if err != nil {
			failed++
			enc.Encode(map[string]any{"line": line, "error": err.Error()})
			continue
		}
		enc.Encode(out)
	}
	if err := sc.Err(); err != nil {
		return err
	}
	if failed > 0 {
		return fmt.Errorf("%d of %d requests failed", failed, line)
	}
	return nil
}

func runOne(ctx context.Context, p *plugins.Plugin, kind plugins.Kind, line []byte) (any, error) {
	if kind == plugins.Ranker {
		var req struct {
			Q          string          `json:"q"`
			Context    json.RawMessage `json:"context"`
			Candidates []struct {
				ID     string         `json:"id"`
				Score  float64        `json:"score"`
				Fields map[string]any `json:"fields"`
			} `json:"candidates"`
		}
		if err := json.Unmarshal(line, &req); err != nil {
			return nil, fmt.Errorf("bad rank request: %w", err)
		}
		var fields []string
		seen := map[string]bool{}
		hits := make([]api.Hit, len(req.Candidates))
		for i, c := range req.Candidates {
			for f := range c.Fields {
				if !seen[f] {
					seen[f] = true
					fields = append(fields, f)
				}
			}
			hits[i] = api.Hit{ID: c.ID, Score: c.Score, Fields: c.Fields}
		}
		slices.Sort(fields)
		r := plugins.RankInput(req.Q, req.Context, hits, fields)
		resp, err := p.Rank(ctx, r)
		if err != nil {
			return nil, err
		}
		type ranked struct {
			ID    string  `json:"id"`
			Score float64 `json:"score"`
		}
		out := []ranked{}
		for _, e := range resp.Ranked {
			out = append(out, ranked{r.Candidates[e.Index].ID, e.Score})
		}
		return map[string]any{"ranked": out}, nil
	}
	var req api.SearchRequest
	if err := json.Unmarshal(line, &req); err != nil {
		return nil, fmt.Errorf("bad rewrite request: %w", err)
	}
	in := plugins.RewriteInput(&req)
	resp, err := p.Rewrite(ctx, &in)
	if err != nil {
		return nil, err
	}
	out := map[string]any{}
	if resp.Flags&abi.FlagQ != 0 {
		out["q"] = resp.Q
	}
	if resp.Flags&abi.FlagQuery != 0 {
		out["query"] = json.RawMessage(resp.Query)
	}
	if resp.Flags&abi.FlagFilter != 0 {
		out["filter"] = json.RawMessage(resp.Filter)
	}
	if resp.Flags&abi.FlagRerankDepth != 0 {
		out["rerank_depth"] = resp.RerankDepth
	}
	return out, nil
}
