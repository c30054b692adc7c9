package node

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/quarrysearch/quarry/api"
	"github.com/quarrysearch/quarry/broker"
	"github.com/quarrysearch/quarry/client"
	"github.com/quarrysearch/quarry/indexer"
	"github.com/quarrysearch/quarry/internal/testwait"
	"github.com/quarrysearch/quarry/searcher"
)

// TestAliases: an alias is searched, read and written as the index it
// points at, over NATS and HTTP, and switched at once to another index
// of its team: the searches and writes after the switch are the new
// index's, a client that cached the old one included. An alias and an
// index never share a name, an alias never points at an alias or across
// teams, an aliased index is not deleted, and a team's token uses its
// team's aliases only.
func TestAliases(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	n := startConfig(t, Config{HTTPAuth: true, Indexer: &indexer.Config{SnapshotInterval: -1}, Searcher: &searcher.Config{}, Broker: &broker.Config{}})
	c := n.Client()
	for _, def := range []api.IndexDefinition{{Name: "dishes-v1", Shards: 2, Team: "food"}, {Name: "dishes-v2", Shards: 3, Team: "food"}, {Name: "novels", Shards: 1, Team: "books"}} {
		if _, err := c.CreateIndexDef(ctx, def); err != nil {
			t.Fatal(err)
		}
	}
	mustBulk(t, c, "dishes-v1", ndjson(30, "a")) // 10 noodles
	mustBulk(t, c, "dishes-v2", ndjson(60, "b")) // 20
	mustBulk(t, c, "novels", ndjson(3, "n"))
	waitTotal(t, c, "dishes-v1", "noodles", 10)
	waitTotal(t, c, "dishes-v2", "noodles", 20)

	a, err := c.CreateAlias(ctx, "dishes", "dishes-v1")
	if err != nil || a.Index != "dishes-v1" || a.Team != "food" {
		t.Fatalf("create alias: %+v %v", a, err)
	}
	r, err := c.Search(ctx, "dishes", &api.SearchRequest{Q: "noodles"})
	if err != nil || r.Total != 10 || r.Index != "dishes-v1" {
		t.Fatalf("search of the alias: %+v %v", r, err)
	}
	if _, err := c.Put(ctx, "dishes", []byte(`{"id":"new1","text":"noodles"}`)); err != nil {
		t.Fatal(err)
	}
	if d, err := c.Get(ctx, "dishes-v1", "new1"); err != nil || d.Index != "dishes-v1" {
		t.Fatalf("a write through the alias is not its index's: %+v %v", d, err)
	}
	if _, err := c.Get(ctx, "dishes", "new1"); err != nil {
		t.Fatalf("read through the alias: %v", err)
	}

	for _, bad := range []struct {
		what string
		err  error
		code api.Code
		msg  string
	}{
		{"an alias named as an index", errOf(c.CreateAlias(ctx, "novels", "dishes-v1")), api.CodeConflict, `an index is named "novels"`},
		{"an index named as an alias", errOf(c.CreateIndex(ctx, "dishes", 1, nil)), api.CodeConflict, `an alias is named "dishes"`},
		{"an alias made twice", errOf(c.CreateAlias(ctx, "dishes", "dishes-v2")), api.CodeConflict, "already exists"},
		{"an alias of no index", errOf(c.CreateAlias(ctx, "x", "nope")), api.CodeNotFound, `index "nope": it does not exist`},
		{"an alias of an alias", errOf(c.CreateAlias(ctx, "y", "dishes")), api.CodeBadRequest, `point it at the index "dishes-v1"`},
		{"an alias switched across teams", errOf(c.SwitchAlias(ctx, "dishes", "novels")), api.CodeForbidden, "an alias stays with its team"},
		{"an aliased index deleted", c.DeleteIndex(ctx, "dishes-v1"), api.CodeConflict, "alias dishes points at"},
		{"a bad alias name", errOf(c.CreateAlias(ctx, "Bad Name", "dishes-v1")), api.CodeBadRequest, "alias:"},
	} {
		if api.CodeOf(bad.err) != bad.code || !strings.Contains(bad.err.Error(), bad.msg) {
			t.Errorf("%s: %v, want %s saying %q", bad.what, bad.err, bad.code, bad.msg)
		}
	}
	if _, err := c.Index(ctx, "dishes-v1"); err != nil {
		t.Fatalf("the aliased index after a refused delete: %v", err)
	}

	// The switch: a client that has not cached the alias writes to the
	// new index at once; this one, which cached dishes-v1, as soon as
	// its watch hears of the switch.
	if a, err = c.SwitchAlias(ctx, "dishes", "dishes-v2"); err != nil || a.Index != "dishes-v2" {
		t.Fatalf("switch: %+v %v", a, err)
	}
	// Brokers hear of the switch within moments (their watch of the
	// aliases); none answers from neither index meanwhile.
	sctx, scancel := context.WithTimeout(ctx, 10*time.Second)
	defer scancel()
	if !testwait.Poll(sctx, func() bool {
		r, err = c.Search(ctx, "dishes", &api.SearchRequest{Q: "noodles"})
		if err != nil || (r.Index != "dishes-v1" && r.Index != "dishes-v2") {
			t.Fatalf("search of the alias during the switch: %+v %v", r, err)
		}
		return r.Index == "dishes-v2"
	}) || r.Total != 20 {
		t.Fatalf("search of the alias after the switch: %+v %v", r, err)
	}
	fresh, err := client.New(ctx, n.nc, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fresh.Put(ctx, "dishes", []byte(`{"id":"new2","text":"noodles"}`)); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Get(ctx, "dishes-v2", "new2"); err != nil {
		t.Fatalf("a write through the switched alias is not the new index's: %v", err)
	}
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if !testwait.Poll(wctx, func() bool {
		if _, err := c.Put(ctx, "dishes", []byte(`{"id":"new3","text":"noodles"}`)); err != nil {
			t.Fatal(err)
		}
		_, err := c.Get(ctx, "dishes-v2", "new3")
		return err == nil
	}) {
		t.Fatal("the client that cached the alias still writes to the old index")
	}

	// Over HTTP: operators manage aliases; a team's token uses its
	// team's aliases like its indexes, and no other team's.
	food := mustToken(t, c, "food", false, "front end", client.TokenScope(api.ScopeSearch))
	books := mustToken(t, c, "books", false, "")
	op := mustToken(t, c, "", true, "ops")
	hc := &http.Client{Timeout: 30 * time.Second}
	base := "http://" + n.HTTPAddr
	waitStatus(t, hc, base+"/v1/indexes/dishes/search", food, 200, "food's token searches food's alias")
	if code, body := do(t, hc, "POST", base+"/v1/indexes/dishes/search", books, `{"q":"noodles"}`); code != 403 {
		t.Errorf("books's token on food's alias: %d %s", code, body)
	}
	for _, step := range []struct {
		method, path, token, body string
		code                      int
		has                       string
	}{
		{"POST", "/v1/aliases/menu", food, `{"index":"dishes-v1"}`, 403, "operator tokens"},
		{"POST", "/v1/aliases/menu", op, `{"index":"dishes-v1"}`, 201, `"index":"dishes-v1"`},
		{"POST", "/v1/aliases/menu", op, `{}`, 400, `give the index it points at`},
		{"PUT", "/v1/aliases/menu", op, `{"index":"dishes-v2"}`, 200, `"index":"dishes-v2"`},
		{"PUT", "/v1/aliases/nothing", op, `{"index":"dishes-v2"}`, 404, `alias \"nothing\" does not exist`},
		{"GET", "/v1/aliases", op, ``, 200, `{"name":"dishes","index":"dishes-v2","team":"food"`},
		{"GET", "/v1/aliases/menu", op, ``, 200, `"name":"menu"`},
		{"DELETE", "/v1/indexes/dishes-v2", op, ``, 409, "alias dishes, menu points at"},
	} {
		code, body := do(t, hc, step.method, base+step.path, step.token, step.body)
		if code != step.code || !strings.Contains(body, step.has) {
			t.Errorf("%s %s %s: %d %s, want %d with %s", step.method, step.path, step.body, code, body, step.code, step.has)
		}
	}
	// Food's token searches the new alias once the door and the brokers
	// have heard of it and of its switch.
	testwait.UntilErr(t, 10*time.Second, "food's token searches the alias menu, switched", func() error {
		if code, body := do(t, hc, "POST", base+"/v1/indexes/menu/search", food, `{"q":"noodles"}`); code != 200 || !strings.Contains(body, `"index":"dishes-v2"`) {
			return fmt.Errorf("%d %.200s", code, body)
		}
		return nil
	})
	if code, body := do(t, hc, "DELETE", base+"/v1/aliases/menu", op, ``); code != 204 {
		t.Errorf("DELETE /v1/aliases/menu: %d %s", code, body)
	}
	if code, body := do(t, hc, "GET", base+"/v1/aliases/menu", op, ``); code != 404 || !strings.Contains(body, `alias \"menu\" does not exist`) {
		t.Errorf("GET /v1/aliases/menu after its removal: %d %s", code, body)
	}

	// Removed, the alias names nothing; its index stays, and may go.
	if err := c.DeleteAlias(ctx, "dishes"); err != nil {
		t.Fatal(err)
	}
	// (Once the brokers have heard of it: until then, its index answers.)
	rctx, rcancel := context.WithTimeout(ctx, 10*time.Second)
	defer rcancel()
	if !testwait.Poll(rctx, func() bool {
		r, err := c.Search(ctx, "dishes", &api.SearchRequest{Q: "noodles"})
		if err == nil && r.Index != "dishes-v2" {
			t.Fatalf("search of a removed alias answered by %q", r.Index)
		}
		return errors.Is(err, api.ErrNotFound)
	}) {
		t.Error("search of a removed alias still answers")
	}
	if err := c.DeleteIndex(ctx, "dishes-v1"); err != nil {
		t.Errorf("delete the index once its alias is gone: %v", err)
	}
	var list []api.Alias
	if list, err = c.Aliases(ctx); err != nil || len(list) != 0 {
		b, _ := json.Marshal(list)
		t.Errorf("aliases left: %s %v", b, err)
	}
}

// errOf is the error of a call that returns a value too.
func errOf[T any](_ T, err error) error { return err }
