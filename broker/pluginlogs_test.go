package broker

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/quarrysearch/quarry/api"
	"github.com/quarrysearch/quarry/internal/natstest"
	"github.com/quarrysearch/quarry/internal/requestid"
	"github.com/quarrysearch/quarry/internal/testwait"
	"github.com/quarrysearch/quarry/internal/wasmtest"
	"github.com/quarrysearch/quarry/plugins"
	"github.com/quarrysearch/quarry/sdk/abi"
)

func logLine(team, msg string) plugins.LogLine {
	return plugins.LogLine{Time: time.Now(), Team: team, Plugin: "spell", Version: "1a2b3c4d5e6f", Level: "info", Source: "log", RequestID: "r1", Message: msg}
}

// Lines reach the team's subject and the kept stream; a team over its
// rate has the rest dropped, and the next line it sends says how many
// (with those a plugin call dropped without asking: LogsDropped);
// another team's lines are not touched by it.
func TestPluginLogsRate(t *testing.T) {
	s, store, ctx := startStore(t)
	logs := runPluginLogs(t, ctx, s.NC, PluginLogsConfig{Rate: 5, Burst: 5})

	for range 50 {
		logs.PluginLog(logLine("food", "burst"))
	}
	logs.LogsDropped("food", 10) // a plugin call's lines dropped without asking (plugins.LogDropCounter)
	for range 3 {
		logs.PluginLog(logLine("books", "calm"))
	}
	testwait.Until(t, 5*time.Second, "a token back in food's bucket", func() bool { return logs.team("food").limiter.Tokens() >= 1 })
	logs.PluginLog(logLine("food", "after the burst"))

	read := func(team string, want int) []api.PluginLogLine {
		t.Helper()
		var got []api.PluginLogLine
		testwait.UntilErr(t, 10*time.Second, fmt.Sprintf("%d lines of %s kept", want, team), func() error {
			var err error
			if got, _, err = store.ReadPluginLogs(ctx, team, "spell", api.PluginLogsRequest{Limit: 1000}); err != nil {
				t.Fatal(err)
			}
			if len(got) < want {
				return fmt.Errorf("%d lines: %+v", len(got), got)
			}
			return nil
		})
		return got
	}
	food := read("food", 6)
	if len(food) != 6 {
		t.Fatalf("food: %d lines kept, want the burst's 5 and the one after: %+v", len(food), food)
	}
	last := food[len(food)-1]
	if last.Message != "after the burst" || last.Dropped != 55 || last.RequestID != "r1" || last.Team != "food" || last.Seq == 0 || last.ID == "" {
		t.Fatalf("the line after the burst: %+v, want it to say 55 were dropped (45 over the rate, 10 told)", last)
	}
	if books := read("books", 3); len(books) != 3 || books[0].Dropped != 0 {
		t.Fatalf("books: %+v, want its 3 lines", books)
	}
	// Reading on from a sequence, and by version.
	if more, lastSeq, err := store.ReadPluginLogs(ctx, "food", "spell", api.PluginLogsRequest{After: food[4].Seq}); err != nil || len(more) != 1 || lastSeq != last.Seq {
		t.Fatalf("after %d: %+v %d %v", food[4].Seq, more, lastSeq, err)
	}
	if other, _, err := store.ReadPluginLogs(ctx, "food", "spell", api.PluginLogsRequest{Version: "ffff"}); err != nil || len(other) != 0 {
		t.Fatalf("version ffff: %+v %v", other, err)
	}
}

