//go:build long

package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/quarrysearch/quarry/api"
	"github.com/quarrysearch/quarry/client"
	"github.com/quarrysearch/quarry/node"
)

// The loop from nothing to a canary, in each language, with the quarry
// binary against an in-process cluster (its brokers recording every
// search): quarry plugin new → quarry dev --once (the generated plugin,
// run as a variant beside the live pipeline) → plugin push --activate →
// an edit (a log line) → quarry dev --once (the edit in place of the live
// version: its samples still pass, the brokers' log lines of the variant
// are shown) → plugin push → plugin canary, and the pipeline has the
// canary. Go, C and AssemblyScript each write one kind; every kind of
// every language is built by TestPluginNewBuildsAndPasses.
func TestPluginDevLoop(t *testing.T) {
	url, c := clusterWith(t, true, func(cfg *node.Config) { cfg.Broker.RecordPercent = 100 })
	ctx := context.Background()
	if _, err := c.CreateIndex(ctx, "dishes", 2, nil); err != nil {
		t.Fatal(err)
	}
	var docs bytes.Buffer
	for i := range 60 {
		fmt.Fprintf(&docs, `{"id":"d%02d","name":"%s","rating":%d}`+"\n", i, []string{"spicy noodles", "noodle soup", "fried rice"}[i%3], i%5)
	}
	if _, err := c.Bulk(ctx, "dishes", &docs, client.BulkOptions{}); err != nil {
		t.Fatal(err)
	}
	waitTotal(t, c, "dishes", "noodles", 20)
	for _, q := range []string{"noodles", "Spicy Noodles", "rice", "soup"} { // recorded
		if _, err := c.Search(ctx, "dishes", &api.SearchRequest{Q: q}); err != nil {
			t.Fatal(err)
		}
	}
	nf := []string{"--nats", url}
	quarry := func(t *testing.T, args ...string) string {
		t.Helper()
		start := time.Now()
		out, errOut, code := cli(t, "", append(args, nf...)...)
		if code != 0 {
			t.Fatalf("quarry %s: exit %d\n%s%s", strings.Join(args, " "), code, out, errOut)
		}
		t.Logf("quarry %s %s (%s)", args[0], args[1], time.Since(start).Round(time.Millisecond))
		return out
	}
	digestOf := regexp.MustCompile(`sha256:[0-9a-f]{64}`)

	for _, lc := range []struct {
		lang, kind, file, old, new string
		fields                     []string
	}{
		{"go", "rewriter", "main.go", "r.Q = strings.ToLower(r.Q)\n", "r.Q = strings.ToLower(r.Q)\n\tsdk.Log(\"dev loop: lower-cased \" + r.Q)\n", nil},
		{"c", "ranker", "NAME.c", "static const char *rank(quarry_batch *b) {\n", "static const char *rank(quarry_batch *b) {\n\tquarry_logs(QUARRY_LOG_INFO, \"dev loop: ranking\");\n", []string{"--fields", "rating"}},
		{"assemblyscript", "rewriter", "assembly/index.ts", "  r.q = r.q.toLowerCase();\n", "  r.q = r.q.toLowerCase();\n  log(\"dev loop: lower-cased \" + r.q);\n", nil},
	} {
		t.Run(lc.lang, func(t *testing.T) {
			name := "dev-" + lc.lang
			dir := filepath.Join(t.TempDir(), name)
			if out, errOut, code := cli(t, "", "plugin", "new", name, "--lang", lc.lang, "--kind", lc.kind, "--dir", dir); code != 0 {
				t.Fatalf("plugin new: %d %s%s", code, out, errOut)
			}
			// As generated: not live, so it runs as the pipeline's last step.
			out := quarry(t, append([]string{"dev", "dishes", dir, "--once"}, lc.fields...)...)
			t.Logf("quarry dev as generated:\n%s", out)
			for _, want := range []string{"built " + name + ".wasm (" + lc.lang, "samples: 3 of 3 as expected.ndjson says", "as the pipeline's last " + lc.kind, "queries: ", "latency: "} {
				if !strings.Contains(out, want) {
					t.Fatalf("dev output lacks %q:\n%s", want, out)
				}
			}
			if lc.kind == "rewriter" && !strings.Contains(out, `rewritten: "Spicy Noodles" → "spicy noodles"`) {
				t.Fatalf("dev output lacks the recorded query's rewrite:\n%s", out)
			}
			if lc.kind == "ranker" && !strings.Contains(out, "overlap@10") {
				t.Fatalf("dev output lacks the ranker's moved hits:\n%s", out)
			}
			if lc.lang == "go" && !strings.Contains(out, "no judgement lists on dishes") {
				t.Fatalf("dev output does not say the index has no judgement lists:\n%s", out)
			}
			if lc.lang == "c" { // from here on the index has a judgement list
				if _, err := c.PushJudgements(ctx, "dishes", "golden", []byte(`{"q":"noodles","ratings":{"d01":3,"d04":2}}`+"\n"+`{"q":"rice","ratings":{"d02":3}}`+"\n")); err != nil {
					t.Fatal(err)
				}
			}
			push := func(more ...string) string {
				t.Helper()
				args := []string{"plugin", "push", "dishes", name, filepath.Join(dir, name+".wasm"), "--kind", lc.kind, "--config", filepath.Join(dir, "config.json")}
				return quarry(t, append(append(args, lc.fields...), more...)...)
			}
			push("--activate")

			// The edit: a log line.
			src := filepath.Join(dir, strings.ReplaceAll(lc.file, "NAME", name))
			b, err := os.ReadFile(src)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Contains(b, []byte(lc.old)) {
				t.Fatalf("%s has no %q to edit", src, lc.old)
			}
			b = bytes.Replace(b, []byte(lc.old), []byte(lc.new), 1)
			if lc.lang == "assemblyscript" {
				b = bytes.Replace(b, []byte("import { registerRewriter, RewriteRequest }"), []byte("import { registerRewriter, RewriteRequest, log }"), 1)
			}
			if err := os.WriteFile(src, b, 0o644); err != nil {
				t.Fatal(err)
			}
			out = quarry(t, append([]string{"dev", "dishes", dir, "--once"}, lc.fields...)...)
			t.Logf("quarry dev after the edit:\n%s", out)
			wantAfter := []string{"samples: 3 of 3 as expected.ndjson says", "in place of the live version", "plugin log (", "dev loop: "}
			if lc.lang != "go" {
				wantAfter = append(wantAfter, "judgements golden (version 1, 2 queries, k=10)", "ndcg@10")
			}
			for _, want := range wantAfter {
				if !strings.Contains(out, want) {
					t.Fatalf("dev output after the edit lacks %q:\n%s", want, out)
				}
			}
			if lc.kind == "ranker" && !strings.Contains(out, "0 changed, 0 failed") {
				t.Fatalf("a log line changed the ranking:\n%s", out)
			}
			if lc.lang == "c" {
				// The brokers' lines, read back by the team's command.
				logs := quarry(t, "plugin", "logs", "dishes", name, "--since", "1h", "--limit", "3")
				if n := strings.Count(logs, "dev loop: ranking"); n != 3 || !strings.Contains(logs, " info  "+name+"@") || !strings.Contains(logs, "req=") {
					t.Fatalf("plugin logs: %d lines of the edit, want 3 with level, version and request id:\n%s", n, logs)
				}
				// A plugin that fails: the round says so with its lines,
				// and --once exits non-zero.
				broken := bytes.Replace(b, []byte(`quarry_logs(QUARRY_LOG_INFO, "dev loop: ranking");`), []byte(`quarry_logs(QUARRY_LOG_ERROR, "dev loop: about to fail"); return "dev loop: broken on purpose";`), 1)
				if err := os.WriteFile(src, broken, 0o644); err != nil {
					t.Fatal(err)
				}
				out, _, code := cli(t, "", append(append([]string{"dev", "dishes", dir, "--once"}, lc.fields...), nf...)...)
				for _, want := range []string{"sample line 1 failed: plugin " + name + ": plugin_error: dev loop: broken on purpose", "guest log error dev loop: about to fail", "FAILED"} {
					if code == 0 || !strings.Contains(out, want) {
						t.Fatalf("dev of a broken plugin: exit %d, want non-zero and %q:\n%s", code, want, out)
					}
				}
				if err := os.WriteFile(src, b, 0o644); err != nil {
					t.Fatal(err)
				}
				devWatching(t, append(append([]string{"dev", "dishes", dir, "--interval", "100ms"}, lc.fields...), nf...), src, b) // fixed on a save
			}

			// Push the edit and canary it.
			pushed := push()
			digest := digestOf.FindString(pushed)
			if digest == "" {
				t.Fatalf("plugin push printed no digest:\n%s", pushed)
			}
			quarry(t, "plugin", "canary", "dishes", name, digest[7:19], "--percent", "50")
			spec, err := c.Pipeline(ctx, "dishes")
			if err != nil {
				t.Fatal(err)
			}
			step, _ := spec.Step(name)
			if step == nil || step.Canary == nil || step.Canary.Step.Digest != digest || step.Canary.Percent != 50 {
				t.Fatalf("pipeline after the canary: %+v", spec)
			}
			quarry(t, "plugin", "rm", "dishes", name) // the next language starts from the same pipeline
		})
	}
}

