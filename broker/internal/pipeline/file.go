package pipeline

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/quarrysearch/quarry/api"
	"github.com/quarrysearch/quarry/internal/gobuild"
	"github.com/quarrysearch/quarry/internal/meta"
	"github.com/quarrysearch/quarry/plugins"
)

// File is an index's pipeline as a file (JSON; YAML in its JSON
// form works too), until uploads exist:
//
//	{"rewriters": [{"plugin": "spelling", "wasm": "spelling.wasm",
//	                "config": {"vocabulary": ["noodles"]}, "budget_ms": 20, "policy": "fail-open"}],
//	 "rankers":   [{"plugin": "georank", "go": "../plugins/georank",
//	                "fields": ["rating", "location"], "rerank_depth": 50}]}
//
// A step names its module as "wasm" (a .wasm file) or "go" (a Go plugin
// package, built with the Go toolchain when the pipeline loads: for
// development and the demo). Paths are relative to the file.
type File struct {
	Rewriters []StepFile `json:"rewriters"`
	Rankers   []StepFile `json:"rankers"`
}

// StepFile is one step of a File.
type StepFile struct {
	Plugin      string          `json:"plugin"`
	Wasm        string          `json:"wasm,omitempty"`
	Go          string          `json:"go,omitempty"`
	Config      json.RawMessage `json:"config,omitempty"`
	BudgetMS    int             `json:"budget_ms,omitempty"`
	Policy      api.Policy      `json:"policy,omitempty"`
	Fields      []string        `json:"fields,omitempty"`
	RerankDepth int             `json:"rerank_depth,omitempty"`
	Instances   int             `json:"instances,omitempty"`
}

// ReadFile reads and checks a pipeline file, without loading its
// plugins.
func ReadFile(path string) (*File, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("pipeline: %w", err)
	}
	return ParseFile(path, raw)
}

// ParseFile parses and checks a pipeline file's content (name
// names it in errors), strictly (api.DecodeStrict): unknown, wrongly
// cased or repeated keys, invalid UTF-8 and values of the wrong type are
// refused, naming the field.
func ParseFile(name string, raw []byte) (*File, error) {
	var f File
	if err := api.DecodeStrict("pipeline", raw, &f); err != nil {
		return nil, fmt.Errorf("pipeline %s: %w", name, err)
	}
	for i, s := range f.Rewriters {
		if err := s.check(); err != nil {
			return nil, fmt.Errorf("pipeline %s: %s %d (%s): %w", name, plugins.Rewriter, i, s.Plugin, err)
		}
	}
	for i, s := range f.Rankers {
		if err := s.check(); err != nil {
			return nil, fmt.Errorf("pipeline %s: %s %d (%s): %w", name, plugins.Ranker, i, s.Plugin, err)
		}
	}
	return &f, nil
}

// Spec is the step as a pipeline step running the module wasm.
func (s StepFile) Spec(wasm []byte) api.StepSpec {
	return api.StepSpec{Plugin: s.Plugin, Digest: meta.PluginDigest(wasm), Config: s.Config, BudgetMS: s.BudgetMS, Policy: s.Policy,
		Fields: s.Fields, RerankDepth: s.RerankDepth, Instances: s.Instances}
}

// check checks a step's settings (not its module).
func (s StepFile) check() error {
	if s.Plugin == "" {
		return errors.New("\"plugin\" (a name) is required")
	}
	if err := s.Policy.Check(); err != nil {
		return err
	}
	if s.BudgetMS < 0 || s.RerankDepth < 0 || s.Instances < 0 {
		return errors.New("budget_ms, rerank_depth and instances must be >= 0")
	}
	if len(s.Config) > 0 && !json.Valid(s.Config) {
		return errors.New("config is not valid JSON")
	}
	return nil
}

