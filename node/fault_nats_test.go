package node

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/quarrysearch/quarry/api"
	"github.com/quarrysearch/quarry/broker"
	"github.com/quarrysearch/quarry/client"
	"github.com/quarrysearch/quarry/indexer"
	"github.com/quarrysearch/quarry/internal/embednats"
	"github.com/quarrysearch/quarry/internal/meta"
	"github.com/quarrysearch/quarry/internal/natstest"
	"github.com/quarrysearch/quarry/internal/subject"
	"github.com/quarrysearch/quarry/internal/wasmtest"
	"github.com/quarrysearch/quarry/searcher"
)

// natsRecovery bounds how long, once a NATS server is back, queries take
// to recover and roles to follow streams and buckets again (a client
// tries a server again every 2 s).
const natsRecovery = 10 * time.Second

// activate makes a pushed plugin version live. Activating reads the
// version back, and with three replicas that read can miss a version
// pushed a moment before: JetStream answers a KeyValue read (a direct get)
// from any replica, one that has not applied the write yet among them,
// and the registry answers "push it first". activate tries again for up
// to 5 s, logging each such stale read; this is a known weakness (see
// the report of issue 6's fault suite), not what the fault tests test.
func activate(t testing.TB, c *client.Client, index, plugin, digest string) {
	t.Helper()
	for start := time.Now(); ; {
		_, err := c.ActivatePlugin(context.Background(), index, plugin, digest)
		if err == nil {
			return
		}
		if !errors.Is(err, api.ErrNotFound) || time.Since(start) > 5*time.Second {
			t.Fatalf("activate %s %s on %s: %v", plugin, digest, index, err)
		}
		t.Logf("activate %s on %s: a stale read: %v", plugin, index, err)
		time.Sleep(20 * time.Millisecond)
	}
}

// failover bounds how long queries may take to recover when the NATS
// server a node uses goes down and another cluster member is there.
const failover = 5 * time.Second

// metaFailover bounds how long a node's JetStream consumers take to come
// back when the member it is connected to is also the JetStream meta
// leader and goes down. The client reconnects to another member at once,
// but the JetStream API request that makes its consumer again, sent in
// that instant, gets no answer while the meta leadership moves, and the
// client (nats.go jetstream, ordered consumer reset) waits 10 s before it
// tries again: documents acknowledged meanwhile become searchable, a new
// index or pipeline is seen, about 11 s after the fault.
const metaFailover = 15 * time.Second

// electionFailover bounds how long writes, a new index and a pipeline
// push take when the member lost led streams of Quarry's: until a new
// leader is elected, a stream takes no write, and nats-server's Raft
// waits a random 4 to 9 s (minElectionTimeout, maxElectionTimeout) before
// it calls an election when a leader went away without handing over. CI
// met 7.4 s for a document put when the member leading QUARRY_DOCS went
// down.
const electionFailover = 12 * time.Second