// devWatching runs quarry dev without --once (in the test's process),
// waits for its first round, saves src with fixed, and waits for the
// round the save starts to end well; then it stops the command.
func devWatching(t *testing.T, args []string, src string, fixed []byte) {
	t.Helper()
	dev := startCLI(t, args...)
	defer dev.stop(t)
	var lines []string // whole lines printed so far
	read := 0          // of which waitLine has looked at
	waitLine := func(prefix string) string {
		t.Helper()
		var found string
		waitFor(t, 2*time.Minute, fmt.Sprintf("quarry dev to print %q", prefix), func() (bool, string) {
			out := dev.stdout.String()
			lines = strings.Split(out[:strings.LastIndexByte(out, '\n')+1], "\n")
			lines = lines[:len(lines)-1]
			for ; read < len(lines); read++ {
				if strings.HasPrefix(lines[read], prefix) {
					found = lines[read]
					read++
					return true, ""
				}
			}
			if !dev.running() {
				t.Fatalf("quarry dev ended before %q:\n%s%s", prefix, out, dev.stderr)
			}
			return false, out
		})
		return found
	}
	waitLine("watching ")
	if err := os.WriteFile(src, fixed, 0o644); err != nil {
		t.Fatal(err)
	}
	touchAfter(t, src, src) // a later modification time than the first round's
	if head := waitLine("== "); !strings.HasSuffix(head, " "+filepath.Base(src)) {
		t.Fatalf("the round after the save is %q, want it to name %s", head, filepath.Base(src))
	}
	if end := waitLine("ok ("); end == "" {
		t.Fatal("no round ended")
	}
	if i := slices.IndexFunc(lines[:read], func(l string) bool { return strings.HasPrefix(l, "samples: 3 of 3") }); i < 0 {
		t.Fatalf("the fixed round's samples did not pass:\n%s", strings.Join(lines, "\n"))
	}
}
