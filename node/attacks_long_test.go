//go:build long

package node

import (
	"context"
	"fmt"
	"net/http"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/quarrysearch/quarry/api"
	"github.com/quarrysearch/quarry/client"
	"github.com/quarrysearch/quarry/internal/testtier"
	"github.com/quarrysearch/quarry/internal/wasmtest"
)

// spinStartWAT is a rewriter whose start function never returns: refused
// at push, after its start function's time limit.
const spinStartWAT = `(module (memory 1)
  (func $spin (loop $l (br $l)))
  (start $spin)
  (func (export "quarry_abi_v1"))
  (func (export "quarry_alloc") (param i32) (result i32) (i32.const 1024))
  (func (export "quarry_rewrite") (param i32 i32) (result i64)
    (i32.store16 (i32.const 40960) (i32.const 0))
    (i64.or (i64.shl (i64.const 40960) (i64.const 32)) (i64.const 2))))`

// An attack is what one team (the attacker, on indexes of its own) does
// to the platform, over and over until stop is closed; it returns what
// its requests got (status or outcome → count).
type attack struct {
	name string
	// setup makes the attacker's indexes and plugins; run then attacks.
	setup func(t *testing.T) func(stop <-chan struct{}) map[string]int
}

// controlRow names the row of TestAttackIsolation that is no attack:
// another team's fair use of the platform, the yardstick of the rows
// after it.
const controlRow = "control: plain searches from 3 clients in a closed loop"

