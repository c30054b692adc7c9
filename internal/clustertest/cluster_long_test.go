//go:build long

package clustertest

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/quarrysearch/quarry/api"
	"github.com/quarrysearch/quarry/client"
	"github.com/quarrysearch/quarry/internal/meta"
	"github.com/quarrysearch/quarry/internal/natstest"
	"github.com/quarrysearch/quarry/internal/testtier"
	"github.com/quarrysearch/quarry/internal/testwait"
)

// The long tier runs the short variant (about a minute and a half); the
// soak variant (testtier.Soak) kills every NATS member in turn, every
// role, restarts the members one by one in lame-duck mode and loads more:
//
//	go test -tags long,soak -run TestDeployCluster ./internal/clustertest -v

// Bounds the test holds.
const (
	// maxFailed is the share of queries that may fail (an error or a
	// partial result) over the whole run.
	maxFailed = 0.01
	// maxFailedOutsideOwn is the share that may fail outside the moments
	// the client's own member died (held by the long variant: the short
	// one's few thousand queries make a single timeout 0.05%).
	maxFailedOutsideOwn = 0.001
	// probeBound is how long after a NATS member is killed a document put
	// then may take to be searchable.
	probeBound = 15 * time.Second
	// queryTimeout bounds each query of the load.
	queryTimeout = 3 * time.Second
)

