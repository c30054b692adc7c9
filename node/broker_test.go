package node

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/micro"

	"github.com/quarrysearch/quarry/api"
	"github.com/quarrysearch/quarry/broker"
	"github.com/quarrysearch/quarry/client"
	"github.com/quarrysearch/quarry/indexer"
	"github.com/quarrysearch/quarry/internal/subject"
	"github.com/quarrysearch/quarry/internal/testwait"
	"github.com/quarrysearch/quarry/searcher"
)

// The NATS API (Go client), the HTTP API and the broker called in-process
// give the same answer.
func TestThreeDoorsAnswerTheSame(t *testing.T) {
	t.Parallel()
	n := startNode(t)
	c := n.Client()
	ctx := context.Background()
	if _, err := c.CreateIndex(ctx, "doors", 3, nil); err != nil {
		t.Fatal(err)
	}
	mustBulk(t, c, "doors", ndjson(90, "d"))
	waitTotal(t, c, "doors", "noodles", 30)
	req := api.SearchRequest{Q: "spicy noodles", Size: 7, From: 2, Fields: []string{"name"}}

	viaNATS, err := c.Search(ctx, "doors", &req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := json.Marshal(req)
	resp, err := http.Post("http://"+n.HTTPAddr+"/v1/indexes/doors/search", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var viaHTTP api.SearchResponse
	if err := json.Unmarshal(raw, &viaHTTP); err != nil {
		t.Fatalf("%s: %v", raw, err)
	}
	viaGo, err := n.Broker.Search(ctx, "doors", &req)
	if err != nil {
		t.Fatal(err)
	}
	for name, r := range map[string]*api.SearchResponse{"http": &viaHTTP, "go": viaGo} {
		if r.Total != viaNATS.Total || len(r.Hits) != len(viaNATS.Hits) || len(r.Hits) != 7 {
			t.Fatalf("%s: total %d hits %d, NATS: %d %d", name, r.Total, len(r.Hits), viaNATS.Total, len(viaNATS.Hits))
		}
		for i := range r.Hits {
			if r.Hits[i].ID != viaNATS.Hits[i].ID || r.Hits[i].Score != viaNATS.Hits[i].Score || r.Hits[i].Fields["name"] != viaNATS.Hits[i].Fields["name"] {
				t.Fatalf("%s hit %d: %+v, NATS %+v", name, i, r.Hits[i], viaNATS.Hits[i])
			}
		}
	}
	// And errors: the same code through each door.
	_, err = c.Search(ctx, "nope", &req)
	resp, _ = http.Post("http://"+n.HTTPAddr+"/v1/indexes/nope/search", "application/json", bytes.NewReader(body))
	resp.Body.Close()
	_, goErr := n.Broker.Search(ctx, "nope", &req)
	if api.CodeOf(err) != api.CodeNotFound || resp.StatusCode != 404 || api.CodeOf(goErr) != api.CodeNotFound {
		t.Fatalf("unknown index: %v / %d / %v", err, resp.StatusCode, goErr)
	}
}

// The broker is a micro service: `nats micro ls/info/stats quarry` work.
func TestMicroDiscovery(t *testing.T) {
	t.Parallel()
	n := startNode(t)
	msg, err := n.Conn().Request("$SRV.INFO.quarry", nil, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	var info micro.Info
	if err := json.Unmarshal(msg.Data, &info); err != nil {
		t.Fatal(err)
	}
	if info.Name != "quarry" || len(info.Endpoints) != 1 || info.Endpoints[0].Subject != "quarry.v1.search.*" {
		t.Fatalf("info: %+v", info)
	}
	if _, err := n.Conn().Request("$SRV.STATS.quarry", nil, 5*time.Second); err != nil {
		t.Fatal(err)
	}
}

// A shard whose searcher goes away mid-test: partial results that name the
// shard and the reason; with allow_partial false, an error.
func TestPartialResults(t *testing.T) {
	t.Parallel()
	core := startRoles(t, "", &indexer.Config{SnapshotInterval: -1}, nil, &broker.Config{})
	c := core.Client()
	ctx := context.Background()
	if _, err := c.CreateIndex(ctx, "p", 4, nil); err != nil {
		t.Fatal(err)
	}
	bulk(t, c, "p", ndjson(400, "p"), client.BulkOptions{NoSnapshot: true}) // no searcher yet: waited for below
	startRoles(t, core.NATSURL(), nil, &searcher.Config{Index: "p", Shards: []int{0, 1}}, nil)
	away := startRoles(t, core.NATSURL(), nil, &searcher.Config{Index: "p", Shards: []int{2, 3}}, nil)
	waitTotal(t, c, "p", "", 400)

	away.Close()
	// The server drops a closed client's interest a moment later.
	waitUntil(t, 5*time.Second, "shard 2 has no responders", func() bool {
		_, err := core.Conn().Request(subject.Shard("p", 2), []byte("{}"), time.Second)
		return errors.Is(err, nats.ErrNoResponders)
	})
	r, err := c.Search(ctx, "p", &api.SearchRequest{Q: "noodles"})
	if err != nil {
		t.Fatal(err)
	}
	if r.Shards.Total != 4 || r.Shards.Successful != 2 || r.Shards.Failed != 2 || r.Total == 0 {
		t.Fatalf("shards: %+v, total %d", r.Shards, r.Total)
	}
	for _, f := range r.Shards.Failures {
		if (f.Shard != 2 && f.Shard != 3) || !strings.Contains(f.Reason, "no searcher serves this shard") {
			t.Fatalf("failure %+v", f)
		}
	}
	no := false
	_, err = c.Search(ctx, "p", &api.SearchRequest{Q: "noodles", AllowPartial: &no})
	if api.CodeOf(err) != api.CodeUnavailable || !strings.Contains(err.Error(), "2 of 4 shards failed") {
		t.Fatalf("allow_partial=false: %v", err)
	}
}

// Past --max-in-flight, requests are refused at once with 429.
func TestOverloadRejectedFast(t *testing.T) {
	n := startRoles(t, "", &indexer.Config{SnapshotInterval: -1},
		&searcher.Config{FaultDelay: 300 * time.Millisecond}, &broker.Config{MaxInFlight: 2, TeamMaxInFlight: 100}) // the broker's cap, not the team's
	c := n.Client()
	ctx := context.Background()
	if _, err := c.CreateIndex(ctx, "o", 1, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Put(ctx, "o", []byte(`{"id":"1","text":"x"}`)); err != nil {
		t.Fatal(err)
	}
	waitTotal(t, c, "o", "x", 1)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var ok, rejected int
	var slowestReject time.Duration
	for range 12 {
		wg.Go(func() {
			start := time.Now()
			_, err := c.Search(ctx, "o", &api.SearchRequest{Q: "x", TimeoutMS: 5000})
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				ok++
			case errors.Is(err, api.ErrOverloaded):
				rejected++
				slowestReject = max(slowestReject, time.Since(start))
				if !strings.Contains(err.Error(), "overloaded") {
					t.Errorf("overload error says %q", err)
				}
			default:
				t.Errorf("unexpected error: %v", err)
			}
		})
	}
	wg.Wait()
	if ok == 0 || rejected == 0 {
		t.Fatalf("%d answered, %d rejected: want both", ok, rejected)
	}
	// Rejections do not wait for the slow searches ahead of them.
	if slowestReject >= 300*time.Millisecond {
		t.Fatalf("a rejection took %s: it waited instead of failing fast", slowestReject)
	}
}

// One replica of a shard is slow now and then: the broker hedges to the
// other replica and the slow answers stop mattering.
func TestHedgingRescuesSlowReplica(t *testing.T) {
	core := startRoles(t, "", &indexer.Config{SnapshotInterval: -1}, nil, &broker.Config{HedgeMaxFraction: 0.3})
	c := core.Client()
	ctx := context.Background()
	if _, err := c.CreateIndex(ctx, "h", 1, nil); err != nil {
		t.Fatal(err)
	}
	bulk(t, c, "h", ndjson(100, "h"), client.BulkOptions{NoSnapshot: true}) // no searcher yet: waited for below
	startRoles(t, core.NATSURL(), nil, &searcher.Config{}, nil)
	startRoles(t, core.NATSURL(), nil, &searcher.Config{FaultDelay: 5 * time.Second, FaultEvery: 25}, nil)
	waitTotal(t, c, "h", "", 100)
	// Both replicas serve before the count starts (on a loaded machine the
	// slow one could still be catching up, and no hedge would be needed).
	replicas := map[string]bool{}
	waitUntil(t, 20*time.Second, "both replicas answer", func() bool {
		r, err := c.Search(ctx, "h", &api.SearchRequest{Q: "noodles", TimeoutMS: 10000, Profile: true})
		if err == nil && r.Profile != nil {
			for _, st := range r.Profile.Stages {
				if i := strings.Index(st.Detail, "replica "); i >= 0 {
					replicas[strings.Fields(st.Detail[i+len("replica "):])[0]] = true
				}
			}
		}
		return len(replicas) >= 2
	})

	// Searches until a hedge has answered first (at least 300, at most
	// 1,500): which of the slow replica's requests are delayed, a
	// primary or a hedge sent to it, is chance, and a run of 300 once
	// had its delays all fall on hedges (12 sent, none won).
	var slowest time.Duration
	for i := 0; i < 1500; i++ {
		if i >= 300 && i%50 == 0 {
			if _, _, won := hedgeStats(t, core); won > 0 {
				break
			}
		}
		start := time.Now()
		r, err := c.Search(ctx, "h", &api.SearchRequest{Q: "noodles", TimeoutMS: 10000, Profile: true})
		if err != nil || r.Total != 34 {
			t.Fatalf("search: %v %+v", err, r)
		}
		if d := time.Since(start); d > slowest {
			slowest = d
			if d > time.Second {
				b, _ := json.Marshal(r.Profile)
				t.Logf("slow: %s", b)
			}
		}
	}
	reqs, hedges, won := hedgeStats(t, core)
	t.Logf("%d shard requests, %d hedges, %d won; slowest search %s", reqs, hedges, won, slowest)
	if won == 0 {
		t.Fatal("no hedge answered first")
	}
	if slowest >= 2*time.Second {
		t.Fatalf("a search waited %s for the slow replica: hedging did not rescue it", slowest)
	}
}

// Brokers record a sample of search requests for replays, when asked.
func TestRecordQueries(t *testing.T) {
	t.Parallel()
	n := startRoles(t, "", &indexer.Config{SnapshotInterval: -1}, &searcher.Config{}, &broker.Config{RecordPercent: 100})
	c := n.Client()
	ctx := context.Background()
	if _, err := c.CreateIndex(ctx, "rec", 1, nil); err != nil {
		t.Fatal(err)
	}
	mustBulk(t, c, "rec", ndjson(30, "r"))
	waitTotal(t, c, "rec", "noodles", 10) // these searches are recorded too
	for _, q := range []string{"alpha", "beta", "gamma"} {
		if _, err := c.Search(ctx, "rec", &api.SearchRequest{Q: q}); err != nil {
			t.Fatal(err)
		}
	}
	var got []string
	testwait.UntilErr(t, 10*time.Second, "the three searches recorded last", func() error {
		qs, err := c.RecordedQueries(ctx, "rec", 0)
		if err != nil {
			t.Fatal(err)
		}
		got = got[:0]
		for _, q := range qs {
			var r api.SearchRequest
			if err := json.Unmarshal(q, &r); err != nil {
				t.Fatal(err)
			}
			got = append(got, r.Q)
		}
		if len(got) >= 4 && strings.Join(got[len(got)-3:], ",") == "alpha,beta,gamma" {
			return nil
		}
		return fmt.Errorf("recorded %v", got)
	})
}

// With no broker serving searches (none runs, or none holds its pipelines
// yet), a search is answered at once: 503 over HTTP with Retry-After,
// unavailable over the client, saying why.
func TestNoBrokerRetryAfter(t *testing.T) {
	n := startRoles(t, "", &indexer.Config{SnapshotInterval: -1}, nil, nil)
	if _, err := n.Client().Search(context.Background(), "menu", &api.SearchRequest{Q: "x"}); !errors.Is(err, api.ErrUnavailable) || !strings.Contains(err.Error(), "no broker is serving searches yet") {
		t.Fatalf("client: %v", err)
	}
	req, err := http.NewRequest("POST", "http://"+n.HTTPAddr+"/v1/indexes/menu/search", strings.NewReader(`{"q":"x"}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") != "1" {
		t.Fatalf("HTTP: %d, Retry-After %q; want 503 and 1", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
}

// The roles (GET /v1/roles, the console's Roles page) count a searcher's
// shard requests: they come on subjects of their own, so its micro
// service's endpoint counts only status questions (issue 36: "requests 0"
// after 260 searches).
func TestRolesCountShardRequests(t *testing.T) {
	t.Parallel()
	n := startNode(t)
	c := n.Client()
	noodleIndex(t, c, "rq", "r")
	for range 5 {
		if _, err := c.Search(context.Background(), "rq", &api.SearchRequest{Q: "noodles"}); err != nil {
			t.Fatal(err)
		}
	}
	roles, err := c.Roles(context.Background(), 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, svc := range roles.Services {
		if svc.Name != subject.SearcherService {
			continue
		}
		for _, ep := range svc.Endpoints {
			var st api.RoleStatus
			raw, _ := json.Marshal(ep.Data)
			if ep.Name == "status" && json.Unmarshal(raw, &st) == nil && st.Requests >= 5 {
				t.Logf("the searcher answered %d shard requests, %d with an error", st.Requests, st.Errors)
				return
			}
		}
		t.Fatalf("the searcher's status does not count its shard requests: %+v", svc.Endpoints)
	}
	t.Fatal("no searcher in the roles")
}
