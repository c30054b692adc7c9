package meta

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// Manifest records an index's current snapshot generation: for each shard,
// the object holding it, its digest, and the stream sequence it includes.
type Manifest struct {
	Index      string          `json:"index"`
	Generation uint64          `json:"generation"`
	Shards     []ShardSnapshot `json:"shards"`
	Created    time.Time       `json:"created"`
}

// ShardSnapshot is one shard's snapshot in a manifest.
type ShardSnapshot struct {
	Shard int `json:"shard"`
	// Object names the snapshot in the segments object store.
	Object string `json:"object"`
	// Digest is "sha256=<hex>" of the object's bytes.
	Digest string `json:"digest"`
	Size   int64  `json:"size"`
	Docs   uint64 `json:"docs"`
	// Seq is the last stream sequence of this shard the snapshot includes:
	// a replica opened from it replays from Seq+1.
	Seq uint64 `json:"seq"`
}

// ErrManifestConflict reports a manifest written by someone else meanwhile.
var ErrManifestConflict = errors.New("manifest changed concurrently")

// Manifest returns an index's current manifest and its KV revision; a zero
// manifest and revision 0 if there is none yet.
func (s *Store) Manifest(ctx context.Context, index string) (Manifest, uint64, error) {
	e, err := s.Manifests.Get(ctx, index)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return Manifest{Index: index}, 0, nil
	}
	if err != nil {
		return Manifest{}, 0, fmt.Errorf("read manifest of %q: %w", index, err)
	}
	m, err := DecodeManifest(e.Value())
	return m, e.Revision(), err
}

// DecodeManifest decodes a stored manifest.
func DecodeManifest(b []byte) (Manifest, error) {
	var m Manifest
	if err := json.Unmarshal(b, &m); err != nil {
		return m, fmt.Errorf("decode manifest: %w", err)
	}
	return m, nil
}

// PutManifest stores m if the manifest's revision is still prevRev (0: none
// exists), and deletes the snapshots of generations before m's.
func (s *Store) PutManifest(ctx context.Context, m Manifest, prevRev uint64) error {
	b, err := json.Marshal(m)
	if err != nil {
		return err
	}
	if prevRev == 0 {
		_, err = s.Manifests.Create(ctx, m.Index, b)
	} else {
		_, err = s.Manifests.Update(ctx, m.Index, b, prevRev)
	}
	if err != nil {
		if errors.Is(err, jetstream.ErrKeyExists) || isWrongSeq(err) {
			return fmt.Errorf("write manifest of %q: %w", m.Index, ErrManifestConflict)
		}
		return fmt.Errorf("write manifest of %q: %w", m.Index, err)
	}
	return nil
}

// PruneSnapshots deletes the snapshot objects of index's generations older
// than keepFrom.
func (s *Store) PruneSnapshots(ctx context.Context, index string, keepFrom uint64) error {
	return s.deleteObjects(ctx, index+"/", func(name string) bool {
		genStr, _, ok := strings.Cut(strings.TrimPrefix(name, index+"/"), "/")
		gen, err := strconv.ParseUint(genStr, 10, 64)
		return ok && err == nil && gen < keepFrom
	})
}

func isWrongSeq(err error) bool {
	var apiErr *jetstream.APIError
	return errors.As(err, &apiErr) && apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence
}

// IsWrongRevision reports whether a KV update with compare-and-set failed
// because the key moved past the revision it named (another writer came
// first), or a create because the key exists.
func IsWrongRevision(err error) bool {
	return errors.Is(err, jetstream.ErrKeyExists) || isWrongSeq(err)
}
