//go:build long

package node

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/quarrysearch/quarry/api"
	"github.com/quarrysearch/quarry/broker"
	"github.com/quarrysearch/quarry/client"
	"github.com/quarrysearch/quarry/indexer"
	"github.com/quarrysearch/quarry/internal/catalog"
	"github.com/quarrysearch/quarry/internal/demo"
	"github.com/quarrysearch/quarry/internal/testwait"
	"github.com/quarrysearch/quarry/internal/wasmtest"
	"github.com/quarrysearch/quarry/searcher"
)

// chromium finds headless Chromium for the console's browser tests:
// $QUARRY_CHROMIUM, else the first of the usual names on PATH. Without
// one the test fails (it does not skip): CI installs Debian's chromium.
func chromium(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("QUARRY_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "headless-shell"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Fatal("the console's browser tests need headless Chromium and found none on PATH: install it (Debian: apt-get install chromium; .ci/run does) or set QUARRY_CHROMIUM to its path")
	return ""
}

// screenshotDir is where the browser tests write their screenshots:
// $QUARRY_SCREENSHOTS, else a temporary directory.
func screenshotDir(t *testing.T) string {
	dir := os.Getenv("QUARRY_SCREENSHOTS")
	if dir == "" {
		return t.TempDir()
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// tab is one browser tab on the console, with what its page wrote to the
// console. Each tab has its own sessionStorage, so its own token.
type tab struct {
	t     *testing.T
	ctx   context.Context
	base  string
	shots string

	mu    sync.Mutex
	msgs  []chromedp.ConsoleMessage
	marks int // markers written (settle)
}

func openTab(t *testing.T, browser context.Context, base, shots string) *tab {
	t.Helper()
	ctx, cancel := chromedp.NewContext(browser)
	t.Cleanup(cancel)
	if err := chromedp.Do(ctx); err != nil { // opens the tab
		t.Fatal(err)
	}
	b := &tab{t: t, ctx: ctx, base: base, shots: shots}
	msgs := chromedp.Console(ctx)
	go func() {
		for m, err := range msgs {
			if err != nil {
				return
			}
			b.mu.Lock()
			b.msgs = append(b.msgs, m)
			b.mu.Unlock()
		}
	}()
	return b
}

// do runs steps with a deadline.
func (b *tab) do(steps ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 45*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, steps...); err != nil {
		b.t.Fatalf("browser: %v (console: %v)", err, b.console())
	}
}

// eval evaluates a JavaScript expression (awaiting a promise).
func eval[T any](b *tab, expr string) T {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 45*time.Second)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr, chromedp.EvalAwaitPromise))
	if err != nil {
		b.t.Fatalf("browser: evaluate %s: %v (console: %v)", expr, err, b.console())
	}
	return v
}

// until waits for a JavaScript expression to be true.
func (b *tab) until(expr string) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 45*time.Second)
	defer cancel()
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](expr, chromedp.WithPollingInterval(20*time.Millisecond))); err != nil {
		b.t.Fatalf("browser: waiting for %s: %v (console: %v)", expr, err, b.console())
	}
}

func (b *tab) console() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []string
	for _, m := range b.msgs {
		out = append(out, m.String())
	}
	return out
}