// TestDeployCluster runs Quarry as examples/deploy/ deploys it, every part
// a process of its own: three nats-server members from nats/nats.conf,
// `quarry init --replicas 3`, then an indexer, two searchers and two
// brokers from the systemd units, started at the same moment. It loads
// part of the catalogue into an index of team food and, under a steady
// query load (as team food, through two connections to different
// members) and a steady stream of writes, kills with -9 the NATS meta
// leader (soak: every member in turn), a searcher, a broker and
// the indexer, starting each again as systemd would (soak: every
// role, and a rolling restart of the members in lame-duck mode). No
// operator acts. At most 1% of the queries may fail; every acknowledged
// write is searchable at the end.
func TestDeployCluster(t *testing.T) {
	began := time.Now()
	b := build(t)
	t.Logf("built nats-server and quarry in %s", time.Since(began).Round(time.Millisecond))

	// The members, at the same moment.
	cl := newNATSCluster(t, b)
	for _, m := range cl.members {
		m.start()
	}
	quarryEnv := func(first int) map[string]string {
		return map[string]string{"QUARRY_NATS": cl.urls(first), "QUARRY_NATS_PASSWORD": passwords["QUARRY_NATS_PASSWORD"]}
	}
	run := func(args ...string) (string, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, b.path("quarry"), args...)
		cmd.Dir = root
		cmd.Env = os.Environ()
		for k, v := range quarryEnv(0) {
			cmd.Env = append(cmd.Env, k+"="+v)
		}
		out, err := cmd.CombinedOutput()
		if err != nil {
			return string(out), fmt.Errorf("quarry %s: %w\n%s", strings.Join(args, " "), err, out)
		}
		return string(out), nil
	}
	cli := func(args ...string) string {
		t.Helper()
		out, err := run(args...)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	// initOut runs one quarry init on a goroutine of its own: its output,
	// or "" with the failure logged.
	initOut := func(i int) string {
		out, err := run("init", "--user", "quarry", "--replicas", "3")
		if err != nil {
			t.Errorf("init %d: %v", i+1, err)
			return ""
		}
		return out
	}

	// The init job and every role at the same moment, as an orchestrator
	// starts a one-off init beside the roles: init decides replication
	// (docs/deploy.md) and makes Quarry's resources; the roles make none
	// and wait for them. init waits while the cluster elects its meta
	// leader, but fails at once if no member listens (systemd would start
	// it again).
	waitFor(t, 30*time.Second, "the members listen", func() bool {
		for _, m := range cl.members {
			c, err := net.DialTimeout("tcp", strings.TrimPrefix(m.url(), "nats://"), time.Second)
			if err != nil {
				return false
			}
			c.Close()
		}
		return true
	})
	// Every role, at the same moment, each from its unit, each told
	// the members in another order.
	type roleSpec struct{ name, unit, instance string }
	specs := []roleSpec{{"indexer", "quarry-indexer.service", ""},
		{"searcher-1", "quarry-searcher@.service", "1"}, {"searcher-2", "quarry-searcher@.service", "2"},
		{"broker-1", "quarry-broker@.service", "1"}, {"broker-2", "quarry-broker@.service", "2"}}
	roles := map[string]*proc{}
	readyAt := map[string]string{} // each role's listener of GET /readyz: its metrics, else its HTTP API
	for k, s := range specs {
		set := quarryEnv(k)
		set["QUARRY_DATA"] = t.TempDir()
		set["QUARRY_METRICS"] = fmt.Sprintf("127.0.0.1:%d", natstest.FreePort(t))
		set["QUARRY_HTTP"] = fmt.Sprintf("127.0.0.1:%d", natstest.FreePort(t))
		argv, env := readUnit(t, s.unit).command(b, s.instance, set)
		roles[s.name] = newProc(t, s.name, argv, env)
		for _, flag := range []string{"--http", "--metrics"} {
			if i := slices.Index(argv, flag); i >= 0 && i+1 < len(argv) && argv[i+1] != "" {
				readyAt[s.name] = argv[i+1]
			}
		}
		if readyAt[s.name] == "" {
			t.Fatalf("%s (%s): no --metrics or --http listener to ask if it is ready", s.name, strings.Join(argv, " "))
		}
	}
	together := time.Now()
	for _, s := range specs {
		roles[s.name].start()
	}
	// Two inits at once, as two deploy jobs may run: neither waits on
	// the other's timeouts, and both say what they made.
	initOuts := make([]string, 2)
	var inits sync.WaitGroup
	for i := range initOuts {
		inits.Go(func() { initOuts[i] = initOut(i) })
	}
	inits.Wait()
	for i, out := range initOuts {
		for _, line := range strings.Split(out, "\n") {
			if strings.Contains(line, "JetStream is ready") {
				t.Logf("init %d: %s", i+1, line) // a resource it waited for
			}
		}
		if out == "" {
			t.Fatalf("quarry init %d of 2 failed (logged above)", i+1)
		}
		if n := strings.Count(out, "  3\n"); n != meta.Resources {
			t.Fatalf("quarry init --replicas 3 (%d of 2): %d streams at 3 replicas, want %d:\n%s", i+1, n, meta.Resources, out)
		}
	}
	t.Logf("two quarry init --replicas 3 at once, beside the roles, done %s after they started (%s after the members)", time.Since(together).Round(time.Millisecond), time.Since(began).Round(time.Millisecond))
	// Within 20 s of starting beside init, every role serves.
	waitFor(t, 20*time.Second-time.Since(together), "every role ready within 20 s of starting beside quarry init", func() bool {
		for _, s := range specs {
			if !ready(readyAt[s.name]) {
				return false
			}
		}
		return true
	})
	t.Logf("every role ready %s after it started beside quarry init", time.Since(together).Round(time.Millisecond))

	var varz struct {
		JetStream struct {
			Config struct {
				SyncAlways bool `json:"sync_always"`
			} `json:"config"`
		} `json:"jetstream"`
	}
	if err := cl.members[0].monitor("/varz", &varz); err != nil || !varz.JetStream.Config.SyncAlways {
		t.Fatalf("nats.conf: JetStream does not sync every write (%v)", err)
	}

	// Data: part of the catalogue, in an index of team food.
	docs := 300
	if testtier.Soak {
		docs = 2000
	}
	cli("index", "create", "menu", "--shards", "2", "--team", "food", "--mapping", "examples/catalog/mapping.json", "--user", "quarry")
	catalogue := firstLines(t, filepath.Join(root, "examples", "catalog", "menu.ndjson"), docs)
	cli("ingest", "menu", catalogue, "--user", "quarry")
	t.Logf("%d documents ingested %s after the start", docs, time.Since(began).Round(time.Millisecond))

	// The application: team food, two connections to different members.
	rate := 50.0
	if testtier.Soak {
		rate = 100
	}
	var loads []*load
	for k := range 2 {
		loads = append(loads, startLoad(t, cl.urls(k), rate/2))
	}
	operator := connect(t, cl.urls(2), nats.UserInfo("quarry", passwords["QUARRY_NATS_PASSWORD"]))
	waitFor(t, 60*time.Second, "every catalogue document is searchable", func() bool {
		r, err := operator.c.Search(context.Background(), "menu", &api.SearchRequest{Query: []byte(`{"match_all":{}}`), Size: api.NoHits})
		return err == nil && r.Shards.Failed == 0 && r.Total == uint64(docs)
	})
	t.Logf("served %s after the start", time.Since(began).Round(time.Millisecond))
	for _, l := range loads {
		l.run()
	}
	// The operator's client opens Quarry's streams once, before any
	// fault (a JetStream API request waits for a meta leader).
	if _, err := operator.c.Put(context.Background(), "menu", []byte(`{"id":"warm-up","name":"warm"}`)); err != nil {
		t.Fatal(err)
	}
	w := startWriter(t, cl.urls(1), 10)

	steady := 2 * time.Second
	if testtier.Soak {
		steady = 5 * time.Second
	}
	// span runs the platform through a steady span of load, counted in
	// what went through it rather than in time: from now, each load
	// answers a steady's worth of its queries and the writer tries a
	// steady's worth of writes.
	perLoad, writes := int(rate/2*steady.Seconds()), int64(10*steady.Seconds())
	span := func(what string) {
		t.Helper()
		since, tried := time.Now(), w.attempts.Load()
		waitFor(t, steady+time.Minute, what, func() bool {
			for _, l := range loads {
				if l.answered(since) < perLoad {
					return false
				}
			}
			return w.attempts.Load()-tried >= writes
		})
	}
	span("a steady span of load before the faults")

	var kills []time.Time // when a NATS member was killed
	// killMember kills m with -9, puts a document and times how long it
	// takes to be searchable, then starts m again and waits until it is
	// healthy (current with the meta leader and every stream).
	killMember := func(m *member, word string) {
		t.Helper()
		leader := cl.metaLeader() == m.name
		var connz struct {
			Conns []struct {
				Name string `json:"name"`
			} `json:"connections"`
		}
		roleConns := 0
		if err := m.monitor("/connz?limit=1000", &connz); err == nil {
			for _, c := range connz.Conns {
				if c.Name == "quarry" {
					roleConns++
				}
			}
		}
		down := time.Now()
		kills = append(kills, down)
		m.kill()
		acked, found := probe(t, operator.c, word)
		t.Logf("%s killed (meta leader: %v, %d of the 5 roles connected to it): a document put then was acknowledged after %s, searchable (10 searches in a row) after %s",
			m.name, leader, roleConns, acked.Round(time.Millisecond), found.Round(time.Millisecond))
		if found > probeBound {
			t.Errorf("a document put after %s was killed was searchable after %s, want at most %s", m.name, found, probeBound)
		}
		time.Sleep(time.Second) // the exposure time of the fault: the member stays dead a second more
		m.start()
		took := waitFor(t, 90*time.Second, m.name+" is healthy again", cl.healthy)
		t.Logf("%s back: healthy %s after it started, meta leader %s", m.name, took.Round(time.Millisecond), cl.metaLeader())
		span("a steady span of load with " + m.name + " back")
	}
	// killRole kills a role with -9 and starts it again a second later;
	// it must get ready and keep running under the load.
	killRole := func(name string) {
		t.Helper()
		p := roles[name]
		p.kill()
		time.Sleep(time.Second) // the exposure time of the fault: the role stays dead a second
		p.start()
		took := waitFor(t, 90*time.Second, name+" is ready again", func() bool { return !p.running() || ready(readyAt[name]) })
		if !p.running() {
			t.Fatalf("%s exited after its restart", name)
		}
		t.Logf("%s killed and started again: ready %s after it started", name, took.Round(time.Millisecond))
		span("a steady span of load with " + name + " back")
		if !p.running() {
			t.Fatalf("%s exited after its restart", name)
		}
	}

	leader := cl.metaLeader()
	if leader == "" {
		t.Fatal("no meta leader")
	}
	order := []*member{cl.byName(leader)}
	if testtier.Soak {
		for _, m := range cl.members {
			if m.name != leader {
				order = append(order, m)
			}
		}
	}
	for k, m := range order {
		killMember(m, []string{"alpha", "bravo", "charlie"}[k])
	}
	roleOrder := []string{"searcher-1", "broker-1", "indexer"}
	if testtier.Soak {
		roleOrder = []string{"searcher-1", "searcher-2", "broker-1", "broker-2", "indexer"}
	}
	for _, name := range roleOrder {
		killRole(name)
	}
	if testtier.Soak {
		// A rolling restart: each member in lame-duck mode, as
		// `systemctl restart nats-server` does (KillSignal=SIGUSR2).
		for _, m := range cl.members {
			ldm := exec.Command(b.path("nats-server"), "--signal", fmt.Sprintf("ldm=%d", m.pid()))
			if out, err := ldm.CombinedOutput(); err != nil {
				t.Fatalf("nats-server --signal ldm=%d: %v\n%s", m.pid(), err, out)
			}
			start := time.Now()
			if !m.exited(60 * time.Second) {
				t.Fatalf("%s still runs 60 s after lame-duck mode began", m.name)
			}
			m.start()
			took := waitFor(t, 90*time.Second, m.name+" is healthy again", cl.healthy)
			t.Logf("%s restarted in lame-duck mode: exited after %s, healthy %s after it started", m.name, time.Since(start).Round(time.Millisecond)-took, took.Round(time.Millisecond))
			span("a steady span of load with " + m.name + " restarted")
		}
	}
	span("a steady span of load at the end")

	// The end: every role still runs, the load's figures, every
	// acknowledged write searchable.
	acked := w.stop()
	var outs []outcome
	for _, l := range loads {
		outs = append(outs, l.stop()...)
	}
	for name, p := range roles {
		if !p.running() {
			t.Errorf("%s is not running", name)
		}
	}
	report(t, outs, kills)
	waitFor(t, 60*time.Second, fmt.Sprintf("the %d acknowledged writes are searchable", len(acked)), func() bool {
		return missing(t, operator.c, acked) == 0
	})
	t.Logf("%d writes acknowledged (%d refused or unanswered), every one searchable; %s in all",
		len(acked), w.failed.Load(), time.Since(began).Round(time.Millisecond))
}

