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

	"github.com/spf13/cobra"

	"github.com/quarrysearch/quarry/api"
	"github.com/quarrysearch/quarry/plugins"
	"github.com/quarrysearch/quarry/sdk/abi"
)

func pluginCmd(e *env, nf *natsFlags) *cobra.Command {
	g := newGroup("plugin", "push, list, activate, roll back and remove plugins; run one locally",
		"Plugins are WebAssembly modules an index's pipeline runs on every search:\n"+
			"rewriters change the request, rankers reorder the hits (docs/plugins.md).\n"+
			"A version is pushed (content-addressed, validated), then put live, tried on a\n"+
			"share of the queries (canary, shadow) or replayed against the live one (test).")
	for _, op := range []string{"push", "ls", "show", "activate", "rollback", "rm", "canary", "canary-stats", "promote", "shadow", "shadow-stats", "events"} {
		g.AddCommand(pluginAdminCmd(e, nf, op))
	}
	g.AddCommand(pluginLogsCmd(e, nf), pluginTestCmd(e, nf), local(pluginNewCmd(e)), local(pluginRunCmd(e)))
	return g
}

func pluginRunCmd(e *env) *cobra.Command {
	cmd := newCommand("run FILE.wasm [REQUESTS.ndjson|-]", "run a built plugin on sample requests (one JSON object a line)",
		"Runs a built plugin on sample requests (one JSON object a line; standard input\n"+
			"without REQUESTS.ndjson, or with -) and prints its responses:\n"+
			`  rewriter: {"q": "pop", "query": {...}, "filter": {...}, "context": {...}, "size": 10}`+"\n"+
			`  ranker:   {"q": "...", "context": {...}, "candidates": [{"id": "a", "score": 1.2, "fields": {"rating": 4.5}}]}`, 1, 2)
	fs := cmd.Flags()
	kind := fs.String("kind", "rewriter", "the plugin's hook: rewriter or ranker")
	configFile := fs.String("config", "", "the plugin's configuration (JSON file)")
	budget := fs.Duration("budget", plugins.DefaultBudget, "time budget per call")
	cmd.RunE = func(cmd *cobra.Command, pos []string) error {
		ctx := cmd.Context()
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
	return cmd
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
