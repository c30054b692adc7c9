package node

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/quarrysearch/quarry/api"
	"github.com/quarrysearch/quarry/broker"
	"github.com/quarrysearch/quarry/client"
	"github.com/quarrysearch/quarry/plugins"
)

// ApplyPipelineFile makes a pipeline file (broker.PipelineFile) the
// index's pipeline in the registry, the one place every broker loads
// pipelines from: each step's module is built (a "go" step) or read, pushed
// and validated like any upload, and the pipeline is set as a new revision
// whose Change names the file. So `quarry pipeline show` prints what runs.
//
// A file is applied once per content: if the live revision came from the
// same file with the same content, nothing is written; if that revision
// was followed by other changes (a push, a rollback, the automatic
// fallback), they stay, and the file is not applied again until it
// changes. The index must exist.
func (n *Node) ApplyPipelineFile(ctx context.Context, index, file string) (*api.PipelineSpec, error) {
	abs, err := filepath.Abs(file)
	if err != nil {
		return nil, err
	}
	f, err := broker.ReadPipelineFile(abs)
	if err != nil {
		return nil, err
	}
	base := filepath.Dir(abs)
	module := func(s broker.StepFile) ([]byte, error) {
		switch {
		case s.Wasm != "" && s.Go == "":
			return os.ReadFile(filepath.Join(base, s.Wasm))
		case s.Go != "" && s.Wasm == "":
			n.cfg.Logger.Info("building Go plugin", "plugin", s.Plugin, "dir", filepath.Join(base, s.Go))
			return broker.BuildGoPlugin(ctx, filepath.Join(base, s.Go), filepath.Join(n.pluginDir(), "built"))
		}
		return nil, fmt.Errorf("give exactly one of \"wasm\" and \"go\"")
	}
	return n.applyPipeline(ctx, index, f, module, "pipeline file "+file)
}

// ApplyPipelineModules is ApplyPipelineFile for a pipeline file held in
// memory (name names it in errors) whose steps name "wasm" modules found
// in modules: how the demo's embedded pipeline is registered. change says
// what wrote it ("demo").
func (n *Node) ApplyPipelineModules(ctx context.Context, index, name string, file []byte, modules map[string][]byte, change string) (*api.PipelineSpec, error) {
	f, err := broker.ParsePipelineFile(name, file)
	if err != nil {
		return nil, err
	}
	module := func(s broker.StepFile) ([]byte, error) {
		wasm, ok := modules[s.Wasm]
		if s.Go != "" || !ok {
			return nil, fmt.Errorf("%s: no module %q", name, s.Wasm)
		}
		return wasm, nil
	}
	return n.applyPipeline(ctx, index, f, module, change)
}

// applyPipeline pushes f's modules and sets it as the index's pipeline,
// unless this content was applied before (see ApplyPipelineFile).
func (n *Node) applyPipeline(ctx context.Context, index string, f *broker.PipelineFile, module func(broker.StepFile) ([]byte, error), change string) (*api.PipelineSpec, error) {
	type pushed struct {
		kind plugins.Kind
		step api.StepSpec
		wasm []byte
	}
	var steps []pushed
	want := &api.PipelineSpec{Change: change}
	for _, k := range []struct {
		kind  plugins.Kind
		steps []broker.StepFile
		into  *[]api.StepSpec
	}{{plugins.Rewriter, f.Rewriters, &want.Rewriters}, {plugins.Ranker, f.Rankers, &want.Rankers}} {
		for i, s := range k.steps {
			wasm, err := module(s)
			if err != nil {
				return nil, fmt.Errorf("%s: %s %d (%s): %w", change, k.kind, i, s.Plugin, err)
			}
			st := s.Spec(wasm)
			steps = append(steps, pushed{k.kind, st, wasm})
			*k.into = append(*k.into, st)
		}
	}
	// What the file says, as a digest: the same content is applied once.
	canon, _ := json.Marshal(struct{ R, K []api.StepSpec }{want.Rewriters, want.Rankers})
	sum := sha256.Sum256(canon)
	want.Source = change + " sha256:" + hex.EncodeToString(sum[:6])

	c := n.client
	cur, err := c.Pipeline(ctx, index)
	if err != nil {
		return nil, err
	}
	if cur.Source == want.Source {
		n.cfg.Logger.Info("pipeline already live", "index", index, "from", change, "revision", cur.Revision)
		return cur, nil
	}
	hist, err := n.store.PipelineHistory(ctx, index)
	if err != nil {
		return nil, err
	}
	if at := slices.IndexFunc(hist, func(p *api.PipelineSpec) bool { return p.Source == want.Source }); at >= 0 {
		n.cfg.Logger.Warn("pipeline unchanged since it was applied; the later changes stay live (change the file, or quarry pipeline set, to replace them)",
			"index", index, "from", change, "applied_at", hist[at].Revision, "live", cur.Revision, "live_change", cur.Change)
		return cur, nil
	}
	for _, p := range steps {
		if _, err := c.PushPlugin(ctx, index, p.step.Plugin, p.wasm, client.PushOptions{Kind: string(p.kind), Step: p.step}); err != nil {
			return nil, fmt.Errorf("%s: %s %s: %w", change, p.kind, p.step.Plugin, err)
		}
	}
	spec, err := c.SetPipeline(ctx, index, want)
	var running *api.Error
	if errors.As(err, &running) && running.Code == api.CodeGateRunning && running.Running != nil {
		// A gate over a large judgement list: its outcome decides.
		n.cfg.Logger.Info("waiting for the relevance gate on the pipeline", "index", index, "from", change, "done", running.Running.Done, "total", running.Running.Total)
		spec, err = c.WaitGate(ctx, index, running.Running, nil)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", change, err)
	}
	if err := n.waitPipeline(ctx, index, spec.Revision); err != nil {
		return nil, err
	}
	n.cfg.Logger.Info("pipeline applied", "index", index, "from", change, "revision", spec.Revision,
		"rewriters", len(spec.Rewriters), "rankers", len(spec.Rankers))
	return spec, nil
}

// waitPipeline waits until the node's broker (if it runs one) runs the
// index's pipeline revision rev or a later one.
func (n *Node) waitPipeline(ctx context.Context, index string, rev uint64) error {
	if n.Broker == nil {
		return nil
	}
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for n.Broker.PipelineStatus().Revisions[index] < rev {
		select {
		case <-ctx.Done():
			return fmt.Errorf("wait for the broker to run pipeline revision %d of %q: %w", rev, index, ctx.Err())
		case <-tick.C:
		}
	}
	return nil
}
