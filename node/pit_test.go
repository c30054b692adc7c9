package node

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/quarrysearch/quarry/api"
)

// A cursor walk over a point in time sees the documents of the moment it
// opened, exactly once each, over NATS and HTTP, while documents are
// deleted, updated and added; a name that is none, one of another index
// and a keep-alive out of range are refused, naming what is wrong.
func TestPointInTimeSearch(t *testing.T) {
	t.Parallel()
	n := startNode(t)
	c := n.Client()
	ctx := context.Background()
	for _, name := range []string{"pit", "other"} {
		if _, err := c.CreateIndex(ctx, name, 3, nil); err != nil {
			t.Fatal(err)
		}
	}
	var body bytes.Buffer
	for i := range 30 {
		fmt.Fprintf(&body, `{"id":"d%02d","n":%d,"text":"first"}`+"\n", i, i)
	}
	mustBulk(t, c, "pit", &body)

	// The first page over HTTP opens the point in time.
	base := "http://" + n.HTTPAddr + "/v1/indexes/"
	var first api.SearchResponse
	if code, raw := postJSON(t, base+"pit/search", `{"query":{"match_all":{}},"sort":["n"],"size":10,"fields":["text"],"pit":{"keep_alive":"1m"}}`, &first); code != 200 || first.PIT == "" {
		t.Fatalf("open: %d %s", code, raw)
	}
	// Then, before the next pages: deleted, updated and new documents
	// where the walk has yet to go.
	for i := 20; i < 25; i++ {
		if _, err := c.Delete(ctx, "pit", fmt.Sprintf("d%02d", i)); err != nil {
			t.Fatal(err)
		}
	}
	var last uint64
	for i := 10; i < 15; i++ {
		seq, err := c.Put(ctx, "pit", fmt.Appendf(nil, `{"id":"d%02d","n":%d,"text":"updated"}`, i, i))
		if err != nil {
			t.Fatal(err)
		}
		if seq, err = c.Put(ctx, "pit", fmt.Appendf(nil, `{"id":"new%02d","n":%d.5,"text":"new"}`, i, i)); err != nil {
			t.Fatal(err)
		}
		last = seq
	}
	if err := c.WaitSearchable(ctx, "pit", last); err != nil {
		t.Fatal(err)
	}
	now, err := c.Search(ctx, "pit", &api.SearchRequest{Query: json.RawMessage(`{"match_all":{}}`), Size: 100})
	if err != nil || now.Total != 30 { // 30 - 5 + 5
		t.Fatalf("now: %v, %v", now, err)
	}

	var ids []string
	for _, h := range first.Hits {
		ids = append(ids, h.ID)
	}
	req := api.SearchRequest{Query: json.RawMessage(`{"match_all":{}}`), Sort: []string{"n"}, Size: 10, Fields: []string{"text"},
		SearchAfter: first.Next, PIT: &api.PITRequest{ID: first.PIT}}
	for page := 1; ; page++ {
		r, err := c.Search(ctx, "pit", &req)
		if err != nil {
			t.Fatalf("page %d: %v", page, err)
		}
		if r.PIT != first.PIT {
			t.Fatalf("page %d names point in time %q, want %q", page, r.PIT, first.PIT)
		}
		for _, h := range r.Hits {
			if h.Fields["text"] != "first" {
				t.Fatalf("page %d: %s reads %v, want its text when the point in time opened", page, h.ID, h.Fields["text"])
			}
			ids = append(ids, h.ID)
		}
		if len(r.Hits) < 10 {
			break
		}
		req.SearchAfter = r.Next
	}
	want := make([]string, 30)
	for i := range want {
		want[i] = fmt.Sprintf("d%02d", i)
	}
	if !slices.Equal(ids, want) {
		t.Fatalf("walked %v\nwant %v", ids, want)
	}
	// from + size over the same point in time: the same documents.
	whole, err := c.Search(ctx, "pit", &api.SearchRequest{Query: json.RawMessage(`{"match_all":{}}`), Sort: []string{"n"}, Size: 100, PIT: &api.PITRequest{ID: first.PIT}})
	if err != nil {
		t.Fatal(err)
	}
	if got := whole.IDs(len(whole.Hits)); !slices.Equal(got, want) {
		t.Fatalf("from + size over the point in time: %v\nwant %v", got, want)
	}
	// Closed by a last search that reads it: then gone.
	closing := api.SearchRequest{Query: json.RawMessage(`{"match_all":{}}`), Size: 1, PIT: &api.PITRequest{ID: first.PIT, Close: true}}
	if r, err := c.Search(ctx, "pit", &closing); err != nil || r.Total != 30 || r.PIT != "" {
		t.Fatalf("the closing search: %+v, %v", r, err)
	}
	if _, err := c.Search(ctx, "pit", &closing); api.CodeOf(err) != api.CodeNotFound {
		t.Fatalf("a closed point in time: %v, want not_found", err)
	}

	for _, tc := range []struct{ body, code, says string }{
		{`{"q":"first","pit":{"id":"nonsense"}}`, "400", "not the name of a point in time"},
		{fmt.Sprintf(`{"q":"first","pit":{"id":%q}}`, first.PIT), "400", `of index \"pit\", not of \"other\"`},
		{`{"q":"first","pit":{"keep_alive":"2h"}}`, "400", "out of range"},
		{`{"q":"first","pit":{"keep_alive":"soon"}}`, "400", "no duration"},
		{`{"q":"first","pit":{"close":true}}`, "400", "give its id"},
	} {
		resp, err := http.Post(base+"other/search", "application/json", strings.NewReader(tc.body))
		if err != nil {
			t.Fatal(err)
		}
		var raw bytes.Buffer
		raw.ReadFrom(resp.Body)
		resp.Body.Close()
		if fmt.Sprint(resp.StatusCode) != tc.code || !strings.Contains(raw.String(), tc.says) {
			t.Errorf("%s: %d %s, want %s saying %q", tc.body, resp.StatusCode, raw.String(), tc.code, tc.says)
		}
	}
	// A point in time its replicas no longer hold (ended, expired):
	// not_found, over NATS.
	raw, _ := base64.RawURLEncoding.DecodeString(first.PIT)
	var name map[string]any
	if err := json.Unmarshal(raw, &name); err != nil {
		t.Fatal(err)
	}
	name["id"] = "ended"
	raw, _ = json.Marshal(name)
	req.PIT.ID = base64.RawURLEncoding.EncodeToString(raw)
	if _, err := c.Search(ctx, "pit", &req); api.CodeOf(err) != api.CodeNotFound || !strings.Contains(err.Error(), "expired or ended") {
		t.Fatalf("an ended point in time: %v, want not_found", err)
	}
}
