package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/quarrysearch/quarry/api"
	"github.com/quarrysearch/quarry/broker"
	"github.com/quarrysearch/quarry/client"
	"github.com/quarrysearch/quarry/indexer"
	"github.com/quarrysearch/quarry/internal/catalog"
	"github.com/quarrysearch/quarry/internal/natstest"
	"github.com/quarrysearch/quarry/internal/testwait"
	"github.com/quarrysearch/quarry/internal/wasmtest"
	"github.com/quarrysearch/quarry/node"
	"github.com/quarrysearch/quarry/searcher"
)

// lockedBuffer is a bytes.Buffer that may be written and read at once: a
// command's loggers write from goroutines of their own.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// testEnv is an env for a command run in the test's process: stdin,
// buffers for its stdout and stderr, the environment variables vars and no
// others, and the process's search of PATH.
func testEnv(stdin string, vars map[string]string) (e *env, stdout, stderr *lockedBuffer) {
	stdout, stderr = &lockedBuffer{}, &lockedBuffer{}
	e = &env{stdin: strings.NewReader(stdin), stdout: stdout, stderr: stderr,
		getenv: func(k string) string { return vars[k] }, lookPath: exec.LookPath}
	return e, stdout, stderr
}

// runIn runs the quarry command line args with e in the test's process,
// until it ends or the test does (or its deadline comes), and returns the
// exit status.
func runIn(t *testing.T, e *env, args ...string) int {
	t.Helper()
	ctx := t.Context()
	if d, ok := t.Deadline(); ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, d)
		defer cancel()
	}
	return e.run(ctx, args)
}

// cli runs quarry with args and stdin in the test's process, with no
// environment variables (no QUARRY_NATS: give --nats), and returns its
// stdout, stderr and exit code.
func cli(t *testing.T, stdin string, args ...string) (string, string, int) {
	t.Helper()
	e, stdout, stderr := testEnv(stdin, nil)
	code := runIn(t, e, args...)
	return stdout.String(), stderr.String(), code
}

// cliWith returns a function that runs quarry with its args and then
// flags (a server's --nats URL), fails the test unless it exits with
// wantCode, and returns what it printed, stdout then stderr.
func cliWith(t *testing.T, flags ...string) func(wantCode int, args ...string) string {
	return func(wantCode int, args ...string) string {
		t.Helper()
		out, errOut, code := cli(t, "", append(args, flags...)...)
		if code != wantCode {
			t.Fatalf("quarry %s: exit %d, want %d\n%s\n%s", strings.Join(args, " "), code, wantCode, out, errOut)
		}
		return out + errOut
	}
}

// fileIn writes b to a file name in dir and returns its path.
func fileIn(t *testing.T, dir, name string, b []byte) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// background is a long-running command (serve, a role, dev) running in
// the test's process.
type background struct {
	args           []string
	stdout, stderr *lockedBuffer
	cancel         context.CancelFunc
	done           chan struct{}
	code           int // once done is closed
}

// startCLI starts quarry with args in the test's process and returns at
// once; the command runs until stop (or the test's end) ends its context,
// as an interrupt ends the process's.
func startCLI(t *testing.T, args ...string) *background {
	t.Helper()
	e, stdout, stderr := testEnv("", nil)
	ctx, cancel := context.WithCancel(context.Background())
	b := &background{args: args, stdout: stdout, stderr: stderr, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(b.done)
		b.code = e.run(ctx, args)
	}()
	t.Cleanup(func() {
		b.stop(t)
		if t.Failed() {
			t.Logf("quarry %s output:\n%s%s", strings.Join(args, " "), b.stdout, b.stderr)
		}
	})
	return b
}

// stop ends the command as an interrupt does, waits for it to return and
// returns its exit status.
func (b *background) stop(t *testing.T) int {
	t.Helper()
	b.cancel()
	select {
	case <-b.done:
	case <-time.After(time.Minute):
		t.Fatalf("quarry %s did not return within a minute of its context's end:\n%s", strings.Join(b.args, " "), b.stderr)
	}
	return b.code
}

