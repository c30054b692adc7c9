//go:build long

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/micro"

	"github.com/quarrysearch/quarry/api"
	"github.com/quarrysearch/quarry/broker"
	"github.com/quarrysearch/quarry/client"
	"github.com/quarrysearch/quarry/indexer"
	"github.com/quarrysearch/quarry/internal/catalog"
	"github.com/quarrysearch/quarry/internal/meta"
	"github.com/quarrysearch/quarry/internal/natstest"
	"github.com/quarrysearch/quarry/internal/shard"
	"github.com/quarrysearch/quarry/internal/subject"
	"github.com/quarrysearch/quarry/internal/testtier"
	"github.com/quarrysearch/quarry/internal/testwait"
	"github.com/quarrysearch/quarry/internal/wire"
	"github.com/quarrysearch/quarry/node"
	"github.com/quarrysearch/quarry/searcher"
)

// The fault suite's kill -9 tests: a process dies without a word (no
// drain, no clean-up) while queries or a build run, and the platform
// recovers by itself. In the long tier each kill happens once, with a
// short load; the soak variants (testtier.Soak) repeat the kills and load
// longer.
// killScale is how many times a test kills and how long the load runs
// steadily before each kill and after each recovery. These are spans of
// load the platform is put through (with one replica or broker down, or
// back), not waits for a state: the tests sleep for them.
func killScale() (rounds int, steady time.Duration) {
	if testtier.Soak {
		return 5, 3 * time.Second
	}
	return 1, 700 * time.Millisecond
}

// menuDocs writes n documents ("spicy noodles", "mild soup", "rice" in
// turn, ids d0…) to an NDJSON buffer.
func menuDocs(n int) *bytes.Buffer {
	var b bytes.Buffer
	for i := range n {
		fmt.Fprintf(&b, `{"id":"d%d","text":"%s"}`+"\n", i, []string{"spicy noodles", "mild soup", "rice"}[i%3])
	}
	return &b
}

var replicaInProfile = regexp.MustCompile(`replica (\S+), generation`)

// servedBy runs profiled searches, concurrently with whatever load is
// running, and counts the shard answers each replica gave.
func servedBy(t *testing.T, c *client.Client, index string, queries int) map[string]int {
	t.Helper()
	got := map[string]int{}
	for range queries {
		r, err := c.Search(context.Background(), index, &api.SearchRequest{Q: "spicy noodles", Profile: true})
		if err != nil || r.Profile == nil {
			t.Errorf("profiled search: %v", err)
			continue
		}
		for _, st := range r.Profile.Stages {
			if m := replicaInProfile.FindStringSubmatch(st.Detail); m != nil {
				got[m[1]]++
			}
		}
	}
	return got
}

