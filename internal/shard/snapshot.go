package shard

import (
	"context"
	"fmt"
	"os"

	"github.com/blevesearch/bleve/v2"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/quarrysearch/quarry/internal/meta"
	"github.com/quarrysearch/quarry/internal/snapshot"
	"github.com/quarrysearch/quarry/internal/subject"
)

// Publish copies the replica's index at a consistent point (between two
// batches), packs it and uploads it as the shard's snapshot of generation.
// The returned ShardSnapshot records the sequence the copy includes.
func (r *Replica) Publish(ctx context.Context, tmpDir string, generation uint64) (meta.ShardSnapshot, error) {
	var snap meta.ShardSnapshot
	copyDir, err := os.MkdirTemp(tmpDir, "copy-")
	if err != nil {
		return snap, err
	}
	defer os.RemoveAll(copyDir)

	idx, err := r.acquire()
	if err != nil {
		return snap, err
	}
	r.applyMu.Lock()
	seq := r.Seq()
	docs, derr := idx.DocCount()
	cerr := idx.(bleve.IndexCopyable).CopyTo(bleve.FileSystemDirectory(copyDir))
	r.applyMu.Unlock()
	r.mu.RUnlock()
	if cerr != nil {
		return snap, fmt.Errorf("copy shard %d: %w", r.cfg.Shard, cerr)
	}
	if derr != nil {
		return snap, derr
	}

	packed, err := os.CreateTemp(tmpDir, "pack-*.tar.zst")
	if err != nil {
		return snap, err
	}
	defer os.Remove(packed.Name())
	defer packed.Close()
	digest, err := snapshot.Pack(copyDir, packed)
	if err != nil {
		return snap, err
	}
	size, err := packed.Seek(0, 1)
	if err != nil {
		return snap, err
	}
	if _, err := packed.Seek(0, 0); err != nil {
		return snap, err
	}
	name := subject.SegmentObject(r.cfg.Index, generation, r.cfg.Shard, digest)
	if _, err := r.cfg.Store.Segments.Put(ctx, jetstreamMeta(name), packed); err != nil {
		return snap, fmt.Errorf("upload %s: %w", name, err)
	}
	return meta.ShardSnapshot{Shard: r.cfg.Shard, Object: name, Digest: digest, Size: size, Docs: docs, Seq: seq}, nil
}

func jetstreamMeta(name string) jetstream.ObjectMeta {
	return jetstream.ObjectMeta{Name: name, Description: "Quarry shard snapshot (tar, zstd)"}
}
