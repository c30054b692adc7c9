package node

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/quarrysearch/quarry/api"
	"github.com/quarrysearch/quarry/client"
)

// TestNumericIDs: a document whose "id" is a whole number is stored under
// its decimal text: read back as written, found by a search under that
// id, patched and deleted by it; 7.0 or 1e3 are refused (one id, one
// spelling).
func TestNumericIDs(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	n := startNode(t)
	c := n.Client()
	if _, err := c.CreateIndex(ctx, "num", 2, nil); err != nil {
		t.Fatal(err)
	}
	res := mustBulk(t, c, "num", bytes.NewBufferString(`{"id":42,"name":"answer noodles"}`+"\n"+`{"id":7.0,"name":"no"}`+"\n"+`{"id":-3,"name":"minus noodles"}`+"\n"))
	if res.Stored != 2 || res.Failed != 1 || !strings.Contains(res.Errors[0].Err, "a string or a whole number") {
		t.Fatalf("bulk: %+v", res)
	}
	if doc, err := c.Get(ctx, "num", "42"); err != nil || string(doc.Source) != `{"id":42,"name":"answer noodles"}` {
		t.Fatalf("get 42: %v %v", doc, err)
	}
	r, err := c.Search(ctx, "num", &api.SearchRequest{Q: "noodles", Sort: []string{"_id"}})
	if err != nil || len(r.Hits) != 2 || r.Hits[0].ID != "-3" || r.Hits[1].ID != "42" {
		t.Fatalf("search: %+v %v", r, err)
	}
	if _, err := c.Patch(ctx, "num", "42", []byte(`{"id":42,"name":"answer"}`), client.PatchOptions{}); err != nil {
		t.Fatalf("patch 42 naming its own id: %v", err)
	}
	if _, err := c.Delete(ctx, "num", "-3"); err != nil {
		t.Fatal(err)
	}
	if doc, err := c.Get(ctx, "num", "42"); err != nil || string(doc.Source) != `{"id":42,"name":"answer"}` {
		t.Fatalf("get 42 after the patch: %v %v", doc, err)
	}
}
