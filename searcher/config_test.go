package searcher

import (
	"errors"
	"log/slog"
	"reflect"
	"runtime"
	"testing"
	"time"

	"github.com/quarrysearch/quarry/internal/configtest"
	"github.com/quarrysearch/quarry/internal/subject"
)

// EnsureDefaults fills zero fields only and is idempotent; Validate
// reports every problem, each naming its setting, and changes nothing.
func TestConfigDefaultsAndValidate(t *testing.T) {
	c := configtest.Defaults(t, Config{DataDir: t.TempDir()})
	want := Defaults
	want.DataDir, want.Logger = c.DataDir, slog.Default()
	want.Workers, want.HeavyWorkers = 2*runtime.GOMAXPROCS(0), max(1, runtime.GOMAXPROCS(0)/2)
	if !reflect.DeepEqual(c, want) {
		t.Fatalf("defaults:\n%+v\nwant\n%+v", c, want)
	}
	if c.Logger != slog.Default() {
		t.Error("EnsureDefaults gave the logger attributes (the role's are New's)")
	}

	configtest.Keeps(t, Config{SlowRequest: -1, HeavyAfter: -1, HeavyPause: -1, HeavyLinger: -1, CompressThreshold: -1, Workers: 3, HeavyWorkers: 2, QueueLen: 5, MaxBatch: 7, MaxPITs: 9, ColumnBytes: -1,
		FaultDelay: time.Millisecond, FaultEvery: 4, DrainTimeout: time.Second, CatchUpTimeout: time.Minute, Logger: slog.Default()})

	configtest.Problems(t, c, []configtest.Case[Config]{
		configtest.Wrong("data dir", func(c *Config) { c.DataDir = "" }, "searcher: data dir is required"),
		configtest.Wrong("index and shards", func(c *Config) { c.Index = "Bad Name"; c.Shards = []int{1, -1, 5000} },
			`searcher: index: invalid index name "Bad Name"`, "searcher: shards: bad shard -1", "searcher: shards: bad shard 5000"),
		configtest.Wrong("shards without index", func(c *Config) { c.Shards = []int{0} }, "searcher: shards [0] need an index"),
		configtest.Wrong("counts", func(c *Config) { c.Workers, c.HeavyWorkers, c.QueueLen, c.MaxBatch, c.FaultEvery = -1, -2, -3, -4, -5 },
			"workers must be 1 or more, got -1", "heavy workers must be 1 or more, got -2", "queue len must be 1 or more, got -3",
			"max batch must be 1 or more, got -4", "fault every must be 1 or more, got -5"),
		configtest.Wrong("durations", func(c *Config) {
			c.DrainTimeout, c.CatchUpTimeout, c.FaultDelay = -time.Second, -time.Minute, -time.Millisecond
		},
			"drain timeout must be above 0, got -1s", "catch-up timeout must be above 0, got -1m0s", "fault delay must be 0 or more, got -1ms"),
	})
	bad := c
	bad.Index = "-x"
	if err := bad.Validate(); !errors.Is(err, subject.ErrBadName) {
		t.Errorf("a bad index name: %v, want it to wrap subject.ErrBadName", err)
	}
}