// running reports whether the command has not returned yet.
func (b *background) running() bool {
	select {
	case <-b.done:
		return false
	default:
		return true
	}
}

// cluster runs NATS (listening on loopback), an indexer, a broker and,
// withSearcher, a searcher in this process, for CLI commands and searcher
// processes to use.
func cluster(t *testing.T, withSearcher bool) (url string, c *client.Client) {
	t.Helper()
	return clusterWith(t, withSearcher, func(*node.Config) {})
}

// clusterWith is cluster with the node's configuration changed by tune
// first.
func clusterWith(t *testing.T, withSearcher bool, tune func(*node.Config)) (url string, c *client.Client) {
	t.Helper()
	s := natstest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cfg := node.Config{DataDir: t.TempDir(), NATSURL: s.ClientURL(), PluginCacheDir: wasmtest.PluginCache(t),
		Indexer: &indexer.Config{SnapshotInterval: -1}, Broker: &broker.Config{}}
	if withSearcher {
		cfg.Searcher = &searcher.Config{}
	}
	tune(&cfg)
	n, err := node.Start(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(n.Close)
	if err := n.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
	return s.ClientURL(), n.Client()
}

func waitTotal(t *testing.T, c *client.Client, index, q string, want uint64) {
	t.Helper()
	waitTotalOf(t, c, index, &api.SearchRequest{Q: q}, want)
}

// waitTotalOf waits until req finds want documents on every shard.
func waitTotalOf(t *testing.T, c *client.Client, index string, req *api.SearchRequest, want uint64) {
	t.Helper()
	q := req.Q
	if req.Query != nil {
		q = string(req.Query)
	}
	waitFor(t, 30*time.Second, fmt.Sprintf("search %q to find %d documents on every shard", q, want), func() (bool, string) {
		r, err := c.Search(context.Background(), index, req)
		return err == nil && r.Shards.Failed == 0 && r.Total == want, fmt.Sprint(r, err)
	})
}

// waitFor polls state until it reports done (testwait.UntilErr: the one
// polling loop); when within passes first it fails the test, saying what
// it waited for and the state's last report.
func waitFor(t testing.TB, within time.Duration, what string, state func() (done bool, last string)) {
	t.Helper()
	testwait.UntilErr(t, within, what, func() error {
		if done, last := state(); !done {
			return fmt.Errorf("the last state seen: %s", last)
		}
		return nil
	})
}

func TestCLI(t *testing.T) {
	t.Parallel()
	url, _ := cluster(t, true)
	nf := []string{"--nats", url}

	if out, _, code := cli(t, "", "--help"); code != 0 || !strings.Contains(out, "serve") {
		t.Fatalf("--help: %d %q", code, out)
	}
	for _, cmd := range []string{"serve", "searcher", "indexer", "broker", "ingest", "search", "put", "delete"} {
		if out, errOut, code := cli(t, "", cmd, "--help"); code != 0 || !strings.Contains(out, "Usage:\n  quarry "+cmd) {
			t.Errorf("%s --help: %d %q %q", cmd, code, out, errOut)
		}
	}
	if _, errOut, code := cli(t, "", "frobnicate"); code != 2 || !strings.Contains(errOut, "unknown command") {
		t.Fatalf("unknown command: %d %q", code, errOut)
	}
	if out, errOut, code := cli(t, "", append([]string{"index", "create", "c", "--shards", "2"}, nf...)...); code != 0 {
		t.Fatalf("index create: %d %s %s", code, out, errOut)
	}
	ndjson := "{\"id\":\"1\",\"name\":\"Dan Dan Noodles\",\"text\":\"spicy noodles\"}\n{\"id\":\"2\",\"name\":\"Miso Soup\",\"text\":\"soup\"}\n{bad\n{\"id\":3.5}\n"
	out, errOut, code := cli(t, ndjson, append([]string{"ingest", "c", "-"}, nf...)...)
	if code != 1 || !strings.Contains(out, "4 lines: 2 stored, 2 refused") || !strings.Contains(out, "line 3:") ||
		!strings.Contains(out, `line 4: "id" must be a string or a whole number`) || !strings.Contains(out, "published generation 1") {
		t.Fatalf("ingest: %d\n%s\n%s", code, out, errOut)
	}
	out, errOut, code = cli(t, "", append([]string{"search", "c", "spicy noodles"}, nf...)...)
	if code != 0 || !strings.Contains(out, "Dan Dan Noodles") {
		t.Fatalf("search: %d\n%s\n%s", code, out, errOut)
	}
	out, _, code = cli(t, "", append([]string{"index", "ls"}, nf...)...)
	if code != 0 || !strings.Contains(out, "c ") {
		t.Fatalf("index ls: %d\n%s", code, out)
	}
	if _, errOut, code := cli(t, "", append([]string{"search", "nope", "x"}, nf...)...); code != 2 || !strings.Contains(errOut, `index "nope" does not exist`) {
		t.Fatalf("unknown index: %d %q", code, errOut)
	}
	if _, errOut, code := cli(t, "", "search", "c", "x", "--nats", "nats://127.0.0.1:1"); code != 1 || !strings.Contains(errOut, "is `quarry serve` running?") {
		t.Fatalf("no server: %d %q", code, errOut)
	}
	// An inbox prefix Quarry's services would not answer (TestReplySubjectOutsideInbox).
	if _, errOut, code := cli(t, "", append([]string{"search", "c", "x", "--inbox-prefix", "food_inbox"}, nf...)...); code != 2 || !strings.Contains(errOut, `--inbox-prefix "food_inbox": Quarry answers only reply subjects starting with _INBOX`) {
		t.Fatalf("inbox prefix: %d %q", code, errOut)
	}
	// The plugin harness runs a built plugin on sample requests.
	wasm := filepath.Join(t.TempDir(), "suffix.wasm")
	if err := os.WriteFile(wasm, wasmtest.WATFile(t, "../../examples/plugins/wat/suffix.wat"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, errOut, code = cli(t, "{\"q\":\"noodles\"}\n", "plugin", "run", wasm, "--kind", "rewriter")
	if code != 0 || strings.TrimSpace(out) != `{"q":"noodles spicy"}` {
		t.Fatalf("plugin run: %d %q %q", code, out, errOut)
	}
	if _, errOut, code := cli(t, "", "plugin", "run", wasm, "--kind", "ranker"); code == 0 || !strings.Contains(errOut, "must export quarry_rank") {
		t.Fatalf("plugin run as a ranker: %d %q", code, errOut)
	}
	// A team's plugin lifecycle from the CLI.
	out, errOut, code = cli(t, "", append([]string{"plugin", "push", "c", "suffix", wasm, "--kind", "rewriter", "--activate"}, nf...)...)
	if code != 0 || !strings.Contains(out, "pushed suffix sha256:") || !strings.Contains(out, "activated") {
		t.Fatalf("plugin push: %d %q %q", code, out, errOut)
	}
	out, _, code = cli(t, "", append([]string{"plugin", "ls", "c"}, nf...)...)
	if code != 0 || !regexp.MustCompile(`suffix +rewriter +sha256:[0-9a-f]{12} .* yes`).MatchString(out) || !strings.Contains(out, "rewriter suffix") {
		t.Fatalf("plugin ls: %d %q", code, out)
	}
	junk := filepath.Join(t.TempDir(), "junk.wasm")
	os.WriteFile(junk, []byte("not wasm"), 0o644)
	if _, errOut, code := cli(t, "", append([]string{"plugin", "push", "c", "junk", junk, "--kind", "rewriter"}, nf...)...); code != 2 || !strings.Contains(errOut, "not a WebAssembly module") {
		t.Fatalf("push junk: %d %q", code, errOut)
	}
	if out, errOut, code := cli(t, "", append([]string{"plugin", "rm", "c", "suffix"}, nf...)...); code != 0 || !strings.Contains(out, "(no plugins)") {
		t.Fatalf("plugin rm: %d %q %q", code, out, errOut)
	}
	if out, errOut, code := cli(t, "", append([]string{"index", "rm", "c"}, nf...)...); code != 0 {
		t.Fatalf("index rm: %d %s %s", code, out, errOut)
	}
}

// quarry plugin test replays recorded queries on the live ranker and a
// candidate, shows a real diff, and gives the same answer every time.
func TestPluginReplay(t *testing.T) {
	t.Parallel()
	url, c := cluster(t, true)
	ctx := context.Background()
	if _, err := c.CreateIndex(ctx, "rp", 1, catalog.Mapping()); err != nil {
		t.Fatal(err)
	}
	var docs bytes.Buffer
	catalog.WriteNDJSON(&docs, catalog.Generate(catalog.DefaultSeed, 300))
	if _, err := c.Bulk(ctx, "rp", &docs, client.BulkOptions{}); err != nil {
		t.Fatal(err)
	}
	ltr := wasmtest.GoPlugin(t, "../../examples/plugins/ltr")
	step := api.StepSpec{Config: json.RawMessage(`{"weights":{"price":-1}}`), Fields: []string{"price"}, RerankDepth: 30, BudgetMS: 2000}
	if _, err := c.PushPlugin(ctx, "rp", "ltr", ltr, client.PushOptions{Kind: "ranker", Step: step, Activate: true}); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	wasm, cfg, queries := filepath.Join(dir, "ltr.wasm"), filepath.Join(dir, "cfg.json"), filepath.Join(dir, "q.ndjson")
	os.WriteFile(wasm, ltr, 0o644)
	os.WriteFile(cfg, []byte(`{"weights":{"_score":1}}`), 0o644)
	// The last fails on the live pipeline already (over the window): not
	// the candidate's failure, so not counted against it.
	os.WriteFile(queries, []byte("pizza\nnoodles\n{\"q\":\"vegan burger\",\"size\":5}\n{\"q\":\"pizza\",\"from\":9995,\"size\":10}\n"), 0o644)
	// Wait for the broker to have the pipeline (compiling a Go plugin
	// under -race takes a while).
	waitFor(t, 3*time.Minute, "the broker to run the pipeline with ltr", func() (bool, string) {
		r, err := c.Search(ctx, "rp", &api.SearchRequest{Q: "pizza", Profile: true})
		if err != nil {
			return false, err.Error()
		}
		return strings.Contains(fmt.Sprint(r.Profile.Stages), "rank ltr"), fmt.Sprint(r.Profile.Stages)
	})
	var outs []string
	for range 2 {
		out, errOut, code := cli(t, "", "plugin", "test", "rp", "ltr", wasm, "--config", cfg, "--queries", queries, "--nats", url)
		if code != 0 || !strings.Contains(out, "3 queries") || !strings.Contains(out, "changed") || !strings.Contains(out, "1 more fail on the live pipeline already") {
			t.Fatalf("plugin test: %d\n%s\n%s", code, out, errOut)
		}
		if strings.Contains(out, "0 changed") {
			t.Fatalf("a different model changed nothing:\n%s", out)
		}
		outs = append(outs, out)
	}
	if outs[0] != outs[1] {
		t.Fatalf("two replays differ:\n%s\n---\n%s", outs[0], outs[1])
	}
	// Another module that changes nothing on these queries (another
	// plugin's, pushed under ltr's name, say): said so.
	other := filepath.Join(dir, "other.wasm")
	os.WriteFile(other, wasmtest.C(t, "testdata/worse.c"), 0o644)
	nothing := filepath.Join(dir, "nothing.ndjson")
	os.WriteFile(nothing, []byte("zzqqxx\n"), 0o644)
	out, errOut, code := cli(t, "", "plugin", "test", "rp", "ltr", other, "--queries", nothing, "--nats", url)
	if code != 0 || !strings.Contains(out, "note: the candidate changed nothing on any query") {
		t.Fatalf("plugin test of a module that changes nothing: %d\n%s\n%s", code, out, errOut)
	}
}