// noErrors fails the test for any error the page wrote to the console:
// a console.error call, an uncaught exception or rejection, a browser log
// error (a refused script, a CSP violation). An HTTP error answer to the
// page's own fetch (the network's log) is not the page's error; the
// tests that expect one check it.
func (b *tab) noErrors(page string) {
	b.t.Helper()
	b.settle()
	// Nothing drawn as a value the page failed to format.
	if bad := eval[[]string](b, `(() => {
		const w = document.createTreeWalker(document.getElementById("main"), NodeFilter.SHOW_TEXT);
		const out = [];
		while (w.nextNode()) if (/^\s*(null|undefined|NaN|\[object Object\])\s*$/.test(w.currentNode.data)) out.push(w.currentNode.parentNode.outerHTML.slice(0, 200));
		return out;
	})()`); len(bad) > 0 {
		b.t.Errorf("%s page: draws %q", page, bad)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, m := range b.msgs {
		if (m.Type == chromedp.ConsoleError || m.IsException()) && m.Source != "network" {
			b.t.Errorf("%s page: console %s (at %s:%d)", page, m, m.URL, m.Line)
		}
	}
	b.msgs = nil
}

// settle waits until every message the page wrote so far has arrived:
// it writes a marker to the console and waits for it, as the messages
// keep their order.
func (b *tab) settle() {
	b.t.Helper()
	b.marks++
	mark := fmt.Sprintf("quarry test: marker %d", b.marks)
	eval[bool](b, fmt.Sprintf(`(console.debug(%q), true)`, mark))
	testwait.Until(b.t, 45*time.Second, "the console's messages up to "+mark, func() bool {
		b.mu.Lock()
		defer b.mu.Unlock()
		return slices.ContainsFunc(b.msgs, func(m chromedp.ConsoleMessage) bool { return m.Text == mark })
	})
}

// login opens the console and signs in with token.
func (b *tab) login(token string) {
	b.t.Helper()
	b.do(chromedp.Navigate(b.base+"/"), chromedp.WaitVisible(chromedp.ID("token")),
		chromedp.SendKeys(chromedp.ID("token"), token), chromedp.Click(chromedp.CSS("#login button")))
	b.until(`document.body.dataset.ready === "indexes"`)
}

// page goes to one of the console's pages and waits until it is drawn.
func (b *tab) page(name string) {
	b.t.Helper()
	eval[any](b, fmt.Sprintf(`location.hash = "#/%s"`, name))
	b.until(fmt.Sprintf(`document.body.dataset.ready === %q`, name))
}

// screenshot writes the whole page to name.png in the screenshot
// directory.
func (b *tab) screenshot(name string) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 45*time.Second)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100)) // 100: PNG
	if err != nil {
		b.t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(b.shots, name+".png"), png, 0o644); err != nil {
		b.t.Fatal(err)
	}
}

