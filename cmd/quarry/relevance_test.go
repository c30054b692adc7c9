package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/quarrysearch/quarry/api"
	"github.com/quarrysearch/quarry/client"
	"github.com/quarrysearch/quarry/httpapi"
	"github.com/quarrysearch/quarry/internal/relevance"
	"github.com/quarrysearch/quarry/internal/wasmtest"
)

// relevanceIndex makes an index whose documents carry a rating that the
// judgements follow, so that a ranker boosting the rating is better than
// the live BM25 order and one burying it is worse. It returns the
// judgement list (NDJSON).
func relevanceIndex(t *testing.T, c *client.Client, index string) []byte {
	t.Helper()
	ctx := context.Background()
	if _, err := c.CreateIndex(ctx, index, 2, nil); err != nil {
		t.Fatal(err)
	}
	type doc struct {
		ID     string  `json:"id"`
		Text   string  `json:"text"`
		Rating float64 `json:"rating"`
	}
	var docs []doc
	var body bytes.Buffer
	for i := range 40 {
		d := doc{ID: fmt.Sprintf("d%02d", i), Text: "noodles " + []string{"soup", "rice"}[i%2] + " " + []string{"spicy", "mild", "sweet"}[i%3],
			Rating: float64(1 + (i*7)%5)}
		docs = append(docs, d)
		b, _ := json.Marshal(d)
		body.Write(append(b, '\n'))
	}
	if _, err := c.Bulk(ctx, index, &body, client.BulkOptions{}); err != nil {
		t.Fatal(err)
	}
	waitTotal(t, c, index, "noodles", 40)
	// Graded by rating: 5 → 3, 4 → 2, 3 → 1, the rest rated 0.
	var list bytes.Buffer
	for _, q := range []string{"noodles", "soup", "rice", "spicy", "mild", "sweet", "soup spicy", "rice mild", "noodles sweet", "rice sweet"} {
		ratings := map[string]int{}
		for _, d := range docs {
			for _, w := range strings.Fields(q) {
				if strings.Contains(d.Text, w) {
					ratings[d.ID] = max(0, int(d.Rating)-2)
				}
			}
		}
		b, _ := json.Marshal(map[string]any{"q": q, "ratings": ratings})
		list.Write(append(b, '\n'))
	}
	return list.Bytes()
}

