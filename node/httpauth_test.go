package node

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/quarrysearch/quarry/api"
	"github.com/quarrysearch/quarry/broker"
	"github.com/quarrysearch/quarry/client"
	"github.com/quarrysearch/quarry/indexer"
	"github.com/quarrysearch/quarry/internal/testwait"
	"github.com/quarrysearch/quarry/internal/wasmtest"
	"github.com/quarrysearch/quarry/searcher"
)

// do sends one HTTP request with a bearer token ("" for none) and returns
// the status and body.
func do(t *testing.T, c *http.Client, method, url, token, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	setBodyType(req, body)
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestHTTPTeamIsolation runs TestTeamIsolation's matrix over HTTP with
// tokens: no token gets 401; team books's tokens get 403 on team food's
// index for every route; team food's tokens may use the routes their
// scope covers on food's index (search: search and read documents;
// write: and write documents and user events; admin, and a token stored
// before scopes: everything a team may) and get 403 naming both scopes
// on the rest; team tokens cannot manage indexes, query settings or
// roles; an operator token can; a revoked token stops working.
func TestHTTPTeamIsolation(t *testing.T) {
	t.Parallel()
	n := startConfig(t, Config{HTTPAuth: true, Indexer: &indexer.Config{SnapshotInterval: -1}, Searcher: &searcher.Config{}, Broker: &broker.Config{}})
	ctx := context.Background()
	c := n.Client()
	for _, def := range []api.IndexDefinition{{Name: "menu", Shards: 1, Team: "food"}, {Name: "books", Shards: 1, Team: "books"}} {
		if _, err := c.CreateIndexDef(ctx, def); err != nil {
			t.Fatal(err)
		}
		mustBulk(t, c, def.Name, ndjson(30, def.Name))
		waitTotal(t, c, def.Name, "noodles", 10)
	}
	token := func(team string, operator bool, name string, opts ...client.TokenOption) string {
		t.Helper()
		return mustToken(t, c, team, operator, name, opts...)
	}
	food := token("food", false, "food ci") // no scope given: admin
	foodWrite := token("food", false, "loader", client.TokenScope(api.ScopeWrite))
	foodSearch := token("food", false, "front end", client.TokenScope(api.ScopeSearch))
	books := token("books", false, "")
	booksWrite := token("books", false, "", client.TokenScope(api.ScopeWrite))
	op := token("", true, "ops")
	// A token stored before tokens had scopes (no "scope"): admin.
	const foodOld = "qk_stored-before-scopes"
	old, _ := json.Marshal(map[string]any{"id": api.TokenKey(foodOld)[:12], "team": "food", "name": "old", "created": time.Now().UTC()})
	if _, err := n.store.Tokens.Create(ctx, api.TokenKey(foodOld), old); err != nil {
		t.Fatal(err)
	}
	hc := &http.Client{Timeout: 30 * time.Second}
	base := "http://" + n.HTTPAddr
	// A token is usable as soon as the guard has seen it.
	waitStatus(t, hc, base+"/v1/indexes/menu/search", op, 200, "the operator token works")
	waitStatus(t, hc, base+"/v1/indexes/menu/search", foodOld, 200, "the token stored without a scope works")
	identity := wasmtest.WAT(t, identityWAT)
	const search, write, admin, operatorOnly = api.ScopeSearch, api.ScopeWrite, api.ScopeAdmin, ""
	routes := []struct {
		method, path, body string
		// scope is the narrowest scope of a team token that may use
		// the route on its own index; operatorOnly: none may.
		scope string
	}{
		{"POST", "/v1/indexes/menu/search", `{"q":"noodles"}`, search},
		{"GET", "/v1/indexes/menu/plugins", "", admin},
		{"POST", "/v1/indexes/menu/plugins/evil?kind=rewriter", string(identity), admin},
		{"POST", "/v1/indexes/menu/plugins/evil/activate", `{"digest":"sha256:00"}`, admin},
		{"DELETE", "/v1/indexes/menu/plugins/evil", "", admin},
		{"POST", "/v1/indexes/menu/plugins/evil/canary", `{"digest":"x","percent":5}`, admin},
		{"POST", "/v1/indexes/menu/plugins/evil/promote", "", admin},
		{"POST", "/v1/indexes/menu/plugins/evil/shadow", `{"digest":"x","percent":5}`, admin},
		{"GET", "/v1/indexes/menu/plugins/evil/shadow", "", admin},
		{"GET", "/v1/indexes/menu/plugins/evil/logs?since=1h", "", admin},
		{"GET", "/v1/indexes/menu/events", "", admin},
		{"GET", "/v1/indexes/menu/pipeline", "", admin},
		{"PUT", "/v1/indexes/menu/pipeline", `{"rewriters":[]}`, admin},
		{"POST", "/v1/indexes/menu/pipeline/rollback", "", admin},
		{"GET", "/v1/indexes/menu/pipeline/history", "", admin},
		{"GET", "/v1/indexes/menu/info", "", admin},
		{"GET", "/v1/indexes/menu/queries", "", admin},
		{"GET", "/v1/indexes/menu/rejected", "", admin},
		{"GET", "/v1/roles", "", operatorOnly},
		{"PUT", "/v1/indexes/menu/judgements/golden", `{"q":"noodles","ratings":{"menu0001":3}}`, admin},
		{"GET", "/v1/indexes/menu/judgements", "", admin},
		{"GET", "/v1/indexes/menu/judgements/golden", "", admin},
		{"POST", "/v1/indexes/menu/judgements/golden/eval", `{"k":5}`, admin},
		{"DELETE", "/v1/indexes/menu/judgements/golden", "", admin},
		{"PUT", "/v1/indexes/menu/gate", `{"sets":["golden"],"metric":"ndcg"}`, admin},
		{"GET", "/v1/indexes/menu/gate", "", admin},
		{"DELETE", "/v1/indexes/menu/gate", "", admin},
		{"POST", "/v1/indexes/menu/events", `{"action_name":"click","query_id":"q1","user_query":"noodles","event_attributes":{"object":{"object_id":"menu0001"},"position":{"ordinal":1}}}`, write},
		{"GET", "/v1/indexes/menu/plugins/evil/canary", "", admin},
		{"GET", "/v1/indexes", "", operatorOnly},
		{"GET", "/v1/indexes/menu", "", operatorOnly},
		{"PUT", "/v1/indexes/menu/query", `{"operator":"and"}`, operatorOnly},
		{"POST", "/v1/indexes/menu/documents", `{"id":"x1","text":"noodles"}`, write},
		{"GET", "/v1/indexes/menu/documents/menu0001", "", search},
		{"DELETE", "/v1/indexes/menu/documents/menu0001", "", write},
		{"GET", "/v1/indexes/menu/documents?id=menu0002", "", search},
		{"DELETE", "/v1/indexes/menu/documents?id=menu0002", "", write},
		{"POST", "/v1/indexes/other", `{"shards":1}`, operatorOnly},
		{"DELETE", "/v1/indexes/menu", "", operatorOnly},
	}
	for _, r := range routes {
		for _, who := range []struct {
			name, token string
			scope       string // a food token's; "": not food's
			want        int    // 0: not refused (any status the operation itself gives)
		}{
			{"no token", "", "", 401},
			{"a made-up token", "qk_madeup", "", 401},
			{"team books", books, "", 403},
			{"team books (write)", booksWrite, "", 403},
			{"team food (admin)", food, admin, 0},
			{"team food (stored without a scope)", foodOld, admin, 0},
			{"team food (write)", foodWrite, write, 0},
			{"team food (search)", foodSearch, search, 0},
		} {
			tooNarrow := r.scope != operatorOnly && who.scope != "" && !api.ScopeCovers(who.scope, r.scope)
			if who.scope != "" && (r.scope == operatorOnly || tooNarrow) {
				who.want = 403
			}
			code, body := do(t, hc, r.method, base+r.path, who.token, r.body)
			switch {
			case who.want != 0 && code != who.want:
				t.Errorf("%s %s as %s: %d %.200s, want %d", r.method, r.path, who.name, code, body, who.want)
			case who.want == 0 && (code == 401 || code == 403):
				t.Errorf("%s %s as %s: refused (%d %.200s)", r.method, r.path, who.name, code, body)
			case tooNarrow && !strings.Contains(body, fmt.Sprintf(`(scope %s) may not %s %s: it needs scope %s (quarry token create --team food --scope %s)`, who.scope, r.method, strings.Split(r.path, "?")[0], r.scope, r.scope)):
				t.Errorf("%s %s as %s: the refusal does not name both scopes: %.300s", r.method, r.path, who.name, body)
			}
		}
	}
	// A write token loads its team's documents and deletes them; a search
	// token finds and reads them, and is told what writing needs.
	loaded := `{"id":"w1","name":"loaded","text":"udon noodles"}` + "\n" + `{"id":"w2","name":"loaded","text":"udon broth"}`
	if code, body := do(t, hc, "POST", base+"/v1/indexes/menu/documents?wait=searchable", foodWrite, loaded); code != 200 || !strings.Contains(body, `"stored":2`) || !strings.Contains(body, `"searchable":true`) {
		t.Fatalf("team food's write token loads menu: %d %s", code, body)
	}
	if code, body := do(t, hc, "POST", base+"/v1/indexes/menu/search", foodSearch, `{"q":"udon"}`); code != 200 || !strings.Contains(body, `"total":2`) {
		t.Fatalf("team food's search token searches what was loaded: %d %s", code, body)
	}
	if code, body := do(t, hc, "GET", base+"/v1/indexes/menu/documents/w1", foodSearch, ""); code != 200 || !strings.Contains(body, `"udon noodles"`) {
		t.Fatalf("team food's search token reads w1: %d %s", code, body)
	}
	if code, body := do(t, hc, "POST", base+"/v1/indexes/menu/documents", foodSearch, loaded); code != 403 || !strings.Contains(body, `"forbidden"`) || !strings.Contains(body, "team food's token (scope search) may not POST /v1/indexes/menu/documents: it needs scope write") {
		t.Fatalf("team food's search token writes: %d %s", code, body)
	}
	if code, body := do(t, hc, "DELETE", base+"/v1/indexes/menu/documents/w1", foodWrite, ""); code != 200 {
		t.Fatalf("team food's write token deletes w1: %d %s", code, body)
	}
	testwait.UntilErr(t, 10*time.Second, "w1 deleted", func() error {
		if code, body := do(t, hc, "GET", base+"/v1/indexes/menu/documents/w1", foodSearch, ""); code != 404 {
			return fmt.Errorf("%d %.200s", code, body)
		}
		return nil
	})
	if code, body := do(t, hc, "POST", base+"/v1/indexes/books/documents", foodWrite, loaded); code != 403 || !strings.Contains(body, `team food's token may not use index \"books\"`) {
		t.Fatalf("team food's write token on books: %d %s", code, body)
	}
	if code, body := do(t, hc, "POST", base+"/v1/indexes/menu/plugins/evil?kind=rewriter", foodWrite, string(identity)); code != 403 || !strings.Contains(body, "(scope write) may not POST /v1/indexes/menu/plugins/evil: it needs scope admin") {
		t.Fatalf("team food's write token pushes a plugin: %d %s", code, body)
	}
	// /v1/me tells each token its scope (the console hides the rest).
	for _, who := range []struct{ token, want string }{
		{foodSearch, `"scope":"search"`}, {foodWrite, `"scope":"write"`}, {food, `"scope":"admin"`}, {foodOld, `"scope":"admin"`},
	} {
		if code, body := do(t, hc, "GET", base+"/v1/me", who.token, ""); code != 200 || !strings.Contains(body, who.want) || !strings.Contains(body, `"indexes":["menu"]`) {
			t.Errorf("/v1/me: %d %s, want %s", code, body, who.want)
		}
	}
	if code, body := do(t, hc, "GET", base+"/v1/me", op, ""); code != 200 || strings.Contains(body, `"scope"`) {
		t.Errorf("/v1/me as the operator: %d %s, want no scope", code, body)
	}
	// A team reads its own plugin's logs over HTTP; bad parameters are
	// named.
	if code, body := do(t, hc, "GET", base+"/v1/indexes/menu/plugins/evil/logs?limit=5&version=ab", food, ""); code != 200 || !strings.Contains(body, `"subject":"quarry.v1.logs.food.evil"`) {
		t.Fatalf("team food reads its plugin logs: %d %s", code, body)
	}
	if code, body := do(t, hc, "GET", base+"/v1/indexes/menu/plugins/evil/logs?since=yesterday", food, ""); code != 400 || !strings.Contains(body, `since \"yesterday\": want a duration`) {
		t.Fatalf("since=yesterday: %d %s", code, body)
	}
	// The index is still there: nothing a team did reached it.
	if code, body := do(t, hc, "POST", base+"/v1/indexes/books/search", books, `{"q":"noodles"}`); code != 200 || !strings.Contains(body, `"total":10`) {
		t.Fatalf("team books on its own index: %d %s", code, body)
	}
	// The operator may do what teams may not.
	if code, body := do(t, hc, "GET", base+"/v1/indexes", op, ""); code != 200 || !strings.Contains(body, `"books"`) {
		t.Fatalf("operator lists indexes: %d %s", code, body)
	}
	// /metrics: a team reads its own indexes' series only, the operator
	// all of them, nobody without a token.
	if code, _ := do(t, hc, "GET", base+"/metrics", "", ""); code != 401 {
		t.Errorf("/metrics without a token: %d, want 401", code)
	}
	// A search or write token (a browser's key) reads no metrics.
	for _, tok := range []string{foodSearch, foodWrite} {
		if code, body := do(t, hc, "GET", base+"/metrics", tok, ""); code != 403 || !strings.Contains(body, "may not GET /metrics: it needs scope admin") {
			t.Errorf("/metrics with a narrower token: %d %.200s, want 403", code, body)
		}
	}
	for _, who := range []struct {
		name, token string
		see, hide   []string
	}{
		{"team books", books, []string{`index="books"`}, []string{`index="menu"`, "go_goroutines"}},
		{"the operator", op, []string{`index="books"`, `index="menu"`, "go_goroutines"}, nil},
	} {
		code, body := do(t, hc, "GET", base+"/metrics", who.token, "")
		if code != 200 {
			t.Fatalf("/metrics as %s: %d %.200s", who.name, code, body)
		}
		for _, s := range who.see {
			if !strings.Contains(body, s) {
				t.Errorf("/metrics as %s has no %s", who.name, s)
			}
		}
		for _, s := range who.hide {
			if strings.Contains(body, s) {
				t.Errorf("/metrics as %s shows %s", who.name, s)
			}
		}
	}
	// Revoked: refused within moments.
	tokens, err := c.Tokens(ctx)
	if err != nil || len(tokens) != 7 {
		t.Fatalf("tokens: %+v %v", tokens, err)
	}
	for _, tk := range tokens {
		if tk.Team == "food" {
			if err := c.RevokeToken(ctx, tk.ID); err != nil {
				t.Fatal(err)
			}
		}
	}
	waitStatus(t, hc, base+"/v1/indexes/menu/search", food, 401, "the revoked token is refused")
}

// waitStatus searches url with token until the answer's status is want:
// the guard has seen the token (or its revocation).
func waitStatus(t *testing.T, hc *http.Client, url, token string, want int, what string) {
	t.Helper()
	testwait.UntilErr(t, 10*time.Second, what, func() error {
		if code, body := do(t, hc, "POST", url, token, `{"q":"noodles"}`); code != want {
			return fmt.Errorf("%d %.200s", code, body)
		}
		return nil
	})
}

// No path reaches another resource than the one it names: dot segments,
// empty segments and encoded slashes or dots get 400, never the redirect
// Go's mux would send (which a client following redirects, like this one,
// would take with its DELETE to the index itself).
func TestHTTPPathsStrict(t *testing.T) {
	t.Parallel()
	n := startNode(t)
	c := n.Client()
	noodleIndex(t, c, "victim", "v")
	hc := &http.Client{Timeout: 10 * time.Second} // follows redirects, keeps the method on 307
	base := "http://" + n.HTTPAddr
	for _, p := range []string{
		"/v1/indexes/victim/documents/../../victim",
		"/v1/indexes/victim/documents/..",
		"/v1/indexes/victim/documents/.",
		"/v1/indexes/victim/documents/%2e%2e",
		"/v1/indexes/victim/documents/a%2Fb",
		"/v1/indexes/victim/documents/a%5cb",
		"/v1/indexes//victim",
		"/v1/indexes/victim/./documents/v0001",
		"/v1/indexes/x/../victim",
	} {
		code, body := do(t, hc, "DELETE", base+p, "", "")
		if code != 400 || !strings.Contains(body, "bad_request") {
			t.Errorf("DELETE %s: %d %.200s, want 400", p, code, body)
		}
	}
	if _, err := c.Index(context.Background(), "victim"); err != nil {
		t.Fatalf("the index is gone: %v", err)
	}
	if total(c, "victim", "noodles") != 10 {
		t.Fatal("documents are gone")
	}
	// A canonical path still works.
	if code, body := do(t, hc, "DELETE", base+"/v1/indexes/victim/documents/v0000", "", ""); code != 200 {
		t.Fatalf("a plain delete: %d %s", code, body)
	}

	// Ids no path segment can carry are named by ?id=, and reach that
	// document only: read, deleted, and the index stays.
	ctx := context.Background()
	odd := []string{"..", ".", "a/b", "../victim", `a\b`, "https://example.com/x?y=1#z", "nul\x00id"}
	for _, id := range odd {
		doc, _ := json.Marshal(map[string]any{"id": id, "name": "odd"})
		if _, err := c.Put(ctx, "victim", doc); err != nil {
			t.Fatalf("put %q: %v", id, err)
		}
	}
	for _, id := range odd {
		q := base + "/v1/indexes/victim/documents?id=" + url.QueryEscape(id)
		if code, body := do(t, hc, "GET", q, "", ""); code != 200 || !strings.Contains(body, `"odd"`) {
			t.Errorf("GET ?id=%q: %d %.200s", id, code, body)
		}
		if code, body := do(t, hc, "DELETE", q, "", ""); code != 200 {
			t.Errorf("DELETE ?id=%q: %d %.200s", id, code, body)
		}
		if code, _ := do(t, hc, "GET", q, "", ""); code != 404 {
			t.Errorf("GET ?id=%q after its delete: %d, want 404", id, code)
		}
	}
	for _, bad := range []string{"", "?id=", "?id=a&id=b", "?ids=a", "?id=a&x=1", "?id=%zz"} {
		if code, body := do(t, hc, "DELETE", base+"/v1/indexes/victim/documents"+bad, "", ""); code != 400 || !strings.Contains(body, "bad_request") {
			t.Errorf("DELETE …/documents%s: %d %.200s, want 400", bad, code, body)
		}
	}
	if code, body := do(t, hc, "GET", base+"/v1/indexes/victim/documents/v0001?id=v0002", "", ""); code != 400 {
		t.Errorf("a document path with ?id=: %d %.200s, want 400", code, body)
	}
	if _, err := c.Index(ctx, "victim"); err != nil {
		t.Fatalf("the index is gone: %v", err)
	}
	for i := 1; i < 30; i++ { // read from the stream: a wrong delete shows at once
		if _, err := c.Get(ctx, "victim", fmt.Sprintf("v%04d", i)); err != nil {
			t.Errorf("v%04d: %v: a delete by ?id= reached another document", i, err)
		}
	}
}
