package node

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/quarrysearch/quarry/api"
	"github.com/quarrysearch/quarry/broker"
	"github.com/quarrysearch/quarry/client"
	"github.com/quarrysearch/quarry/indexer"
	"github.com/quarrysearch/quarry/internal/natstest"
	"github.com/quarrysearch/quarry/internal/testwait"
	"github.com/quarrysearch/quarry/internal/wasmtest"
	"github.com/quarrysearch/quarry/searcher"
)

// waitRewriter waits until b runs index's queries through the rewriter
// version (a short digest).
func waitRewriter(t *testing.T, b *broker.Broker, index, version string) {
	t.Helper()
	testwait.UntilErr(t, 30*time.Second, fmt.Sprintf("the broker runs version %s on %s", version, index), func() error {
		r, err := b.Search(context.Background(), index, &api.SearchRequest{Q: "noodles", Profile: true})
		if err != nil {
			return err
		}
		if !slices.ContainsFunc(r.Profile.Stages, func(s api.Stage) bool { return strings.Contains(s.Detail, "version "+version) }) {
			return fmt.Errorf("profile %+v", r.Profile.Stages)
		}
		return nil
	})
}

// TestBrokersConverge: a broker that starts after a pipeline was set, and a
// broker whose NATS server restarted, both end up running the current
// pipeline without anyone touching them.
func TestBrokersConverge(t *testing.T) {
	ns := natstest.StartRestartable(t)
	n := startRoles(t, ns.URL(), &indexer.Config{SnapshotInterval: -1}, &searcher.Config{}, &broker.Config{})
	c, ctx := n.Client(), context.Background()
	noodleIndex(t, c, "conv", "c")
	v1, err := c.PushPlugin(ctx, "conv", "suffix", wasmtest.WATFile(t, "../examples/plugins/wat/suffix.wat"), client.PushOptions{Kind: "rewriter", Activate: true})
	if err != nil {
		t.Fatal(err)
	}
	waitRewriter(t, n.Broker, "conv", short(v1.Digest))

	late := startRoles(t, ns.URL(), nil, nil, &broker.Config{})
	waitRewriter(t, late.Broker, "conv", short(v1.Digest))

	ns.Stop()
	ns.Start()
	restarted := time.Now()
	v2, err := c.PushPlugin(ctx, "conv", "suffix", wasmtest.WAT(t, identityWAT), client.PushOptions{Kind: "rewriter", Activate: true})
	if err != nil {
		t.Fatalf("push after the NATS restart: %v", err)
	}
	t.Logf("pushed %s after %s", short(v2.Digest), time.Since(restarted))
	waitRewriter(t, n.Broker, "conv", short(v2.Digest))
	waitRewriter(t, late.Broker, "conv", short(v2.Digest))
	t.Logf("both brokers run it %s after the restart", time.Since(restarted))
}
