package registry

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
	"github.com/quarrysearch/quarry/internal/meta"
	"github.com/quarrysearch/quarry/internal/relevance"
)

// Interleaving experiments: `plugin canary --interleave` starts one (a
// tally in the quarry-interleave-tallies bucket), brokers record each
// interleaved search's sides (quarry-interleave), events.put credits
// clicks to them here, and when the sequential test decides, the
// candidate is promoted or rolled back and a plugin event records the
// figures (docs/relevance.md, "Interleaving").

// Experiment states (api.CanaryStats.State).
const (
	stateRunning    = "running"
	statePromoted   = "promoted"
	stateRolledBack = "rolled back"
)

// Query outcomes: who won a query's clicks.
const (
	outcomeNone = iota
	outcomeLive
	outcomeCandidate
	outcomeTie
)

func outcome(q *api.InterleavedQuery) int {
	switch {
	case q.LiveClicks == 0 && q.CandidateClicks == 0:
		return outcomeNone
	case q.LiveClicks > q.CandidateClicks:
		return outcomeLive
	case q.CandidateClicks > q.LiveClicks:
		return outcomeCandidate
	}
	return outcomeTie
}

func tallyKey(index, plugin, digest string) string {
	return index + "." + plugin + "." + strings.TrimPrefix(digest, "sha256:")
}

func sequential(spec api.InterleaveSpec) relevance.Sequential {
	return relevance.Sequential{Delta: spec.Delta, Alpha: spec.Alpha, Beta: spec.Beta, MaxQueries: spec.MaxQueries}.WithDefaults()
}

// checkInterleave checks an interleaving canary's candidate and test and
// fills in the test's defaults.
func (s *Service) checkInterleave(ctx context.Context, index string, r *Request) error {
	if r.Interleave == nil || r.Percent == 0 {
		return nil
	}
	v, err := s.store.ValidPluginVersion(ctx, index, r.Name, r.Digest)
	if err != nil {
		return err
	}
	if v.Kind != api.Ranker {
		return api.BadRequest("--interleave is for rankers: %s is a %s", r.Name, v.Kind)
	}
	seq := sequential(*r.Interleave)
	if why := seq.Valid(); why != "" {
		return api.BadRequest("interleave: %s", why)
	}
	*r.Interleave = api.InterleaveSpec{Delta: seq.Delta, Alpha: seq.Alpha, Beta: seq.Beta, MaxQueries: seq.MaxQueries}
	return nil
}

// startTally starts an experiment's tally afresh.
func (s *Service) startTally(ctx context.Context, index string, spec *api.PipelineSpec, name string) error {
	st, _ := spec.Step(name)
	if st == nil || st.Canary == nil || st.Canary.Interleave == nil {
		return nil
	}
	seq := sequential(*st.Canary.Interleave)
	upper, lower := seq.Bounds()
	t := api.CanaryStats{Index: index, Plugin: name, Candidate: st.Canary.Step.Digest, Live: st.Digest, Upper: upper, Lower: lower,
		Test: *st.Canary.Interleave, State: stateRunning}
	raw, err := json.Marshal(&t)
	if err != nil {
		return err
	}
	if _, err := s.store.InterleaveTallies.Put(ctx, tallyKey(index, name, t.Candidate), raw); err != nil {
		return fmt.Errorf("start the interleaving tally of %s: %w", name, err)
	}
	return nil
}

// canaryStats returns a plugin's running experiment, or its latest.
func (s *Service) canaryStats(ctx context.Context, index, name string) (*api.CanaryStats, error) {
	if err := validName(name); err != nil {
		return nil, err
	}
	all, err := meta.ListJSON[api.CanaryStats](ctx, s.store.InterleaveTallies, index+"."+name)
	if err != nil {
		return nil, err
	}
	if len(all) == 0 {
		return nil, api.NotFound("plugin %s of %q has had no interleaving canary", name, index)
	}
	slices.SortFunc(all, func(a, b api.CanaryStats) int {
		if ar, br := a.State == stateRunning, b.State == stateRunning; ar != br {
			if ar {
				return -1
			}
			return 1
		}
		return b.Decided.Compare(a.Decided)
	})
	t := &all[0]
	if t.State == stateRunning { // ended by hand (canary 0, promote, rm)?
		spec, err := s.store.Pipeline(ctx, index)
		if err != nil {
			return nil, err
		}
		if st, _ := spec.Step(name); st == nil || st.Canary == nil || st.Canary.Interleave == nil || st.Canary.Step.Digest != t.Candidate {
			t.State = "ended by hand"
		}
	}
	return t, nil
}

// credit credits the clicks among evs to the side of each interleaved
// search that placed the clicked result (once per search and result).
// A failure is logged: the events are stored either way.
func (s *Service) credit(ctx context.Context, index string, evs []api.UserEvent) {
	for _, e := range evs {
		if e.ActionName != api.ActionClick {
			continue
		}
		if err := s.creditClick(ctx, index, &e); err != nil {
			s.cfg.Logger.Error("credit an interleaved click", "index", index, "query_id", e.QueryID, "err", err)
		}
	}
}