// LoadFile reads a pipeline file and loads its plugins into rt.
// buildDir caches Go plugins built from source.
func LoadFile(ctx context.Context, rt *plugins.Runtime, path, buildDir string) (*Pipeline, error) {
	f, err := ReadFile(path)
	if err != nil {
		return nil, err
	}
	// The file becomes a spec naming binaries by digest, loaded like a
	// registry pipeline (without the automatic fallback).
	base := filepath.Dir(path)
	binaries := map[string][]byte{}
	spec := &api.PipelineSpec{}
	step := func(kind plugins.Kind, s StepFile, i int) (api.StepSpec, error) {
		where := fmt.Sprintf("pipeline %s: %s %d (%s)", path, kind, i, s.Plugin)
		var wasm []byte
		var err error
		switch {
		case s.Wasm != "" && s.Go == "":
			wasm, err = os.ReadFile(filepath.Join(base, s.Wasm))
		case s.Go != "" && s.Wasm == "":
			wasm, err = BuildGoPlugin(ctx, filepath.Join(base, s.Go), buildDir)
		default:
			err = fmt.Errorf("give exactly one of \"wasm\" and \"go\"")
		}
		if err != nil {
			return api.StepSpec{}, fmt.Errorf("%s: %w", where, err)
		}
		st := s.Spec(wasm)
		binaries[st.Digest] = wasm
		return st, nil
	}
	for i, s := range f.Rewriters {
		st, err := step(plugins.Rewriter, s, i)
		if err != nil {
			return nil, err
		}
		spec.Rewriters = append(spec.Rewriters, st)
	}
	for i, s := range f.Rankers {
		st, err := step(plugins.Ranker, s, i)
		if err != nil {
			return nil, err
		}
		spec.Rankers = append(spec.Rankers, st)
	}
	l := NewLoader(func(context.Context, string) (*plugins.Runtime, string, error) { return rt, "file", nil },
		func(_ context.Context, digest string) ([]byte, error) { return binaries[digest], nil }, 0)
	p, _, err := l.Build(ctx, spec)
	if err != nil {
		return nil, fmt.Errorf("pipeline %s: %w", path, err)
	}
	return p, nil
}

// Native builds the pipeline of a file with native plugins
// (plugins.LoadNative) in place of its modules: natives maps each step's
// plugin name to the factory of its handler (for the example plugins, the
// Hooks of examples/plugins/lib/NAME). Every step keeps its settings
// (configuration, budget, policy, fields, rerank depth, instances), so the
// pipeline runs as the file's does with the WebAssembly taken out: for
// measuring what WebAssembly costs, side by side (`quarry bench`).
func Native(f *File, natives map[string]plugins.NativeFactory) (*Pipeline, error) {
	p := &Pipeline{}
	step := func(kind plugins.Kind, s StepFile, i int) (Step, error) {
		if err := s.check(); err != nil {
			return Step{}, fmt.Errorf("native pipeline: %s %d (%s): %w", kind, i, s.Plugin, err)
		}
		factory, ok := natives[s.Plugin]
		if !ok {
			return Step{}, fmt.Errorf("native pipeline: %s %d: no native build of plugin %q", kind, i, s.Plugin)
		}
		plugin, err := plugins.LoadNative(plugins.SpecOf(kind, "native", s.Spec(nil)), factory) // no module: the digest goes unused
		if err != nil {
			return Step{}, fmt.Errorf("native pipeline: %w", err)
		}
		return Step{Plugin: plugin, Policy: cmp.Or(s.Policy, api.FailOpen), Fields: s.Fields, RerankDepth: s.RerankDepth}, nil
	}
	for i, s := range f.Rewriters {
		st, err := step(plugins.Rewriter, s, i)
		if err != nil {
			return nil, err
		}
		p.Rewriters = append(p.Rewriters, st)
	}
	for i, s := range f.Rankers {
		st, err := step(plugins.Ranker, s, i)
		if err != nil {
			return nil, err
		}
		p.Rankers = append(p.Rankers, st)
	}
	return p, nil
}

// BuildGoPlugin builds the Go plugin package in dir to WebAssembly with the
// Go toolchain (internal/gobuild) into buildDir.
func BuildGoPlugin(ctx context.Context, dir, buildDir string) ([]byte, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(buildDir, 0o755); err != nil {
		return nil, err
	}
	h := sha256.Sum256([]byte(abs))
	out := filepath.Join(buildDir, filepath.Base(abs)+"-"+hex.EncodeToString(h[:4])+".wasm")
	if err := gobuild.Build(ctx, abs, out, gobuild.Reactor); err != nil {
		return nil, fmt.Errorf("build Go plugin: %w", err)
	}
	return os.ReadFile(out)
}
