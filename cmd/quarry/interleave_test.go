package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/quarrysearch/quarry/api"
	"github.com/quarrysearch/quarry/client"
	"github.com/quarrysearch/quarry/httpapi"
	"github.com/quarrysearch/quarry/internal/catalog"
	"github.com/quarrysearch/quarry/internal/subject"
	"github.com/quarrysearch/quarry/internal/testtier"
	"github.com/quarrysearch/quarry/internal/wasmtest"
)

// simQueries are what the simulated users search the catalogue for.
var simQueries = []string{"noodles", "pizza", "curry", "burger", "salad", "soup", "chicken", "spicy", "vegan", "rice", "tacos", "sushi"}

// A simulated population with a known preference (users like
// well-rated dishes: a result they look at is clicked with probability
// ((rating-1)/4)^2, and they look at rank p with probability 1/p) searches
// the demo catalogue while a ranker's interleaving canary runs. The
// better ranker (the rating boosted) is promoted when it is the
// candidate, the worse one (rating buried, testdata/worse.c) rolled back,
// by Quarry itself, within a stated number of searches, on every seed;
// the worse one never wins. docs/relevance.md has the figures
// (the soak variant, -tags long,soak: 20 seeds each way).
func TestInterleavingSimulation(t *testing.T) {
	t.Parallel()
	url, c := cluster(t, true)
	ctx := context.Background()
	const index = "sim"
	if _, err := c.CreateIndex(ctx, index, 2, catalog.Mapping()); err != nil {
		t.Fatal(err)
	}
	var docs bytes.Buffer
	catalog.WriteNDJSON(&docs, catalog.Generate(catalog.DefaultSeed, 2000))
	if _, err := c.Bulk(ctx, index, &docs, client.BulkOptions{}); err != nil {
		t.Fatal(err)
	}
	waitTotalOf(t, c, index, &api.SearchRequest{Query: json.RawMessage(`{"match_all":{}}`)}, 2000)
	step := api.StepSpec{Config: json.RawMessage(`{"field":"rating","weight":10}`), Fields: []string{"rating"}, RerankDepth: 30}
	better, err := c.PushPlugin(ctx, index, "rank", wasmtest.C(t, "../../examples/plugins/c/ranker.c"), client.PushOptions{Kind: "ranker", Step: step})
	if err != nil {
		t.Fatal(err)
	}
	worse, err := c.PushPlugin(ctx, index, "rank", wasmtest.C(t, "testdata/worse.c"), client.PushOptions{Kind: "ranker", Step: step})
	if err != nil {
		t.Fatal(err)
	}
	// The test's settings are checked, over NATS and HTTP; no experiment
	// has run yet.
	if _, err := c.InterleavePlugin(ctx, index, "rank", better.Digest, 50, "user", api.InterleaveSpec{Delta: 0.6}); !errors.Is(err, api.ErrBadRequest) || !strings.Contains(err.Error(), "delta must be between 0 and 0.5") {
		t.Fatalf("--interleave with a delta of 0.6: %v", err)
	}
	srv := httptest.NewServer(httpapi.Handler(c, httpapi.Options{}))
	defer srv.Close()
	resp, err := http.Post(srv.URL+"/v1/indexes/"+index+"/plugins/rank/canary?digest="+better.Digest+"&percent=50&interleave=true&alpha=0.9", "", nil)
	if err != nil || resp.StatusCode != 400 {
		t.Fatalf("HTTP interleave with alpha 0.9: %v %v", resp, err)
	}
	if _, err := c.CanaryStats(ctx, index, "rank"); !errors.Is(err, api.ErrNotFound) {
		t.Fatalf("canary stats before any experiment: %v", err)
	}
	seeds := 3
	if testtier.Soak {
		seeds = 20
	}
	const budget = 400 // searches per experiment
	var most [2]int
	for _, dir := range []struct {
		name       string
		live, cand *api.PluginVersion
		want       string
	}{{"better candidate", worse, better, "promoted"}, {"worse candidate", better, worse, "rolled back"}} {
		for seed := range uint64(seeds) {
			searches, state := interleaveRun(t, c, url, index, dir.live, dir.cand, seed, budget)
			if state != dir.want {
				t.Fatalf("%s, seed %d: %q after %d searches, want %q", dir.name, seed, state, searches, dir.want)
			}
			k := 0
			if dir.want == "rolled back" {
				k = 1
			}
			most[k] = max(most[k], searches)
			t.Logf("%s, seed %d: %s after %d searches", dir.name, seed, state, searches)
		}
	}
	t.Logf("most searches to decide over %d seeds: better candidate %d, worse candidate %d", seeds, most[0], most[1])
	resp, err = http.Get(srv.URL + "/v1/indexes/" + index + "/plugins/rank/canary")
	if err != nil {
		t.Fatal(err)
	}
	var st api.CanaryStats
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil || resp.StatusCode != 200 || st.State != "rolled back" || st.Reason == "" {
		t.Fatalf("HTTP canary stats: %d %+v %v", resp.StatusCode, st, err)
	}
	resp.Body.Close()
	evs, err := c.PluginEvents(ctx, index)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range evs {
		if strings.HasPrefix(e.Event, "interleaving ") && strings.Contains(e.Reason, "log likelihood ratio") {
			n++
		}
	}
	if n != 2*seeds {
		t.Fatalf("%d interleaving events with figures, want %d: %+v", n, 2*seeds, evs)
	}
}

