package shard

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/quarrysearch/quarry/api"
	"github.com/quarrysearch/quarry/internal/testwait"
	"github.com/quarrysearch/quarry/internal/wire"
)

// A point in time reads the documents of the moment it opened, whatever
// is written, updated, deleted or merged after; statistics too; it ends
// at its keep-alive (renewed by use), at ClosePIT and with the replica,
// and a replica holds at most MaxPITs.
func TestPointInTime(t *testing.T) {
	t.Parallel()
	r, store := followReplica(t, WriteOptions{ApplyInterval: -1, PersistNap: -1})
	r.cfg.MaxPITs = 2
	ctx := context.Background()
	last := publishDocs(t, store, 0, 20)
	if err := r.WaitSeq(ctx, last); err != nil {
		t.Fatal(err)
	}
	id, seq, err := r.OpenPIT("", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if seq != last {
		t.Fatalf("the point in time holds sequence %d, want %d", seq, last)
	}
	// After it: 5 deleted, 5 updated, 20 more, then merged to one segment.
	for i := range 5 {
		publishOne(t, store, fmt.Sprintf("d%d", i), "")
		publishOne(t, store, fmt.Sprintf("d%d", 5+i), fmt.Sprintf(`{"id":"d%d","name":"renamed"}`, 5+i))
	}
	last = publishDocs(t, store, 20, 20)
	if err := r.WaitSeq(ctx, last); err != nil {
		t.Fatal(err)
	}
	if err := r.ForceMerge(ctx); err != nil {
		t.Fatal(err)
	}

	search := func(pit string) ([]string, *wire.ShardResponse) {
		t.Helper()
		q, _ := json.Marshal(map[string]any{"match_all": map[string]any{}})
		resp, err := r.Search(ctx, &wire.ShardRequest{Query: q, K: 100, Sort: []string{"_id"}, Fields: []string{"name"}, PIT: pit, PITKeepAliveMS: 60_000})
		if err != nil {
			t.Fatalf("search (point in time %q): %v", pit, err)
		}
		var ids []string
		for _, h := range resp.Hits {
			ids = append(ids, h.ID)
		}
		return ids, resp
	}
	want := make([]string, 20)
	for i := range want {
		want[i] = fmt.Sprintf("d%d", i)
	}
	slices.Sort(want)
	got, resp := search(id)
	if !slices.Equal(got, want) || resp.Seq != seq {
		t.Fatalf("in the point in time: %v at sequence %d, want %v at %d", got, resp.Seq, want, seq)
	}
	for _, h := range resp.Hits {
		if h.ID == "d5" && h.FieldValues()["name"] != "dish 5" {
			t.Fatalf("d5 in the point in time is %s, want its name then, \"dish 5\"", h.FieldValues()["name"])
		}
	}
	if now, _ := search(""); len(now) != 35 {
		t.Fatalf("now: %d documents, want 35", len(now))
	}
	q, _ := json.Marshal(map[string]any{"match": "dish", "field": "name"})
	st, err := r.Stats(ctx, &wire.ShardRequest{Query: q, PIT: id})
	if err != nil {
		t.Fatal(err)
	}
	if st.DocCount != 20 || st.Seqs[0] != seq {
		t.Fatalf("statistics of the point in time: %d documents at %v, want 20 at %d", st.DocCount, st.Seqs, seq)
	}

	// Bounded: MaxPITs at once.
	second, _, err := r.OpenPIT("", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := r.OpenPIT("", time.Minute); !errors.Is(err, api.ErrOverloaded) {
		t.Fatalf("a third point in time with MaxPITs 2: %v, want overloaded", err)
	}
	r.ClosePIT(second)
	if _, err := r.Search(ctx, &wire.ShardRequest{Query: q, K: 1, PIT: second}); !errors.Is(err, api.ErrNotFound) {
		t.Fatalf("a closed point in time: %v, want not_found", err)
	}
	// Expiry: renewed by each use, gone after its keep-alive unused.
	short, _, err := r.OpenPIT("", 300*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	for range 4 {
		time.Sleep(150 * time.Millisecond)
		if _, err := r.Search(ctx, &wire.ShardRequest{Query: q, K: 1, PIT: short, PITKeepAliveMS: 300}); err != nil {
			t.Fatalf("a point in time used within its keep-alive: %v", err)
		}
	}
	testwait.Until(t, 5*time.Second, "the unused point in time to expire", func() bool { return r.PITs() == 1 })
	// The replica's end ends them.
	r.Close()
	if _, err := r.Search(ctx, &wire.ShardRequest{Query: q, K: 1, PIT: id}); !errors.Is(err, api.ErrNotFound) {
		t.Fatalf("a point in time of a closed replica: %v, want not_found", err)
	}
	if _, _, err := r.OpenPIT("", time.Minute); err == nil {
		t.Fatal("a closed replica opened a point in time")
	}
}

// Searches and statistics reading a point in time while it ends get
// their answer or not_found (under -race: no data race), and once it has
// ended no reader of its snapshot is handed out, even through Advanced,
// which bleve's own guard does not cover.
func TestPointInTimeEndsUnderReads(t *testing.T) {
	t.Parallel()
	r, store := followReplica(t, WriteOptions{ApplyInterval: -1, PersistNap: -1})
	ctx := context.Background()
	if err := r.WaitSeq(ctx, publishDocs(t, store, 0, 50)); err != nil {
		t.Fatal(err)
	}
	q, _ := json.Marshal(map[string]any{"match": "dish", "field": "name"})
	for round := range 20 {
		id, _, err := r.OpenPIT("", time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		errs := make(chan error, 64)
		for range 4 {
			wg.Go(func() {
				for range 8 {
					_, err := r.Stats(ctx, &wire.ShardRequest{Query: q, PIT: id})
					if err == nil {
						_, err = r.Search(ctx, &wire.ShardRequest{Query: q, K: 10, Fields: []string{"name"}, PIT: id})
					}
					if err != nil && !errors.Is(err, api.ErrNotFound) {
						errs <- err
					}
				}
			})
		}
		held, _, err := r.usePIT(id, 0)
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Duration(round%5) * time.Millisecond)
		r.ClosePIT(id)
		wg.Wait()
		// What the statistics phase reads through, past bleve's own
		// guard, gives no reader of an ended point in time.
		adv, err := held.Advanced()
		if err != nil {
			t.Fatal(err)
		}
		if rd, err := adv.Reader(); !errors.Is(err, api.ErrNotFound) {
			if rd != nil {
				rd.Close()
			}
			t.Fatalf("round %d: a reader of an ended point in time: %v, want not_found", round, err)
		}
		close(errs)
		for err := range errs {
			t.Fatalf("round %d: %v", round, err)
		}
	}
}
