package plugins

import (
	"context"
	"slices"
	"sync"
	"testing"

	"github.com/quarrysearch/quarry/internal/requestid"
	"github.com/quarrysearch/quarry/internal/wasmtest"
	"github.com/quarrysearch/quarry/sdk/abi"
)

// lines is a LogSink that keeps what it gets.
type lines struct {
	mu  sync.Mutex
	got []LogLine
}

func (l *lines) PluginLog(line LogLine) {
	l.mu.Lock()
	l.got = append(l.got, line)
	l.mu.Unlock()
}

// A plugin's log import and stdout both reach the runtime's LogSink, each
// line with the team, plugin, version, level, source and the request id of
// the call that wrote it.
func TestLogSink(t *testing.T) {
	ctx := context.Background()
	sink := &lines{}
	teams := NewTeams(Config{LogSink: sink})
	defer teams.Close(ctx)
	rt, err := teams.Runtime(ctx, "food")
	if err != nil {
		t.Fatal(err)
	}
	p, err := rt.Load(ctx, Spec{Name: "logger", Version: "1a2b3c4d5e6f", Kind: Rewriter, Instances: 1},
		wasmtest.WATFile(t, "../examples/plugins/wat/logger.wat"))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close(ctx)
	for _, id := range []string{"req-1", "req-2"} {
		if _, err := p.Rewrite(requestid.With(ctx, id), &abi.RewriteRequest{Q: "x"}); err != nil {
			t.Fatal(err)
		}
	}
	sink.mu.Lock()
	defer sink.mu.Unlock()
	want := []LogLine{
		{Team: "food", Plugin: "logger", Version: "1a2b3c4d5e6f", Level: "info", Source: "log", RequestID: "req-1", Message: "rewrite: q left as it is"},
		{Team: "food", Plugin: "logger", Version: "1a2b3c4d5e6f", Level: "info", Source: "stdout", RequestID: "req-1", Message: "hello from stdout"},
		{Team: "food", Plugin: "logger", Version: "1a2b3c4d5e6f", Level: "info", Source: "log", RequestID: "req-2", Message: "rewrite: q left as it is"},
		{Team: "food", Plugin: "logger", Version: "1a2b3c4d5e6f", Level: "info", Source: "stdout", RequestID: "req-2", Message: "hello from stdout"},
	}
	got := slices.Clone(sink.got)
	for i := range got {
		if got[i].Time.IsZero() {
			t.Errorf("line %d has no time", i)
		}
		got[i].Time = want[0].Time
	}
	if !slices.Equal(got, want) {
		t.Fatalf("lines:\n got %+v\nwant %+v", got, want)
	}
}

// closedSink is a LogSink that admits no line (a team over its rate) and
// counts what it is asked and told.
type closedSink struct {
	lines
	asked, told int
}

func (c *closedSink) AdmitLog(string) bool {
	c.mu.Lock()
	c.asked++
	c.mu.Unlock()
	return false
}

func (c *closedSink) LogsDropped(_ string, n int) {
	c.mu.Lock()
	c.told += n
	c.mu.Unlock()
}

// A line the sink would drop (LogAdmitter) is neither read out of the
// guest nor built: a plugin logging 2,000 lines of 4 KiB a call over its
// team's rate allocated 8 MB a call, garbage every team's searches paid
// for (TestAttackIsolation: the calm team's p99 2.6x). The sink is asked
// once a call: the call's later lines are dropped without asking, and
// their number told when it ends (LogDropCounter).
func TestLogOverRateNotBuilt(t *testing.T) {
	ctx := context.Background()
	sink := &closedSink{}
	rt := testRuntimeWith(t, Config{LogSink: sink, Team: "food"})
	p, err := rt.Load(ctx, Spec{Name: "flood", Version: "v1", Kind: Rewriter, Instances: 1, Budget: DefaultMaxBudget}, wasmtest.WATFile(t, "testdata/floodlog.wat"))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close(ctx)
	req := &abi.RewriteRequest{Q: "x"}
	calls := 0
	allocs := testing.AllocsPerRun(5, func() {
		calls++
		if _, err := p.Rewrite(ctx, req); err != nil {
			t.Fatal(err)
		}
	})
	if sink.asked != calls || sink.asked+sink.told != 2000*calls || len(sink.got) != 0 {
		t.Fatalf("%d calls: the sink was asked %d times, told of %d dropped lines and got %d; want asked once a call, told of the other 1,999, none got",
			calls, sink.asked, sink.told, len(sink.got))
	}
	if allocs > 100 {
		t.Fatalf("a call logging 2,000 lines over the rate allocates %v times", allocs)
	}
	t.Logf("a call of 2,000 dropped lines: %v allocations", allocs)
}

// Once a call's team is over its log rate, the call's stdout is not asked
// for either (guest.logsShut), and each new call asks again: the logger
// example writes a log line, then a stdout line, a call.
func TestLogShutCoversStdout(t *testing.T) {
	ctx := context.Background()
	sink := &closedSink{}
	rt := testRuntimeWith(t, Config{LogSink: sink, Team: "food"})
	p, err := rt.Load(ctx, Spec{Name: "logger", Version: "v1", Kind: Rewriter, Instances: 1}, wasmtest.WATFile(t, "../examples/plugins/wat/logger.wat"))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close(ctx)
	for range 3 {
		if _, err := p.Rewrite(ctx, &abi.RewriteRequest{Q: "x"}); err != nil {
			t.Fatal(err)
		}
	}
	if sink.asked != 3 || sink.told != 3 || len(sink.got) != 0 {
		t.Fatalf("3 calls: asked %d, told of %d, got %d lines; want asked 3 (once a call), told of 3 (each call's stdout line), none got", sink.asked, sink.told, len(sink.got))
	}
}
