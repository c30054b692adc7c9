package meta

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/quarrysearch/quarry/api"
)

// An index's field paths are kept in the Fields bucket under its name, as
// the hashes (api.FieldHash) of every distinct path its documents were
// sent with: the index's definition's creation time (Unix nanoseconds,
// so that an index deleted and created again starts afresh), then the
// hashes, sorted, 8 bytes each, big-endian. At most
// api.MaxDocumentLimits.MaxIndexFields of them: 80 KB.

// IndexFields returns the hashes of index def's field paths, sorted, and
// the entry's revision (0: none yet).
func (s *Store) IndexFields(ctx context.Context, def api.IndexDefinition) (fields []uint64, rev uint64, err error) {
	e, err := s.Fields.Get(ctx, def.Name)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return nil, 0, nil
	}
	if err != nil {
		return nil, 0, fmt.Errorf("read the field paths of %q: %w", def.Name, err)
	}
	v := e.Value()
	if len(v) < 8 || len(v)%8 != 0 {
		return nil, e.Revision(), fmt.Errorf("the field paths of %q: a stored value of %d bytes", def.Name, len(v))
	}
	if int64(binary.BigEndian.Uint64(v)) != def.Created.UnixNano() {
		return nil, e.Revision(), nil // an earlier index of the same name
	}
	fields = make([]uint64, 0, len(v)/8-1)
	for i := 8; i < len(v); i += 8 {
		fields = append(fields, binary.BigEndian.Uint64(v[i:]))
	}
	return fields, e.Revision(), nil
}

// maxFieldWrites bounds AddFields' compare-and-set tries: every lost one
// means another writer added fields, so the index is at its limit after
// at most MaxIndexFields of them; this bounds a pathological case.
const maxFieldWrites = 64

// AddFields adds field path hashes to index def's, unless that would
// take it past max, and returns the index's paths then (sorted) and
// whether they were added. Writers race with compare-and-set, so two
// clients never take an index past max between them.
func (s *Store) AddFields(ctx context.Context, def api.IndexDefinition, add []uint64, max int) (fields []uint64, added bool, err error) {
	for range maxFieldWrites {
		have, rev, err := s.IndexFields(ctx, def)
		if err != nil {
			return nil, false, err
		}
		merged := have
		for _, h := range add {
			if i, found := slices.BinarySearch(merged, h); !found {
				if len(merged) == len(have) {
					merged = slices.Clone(have) // copy on first change
					i, _ = slices.BinarySearch(merged, h)
				}
				merged = slices.Insert(merged, i, h)
			}
		}
		if len(merged) == len(have) {
			return have, true, nil // nothing new
		}
		if len(merged) > max {
			return have, false, nil
		}
		v := make([]byte, 8, 8+8*len(merged))
		binary.BigEndian.PutUint64(v, uint64(def.Created.UnixNano()))
		for _, h := range merged {
			v = binary.BigEndian.AppendUint64(v, h)
		}
		if rev == 0 {
			_, err = s.Fields.Create(ctx, def.Name, v)
		} else {
			_, err = s.Fields.Update(ctx, def.Name, v, rev)
		}
		switch {
		case err == nil:
			return merged, true, nil
		case errors.Is(err, jetstream.ErrKeyExists) || isWrongSeq(err):
			continue // another writer was first: read again
		default:
			return nil, false, fmt.Errorf("record the field paths of %q: %w", def.Name, err)
		}
	}
	return nil, false, api.Errorf(api.CodeConflict, "the field paths of index %q are being changed by many writers at once; try again", def.Name)
}
