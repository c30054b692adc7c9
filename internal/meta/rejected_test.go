package meta

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/quarrysearch/quarry/api"
	"github.com/quarrysearch/quarry/internal/natstest"
	"github.com/quarrysearch/quarry/internal/subject"
	"github.com/quarrysearch/quarry/internal/testwait"
)

// The records of rejected documents are read one per shard and stream
// sequence (a replay after the duplicate window records a document
// again), by sequence, the last limit of them.
func TestDedupeRejected(t *testing.T) {
	t.Parallel()
	rec := func(shard int, seq uint64, reason string) api.RejectedDocument {
		return api.RejectedDocument{Index: "i", Shard: shard, Seq: seq, ID: fmt.Sprint("d", seq), Reason: reason}
	}
	// key is how a test names a record: shard/seq/reason.
	key := func(d api.RejectedDocument) string { return fmt.Sprintf("%d/%d/%s", d.Shard, d.Seq, d.Reason) }
	cases := []struct {
		name  string
		in    []api.RejectedDocument
		limit int
		want  []string
	}{
		{"none", nil, 0, []string{}},
		{"one", []api.RejectedDocument{rec(0, 5, "a")}, 0, []string{"0/5/a"}},
		{"a replay recorded again: the first kept", []api.RejectedDocument{rec(0, 5, "a"), rec(1, 7, "b"), rec(0, 5, "again"), rec(1, 7, "again")}, 0, []string{"0/5/a", "1/7/b"}},
		{"shards recorded out of order: by sequence", []api.RejectedDocument{rec(1, 9, "c"), rec(0, 3, "a"), rec(2, 6, "b")}, 0, []string{"0/3/a", "2/6/b", "1/9/c"}},
		{"the same sequence on two shards is two records", []api.RejectedDocument{rec(1, 4, "b"), rec(0, 4, "a")}, 0, []string{"0/4/a", "1/4/b"}},
		{"limit keeps the newest", []api.RejectedDocument{rec(0, 1, "a"), rec(0, 2, "b"), rec(0, 2, "b2"), rec(0, 3, "c")}, 2, []string{"0/2/b", "0/3/c"}},
		{"limit over the count", []api.RejectedDocument{rec(0, 1, "a")}, 10, []string{"0/1/a"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := []string{}
			for _, d := range dedupeRejected(tc.in, tc.limit) {
				got = append(got, key(d))
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

// cut keeps a record's id and reason within their bound, on a rune
// boundary.
func TestCut(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		s    string
		n    int
		want string
	}{
		{"short", 10, "short"},
		{"exactly10!", 10, "exactly10!"},
		{"abcdefghijkl", 10, "abcdefg…"},
		{"ééééé", 8, "éé…"}, // é is 2 bytes: 4+3 fits, 6+3 does not
	} {
		got := cut(tc.s, tc.n)
		if got != tc.want || len(got) > tc.n || !utf8.ValidString(got) {
			t.Errorf("cut(%q, %d) = %q, want %q", tc.s, tc.n, got, tc.want)
		}
	}
}

// TestRejectedDocuments: a RejectRecorder publishes records that
// RejectedDocuments reads back, each once (a record published again
// within the duplicate window is stored once; one stored again later is
// read once); a record left of an index deleted and created again is not
// the new one's; DeleteIndex removes them; a full queue drops records
// and counts them, without waiting.
func TestRejectedDocuments(t *testing.T) {
	t.Parallel()
	ns := natstest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	st, err := Open(ctx, ns.JS, Options{})
	if err != nil {
		t.Fatal(err)
	}
	def, err := st.CreateIndex(ctx, api.IndexDefinition{Name: "rj", Shards: 2})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.RejectedDocuments(ctx, "nosuch", 0); !errors.Is(err, api.ErrNotFound) {
		t.Errorf("an unknown index: %v, want not found", err)
	}
	if got, err := st.RejectedDocuments(ctx, "rj", 0); err != nil || len(got) != 0 {
		t.Fatalf("none yet: %+v %v", got, err)
	}
	rec := st.NewRejectRecorder(nil)
	rec.Start()
	stored := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	d := func(shard int, seq uint64, id string) api.RejectedDocument {
		return api.RejectedDocument{Index: "rj", Shard: shard, Seq: seq, ID: id, Reason: "more than 5 fields (distinct field paths; field 6 starts at byte 40), over the index's limit of 5 (documents.max_fields)", Time: stored}
	}
	rec.Record(def.Created, d(1, 9, "late"))
	rec.Record(def.Created, d(0, 4, "early"))
	rec.Record(def.Created, d(0, 4, "early")) // a replay, within the window
	long := d(1, 11, strings.Repeat("x", 3000))
	long.Reason = strings.Repeat("why ", 1000)
	rec.Record(def.Created, long)
	testwait.UntilErr(t, 30*time.Second, "3 records stored", func() error {
		if n, _, _ := rec.Counts(); n != 4 {
			return fmt.Errorf("%d published", n)
		}
		return nil
	})
	info, err := st.Rejected.Info(ctx)
	if err != nil || info.State.Msgs != 3 {
		t.Fatalf("the stream holds %d records (%v), want 3: the duplicate stored once", info.State.Msgs, err)
	}
	// A replay after the duplicate window: stored again, read once.
	body, _ := json.Marshal(d(0, 4, "early"))
	msg := nats.NewMsg(subject.Rejected("rj"))
	msg.Header.Set(subject.HeaderIndexCreated, strconv.FormatInt(def.Created.UnixMilli(), 10))
	msg.Data = body
	if _, err := st.JS.PublishMsg(ctx, msg); err != nil {
		t.Fatal(err)
	}
	// A record of an earlier index of the name, published late.
	old := nats.NewMsg(subject.Rejected("rj"))
	old.Header.Set(subject.HeaderIndexCreated, "1")
	old.Data, _ = json.Marshal(d(0, 2, "of-the-old-index"))
	if _, err := st.JS.PublishMsg(ctx, old); err != nil {
		t.Fatal(err)
	}
	got, err := st.RejectedDocuments(ctx, "rj", 0)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, g := range got {
		ids = append(ids, g.ID)
	}
	if len(got) != 3 || got[0].ID != "early" || got[0].Shard != 0 || got[0].Seq != 4 || !got[0].Time.Equal(stored) ||
		!strings.Contains(got[0].Reason, "documents.max_fields") || got[1].ID != "late" {
		t.Fatalf("read %q: %+v", ids, got)
	}
	if l := got[2]; len(l.ID) > api.MaxRejectedReason || len(l.Reason) > api.MaxRejectedReason || !strings.HasSuffix(l.Reason, "…") {
		t.Errorf("a long id and reason: %d and %d bytes, want them cut to %d", len(l.ID), len(l.Reason), api.MaxRejectedReason)
	}
	if last, err := st.RejectedDocuments(ctx, "rj", 1); err != nil || len(last) != 1 || last[0].Seq != 11 {
		t.Errorf("the last one: %+v %v", last, err)
	}

	// They go with the index.
	if err := st.DeleteIndex(ctx, "rj"); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Rejected.GetLastMsgForSubject(ctx, subject.Rejected("rj")); !errors.Is(err, jetstream.ErrMsgNotFound) {
		t.Errorf("a record is left after the index was deleted: %v", err)
	}
	if _, err := st.CreateIndex(ctx, api.IndexDefinition{Name: "rj", Shards: 1}); err != nil {
		t.Fatal(err)
	}
	if got, err := st.RejectedDocuments(ctx, "rj", 0); err != nil || len(got) != 0 {
		t.Errorf("the new index of the name: %+v %v", got, err)
	}

	// A recorder whose queue is full drops, at once, and counts.
	stuck := st.NewRejectRecorder(nil) // never started: nothing drains it
	start := time.Now()
	for i := range RejectQueue + 10 {
		stuck.Record(def.Created, d(0, uint64(i+1), "x"))
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("recording took %s", took)
	}
	if _, dropped, _ := stuck.Counts(); dropped != 10 {
		t.Errorf("%d dropped, want 10", dropped)
	}
	stuck.Close()
	if _, dropped, _ := stuck.Counts(); dropped != RejectQueue+10 {
		t.Errorf("%d dropped once closed unstarted, want %d", dropped, RejectQueue+10)
	}
	rec.Close()
	rec.Record(def.Created, d(0, 99, "after close"))
	if _, dropped, _ := rec.Counts(); dropped != 1 {
		t.Errorf("a record after Close: %d dropped, want 1", dropped)
	}
}