// The relevance loop from the CLI, the client and HTTP: judgement lists
// pushed (bad ones refused by line), evaluated the same twice, a gate
// that refuses a ranker made worse on purpose and passes a better or an
// equal one, its override recorded as an event, and its result shown
// with the version.
func TestJudgementsEvalGate(t *testing.T) {
	t.Parallel()
	url, c := cluster(t, true)
	nf := []string{"--nats", url}
	ctx := context.Background()
	const index = "rel"
	list := relevanceIndex(t, c, index)
	dir := t.TempDir()
	write := func(name string, b []byte) string { return fileIn(t, dir, name, b) }
	run := cliWith(t, nf...)

	// Judgement lists: pushed, versioned, listed, shown; bad ones refused
	// naming the line, and nothing stored.
	golden := write("golden.ndjson", list)
	if out := run(0, "judgements", "push", index, "golden", golden); !strings.Contains(out, "pushed judgements golden version 1") || !strings.Contains(out, "10 queries") {
		t.Fatal(out)
	}
	bad := write("bad.ndjson", append(slices.Clone(list), []byte(`{"q":"x","ratings":{"d01":7}}`+"\n")...))
	if out := run(2, "judgements", "push", index, "golden", bad); !strings.Contains(out, `line 11: ratings["d01"] must be 0 to 3, got 7`) {
		t.Fatal(out)
	}
	if _, err := c.PushJudgements(ctx, index, "Bad Name", list); !errors.Is(err, api.ErrBadRequest) {
		t.Fatalf("bad name: %v", err)
	}
	run(0, "judgements", "push", index, "golden", golden) // version 2
	if out := run(0, "judgements", "ls", index); !strings.Contains(out, "golden") || !strings.Contains(out, " 2 ") {
		t.Fatal(out)
	}
	if out := run(0, "judgements", "show", index, "golden", "--version", "1"); !strings.Contains(out, "version 1") || !strings.Contains(out, `"soup spicy"`) {
		t.Fatal(out)
	}
	if out := run(2, "judgements", "show", index, "nope"); !strings.Contains(out, "no judgement list nope") {
		t.Fatal(out)
	}

	// The live pipeline alone, the same figures twice.
	live1 := run(0, "eval", index, "--judgements", "golden")
	live2 := run(0, "eval", index, "--judgements", "golden")
	if live1 != live2 || !strings.Contains(live1, "ndcg@10") || !strings.Contains(live1, "version 2: 10 queries") {
		t.Fatalf("two evaluations differ or are wrong:\n%s\n---\n%s", live1, live2)
	}

	// A better ranker (the rating boosted) and one made worse on purpose.
	boost := wasmtest.C(t, "../../examples/plugins/c/ranker.c")
	worse := wasmtest.C(t, "testdata/worse.c")

	// A whole candidate pipeline from a file, beside the live one (no
	// plugins yet).
	write("boost.wasm", boost)
	pf := write("pipeline.json", []byte(`{"rankers": [{"plugin": "boost", "wasm": "boost.wasm", "fields": ["rating"], "rerank_depth": 50, "config": {"field": "rating", "weight": 10}}]}`))
	out := run(0, "eval", index, "--judgements", "golden", "--pipeline", pf)
	if !strings.Contains(out, "candidate pipeline: boost ") {
		t.Fatal(out)
	}
	var prep api.EvalReport
	if err := json.Unmarshal([]byte(run(0, "eval", index, "--judgements", "golden", "--pipeline", pf, "--json")), &prep); err != nil || prep.Summary[0].Diff == nil || prep.Summary[0].Diff.Mean <= 0.05 {
		t.Fatalf("the boost pipeline should be better: %+v %v\n%s", prep.Summary, err, out)
	}
	if out := run(2, "eval", index, "--judgements", "golden", "--pipeline", pf, "--variant", "boost=x"); !strings.Contains(out, "give one") {
		t.Fatal(out)
	}
	step := api.StepSpec{Config: json.RawMessage(`{"field":"rating","weight":10}`), Fields: []string{"rating"}, RerankDepth: 50}
	good, err := c.PushPlugin(ctx, index, "boost", boost, client.PushOptions{Kind: "ranker", Step: step})
	if err != nil {
		t.Fatal(err)
	}
	out = run(0, "eval", index, "--judgements", "golden", "--variant", "boost="+api.ShortDigest(good.Digest))
	rep, err := c.Evaluate(ctx, index, api.EvalRequest{Set: "golden", Variant: &api.Variant{Plugin: "boost", Digest: good.Digest}})
	if err != nil {
		t.Fatal(err)
	}
	if nd := rep.Summary[0]; nd.Metric != "ndcg" || nd.Diff.Mean <= 0.05 || nd.Diff.Low <= 0 || nd.Candidate.Mean < 0.99 {
		t.Fatalf("the boost should be better: %+v %+v\n%s", nd.Diff, nd.Candidate, out)
	}

	// The gate: bad settings refused, then set.
	if out := run(2, "judgements", "gate", index, "--set", "golden", "--metric", "err"); !strings.Contains(out, "gate metric must be one of") {
		t.Fatal(out)
	}
	if out := run(2, "judgements", "gate", index, "--set", "nope"); !strings.Contains(out, "no judgement list nope") {
		t.Fatal(out)
	}
	if out := run(0, "judgements", "gate", index, "--set", "golden", "--metric", "ndcg", "--k", "10", "--max-drop", "0.01", "--confidence", "0.95"); !strings.Contains(out, "ndcg@10 must not drop by more than 0.01 at 95% confidence on golden") {
		t.Fatal(out)
	}
	if out := run(2, "judgements", "rm", index, "golden"); !strings.Contains(out, "used by the gate") {
		t.Fatal(out)
	}

	// An improved ranker passes the gate (a plugin not yet live: the
	// candidate is the pipeline with it added).
	// It returns once every broker runs it: the evaluations below see it
	// from their first query.
	if out := run(0, "plugin", "activate", index, "boost", good.Digest); !strings.Contains(out, "ranker   boost") || !strings.Contains(out, "brokers: all 1 run revision") {
		t.Fatal(out)
	}
	if out := run(0, "plugin", "show", index, "boost"); !strings.Contains(out, "gate on sha256:"+api.ShortDigest(good.Digest)+": passed") {
		t.Fatal(out)
	}

	// The worse one, evaluated from its file against the live boost: worse,
	// the same figures twice.
	wasm := write("worse.wasm", worse)
	e1 := run(0, "eval", index, "--judgements", "golden", "--variant", "boost="+wasm)
	e2 := run(0, "eval", index, "--judgements", "golden", "--variant", "boost="+wasm)
	if e1 != e2 {
		t.Fatalf("two evaluations differ:\n%s\n---\n%s", e1, e2)
	}
	t.Logf("quarry eval with the worse ranker:\n%s", e1)
	l, err := c.Plugins(ctx, index)
	if err != nil {
		t.Fatal(err)
	}
	var bad1 string
	for _, v := range l.Versions {
		if v.Digest != good.Digest {
			bad1 = v.Digest
		}
	}
	// Refused over NATS (the CLI and the client) with the figures; the
	// pipeline is unchanged.
	out = run(1, "plugin", "activate", index, "boost", bad1)
	if !strings.Contains(out, "refused by the relevance gate") || !strings.Contains(out, "FAILED") || !strings.Contains(out, "lower bound") {
		t.Fatal(out)
	}
	t.Logf("quarry plugin activate with the worse ranker:\n%s", out)
	_, err = c.ActivatePlugin(ctx, index, "boost", bad1)
	var ae *api.Error
	if !errors.Is(err, api.ErrGateFailed) || !errors.As(err, &ae) || ae.Gate == nil || ae.Gate.Passed || ae.Gate.Sets[0].Diff >= 0 {
		t.Fatalf("want a gate_failed error with the figures: %#v", err)
	}
	if spec, _ := c.Pipeline(ctx, index); spec.Rankers[0].Digest != good.Digest {
		t.Fatalf("a refused version went live: %+v", spec.Rankers)
	}
	if out := run(0, "plugin", "show", index, "boost"); !strings.Contains(out, "gate on sha256:"+api.ShortDigest(bad1)+": FAILED, refused") {
		t.Fatal(out)
	}
	// A whole pipeline set with it is refused too; the live revision
	// shows the gate that let its version through.
	badSpec := write("bad-pipeline.json", []byte(`{"rankers": [{"plugin": "boost", "digest": "`+bad1+`", "fields": ["rating"], "rerank_depth": 50}]}`))
	if out := run(1, "pipeline", "set", index, badSpec); !strings.Contains(out, "the pipeline refused by the relevance gate") {
		t.Fatal(out)
	}
	if out := run(0, "pipeline", "show", index); !strings.Contains(out, "relevance gate: passed") || !strings.Contains(out, "boost        sha256:"+api.ShortDigest(good.Digest)) {
		t.Fatal(out)
	}
	// Over HTTP: 412 and the same error, with the gate's figures.
	srv := httptest.NewServer(httpapi.Handler(c, httpapi.Options{}))
	defer srv.Close()
	resp, err := http.Post(srv.URL+"/v1/indexes/"+index+"/plugins/boost/activate?digest="+bad1, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var he struct{ Error api.Error }
	if resp.StatusCode != 412 || json.Unmarshal(b, &he) != nil || he.Error.Code != api.CodeGateFailed || he.Error.Gate == nil {
		t.Fatalf("HTTP activate: %d %s", resp.StatusCode, b)
	}

	// A canary of the worse one cannot be promoted either.
	if _, err := c.CanaryPlugin(ctx, index, "boost", bad1, 10, ""); err != nil {
		t.Fatal(err)
	}
	if _, err := c.PromotePlugin(ctx, index, "boost"); !errors.Is(err, api.ErrGateFailed) {
		t.Fatalf("promote: %v", err)
	}
	// --force needs a reason; with one it goes live and says so.
	if out := run(2, "plugin", "promote", index, "boost", "--force"); !strings.Contains(out, "--force needs a --reason") {
		t.Fatal(out)
	}
	run(0, "plugin", "promote", index, "boost", "--force", "--reason", "rollout test")
	if spec, _ := c.Pipeline(ctx, index); spec.Rankers[0].Digest != bad1 {
		t.Fatalf("a forced promotion did not go live: %+v", spec.Rankers)
	}
	if out := run(0, "plugin", "events", index); !strings.Contains(out, "gate overridden: rollout test") {
		t.Fatal(out)
	}
	if out := run(0, "plugin", "show", index, "boost"); !strings.Contains(out, "FAILED, forced live: rollout test") {
		t.Fatal(out)
	}
	// Back to the boost (an improvement over what is live), then the boost
	// again: an equal version passes.
	waitRanker(t, c, index, bad1)
	run(0, "plugin", "activate", index, "boost", good.Digest)
	waitRanker(t, c, index, good.Digest)
	run(0, "plugin", "activate", index, "boost", good.Digest)
	v, err := c.Plugins(ctx, index)
	if err != nil {
		t.Fatal(err)
	}
	for _, ver := range v.Versions {
		if ver.Digest == good.Digest && (ver.Gate == nil || !ver.Gate.Passed || ver.Gate.Sets[0].Diff != 0) {
			t.Fatalf("an equal version: %+v", ver.Gate)
		}
	}

	// HTTP: the lists, the gate and an evaluation.
	req, _ := http.NewRequest("PUT", srv.URL+"/v1/indexes/"+index+"/judgements/other", strings.NewReader("{\"q\":\"a\",\"ratings\":{\"d\":9}}\n"))
	req.Header.Set("Content-Type", "application/x-ndjson")
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != 400 {
		t.Fatalf("HTTP bad list: %v %v", resp, err)
	}
	req, _ = http.NewRequest("PUT", srv.URL+"/v1/indexes/"+index+"/judgements/other", bytes.NewReader(list))
	req.Header.Set("Content-Type", "application/x-ndjson")
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != 201 {
		t.Fatalf("HTTP push: %v %v", resp, err)
	}
	resp, err = http.Post(srv.URL+"/v1/indexes/"+index+"/judgements/other/eval", "application/json", strings.NewReader(`{"k":5}`))
	if err != nil {
		t.Fatal(err)
	}
	var hrep api.EvalReport
	if err := json.NewDecoder(resp.Body).Decode(&hrep); err != nil || resp.StatusCode != 200 || hrep.K != 5 || len(hrep.Queries) != 10 {
		t.Fatalf("HTTP eval: %d %+v %v", resp.StatusCode, hrep, err)
	}
	resp.Body.Close()
	if resp, err := http.Get(srv.URL + "/v1/indexes/" + index + "/gate"); err != nil || resp.StatusCode != 200 {
		t.Fatalf("HTTP gate: %v %v", resp, err)
	}
	run(0, "judgements", "gate", index, "--off")
	run(0, "judgements", "rm", index, "golden")
	if out := run(0, "judgements", "ls", index); strings.Contains(out, "golden") {
		t.Fatal(out)
	}
}

// waitRanker waits until the broker runs digest as the index's ranker.
func waitRanker(t *testing.T, c *client.Client, index, digest string) {
	t.Helper()
	waitFor(t, time.Minute, "the broker to run ranker "+api.ShortDigest(digest), func() (bool, string) {
		r, err := c.Search(context.Background(), index, &api.SearchRequest{Q: "noodles", Profile: true})
		if err != nil {
			return false, err.Error()
		}
		return strings.Contains(fmt.Sprint(r.Profile.Stages), api.ShortDigest(digest)), fmt.Sprint(r.Profile.Stages)
	})
}

// Users with a known preference (the ratings of relevanceIndex) search,
// look down the page with a position bias and click, buy and bounce;
// their events go in over the CLI and HTTP, and the judgement list built
// from them with the click model tells the better ranker from the live
// order, as the true ratings do.
func TestJudgementsFromEvents(t *testing.T) {
	t.Parallel()
	url, c := cluster(t, true)
	nf := []string{"--nats", url}
	ctx := context.Background()
	const index = "clk"
	truth := relevanceIndex(t, c, index)
	qs, err := relevance.Decode(bytes.NewReader(truth))
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(15, 1))
	var evs []api.UserEvent
	for _, q := range qs {
		for u := range 30 {
			resp, err := c.Search(ctx, index, &api.SearchRequest{Q: q.Q, Size: 10})
			if err != nil {
				t.Fatal(err)
			}
			if resp.QueryID == "" {
				t.Fatal("a search response without a query_id")
			}
			for i, h := range resp.Hits {
				p := i + 1
				if rng.Float64() >= 1/float64(p) { // not looked at
					continue
				}
				g := q.Ratings[h.ID]
				if rng.Float64() >= []float64{0.05, 0.3, 0.6, 0.9}[g] {
					continue
				}
				e := api.UserEvent{ActionName: "click", QueryID: resp.QueryID, UserQuery: q.Q, ClientID: fmt.Sprint("u", u),
					EventAttributes: api.EventAttributes{Object: api.EventObject{ObjectID: h.ID, ObjectIDField: "id"}, Position: api.EventPosition{Ordinal: p}}}
				evs = append(evs, e)
				if g == 0 && rng.Float64() < 0.5 { // came straight back
					e.ActionName, e.EventAttributes.DwellTime = "dwell", 2
					evs = append(evs, e)
				}
				if g == 3 && rng.Float64() < 0.3 {
					e.ActionName = "purchase"
					evs = append(evs, e)
				}
			}
		}
	}
	// Half over the CLI, half over HTTP; bad events refused, naming them.
	half := len(evs) / 2
	var file bytes.Buffer
	for _, e := range evs[:half] {
		b, _ := json.Marshal(e)
		file.Write(append(b, '\n'))
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "events.ndjson")
	os.WriteFile(path, file.Bytes(), 0o644)
	if out, errOut, code := cli(t, "", append([]string{"events", index, path}, nf...)...); code != 0 || !strings.Contains(out, fmt.Sprintf("stored %d events", half)) {
		t.Fatalf("quarry events: %d %s %s", code, out, errOut)
	}
	bad := filepath.Join(dir, "bad.ndjson")
	os.WriteFile(bad, append(slices.Clone(file.Bytes()[:bytes.IndexByte(file.Bytes(), '\n')+1]), []byte(`{"action_name":"like","query_id":"x","user_query":"a","event_attributes":{"object":{"object_id":"d"},"position":{"ordinal":1}}}`+"\n")...), 0o644)
	if _, errOut, code := cli(t, "", append([]string{"events", index, bad}, nf...)...); code != 2 || !strings.Contains(errOut, `line 2: action_name must be one of click, add_to_cart, purchase, dwell, got "like"`) {
		t.Fatalf("bad events: %d %s", code, errOut)
	}
	srv := httptest.NewServer(httpapi.Handler(c, httpapi.Options{}))
	defer srv.Close()
	body, _ := json.Marshal(evs[half:])
	resp, err := http.Post(srv.URL+"/v1/indexes/"+index+"/events", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	var res api.EventsResult
	if err := json.NewDecoder(resp.Body).Decode(&res); err != nil || resp.StatusCode != 200 || res.Accepted != len(evs)-half {
		t.Fatalf("HTTP events: %d %+v %v", resp.StatusCode, res, err)
	}
	resp.Body.Close()
	resp, err = http.Post(srv.URL+"/v1/indexes/"+index+"/events", "application/json", strings.NewReader(`[{"action_name":"click"}]`))
	if err != nil || resp.StatusCode != 400 {
		t.Fatalf("HTTP bad event: %v %v", resp, err)
	}

	// The list from the events, printed, then pushed.
	out, errOut, code := cli(t, "", append([]string{"judgements", "from-events", index, "clicks"}, nf...)...)
	if code != 0 || !strings.Contains(errOut, fmt.Sprintf("from %d events", len(evs))) {
		t.Fatalf("from-events: %d %s %s", code, out, errOut)
	}
	built, err := relevance.Decode(strings.NewReader(out))
	if err != nil {
		t.Fatalf("from-events printed a list that does not decode: %v\n%s", err, out)
	}
	// What it calls relevant is, on the whole, what users prefer.
	var hi, lo []float64
	for _, b := range built {
		var tq api.JudgedQuery
		for _, q := range qs {
			if q.Q == b.Q {
				tq = q
			}
		}
		for id, g := range b.Ratings {
			if g >= 2 {
				hi = append(hi, float64(tq.Ratings[id]))
			} else {
				lo = append(lo, float64(tq.Ratings[id]))
			}
		}
	}
	if len(built) < 8 || relevance.Mean(hi) < relevance.Mean(lo)+1 {
		t.Fatalf("%d queries; true grade of what it grades >= 2: %.2f, of the rest %.2f\n%s", len(built), relevance.Mean(hi), relevance.Mean(lo), out)
	}
	t.Logf("%d events → %d queries; true grade of those graded >= 2: %.2f (%d), of the rest: %.2f (%d)", len(evs), len(built), relevance.Mean(hi), len(hi), relevance.Mean(lo), len(lo))
	if out, errOut, code := cli(t, "", append([]string{"judgements", "from-events", index, "clicks", "--push"}, nf...)...); code != 0 || !strings.Contains(out, "pushed judgements clicks version 1") {
		t.Fatalf("from-events --push: %d %s %s", code, out, errOut)
	}
	boost := wasmtest.C(t, "../../examples/plugins/c/ranker.c")
	good, err := c.PushPlugin(ctx, index, "boost", boost, client.PushOptions{Kind: "ranker",
		Step: api.StepSpec{Config: json.RawMessage(`{"field":"rating","weight":10}`), Fields: []string{"rating"}, RerankDepth: 50}})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := c.Evaluate(ctx, index, api.EvalRequest{Set: "clicks", Variant: &api.Variant{Plugin: "boost", Digest: good.Digest}})
	if err != nil {
		t.Fatal(err)
	}
	if nd := rep.Summary[0]; nd.Diff.Mean <= 0 || nd.Diff.Low <= 0 {
		t.Fatalf("on the clicks' list the better ranker should be better: %+v", nd)
	}
	t.Logf("nDCG@10 on the clicks' list: live %.3f, boost %.3f", rep.Summary[0].Live.Mean, rep.Summary[0].Candidate.Mean)
}
