package meta

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/quarrysearch/quarry/api"
	"github.com/quarrysearch/quarry/internal/subject"
)

// Retention of user events.
const (
	// UserEventsMaxAge is how long user events are kept.
	UserEventsMaxAge = 30 * 24 * time.Hour
	// UserEventsMaxBytes caps the stream; the oldest events go first.
	UserEventsMaxBytes = 4 << 30
	// MaxUserEventsRead caps the events one read returns.
	MaxUserEventsRead = 1_000_000
)

// PutUserEvents stores checked events of an index (each stamped with the
// index, its team and, if it has none, the time now), each acknowledged
// by the stream, and returns how many were stored: on an error, the
// events before it were.
func (s *Store) PutUserEvents(ctx context.Context, def api.IndexDefinition, evs []api.UserEvent) (int, error) {
	now := time.Now().UTC()
	subj := subject.UserEventsPrefix + "." + def.Name
	futures := make([]jetstream.PubAckFuture, 0, len(evs))
	for i := range evs {
		e := evs[i]
		e.Index, e.Team = def.Name, def.TeamOf()
		if e.Timestamp.IsZero() {
			e.Timestamp = now
		}
		b, err := json.Marshal(&e)
		if err != nil {
			return 0, fmt.Errorf("encode event %d: %w", i+1, err)
		}
		f, err := s.JS.PublishAsync(subj, b)
		if err != nil {
			return 0, fmt.Errorf("store event %d of %q: %w", i+1, def.Name, err)
		}
		futures = append(futures, f)
	}
	for i, f := range futures {
		select {
		case <-f.Ok():
		case err := <-f.Err():
			return i, fmt.Errorf("store event %d of %q: %w", i+1, def.Name, err)
		case <-ctx.Done():
			return i, ctx.Err()
		}
	}
	return len(futures), nil
}

// ReadUserEvents reads an index's events stored since since (zero: all kept),
// oldest first, at most MaxUserEventsRead. Messages that do not decode
// are skipped.
func (s *Store) ReadUserEvents(ctx context.Context, index string, since time.Time) ([]api.UserEvent, error) {
	var out []api.UserEvent
	_, err := s.readSubjectSince(ctx, subject.UserEventsStream, subject.UserEventsPrefix+"."+index, since, MaxUserEventsRead, func(m jetstream.Msg) error {
		var e api.UserEvent
		if json.Unmarshal(m.Data(), &e) == nil {
			out = append(out, e)
		}
		return nil
	})
	if errors.Is(err, errStalled) {
		err = nil
	}
	if err != nil {
		return out, fmt.Errorf("read the user events of %s: %w", index, err)
	}
	return out, nil
}