// TestSearcherKill9UnderLoad kills with SIGKILL one of two searcher
// processes serving the same two shards while queries run, keeps the load
// going on the survivor, starts the dead one again (on the same data
// directory, or a new one every other round of the long variant) and
// waits until brokers route to it: at most 0.1% of the queries may fail,
// and the restarted replica takes traffic with no operator action.
func TestSearcherKill9UnderLoad(t *testing.T) {
	rounds, steady := killScale()
	url, c := cluster(t, false) // NATS, an indexer and a broker in process
	ctx := context.Background()
	const index, shards = "ks", 2
	if _, err := c.CreateIndex(ctx, index, shards, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Bulk(ctx, index, menuDocs(600), client.BulkOptions{}); err != nil {
		t.Fatal(err)
	}
	// Eight workers and 10 ms more per shard request keep requests in
	// flight at the killed replica at any moment (with hedging's failover;
	// before it, 2-5 queries failed per run at this load).
	workers, delay := 8, "10ms"
	var searchers []*role
	for range 2 {
		searchers = append(searchers, startRole(t, "searcher", "--nats", url, "--data", t.TempDir(), "--log-level", "warn",
			"--fault-delay", delay))
	}
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	serving := func() {
		t.Helper()
		for sh := range shards {
			waitResponders(t, nc, subject.Replicas(index, sh), 2)
		}
	}
	serving()
	waitTotal(t, c, index, "noodles", 200)

	lctx, stop := context.WithCancel(ctx)
	l := load{timeout: 5 * time.Second}
	wait := l.run(lctx, c, index, workers)
	defer func() { stop(); wait() }()
	time.Sleep(steady) // a span of load (killScale)
	for round := range rounds {
		victim := searchers[round%2]
		from, failedBefore := l.mark(), l.failed.Load()
		killed := time.Now()
		victim.kill()
		time.Sleep(steady) // a span of load with one replica serving every shard
		if round%2 == 1 {
			victim.setData(t.TempDir()) // a new machine: download and replay
		}
		victim.start()
		serving()
		back := time.Since(killed)
		time.Sleep(steady) // a span of load with both replicas back
		n, p50, p99, max := l.window(from, -1)
		failed := l.failed.Load() - failedBefore
		t.Logf("round %d: searcher killed, restarted and serving again after %s; %d queries meanwhile, %d failed; p50 %s, p99 %s, max %s",
			round+1, back.Round(time.Millisecond), n, failed, p50, p99, max)
		// Each kill on its own: a longer load must not dilute it.
		if failed*1000 > int64(n) {
			t.Errorf("round %d: %d of %d queries failed (over 0.1%%)", round+1, failed, n)
		}
	}
	// The restarted replica takes traffic: the broker learns of it from
	// the queue group's answers and its discovery, and picks it again.
	ids := map[string]bool{}
	for sh := range shards {
		for _, id := range answers(t, nc, subject.Replicas(index, sh)) {
			ids[string(id)] = true
		}
	}
	served := servedBy(t, c, index, 60)
	stop()
	wait()
	q, failed := l.queries.Load(), l.failed.Load()
	_, p50, p99, max := l.window(0, -1)
	t.Logf("%d queries, %d failed (%.3f%%); whole run p50 %s, p99 %s, max %s; shard answers by replica after the restart: %v",
		q, failed, 100*float64(failed)/float64(q), p50, p99, max, served)
	if len(ids) != 2 {
		t.Fatalf("replicas answering discovery after the restart: %v, want two", ids)
	}
	for id := range ids {
		if served[id] == 0 {
			t.Errorf("replica %s serves its shards but took none of %d profiled queries' shard requests: %v", id, 60, served)
		}
	}
	if failed*1000 > q {
		t.Errorf("%d of %d queries failed (over 0.1%%): %s", failed, q, l.failures())
	}
	if q < 200 {
		t.Errorf("only %d queries ran: the load did not overlap the kill", q)
	}
}

// TestBrokerKill9UnderLoad kills with SIGKILL one of two broker processes
// while queries run and starts it again. The queries in flight at the
// killed broker get no answer and fail at their deadline: with one query
// at a time per load worker, at most one per worker and kill. Every other
// query succeeds, and after the restart both brokers answer the micro
// service's PING and take searches.
func TestBrokerKill9UnderLoad(t *testing.T) {
	rounds, steady := killScale()
	s := natstest.Start(t)
	url := s.ClientURL()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	n, err := node.Start(ctx, node.Config{DataDir: t.TempDir(), NATSURL: url,
		Indexer: &indexer.Config{SnapshotInterval: -1}, Searcher: &searcher.Config{}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(n.Close)
	c := n.Client()
	const index = "kb"
	if _, err := c.CreateIndex(ctx, index, 2, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Bulk(ctx, index, menuDocs(600), client.BulkOptions{}); err != nil {
		t.Fatal(err)
	}
	var brokers []*role
	for range 2 {
		brokers = append(brokers, startRole(t, "broker", "--nats", url, "--data", t.TempDir(), "--http", "", "--log-level", "warn"))
	}
	nc := s.Conn(t, "probe")
	ping := "$SRV.PING." + subject.ServiceName
	waitResponders(t, nc, ping, 2)
	waitTotal(t, c, index, "noodles", 200)

	const workers = 4
	lctx, stop := context.WithCancel(context.Background())
	// A client's own deadline: what bounds a query its broker dropped.
	l := load{timeout: time.Second}
	wait := l.run(lctx, c, index, workers)
	defer func() { stop(); wait() }()
	time.Sleep(steady) // a span of load (killScale)
	for round := range rounds {
		victim := brokers[round%2]
		from, failedBefore := l.mark(), l.failed.Load()
		killed := time.Now()
		victim.kill()
		time.Sleep(steady) // a span of load with one broker serving
		victim.start()
		waitResponders(t, nc, ping, 2)
		back := time.Since(killed)
		time.Sleep(steady) // a span of load with both brokers back
		n, p50, p99, max := l.window(from, -1)
		t.Logf("round %d: broker killed, restarted and answering again after %s; %d queries meanwhile, %d failed; p50 %s, p99 %s, max %s",
			round+1, back.Round(time.Millisecond), n, l.failed.Load()-failedBefore, p50, p99, max)
	}
	stop()
	wait()
	// Both brokers took searches since the last restart: the restarted
	// one is back in the service's queue group.
	stats := answers(t, nc, "$SRV.STATS."+subject.ServiceName)
	var took []int
	for _, b := range stats {
		var st micro.Stats
		if err := json.Unmarshal(b, &st); err != nil {
			t.Fatalf("$SRV.STATS answer %s: %v", b, err)
		}
		reqs := 0
		for _, e := range st.Endpoints {
			reqs += e.NumRequests
		}
		took = append(took, reqs)
	}
	q, failed := l.queries.Load(), l.failed.Load()
	_, p50, p99, max := l.window(0, -1)
	t.Logf("%d queries, %d failed (%.3f%%, bound %d: %d workers × %d kills); whole run p50 %s, p99 %s, max %s; requests per broker instance: %v",
		q, failed, 100*float64(failed)/float64(q), workers*rounds, workers, rounds, p50, p99, max, took)
	if len(took) != 2 || slices.Contains(took, 0) {
		t.Errorf("requests per broker instance after the restart: %v, want two brokers taking searches", took)
	}
	if failed > int64(workers*rounds) {
		t.Errorf("%d of %d queries failed, more than the %d that can be in flight at a killed broker: %s", failed, q, workers*rounds, l.failures())
	}
	l.mu.Lock()
	other := slices.ContainsFunc(l.errs, func(e string) bool { return !strings.Contains(e, context.DeadlineExceeded.Error()) })
	l.mu.Unlock()
	if other {
		t.Errorf("queries failed otherwise than by waiting on the dead broker: %s", l.failures())
	}
	if q < 200 {
		t.Errorf("only %d queries ran: the load did not overlap the kill", q)
	}
}

// TestIndexerKill9MidBuild kills with SIGKILL an indexer process while it
// indexes a bulk load, then again while it builds the generation after
// it: the manifest still names the previous generation, whose snapshots
// stay whole and keep serving (searches never fail; a searcher started
// meanwhile loads it); the indexer, started again on its data directory,
// builds a complete new generation holding every acknowledged document,
// checked in the snapshots themselves (no stream replay to fill gaps) by
// count and by id.
func TestIndexerKill9MidBuild(t *testing.T) {
	rounds, _ := killScale()
	perRound := 5000
	if testtier.Soak {
		rounds, perRound = 3, 15000
	}
	s := natstest.Start(t)
	url := s.ClientURL()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	// A broker in process; the indexer and the searchers are processes.
	n, err := node.Start(ctx, node.Config{DataDir: t.TempDir(), NATSURL: url, Broker: &broker.Config{}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(n.Close)
	c := n.Client()
	store, err := meta.Open(ctx, s.JS, meta.Options{})
	if err != nil {
		t.Fatal(err)
	}
	const index, shards = "ki", 4
	if _, err := c.CreateIndex(ctx, index, shards, catalog.Mapping()); err != nil {
		t.Fatal(err)
	}
	ixData := t.TempDir()
	ix := startRole(t, "indexer", "--nats", url, "--data", ixData, "--snapshot-interval", "0", "--log-level", "warn")
	items := catalog.Generate(catalog.DefaultSeed, 1000+rounds*perRound)
	ingest := func(part []catalog.Item) uint64 {
		t.Helper()
		var b bytes.Buffer
		catalog.WriteNDJSON(&b, part)
		res, err := c.Bulk(ctx, index, &b, client.BulkOptions{NoSnapshot: true})
		if err != nil || res.Stored != len(part) {
			t.Fatalf("bulk of %d documents: %+v, %v", len(part), res, err)
		}
		return res.LastSeq
	}
	// askSnapshot asks for a generation holding everything up to seq,
	// waiting for an indexer to take the request.
	askSnapshot := func(ctx context.Context, seq uint64) (r client.SnapshotResult, err error) {
		// Until an indexer answers: Poll, not waitFor, as this runs in
		// a goroutine too, which may not fail the test.
		testwait.Poll(ctx, func() bool {
			r, err = c.Snapshot(ctx, index, seq)
			return !errors.Is(err, api.ErrUnavailable)
		})
		return r, err
	}
	snapshot := func(seq uint64) client.SnapshotResult {
		t.Helper()
		r, err := askSnapshot(ctx, seq)
		if err != nil {
			t.Fatalf("snapshot: %v\n%s", err, ix.logs)
		}
		return r
	}
	acked := 1000
	seq := ingest(items[:acked])
	gen1 := snapshot(seq)
	if gen1.Docs != uint64(acked) {
		t.Fatalf("first generation: %+v, want %d documents", gen1, acked)
	}

	searcherArgs := func() []string {
		return []string{"searcher", "--nats", url, "--data", t.TempDir(), "--log-level", "warn"}
	}
	startRole(t, searcherArgs()...)
	nc := s.Conn(t, "probe")
	serving := func(want int) {
		t.Helper()
		for sh := range shards {
			waitResponders(t, nc, subject.Replicas(index, sh), want)
		}
	}
	serving(1)
	all := func(want int) {
		t.Helper()
		waitTotalOf(t, c, index, &api.SearchRequest{Query: json.RawMessage(`{"match_all":{}}`)}, uint64(want))
	}
	all(acked)
	lctx, stop := context.WithCancel(context.Background())
	l := load{timeout: 5 * time.Second}
	wait := l.run(lctx, c, index, 2)
	defer func() { stop(); wait() }()

	replicas := 1
	for round := range rounds {
		prev, _, err := store.Manifest(ctx, index)
		if err != nil {
			t.Fatal(err)
		}
		part := items[acked : acked+perRound]
		seq = ingest(part) // acknowledged by the stream
		acked += perRound

		// First kill: the stream has acknowledged the bulk, the indexer
		// is still indexing it. Started again, it resumes from what its
		// local replicas hold.
		ix.kill()
		ix.start()

		// Second kill: while it uploads the generation (one shard's
		// snapshot is in the object store, the manifest still names the
		// old generation) or, every other round of the long variant, as
		// soon as it starts building it.
		when := []string{"publishing", "building"}[round%2]
		asked := time.Now()
		snapCtx, cancelSnap := context.WithCancel(ctx)
		snapErr := make(chan error, 1)
		go func() {
			_, err := askSnapshot(snapCtx, seq)
			snapErr <- err
		}()
		ready := func() bool { // its working directory is there
			m, _ := filepath.Glob(filepath.Join(ixData, "indexer", ".snapshot-*", "*"))
			return len(m) > 0
		}
		if when == "publishing" {
			first := subject.SegmentObjectPrefix(index, prev.Generation+1, 0)
			ready = func() bool {
				objs, _ := store.Segments.List(ctx)
				for _, o := range objs {
					if strings.HasPrefix(o.Name, first) {
						return true
					}
				}
				return false
			}
		}
		for !ready() {
			if time.Since(asked) > time.Minute {
				t.Fatalf("the indexer was not %s generation %d within a minute\n%s", when, prev.Generation+1, ix.logs)
			}
			// A poll every millisecond, finer than waitFor's: the
			// kill must land within the build.
			time.Sleep(time.Millisecond)
		}
		ix.kill()
		cancelSnap()
		if err := <-snapErr; err == nil {
			t.Fatalf("the kill came too late: the snapshot request was answered; make the bulk bigger")
		}
		t.Logf("round %d: indexer killed while indexing the bulk, then while %s generation %d (%d documents acknowledged), %s after the snapshot request",
			round+1, when, prev.Generation+1, acked, time.Since(asked).Round(time.Millisecond))

		// The manifest still names the previous generation, and its
		// snapshots are whole.
		cur, _, err := store.Manifest(ctx, index)
		if err != nil {
			t.Fatal(err)
		}
		if cur.Generation != prev.Generation {
			t.Fatalf("the kill came too late: generation %d was published (want the build of %d cut short); make the bulk bigger",
				cur.Generation, prev.Generation+1)
		}
		checkGeneration(t, store, cur, items[:acked-perRound])
		// A searcher started while the indexer is dead loads it (and
		// replays the stream after it), and searches keep answering.
		startRole(t, searcherArgs()...)
		replicas++
		serving(replicas)
		all(acked)

		// Started again on its data directory, the indexer builds a
		// complete new generation: every acknowledged document is in it.
		ix.start()
		restarted := time.Now()
		next := snapshot(seq)
		if next.Generation <= prev.Generation || next.Docs != uint64(acked) {
			t.Fatalf("after the restart: generation %d with %d documents, want a generation after %d with %d\n%s",
				next.Generation, next.Docs, prev.Generation, acked, ix.logs)
		}
		m, _, err := store.Manifest(ctx, index)
		if err != nil {
			t.Fatal(err)
		}
		checkGeneration(t, store, m, items[:acked])
		t.Logf("round %d: the restarted indexer published generation %d with %d documents (%d bytes) %s after its start",
			round+1, m.Generation, next.Docs, next.Bytes, time.Since(restarted).Round(time.Millisecond))
	}
	// The searchers swap to the last generation and answer with every
	// document, by count and by id.
	all(acked)
	var ids []string
	for _, i := range []int{0, 999, 1000, acked / 2, acked - 1} {
		ids = append(ids, items[i].ID)
	}
	q, _ := json.Marshal(map[string]any{"ids": ids})
	waitTotalOf(t, c, index, &api.SearchRequest{Query: q}, uint64(len(ids)))
	stop()
	wait()
	t.Logf("%d queries during the kills, %d failed", l.queries.Load(), l.failed.Load())
	if l.failed.Load() > 0 {
		t.Errorf("%d queries failed while the indexer was down: %s", l.failed.Load(), l.failures())
	}
	// The killed builds' working directories (copies of the index) are
	// gone: the restarted indexer removed them.
	if left, _ := filepath.Glob(filepath.Join(ixData, "indexer", ".snapshot-*")); len(left) > 0 {
		var size int64
		for _, dir := range left {
			filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
				if err == nil && !d.IsDir() {
					if fi, err := d.Info(); err == nil {
						size += fi.Size()
					}
				}
				return nil
			})
		}
		t.Errorf("left behind in the indexer's data directory by the killed builds: %d working directories, %d bytes", len(left), size)
	}
	// Reported, not checked: an upload cut short leaves chunks that no
	// object names.
	if st, err := store.Segments.Status(ctx); err == nil {
		var live uint64
		objs, _ := store.Segments.List(ctx)
		for _, o := range objs {
			live += o.Size
		}
		t.Logf("segments bucket: %d bytes stored, %d bytes in its %d objects", st.Size(), live, len(objs))
	}
}

// checkGeneration opens every shard snapshot of manifest m from the object
// store as a searcher would, without replaying the stream, and checks
// that together they hold exactly the documents of want.
func checkGeneration(t *testing.T, store *meta.Store, m meta.Manifest, want []catalog.Item) {
	t.Helper()
	ctx := context.Background()
	var total uint64
	var reps []*shard.Replica
	defer func() {
		for _, r := range reps {
			r.Close()
		}
	}()
	for _, s := range m.Shards {
		r, err := shard.OpenSnapshot(ctx, shard.Config{Index: m.Index, Shard: s.Shard, Dir: filepath.Join(t.TempDir(), "shard"), Store: store}, m.Generation, s)
		if err != nil {
			t.Fatalf("generation %d, shard %d: %v", m.Generation, s.Shard, err)
		}
		reps = append(reps, r)
		n, err := r.DocCount()
		if err != nil {
			t.Fatal(err)
		}
		if n != s.Docs {
			t.Errorf("generation %d, shard %d holds %d documents, its manifest says %d", m.Generation, s.Shard, n, s.Docs)
		}
		total += n
	}
	if total != uint64(len(want)) {
		t.Fatalf("generation %d holds %d documents, want %d", m.Generation, total, len(want))
	}
	// Every acknowledged document, by id: each is in exactly one shard.
	found := map[string]int{}
	for lo := 0; lo < len(want); lo += 1000 {
		var ids []string
		for _, it := range want[lo:min(lo+1000, len(want))] {
			ids = append(ids, it.ID)
		}
		q, _ := json.Marshal(map[string]any{"ids": ids})
		for _, r := range reps {
			res, err := r.Search(ctx, &wire.ShardRequest{Query: q, K: len(ids)})
			if err != nil {
				t.Fatal(err)
			}
			for _, h := range res.Hits {
				found[h.ID]++
			}
		}
	}
	for _, it := range want {
		if found[it.ID] != 1 {
			t.Fatalf("generation %d: document %s found %d times, want once", m.Generation, it.ID, found[it.ID])
		}
	}
}
