package shard

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/blevesearch/bleve/v2"
	index "github.com/blevesearch/bleve_index_api"
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
	seq, docs, err := r.copyConsistent(idx, copyDir)
	r.mu.RUnlock()
	if err != nil {
		return snap, fmt.Errorf("copy shard %d: %w", r.cfg.Shard, err)
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

// copyConsistent copies the index into dir as of one point between two
// batches, and returns that point's sequence and document count. Updates
// wait only while the sequence and scorch's root snapshot (a copy reader)
// are taken together, not for the copy: it reads that root (scorch keeps
// its segments until the reader is closed), however many batches apply
// meanwhile.
func (r *Replica) copyConsistent(idx bleve.Index, dir string) (seq, docs uint64, err error) {
	r.applyMu.Lock()
	seq = r.Seq()
	cr, err := copyReader(idx)
	r.applyMu.Unlock()
	if err != nil {
		return 0, 0, err
	}
	defer func() {
		if cerr := cr.CloseCopyReader(); err == nil {
			err = cerr
		}
	}()
	if beforeCopy != nil {
		beforeCopy()
	}
	if docs, err = cr.DocCount(); err != nil {
		return 0, 0, err
	}
	if err := cr.CopyTo(bleve.FileSystemDirectory(dir)); err != nil {
		return 0, 0, err
	}
	return seq, docs, copyFile(filepath.Join(r.cfg.Dir, indexMetaFile), filepath.Join(dir, indexMetaFile))
}

// beforeCopy, set by tests only, runs once Publish has taken the root it
// copies and released the apply lock.
var beforeCopy func()

// indexMetaFile is bleve's file naming an index's type and storage, which
// a copy needs beside the segments (bleve's own CopyTo writes it too).
const indexMetaFile = "index_meta.json"

// copyReader takes a reader of the index's current root snapshot, to copy
// from after the apply lock is released.
func copyReader(idx bleve.Index) (index.CopyReader, error) {
	adv, err := idx.Advanced()
	if err != nil {
		return nil, err
	}
	ci, ok := adv.(index.CopyIndex)
	if !ok {
		return nil, fmt.Errorf("index %T cannot be copied", adv)
	}
	cr := ci.CopyReader()
	if cr == nil {
		return nil, fmt.Errorf("index has no snapshot to copy")
	}
	return cr, nil
}

// copyFile copies the file at from to a new file at to.
func copyFile(from, to string) error {
	b, err := os.ReadFile(from)
	if err != nil {
		return err
	}
	return os.WriteFile(to, b, 0o644)
}