// firstLines writes the first n lines of path to a temporary file.
func firstLines(t *testing.T, path string, n int) string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var buf bytes.Buffer
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for i := 0; i < n && sc.Scan(); i++ {
		buf.Write(sc.Bytes())
		buf.WriteByte('\n')
	}
	out := filepath.Join(t.TempDir(), "docs.ndjson")
	if err := os.WriteFile(out, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return out
}

// conn is an application's connection and client; it reconnects forever
// and records when it lost and regained its server.
type conn struct {
	nc *nats.Conn
	c  *client.Client

	mu     sync.Mutex
	gaps   [][2]time.Time // disconnected, reconnected
	lostAt time.Time
}

func connect(t *testing.T, urls string, opts ...nats.Option) *conn {
	t.Helper()
	k := &conn{}
	opts = append([]nats.Option{nats.DontRandomize(), nats.MaxReconnects(-1),
		nats.DisconnectErrHandler(func(*nats.Conn, error) {
			k.mu.Lock()
			k.lostAt = time.Now()
			k.mu.Unlock()
		}),
		nats.ReconnectHandler(func(*nats.Conn) {
			k.mu.Lock()
			k.gaps = append(k.gaps, [2]time.Time{k.lostAt, time.Now()})
			k.mu.Unlock()
		})}, opts...)
	nc, err := nats.Connect(urls, opts...)
	if err != nil {
		t.Fatalf("connect to %s: %v", urls, err)
	}
	t.Cleanup(nc.Close)
	k.nc = nc
	k.c, err = client.New(context.Background(), nc, client.Options{RequestTimeout: queryTimeout})
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// ownDeath reports whether a query started at start fell in a moment
// this connection's own member died: from a query timeout before the
// connection was lost to a second after it was regained.
func (k *conn) ownDeath(start time.Time) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	for _, g := range k.gaps {
		if start.After(g[0].Add(-queryTimeout)) && start.Before(g[1].Add(time.Second)) {
			return true
		}
	}
	return false
}

