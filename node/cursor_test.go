package node

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/quarrysearch/quarry/api"
)

// TestCursorPaging: a sorted search walked page by page with its next
// cursor gives every hit once, in the order one page of them all has
// (ties broken by id, a sort key the response does not show), by a
// field and by score, over 3 shards; a cursor's page is refused without
// a sort, with a from, or with a cursor that is not one.
func TestCursorPaging(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	n := startNode(t)
	c := n.Client()
	if _, err := c.CreateIndex(ctx, "cur", 3, nil); err != nil {
		t.Fatal(err)
	}
	var docs strings.Builder
	for i := range 250 { // 7 prices, many ties; every third about noodles
		fmt.Fprintf(&docs, `{"id":"c%03d","price":%d,"text":"%s"}`+"\n", i, i%7, []string{"spicy noodles", "mild soup", "noodles soup noodles"}[i%3])
	}
	mustBulk(t, c, "cur", bytes.NewBufferString(docs.String()))
	for _, tc := range []struct {
		name string
		req  api.SearchRequest
	}{
		{"by a field", api.SearchRequest{Query: json.RawMessage(`{"match_all":{}}`), Sort: []string{"-price"}}},
		{"by score", api.SearchRequest{Q: "noodles", Sort: []string{"-_score"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			all := tc.req
			all.Size = 250
			want, err := c.Search(ctx, "cur", &all)
			if err != nil {
				t.Fatal(err)
			}
			if len(want.Hits[0].Sort) != 1 {
				t.Fatalf("sort values shown: %v, want the request's one key", want.Hits[0].Sort)
			}
			var got []string
			page := tc.req
			page.Size = 17
			for pages := 0; ; pages++ {
				if pages > 20 {
					t.Fatal("more than 20 pages")
				}
				r, err := c.Search(ctx, "cur", &page)
				if err != nil {
					t.Fatal(err)
				}
				for _, h := range r.Hits {
					got = append(got, h.ID)
				}
				if r.Next == "" {
					break
				}
				page.SearchAfter = r.Next
			}
			if len(got) != len(want.Hits) {
				t.Fatalf("walked %d hits, want %d", len(got), len(want.Hits))
			}
			for i, h := range want.Hits {
				if got[i] != h.ID {
					t.Fatalf("hit %d: %s, want %s (one page of all)", i, got[i], h.ID)
				}
			}
		})
	}
	first, err := c.Search(ctx, "cur", &api.SearchRequest{Query: json.RawMessage(`{"match_all":{}}`), Sort: []string{"price"}, Size: 5})
	if err != nil || first.Next == "" {
		t.Fatalf("first page: %+v %v", first, err)
	}
	// Over HTTP, the cursor goes in a URL as given: GET's page after the
	// first is the second page of one search of ten.
	ten, err := c.Search(ctx, "cur", &api.SearchRequest{Query: json.RawMessage(`{"match_all":{}}`), Sort: []string{"price"}, Size: 10})
	if err != nil {
		t.Fatal(err)
	}
	code, _, body := httpRequest(t, "GET", "http://"+n.HTTPAddr+"/v1/indexes/cur/search?size=5&sort=price&search_after="+first.Next, "")
	var second api.SearchResponse
	if err := json.Unmarshal([]byte(body), &second); code != 200 || err != nil || len(second.Hits) != 5 {
		t.Fatalf("GET with search_after: %d %s", code, body)
	}
	for i, h := range second.Hits {
		if h.ID != ten.Hits[5+i].ID {
			t.Fatalf("GET's page 2, hit %d: %s, want %s", i, h.ID, ten.Hits[5+i].ID)
		}
	}
	for _, bad := range []struct {
		req api.SearchRequest
		msg string
	}{
		{api.SearchRequest{Q: "noodles", SearchAfter: first.Next}, "continues a sorted search"},
		{api.SearchRequest{Q: "noodles", Sort: []string{"price"}, From: 5, SearchAfter: first.Next}, "takes no from"},
		{api.SearchRequest{Q: "noodles", Sort: []string{"price"}, SearchAfter: "bm90IGEgY3Vyc29y"}, "not the cursor"},
		{api.SearchRequest{Q: "noodles", Sort: []string{"price", "text"}, SearchAfter: first.Next}, "not the cursor"},
	} {
		if _, err := c.Search(ctx, "cur", &bad.req); !errors.Is(err, api.ErrBadRequest) || !strings.Contains(err.Error(), bad.msg) {
			t.Errorf("%+v: %v, want bad request saying %q", bad.req, err, bad.msg)
		}
	}
}
