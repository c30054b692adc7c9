//go:build long

package node

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/quarrysearch/quarry/api"
	"github.com/quarrysearch/quarry/broker"
	"github.com/quarrysearch/quarry/client"
	"github.com/quarrysearch/quarry/indexer"
	"github.com/quarrysearch/quarry/internal/control"
	"github.com/quarrysearch/quarry/internal/meta"
	"github.com/quarrysearch/quarry/internal/subject"
	"github.com/quarrysearch/quarry/internal/testtier"
	"github.com/quarrysearch/quarry/internal/wasmtest"
	"github.com/quarrysearch/quarry/searcher"
)

// TestFaultNATSClusterLosesNode: Quarry on a three-member JetStream cluster,
// its resources replicated three times, loses a member under a steady query
// load: first one its roles are not connected to, then the one they are.
// Queries keep working (or recover by themselves at once, for the member
// the clients were connected to); while a member is down, writes are
// acknowledged and searchable, a new index is served and a pipeline pushed
// is live; a member that comes back catches up.
func TestFaultNATSClusterLosesNode(t *testing.T) {
	began := time.Now()
	cl := startCluster(t, 3)
	t.Logf("a JetStream cluster of 3 has a meta leader after %s", time.Since(began).Round(time.Millisecond))
	n := startConfig(t, Config{NATSURL: cl.urls(), Replicas: 3,
		Indexer: &indexer.Config{SnapshotInterval: -1}, Searcher: &searcher.Config{}, Broker: &broker.Config{}})
	c, ctx := n.Client(), context.Background()
	if _, err := c.CreateIndex(ctx, "cl", 2, nil); err != nil {
		t.Fatal(err)
	}
	mustBulk(t, c, "cl", ndjson(60, "c"))
	waitTotal(t, c, "cl", "noodles", 20)
	t.Logf("Quarry serves 60 documents, replicated 3 times, %s after the start", time.Since(began).Round(time.Millisecond))

	rate := 50.0
	if testtier.Soak {
		rate = 200
	}
	suffix := wasmtest.WATFile(t, "../examples/plugins/wat/suffix.wat")
	// The application connects to the member the node uses (and knows
	// the others), so that the other two go down under clients that do
	// not use them.
	used := cl.member(n.Conn().ConnectedServerName())
	ext, extNC := externalClient(t, cl.urls(used), nats.DontRandomize())
	load := startLoad(ext, "cl", "noodles", rate, 2*time.Second)
	defer load.Stop()
	load.waitAnswered(t, time.Time{}, int(rate/2), "a steady state before the faults: half a second's queries answered")

	// lose takes member i down; while it is down, writes and searches a
	// document, creates an index and pushes a pipeline; then brings it
	// back and waits until it has caught up.
	lose := func(i int, word string) (down, up time.Time) {
		t.Helper()
		name := cl.members[i].cfg.ServerName
		leads, streams := cl.leads(i)
		t.Logf("%s goes down: %s", name, leads)
		bound := failover
		if streams > 0 {
			bound = electionFailover
		}
		if i == used && cl.members[i].ns.NATS().JetStreamIsLeader() {
			bound = metaFailover
		}
		down = time.Now()
		cl.stop(i)
		if n.Conn().ConnectedServerName() == name || !n.Conn().IsConnected() {
			took := waitUntil(t, natsRecovery, "the node's connection fails over", func() bool {
				return n.Conn().IsConnected() && n.Conn().ConnectedServerName() != name
			})
			t.Logf("%s down: the node's connection moved to %s in %s", name, n.Conn().ConnectedServerName(), took.Round(time.Millisecond))
		}
		doc := fmt.Appendf(nil, `{"id":"%s","text":"%s"}`, word, word)
		_, attempts := putUntilAcked(t, c, "cl", doc, natsRecovery)
		waitTotal(t, c, "cl", word, 1)
		within(t, down, bound, name+" going down", fmt.Sprintf("a document put (acknowledged at attempt %d) is searchable", attempts))
		// Every role follows the index definitions: a new index works.
		noodleIndex(t, c, "cl-"+word, word[:1])
		within(t, down, bound, name+" going down", "an index created is served")
		// The broker follows the pipelines: a pipeline pushed is live.
		v, err := c.PushPlugin(ctx, "cl-"+word, "suffix", suffix, client.PushOptions{Kind: "rewriter"})
		if err != nil {
			t.Fatalf("push with %s down: %v", name, err)
		}
		activate(t, c, "cl-"+word, "suffix", v.Digest)
		waitRewriter(t, n.Broker, "cl-"+word, short(v.Digest))
		within(t, down, bound, name+" going down", "a pipeline pushed is live")
		load.waitAnswered(t, time.Now(), int(rate/2), "the load with "+name+" down: half a second's queries answered")
		cl.start(i)
		up = time.Now()
		peer := (i + 1) % len(cl.members)
		took := waitUntil(t, 20*time.Second, name+" catches up", func() bool { return cl.caughtUp(i, peer) })
		t.Logf("%s back: it holds every stream as far as %s %s after it started", name, cl.members[peer].cfg.ServerName, took.Round(time.Millisecond))
		return down, up
	}

	// Every member goes down in turn, so that whichever holds the
	// consumers roles follow the streams and buckets with goes down
	// once: first those no client uses, then the node's own.
	if extNC.ConnectedServerName() != cl.members[used].cfg.ServerName {
		t.Fatalf("the application is connected to %s, the node to %s", extNC.ConnectedServerName(), cl.members[used].cfg.ServerName)
	}
	var order []int
	for i := range cl.members {
		t.Logf("%s holds consumers %v", cl.members[i].cfg.ServerName, cl.consumers(i))
		if i != used {
			order = append(order, i)
		}
	}
	order = append(order, used)
	type phase struct{ down, up time.Time }
	var phases []phase
	for k, i := range order {
		down, up := lose(i, []string{"alpha", "bravo", "charlie", "delta", "echo"}[k])
		phases = append(phases, phase{down, up})
	}
	load.waitAnswered(t, time.Now(), int(rate/2), "the load after: half a second's queries answered")
	outs := load.Stop()
	_, failed, _ := window(outs, time.Time{}, time.Now())
	t.Logf("%d queries at %g/s, %d failed; %s in all", len(outs), rate, failed, time.Since(began).Round(time.Millisecond))
	for k, p := range phases {
		from, to := time.Time{}, time.Now()
		if k > 0 {
			from = phases[k-1].up
		}
		if k < len(phases)-1 {
			to = phases[k+1].down
		}
		name := cl.members[order[k]].cfg.ServerName
		o := outageReport(t, name+" down", between(outs, from, to), p.down, p.up)
		if order[k] != used && o.Failed > 0 {
			t.Errorf("%d queries failed while %s, which no client uses, was down: %v", o.Failed, name, o.First)
		}
		// The clients fail over to another member: the one that went
		// down is not needed back.
		if order[k] == used && o.FromFault > failover {
			t.Errorf("queries recovered %s after %s, which the clients used, went down; want at most %s", o.FromFault, name, failover)
		}
	}
}

