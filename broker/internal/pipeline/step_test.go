package pipeline

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"testing"
	"time"

	"github.com/quarrysearch/quarry/plugins"
	"github.com/quarrysearch/quarry/sdk/abi"
)

// testPlugin loads a native ranker named name that ranks nothing.
func testPlugin(t *testing.T, name string) *plugins.Plugin {
	t.Helper()
	p, err := plugins.LoadNative(plugins.Spec{Name: name, Version: "v1", Kind: plugins.Ranker, Budget: 5 * time.Second, Instances: 1},
		func([]byte) (plugins.NativeHandler, error) {
			return func(_, out []byte) []byte { return append(out, abi.StatusOK, 0, 0, 0, 0, 0) }, nil
		})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close(context.Background()) })
	return p
}

// A step's canary takes CanaryPercent of the queries: always the same
// version for one value of the sticky key, random without it.
func TestStepChoose(t *testing.T) {
	p := testPlugin(t, "ltr")
	canary := &Step{Plugin: p}
	cases := []struct {
		name     string
		percent  int
		sticky   string
		ctx      func(i int) string
		min, max int // canary choices of 1000
		stable   bool
	}{
		{"no canary share", 0, "user", func(i int) string { return fmt.Sprintf(`{"user":%d}`, i) }, 0, 0, true},
		{"all", 100, "", func(int) string { return "" }, 1000, 1000, true},
		{"random", 30, "", func(int) string { return "" }, 200, 400, false},
		{"sticky by user", 30, "user", func(i int) string { return fmt.Sprintf(`{"user":%d}`, i) }, 200, 400, true},
		{"sticky key absent: random", 30, "user", func(i int) string { return fmt.Sprintf(`{"team":%d}`, i) }, 200, 400, false},
		{"context not JSON: random", 30, "user", func(int) string { return "not json" }, 200, 400, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := &Step{Plugin: p, Canary: canary, CanaryPercent: c.percent, StickyKey: c.sticky}
			n, changed := 0, 0
			for i := range 1000 {
				ctx := []byte(c.ctx(i))
				got, isCanary := s.Choose(ctx)
				if isCanary != (got == canary) {
					t.Fatalf("Choose returned %p, canary %v", got, isCanary)
				}
				if isCanary {
					n++
				}
				for range 3 {
					if _, again := s.Choose(ctx); again != isCanary {
						changed++
						break
					}
				}
			}
			if n < c.min || n > c.max {
				t.Fatalf("the canary took %d of 1000 queries, want %d to %d", n, c.min, c.max)
			}
			if c.stable != (changed == 0) {
				t.Fatalf("%d of 1000 contexts changed version on a second try; stable: %v", changed, c.stable)
			}
		})
	}
	// The sticky bucket is fnv-32a of the plugin's name and the key's
	// JSON value, mod 100: below the percent, the canary.
	for _, percent := range []int{1, 30, 99} {
		s := &Step{Plugin: p, Canary: canary, CanaryPercent: percent, StickyKey: "user"}
		for i := range 300 {
			v := fmt.Sprintf(`"u%d"`, i)
			h := fnv.New32a()
			h.Write([]byte("ltr" + v))
			if _, isCanary := s.Choose([]byte(`{"user":` + v + `}`)); isCanary != (int(h.Sum32()%100) < percent) {
				t.Fatalf("%d%%: user %s (bucket %d) got the canary: %v", percent, v, h.Sum32()%100, isCanary)
			}
		}
	}
	if got, isCanary := (&Step{Plugin: p, CanaryPercent: 100}).Choose(nil); got.Canary != nil || isCanary {
		t.Fatal("a step without a canary chose one")
	}
}

// A shadow search's steps: copies without shadows of their own, whose
// calls do not count toward the live steps' health, canaries included;
// the live steps are untouched.
func TestQuiet(t *testing.T) {
	p := testPlugin(t, "ltr")
	canary := &Step{Plugin: p, Shadow: &Step{Plugin: p}}
	live := []Step{{Plugin: p, Canary: canary, CanaryPercent: 10, Shadow: &Step{Plugin: p}, ShadowPercent: 50, health: newHealth(10)}, {Plugin: p}}
	q := Quiet(live)
	if len(q) != 2 || !q[0].quiet || !q[1].quiet || q[0].Shadow != nil || q[0].Canary == canary || !q[0].Canary.quiet || q[0].Canary.Shadow != nil ||
		q[0].CanaryPercent != 10 || q[0].health != live[0].health {
		t.Fatalf("quiet steps %+v", q)
	}
	if live[0].quiet || live[0].Shadow == nil || canary.quiet || canary.Shadow == nil {
		t.Fatal("Quiet changed the live steps")
	}
	// A quiet step's calls are not observed.
	lim := NewFallbackLimits(0.5, 0.01, 100, 20)
	q[0].Observe(time.Millisecond, errors.New("failed"), &lim)
	q[0].health.mu.Lock()
	n := q[0].health.n
	q[0].health.mu.Unlock()
	if n != 0 {
		t.Fatalf("a quiet call was recorded: %d calls", n)
	}
	live[0].Observe(time.Millisecond, errors.New("failed"), &lim)
	if live[0].health.n != 1 {
		t.Fatalf("a live call was not recorded: %d calls", live[0].health.n)
	}
}

// A pipeline's plugins: each step's, then its canary's and its shadow's,
// rewriters first; a step without a plugin ends its branch.
func TestPipelinePlugins(t *testing.T) {
	p := func(name string) *plugins.Plugin { return testPlugin(t, name) }
	pl := &Pipeline{
		Rewriters: []Step{{Plugin: p("a"), Canary: &Step{Plugin: p("a-canary"), Shadow: &Step{Plugin: p("a-canary-shadow")}}, Shadow: &Step{Plugin: p("a-shadow")}}},
		Rankers:   []Step{{Plugin: p("b")}, {Canary: &Step{Plugin: p("unreachable")}}, {Plugin: p("c"), Shadow: &Step{Plugin: p("c-shadow")}}},
	}
	var got []string
	for pg := range pl.Plugins {
		got = append(got, pg.Spec().Name)
	}
	want := []string{"a", "a-canary", "a-canary-shadow", "a-shadow", "b", "c", "c-shadow"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("plugins %v, want %v", got, want)
	}
	n := 0
	for range pl.Plugins {
		if n++; n == 2 {
			break
		}
	}
	if n != 2 {
		t.Fatalf("stopped after %d", n)
	}
}
