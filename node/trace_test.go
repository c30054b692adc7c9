package node

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	oteltrace "go.opentelemetry.io/otel/trace"

	"github.com/quarrysearch/quarry/api"
	"github.com/quarrysearch/quarry/broker"
	"github.com/quarrysearch/quarry/client"
	"github.com/quarrysearch/quarry/indexer"
	"github.com/quarrysearch/quarry/internal/testwait"
	"github.com/quarrysearch/quarry/internal/trace"
	"github.com/quarrysearch/quarry/internal/wasmtest"
	"github.com/quarrysearch/quarry/searcher"
)

// loggingWAT is a rewriter that changes nothing and logs "rewriting" at
// info level through the host's log import.
const loggingWAT = `(module
  (import "quarry_abi_v1" "log" (func $log (param i32 i32 i32)))
  (memory 1)
  (data (i32.const 100) "rewriting")
  (func (export "quarry_abi_v1"))
  (func (export "quarry_alloc") (param i32) (result i32) (i32.const 1024))
  (func (export "quarry_rewrite") (param i32 i32) (result i64)
    (call $log (i32.const 1) (i32.const 100) (i32.const 9))
    (i32.store16 (i32.const 40960) (i32.const 0))
    (i64.or (i64.shl (i64.const 40960) (i64.const 32)) (i64.const 2))))`

// syncBuffer is a bytes.Buffer safe for the loggers of every role.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// lines returns the JSON log lines that carry request_id id.
func (b *syncBuffer) lines(id string) []map[string]any {
	return b.match("request_id", id)
}

// match returns the JSON log lines whose key is value.
func (b *syncBuffer) match(key string, value any) []map[string]any {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []map[string]any
	sc := bufio.NewScanner(bytes.NewReader(b.buf.Bytes()))
	for sc.Scan() {
		var m map[string]any
		if json.Unmarshal(sc.Bytes(), &m) == nil && m[key] == value {
			out = append(out, m)
		}
	}
	return out
}

// TestFollowOneRequest follows one search by its request id through the
// broker's slow-query log, the searchers' slow-request logs and a plugin's
// own log line, and by its trace through the spans of the broker, each
// shard request, each searcher and the plugin call.
func TestFollowOneRequest(t *testing.T) {
	t.Parallel()
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	trace.Use(tp)
	t.Cleanup(func() { trace.Use(nil); tp.Shutdown(context.Background()) })
	var logs syncBuffer
	log := slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelInfo}))

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	n := startConfig(t, Config{Logger: log, Indexer: &indexer.Config{SnapshotInterval: -1},
		Searcher: &searcher.Config{SlowRequest: time.Nanosecond}, Broker: &broker.Config{SlowQuery: time.Nanosecond}})
	c := n.Client()
	if _, err := c.CreateIndex(ctx, "tr", 2, nil); err != nil {
		t.Fatal(err)
	}
	mustBulk(t, c, "tr", ndjson(30, "t"))
	if _, err := c.PushPlugin(ctx, "tr", "logger", wasmtest.WAT(t, loggingWAT), client.PushOptions{Kind: "rewriter", Activate: true}); err != nil {
		t.Fatal(err)
	}
	// Once the pipeline is live, one search: the spans are its own.
	waitLive(t, 20*time.Second, n.Broker, c, "tr")
	exp.Reset()
	resp, err := c.Search(client.WithRequestID(ctx, "req-"+time.Now().Format("150405.000000")), "tr", &api.SearchRequest{Q: "noodles"})
	if err != nil {
		t.Fatal(err)
	}
	id := resp.RequestID
	if id == "" || id[:4] != "req-" {
		t.Fatalf("the response names request %q, not the caller's", id)
	}

	// Logs: the broker's slow query, each shard's slow request (two
	// phases: statistics, then search), the plugin's own line.
	// A searcher logs after it answers: wait for its lines.
	testwait.UntilErr(t, 5*time.Second, "log lines with request id "+id, func() error {
		msgs := map[string]int{}
		shards := map[float64]bool{}
		for _, l := range logs.lines(id) {
			msgs[l["msg"].(string)]++
			if sh, ok := l["shard"].(float64); ok {
				shards[sh] = true
			}
		}
		if msgs["slow query"] == 1 && len(shards) == 2 && msgs["rewriting"] == 1 {
			return nil
		}
		return fmt.Errorf("%v (shards %v)", msgs, shards)
	})

	// Spans: one trace, the searchers' spans children of the broker's
	// shard spans, the plugin call under the search.
	// The tracer provider is the process's, and other tests run in
	// parallel: keep the spans of the trace whose root names this request.
	var spans []tracetest.SpanStub
	var traceID oteltrace.TraceID
	all := exp.GetSpans()
	for _, s := range all {
		for _, a := range s.Attributes {
			if s.Name == "quarry.search" && a.Key == "quarry.request_id" && a.Value.AsString() == id {
				traceID = s.SpanContext.TraceID()
			}
		}
	}
	if !traceID.IsValid() {
		t.Fatalf("no quarry.search span names request %s among %d spans", id, len(all))
	}
	for _, s := range all {
		if s.SpanContext.TraceID() == traceID {
			spans = append(spans, s)
		}
	}
	byName := map[string][]tracetest.SpanStub{}
	for _, s := range spans {
		byName[s.Name] = append(byName[s.Name], s)
	}
	root := byName["quarry.search"]
	if len(root) != 1 || len(byName["quarry.shard"]) < 2 || len(byName["quarry.shard.search"]) < 2 || len(byName["quarry.plugin.rewriter"]) != 1 {
		names := map[string]int{}
		for k, v := range byName {
			names[k] = len(v)
		}
		t.Fatalf("spans: %v", names)
	}
	shardSpans := map[string]bool{}
	for _, s := range byName["quarry.shard"] {
		shardSpans[s.SpanContext.SpanID().String()] = true
	}
	for _, s := range byName["quarry.shard.search"] {
		if !shardSpans[s.Parent.SpanID().String()] || !s.Parent.IsRemote() {
			t.Fatalf("searcher span's parent %s is not a broker shard span (remote %v)", s.Parent.SpanID(), s.Parent.IsRemote())
		}
	}
}
