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

	"github.com/quarrysearch/quarry/api"
	"github.com/quarrysearch/quarry/broker"
	"github.com/quarrysearch/quarry/client"
	"github.com/quarrysearch/quarry/indexer"
	"github.com/quarrysearch/quarry/internal/embednats"
	"github.com/quarrysearch/quarry/internal/natstest"
	"github.com/quarrysearch/quarry/internal/testtier"
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
	waitUntil(t, 5*time.Second, fmt.Sprintf("activate %s %s on %s past stale reads", plugin, digest, index), func() bool {
		_, err := c.ActivatePlugin(context.Background(), index, plugin, digest)
		if err != nil && !errors.Is(err, api.ErrNotFound) {
			t.Fatalf("activate %s %s on %s: %v", plugin, digest, index, err)
		}
		if err != nil {
			t.Logf("activate %s on %s: a stale read: %v", plugin, index, err)
		}
		return err == nil
	})
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
	t.Parallel()
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
	if testtier.Soak {
		outage, rate = 5*time.Second, 200
	}
	ext, extNC := externalClient(t, ns.URL())
	load := startLoad(ext, "nr", "noodles", rate, 2*time.Second)
	defer load.Stop()
	load.waitAnswered(t, time.Time{}, int(rate), "a steady state before the fault: a second's queries answered")

	down := time.Now()
	ns.Stop()
	time.Sleep(outage) // the exposure time of the fault: the server stays down this long
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
	load.waitAnswered(t, time.Now(), int(rate), "the load after the recovery: a second's queries answered")

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
