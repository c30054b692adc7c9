package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/quarrysearch/quarry/api"
	"github.com/quarrysearch/quarry/plugins"
)

// Every language × kind that plugin new writes builds with its own
// build.sh and answers its sample requests as its expected.ndjson says,
// run by the broker's host through plugin run's own code (runOne); a Go
// plugin also passes its native test. It needs go, clang and lld, node
// and npm: a missing one fails the test.
func TestPluginNewBuildsAndPasses(t *testing.T) {
	sdk, err := filepath.Abs("../../sdk")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	rt, err := plugins.NewRuntime(ctx, plugins.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close(ctx)
	for _, lang := range pluginLangs {
		for _, kind := range []string{"rewriter", "ranker"} {
			t.Run(lang+"-"+kind, func(t *testing.T) {
				name := "my-" + kind
				dir := filepath.Join(t.TempDir(), name)
				if _, err := pluginNew(name, lang, kind, dir, sdk); err != nil {
					t.Fatal(err)
				}
				run := func(env []string, name string, args ...string) {
					t.Helper()
					cmd := exec.Command(name, args...)
					cmd.Dir = dir
					cmd.Env = append(os.Environ(), env...)
					if out, err := cmd.CombinedOutput(); err != nil {
						t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
					}
				}
				run(nil, "sh", "build.sh")
				if lang == "go" {
					run([]string{"GOWORK=off"}, "go", "test", "./...")
				}
				wasm, err := os.ReadFile(filepath.Join(dir, name+".wasm"))
				if err != nil {
					t.Fatal(err)
				}
				cfg, err := os.ReadFile(filepath.Join(dir, "config.json"))
				if err != nil {
					t.Fatal(err)
				}
				p, err := rt.Load(ctx, plugins.Spec{Name: name, Kind: plugins.Kind(kind), Config: cfg, Instances: 1, Budget: 5 * time.Second}, wasm)
				if err != nil {
					t.Fatal(err)
				}
				reqs := lines(t, filepath.Join(dir, "requests.ndjson"))
				want := lines(t, filepath.Join(dir, "expected.ndjson"))
				if len(reqs) == 0 || len(reqs) != len(want) {
					t.Fatalf("%d requests, %d expected answers", len(reqs), len(want))
				}
				for i, req := range reqs {
					out, err := runOne(ctx, p, plugins.Kind(kind), []byte(req))
					if err != nil {
						t.Fatalf("request %d: %v", i+1, err)
					}
					got, _ := json.Marshal(out)
					if string(got) != want[i] {
						t.Fatalf("request %d %s:\n got %s\nwant %s", i+1, req, got, want[i])
					}
				}
			})
		}
	}
}

func lines(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		if l := strings.TrimSpace(sc.Text()); l != "" {
			out = append(out, l)
		}
	}
	return out
}

// Bad input to plugin new is refused with an error naming what is wrong,
// as bad input (exit status 2), writing nothing.
func TestPluginNewBadInput(t *testing.T) {
	sdk, _ := filepath.Abs("../../sdk")
	full := t.TempDir()
	os.WriteFile(filepath.Join(full, "x"), nil, 0o644)
	notSDK := t.TempDir()
	cases := []struct {
		name, lang, kind, dir, sdk, want string
	}{
		{"Bad Name", "go", "rewriter", "", sdk, `plugin name "Bad Name"`},
		{"", "go", "rewriter", "", sdk, `plugin name ""`},
		{"ok", "rust", "rewriter", "", sdk, `--lang "rust": want one of go, c, assemblyscript`},
		{"ok", "", "rewriter", "", sdk, `--lang "": want one of`},
		{"ok", "c", "scorer", "", sdk, `--kind "scorer": want rewriter or ranker`},
		{"ok", "c", "ranker", full, sdk, "the folder exists and is not empty"},
		{"ok", "c", "ranker", filepath.Join(t.TempDir(), "p"), notSDK, "not a Quarry sdk directory"},
	}
	for _, c := range cases {
		dir := c.dir
		if dir == "" {
			dir = filepath.Join(t.TempDir(), "p")
		}
		_, err := pluginNew(c.name, c.lang, c.kind, dir, c.sdk)
		if err == nil || !strings.Contains(err.Error(), c.want) || exitCode(err) != exitUsage || api.CodeOf(err) != api.CodeBadRequest {
			t.Errorf("plugin new %q --lang %q --kind %q: %v (exit %d), want a bad-input error with %q", c.name, c.lang, c.kind, err, exitCode(err), c.want)
		}
		if c.dir == "" {
			if _, err := os.Stat(dir); err == nil {
				t.Errorf("plugin new %q --lang %q --kind %q: wrote %s anyway", c.name, c.lang, c.kind, dir)
			}
		}
	}
}
