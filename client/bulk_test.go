package client_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/quarrysearch/quarry/api"
	"github.com/quarrysearch/quarry/client"
	"github.com/quarrysearch/quarry/internal/embednats"
	"github.com/quarrysearch/quarry/internal/meta"
	"github.com/quarrysearch/quarry/internal/subject"
)

// versions writes lines documents over ids ids (line i: id "d<i mod
// ids>", version i), so that every id comes back in later batches.
func versions(lines, ids int) *bytes.Buffer {
	var b bytes.Buffer
	for i := range lines {
		fmt.Fprintf(&b, `{"id":"d%d","v":%d}`+"\n", i%ids, i)
	}
	return &b
}

// startServer runs an embedded server (with the nats-server configuration
// conf, if any) and a client on it, with index idx of shards shards.
func startServer(t *testing.T, conf string) (*client.Client, *meta.Store, *embednats.Server) {
	t.Helper()
	cfg := embednats.Config{StoreDir: t.TempDir(), NoListen: true}
	if conf != "" {
		cfg.ConfigFile = filepath.Join(t.TempDir(), "nats.conf")
		if err := os.WriteFile(cfg.ConfigFile, []byte(conf), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	s, err := embednats.Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Shutdown)
	nc, err := s.Connect("test")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	ctx := context.Background()
	// Quarry's resources and the index as `quarry init` and the admin
	// service would make them: the client makes neither.
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	st, err := meta.Open(ctx, js, meta.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.CreateIndex(ctx, api.IndexDefinition{Name: "v", Shards: 3}); err != nil {
		t.Fatal(err)
	}
	c, err := client.New(ctx, nc, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return c, st, s
}

// checkLatest checks that the stream keeps, for each of ids ids of index, the last
// version of lines lines, and reports how many stored messages came in
// atomic batches.
func checkLatest(t *testing.T, st *meta.Store, index string, lines, ids int) (batched int) {
	t.Helper()
	ctx := context.Background()
	for id := range ids {
		want := id + (lines-1-id)/ids*ids
		key := fmt.Sprintf("d%d", id)
		m, err := st.Docs.GetLastMsgForSubject(ctx, subject.Doc(index, subject.ShardOf(key, 3), key))
		if err != nil {
			t.Fatalf("%s: %v", key, err)
		}
		var doc struct{ V int }
		if err := json.Unmarshal(m.Data, &doc); err != nil || doc.V != want {
			t.Fatalf("%s: stored %s, want version %d", key, m.Data, want)
		}
		if m.Header.Get("Nats-Batch-Id") != "" {
			batched++
		}
	}
	return batched
}

// A bulk ingest goes to the stream in atomic batches, one acknowledgement
// (and, syncing always, one fsync) each; every line is stored, in order:
// the last line of an id wins, within a batch and across batches.
func TestBulkBatches(t *testing.T) {
	c, st, _ := startServer(t, "")
	if !st.Docs.CachedInfo().Config.AllowAtomicPublish {
		t.Fatal("QUARRY_DOCS does not take atomic batches")
	}
	const lines, ids = 3000, 700
	for _, batch := range []int{0, 1, 7} {
		before, err := st.Docs.Info(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		res, err := c.Bulk(context.Background(), "v", versions(lines, ids), client.BulkOptions{NoSnapshot: true, Batch: batch, Window: 64})
		if err != nil || res.Stored != lines || res.Failed != 0 || res.LastSeq != before.State.LastSeq+lines {
			t.Fatalf("batch %d: %+v, %v; want %d stored, the last at sequence %d", batch, res, err, lines, before.State.LastSeq+lines)
		}
		batched := checkLatest(t, st, "v", lines, ids)
		if (batched == ids) != (batch != 1) {
			t.Errorf("batch %d: %d of %d ids' last messages came in atomic batches", batch, batched, ids)
		}
	}
}

// A batch the stream refuses (here: over the server's cap of 50 messages a
// batch; more open batches than it allows at once is the usual reason) is
// published again a document at a time, in order, and so is the rest of
// the ingest: every line is stored, and a line that a later line of the
// same id, in a batch that was stored, supersedes is not published again
// over it.
func TestBulkBatchRefused(t *testing.T) {
	c, st, _ := startServer(t, "jetstream { limits { batch { max_msgs: 50 } } }\n")
	// Lines 0-99 (ids d0-d99), small, fill a batch of 100: refused.
	// Lines 100-104 (d0-d4) are large (1 MB), so their batch closes at
	// 4 MiB, after five: stored. Lines 105-129 (d5-d29), small, are the
	// last batch: stored. Then lines 30-99 are published again, one by
	// one, and lines 0-29 are not: later lines of theirs are stored.
	var in bytes.Buffer
	pad := strings.Repeat("x", 1_000_000)
	for i := range 130 {
		body := ""
		if i >= 100 && i < 105 {
			body = pad
		}
		fmt.Fprintf(&in, `{"id":"d%d","v":%d,"pad":"%s"}`+"\n", i%100, i, body)
	}
	res, err := c.Bulk(context.Background(), "v", &in, client.BulkOptions{NoSnapshot: true, Batch: 100})
	if err != nil || res.Stored != 130 || res.Failed != 0 {
		t.Fatalf("%+v, %v; want 130 stored", res, err)
	}
	if batched := checkLatest(t, st, "v", 130, 100); batched != 30 {
		t.Errorf("%d ids' last messages came in atomic batches, want 30 (d0-d29)", batched)
	}
	if want := uint64(5 + 25 + 70); res.LastSeq != want {
		t.Errorf("%d messages published, want %d", res.LastSeq, want)
	}
}

// A stream that no longer takes atomic batches (the client read its
// configuration before the change) refuses each one: the documents are
// published one at a time and all stored.
func TestBulkBatchesDisabled(t *testing.T) {
	c, st, _ := startServer(t, "")
	if _, err := c.Indexes(context.Background()); err != nil { // the client reads the stream's configuration
		t.Fatal(err)
	}
	cfg := st.Docs.CachedInfo().Config
	cfg.AllowAtomicPublish = false
	if _, err := st.JS.UpdateStream(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	const lines, ids = 1000, 1000
	res, err := c.Bulk(context.Background(), "v", versions(lines, ids), client.BulkOptions{NoSnapshot: true})
	if err != nil || res.Stored != lines || res.Failed != 0 {
		t.Fatalf("%+v, %v; want %d stored", res, err, lines)
	}
	if batched := checkLatest(t, st, "v", lines, ids); batched != 0 {
		t.Errorf("%d documents stored in atomic batches by a stream that takes none", batched)
	}
}

// TestBulkFormats: a JSON array of documents and Elasticsearch's bulk
// action lines go in like NDJSON (the stream keeps each document, an
// action's _id added to a document without one, a delete's tombstone),
// with each bad entry refused by its line or element, in batches and one
// by one.
func TestBulkFormats(t *testing.T) {
	for _, batch := range []int{1, 1000} {
		t.Run(fmt.Sprintf("batch=%d", batch), func(t *testing.T) {
			c, st, _ := startServer(t, "")
			ctx := context.Background()
			doc := func(id string) string {
				t.Helper()
				m, err := st.Docs.GetLastMsgForSubject(ctx, subject.Doc("v", subject.ShardOf(id, 3), id))
				if err != nil {
					return "missing: " + err.Error()
				}
				if m.Header.Get(subject.HeaderOp) == subject.OpDelete {
					return "deleted"
				}
				return string(m.Data)
			}

			array := `  [{"id":"a1","n":1},
			{"id":"a2","n":2}, {"n":3}, 7, {"id":"a3"}]`
			res, err := c.Bulk(ctx, "v", strings.NewReader(array), client.BulkOptions{NoSnapshot: true, Batch: batch})
			if err != nil || res.Lines != 5 || res.Stored != 3 || res.Failed != 2 || res.Errors[0].Line != 3 || res.Errors[1].Line != 4 {
				t.Fatalf("array: %+v %v", res, err)
			}
			if got := doc("a2"); got != `{"id":"a2","n":2}` {
				t.Errorf("a2: %s", got)
			}
			if _, err := c.Bulk(ctx, "v", strings.NewReader(`[{"id":"x"},{"id":`), client.BulkOptions{NoSnapshot: true, Batch: batch}); !errors.Is(err, api.ErrBadRequest) || !strings.Contains(err.Error(), "element 2") {
				t.Errorf("an array cut short: %v", err)
			}

			es := `{"index":{"_index":"v","_id":"e1"}}
{"title":"one"}
{"create":{"_id":"e2"}}
{"id":"e2","title":"two"}
{"index":{}}
{"id":"e3","title":"three"}
{"index":{"_id":"e4"}}
{"id":"other"}
{"update":{"_id":"e1"}}
{"doc":{"title":"x"}}
{"delete":{"_id":"a1"}}
{"explode":{}}
{"index":{"_id":"e5"}}
`
			res, err = c.Bulk(ctx, "v", strings.NewReader(es), client.BulkOptions{NoSnapshot: true, Batch: batch, Format: client.FormatES})
			if err != nil || res.Lines != 8 || res.Stored != 4 || res.Failed != 4 {
				t.Fatalf("es: %+v %v", res, err)
			}
			for i, want := range []string{`differ`, `update: not taken`, `unknown action "explode"`, `no document line`} {
				if i >= len(res.Errors) || !strings.Contains(res.Errors[i].Err, want) {
					t.Errorf("es error %d: %+v, want %q", i, res.Errors, want)
				}
			}
			for id, want := range map[string]string{"e1": `{"id":"e1","title":"one"}`, "e2": `{"id":"e2","title":"two"}`, "e3": `{"id":"e3","title":"three"}`, "a1": "deleted"} {
				if got := doc(id); got != want {
					t.Errorf("%s: %s, want %s", id, got, want)
				}
			}
			if _, err := c.Bulk(ctx, "v", strings.NewReader(es), client.BulkOptions{Format: "csv"}); !errors.Is(err, api.ErrBadRequest) || !strings.Contains(err.Error(), `"csv"`) {
				t.Errorf("format csv: %v", err)
			}
		})
	}
}
