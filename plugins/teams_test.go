package plugins

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"testing"

	"github.com/quarrysearch/quarry/internal/wasmtest"
)

// TestTeamInstanceBudgets: each team's runtime has its own instance
// budget; a team that has used its budget up is refused a plugin that
// another team can still load, and closing a plugin gives its instances
// back.
func TestTeamInstanceBudgets(t *testing.T) {
	ctx := context.Background()
	teams := NewTeams(Config{MaxInstances: 3, MemoryLimitPages: 16,
		Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))})
	t.Cleanup(func() { teams.Close(ctx) })
	wasm := wasmtest.WAT(t, watPlugin("", okBody))
	load := func(team string, instances int) (*Plugin, error) {
		t.Helper()
		rt, err := teams.Runtime(ctx, team)
		if err != nil {
			t.Fatal(err)
		}
		return rt.Load(ctx, Spec{Name: team + "-plugin", Kind: Rewriter, Instances: instances}, wasm)
	}
	a1, err := load("a", 2)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := load("a", 2); !errors.Is(err, ErrLimit) {
		t.Fatalf("team a over its budget: got %v, want ErrLimit", err)
	}
	b, err := load("b", 3)
	if err != nil {
		t.Fatalf("team b must not be limited by team a: %v", err)
	}
	defer b.Close(ctx)
	if got, _ := teams.Runtime(ctx, "a"); got.Instances() != 2 {
		t.Fatalf("team a reserves %d instances, want 2", got.Instances())
	}
	a1.Close(ctx)
	a1.Close(ctx) // twice: released once
	a2, err := load("a", 3)
	if err != nil {
		t.Fatalf("after closing its plugin team a has its budget back: %v", err)
	}
	a2.Close(ctx)
	// A module that fails its checks returns what it reserved.
	rt, _ := teams.Runtime(ctx, "a")
	if _, err := rt.Load(ctx, Spec{Name: "junk", Kind: Rewriter, Instances: 3}, []byte("not wasm")); !errors.Is(err, ErrNotWasm) {
		t.Fatalf("got %v", err)
	}
	if rt.Instances() != 0 {
		t.Fatalf("a refused module kept %d instances", rt.Instances())
	}
}