// outcome is one query of the load.
type outcome struct {
	start, end time.Time
	err        error
	partial    bool
	own        bool // started at a moment its connection's member died
}

func (o outcome) failed() bool { return o.err != nil || o.partial }

// load searches the index menu as team food at a steady rate, each
// query on a goroutine of its own.
type load struct {
	t       *testing.T
	k       *conn
	rate    float64
	stopped chan struct{}
	wg      sync.WaitGroup
	mu      sync.Mutex
	outs    []outcome
}

var queries = []string{"noodles", "pizza", "salad", "spicy chicken", "tofu", "chocolate cake", "fresh basil", "soup"}

func startLoad(t *testing.T, urls string, rate float64) *load {
	k := connect(t, urls, nats.UserInfo("food", passwords["FOOD_PASSWORD"]), nats.CustomInboxPrefix("_INBOX_food"))
	return &load{t: t, k: k, rate: rate, stopped: make(chan struct{})}
}

// answered counts the queries started at or after since that have
// ended (answered, failed or given up).
func (l *load) answered(since time.Time) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, o := range l.outs {
		if !o.start.Before(since) {
			n++
		}
	}
	return n
}

func (l *load) run() {
	l.wg.Go(func() {
		tick := time.NewTicker(time.Duration(float64(time.Second) / l.rate))
		defer tick.Stop()
		for i := 0; ; i++ {
			select {
			case <-l.stopped:
				return
			case <-tick.C:
			}
			l.wg.Go(func() {
				ctx, cancel := context.WithTimeout(context.Background(), queryTimeout)
				defer cancel()
				o := outcome{start: time.Now()}
				r, err := l.k.c.Search(ctx, "menu", &api.SearchRequest{Q: queries[i%len(queries)], Size: 5})
				o.end, o.err = time.Now(), err
				o.partial = err == nil && r.Shards.Failed > 0
				l.mu.Lock()
				l.outs = append(l.outs, o)
				l.mu.Unlock()
			})
		}
	})
}