// interleaveRun makes live the ranker's live version, starts an
// interleaving canary of cand for half the users, and lets simulated
// users search and click until Quarry decides or budget searches are
// done. It returns the searches made and the experiment's state.
func interleaveRun(t *testing.T, c *client.Client, url, index string, live, cand *api.PluginVersion, seed uint64, budget int) (int, string) {
	t.Helper()
	ctx := context.Background()
	if _, err := c.ActivatePlugin(ctx, index, "rank", live.Digest); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := cli(t, "", "plugin", "canary", index, "rank", cand.Digest, "--interleave", "--percent", "50", "--sticky", "user", "--nats", url)
	if code != 0 || !strings.Contains(out, "interleaving canary 50% (sticky by user)") {
		t.Fatalf("plugin canary --interleave: %d %s %s", code, out, errOut)
	}
	// Wait for the broker to run the experiment (under -race, loading
	// takes a moment).
	u := 0 // another user each time: half of them get the canary
	waitFor(t, time.Minute, "the broker to run the interleaving canary", func() (bool, string) {
		u++
		r, err := c.Search(ctx, index, &api.SearchRequest{Q: "pizza", Profile: true, Context: json.RawMessage(fmt.Sprintf(`{"user":"w%d"}`, u))})
		if err != nil {
			return false, err.Error()
		}
		return strings.Contains(fmt.Sprint(r.Profile.Stages), "canary "+api.ShortDigest(cand.Digest)), fmt.Sprint(r.Profile.Stages)
	})
	// The brokers' records of interleaved searches, which clicks are
	// credited to.
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	records, err := js.KeyValue(ctx, subject.InterleaveBucket)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(seed, 77))
	searches := 0
	for searches < budget {
		var evs []api.UserEvent
		var clicked []string // the record keys of the interleaved searches clicked
		for range 10 {
			searches++
			user := fmt.Sprint("u", rng.IntN(200))
			q := simQueries[rng.IntN(len(simQueries))]
			// A long deadline and a retry: the machine is shared, and a
			// stall is not what this test is about.
			// Profiled, to tell the searches the canary interleaved.
			req := &api.SearchRequest{Q: q, Size: 10, Fields: []string{"rating"}, Context: json.RawMessage(`{"user":"` + user + `"}`), TimeoutMS: 20000, Profile: true}
			resp, err := c.Search(ctx, index, req)
			if err != nil {
				resp, err = c.Search(ctx, index, req)
			}
			if err != nil {
				t.Fatal(err)
			}
			n := len(evs)
			for i, h := range resp.Hits {
				rating, _ := h.Fields["rating"].(float64)
				if rng.Float64() >= 1/float64(i+1) || rng.Float64() >= math.Pow((rating-1)/4, 2) {
					continue
				}
				evs = append(evs, api.UserEvent{ActionName: "click", QueryID: resp.QueryID, UserQuery: q, ClientID: user,
					EventAttributes: api.EventAttributes{Object: api.EventObject{ObjectID: h.ID}, Position: api.EventPosition{Ordinal: i + 1}}})
			}
			if len(evs) > n && resp.Profile != nil && strings.Contains(fmt.Sprint(resp.Profile.Stages), "canary "+api.ShortDigest(cand.Digest)) {
				clicked = append(clicked, index+"."+resp.QueryID)
			}
		}
		// Clicks come after the broker recorded the search (off the
		// query path): a click on a search not recorded yet counts for
		// neither side.
		for _, key := range clicked {
			waitFor(t, 30*time.Second, "the broker's record of interleaved search "+key, func() (bool, string) {
				_, err := records.Get(ctx, key)
				return err == nil, fmt.Sprint(err)
			})
		}
		if len(evs) > 0 {
			if _, err := c.PutEvents(ctx, index, evs); err != nil {
				t.Fatal(err)
			}
		}
		st, err := c.CanaryStats(ctx, index, "rank")
		if err != nil {
			t.Fatal(err)
		}
		if st.Candidate != cand.Digest {
			t.Fatalf("the tally is of %s, not the candidate %s", st.Candidate, cand.Digest)
		}
		if st.State != "running" {
			spec, err := c.Pipeline(ctx, index)
			if err != nil {
				t.Fatal(err)
			}
			st0, _ := spec.Step("rank")
			want := live.Digest
			if st.State == "promoted" {
				want = cand.Digest
			}
			if st0 == nil || st0.Digest != want || st0.Canary != nil {
				t.Fatalf("%s, but the pipeline runs %+v", st.State, st0)
			}
			if out, _, code := cli(t, "", "plugin", "canary-stats", index, "rank", "--nats", url); code != 0 || !strings.Contains(out, st.State+" at") {
				t.Fatalf("canary-stats: %s", out)
			}
			return searches, st.State
		}
	}
	return searches, "running"
}
