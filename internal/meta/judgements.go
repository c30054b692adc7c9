package meta

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/quarrysearch/quarry/api"
)

// JudgementHistory is how many versions of each judgement list the
// judgements bucket keeps.
const JudgementHistory = 16

func judgementKey(index, name string) string { return index + ".set." + name }
func gateKey(index string) string            { return index + ".gate" }

// PutJudgementSet stores set as the next version of its index's list of
// that name (version 1 if new), counting its queries and ratings, with
// compare-and-set on the version it read. It returns the set as stored.
func (s *Store) PutJudgementSet(ctx context.Context, set *api.JudgementSet) (*api.JudgementSet, error) {
	key := judgementKey(set.Index, set.Name)
	for range 5 {
		c := *set
		var rev uint64
		e, err := s.Judgements.Get(ctx, key)
		switch {
		case errors.Is(err, jetstream.ErrKeyNotFound):
			c.Version = 1
		case err != nil:
			return nil, fmt.Errorf("read judgement list %s of %q: %w", set.Name, set.Index, err)
		default:
			var prev api.JudgementSet
			if err := json.Unmarshal(e.Value(), &prev); err != nil {
				return nil, fmt.Errorf("decode judgement list %s of %q: %w", set.Name, set.Index, err)
			}
			c.Version, rev = prev.Version+1, e.Revision()
		}
		c.Updated = time.Now().UTC().Truncate(time.Millisecond)
		c.NumQueries, c.NumRatings = len(c.Queries), 0
		for _, q := range c.Queries {
			c.NumRatings += len(q.Ratings)
		}
		b, err := json.Marshal(&c)
		if err != nil {
			return nil, fmt.Errorf("encode judgement list %s: %w", set.Name, err)
		}
		if rev == 0 {
			_, err = s.Judgements.Create(ctx, key, b)
		} else {
			_, err = s.Judgements.Update(ctx, key, b, rev)
		}
		if errors.Is(err, jetstream.ErrKeyExists) || isWrongSeq(err) {
			continue // another push came first: the next version
		}
		if err != nil {
			return nil, fmt.Errorf("store judgement list %s of %q: %w", set.Name, set.Index, err)
		}
		return &c, nil
	}
	return nil, api.Errorf(api.CodeConflict, "judgement list %s of %q is being pushed concurrently; try again", set.Name, set.Index)
}

// JudgementSet returns a judgement list of an index: its latest version
// (version 0) or an earlier one the bucket still keeps (the last
// JudgementHistory). api.ErrNotFound if there is none.
func (s *Store) JudgementSet(ctx context.Context, index, name string, version int) (*api.JudgementSet, error) {
	key := judgementKey(index, name)
	var entries []jetstream.KeyValueEntry
	if version == 0 {
		e, err := s.Judgements.Get(ctx, key)
		if err == nil {
			entries = append(entries, e)
		} else if !errors.Is(err, jetstream.ErrKeyNotFound) && !errors.Is(err, jetstream.ErrInvalidKey) {
			return nil, fmt.Errorf("read judgement list %s of %q: %w", name, index, err)
		}
	} else {
		hist, err := s.Judgements.History(ctx, key)
		if err != nil && !errors.Is(err, jetstream.ErrKeyNotFound) && !errors.Is(err, jetstream.ErrInvalidKey) {
			return nil, fmt.Errorf("read judgement list %s of %q: %w", name, index, err)
		}
		entries = hist
	}
	for i := len(entries) - 1; i >= 0; i-- {
		e := entries[i]
		if e.Operation() != jetstream.KeyValuePut {
			break // removed: older versions are gone with it
		}
		var set api.JudgementSet
		if err := json.Unmarshal(e.Value(), &set); err != nil {
			return nil, fmt.Errorf("decode judgement list %s of %q: %w", name, index, err)
		}
		if version == 0 || set.Version == version {
			return &set, nil
		}
	}
	if version != 0 {
		return nil, api.NotFound("judgement list %s of index %q has no version %d (the last %d versions are kept)", name, index, version, JudgementHistory)
	}
	return nil, api.NotFound("index %q has no judgement list %s (push it first)", index, name)
}

// JudgementSets lists an index's judgement lists, latest versions, by
// name, without their queries.
func (s *Store) JudgementSets(ctx context.Context, index string) ([]api.JudgementSet, error) {
	sets, err := ListJSON[api.JudgementSet](ctx, s.Judgements, index+".set")
	if err != nil {
		return nil, err
	}
	for i := range sets {
		sets[i].Queries = nil
	}
	slices.SortFunc(sets, func(a, b api.JudgementSet) int { return strings.Compare(a.Name, b.Name) })
	if sets == nil {
		sets = []api.JudgementSet{}
	}
	return sets, nil
}

// DeleteJudgementSet removes a judgement list and its earlier versions.
func (s *Store) DeleteJudgementSet(ctx context.Context, index, name string) error {
	if _, err := s.JudgementSet(ctx, index, name, 0); err != nil {
		return err
	}
	if err := s.Judgements.Purge(ctx, judgementKey(index, name)); err != nil {
		return fmt.Errorf("remove judgement list %s of %q: %w", name, index, err)
	}
	return nil
}

// Gate returns an index's relevance gate, nil if it has none.
func (s *Store) Gate(ctx context.Context, index string) (*api.Gate, error) {
	e, err := s.Judgements.Get(ctx, gateKey(index))
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read the gate of %q: %w", index, err)
	}
	var g api.Gate
	if err := json.Unmarshal(e.Value(), &g); err != nil {
		return nil, fmt.Errorf("decode the gate of %q: %w", index, err)
	}
	return &g, nil
}

// PutGate stores an index's relevance gate (checked by the caller).
func (s *Store) PutGate(ctx context.Context, index string, g *api.Gate) error {
	c := *g
	c.Updated = time.Now().UTC().Truncate(time.Millisecond)
	b, err := json.Marshal(&c)
	if err != nil {
		return fmt.Errorf("encode the gate of %q: %w", index, err)
	}
	if _, err := s.Judgements.Put(ctx, gateKey(index), b); err != nil {
		return fmt.Errorf("store the gate of %q: %w", index, err)
	}
	*g = c
	return nil
}

// DeleteGate removes an index's relevance gate.
func (s *Store) DeleteGate(ctx context.Context, index string) error {
	if err := s.Judgements.Purge(ctx, gateKey(index)); err != nil && !errors.Is(err, jetstream.ErrKeyNotFound) {
		return fmt.Errorf("remove the gate of %q: %w", index, err)
	}
	return nil
}
