//go:build long

package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"testing"

	"github.com/quarrysearch/quarry/client"
)

// A searcher process killed with SIGKILL and started again on the same
// data directory comes back to exactly the acknowledged state.
func TestSearcherKill9(t *testing.T) {
	url, c := cluster(t, false)
	ctx := context.Background()
	if _, err := c.CreateIndex(ctx, "k", 2, nil); err != nil {
		t.Fatal(err)
	}
	var docs bytes.Buffer
	for i := range 300 {
		fmt.Fprintf(&docs, `{"id":"d%d","text":"%s"}`+"\n", i, []string{"noodles", "soup", "rice"}[i%3])
	}
	if _, err := c.Bulk(ctx, "k", &docs, client.BulkOptions{}); err != nil {
		t.Fatal(err)
	}
	data := t.TempDir()
	start := func() *exec.Cmd {
		cmd := exec.Command(quarryBin(t), "searcher", "--nats", url, "--data", data, "--log-level", "warn")
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
		return cmd
	}
	proc := start()
	waitTotal(t, c, "k", "noodles", 100)
	for i := range 20 {
		if _, err := c.Put(ctx, "k", fmt.Appendf(nil, `{"id":"n%d","text":"noodles"}`, i)); err != nil {
			t.Fatal(err)
		}
	}
	waitTotal(t, c, "k", "noodles", 120)

	if err := proc.Process.Kill(); err != nil { // SIGKILL
		t.Fatal(err)
	}
	proc.Wait()
	for i := range 20 {
		if _, err := c.Delete(ctx, "k", fmt.Sprintf("n%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 15 {
		if _, err := c.Put(ctx, "k", fmt.Appendf(nil, `{"id":"s%d","text":"soup noodles"}`, i)); err != nil {
			t.Fatal(err)
		}
	}
	start()
	waitTotal(t, c, "k", "noodles", 115)
	waitTotal(t, c, "k", "soup", 115)
}
