package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/quarrysearch/quarry/api"
	"github.com/quarrysearch/quarry/httpapi"
	"github.com/quarrysearch/quarry/internal/subject"
	"github.com/quarrysearch/quarry/internal/wasmtest"
)

// TestDeletedIndexLeavesNothingAtAnyDoor: team books builds an index
// over the CLI (documents, a rewriter whose config holds a secret, a
// judgement list, user events, a document the indexer rejects); it is
// deleted over HTTP and the name created again for team food; then
// neither the CLI, the HTTP API (the console's), nor the client over
// NATS shows anything of books' (issue 35; node's
// TestDeletedIndexLeavesNothing checks what the brokers run).
func TestDeletedIndexLeavesNothingAtAnyDoor(t *testing.T) {
	t.Parallel()
	url, c := cluster(t, true)
	nf := []string{"--nats", url}
	ctx := context.Background()
	srv := httptest.NewServer(httpapi.Handler(c, httpapi.Options{}))
	defer srv.Close()
	dir := t.TempDir()
	write := func(name, body string) string { return fileIn(t, dir, name, []byte(body)) }
	run := cliWith(t, nf...)
	do := func(method, path, body string) (int, string) {
		t.Helper()
		req, err := http.NewRequest(method, srv.URL+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}

	// Books' index, over the CLI.
	run(0, "index", "create", "tmpx", "--shards", "1", "--team", "books")
	var docs strings.Builder
	for i := range 10 {
		fmt.Fprintf(&docs, `{"id":"b%d","text":"noodles from books %d"}`+"\n", i, i)
	}
	run(0, "ingest", "tmpx", write("docs.ndjson", docs.String()), "--wait", "--quiet")
	wasm := write("secretive.wasm", string(wasmtest.WAT(t, burgerWAT)))
	cfg := write("config.json", `{"api_key":"BOOKS-SECRET"}`)
	run(0, "plugin", "push", "tmpx", "secretive", wasm, "--kind", "rewriter", "--config", cfg, "--activate")
	run(0, "judgements", "push", "tmpx", "golden", write("golden.ndjson", `{"q":"noodles","ratings":{"b1":3}}`+"\n"))
	r, err := c.Search(ctx, "tmpx", &api.SearchRequest{Q: "noodles"})
	if err != nil {
		t.Fatal(err)
	}
	ev := fmt.Sprintf(`{"action_name":"click","query_id":%q,"user_query":"noodles","event_attributes":{"object":{"object_id":"b1"},"position":{"ordinal":1}}}`, r.QueryID)
	run(0, "events", "tmpx", write("events.ndjson", ev+"\n"))
	if out := run(0, "plugin", "ls", "tmpx"); !strings.Contains(out, "secretive") {
		t.Fatalf("books' plugin is not there to begin with:\n%s", out)
	}
	// A document the shard cannot apply, written past the client:
	// recorded as rejected.
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := js.Publish(ctx, subject.Doc("tmpx", 0, "booksjunk"), []byte(`{"id":"booksjunk",`)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, "books' rejected document listed", func() (bool, string) {
		out := run(0, "index", "rejected", "tmpx")
		return strings.Contains(out, "booksjunk"), out
	})

	// Deleted over HTTP; the name created again, for food, over HTTP.
	if code, body := do("DELETE", "/v1/indexes/tmpx", ""); code != http.StatusNoContent {
		t.Fatalf("DELETE: %d %s", code, body)
	}
	if code, body := do("POST", "/v1/indexes/tmpx", `{"shards":2,"team":"food"}`); code != http.StatusCreated || !strings.Contains(body, `"team":"food"`) {
		t.Fatalf("create for food: %d %s", code, body)
	}

	// Nothing of books' at any door.
	leaked := func(where, text string) {
		t.Helper()
		for _, s := range []string{"BOOKS-SECRET", "secretive", "golden", "books"} {
			if strings.Contains(text, s) {
				t.Errorf("%s shows %q of the deleted index:\n%s", where, s, text)
			}
		}
	}
	for _, args := range [][]string{{"plugin", "ls", "tmpx"}, {"judgements", "ls", "tmpx"}, {"plugin", "events", "tmpx"}, {"pipeline", "show", "tmpx"}, {"index", "ls"}, {"index", "rejected", "tmpx"}} {
		leaked("quarry "+strings.Join(args, " "), run(0, args...))
	}
	for _, path := range []string{"/plugins", "/pipeline", "/pipeline/history", "/judgements", "/events", "/gate", "/info", "", "/documents/b1", "/rejected"} {
		code, body := do("GET", "/v1/indexes/tmpx"+path, "")
		if code >= 500 {
			t.Errorf("GET /v1/indexes/tmpx%s: %d %s", path, code, body)
		}
		leaked("GET /v1/indexes/tmpx"+path, body)
	}
	// The record of books' rejected document is gone from the stream,
	// not only from what is listed.
	if st, err := js.Stream(ctx, subject.RejectedStream); err != nil {
		t.Error(err)
	} else if m, err := st.GetLastMsgForSubject(ctx, subject.Rejected("tmpx")); !errors.Is(err, jetstream.ErrMsgNotFound) {
		if err == nil {
			err = fmt.Errorf("%s", m.Data)
		}
		t.Errorf("a record of books' rejected document is left: %v", err)
	}
	if l, err := c.Plugins(ctx, "tmpx"); err != nil || len(l.Versions) != 0 {
		raw, _ := json.Marshal(l)
		t.Errorf("client.Plugins: %v %s", err, raw)
	}
	if r, err := c.Search(ctx, "tmpx", &api.SearchRequest{Q: "noodles"}); err != nil || r.Total != 0 || len(r.Pipeline) != 0 {
		t.Errorf("a search of food's new index: %v %+v", err, r)
	}
}
