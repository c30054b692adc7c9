package node

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/quarrysearch/quarry/api"
	"github.com/quarrysearch/quarry/broker"
	"github.com/quarrysearch/quarry/indexer"
	"github.com/quarrysearch/quarry/internal/subject"
	"github.com/quarrysearch/quarry/internal/testwait"
	"github.com/quarrysearch/quarry/searcher"
)

// TestRejectedDocumentsListed (issue 35, "acknowledged means
// searchable"): documents the stream acknowledged that their shards
// cannot apply (written straight into JetStream, past the client's
// checks) are listed by client.RejectedDocuments and GET
// /v1/indexes/{index}/rejected with their ids, shards, stream sequences
// and a reason naming the limit; once the index is deleted and created
// again, nothing is. Before, they were only counted and logged.
func TestRejectedDocumentsListed(t *testing.T) {
	t.Parallel()
	n := startConfig(t, Config{Indexer: &indexer.Config{SnapshotInterval: -1}, Searcher: &searcher.Config{}, Broker: &broker.Config{}})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c := n.Client()
	def, err := c.CreateIndexDef(ctx, api.IndexDefinition{Name: "rej", Shards: 2, Documents: api.DocumentLimits{MaxFields: 5, MaxDepth: 3}})
	if err != nil {
		t.Fatal(err)
	}
	docs := []struct {
		id, doc, reason string
		wrongShard      bool // published on the other shard's subject
	}{
		{"wide", `{"id":"wide","f1":1,"f2":2,"f3":3,"f4":4,"f5":5}`, "over the index's limit of 5 (documents.max_fields)", false},
		{"good", `{"id":"good","name":"kept"}`, "", false},
		{"deep", `{"id":"deep","a":{"b":[[1]]}}`, "over the index's limit of 3 (documents.max_depth)", false},
		{"junk", `{"id":"junk",`, "malformed: invalid JSON", false},
		{"att", `{"id":"att","_id":"good"}`, "_id", false},
		// What a client with a stale definition (the index deleted and
		// made again with other shards) would write: kept out of the
		// shard, where it would live beside the right shard's copy.
		{"misplaced", `{"id":"misplaced","name":"lost"}`, "written for another layout of the index", true},
	}
	want := map[uint64]struct {
		id, reason string
		shard      int
	}{}
	var wantSeqs []uint64
	for _, d := range docs { // straight into the stream, past the client
		sh := subject.ShardOf(d.id, def.Shards)
		if d.wrongShard {
			sh = 1 - sh
		}
		ack, err := n.store.JS.Publish(ctx, subject.Doc(def.Name, sh, d.id), []byte(d.doc))
		if err != nil {
			t.Fatal(err)
		}
		if d.reason != "" {
			want[ack.Sequence] = struct {
				id, reason string
				shard      int
			}{d.id, d.reason, sh}
			wantSeqs = append(wantSeqs, ack.Sequence)
		}
	}
	var got []api.RejectedDocument
	testwait.UntilErr(t, 30*time.Second, fmt.Sprintf("%d rejected documents listed", len(want)), func() error {
		got, err = c.RejectedDocuments(ctx, "rej", 0)
		if err == nil && len(got) != len(want) {
			err = fmt.Errorf("%d listed", len(got))
		}
		return err
	})
	var seqs []uint64
	for _, g := range got {
		seqs = append(seqs, g.Seq)
		w := want[g.Seq]
		if g.Index != "rej" || g.ID != w.id || g.Shard != w.shard || !strings.Contains(g.Reason, w.reason) || time.Since(g.Time) > time.Minute {
			t.Errorf("listed %+v, want id %q on shard %d, a reason saying %q", g, w.id, w.shard, w.reason)
		}
	}
	if !slices.Equal(seqs, wantSeqs) {
		t.Errorf("listed sequences %v, want %v, oldest first", seqs, wantSeqs)
	}
	waitIndexed(t, c, "rej", 1)
	if got := counter(t, n, "quarry_indexer_rejection_records_total", map[string]string{"result": "recorded"}); got != float64(len(want)) {
		t.Errorf("quarry_indexer_rejection_records_total{result=recorded} %g, want %d", got, len(want))
	}
	if info, err := n.store.Rejected.Info(ctx); err != nil || info.State.Msgs != uint64(len(want)) {
		t.Errorf("the stream holds %d records (%v), want %d: one each, from the indexer alone", info.State.Msgs, err, len(want))
	}

	// The same over HTTP, and the last one with ?limit=1.
	code, body := httpDo(t, n, "GET", "/v1/indexes/rej/rejected", "")
	var overHTTP []api.RejectedDocument
	if err := json.Unmarshal(body, &overHTTP); code != 200 || err != nil || len(overHTTP) != len(got) {
		t.Fatalf("GET /v1/indexes/rej/rejected: %d %s (%v)", code, body, err)
	}
	for i := range got {
		if a, b := got[i], overHTTP[i]; a.Seq != b.Seq || a.ID != b.ID || a.Shard != b.Shard || a.Reason != b.Reason || !a.Time.Equal(b.Time) {
			t.Errorf("over HTTP %+v, from the client %+v", b, a)
		}
	}
	code, body = httpDo(t, n, "GET", "/v1/indexes/rej/rejected?limit=1", "")
	if code != 200 || !strings.Contains(string(body), fmt.Sprintf(`"seq":%d`, wantSeqs[len(wantSeqs)-1])) || strings.Count(string(body), `"seq"`) != 1 {
		t.Errorf("?limit=1: %d %s", code, body)
	}
	for path, want := range map[string]int{"/v1/indexes/rej/rejected?limit=x": 400, "/v1/indexes/nosuch/rejected": 404} {
		if code, body := httpDo(t, n, "GET", path, ""); code != want {
			t.Errorf("GET %s: %d %s, want %d", path, code, body, want)
		}
	}

	// Deleted and created again: nothing of the first is listed.
	if err := c.DeleteIndex(ctx, "rej"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.CreateIndexDef(ctx, api.IndexDefinition{Name: "rej", Shards: 1}); err != nil {
		t.Fatal(err)
	}
	if got, err := c.RejectedDocuments(ctx, "rej", 0); err != nil || len(got) != 0 {
		t.Errorf("after the index was created again: %+v %v", got, err)
	}
	if code, body := httpDo(t, n, "GET", "/v1/indexes/rej/rejected", ""); code != 200 || strings.TrimSpace(string(body)) != "[]" {
		t.Errorf("GET after the index was created again: %d %s", code, body)
	}
}
