package node

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/quarrysearch/quarry/api"
	"github.com/quarrysearch/quarry/client"
)

// GET /v1/indexes/{index}/documents/{id} answers the document exactly as
// written, from the stream: with no searcher or broker running, right
// after the put; 404 naming what is missing for an unknown id or index
// and a deleted document, 400 for a bad name or id.
func TestHTTPGetDocument(t *testing.T) {
	t.Parallel()
	n := startConfig(t, Config{}) // NATS and the HTTP API only: no role
	ctx := context.Background()
	c := n.Client()
	storeIndex(t, n, api.IndexDefinition{Name: "g", Shards: 3}) // no broker
	d1 := `{"id":"d1","name":"Pad Thai","price":9.5,"nested":{"x":[1,2]}}`
	seq, err := c.Put(ctx, "g", []byte(d1))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Put(ctx, "g", []byte(`{"id":"gone"}`)); err != nil {
		t.Fatal(err)
	}
	delSeq, err := c.Delete(ctx, "g", "gone")
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + n.HTTPAddr + "/v1/indexes/"
	get := func(t *testing.T, path string) (int, http.Header, string) {
		t.Helper()
		resp, err := http.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return resp.StatusCode, resp.Header, string(b)
	}

	code, hdr, body := get(t, "g/documents/d1")
	if code != 200 || body != d1 || hdr.Get("Content-Type") != "application/json" || hdr.Get("Quarry-Seq") != strconv.FormatUint(seq, 10) {
		t.Fatalf("GET d1: %d %v %q, want 200, Quarry-Seq %d and %q", code, hdr, body, seq, d1)
	}
	cases := []struct {
		name, path string
		code       int
		msg        string
	}{
		{"unknown id", "g/documents/nope", 404, `document "nope" does not exist in index "g"`},
		{"deleted", "g/documents/gone", 404, `document "gone" of index "g" was deleted (stream sequence ` + strconv.FormatUint(delSeq, 10) + ")"},
		{"unknown index", "nosuch/documents/d1", 404, `index "nosuch" does not exist`},
		{"bad index name", "Bad/documents/d1", 400, "invalid index name"},
		{"id too long", "g/documents/" + strings.Repeat("x", 513), 400, "document id must be 1-512 bytes, got 513"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			code, _, body := get(t, tc.path)
			var e struct {
				Error struct{ Code, Message string }
			}
			json.Unmarshal([]byte(body), &e)
			if code != tc.code || !strings.Contains(e.Error.Message, tc.msg) {
				t.Errorf("GET %s: %d %s, want %d and %q", tc.path, code, body, tc.code, tc.msg)
			}
		})
	}

	// Another client deletes the index and makes it again with other
	// shards: the HTTP API's cached definition is stale, and the document
	// is still found where it now lives.
	other, err := client.New(ctx, n.Conn(), client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := other.DeleteIndex(ctx, "g"); err != nil {
		t.Fatal(err)
	}
	if code, _, body := get(t, "g/documents/d1"); code != 404 || !strings.Contains(body, `index \"g\" does not exist`) {
		t.Fatalf("GET d1 of a deleted index: %d %s", code, body)
	}
	storeIndex(t, n, api.IndexDefinition{Name: "g", Shards: 5})
	d1 = `{"id":"d1","name":"Pad See Ew"}`
	if _, err := other.Put(ctx, "g", []byte(d1)); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"d1", "d1"} { // the second from the refreshed cache
		if code, _, body := get(t, "g/documents/"+id); code != 200 || body != d1 {
			t.Fatalf("GET d1 after the index was made again with 5 shards: %d %s", code, body)
		}
	}
}