func (s *Service) creditClick(ctx context.Context, index string, e *api.UserEvent) error {
	key := index + "." + e.QueryID
	doc := e.EventAttributes.Object.ObjectID
	for range 5 {
		entry, err := s.store.Interleave.Get(ctx, key)
		if errors.Is(err, jetstream.ErrKeyNotFound) || errors.Is(err, jetstream.ErrInvalidKey) {
			return nil // not an interleaved search (or over a day ago)
		}
		if err != nil {
			return err
		}
		var q api.InterleavedQuery
		if err := json.Unmarshal(entry.Value(), &q); err != nil {
			return fmt.Errorf("decode %s: %w", key, err)
		}
		team := q.Teams[doc]
		if team == 0 || slices.Contains(q.Clicked, doc) {
			return nil
		}
		before := outcome(&q)
		q.Clicked = append(q.Clicked, doc)
		if team == uint8(relevance.TeamLive) {
			q.LiveClicks++
		} else {
			q.CandidateClicks++
		}
		raw, err := json.Marshal(&q)
		if err != nil {
			return err
		}
		if _, err := s.store.Interleave.Update(ctx, key, raw, entry.Revision()); err != nil {
			if meta.IsWrongRevision(err) {
				continue // another click came first
			}
			return err
		}
		return s.tally(ctx, index, &q, before, outcome(&q))
	}
	return fmt.Errorf("%s is being credited concurrently", key)
}

// tally moves a query's outcome in its experiment's tally and, when the
// sequential test decides, ends the experiment.
func (s *Service) tally(ctx context.Context, index string, q *api.InterleavedQuery, before, after int) error {
	key := tallyKey(index, q.Plugin, q.Candidate)
	for range 5 {
		entry, err := s.store.InterleaveTallies.Get(ctx, key)
		if errors.Is(err, jetstream.ErrKeyNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		var t api.CanaryStats
		if err := json.Unmarshal(entry.Value(), &t); err != nil {
			return fmt.Errorf("decode %s: %w", key, err)
		}
		if t.State != stateRunning || t.Live != q.Live {
			return nil // decided, or a search from before the live version changed
		}
		t.Clicks++
		for _, o := range []struct{ outcome, by int }{{before, -1}, {after, 1}} {
			switch o.outcome {
			case outcomeCandidate:
				t.Wins += o.by
			case outcomeLive:
				t.Losses += o.by
			case outcomeTie:
				t.Ties += o.by
			}
		}
		seq := sequential(t.Test)
		t.LLR = seq.LLR(t.Wins, t.Losses)
		verdict := seq.Decide(t.Wins, t.Losses)
		if verdict != relevance.Undecided {
			t.Decided = time.Now().UTC().Truncate(time.Millisecond)
			t.State, t.Reason = stateRolledBack, figures(&t, seq)
			switch verdict {
			case relevance.Better:
				t.State = statePromoted
				t.Reason = "the candidate is better: " + t.Reason
			case relevance.Worse:
				t.Reason = "the candidate is worse: " + t.Reason
			default:
				t.Reason = "no difference shown within max_queries: " + t.Reason
			}
		}
		raw, err := json.Marshal(&t)
		if err != nil {
			return err
		}
		if _, err := s.store.InterleaveTallies.Update(ctx, key, raw, entry.Revision()); err != nil {
			if meta.IsWrongRevision(err) {
				continue
			}
			return err
		}
		if verdict != relevance.Undecided {
			return s.conclude(ctx, index, &t)
		}
		return nil
	}
	return fmt.Errorf("the tally %s is being updated concurrently", key)
}

// figures says what the test saw.
func figures(t *api.CanaryStats, seq relevance.Sequential) string {
	return fmt.Sprintf("%d wins, %d losses, %d ties over %d clicks; log likelihood ratio %.3f (bounds %.3f, %.3f; delta %g, alpha %g, beta %g, max %d queries)",
		t.Wins, t.Losses, t.Ties, t.Clicks, t.LLR, t.Upper, t.Lower, seq.Delta, seq.Alpha, seq.Beta, seq.MaxQueries)
}

// conclude promotes a decided experiment's candidate or rolls it back,
// if it is still the plugin's interleaving canary, and records the event.
func (s *Service) conclude(ctx context.Context, index string, t *api.CanaryStats) error {
	promote := t.State == statePromoted
	change := fmt.Sprintf("interleaving %s %s %s", map[bool]string{true: "promoted", false: "rolled back"}[promote], t.Plugin, api.ShortDigest(t.Candidate))
	_, err := s.update(ctx, index, change, func(spec *api.PipelineSpec) error {
		st, _ := spec.Step(t.Plugin)
		if st == nil || st.Canary == nil || st.Canary.Interleave == nil || st.Canary.Step.Digest != t.Candidate {
			return meta.ErrNoChange // the experiment was ended by hand
		}
		if promote {
			*st = st.Canary.Step
		} else {
			st.Canary = nil
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("%s: %w", change, err)
	}
	event := "interleaving rolled back"
	if promote {
		event = "interleaving promoted"
	}
	s.recordEvent(ctx, api.PluginEvent{Index: index, Plugin: t.Plugin, Version: api.ShortDigest(t.Candidate), Time: t.Decided, Event: event, Reason: t.Reason})
	return nil
}
