package shard

import (
	"context"
	"errors"
	"testing"

	"github.com/quarrysearch/quarry/internal/corpus"
	"github.com/quarrysearch/quarry/internal/wire"
)

// A search under WithCheckpoint calls its checkpoint every CheckpointEvery
// hits it collects and documents whose fields it loads, gives the same
// hits as without, and stops with the checkpoint's error.
func TestCheckpoint(t *testing.T) {
	g := corpus.New(corpus.Config{Seed: 7, BodyMax: 60})
	docs := g.Records(600)
	r := loadReplicas(t, 1, corpus.Mapping("bm25"), docs)[0]
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		req  wire.ShardRequest
		min  int // checkpoints at least
	}{
		{"every document, by score", wire.ShardRequest{Query: []byte(`{"match_all":{}}`), K: 10}, 600 / CheckpointEvery},
		{"every document with its fields", wire.ShardRequest{Query: []byte(`{"match_all":{}}`), K: 600, Fields: []string{"*"}}, 2 * 600 / CheckpointEvery},
		{"sorted", wire.ShardRequest{Query: []byte(`{"match_all":{}}`), K: 5, Sort: []string{"-year", "_id"}}, 600 / CheckpointEvery},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want, err := r.Search(ctx, &tc.req)
			if err != nil {
				t.Fatal(err)
			}
			calls := 0
			got, err := r.Search(WithCheckpoint(ctx, func(context.Context) error { calls++; return nil }), &tc.req)
			if err != nil {
				t.Fatal(err)
			}
			if calls < tc.min {
				t.Errorf("%d checkpoints, want at least %d", calls, tc.min)
			}
			if len(got.Hits) != len(want.Hits) || got.Total != want.Total {
				t.Fatalf("%d hits of %d under a checkpoint, want %d of %d", len(got.Hits), got.Total, len(want.Hits), want.Total)
			}
			for i := range want.Hits {
				if got.Hits[i].ID != want.Hits[i].ID || got.Hits[i].Score != want.Hits[i].Score || len(got.Hits[i].Fields) != len(want.Hits[i].Fields) {
					t.Fatalf("hit %d: %+v under a checkpoint, want %+v", i, got.Hits[i], want.Hits[i])
				}
			}
			stop := errors.New("stop here")
			calls = 0
			_, err = r.Search(WithCheckpoint(ctx, func(context.Context) error { calls++; return stop }), &tc.req)
			if !errors.Is(err, stop) || calls != 1 {
				t.Fatalf("a checkpoint's error: %v after %d calls, want %v after 1", err, calls, stop)
			}
		})
	}
}
