package meta

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/quarrysearch/quarry/api"
	"github.com/quarrysearch/quarry/internal/subject"
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

// pluginVersionKey is a version's key in the PluginVersions bucket.
func pluginVersionKey(index, name, digest string) string {
	return index + "." + name + "." + strings.TrimPrefix(digest, "sha256:")
}

// PutPluginVersion records a pushed version and its validation.
func (s *Store) PutPluginVersion(ctx context.Context, v *api.PluginVersion) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	if _, err := s.PluginVersions.Put(ctx, pluginVersionKey(v.Index, v.Name, v.Digest), b); err != nil {
		return fmt.Errorf("record version: %w", err)
	}
	return nil
}

// PluginVersion returns a version pushed to index, valid or not:
// api.ErrNotFound if it was never pushed.
//
// digest may be any unique prefix of the version's digest, with or without
// "sha256:", such as the 12 digits `quarry plugin ls` prints; a prefix that
// fits several versions is refused naming them.
func (s *Store) PluginVersion(ctx context.Context, index, name, digest string) (*api.PluginVersion, error) {
	if !fullDigest(digest) {
		var err error
		if digest, err = s.resolveDigest(ctx, index, name, digest); err != nil {
			return nil, err
		}
	}
	e, err := s.PluginVersions.Get(ctx, pluginVersionKey(index, name, digest))
	if errors.Is(err, jetstream.ErrKeyNotFound) || errors.Is(err, jetstream.ErrInvalidKey) {
		return nil, api.NotFound("plugin %s has no version %s on index %q (push it first)", name, digest, index)
	}
	if err != nil {
		return nil, err
	}
	var v api.PluginVersion
	if err := json.Unmarshal(e.Value(), &v); err != nil {
		return nil, fmt.Errorf("decode version %s of %s: %w", digest, name, err)
	}
	return &v, nil
}

// ValidPluginVersion returns a version pushed to index that passed
// validation: api.ErrNotFound if it was never pushed, api.ErrBadRequest if
// it failed validation.
func (s *Store) ValidPluginVersion(ctx context.Context, index, name, digest string) (*api.PluginVersion, error) {
	v, err := s.PluginVersion(ctx, index, name, digest)
	if err != nil {
		return nil, err
	}
	if !v.Valid {
		return nil, api.BadRequest("version %s of %s failed validation and cannot go live: %s", digest, name, v.Error)
	}
	return v, nil
}

// ListJSON decodes the latest value of every key in kv under prefix (the
// key's leading dot-separated tokens, such as "menu" or "menu.ltr"; ""
// for every key); values that do not decode are skipped. One watch reads
// keys and values together, instead of a Get per key.
func ListJSON[T any](ctx context.Context, kv jetstream.KeyValue, prefix string) ([]T, error) {
	filter := prefix + ".>"
	if prefix == "" {
		filter = ">"
	}
	w, err := kv.Watch(ctx, filter, jetstream.IgnoreDeletes())
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", filter, err)
	}
	defer w.Stop()
	var out []T
	for {
		select {
		case e := <-w.Updates():
			if e == nil { // every current value delivered, or the watch closed
				return out, nil
			}
			var v T
			if json.Unmarshal(e.Value(), &v) == nil {
				out = append(out, v)
			}
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// fullDigest reports whether d is a whole "sha256:<64 hex>" digest.
func fullDigest(d string) bool {
	hexPart, ok := strings.CutPrefix(d, "sha256:")
	if !ok || len(hexPart) != 64 {
		return false
	}
	_, err := hex.DecodeString(hexPart)
	return err == nil
}

// resolveDigest finds the one version of a plugin whose digest starts
// with prefix.
func (s *Store) resolveDigest(ctx context.Context, index, name, prefix string) (string, error) {
	p := strings.ToLower(strings.TrimPrefix(prefix, "sha256:"))
	if p == "" {
		return "", api.BadRequest("a version of plugin %s is needed: its digest, or a prefix of it as `quarry plugin ls` prints it", name)
	}
	if _, err := hex.DecodeString(p + strings.Repeat("0", len(p)%2)); err != nil || len(p) > 64 {
		return "", api.BadRequest("version %q of plugin %s is not a digest (sha256:<hex>) or a prefix of one", prefix, name)
	}
	if err := subject.ValidIndexName(name); err != nil {
		return "", api.BadRequest("plugin name %q: %v", name, err)
	}
	versions, err := ListJSON[api.PluginVersion](ctx, s.PluginVersions, index+"."+name)
	if err != nil {
		return "", err
	}
	return matchDigest(versions, index, name, prefix)
}

// matchDigest finds the one version of plugin name in versions whose
// digest starts with prefix (with or without "sha256:").
func matchDigest(versions []api.PluginVersion, index, name, prefix string) (string, error) {
	p := strings.ToLower(strings.TrimPrefix(prefix, "sha256:"))
	var match []string
	for _, v := range versions {
		if v.Name == name && strings.HasPrefix(strings.TrimPrefix(v.Digest, "sha256:"), p) {
			match = append(match, v.Digest)
		}
	}
	switch len(match) {
	case 0:
		return "", api.NotFound("plugin %s has no version %s on index %q (push it first)", name, prefix, index)
	case 1:
		return match[0], nil
	}
	slices.Sort(match)
	return "", api.BadRequest("version %s of plugin %s is ambiguous: it starts %d digests (%s); give more digits", prefix, name, len(match), strings.Join(match, ", "))
}
