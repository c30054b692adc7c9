package meta

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/quarrysearch/quarry/api"
)

// MaxPluginBytes caps a plugin binary.
const MaxPluginBytes = 64 << 20

// PluginDigest returns the content address of a plugin binary:
// "sha256:<hex>".
func PluginDigest(wasm []byte) string {
	sum := sha256.Sum256(wasm)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// PutPlugin stores a plugin binary under its digest (the object store
// chunks it) and returns the digest.
func (s *Store) PutPlugin(ctx context.Context, wasm []byte) (string, error) {
	if len(wasm) > MaxPluginBytes {
		return "", api.BadRequest("plugin binary is %d bytes, over the limit of %d", len(wasm), MaxPluginBytes)
	}
	d := PluginDigest(wasm)
	if _, err := s.Plugins.PutBytes(ctx, d, wasm); err != nil {
		return "", fmt.Errorf("upload plugin %s: %w", d, err)
	}
	return d, nil
}

// PluginBinary fetches a plugin binary by digest and checks its bytes.
func (s *Store) PluginBinary(ctx context.Context, digest string) ([]byte, error) {
	if !strings.HasPrefix(digest, "sha256:") || len(digest) != len("sha256:")+64 {
		return nil, api.BadRequest("digest must be sha256:<64 hex digits>, got %q", digest)
	}
	obj, err := s.Plugins.Get(ctx, digest)
	if errors.Is(err, jetstream.ErrObjectNotFound) {
		return nil, api.NotFound("no plugin binary with digest %s (push it first)", digest)
	}
	if err != nil {
		return nil, fmt.Errorf("fetch %s: %w", digest, err)
	}
	defer obj.Close()
	wasm, err := io.ReadAll(io.LimitReader(obj, MaxPluginBytes+1))
	if err != nil {
		return nil, fmt.Errorf("fetch %s: %w (a truncated upload?)", digest, err)
	}
	if len(wasm) > MaxPluginBytes {
		return nil, api.BadRequest("plugin binary is over the limit of %d bytes", MaxPluginBytes)
	}
	if got := PluginDigest(wasm); got != digest {
		return nil, api.BadRequest("plugin binary's bytes hash to %s, not %s (a truncated or corrupted upload)", got, digest)
	}
	return wasm, nil
}

// Pipeline returns an index's current pipeline (empty if none), with its
// KV revision.
func (s *Store) Pipeline(ctx context.Context, index string) (*api.PipelineSpec, error) {
	e, err := s.Pipelines.Get(ctx, index)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return &api.PipelineSpec{Index: index}, nil
	}
	if err != nil {
		return nil, err
	}
	return DecodePipeline(e)
}

// DecodePipeline decodes a pipelines-bucket entry.
func DecodePipeline(e jetstream.KeyValueEntry) (*api.PipelineSpec, error) {
	var spec api.PipelineSpec
	if err := json.Unmarshal(e.Value(), &spec); err != nil {
		return nil, fmt.Errorf("decode pipeline of %q: %w", e.Key(), err)
	}
	spec.Revision = e.Revision()
	return &spec, nil
}
