//go:build long

package main

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/quarrysearch/quarry/client"
	"github.com/quarrysearch/quarry/indexer"
	"github.com/quarrysearch/quarry/internal/natstest"
	"github.com/quarrysearch/quarry/internal/subject"
	"github.com/quarrysearch/quarry/node"
)

// role is a quarry process of one role, restartable.
type role struct {
	t    *testing.T
	args []string
	cmd  *exec.Cmd
	logs *lockedBuffer // its stdout and stderr, which a test may read while it runs
}

func startRole(t *testing.T, args ...string) *role {
	t.Helper()
	r := &role{t: t, args: args}
	r.start()
	t.Cleanup(func() {
		if r.cmd.ProcessState == nil {
			r.cmd.Process.Kill()
			r.cmd.Wait()
		}
		if t.Failed() {
			t.Logf("quarry %s output:\n%s", strings.Join(r.args, " "), r.logs)
		}
	})
	return r
}

func (r *role) start() {
	r.t.Helper()
	r.logs = &lockedBuffer{}
	r.cmd = exec.Command(quarryBin(r.t), r.args...)
	r.cmd.Stdout, r.cmd.Stderr = r.logs, r.logs
	if err := r.cmd.Start(); err != nil {
		r.t.Fatal(err)
	}
}

// stop sends SIGTERM and waits for a clean exit.
func (r *role) stop() time.Duration {
	r.t.Helper()
	start := time.Now()
	r.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan error, 1)
	go func() { done <- r.cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			r.t.Fatalf("quarry %s exited with %v after SIGTERM:\n%s", r.args[0], err, r.logs)
		}
	case <-time.After(30 * time.Second):
		r.cmd.Process.Kill()
		r.t.Fatalf("quarry %s did not exit within 30s of SIGTERM:\n%s", r.args[0], r.logs)
	}
	return time.Since(start)
}

// kill sends SIGKILL and waits for the process to be gone: no drain, no
// clean-up, as when a machine dies.
func (r *role) kill() {
	r.t.Helper()
	if err := r.cmd.Process.Kill(); err != nil {
		r.t.Fatalf("kill -9 quarry %s: %v\n%s", r.args[0], err, r.logs)
	}
	r.cmd.Wait() // "signal: killed"
}

// setData points a role's --data at dir, for a restart on a new disk.
func (r *role) setData(dir string) {
	r.t.Helper()
	i := slices.Index(r.args, "--data")
	if i < 0 || i+1 >= len(r.args) {
		r.t.Fatalf("quarry %s has no --data", strings.Join(r.args, " "))
	}
	r.args[i+1] = dir
}

// responders counts the answers to a request on subj within a short
// window: replicas of a shard, or instances of a micro service.
func responders(t *testing.T, nc *nats.Conn, subj string) int {
	t.Helper()
	return len(answers(t, nc, subj))
}

// answers collects the answers to a request on subj within a short window:
// each replica's id on subject.Replicas, each instance's JSON on a micro
// service's $SRV subjects.
func answers(t *testing.T, nc *nats.Conn, subj string) [][]byte {
	t.Helper()
	inbox := nats.NewInbox()
	sub, err := nc.SubscribeSync(inbox)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	if err := nc.PublishRequest(subj, inbox, nil); err != nil {
		t.Fatal(err)
	}
	var out [][]byte
	for {
		m, err := sub.NextMsg(300 * time.Millisecond)
		if err != nil {
			return out
		}
		out = append(out, m.Data)
	}
}

// waitResponders waits until want instances answer on subj.
func waitResponders(t *testing.T, nc *nats.Conn, subj string, want int) {
	t.Helper()
	waitFor(t, time.Minute, fmt.Sprintf("%d answers on %s", want, subj), func() (bool, string) {
		got := responders(t, nc, subj)
		return got == want, fmt.Sprintf("%d answer", got)
	})
}

// waitStarted waits until a role's log says it started.
func (r *role) waitStarted() {
	r.t.Helper()
	waitFor(r.t, 30*time.Second, "quarry "+r.args[0]+" to start", func() (bool, string) {
		return strings.Contains(r.logs.String(), "role started"), r.logs.String()
	})
}

// TestRollingRestart restarts, one at a time with SIGTERM, each of two
// searcher processes and two broker processes while queries run: each
// drains (leaves its queue group, answers what it took) and exits 0, and
// no query fails.
func TestRollingRestart(t *testing.T) {
	s := natstest.Start(t)
	url := s.ClientURL()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	n, err := node.Start(ctx, node.Config{DataDir: t.TempDir(), NATSURL: url, Indexer: &indexer.Config{SnapshotInterval: -1}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(n.Close)
	c := n.Client()
	if _, err := c.CreateIndex(ctx, "rr", 2, nil); err != nil {
		t.Fatal(err)
	}
	var docs bytes.Buffer
	for i := range 400 {
		fmt.Fprintf(&docs, `{"id":"d%d","text":"%s"}`+"\n", i, []string{"spicy noodles", "mild soup", "rice"}[i%3])
	}
	if _, err := c.Bulk(ctx, "rr", &docs, client.BulkOptions{}); err != nil {
		t.Fatal(err)
	}
	var roles []*role
	for range 2 {
		// Every shard request takes 30 ms more, so that a process stopped
		// at any moment has requests in flight to finish.
		roles = append(roles, startRole(t, "searcher", "--nats", url, "--data", t.TempDir(), "--log-level", "warn", "--drain-timeout", "5s",
			"--fault-delay", "30ms"))
	}
	for range 2 {
		roles = append(roles, startRole(t, "broker", "--nats", url, "--data", t.TempDir(), "--http", "", "--log-level", "warn", "--drain-timeout", "5s"))
	}
	nc := s.Conn(t, "probe")
	ready := func() {
		t.Helper()
		for sh := range 2 {
			waitResponders(t, nc, subject.Replicas("rr", sh), 2)
		}
		waitResponders(t, nc, "$SRV.PING."+subject.ServiceName, 2)
	}
	ready()
	waitTotal(t, c, "rr", "noodles", 134)

	lctx, stop := context.WithCancel(context.Background())
	var l load
	wait := l.run(lctx, c, "rr", 6)
	defer func() { stop(); wait() }()
	// answered waits for the load to have 50 more answers.
	answered := func(when string) {
		t.Helper()
		from := l.mark()
		waitFor(t, time.Minute, "50 answers to the load "+when, func() (bool, string) {
			return l.mark()-from >= 50, fmt.Sprintf("%d answers", l.mark()-from)
		})
	}
	answered("before the restarts")
	for _, r := range roles {
		took := r.stop()
		t.Logf("%s drained and exited in %s", r.args[0], took.Round(time.Millisecond))
		r.start()
		ready()
	}
	answered("after the restarts")
	stop()
	wait()
	t.Logf("%d queries during the rolling restart: %d failed", l.queries.Load(), l.failed.Load())
	if l.failed.Load() > 0 {
		t.Fatalf("%d queries failed, e.g. %v", l.failed.Load(), l.errs[:min(3, len(l.errs))])
	}
}
