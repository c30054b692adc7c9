//go:build long

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/quarrysearch/quarry/api"
	"github.com/quarrysearch/quarry/client"
	"github.com/quarrysearch/quarry/internal/natstest"
	"github.com/quarrysearch/quarry/internal/subject"
)

// TestServeKill9MidBulk kills the whole `quarry serve` process with SIGKILL
// in the middle of a bulk ingest and starts it again on its data
// directory: every document the ingest had acknowledged is there, counted
// and found by id, in the stream and in search. (A process crash leaves
// the kernel's page cache to write what JetStream had not synced; what
// --sync always adds, surviving a machine crash, is the server's
// configuration, which TestServeSync checks.)
func TestServeKill9MidBulk(t *testing.T) {
	data := t.TempDir()
	srv, url, base := startServe(t, data, "--log-level", "warn")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	const index, shards, lines = "crash", 4, 60000
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	c, err := client.New(ctx, nc, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.CreateIndex(ctx, index, shards, nil); err != nil {
		t.Fatal(err)
	}

	// Kill once a quarter of the lines is read: by then the first
	// acknowledgements are in and the window is full.
	bulkCtx, stopBulk := context.WithCancel(ctx)
	defer stopBulk()
	quarter := make(chan struct{})
	type result struct {
		res *client.BulkResult
		err error
	}
	done := make(chan result, 1)
	go func() {
		res, err := c.Bulk(bulkCtx, index, menuDocs(lines), client.BulkOptions{NoSnapshot: true, Progress: func(read int, _ int64) {
			if read == lines/4 {
				close(quarter)
			}
		}})
		done <- result{res, err}
	}()
	select {
	case <-quarter:
	case r := <-done:
		t.Fatalf("the bulk ended before a quarter of it was read: %+v, %v", r.res, r.err)
	}
	srv.kill()
	stopBulk()
	r := <-done
	if r.err == nil || r.res.Failed != 0 || r.res.Stored == 0 || r.res.Stored >= lines {
		t.Fatalf("the kill did not land mid-ingest: %+v, %v", r.res, r.err)
	}
	// Acknowledgements are settled in order, and none failed: the first
	// Stored lines, d0…, are the acknowledged documents.
	acked := r.res.Stored
	t.Logf("killed after %d of %d lines were acknowledged (last sequence %d): %v", acked, lines, r.res.LastSeq, r.err)
	nc.Close()

	srv.start()
	waitReady(t, base, time.Minute)
	nc2, err := nats.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	defer nc2.Close()
	c2, err := client.New(ctx, nc2, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	// The stream, the source of truth, holds them...
	js, err := jetstream.New(nc2)
	if err != nil {
		t.Fatal(err)
	}
	st, err := js.Stream(ctx, subject.DocsStream)
	if err != nil {
		t.Fatal(err)
	}
	info, err := st.Info(ctx, jetstream.WithSubjectFilter(subject.DocsPrefix+"."+index+".>"))
	if err != nil {
		t.Fatal(err)
	}
	if info.State.Msgs < uint64(acked) || info.State.LastSeq < r.res.LastSeq {
		t.Fatalf("after the restart the stream holds %d documents of the index up to sequence %d; %d were acknowledged, the last at %d",
			info.State.Msgs, info.State.LastSeq, acked, r.res.LastSeq)
	}
	// ...and search finds every one, by count and by id.
	waitTotalOf(t, c2, index, &api.SearchRequest{Query: json.RawMessage(`{"match_all":{}}`), Size: api.NoHits}, info.State.Msgs)
	for lo := 0; lo < acked; lo += 1000 {
		var ids []string
		for i := lo; i < min(lo+1000, acked); i++ {
			ids = append(ids, fmt.Sprintf("d%d", i))
		}
		q, _ := json.Marshal(map[string]any{"ids": ids})
		waitTotalOf(t, c2, index, &api.SearchRequest{Query: q, Size: api.NoHits}, uint64(len(ids)))
	}
	t.Logf("after the restart: %d documents in the stream and in search, every one of the %d acknowledged among them", info.State.Msgs, acked)
}

// startServe starts `quarry serve` as a process on free ports with args
// added, waits until it is ready and returns it with its NATS URL and the
// base URL of its HTTP API.
func startServe(t *testing.T, data string, args ...string) (r *role, url, base string) {
	t.Helper()
	port, httpAddr := natstest.FreePort(t), fmt.Sprintf("127.0.0.1:%d", natstest.FreePort(t))
	r = startRole(t, append([]string{"serve", "--data", data, "--nats-port", fmt.Sprint(port), "--http", httpAddr}, args...)...)
	base = "http://" + httpAddr
	waitReady(t, base, time.Minute)
	return r, fmt.Sprintf("nats://127.0.0.1:%d", port), base
}

// `quarry serve` runs JetStream syncing every write before acknowledging
// it, unless --sync or the --nats-config file's sync_interval says
// otherwise (the flag first); with an interval it warns at start-up. The
// start-up line reports the embedded server's effective configuration
// (embednats.Server.Sync, what /varz shows; TestSync in
// internal/embednats checks that line against the server's options).
func TestServeSync(t *testing.T) {
	conf := filepath.Join(t.TempDir(), "nats.conf")
	if err := os.WriteFile(conf, []byte("jetstream { sync_interval: 30s }\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	const always = `level=INFO msg="JetStream puts every write on disk before acknowledging it" sync=always`
	const interval = `level=WARN msg="JetStream acknowledges writes before they are on disk: `
	for _, c := range []struct {
		args []string
		want []string
	}{
		{nil, []string{always}},
		{[]string{"--sync", "2m"}, []string{interval, "sync_interval=2m0s"}},
		{[]string{"--nats-config", conf}, []string{interval, "sync_interval=30s"}},
		{[]string{"--nats-config", conf, "--sync", "always"}, []string{always}},
	} {
		r, _, _ := startServe(t, t.TempDir(), c.args...)
		r.stop()
		for _, want := range c.want {
			if logs := r.logs.String(); !strings.Contains(logs, want) {
				t.Errorf("quarry serve %s: no %q in its output:\n%s", strings.Join(c.args, " "), want, logs)
			}
		}
	}
	if _, stderr, code := cli(t, "", "serve", "--sync", "0s"); code != exitUsage || !strings.Contains(stderr, `invalid argument "0s" for "--sync" flag: sync "0s": want always or a positive interval such as 2m`) {
		t.Errorf("quarry serve --sync 0s: exit status %d, want %d, and why:\n%s", code, exitUsage, stderr)
	}
}