// BenchmarkPluginLogCall is what a query pays for a plugin that logs a
// line and prints one on every call: the call with no sink (lines to the
// process's slog logger, discarded), with the NATS sink taking every line
// (rate unbounded), and with the sink dropping every line (over the rate).
func BenchmarkPluginLogCall(b *testing.B) {
	s := natstest.Start(b)
	wasm := wasmtest.WATFile(b, "../examples/plugins/wat/logger.wat")
	for _, bc := range []struct {
		name string
		rate float64
		sink bool
	}{{"no-sink", 0, false}, {"sink-publish", 1e12, true}, {"sink-drop", -1, true}} {
		b.Run(bc.name, func(b *testing.B) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			cfg := plugins.Config{Logger: discardLogger()}
			if bc.sink {
				logs, err := NewPluginLogs(s.NC, PluginLogsConfig{Rate: bc.rate, Burst: 1 << 30})
				if err != nil {
					b.Fatal(err)
				}
				done := make(chan struct{})
				go func() { logs.Run(ctx); close(done) }()
				defer func() { cancel(); <-done }()
				cfg.LogSink = logs
			}
			teams := plugins.NewTeams(cfg)
			defer teams.Close(context.Background())
			rt, err := teams.Runtime(ctx, "food")
			if err != nil {
				b.Fatal(err)
			}
			p, err := rt.Load(ctx, plugins.Spec{Name: "logger", Version: "1a2b3c4d5e6f", Kind: plugins.Rewriter, Instances: 1}, wasm)
			if err != nil {
				b.Fatal(err)
			}
			defer p.Close(context.Background())
			rctx := requestid.With(ctx, "bench")
			req := &abi.RewriteRequest{Q: "pad thai"}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := p.Rewrite(rctx, req); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func discardLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }

// A full queue drops lines at once, without waiting, and the next line
// queued carries their count.
func TestPluginLogsQueueFull(t *testing.T) {
	logs, err := NewPluginLogs(nil, PluginLogsConfig{Rate: 1e9, Burst: 1 << 20, Queue: 2})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	for range 5 {
		logs.PluginLog(logLine("food", "x"))
	}
	if took := time.Since(start); took > 100*time.Millisecond {
		t.Fatalf("5 lines into a full queue took %s", took)
	}
	<-logs.queue
	logs.PluginLog(logLine("food", "after"))
	<-logs.queue
	if q := <-logs.queue; q.line.Message != "after" || q.dropped != 3 {
		t.Fatalf("the line after a full queue: %+v, want it to carry the 3 dropped", q)
	}
}

// The process's own log (the operator's stderr) gets few of a team's
// lines, each cut short: a plugin logging 200 lines of 4 KiB a call fills
// its team's subject up to the team's rate, not the operator's log.
func TestPluginLogsProcessRate(t *testing.T) {
	s, store, ctx := startStore(t)
	var buf syncBuffer
	logs := runPluginLogs(t, ctx, s.NC, PluginLogsConfig{Rate: 1000, Burst: 1000, Logger: slog.New(slog.NewTextHandler(&buf, nil))})
	big := strings.Repeat("x", 4096)
	for range 200 {
		logs.PluginLog(logLine("food", big))
	}
	logs.PluginLog(logLine("books", "calm"))
	testwait.UntilErr(t, 10*time.Second, "food's 200 lines kept", func() error {
		got, _, err := store.ReadPluginLogs(ctx, "food", "spell", api.PluginLogsRequest{Limit: 1000})
		if err != nil || len(got) < 200 {
			return fmt.Errorf("%d lines %v", len(got), err)
		}
		return nil
	})
	testwait.Until(t, 5*time.Second, "books' line in the process's log", func() bool { return strings.Contains(buf.String(), "calm") })
	out := buf.String()
	if n := strings.Count(out, "team=food"); n != DefaultPluginLogProcessBurst {
		t.Errorf("the process's log has %d of food's 200 lines, want its burst of %d", n, DefaultPluginLogProcessBurst)
	}
	if n := len(out); n > 2*DefaultPluginLogProcessBurst*PluginLogProcessBytes {
		t.Errorf("the process's log grew %d bytes for food's 800 KiB of lines", n)
	}
}

// syncBuffer is a strings.Builder safe for a logger and a test reading it.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// runPluginLogs makes a PluginLogs with cfg and runs it until the test
// ends.
func runPluginLogs(t *testing.T, ctx context.Context, nc *nats.Conn, cfg PluginLogsConfig) *PluginLogs {
	t.Helper()
	logs, err := NewPluginLogs(nc, cfg)
	if err != nil {
		t.Fatal(err)
	}
	rctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- logs.Run(rctx) }()
	t.Cleanup(func() { stop(); <-done })
	return logs
}

// BenchmarkAdmitLogDropped: what a plugin's log line over its team's rate
// costs the broker's sink (plugins.LogAdmitter): a plugin may log
// thousands a call.
func BenchmarkAdmitLogDropped(b *testing.B) {
	l, err := NewPluginLogs(nil, PluginLogsConfig{Rate: -1})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if l.AdmitLog("food") {
			b.Fatal("admitted with no rate")
		}
	}
}
