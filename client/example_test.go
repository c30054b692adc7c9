package client_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"strings"
	"time"

	"github.com/quarrysearch/quarry/api"
	"github.com/quarrysearch/quarry/broker"
	"github.com/quarrysearch/quarry/client"
	"github.com/quarrysearch/quarry/indexer"
	"github.com/quarrysearch/quarry/node"
	"github.com/quarrysearch/quarry/searcher"
)

// startQuarry runs every role in this process, as `quarry serve` does. A
// real program would instead connect with nats.Connect(url) and
// client.New.
func startQuarry(ctx context.Context) (*node.Node, func()) {
	dir, err := os.MkdirTemp("", "quarry-example-")
	if err != nil {
		log.Fatal(err)
	}
	n, err := node.Start(ctx, node.Config{DataDir: dir, NATSPort: -1,
		Indexer: &indexer.Config{SnapshotInterval: -1}, Searcher: &searcher.Config{}, Broker: &broker.Config{}})
	if err != nil {
		log.Fatal(err)
	}
	if err := n.WaitReady(ctx); err != nil {
		log.Fatal(err)
	}
	return n, func() { n.Close(); os.RemoveAll(dir) }
}

func Example() {
	ctx := context.Background()
	n, stop := startQuarry(ctx)
	defer stop()
	c := n.Client() // or: client.New(ctx, natsConn, client.Options{})

	if _, err := c.CreateIndex(ctx, "recipes", 2, nil); err != nil {
		log.Fatal(err)
	}
	docs := `{"id":"1","name":"Dan Dan Noodles","text":"spicy Sichuan noodles"}
{"id":"2","name":"Miso Soup","text":"mild soup with tofu"}
{"id":"3","name":"Pad Thai","text":"rice noodles with peanuts"}
`
	res, err := c.Bulk(ctx, "recipes", strings.NewReader(docs), client.BulkOptions{})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("stored %d, generation %d\n", res.Stored, res.Snapshot.Generation)

	// Searchers pick up new documents within milliseconds.
	var resp *api.SearchResponse
	for range 200 {
		resp, err = c.Search(ctx, "recipes", &api.SearchRequest{Q: "spicy noodles", Fields: []string{"name"}})
		if err == nil && resp.Total == 2 {
			break
		}
		time.Sleep(10 * time.Millisecond) // an application's retry, as the example shows one (no testing.TB here for testwait)
	}
	if err != nil {
		log.Fatal(err)
	}
	for _, h := range resp.Hits {
		fmt.Println(h.ID, h.Fields["name"])
	}
	// Output:
	// stored 3, generation 1
	// 1 Dan Dan Noodles
	// 3 Pad Thai
}

func ExampleClient_Put() {
	ctx := context.Background()
	n, stop := startQuarry(ctx)
	defer stop()
	c := n.Client()
	if _, err := c.CreateIndex(ctx, "menu", 1, nil); err != nil {
		log.Fatal(err)
	}
	// Put is acknowledged once the document is stored in the stream.
	if _, err := c.Put(ctx, "menu", []byte(`{"id":"m1","name":"Margherita"}`)); err != nil {
		log.Fatal(err)
	}
	// A document whose id is neither a string nor a whole number is
	// refused with a bad-request error.
	_, err := c.Put(ctx, "menu", []byte(`{"id":4.2}`))
	fmt.Println(errors.Is(err, api.ErrBadRequest), err)
	// Output:
	// true "id" must be a string or a whole number, got 4.2
}