// TestConsole drives the console in headless Chromium against a node with
// tokens, two teams' indexes and the demo pipeline: every page loads
// without console errors, the playground searches and draws the hits and
// the stage waterfall, a rollback from the plugins page changes the live
// pipeline, and a team sees neither another team's index nor its data.
// Screenshots of every page go to $QUARRY_SCREENSHOTS (or a temporary
// directory).
func TestConsole(t *testing.T) {
	exe := chromium(t)
	shots := screenshotDir(t)
	start := time.Now()
	n := startConfig(t, Config{HTTPAuth: true, Indexer: &indexer.Config{}, Searcher: &searcher.Config{},
		// No automatic fallback: a slow plugin under -race must not
		// change the pipeline the test rolls back.
		// Every search counts as slow, for the traffic page's list.
		Broker: &broker.Config{FallbackErrorRate: 1, SlowQuery: time.Nanosecond}})
	ctx := context.Background()
	c := n.Client()

	// Team food's menu: a slice of the demo catalogue, with the demo's
	// query settings and pipeline; team books's books.
	menu := api.IndexDefinition{Name: "menu", Shards: 2, Team: "food", Mapping: catalog.Mapping(), Query: api.QuerySettings{
		Fields: []api.FieldBoost{{Field: "name", Boost: 3}, {Field: "description", Boost: 1}, {Field: "_all", Boost: 0.5}}, Operator: "or", PhraseBoost: 2}}
	if _, err := c.CreateIndexDef(ctx, menu); err != nil {
		t.Fatal(err)
	}
	if _, err := c.CreateAlias(ctx, "dishes", "menu"); err != nil {
		t.Fatal(err)
	}
	file, modules, err := demo.Pipeline()
	if err != nil {
		t.Fatal(err)
	}
	// The demo pipeline but synonyms: each Go plugin takes half a minute
	// to compile under the race detector, and spelling and georank are
	// a rewrite and a rank to see.
	var pipeline map[string][]map[string]any
	if err := json.Unmarshal(file, &pipeline); err != nil {
		t.Fatal(err)
	}
	pipeline["rewriters"] = slices.DeleteFunc(pipeline["rewriters"], func(st map[string]any) bool { return st["plugin"] == "synonyms" })
	if file, err = json.Marshal(pipeline); err != nil {
		t.Fatal(err)
	}
	// Validating the plugins and loading the documents take longest: at
	// once.
	var first *api.PipelineSpec
	applied := make(chan error, 1)
	go func() {
		var err error
		first, err = n.ApplyPipelineModules(ctx, "menu", demo.PipelineName, file, modules, "demo")
		applied <- err
	}()
	docs := catalogNDJSON(t, 2000)
	if res, err := c.Bulk(ctx, "menu", bytes.NewReader(docs), client.BulkOptions{}); err != nil || res.Stored != 2000 {
		t.Fatalf("bulk: %+v %v", res, err)
	}
	if _, err := c.CreateIndexDef(ctx, api.IndexDefinition{Name: "books", Shards: 1, Team: "books"}); err != nil {
		t.Fatal(err)
	}
	mustBulk(t, c, "books", ndjson(30, "book"))
	waitDocs(t, n, 2030)
	if err := <-applied; err != nil {
		t.Fatal(err)
	}
	info, err := c.IndexInfo(ctx, "menu")
	if err != nil {
		t.Fatal(err)
	}
	var snapDocs uint64
	for _, st := range info.ShardStatus {
		snapDocs += st.SnapshotDocs
		if len(st.Replicas) != 1 {
			t.Errorf("index.show: shard %d has replicas %v, want the one searcher", st.Shard, st.Replicas)
		}
		// What the searcher says of its replica in micro discovery.
		if len(st.Serving) != 1 || st.Serving[0].Replica != n.Searcher.ID() || st.Serving[0].Docs != st.SnapshotDocs || st.Serving[0].Generation != info.Generation {
			t.Errorf("index.show: shard %d is served by %+v; want searcher %s at generation %d with %d documents", st.Shard, st.Serving, n.Searcher.ID(), info.Generation, st.SnapshotDocs)
		}
	}
	if info.Team != "food" || info.Generation == 0 || snapDocs != 2000 || len(info.ShardStatus) != 2 {
		t.Errorf("index.show: team %q, generation %d, %d snapshot documents over %d shards; want food, a generation, 2000 over 2", info.Team, info.Generation, snapDocs, len(info.ShardStatus))
	}
	// A second revision to roll back from: georank taken out.
	second, err := c.RemovePlugin(ctx, "menu", "georank")
	if err != nil {
		t.Fatal(err)
	}
	// A second version of spelling, not live: for the canary and promote
	// buttons.
	candidate, err := c.PushPlugin(ctx, "menu", "spelling", wasmtest.WAT(t, identityWAT), client.PushOptions{Kind: "rewriter"})
	if err != nil {
		t.Fatal(err)
	}
	food := mustToken(t, c, "food", false, "console test")
	books := mustToken(t, c, "books", false, "")
	op := mustToken(t, c, "", true, "ops")
	base := "http://" + n.HTTPAddr
	hc := &http.Client{Timeout: 10 * time.Second}
	for _, tok := range []string{food, books, op} { // usable once the guard has seen them
		testwait.UntilErr(t, 10*time.Second, "a token works", func() error {
			if code, body := do(t, hc, "GET", base+"/v1/me", tok, ""); code != 200 {
				return fmt.Errorf("%d %.200s", code, body)
			}
			return nil
		})
	}
	t.Logf("stack ready in %v", time.Since(start).Round(time.Millisecond))

	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(exe), chromedp.WindowSize(1280, 900), chromedp.DisableGPU)
	if os.Geteuid() == 0 {
		opts = append(opts, chromedp.NoSandbox) // Chromium refuses root without it
	}
	browser, cancel := chromedp.NewExecAllocator(ctx, opts...)
	defer cancel()
	browserStart := time.Now()

	b := openTab(t, browser, base, shots)
	b.login(food)
	if who := eval[string](b, `document.getElementById("identity").textContent`); who != "team food" {
		t.Errorf("signed in as %q, want team food", who)
	}

	// Indexes: team food's menu only.
	b.until(`document.querySelector('.card.index[data-index="menu"] table.shards tbody tr') !== null`)
	if got := eval[[]string](b, `[...document.querySelectorAll("#index option")].map(o => o.value)`); !slices.Equal(got, []string{"menu"}) {
		t.Errorf("team food's index picker offers %v, want [menu]", got)
	}
	if eval[bool](b, `document.querySelector('[data-index="books"]') !== null`) {
		t.Error("team food's indexes page shows team books's index")
	}
	if rows := eval[int](b, `document.querySelectorAll('.card.index[data-index="menu"] table.shards tbody tr').length`); rows != 2 {
		t.Errorf("menu's shard table has %d rows, want 2", rows)
	}
	if gen := eval[string](b, `document.querySelector('.card.index[data-index="menu"] table.shards tbody tr').children[2].textContent`); gen != fmt.Sprint(info.Generation) {
		t.Errorf("shard 0's replica shows generation %q, want %d", gen, info.Generation)
	}
	if !eval[bool](b, `[...document.querySelectorAll('.card.index[data-index="menu"] .badge.alias')].some(b => b.textContent === "alias dishes")`) {
		t.Error("menu's card does not show the alias dishes that points at it")
	}
	// Its mapping's fields (the catalogue's: cuisine a keyword).
	if got := eval[string](b, `[...document.querySelectorAll('.card.index[data-index="menu"] dl.kv dt')].filter(dt => dt.textContent === "cuisine").map(dt => dt.nextElementSibling.textContent).join()`); got != "text keyword" {
		t.Errorf("menu's mapping shows cuisine as %q, want \"text keyword\"", got)
	}
	b.noErrors("indexes")
	b.screenshot("indexes")

	// Plugins: roll back to the first revision from the page.
	b.page("plugins")
	if rev := eval[string](b, `document.getElementById("live-revision").textContent`); rev != fmt.Sprint(second.Revision) {
		t.Errorf("the plugins page shows revision %s live, want %d", rev, second.Revision)
	}
	b.do(chromedp.Click(chromedp.ID("rollback")), chromedp.WaitVisible(chromedp.ID("rollback-confirm")), chromedp.Click(chromedp.ID("rollback-confirm")))
	b.until(fmt.Sprintf(`(document.getElementById("live-revision") || {}).textContent > "" && document.getElementById("live-revision").textContent !== %q`, fmt.Sprint(second.Revision)))
	live, err := c.Pipeline(ctx, "menu")
	if err != nil {
		t.Fatal(err)
	}
	if shown := eval[string](b, `document.getElementById("live-revision").textContent`); shown != fmt.Sprint(live.Revision) || live.RestoredFrom != first.Revision {
		t.Errorf("after the rollback the page shows revision %s; the registry's live pipeline is revision %d restored from %d, want restored from %d", shown, live.Revision, live.RestoredFrom, first.Revision)
	}
	if st, _ := live.Step("georank"); st == nil {
		t.Errorf("the rollback did not bring georank back: %+v", live)
	}
	for _, id := range []string{"history", "events"} {
		if !strings.Contains(eval[string](b, fmt.Sprintf(`document.getElementById(%q).innerText`, id)), "rollback to revision") {
			t.Errorf("the %s does not show the rollback", id)
		}
	}
	b.noErrors("plugins")
	b.screenshot("plugins")

	// The brokers run the restored pipeline: the playground's search below
	// goes through georank again.
	waitRevision(t, 30*time.Second, n.Broker, "menu", live.Revision)
	if !ranksWith(c, "georank") {
		t.Fatal("the broker runs the restored pipeline without georank")
	}

	// Playground: a search with hits, the pipeline report, the rewrite
	// and the waterfall drawn to scale.
	b.page("playground")
	b.do(chromedp.SetValue(chromedp.ID("q"), "spicy noodels"), chromedp.Click(chromedp.ID("run")))
	b.until(`document.getElementById("results").dataset.done === "true"`)
	if hits := eval[int](b, `document.querySelectorAll("#hits tr.hit").length`); hits == 0 {
		t.Errorf("the playground shows no hits: %s", eval[string](b, `document.getElementById("results").innerText`))
	}
	// The terms are marked where the server matched them (its
	// highlighting): "noodles", which the spelling rewriter made of the
	// typed "noodels", a word the page itself could not have marked.
	if marks := eval[[]string](b, `[...document.querySelectorAll("#hits tr.hit mark")].map(m => m.textContent.toLowerCase())`); !slices.Contains(marks, "noodles") {
		t.Errorf("the playground's hits mark %q, want the server's \"noodles\"", marks)
	}
	stages := eval[[]string](b, `[...document.querySelectorAll("#waterfall g.stage")].map(g => g.dataset.stage)`)
	for _, want := range []string{"decode", "rewrite spelling", "plan", "fan-out", "shard 0", "shard 1", "merge", "rank georank", "encode"} {
		if !slices.Contains(stages, want) {
			t.Errorf("the waterfall has stages %v, no %q", stages, want)
		}
	}
	// Each shard's bar starts where the fan-out's does, and ends within
	// it (to scale, on one axis).
	inside := eval[bool](b, `(() => {
		const bar = (name) => document.querySelector('#waterfall g.stage[data-stage="' + name + '"] rect.bar');
		const f = bar("fan-out"), s = bar("shard 0");
		const x = (r) => parseFloat(r.getAttribute("x")), w = (r) => parseFloat(r.getAttribute("width"));
		return Math.abs(x(f) - x(s)) < 0.01 && x(s) + w(s) <= x(f) + w(f) + 1.5;
	})()`)
	if !inside {
		t.Error("shard 0's bar is not drawn inside the fan-out's")
	}
	if rewrite := eval[string](b, `document.getElementById("rewrites").innerText`); !strings.Contains(rewrite, "noodels") || !strings.Contains(rewrite, "noodles") {
		t.Errorf("the rewrite shows %q, want noodels → noodles", rewrite)
	}
	if steps := eval[int](b, `document.querySelectorAll("#pipeline-report tr.step").length`); steps != 2 {
		t.Errorf("the pipeline report has %d steps, want 2 (spelling, georank)", steps)
	}
	b.do(chromedp.Click(chromedp.CSS("#hits tr.hit button.explain-btn")))
	b.until(`!document.querySelector("#hits tr.explain").hidden`)
	// The hit's score explanation, from the index: BM25 with the whole
	// index's document count (2,000 over the 2 shards), not a shard's.
	b.until(`document.querySelector("#hits tr.explain ul.expl") !== null`)
	if expl := eval[string](b, `document.querySelector("#hits tr.explain ul.expl").textContent`); !strings.Contains(expl, "maxDocs=2000)") || strings.ContainsRune(expl, 0) {
		t.Errorf("the score explanation reads %.300q; want BM25 over maxDocs=2000, without raw bytes", expl)
	}
	b.noErrors("playground")
	b.screenshot("playground")

	if r, err := c.Search(ctx, "menu", &api.SearchRequest{Q: "xqzzyv"}); err != nil || r.Total != 0 {
		t.Fatalf("a search for nothing: %v %v", r, err)
	}
	b.page("traffic")
	b.until(`document.querySelector('#traffic-indexes tr[data-index="menu"]') !== null`)
	if eval[bool](b, `document.querySelector("#traffic-indexes thead tr").children.length !== document.querySelector('#traffic-indexes tr[data-index="menu"]').children.length`) {
		t.Error("the traffic table's header and rows have different numbers of cells")
	}
	if top := eval[string](b, `document.getElementById("top-queries").innerText`); !strings.Contains(top, "spicy noodels") {
		t.Errorf("top queries: %q, want the playground's", top)
	}
	if zero := eval[string](b, `document.getElementById("zero-queries").innerText`); !strings.Contains(zero, "xqzzyv") {
		t.Errorf("zero-result queries: %q, want xqzzyv", zero)
	}
	if n := eval[int](b, `document.querySelectorAll("#slow-queries details.slow svg.waterfall").length`); n == 0 {
		t.Error("no slow query with its stages")
	}
	b.noErrors("traffic")
	b.screenshot("traffic")

	// The plugins page again, with the searches' calls and latencies.
	b.page("plugins")
	b.noErrors("plugins (again)")
	b.screenshot("plugins")

	// A canary of the second spelling version at 50%, then promoted, from
	// the page.
	row := fmt.Sprintf(`tr.version[data-digest=%q]`, candidate.Digest)
	b.do(chromedp.SetValue(chromedp.CSS(row+` input[type="number"]`), "50"), chromedp.Click(chromedp.CSS(row+` button.canary`)))
	b.until(`[...document.querySelectorAll('tr.live-step[data-plugin="spelling"] .badge')].some(b => b.textContent.includes("canary") && b.textContent.includes("50%"))`)
	if live, err := c.Pipeline(ctx, "menu"); err != nil || live.Rewriters[0].Canary == nil || live.Rewriters[0].Canary.Step.Digest != candidate.Digest || live.Rewriters[0].Canary.Percent != 50 {
		t.Fatalf("after the canary button the live pipeline is %+v (%v)", live, err)
	}
	b.screenshot("plugins-canary")
	b.do(chromedp.Click(chromedp.CSS(`tr.live-step[data-plugin="spelling"] button.promote`)))
	b.until(fmt.Sprintf(`(document.querySelector('tr.live-step[data-plugin="spelling"]') || {textContent: ""}).textContent.includes(%q) && !document.querySelector('tr.live-step[data-plugin="spelling"] button.promote')`, candidate.Digest[len("sha256:"):][:12]))
	if live, err := c.Pipeline(ctx, "menu"); err != nil || live.Rewriters[0].Digest != candidate.Digest || live.Rewriters[0].Canary != nil {
		t.Errorf("after the promote button the live pipeline is %+v (%v)", live, err)
	}
	b.noErrors("plugins (canary, promote)")

	b.page("roles")
	b.noErrors("roles")

	// Team boundaries: another team's index is not offered even when the
	// tab asks for it, and its data is refused to this token.
	eval[any](b, `sessionStorage.setItem("quarry-index", "books")`)
	b.do(chromedp.Reload())
	b.until(`document.body.dataset.ready === "roles"`)
	if picked := eval[string](b, `document.getElementById("index").value`); picked != "menu" {
		t.Errorf("team food's console picked index %q, want menu", picked)
	}
	for _, path := range []string{"/v1/indexes/books/info", "/v1/indexes/books/pipeline", "/v1/indexes/books/pipeline/history", "/v1/roles"} {
		status := eval[int](b, fmt.Sprintf(`fetch(%q, {headers: {Authorization: "Bearer " + sessionStorage.getItem("quarry-token")}}).then(r => r.status)`, path))
		if status != 403 {
			t.Errorf("team food's token: GET %s answered %d, want 403", path, status)
		}
	}
	b.noErrors("roles (reloaded)")

	// Team books sees books only.
	bk := openTab(t, browser, base, shots)
	bk.login(books)
	bk.until(`document.querySelector('.card.index[data-index="books"]') !== null`)
	if eval[bool](bk, `document.querySelector('[data-index="menu"]') !== null || [...document.querySelectorAll("#index option")].some(o => o.value === "menu")`) {
		t.Error("team books's console shows team food's index")
	}
	bk.noErrors("indexes (team books)")

	// An operator sees every index and the roles on NATS.
	o := openTab(t, browser, base, shots)
	o.login(op)
	if got := eval[[]string](o, `[...document.querySelectorAll("#index option")].map(o => o.value)`); !slices.Equal(got, []string{"books", "menu"}) {
		t.Errorf("the operator's index picker offers %v, want [books menu]", got)
	}
	o.page("roles")
	names := eval[[]string](o, `[...document.querySelectorAll("tr.service")].map(r => r.dataset.name)`)
	for _, want := range []string{"quarry", "quarry-admin", "quarry-searcher", "quarry-indexer"} {
		if !slices.Contains(names, want) {
			t.Errorf("the roles page shows services %v, no %s", names, want)
		}
	}
	if ready := eval[int](o, `[...document.querySelectorAll('tr.service[data-name="quarry-searcher"] .badge')].filter(b => b.textContent === "ready").length`); ready != 1 {
		t.Errorf("the roles page shows %d ready searchers, want 1", ready)
	}
	if searchers := eval[int](o, `document.querySelectorAll("#searchers tr.searcher").length`); searchers != 1 {
		t.Errorf("the roles page shows %d searchers, want 1", searchers)
	}
	// The searcher's row counts the shard requests it answered (its
	// micro endpoint alone counts status questions).
	if requests := eval[string](o, `document.querySelector('tr.service[data-name="quarry-searcher"] td.num').textContent`); requests == "0" || requests == "" {
		t.Errorf("the roles page shows %q requests for the searcher after the searches above", requests)
	}
	o.noErrors("roles (operator)")
	o.screenshot("roles")

	// Every page of a new, empty index: no documents, no plugins, no
	// traffic (issue 36: the plugins page failed on every such index).
	if _, err := c.CreateIndexDef(ctx, api.IndexDefinition{Name: "fresh", Shards: 1}); err != nil {
		t.Fatal(err)
	}
	eval[any](o, `sessionStorage.setItem("quarry-index", "fresh")`)
	o.do(chromedp.Reload())
	o.until(`document.body.dataset.ready !== undefined && document.getElementById("index") !== null && document.getElementById("index").value === "fresh"`)
	for _, name := range []string{"indexes", "plugins", "playground", "traffic", "roles"} {
		o.page(name)
		o.noErrors(name + " (a new, empty index)")
	}
	t.Logf("browser part took %v; screenshots in %s", time.Since(browserStart).Round(time.Millisecond), shots)
}

// ranksWith reports whether a profiled search of menu runs ranker name.
func ranksWith(c *client.Client, name string) bool {
	r, err := c.Search(context.Background(), "menu", &api.SearchRequest{Q: "noodles", Profile: true})
	if err != nil || r.Profile == nil {
		return false
	}
	return slices.ContainsFunc(r.Profile.Stages, func(st api.Stage) bool { return st.Name == "rank "+name })
}