// Roles started at the same moment as the NATS cluster, as an
// orchestrator starts them: a node connected to the one member up, with
// no JetStream meta leader yet, waits (and says so) instead of failing or
// hanging, and serves once the other members come up.
func TestRolesStartBeforeClusterForms(t *testing.T) {
	cl := newCluster(t, 3)
	cl.start(0)
	type started struct {
		n   *Node
		err error
	}
	done := make(chan started, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
		defer cancel()
		n, err := Start(ctx, Config{DataDir: t.TempDir(), NATSURL: cl.urls(0), Replicas: 3, Logger: testLogger(),
			Indexer: &indexer.Config{SnapshotInterval: -1}, Searcher: &searcher.Config{}, Broker: &broker.Config{}})
		if err == nil {
			err = n.WaitReady(ctx)
		}
		done <- started{n, err}
	}()
	select {
	case s := <-done:
		t.Fatalf("the node started with no JetStream quorum: %v", s.err)
	case <-time.After(2 * time.Second):
	}
	cl.start(1)
	cl.start(2)
	s := <-done
	if s.err != nil {
		t.Fatalf("the node did not start once the cluster formed: %v", s.err)
	}
	t.Cleanup(s.n.Close)
	c := s.n.Client()
	noodleIndex(t, c, "late", "l")
	if got := total(c, "late", "noodles"); got != 10 {
		t.Fatalf("search after a late cluster: %d", got)
	}
}

// Replication is decided once for a deployment: `quarry init` (client.Init)
// sets it, a client or role started without --replicas adopts it (a CLI
// command used to make missing resources at R1, and update existing ones
// to R1), one started with another count is refused with a message that
// names both, and Init is how it changes.
func TestReplicationDecidedOnce(t *testing.T) {
	cl := startCluster(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c, nc := externalClient(t, cl.urls())
	got, err := client.Init(ctx, nc, 3)
	if err != nil {
		t.Fatal(err)
	}
	allAt := func(got map[string]int, want int) {
		t.Helper()
		if len(got) != meta.Resources {
			t.Errorf("%d streams, want Quarry's %d: %v", len(got), meta.Resources, got)
		}
		for name, n := range got {
			if n != want {
				t.Errorf("stream %s at %d replicas, want %d", name, n, want)
			}
		}
	}
	allAt(got, 3)

	// An index made as the control API makes it (no role runs here),
	// and a CLI client (no replicas said) writes to it: the deployment
	// keeps its replication.
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	st, err := meta.Open(ctx, js, meta.Options{Bind: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := control.CreateIndex(ctx, st, []byte(`{"name":"repl","shards":1}`)); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Put(ctx, "repl", []byte(`{"id":"d1","name":"noodles"}`)); err != nil {
		t.Fatal(err)
	}
	now, err := meta.Replication(ctx, js, nil)
	if err != nil {
		t.Fatal(err)
	}
	allAt(now, 3)

	// A role started with --replicas 1 is refused, naming both counts.
	_, err = Start(ctx, Config{DataDir: t.TempDir(), NATSURL: cl.urls(), Replicas: 1, Logger: testLogger(),
		Indexer: &indexer.Config{SnapshotInterval: -1}})
	var re *meta.ReplicasError
	if !errors.As(err, &re) || re.Want != 1 || re.Existing[subject.DocsStream] != 3 ||
		!strings.Contains(err.Error(), fmt.Sprintf("--replicas 1, but this deployment's JetStream streams exist at 3 (QUARRY_DOCS and %d more)", meta.Resources-1)) ||
		!strings.Contains(err.Error(), "quarry init --replicas 1") {
		t.Fatalf("a role at --replicas 1 on an R3 deployment: %v", err)
	}

	// Init changes it, everywhere.
	got, err = client.Init(ctx, nc, 1)
	if err != nil {
		t.Fatal(err)
	}
	allAt(got, 1)
	if _, err := client.Init(ctx, nc, 7); !errors.Is(err, api.ErrBadRequest) {
		t.Errorf("Init with 7 replicas: %v", err)
	}
}