// externalClient connects a client of its own to urls, as an application
// would: it reconnects forever. It is closed when the test ends.
func externalClient(t testing.TB, urls string, opts ...nats.Option) (*client.Client, *nats.Conn) {
	t.Helper()
	nc, err := nats.Connect(urls, append([]nats.Option{nats.Name("fault-load"), nats.MaxReconnects(-1)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	c, err := client.New(context.Background(), nc, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return c, nc
}

// TestFaultNATSRestart: the NATS server every role uses is shut down under
// a steady query load and started again on the same port and store. Queries
// fail while it is down and recover by themselves; the clients reconnect;
// searchers still follow the document stream, every role still follows the
// index definitions (a new index works), and the broker still follows the
// pipelines bucket.
func TestFaultNATSRestart(t *testing.T) {
	ns := natstest.StartRestartable(t)
	n := startRoles(t, ns.URL(), &indexer.Config{SnapshotInterval: -1}, &searcher.Config{}, &broker.Config{})
	c, ctx := n.Client(), context.Background()
	noodleIndex(t, c, "nr", "n")
	v1, err := c.PushPlugin(ctx, "nr", "suffix", wasmtest.WATFile(t, "../examples/plugins/wat/suffix.wat"), client.PushOptions{Kind: "rewriter", Activate: true})
	if err != nil {
		t.Fatal(err)
	}
	waitRewriter(t, n.Broker, "nr", short(v1.Digest))

	outage, rate := 1*time.Second, 50.0
	if *long {
		outage, rate = 5*time.Second, 200
	}
	ext, extNC := externalClient(t, ns.URL())
	load := startLoad(ext, "nr", "noodles", rate, 2*time.Second)
	defer load.Stop()
	time.Sleep(time.Second) // a steady state before the fault

	down := time.Now()
	ns.Stop()
	time.Sleep(outage)
	ns.Start()
	up := time.Now()

	// The clients reconnect by themselves.
	waitUntil(t, natsRecovery, "the node's connection reconnects", n.Conn().IsConnected)
	waitUntil(t, natsRecovery, "the application's connection reconnects", extNC.IsConnected)
	// A pipeline change after the restart is applied: the broker still
	// follows the pipelines bucket.
	v2, err := c.PushPlugin(ctx, "nr", "suffix", wasmtest.WAT(t, identityWAT), client.PushOptions{Kind: "rewriter", Activate: true})
	if err != nil {
		t.Fatalf("push after the NATS restart: %v", err)
	}
	waitRewriter(t, n.Broker, "nr", short(v2.Digest))
	within(t, up, natsRecovery, "the NATS restart", "a pipeline pushed after it is live")
	// A document put after the restart is searchable: the searcher
	// still follows the stream.
	_, attempts := putUntilAcked(t, c, "nr", []byte(`{"id":"after-restart","text":"phoenix"}`), natsRecovery)
	waitTotal(t, c, "nr", "phoenix", 1)
	within(t, up, natsRecovery, "the NATS restart", fmt.Sprintf("a document put after it (acknowledged at attempt %d) is searchable", attempts))
	// An index created after the restart is served: the indexer, the
	// searcher and the broker still follow the index definitions.
	noodleIndex(t, c, "nr-new", "f")
	within(t, up, natsRecovery, "the NATS restart", "an index created after it is served")
	time.Sleep(time.Second) // the load after the recovery

	outs := load.Stop()
	t.Logf("%d queries at %g/s; the node's connection reconnected %d times, the application's %d",
		len(outs), rate, n.Conn().Stats().Reconnects, extNC.Stats().Reconnects)
	if o := outageReport(t, "NATS restart", outs, down, up); o.FromRepair > natsRecovery {
		t.Errorf("queries recovered %s after the NATS server was back, want at most %s", o.FromRepair, natsRecovery)
	}
}

// natsCluster is a NATS cluster in this process: each member on fixed
// ports and its own store, so it can be shut down and come back as itself.
type natsCluster struct {
	t       testing.TB
	members []*clusterMember
	routes  []string
}

type clusterMember struct {
	cfg embednats.Config
	ns  *embednats.Server // nil while down
}

// startCluster starts a size-member JetStream cluster and waits until it
// has a meta leader that every member follows. Members are shut down when
// the test ends.
func startCluster(t testing.TB, size int) *natsCluster {
	t.Helper()
	cl := newCluster(t, size)
	for i := range cl.members {
		cl.start(i)
	}
	waitUntil(t, 30*time.Second, "the JetStream cluster elects a meta leader", cl.current)
	return cl
}

// newCluster lays out a size-member cluster without starting any member.
// Members are shut down when the test ends.
func newCluster(t testing.TB, size int) *natsCluster {
	t.Helper()
	cl := &natsCluster{t: t}
	for i := range size {
		cfg := embednats.Config{StoreDir: t.TempDir(), Port: natstest.FreePort(t), ServerName: fmt.Sprintf("quarry-%d", i),
			ClusterName: "quarry-test", ClusterPort: natstest.FreePort(t)}
		cl.routes = append(cl.routes, fmt.Sprintf("nats://127.0.0.1:%d", cfg.ClusterPort))
		cl.members = append(cl.members, &clusterMember{cfg: cfg})
	}
	t.Cleanup(func() {
		for i := range cl.members {
			cl.stop(i)
		}
	})
	return cl
}

// start starts member i (again).
func (cl *natsCluster) start(i int) {
	cl.t.Helper()
	m := cl.members[i]
	m.cfg.Routes = cl.routes
	ns, err := embednats.Start(m.cfg)
	if err != nil {
		cl.t.Fatalf("start %s: %v", m.cfg.ServerName, err)
	}
	m.ns = ns
}

// stop shuts member i down.
func (cl *natsCluster) stop(i int) {
	if m := cl.members[i]; m.ns != nil {
		m.ns.Shutdown()
		m.ns = nil
	}
}

// current reports whether a meta leader is elected and every running
// member is current with it.
func (cl *natsCluster) current() bool {
	leader := false
	for _, m := range cl.members {
		if m.ns == nil {
			continue
		}
		leader = leader || m.ns.NATS().JetStreamIsLeader()
		if !m.ns.NATS().JetStreamIsCurrent() {
			return false
		}
	}
	return leader
}

// urls is every member's client URL, comma separated, those of first
// (member indexes) first.
func (cl *natsCluster) urls(first ...int) string {
	order := slices.Clone(first)
	for i := range cl.members {
		order = append(order, i)
	}
	var urls []string
	for _, i := range order {
		u := fmt.Sprintf("nats://127.0.0.1:%d", cl.members[i].cfg.Port)
		if !slices.Contains(urls, u) {
			urls = append(urls, u)
		}
	}
	return strings.Join(urls, ",")
}

// member returns the index of the member named name.
func (cl *natsCluster) member(name string) int {
	cl.t.Helper()
	for i, m := range cl.members {
		if m.cfg.ServerName == name {
			return i
		}
	}
	cl.t.Fatalf("no cluster member is named %q", name)
	return -1
}

// lastSeqs returns the last sequence of every stream member i holds
// (its own copy, leader or not), or nil while it is down.
func (cl *natsCluster) lastSeqs(i int) map[string]uint64 {
	cl.t.Helper()
	m := cl.members[i]
	if m.ns == nil {
		return nil
	}
	info, err := m.ns.NATS().Jsz(&server.JSzOptions{Accounts: true, Streams: true})
	if err != nil {
		cl.t.Fatalf("jsz on %s: %v", m.cfg.ServerName, err)
	}
	seqs := map[string]uint64{}
	for _, a := range info.AccountDetails {
		for _, st := range a.Streams {
			seqs[st.Name] = st.State.LastSeq
		}
	}
	return seqs
}

// consumers returns how many consumers member i holds, by stream: for the
// ordered consumers roles follow streams and buckets with, the member the
// consumer lives on.
func (cl *natsCluster) consumers(i int) map[string]int {
	cl.t.Helper()
	info, err := cl.members[i].ns.NATS().Jsz(&server.JSzOptions{Accounts: true, Streams: true, Consumer: true})
	if err != nil {
		cl.t.Fatalf("jsz on %s: %v", cl.members[i].cfg.ServerName, err)
	}
	held := map[string]int{}
	for _, a := range info.AccountDetails {
		for _, st := range a.Streams {
			for _, c := range st.Consumer {
				if c.Cluster != nil && c.Cluster.Leader == cl.members[i].cfg.ServerName {
					held[st.Name]++
				}
			}
		}
	}
	return held
}

// leads says what member i leads (the JetStream meta group, streams)
// and how many streams.
func (cl *natsCluster) leads(i int) (string, int) {
	cl.t.Helper()
	ns := cl.members[i].ns.NATS()
	info, err := ns.Jsz(&server.JSzOptions{Accounts: true, Streams: true})
	if err != nil {
		cl.t.Fatalf("jsz on %s: %v", cl.members[i].cfg.ServerName, err)
	}
	var streams []string
	for _, a := range info.AccountDetails {
		for _, st := range a.Streams {
			if st.Cluster != nil && st.Cluster.Leader == ns.Name() {
				streams = append(streams, st.Name)
			}
		}
	}
	slices.Sort(streams)
	return fmt.Sprintf("meta leader %v, leads %d streams %v", ns.JetStreamIsLeader(), len(streams), streams), len(streams)
}

// caughtUp reports whether member i holds every stream as far as member
// peer does.
func (cl *natsCluster) caughtUp(i, peer int) bool {
	mine, theirs := cl.lastSeqs(i), cl.lastSeqs(peer)
	if len(theirs) == 0 {
		return false
	}
	for name, seq := range theirs {
		if mine[name] != seq {
			return false
		}
	}
	return true
}

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
	if *long {
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
	time.Sleep(500 * time.Millisecond) // a steady state before the fault

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
		time.Sleep(500 * time.Millisecond) // the load with a member down
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
	time.Sleep(500 * time.Millisecond) // the load after
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
		if len(got) != 18 {
			t.Errorf("%d streams, want Quarry's 18: %v", len(got), got)
		}
		for name, n := range got {
			if n != want {
				t.Errorf("stream %s at %d replicas, want %d", name, n, want)
			}
		}
	}
	allAt(got, 3)

	// A CLI client (no replicas said) creates an index and writes: the
	// deployment keeps its replication.
	if _, err := c.CreateIndex(ctx, "repl", 1, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Put(ctx, "repl", []byte(`{"id":"d1","name":"noodles"}`)); err != nil {
		t.Fatal(err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
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
		!strings.Contains(err.Error(), "--replicas 1, but this deployment's JetStream streams exist at 3 (QUARRY_DOCS and 17 more)") ||
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
