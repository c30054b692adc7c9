package main

import (
	"context"
	"strings"
	"testing"
)

// The connection flags may come before the command: `quarry --nats URL
// index ls` is `quarry index ls --nats URL`; other flags there are refused,
// naming them.
func TestConnectionFlagsBeforeCommand(t *testing.T) {
	t.Parallel()
	_, stderr, code := cli(t, "", "--nats", "nats://127.0.0.1:1", "--timeout", "200ms", "index", "ls")
	if code == 0 || strings.Contains(stderr, "unknown command") || !strings.Contains(stderr, "127.0.0.1:1") {
		t.Fatalf("exit %d: %s, want a connection error naming the given server", code, stderr)
	}
	_, stderr, code = cli(t, "", "--demo", "serve")
	if code != exitUsage || !strings.Contains(stderr, "only the connection flags") {
		t.Fatalf("exit %d: %s, want the flag refused before the command", code, stderr)
	}
	_, stderr, code = cli(t, "", "--nats", "nats://127.0.0.1:1")
	if code != exitUsage || !strings.Contains(stderr, "no command") {
		t.Fatalf("exit %d: %s", code, stderr)
	}
}

// queries export with nothing recorded fails and says why, rather than
// printing nothing with exit 0.
func TestQueriesExportNothingRecorded(t *testing.T) {
	t.Parallel()
	url, c := cluster(t, false)
	if _, err := c.CreateIndex(context.Background(), "unrec", 1, nil); err != nil {
		t.Fatal(err)
	}
	stdout, stderr, code := cli(t, "", "queries", "export", "unrec", "--nats", url)
	if code == 0 || stdout != "" || !strings.Contains(stderr, "--record-queries") {
		t.Fatalf("exit %d, stdout %q, stderr %q: want a failure naming --record-queries", code, stdout, stderr)
	}
}
