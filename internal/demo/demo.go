package demo

import (
	"bytes"
	"embed"
	"encoding/json"
	"fmt"
	"io"
	"path"

	"github.com/klauspost/compress/zstd"

	"github.com/quarrysearch/quarry/api"
)

// Index is the demo index's name.
const Index = "menu"

// PipelineName names the demo pipeline in errors and logs.
const PipelineName = "demo pipeline (examples/pipelines/menu.json, embedded)"

//go:embed plugins/menu.json plugins/*.wasm.zst plugins/manifest.json
var files embed.FS

// Manifest records how the embedded modules were built.
type Manifest struct {
	// Go is the toolchain that built them (go version).
	Go string `json:"go"`
	// Build is the build command, run in each plugin's directory.
	Build string `json:"build"`
	// Plugins maps a module's file name (spelling.wasm) to the sha256 of
	// its uncompressed bytes and the example it was built from.
	Plugins map[string]ManifestEntry `json:"plugins"`
}

// ManifestEntry is one embedded module.
type ManifestEntry struct {
	Source string `json:"source"` // e.g. examples/plugins/spelling
	SHA256 string `json:"sha256"`
}

// Pipeline returns the demo pipeline file (its steps name "wasm" modules)
// and the modules by the names it gives them, decompressed. Each call
// decompresses them anew: the demo registers them once, and keeping 10 MB
// of modules for the life of the process costs more than that.
func Pipeline() (file []byte, mods map[string][]byte, err error) {
	if mods, err = load(); err != nil {
		return nil, nil, err
	}
	file, err = files.ReadFile("plugins/menu.json")
	return file, mods, err
}

// ReadManifest returns the embedded modules' manifest.
func ReadManifest() (*Manifest, error) {
	raw, err := files.ReadFile("plugins/manifest.json")
	if err != nil {
		return nil, err
	}
	var m Manifest
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, fmt.Errorf("demo manifest: %w", err)
	}
	return &m, nil
}

func load() (map[string][]byte, error) {
	m, err := ReadManifest()
	if err != nil {
		return nil, err
	}
	dec, err := zstd.NewReader(nil)
	if err != nil {
		return nil, err
	}
	defer dec.Close()
	out := map[string][]byte{}
	for name := range m.Plugins {
		raw, err := files.ReadFile(path.Join("plugins", name+".zst"))
		if err != nil {
			return nil, fmt.Errorf("demo plugin %s: %w", name, err)
		}
		if err := dec.Reset(bytes.NewReader(raw)); err != nil {
			return nil, fmt.Errorf("demo plugin %s: %w", name, err)
		}
		if out[name], err = io.ReadAll(dec); err != nil {
			return nil, fmt.Errorf("demo plugin %s: %w", name, err)
		}
	}
	return out, nil
}

// Query is how the demo index turns text into a query: dish names weigh
// most, a phrase match on top (so "pad thai" is Pad Thai, not Pad See Ew),
// and every field through _all a little.
var Query = api.QuerySettings{
	Fields:   []api.FieldBoost{{Field: "name", Boost: 3}, {Field: "description", Boost: 1}, {Field: "_all", Boost: 0.5}},
	Operator: "or", PhraseBoost: 2,
}
