//go:build long

package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/quarrysearch/quarry/plugins"
)

// Every language × kind that plugin new writes builds with its own
// build.sh and answers its sample requests as its expected.ndjson says,
// run by the broker's host through plugin run's own code (runOne); a Go
// plugin also passes its native test. Each is written from outside the
// checkout (the current directory a temporary one) with the SDK built
// into quarry; the Go and AssemblyScript rewriters also with --sdk, the
// checkout's sdk directory. It needs go, clang and lld, node and npm: a
// missing one fails the test.
func TestPluginNewBuildsAndPasses(t *testing.T) {
	checkout, err := filepath.Abs("../../sdk")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	rt, err := plugins.NewRuntime(ctx, plugins.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close(ctx)
	type scaffold struct{ lang, kind, sdk string }
	var cases []scaffold
	for _, lang := range pluginLangs {
		for _, kind := range []string{"rewriter", "ranker"} {
			cases = append(cases, scaffold{lang, kind, ""})
		}
	}
	cases = append(cases, scaffold{"go", "rewriter", checkout}, scaffold{"assemblyscript", "rewriter", checkout})
	for _, c := range cases {
		lang, kind := c.lang, c.kind
		sub := lang + "-" + kind
		if c.sdk != "" {
			sub += "-sdk-flag"
		}
		t.Run(sub, func(t *testing.T) {
			wd := t.TempDir()
			t.Chdir(wd)
			name := "my-" + kind
			if _, err := pluginNew(name, lang, kind, "", c.sdk); err != nil {
				t.Fatal(err)
			}
			dir := filepath.Join(wd, name)
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