// stop ends the load and returns its queries, each marked if it started
// at a moment its own member died.
func (l *load) stop() []outcome {
	close(l.stopped)
	l.wg.Wait()
	for i := range l.outs {
		l.outs[i].own = l.k.ownDeath(l.outs[i].start)
	}
	return l.outs
}

// writer puts documents at a steady rate, one at a time, as the operator
// (team food's writes go through its operators: docs/teams.md), and keeps
// the ids acknowledged.
type writer struct {
	stopped  chan struct{}
	done     chan struct{}
	acked    []string
	failed   atomic.Int64
	attempts atomic.Int64 // writes tried and answered (acknowledged or not)
}

func startWriter(t *testing.T, urls string, rate float64) *writer {
	k := connect(t, urls, nats.UserInfo("quarry", passwords["QUARRY_NATS_PASSWORD"]))
	w := &writer{stopped: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(w.done)
		tick := time.NewTicker(time.Duration(float64(time.Second) / rate))
		defer tick.Stop()
		for i := 0; ; i++ {
			select {
			case <-w.stopped:
				return
			case <-tick.C:
			}
			id := fmt.Sprintf("w-%d", i)
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			_, err := k.c.Put(ctx, "menu", fmt.Appendf(nil, `{"id":%q,"name":"quarrywrite %s","description":"written under faults"}`, id, id))
			cancel()
			w.attempts.Add(1)
			if err != nil {
				w.failed.Add(1)
				continue
			}
			w.acked = append(w.acked, id)
		}
	}()
	return w
}

func (w *writer) stop() []string {
	close(w.stopped)
	<-w.done
	return w.acked
}

