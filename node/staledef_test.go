package node

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/quarrysearch/quarry/api"
	"github.com/quarrysearch/quarry/client"
	"github.com/quarrysearch/quarry/internal/testwait"
)

// TestStaleDefinitionNotWritten: a long-lived client (the HTTP door's is
// one) that wrote to an index of 4 shards, which another client then
// deleted and created again with 1, writes its next documents to the new
// index: every one is searchable, none published to a shard nobody
// follows. (Two clients on two connections: what two processes are to
// the deployment.)
func TestStaleDefinitionNotWritten(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	n := startNode(t)
	a := n.Client()
	b, err := client.New(ctx, n.Conn(), client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.CreateIndex(ctx, "stale", 4, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Put(ctx, "stale", []byte(`{"id":"first","t":"noodles"}`)); err != nil {
		t.Fatal(err)
	}
	if err := b.DeleteIndex(ctx, "stale"); err != nil {
		t.Fatal(err)
	}
	if _, err := b.CreateIndex(ctx, "stale", 1, nil); err != nil {
		t.Fatal(err)
	}
	for i := range 20 {
		if _, err := a.Put(ctx, "stale", []byte(`{"id":"d`+string(rune('a'+i))+`","t":"noodles"}`)); err != nil {
			t.Fatal(err)
		}
	}
	testwait.UntilErr(t, 15*time.Second, "the 20 documents written after the index was made again searchable", func() error {
		resp, err := a.Search(ctx, "stale", &api.SearchRequest{Q: "noodles", Size: 0})
		if err != nil {
			return err
		}
		if resp.Total != 20 {
			return fmt.Errorf("%d of them", resp.Total)
		}
		return nil
	})
}
