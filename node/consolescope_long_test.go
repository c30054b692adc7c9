//go:build long

package node

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/quarrysearch/quarry/api"
	"github.com/quarrysearch/quarry/broker"
	"github.com/quarrysearch/quarry/client"
	"github.com/quarrysearch/quarry/indexer"
	"github.com/quarrysearch/quarry/internal/testwait"
	"github.com/quarrysearch/quarry/searcher"
)

// TestConsoleScopedTokens signs in to the console with team tokens of
// scope search and write: each is named with its scope, sees its team's
// index, the playground searches it, the pages its scope does not cover
// (plugins, traffic) are neither offered nor opened when asked for, and no
// page makes a call the token is refused (no 403 in the browser's log,
// no error on the page).
func TestConsoleScopedTokens(t *testing.T) {
	exe := chromium(t)
	shots := screenshotDir(t)
	n := startConfig(t, Config{HTTPAuth: true, Indexer: &indexer.Config{}, Searcher: &searcher.Config{}, Broker: &broker.Config{}})
	ctx := context.Background()
	c := n.Client()
	if _, err := c.CreateIndexDef(ctx, api.IndexDefinition{Name: "menu", Shards: 1, Team: "food"}); err != nil {
		t.Fatal(err)
	}
	mustBulk(t, c, "menu", ndjson(30, "menu"))
	base := "http://" + n.HTTPAddr
	hc := &http.Client{Timeout: 10 * time.Second}
	tokens := map[string]string{}
	for _, scope := range []string{api.ScopeSearch, api.ScopeWrite} {
		tok, _, err := c.CreateToken(ctx, "food", false, "web", client.TokenScope(scope))
		if err != nil {
			t.Fatal(err)
		}
		tokens[scope] = tok
		testwait.UntilErr(t, 10*time.Second, "the token works", func() error {
			if code, body := do(t, hc, "GET", base+"/v1/me", tok, ""); code != 200 {
				return fmt.Errorf("%d %.200s", code, body)
			}
			return nil
		})
	}

	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(exe), chromedp.WindowSize(1280, 900), chromedp.DisableGPU)
	if os.Geteuid() == 0 {
		opts = append(opts, chromedp.NoSandbox) // Chromium refuses root without it
	}
	browser, cancel := chromedp.NewExecAllocator(ctx, opts...)
	defer cancel()
	for _, scope := range []string{api.ScopeSearch, api.ScopeWrite} {
		t.Run(scope, func(t *testing.T) {
			b := openTab(t, browser, base, shots)
			b.login(tokens[scope])
			b.noErrors("sign in") // and forgets the 401 of the console's first call, without a token
			if who := eval[string](b, `document.getElementById("identity").textContent`); who != "team food · "+scope+" token" {
				t.Errorf("signed in as %q, want team food · %s token", who, scope)
			}
			if got := eval[[]string](b, `[...document.querySelectorAll("#nav a")].filter(a => !a.hidden).map(a => a.dataset.page)`); !slices.Equal(got, []string{"indexes", "playground", "roles"}) {
				t.Errorf("the %s token's console offers the pages %v, want [indexes playground roles]", scope, got)
			}
			b.until(`document.querySelector('.card.index[data-index="menu"]') !== null && document.getElementById("scope-note") !== null`)
			b.screenshot("indexes-" + scope)

			b.page("playground")
			b.do(chromedp.SetValue(chromedp.ID("q"), "noodles"), chromedp.Click(chromedp.ID("run")))
			b.until(`document.getElementById("results").dataset.done === "true"`)
			if hits := eval[int](b, `document.querySelectorAll("#hits tr.hit").length`); hits != 10 {
				t.Errorf("the playground shows %d hits, want 10: %s", hits, eval[string](b, `document.getElementById("results").innerText`))
			}
			b.screenshot("playground-" + scope)

			// Asked for a page beyond its scope, the console shows the
			// indexes instead.
			for _, page := range []string{"plugins", "traffic"} {
				eval[any](b, fmt.Sprintf(`location.hash = "#/%s"`, page))
				b.until(`document.body.dataset.ready === "indexes"`)
			}
			b.page("roles")
			b.settle()
			// Chromium logs each answer of 4xx to the page's fetch as
			// "Failed to load resource: the server responded with a
			// status of 403 (Forbidden)".
			for _, m := range b.console() {
				if strings.Contains(m, "status of 403") || strings.Contains(m, "status of 401") {
					t.Errorf("the %s token's console made a call it is refused: %s", scope, m)
				}
			}
			b.noErrors("every page (" + scope + " token)")
		})
	}
}