// missing returns how many of ids a search does not find.
func missing(t *testing.T, c *client.Client, ids []string) int {
	found := map[string]bool{}
	for from := 0; ; from += 500 {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		r, err := c.Search(ctx, "menu", &api.SearchRequest{Q: "quarrywrite", Size: 500, From: from})
		cancel()
		if err != nil || r.Shards.Failed > 0 {
			return len(ids)
		}
		for _, h := range r.Hits {
			found[h.ID] = true
		}
		if len(r.Hits) < 500 {
			break
		}
	}
	n := 0
	for _, id := range ids {
		if !found[id] {
			n++
		}
	}
	return n
}

// probe puts a document with word in it, trying again until it is
// acknowledged, and waits until a search finds it: it returns how long
// each took from its call.
func probe(t *testing.T, c *client.Client, word string) (acked, found time.Duration) {
	t.Helper()
	start := time.Now()
	doc := fmt.Appendf(nil, `{"id":"probe-%s","name":"%s"}`, word, word)
	var last string
	testwait.UntilErr(t, 30*time.Second, "put "+word+" acknowledged", func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_, err := c.Put(ctx, "menu", doc)
		if err != nil && err.Error() != last { // each new refusal once
			last = err.Error()
			t.Logf("probe %s: put at %s: %v", word, time.Since(start).Round(time.Millisecond), err)
		}
		return err
	})
	acked = time.Since(start)
	// Found by 10 searches in a row: each goes to either searcher (a
	// queue group), and both must have it.
	inARow := 0
	waitFor(t, 60*time.Second, "the document "+word+" is searchable", func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		r, err := c.Search(ctx, "menu", &api.SearchRequest{Q: word, Size: api.NoHits})
		if err != nil || r.Total != 1 {
			inARow = 0
			return false
		}
		inARow++
		return inARow == 10
	})
	return acked, time.Since(start)
}

// report logs the load's figures and holds the failure bound.
func report(t *testing.T, outs []outcome, kills []time.Time) {
	t.Helper()
	slices.SortFunc(outs, func(a, b outcome) int { return a.start.Compare(b.start) })
	var failed, partial, outsideOwn, nOutsideOwn, outsideKills, nOutsideKills int
	var first []string
	for _, o := range outs {
		nearKill := false
		for _, k := range kills {
			nearKill = nearKill || (o.start.After(k.Add(-queryTimeout)) && o.start.Before(k.Add(5*time.Second)))
		}
		if !o.own {
			nOutsideOwn++
		}
		if !nearKill {
			nOutsideKills++
		}
		if !o.failed() {
			continue
		}
		failed++
		if o.partial {
			partial++
		}
		if !o.own {
			outsideOwn++
		}
		if !nearKill {
			outsideKills++
		}
		if len(first) < 8 {
			what := "partial result"
			if o.err != nil {
				what = o.err.Error()
				var ae *api.Error
				if errors.As(o.err, &ae) {
					what = fmt.Sprintf("%s (%s)", ae.Message, ae.Code)
				}
			}
			first = append(first, fmt.Sprintf("%s: %s", o.start.Format("15:04:05.000"), what))
		}
	}
	pct := func(a, b int) float64 {
		if b == 0 {
			return 0
		}
		return 100 * float64(a) / float64(b)
	}
	t.Logf("%d queries, %d failed (%.3f%%, %d of them partial results); outside the moments a client's own member died: %d of %d (%.3f%%); more than 5 s from any NATS kill: %d of %d (%.3f%%)",
		len(outs), failed, pct(failed, len(outs)), partial, outsideOwn, nOutsideOwn, pct(outsideOwn, nOutsideOwn), outsideKills, nOutsideKills, pct(outsideKills, nOutsideKills))
	if len(first) > 0 {
		t.Logf("first failures:\n%s", strings.Join(first, "\n"))
	}
	if len(outs) == 0 || float64(failed) > maxFailed*float64(len(outs)) {
		t.Errorf("%d of %d queries failed, want at most %g%%", failed, len(outs), 100*maxFailed)
	}
	if testtier.Soak && float64(outsideOwn) > maxFailedOutsideOwn*float64(nOutsideOwn) {
		t.Errorf("outside the moments a client's own member died, %d of %d queries failed, want at most %g%%", outsideOwn, nOutsideOwn, 100*maxFailedOutsideOwn)
	}
}