// TestAttackIsolation runs each attack of issue 34's table that still
// costs something once refused at its door (the rest are refused before
// they cost anything: their tests are in the fast tier) beside a calm
// team's normal queries, and compares the calm team's latency beside it
// with its latency alone, measured just before in the same run. The calm
// team never sees a failure; the short variant (CI: other packages share
// the two cores) holds its median to 3x, the soak variant (-tags
// long,soak: more queries) its p99 to the goal of 2x; either, where the
// control row already costs that much, to within 1.25x of the same
// figure beside the control: no attack may cost the calm team more than
// a neighbour's fair use. (On two cores another team's three closed-loop
// clients take the calm p99 to 1.9-2.4x; since the broker asks its own
// searcher directly the calm median alone is 0.3-0.5 ms, and an attack
// holding one core for its heavy turn takes it past 3x as the control
// does: 335 µs to 1.27 ms beside the wildcard, 1.07 ms beside the
// control, in one CI run.) The table is logged: go test -tags long,soak
// -run TestAttackIsolation -v ./node.
func TestAttackIsolation(t *testing.T) {
	n := startNode(t)
	ctx := context.Background()
	c := n.Client()
	qs := api.QuerySettings{Fields: []api.FieldBoost{{Field: "title", Boost: 2}, {Field: "body"}}}
	queries := 200
	if testtier.Soak {
		queries = 3000
	}
	g := corpusIndex(t, n, "books", 2, 500, qs)
	words := g.Words()
	base := "http://" + n.HTTPAddr + "/v1/indexes/"
	normal := func(i int) string {
		return fmt.Sprintf(`{"q":"%s %s","size":10,"fields":["title"]}`, words[(i*7)%300], words[(i*13+5)%300])
	}
	latencies(base+"books/search", 1, 50, normal, nil) // warm up

	// loop sends the attacker's requests from workers until stop.
	loop := func(workers int, send func(hc *http.Client, i int) string) func(stop <-chan struct{}) map[string]int {
		return func(stop <-chan struct{}) map[string]int {
			got := map[string]int{}
			var mu sync.Mutex
			var wg sync.WaitGroup
			for w := range workers {
				wg.Go(func() {
					hc := &http.Client{Timeout: 30 * time.Second}
					for i := w; ; i += workers {
						select {
						case <-stop:
							return
						default:
						}
						out := send(hc, i)
						mu.Lock()
						got[out]++
						mu.Unlock()
					}
				})
			}
			wg.Wait()
			return got
		}
	}
	post := func(hc *http.Client, url, body string) string {
		code, _, err := postTimed(hc, url, body)
		if err != nil {
			return "error"
		}
		return fmt.Sprint(code)
	}
	attackerIndex := func(t *testing.T, name string) string {
		t.Helper()
		corpusIndex(t, n, name, 1, 200, qs)
		return base + name + "/search"
	}
	attacks := []attack{
		// The control: what another team's three clients in a closed
		// loop of plain searches cost the calm team on this machine; the
		// attacks below send as many clients.
		{controlRow, func(t *testing.T) func(<-chan struct{}) map[string]int {
			url := attackerIndex(t, "plain")
			return loop(3, func(hc *http.Client, _ int) string {
				return post(hc, url, `{"q":"noodles"}`)
			})
		}},
		{"a wildcard over every field's terms", func(t *testing.T) func(<-chan struct{}) map[string]int {
			// The attacker's own index, its terms limit raised to the
			// most an index may allow: the wildcard runs.
			wild := qs
			wild.Limits = api.QueryLimits{MaxTerms: api.MaxLimits.MaxTerms}
			corpusIndex(t, n, "wild", 2, 2000, wild)
			url := base + "wild/search"
			return loop(4, func(hc *http.Client, _ int) string {
				return post(hc, url, `{"query":{"wildcard":"*","field":"_all"},"size":10}`)
			})
		}},
		{"a rewriter that spins, at the maximum budget", func(t *testing.T) func(<-chan struct{}) map[string]int {
			url := attackerIndex(t, "spin")
			if _, err := c.PushPlugin(ctx, "spin", "spin", wasmtest.WAT(t, spinWAT), client.PushOptions{Kind: "rewriter", Activate: true,
				Step: api.StepSpec{BudgetMS: 5000}}); err != nil {
				t.Fatal(err)
			}
			return loop(3, func(hc *http.Client, _ int) string {
				return post(hc, url, `{"q":"noodles","timeout_ms":1000}`)
			})
		}},
		{"a variant pipeline of 32 slow steps", func(t *testing.T) func(<-chan struct{}) map[string]int {
			url := attackerIndex(t, "variant")
			v, err := c.PushPlugin(ctx, "variant", "slow", wasmtest.WAT(t, slowWAT), client.PushOptions{Kind: "rewriter", Step: api.StepSpec{BudgetMS: 2000}})
			if err != nil {
				t.Fatal(err)
			}
			steps := strings.Repeat(fmt.Sprintf(`{"plugin":"slow","digest":%q},`, v.Digest), 32)
			body := `{"q":"noodles","timeout_ms":2000,"variant":{"pipeline":{"rewriters":[` + strings.TrimSuffix(steps, ",") + `]}}}`
			return loop(3, func(hc *http.Client, _ int) string { return post(hc, url, body) })
		}},
		{"a rewriter logging 2,000 lines of 4 KiB a call", func(t *testing.T) func(<-chan struct{}) map[string]int {
			url := attackerIndex(t, "logs")
			if _, err := c.PushPlugin(ctx, "logs", "flood", wasmtest.WATFile(t, "../plugins/testdata/floodlog.wat"), client.PushOptions{Kind: "rewriter", Activate: true}); err != nil {
				t.Fatal(err)
			}
			return loop(3, func(hc *http.Client, _ int) string {
				return post(hc, url, `{"q":"noodles"}`)
			})
		}},
		{"pushes of a module whose start function never returns", func(t *testing.T) func(<-chan struct{}) map[string]int {
			attackerIndex(t, "pushes")
			wasm := wasmtest.WAT(t, spinStartWAT)
			return loop(2, func(_ *http.Client, i int) string {
				// A new digest each time (a custom section of 5 bytes:
				// name "a", then i), so no refusal is remembered.
				w := append(slices.Clone(wasm), 0, 5, 1, 'a', byte(i), byte(i>>8), byte(i>>16))
				_, err := c.PushPlugin(ctx, "pushes", "spin", w, client.PushOptions{Kind: "rewriter"})
				if err == nil {
					return "accepted"
				}
				return string(api.CodeOf(err))
			})
		}},
	}
	type row struct {
		name                   string
		p50a, p99a, p50d, p99d time.Duration
		outcomes               map[string]int
	}
	var rows []row
	// control and controlP50 are the calm team's p99 and median beside
	// the control row, once run.
	var control, controlP50 time.Duration
	for _, a := range attacks {
		t.Run(a.name, func(t *testing.T) {
			run := a.setup(t)
			runtime.GC()
			alone, failed := latencies(base+"books/search", 1, queries, normal, nil)
			if len(failed) > 0 {
				t.Fatalf("alone: %d failures: %v", len(failed), failed[:min(3, len(failed))])
			}
			stop := make(chan struct{})
			outcomes := make(chan map[string]int, 1)
			go func() { outcomes <- run(stop) }()
			time.Sleep(500 * time.Millisecond) // the attack under way before the calm team's queries are timed beside it
			during, failed := latencies(base+"books/search", 1, queries, normal, nil)
			close(stop)
			r := row{name: a.name, p50a: quantile(alone, 0.5), p99a: quantile(alone, 0.99), p50d: quantile(during, 0.5), p99d: quantile(during, 0.99), outcomes: <-outcomes}
			rows = append(rows, r)
			if len(failed) > 0 {
				t.Errorf("%d of the calm team's queries failed beside the attack: %v", len(failed), failed[:min(3, len(failed))])
			}
			if !testtier.Soak && r.p50d > 3*r.p50a && (controlP50 == 0 || r.p50d > controlP50*5/4) {
				t.Errorf("the calm team's median went from %s to %s beside the attack: over 3x, and over 1.25x its %s beside the control", r.p50a, r.p50d, controlP50)
			}
			switch {
			case a.name == controlRow:
				control, controlP50 = r.p99d, r.p50d
			case testtier.Soak && r.p99d > 2*r.p99a && (control == 0 || r.p99d > control*5/4):
				t.Errorf("the calm team's p99 went from %s to %s beside the attack: over 2x, and over 1.25x its %s beside the control", r.p99a, r.p99d, control)
			}
		})
	}
	var b strings.Builder
	fmt.Fprintf(&b, "the calm team's %d queries alone, then beside each attack:\n", queries)
	fmt.Fprintf(&b, "%-56s %9s %9s %9s %9s %6s  %s\n", "ATTACK", "P50", "P99", "P50 ATT", "P99 ATT", "P99 X", "THE ATTACKER GOT")
	for _, r := range rows {
		keys := make([]string, 0, len(r.outcomes))
		for k := range r.outcomes {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		var got []string
		for _, k := range keys {
			got = append(got, fmt.Sprintf("%s×%d", k, r.outcomes[k]))
		}
		fmt.Fprintf(&b, "%-56s %9s %9s %9s %9s %5.2fx  %s\n", r.name, r.p50a.Round(10*time.Microsecond), r.p99a.Round(10*time.Microsecond),
			r.p50d.Round(10*time.Microsecond), r.p99d.Round(10*time.Microsecond), float64(r.p99d)/float64(r.p99a), strings.Join(got, " "))
	}
	t.Log(b.String())
}
