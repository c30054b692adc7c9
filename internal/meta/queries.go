package meta

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/quarrysearch/quarry/internal/subject"
)

// RecordedQueries returns up to limit (0: all) search requests brokers
// recorded for index, oldest first, as JSON.
func (s *Store) RecordedQueries(ctx context.Context, index string, limit int) ([]json.RawMessage, error) {
	var out []json.RawMessage
	_, err := s.readSubject(ctx, subject.QueriesStream, subject.QueriesPrefix+"."+index, limit, func(m jetstream.Msg) error {
		out = append(out, json.RawMessage(m.Data()))
		return nil
	})
	if errors.Is(err, errStalled) {
		err = nil // what was recorded then
	}
	if err != nil {
		return out, fmt.Errorf("read recorded queries of %s: %w", index, err)
	}
	return out, nil
}

// errStalled reports a subject whose messages stopped coming before all
// that were pending had been read.
var errStalled = errors.New("stalled")

// readSubject reads in order up to limit (0: all) of the messages stream
// holds on subj, handing each to each, and returns how many there were to
// read. An error from each ends the reading and is returned.
func (s *Store) readSubject(ctx context.Context, stream, subj string, limit int, each func(jetstream.Msg) error) (pending int, err error) {
	return s.readFrom(ctx, stream, jetstream.OrderedConsumerConfig{FilterSubjects: []string{subj}}, limit, each)
}

// readSubjectSince is readSubject from the messages stored at or after
// since (zero: all).
func (s *Store) readSubjectSince(ctx context.Context, stream, subj string, since time.Time, limit int, each func(jetstream.Msg) error) (pending int, err error) {
	cfg := jetstream.OrderedConsumerConfig{FilterSubjects: []string{subj}}
	if !since.IsZero() {
		cfg.DeliverPolicy, cfg.OptStartTime = jetstream.DeliverByStartTimePolicy, &since
	}
	return s.readFrom(ctx, stream, cfg, limit, each)
}

// readFrom is readSubject with the consumer's configuration: where to
// start, and which subjects.
func (s *Store) readFrom(ctx context.Context, stream string, cfg jetstream.OrderedConsumerConfig, limit int, each func(jetstream.Msg) error) (pending int, err error) {
	cons, err := s.JS.OrderedConsumer(ctx, stream, cfg)
	if err != nil {
		return 0, err
	}
	info, err := cons.Info(ctx)
	if err != nil {
		return 0, err
	}
	pending = int(info.NumPending)
	if limit > 0 {
		pending = min(pending, limit)
	}
	for read := 0; read < pending; {
		batch, err := cons.Fetch(min(pending-read, 256), jetstream.FetchMaxWait(5*time.Second))
		if err != nil {
			return pending, err
		}
		got := 0
		for m := range batch.Messages() {
			got++
			if err := each(m); err != nil {
				return pending, err
			}
		}
		if err := batch.Error(); err != nil {
			return pending, err
		}
		if got == 0 {
			return pending, fmt.Errorf("%w after %d of %d messages", errStalled, read, pending)
		}
		read += got
	}
	return pending, nil
}
