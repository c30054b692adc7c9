package meta

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/quarrysearch/quarry/api"
)

// PipelineHistory returns the revisions of an index's pipeline the
// pipelines bucket still keeps (its history is 64), oldest first, each with
// its revision. Deletions, and revisions that do not decode, are skipped;
// an index that never had a pipeline has none.
func (s *Store) PipelineHistory(ctx context.Context, index string) ([]*api.PipelineSpec, error) {
	hist, err := s.Pipelines.History(ctx, index)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read the pipeline history of %q: %w", index, err)
	}
	out := make([]*api.PipelineSpec, 0, len(hist))
	for _, e := range hist {
		if e.Operation() != jetstream.KeyValuePut {
			continue
		}
		if spec, err := DecodePipeline(e); err == nil {
			out = append(out, spec)
		}
	}
	return out, nil
}

// ErrNoChange, returned by a ChangePipeline edit, means there is nothing to
// write: ChangePipeline then writes nothing and returns (nil, nil).
var ErrNoChange = errors.New("no change")

// ChangePipeline is the one way a pipeline changes, the one
// compare-and-set path of pipeline revisions: the registry's admin
// operations (people, and the interleaving experiments' conclusions) and
// the brokers' automatic fallback (their control-plane writers: a step
// taken out, a step rolled back) all write through it. It reads the
// index's pipeline, lets edit change it, and stores it with
// compare-and-set on the revision it read, labelled change
// (PipelineSpec.Change), reading and editing again when another writer
// came first (five tries, then an api.ErrConflict error); an edit that
// must not retry returns an error of its own on its second call.
// RestoredFrom, Source and Gate are cleared before edit runs: only a
// rollback, a pipeline file and the relevance gate set them. It returns
// the revision it stored, as read back, or (nil, nil) when edit returns
// ErrNoChange; any other error of edit is returned as it is.
func (s *Store) ChangePipeline(ctx context.Context, index, change string, edit func(*api.PipelineSpec) error) (*api.PipelineSpec, error) {
	for range 5 {
		spec, err := s.Pipeline(ctx, index)
		if err != nil {
			return nil, err
		}
		rev := spec.Revision
		spec.RestoredFrom, spec.Source, spec.Gate = 0, "", nil
		if err := edit(spec); errors.Is(err, ErrNoChange) {
			return nil, nil
		} else if err != nil {
			return nil, err
		}
		spec.Change = change
		stored, err := s.updatePipeline(ctx, index, spec, rev)
		if err == nil {
			return stored, nil
		}
		if !errors.Is(err, api.ErrConflict) {
			return nil, err
		}
	}
	return nil, api.Errorf(api.CodeConflict, "pipeline of %q is being changed concurrently; try again", index)
}

// updatePipeline stores spec as the index's pipeline if the stored one is
// still at revision rev (compare-and-set; rev 0: the index has no
// pipeline yet), and returns the revision it stored, decoded from the
// bytes it wrote: not read back, since a read may be answered by a
// replica that has not applied the write yet (a direct get), which
// right after a JetStream leader moved answers "key not found". If the
// pipeline changed meanwhile it fails with an api.ErrConflict error and
// stores nothing. spec itself is not changed; its Index, Updated and
// Revision are set in the copy stored. Only ChangePipeline calls it.
func (s *Store) updatePipeline(ctx context.Context, index string, spec *api.PipelineSpec, rev uint64) (*api.PipelineSpec, error) {
	c := *spec
	c.Index, c.Updated, c.Revision = index, time.Now().UTC(), 0
	b, err := json.Marshal(&c)
	if err != nil {
		return nil, fmt.Errorf("encode the pipeline of %q: %w", index, err)
	}
	var n uint64
	if rev == 0 {
		n, err = s.Pipelines.Create(ctx, index, b)
	} else {
		n, err = s.Pipelines.Update(ctx, index, b, rev)
	}
	if errors.Is(err, jetstream.ErrKeyExists) || isWrongSeq(err) {
		return nil, api.Errorf(api.CodeConflict, "the pipeline of %q changed after revision %d", index, rev)
	}
	if err != nil {
		return nil, fmt.Errorf("update the pipeline of %q: %w", index, err)
	}
	var stored api.PipelineSpec
	if err := json.Unmarshal(b, &stored); err != nil {
		return nil, fmt.Errorf("decode the pipeline of %q just stored: %w", index, err)
	}
	stored.Revision = n
	return &stored, nil
}
