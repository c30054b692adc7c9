package meta

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/quarrysearch/quarry/internal/subject"
)

// RecordedQueries returns up to limit (0: all) search requests brokers
// recorded for index, oldest first, as JSON.
func (s *Store) RecordedQueries(ctx context.Context, index string, limit int) ([]json.RawMessage, error) {
	cons, err := s.JS.OrderedConsumer(ctx, subject.QueriesStream, jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{subject.QueriesPrefix + "." + index}})
	if err != nil {
		return nil, fmt.Errorf("read recorded queries of %s: %w", index, err)
	}
	info, err := cons.Info(ctx)
	if err != nil {
		return nil, fmt.Errorf("read recorded queries of %s: %w", index, err)
	}
	want := int(info.NumPending)
	if limit > 0 {
		want = min(want, limit)
	}
	var out []json.RawMessage
	for len(out) < want {
		batch, err := cons.Fetch(min(want-len(out), 1000), jetstream.FetchMaxWait(5*time.Second))
		if err != nil {
			return out, fmt.Errorf("read recorded queries of %s: %w", index, err)
		}
		got := 0
		for m := range batch.Messages() {
			out = append(out, json.RawMessage(m.Data()))
			got++
		}
		if got == 0 {
			break
		}
	}
	return out, nil
}
