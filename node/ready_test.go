package node

import (
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/quarrysearch/quarry/broker"
	"github.com/quarrysearch/quarry/client"
	"github.com/quarrysearch/quarry/indexer"
	"github.com/quarrysearch/quarry/internal/testwait"
	"github.com/quarrysearch/quarry/searcher"
)

// TestReadiness: /healthz answers while the process lives; /readyz says
// ready once every role is, and a node that is shutting down says why it
// is not.
func TestReadiness(t *testing.T) {
	t.Parallel()
	n := startNode(t)
	get := func(path string) (int, string) {
		t.Helper()
		resp, err := http.Get("http://" + n.HTTPAddr + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	for _, path := range []string{"/healthz", "/readyz"} {
		if code, body := get(path); code != 200 {
			t.Fatalf("%s: %d %q", path, code, body)
		}
	}
	if code, body := get("/readyz"); !strings.Contains(body, "ready") || code != 200 {
		t.Fatalf("/readyz: %d %q", code, body)
	}
	n.Close()
	err := n.Ready()
	if err == nil || !strings.Contains(err.Error(), "shutting down") || !strings.Contains(err.Error(), "NATS is not connected") {
		t.Fatalf("a closed node: Ready() = %v, want not ready naming why", err)
	}
}

// TestReadinessWithoutHTTP: a role without the HTTP API (here a searcher)
// answers /healthz and /readyz on its --metrics listener.
func TestReadinessWithoutHTTP(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	n, err := Start(ctx, Config{DataDir: t.TempDir(), NATSPort: -1, MetricsAddr: "127.0.0.1:0", Searcher: &searcher.Config{}, Logger: testLogger()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(n.Close)
	if err := n.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"/healthz", "/readyz", "/metrics"} {
		resp, err := http.Get("http://" + n.MetricsAddr + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("%s on the metrics listener: %d", path, resp.StatusCode)
		}
	}
	// Its connections are capped: one client holding 16 open gets the
	// 17th refused at once (429), and the listener still answers once
	// they close. The GETs' connections first, which the server counts
	// until it has closed them (under load, after the client has seen
	// them end: then the 17th was let in as a 16th).
	http.DefaultClient.CloseIdleConnections()
	testwait.Until(t, 10*time.Second, "the GETs' connections closed", func() bool { return n.metrics.Open() == 0 })
	var held []net.Conn
	for range MetricsMaxConnsPerClient {
		c, err := net.Dial("tcp", n.MetricsAddr)
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, c)
	}
	extra, err := net.Dial("tcp", n.MetricsAddr)
	if err != nil {
		t.Fatal(err)
	}
	extra.SetReadDeadline(time.Now().Add(5 * time.Second))
	answer, _ := io.ReadAll(extra)
	extra.Close()
	if !strings.HasPrefix(string(answer), "HTTP/1.1 429") {
		t.Errorf("connection %d to the metrics listener from one client: %q, want 429", MetricsMaxConnsPerClient+1, answer)
	}
	for _, c := range held {
		c.Close()
	}
	testwait.UntilErr(t, 10*time.Second, "the metrics listener answers again", func() error {
		resp, err := http.Get("http://" + n.MetricsAddr + "/healthz")
		if err == nil {
			resp.Body.Close()
		}
		return err
	})
}

// TestProfiling: Go's profiles are served on the metrics listener only
// when asked for, and asking without a metrics listener is refused.
func TestProfiling(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := Start(ctx, Config{DataDir: t.TempDir(), NATSPort: -1, Profiling: true, Searcher: &searcher.Config{}, Logger: testLogger()}); err == nil || !strings.Contains(err.Error(), "metrics listener") {
		t.Fatalf("profiling without a metrics listener: %v, want an error naming it", err)
	}
	for _, profiling := range []bool{false, true} {
		n, err := Start(ctx, Config{DataDir: t.TempDir(), NATSPort: -1, MetricsAddr: "127.0.0.1:0", Profiling: profiling, Searcher: &searcher.Config{}, Logger: testLogger()})
		if err != nil {
			t.Fatal(err)
		}
		resp, err := http.Get("http://" + n.MetricsAddr + "/debug/pprof/heap")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if want := map[bool]int{false: 404, true: 200}[profiling]; resp.StatusCode != want {
			t.Errorf("profiling %v: /debug/pprof/heap answered %d, want %d", profiling, resp.StatusCode, want)
		}
		n.Close()
	}
}

// TestSearcherReadyServesExistingIndexes: a searcher started after an
// index was loaded says it is ready only once it serves every shard of
// that index with what was acknowledged; it used to say so at once, and
// the first searches found no searcher for the shards.
func TestSearcherReadyServesExistingIndexes(t *testing.T) {
	t.Parallel()
	core := startRoles(t, "", &indexer.Config{SnapshotInterval: -1}, nil, &broker.Config{})
	c := core.Client()
	if _, err := c.CreateIndex(context.Background(), "early", 3, nil); err != nil {
		t.Fatal(err)
	}
	bulk(t, c, "early", ndjson(90, "e"), client.BulkOptions{})       // a snapshot, and no searcher yet
	s := startRoles(t, core.NATSURL(), nil, &searcher.Config{}, nil) // returns once ready
	shards, docs := 0, uint64(0)
	for _, st := range s.Searcher.Stats() {
		if st.Index == "early" {
			shards++
			docs += st.Docs
		}
	}
	if shards != 3 || docs != 90 {
		t.Fatalf("ready, serving %d shards of 3 and %d documents of 90", shards, docs)
	}
}
