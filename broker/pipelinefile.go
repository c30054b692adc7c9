package broker

import (
	"context"

	"github.com/quarrysearch/quarry/broker/internal/pipeline"
	"github.com/quarrysearch/quarry/plugins"
)

// PipelineFile is an index's pipeline as a file (JSON; YAML in its JSON
// form works too), until uploads exist: pipeline.File, where its format
// is described.
type PipelineFile = pipeline.File

// StepFile is one step of a PipelineFile.
type StepFile = pipeline.StepFile

// ReadPipelineFile reads and checks a pipeline file, without loading its
// plugins.
func ReadPipelineFile(path string) (*PipelineFile, error) { return pipeline.ReadFile(path) }

// ParsePipelineFile parses and checks a pipeline file's content (name
// names it in errors), strictly (api.DecodeStrict): unknown, wrongly
// cased or repeated keys, invalid UTF-8 and values of the wrong type are
// refused, naming the field.
func ParsePipelineFile(name string, raw []byte) (*PipelineFile, error) {
	return pipeline.ParseFile(name, raw)
}

// LoadPipelineFile reads a pipeline file and loads its plugins into rt.
// buildDir caches Go plugins built from source.
func LoadPipelineFile(ctx context.Context, rt *plugins.Runtime, path, buildDir string) (*Pipeline, error) {
	return pipeline.LoadFile(ctx, rt, path, buildDir)
}

// NativePipeline builds the pipeline of a file with native plugins
// (plugins.LoadNative) in place of its modules: natives maps each step's
// plugin name to the factory of its handler. Every step keeps its
// settings, so the pipeline runs as the file's does with the WebAssembly
// taken out (`quarry bench`; see pipeline.Native). Install it with
// SetPipeline.
func NativePipeline(f *PipelineFile, natives map[string]plugins.NativeFactory) (*Pipeline, error) {
	return pipeline.Native(f, natives)
}

// BuildGoPlugin builds the Go plugin package in dir to WebAssembly with the
// Go toolchain (internal/gobuild) into buildDir.
func BuildGoPlugin(ctx context.Context, dir, buildDir string) ([]byte, error) {
	return pipeline.BuildGoPlugin(ctx, dir, buildDir)
}
