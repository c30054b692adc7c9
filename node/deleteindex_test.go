package node

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/quarrysearch/quarry/api"
	"github.com/quarrysearch/quarry/client"
	"github.com/quarrysearch/quarry/internal/subject"
	"github.com/quarrysearch/quarry/internal/testwait"
	"github.com/quarrysearch/quarry/internal/wasmtest"
)

// TestDeletedIndexLeavesNothing: an index deleted and created again under
// its name, by another team, inherits nothing of the first: not its
// pipeline (whose plugin config holds team books' secret), its plugin
// versions or its events, nor the records of its rejected documents, and
// the brokers stop running its plugins.
func TestDeletedIndexLeavesNothing(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	n := startNode(t)
	c := n.Client()
	if _, err := c.CreateIndexDef(ctx, api.IndexDefinition{Name: "tmpx", Shards: 1, Team: "books"}); err != nil {
		t.Fatal(err)
	}
	mustBulk(t, c, "tmpx", ndjson(10, "t"))
	secret := json.RawMessage(`{"api_key":"BOOKS-SECRET"}`)
	if _, err := c.PushPlugin(ctx, "tmpx", "logger", wasmtest.WAT(t, loggingWAT), client.PushOptions{Kind: "rewriter", Activate: true, Step: api.StepSpec{Config: secret}}); err != nil {
		t.Fatal(err)
	}
	waitLive(t, 20*time.Second, n.Broker, c, "tmpx")
	// A document the shard cannot apply, past the client: recorded.
	if _, err := n.store.JS.Publish(ctx, subject.Doc("tmpx", 0, "junk"), []byte(`{"id":"junk",`)); err != nil {
		t.Fatal(err)
	}
	testwait.UntilErr(t, 20*time.Second, "the rejected document recorded", func() error {
		got, err := c.RejectedDocuments(ctx, "tmpx", 0)
		if err == nil && (len(got) != 1 || got[0].ID != "junk") {
			err = fmt.Errorf("listed %+v", got)
		}
		return err
	})
	if err := c.DeleteIndex(ctx, "tmpx"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.CreateIndexDef(ctx, api.IndexDefinition{Name: "tmpx", Shards: 1, Team: "food"}); err != nil {
		t.Fatal(err)
	}
	pl, err := c.Plugins(ctx, "tmpx")
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := json.Marshal(pl)
	if len(pl.Versions) != 0 || (pl.Pipeline != nil && len(pl.Pipeline.Rewriters)+len(pl.Pipeline.Rankers) != 0) || strings.Contains(string(raw), "BOOKS-SECRET") {
		t.Fatalf("the new index inherited the deleted one's plugins: %s", raw)
	}
	if evs, err := c.PluginEvents(ctx, "tmpx"); err != nil || len(evs) != 0 {
		t.Fatalf("plugin events of the new index: %+v %v", evs, err)
	}
	// Gone from the stream, not only from what is listed.
	if m, err := n.store.Rejected.GetLastMsgForSubject(ctx, subject.Rejected("tmpx")); !errors.Is(err, jetstream.ErrMsgNotFound) {
		if err == nil {
			err = fmt.Errorf("%s", m.Data)
		}
		t.Errorf("a record of a rejected document of the deleted index is left: %v", err)
	}
	if got, err := c.RejectedDocuments(ctx, "tmpx", 0); err != nil || len(got) != 0 {
		t.Errorf("rejected documents of the new index: %+v %v", got, err)
	}
	mustBulk(t, c, "tmpx", ndjson(10, "u"))
	testwait.UntilErr(t, 20*time.Second, "a search of the new index runs no rewriter", func() error {
		resp, err := c.Search(ctx, "tmpx", &api.SearchRequest{Q: "noodles", Profile: true})
		if err != nil {
			return err
		}
		for _, st := range resp.Profile.Stages {
			if strings.HasPrefix(st.Name, "rewrite") {
				return &api.Error{Code: api.CodeConflict, Message: "stage " + st.Name}
			}
		}
		return nil
	})
}
