//go:build long

package main

import (
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestREADMEAsWritten does what a newcomer does: clone the repository,
// run the README's demo command exactly as printed (read from README.md,
// so the two cannot drift), wait until it is ready, run the README's
// search, and check the clone is as clean as it was. Quarry's data goes to
// the user's data directory ($XDG_DATA_HOME, set to a temporary one here).
// It clones the committed HEAD: uncommitted changes are not in it.
func TestREADMEAsWritten(t *testing.T) {
	demo, tests, search := readmeCommands(t)
	if want := "go run ./cmd/quarry serve --demo"; demo != want {
		t.Errorf("README's demo command is %q; this test and the README's promise are about %q", demo, want)
	}
	if !strings.HasPrefix(tests, "go test ") {
		t.Errorf("README's test command is %q, want go test …", tests)
	}
	root := strings.TrimSpace(runProgram(t, ".", "git", "rev-parse", "--show-toplevel"))
	clone := filepath.Join(t.TempDir(), "quarry")
	runProgram(t, ".", "git", "clone", "--quiet", root, clone)
	data := t.TempDir()

	p := startDemo(t, clone, data, words(t, demo))
	waitReady(t, "http://127.0.0.1:7700", 5*time.Minute)
	checkConsole(t, "http://127.0.0.1:7700")
	out := runProgram(t, clone, words(t, search)...)
	if !strings.Contains(strings.ToLower(out), "noodle") {
		t.Errorf("%s found no noodles:\n%s", search, out)
	}
	p.stop(t)
	if st := runProgram(t, clone, "git", "status", "--porcelain", "--ignored"); st != "" {
		t.Errorf("the demo left files in the source tree:\n%s", st)
	}
	if _, err := os.Stat(filepath.Join(data, "quarry", "serve", "nats")); err != nil {
		t.Errorf("no data in the user's data directory: %v", err)
	}
}

// A built binary copied to an empty directory, far from any checkout,
// runs the demo: its plugins and catalogue are inside it. It writes
// nothing where it runs.
func TestDemoFromEmptyDir(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "quarry")
	raw, err := os.ReadFile(quarryBin(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, raw, 0o755); err != nil {
		t.Fatal(err)
	}
	p := startDemo(t, dir, t.TempDir(), []string{"./quarry", "serve", "--demo"})
	waitReady(t, "http://127.0.0.1:7700", 5*time.Minute)
	// Ready means loaded: the whole catalogue is searchable at once.
	resp, err := http.Post("http://127.0.0.1:7700/v1/indexes/menu/search", "application/json", strings.NewReader(`{"size":0}`))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(body), `"total":20000`) {
		t.Fatalf("ready, but the demo index is not all there: %d %s", resp.StatusCode, body)
	}
	out := runProgram(t, dir, "./quarry", "search", "menu", "spicy noodels", "--size", "3")
	if !strings.Contains(strings.ToLower(out), "noodle") {
		t.Errorf("a misspelt search found no noodles (is the spelling plugin running?):\n%s", out)
	}
	show := runProgram(t, dir, "./quarry", "pipeline", "show", "menu")
	for _, want := range []string{"by demo", "rewriter spelling", "rewriter synonyms", "ranker   georank", "brokers: all 1 run revision"} {
		if !strings.Contains(show, want) {
			t.Errorf("pipeline show does not say %q:\n%s", want, show)
		}
	}
	p.stop(t)
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		t.Errorf("the demo wrote to the directory it ran in: %v", names)
	}
}
