package demo_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"testing"

	"github.com/klauspost/compress/zstd"

	"github.com/quarrysearch/quarry/api"
	"github.com/quarrysearch/quarry/broker"
	"github.com/quarrysearch/quarry/internal/demo"
	"github.com/quarrysearch/quarry/internal/gobuild"
)

var update = flag.Bool("update", false, "rebuild the embedded demo plugins and pipeline from examples/")

// source is the demo pipeline as the examples give it.
const source = "../../examples/pipelines/menu.json"

// build is how each embedded module is built, in its plugin's directory
// (internal/gobuild: reproducible, so the same source and toolchain give
// the same bytes).
var build = gobuild.Line(gobuild.Reactor)

// TestEmbeddedCurrent rebuilds the demo's plugins from examples/plugins
// and its pipeline from examples/pipelines/menu.json, and checks that the
// binary embeds exactly that; with -update (go generate ./internal/demo)
// it writes them instead.
func TestEmbeddedCurrent(t *testing.T) {
	f, err := broker.ReadPipelineFile(source)
	if err != nil {
		t.Fatal(err)
	}
	man := demo.Manifest{Go: runtime.Version(), Build: build, Plugins: map[string]demo.ManifestEntry{}}
	built := map[string][]byte{}
	embedded := *f
	embedded.Rewriters, embedded.Rankers = nil, nil
	for _, steps := range []struct {
		in  []broker.StepFile
		out *[]broker.StepFile
	}{{f.Rewriters, &embedded.Rewriters}, {f.Rankers, &embedded.Rankers}} {
		for _, s := range steps.in {
			if s.Go == "" {
				t.Fatalf("%s: step %s is not a Go plugin; the demo embeds Go plugins built from examples/plugins", source, s.Plugin)
			}
			name := s.Plugin + ".wasm"
			dir := filepath.Join(filepath.Dir(source), s.Go)
			wasm := buildPlugin(t, dir)
			sum := sha256.Sum256(wasm)
			rel, _ := filepath.Rel("../..", dir)
			man.Plugins[name] = demo.ManifestEntry{Source: filepath.ToSlash(rel), SHA256: hex.EncodeToString(sum[:])}
			built[name] = wasm
			s.Go, s.Wasm = "", name
			*steps.out = append(*steps.out, s)
		}
	}
	pipeline, _ := json.MarshalIndent(embedded, "", "  ")
	pipeline = append(pipeline, '\n')
	manifest, _ := json.MarshalIndent(man, "", "  ")
	manifest = append(manifest, '\n')
	if *update {
		write(t, "plugins/menu.json", pipeline)
		write(t, "plugins/manifest.json", manifest)
		old, _ := filepath.Glob("plugins/*.wasm.zst")
		for _, o := range old {
			os.Remove(o)
		}
		enc, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedBestCompression))
		if err != nil {
			t.Fatal(err)
		}
		for name, wasm := range built {
			write(t, "plugins/"+name+".zst", enc.EncodeAll(wasm, nil))
		}
		return
	}
	const fix = "run `go generate ./internal/demo` and commit what it writes"
	got, err := demo.ReadManifest()
	if err != nil {
		t.Fatal(err)
	}
	if got.Go != man.Go {
		t.Fatalf("the embedded demo plugins were built with %s, this toolchain is %s: %s", got.Go, man.Go, fix)
	}
	file, mods, err := demo.Pipeline()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(file, pipeline) {
		t.Errorf("the embedded demo pipeline differs from %s:\n%s\nwant:\n%s\n%s", source, file, pipeline, fix)
	}
	if len(mods) != len(built) {
		t.Errorf("%d embedded modules, the pipeline builds %d: %s", len(mods), len(built), fix)
	}
	for name, wasm := range built {
		if !bytes.Equal(mods[name], wasm) {
			t.Errorf("embedded %s is not what %s builds to (sha256 %s): %s", name, man.Plugins[name].Source, man.Plugins[name].SHA256, fix)
		}
		if got.Plugins[name] != man.Plugins[name] {
			t.Errorf("manifest entry of %s: %+v, want %+v: %s", name, got.Plugins[name], man.Plugins[name], fix)
		}
	}
}

func buildPlugin(t *testing.T, dir string) []byte {
	t.Helper()
	out := filepath.Join(t.TempDir(), "p.wasm")
	// go build reads the sources in another process: read them here too,
	// so go test's cache reruns this test when one changes (a cached pass
	// once hid embedded modules gone stale).
	if err := gobuild.ReadSources(context.Background(), dir); err != nil {
		t.Fatal(err)
	}
	if err := gobuild.Build(context.Background(), dir, out, gobuild.Reactor); err != nil {
		t.Fatal(err)
	}
	wasm, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	return wasm
}

func write(t *testing.T, name string, b []byte) {
	t.Helper()
	if err := os.WriteFile(name, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// The query settings of examples/catalog/query.json, which the README's
// tour creates its index with, are the demo index's (Query).
func TestCatalogQueryFile(t *testing.T) {
	raw, err := os.ReadFile("../../examples/catalog/query.json")
	if err != nil {
		t.Fatal(err)
	}
	var qs api.QuerySettings
	if err := api.DecodeStrict("query settings", raw, &qs); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(qs, demo.Query) {
		t.Fatalf("examples/catalog/query.json is %+v, the demo's query settings %+v", qs, demo.Query)
	}
}
