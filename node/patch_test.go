package node

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/quarrysearch/quarry/api"
	"github.com/quarrysearch/quarry/client"
)

// TestPatchNoLostUpdate: two writers patch different members of one
// document at the same time, 40 times each; every patch of each lands
// (a read-apply-write without the stream's expected last sequence loses
// some of one writer's to the other's stale copy).
func TestPatchNoLostUpdate(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	n := startConfig(t, Config{}) // the stream is the document's truth: no role needed
	storeIndex(t, n, api.IndexDefinition{Name: "pc", Shards: 2})
	c := n.Client()
	if _, err := c.Put(ctx, "pc", []byte(`{"id":"d","a":0,"b":0,"title":"Pad Thai"}`)); err != nil {
		t.Fatal(err)
	}
	const rounds = 40
	var wg sync.WaitGroup
	errs := make(chan error, 2)
	for _, member := range []string{"a", "b"} {
		wg.Go(func() {
			for i := 1; i <= rounds; i++ {
				if _, err := c.Patch(ctx, "pc", "d", fmt.Appendf(nil, `{%q:%d,"by_%s":true}`, member, i, member), client.PatchOptions{}); err != nil {
					errs <- fmt.Errorf("%s's patch %d: %w", member, i, err)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	doc, err := c.Get(ctx, "pc", "d")
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(doc.Source, &got); err != nil {
		t.Fatal(err)
	}
	if got["a"] != float64(rounds) || got["b"] != float64(rounds) || got["title"] != "Pad Thai" || got["by_a"] != true || got["by_b"] != true {
		t.Fatalf("after %d patches of a and of b at once: %s", rounds, doc.Source)
	}
}

// TestPatchDocument: a merge patch over NATS and HTTP: members set,
// merged and removed in place; If-Match (the ETag of a GET) patches that
// version only; what a patch may not do is refused and changes nothing.
func TestPatchDocument(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	n := startConfig(t, Config{})
	storeIndex(t, n, api.IndexDefinition{Name: "pd", Shards: 3, Documents: api.DocumentLimits{MaxFields: 8}})
	c := n.Client()
	seq, err := c.Put(ctx, "pd", []byte(`{"id":"d1","name":"Pad Thai","price":9.5,"nested":{"x":1,"y":2},"tags":["a"]}`))
	if err != nil {
		t.Fatal(err)
	}
	// Over NATS.
	seq2, err := c.Patch(ctx, "pd", "d1", []byte(`{"price":8,"nested":{"y":null,"z":3},"tags":null,"new":"yes"}`), client.PatchOptions{IfSeq: seq})
	if err != nil || seq2 <= seq {
		t.Fatalf("patch at its version: %d %v", seq2, err)
	}
	want := `{"id":"d1","name":"Pad Thai","price":8,"nested":{"x":1,"z":3},"new":"yes"}`
	if doc, err := c.Get(ctx, "pd", "d1"); err != nil || string(doc.Source) != want || doc.Seq != seq2 {
		t.Fatalf("after the patch: %s (seq %d) %v, want %s at %d", doc.Source, doc.Seq, err, want, seq2)
	}
	if _, err := c.Patch(ctx, "pd", "d1", []byte(`{"price":1}`), client.PatchOptions{IfSeq: seq}); !errors.Is(err, api.ErrConflict) || !strings.Contains(err.Error(), strconv.FormatUint(seq2, 10)) {
		t.Fatalf("patch of a version since replaced: %v, want a conflict naming sequence %d", err, seq2)
	}
	refused := []struct {
		name, id, patch string
		is              error
		msg             string
	}{
		{"not an object", "d1", `[1]`, api.ErrBadRequest, "must be a JSON object"},
		{"not JSON", "d1", `{"price":`, api.ErrBadRequest, "not JSON"},
		{"a member twice", "d1", `{"price":1,"price":2}`, api.ErrBadRequest, `"price" given twice`},
		{"another id", "d1", `{"id":"d2"}`, api.ErrBadRequest, "cannot change a document's id"},
		{"over the index's fields", "d1", `{"f1":1,"f2":2,"f3":3,"f4":4}`, &api.Error{Code: api.CodeDocumentTooComplex}, "over the index's limit of 8"},
		{"a missing document", "nope", `{"a":1}`, api.ErrNotFound, `"nope" does not exist`},
	}
	for _, r := range refused {
		if _, err := c.Patch(ctx, "pd", r.id, []byte(r.patch), client.PatchOptions{}); !errors.Is(err, r.is) || !strings.Contains(err.Error(), r.msg) {
			t.Errorf("%s: %v, want %v saying %q", r.name, err, r.is, r.msg)
		}
	}
	if doc, _ := c.Get(ctx, "pd", "d1"); doc == nil || doc.Seq != seq2 {
		t.Fatalf("a refused patch changed the document: %+v", doc)
	}

	// Over HTTP: GET's ETag is what If-Match takes.
	url := "http://" + n.HTTPAddr + "/v1/indexes/pd/documents/d1"
	do := func(t *testing.T, method, body string, hdr ...string) (int, http.Header, string) {
		t.Helper()
		return httpRequest(t, method, url, body, hdr...)
	}
	code, hdr, _ := do(t, "GET", "")
	etag := hdr.Get("ETag")
	if code != 200 || etag != `"`+strconv.FormatUint(seq2, 10)+`"` {
		t.Fatalf("GET: %d ETag %q, want %d", code, etag, seq2)
	}
	code, hdr, body := do(t, "PATCH", `{"name":"Pad See Ew"}`, "Content-Type", "application/merge-patch+json", "If-Match", etag)
	if code != 200 || !strings.Contains(body, `"seq"`) || hdr.Get("ETag") == etag {
		t.Fatalf("PATCH with If-Match: %d %s %v", code, body, hdr)
	}
	if code, _, body := do(t, "PATCH", `{"name":"Khao Soi"}`, "Content-Type", "application/json", "If-Match", etag); code != 409 || !strings.Contains(body, "conflict") {
		t.Fatalf("PATCH with a stale If-Match: %d %s, want 409", code, body)
	}
	if code, _, body := do(t, "PATCH", `{"name":"Khao Soi"}`, "Content-Type", "application/json", "If-Match", "W/xyz"); code != 400 || !strings.Contains(body, "If-Match") {
		t.Fatalf("PATCH with a bad If-Match: %d %s, want 400", code, body)
	}
	if code, _, _ := do(t, "PATCH", `{"name":"Khao Soi"}`, "Content-Type", "text/plain"); code != 415 {
		t.Fatalf("PATCH as text/plain: %d, want 415", code)
	}
	if _, _, body := do(t, "GET", ""); !strings.Contains(body, `"name":"Pad See Ew"`) {
		t.Fatalf("after the HTTP patches: %s", body)
	}
}
