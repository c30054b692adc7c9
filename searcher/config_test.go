package searcher

import (
	"errors"
	"log/slog"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/quarrysearch/quarry/internal/subject"
)

// EnsureDefaults fills zero fields only and is idempotent; Validate
// reports every problem, each naming its setting, and changes nothing.
func TestConfigDefaultsAndValidate(t *testing.T) {
	c := Config{DataDir: t.TempDir()}
	c.EnsureDefaults()
	want := Defaults
	want.DataDir, want.Logger = c.DataDir, c.Logger
	want.Workers, want.HeavyWorkers = 2*runtime.GOMAXPROCS(0), max(1, runtime.GOMAXPROCS(0)/2)
	if !reflect.DeepEqual(c, want) || c.Logger == nil {
		t.Fatalf("defaults:\n%+v\nwant\n%+v", c, want)
	}
	if c.Logger != slog.Default() {
		t.Error("EnsureDefaults gave the logger attributes (the role's are New's)")
	}
	if err := c.Validate(); err != nil {
		t.Fatalf("the defaults do not validate: %v", err)
	}
	again := c
	again.EnsureDefaults()
	if !reflect.DeepEqual(again, c) {
		t.Error("EnsureDefaults changed a config it had filled")
	}

	// Set values, negative ones with a meaning among them, are kept.
	set := Config{SlowRequest: -1, HeavyAfter: -1, CompressThreshold: -1, Workers: 3, HeavyWorkers: 2, QueueLen: 5, MaxBatch: 7,
		FaultDelay: time.Millisecond, FaultEvery: 4, DrainTimeout: time.Second, CatchUpTimeout: time.Minute}
	before := set
	set.EnsureDefaults()
	before.Logger = set.Logger
	if !reflect.DeepEqual(set, before) {
		t.Errorf("EnsureDefaults changed set values:\n%+v\nwas\n%+v", set, before)
	}

	for _, tc := range []struct {
		name string
		edit func(*Config)
		want []string
	}{
		{"data dir", func(c *Config) { c.DataDir = "" }, []string{"searcher: data dir is required"}},
		{"index and shards", func(c *Config) { c.Index = "Bad Name"; c.Shards = []int{1, -1, 5000} }, []string{
			`searcher: index: invalid index name "Bad Name"`, "searcher: shards: bad shard -1", "searcher: shards: bad shard 5000"}},
		{"shards without index", func(c *Config) { c.Shards = []int{0} }, []string{"searcher: shards [0] need an index"}},
		{"counts", func(c *Config) { c.Workers, c.HeavyWorkers, c.QueueLen, c.MaxBatch, c.FaultEvery = -1, -2, -3, -4, -5 }, []string{
			"workers must be 1 or more, got -1", "heavy workers must be 1 or more, got -2", "queue len must be 1 or more, got -3",
			"max batch must be 1 or more, got -4", "fault every must be 1 or more, got -5"}},
		{"durations", func(c *Config) {
			c.DrainTimeout, c.CatchUpTimeout, c.FaultDelay = -time.Second, -time.Minute, -time.Millisecond
		}, []string{
			"drain timeout must be above 0, got -1s", "catch-up timeout must be above 0, got -1m0s", "fault delay must be 0 or more, got -1ms"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bad := c
			tc.edit(&bad)
			before := bad
			before.Shards = append([]int(nil), bad.Shards...)
			err := bad.Validate()
			if err == nil {
				t.Fatal("a bad config validated")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Validate: %v\nwant it to say %q", err, w)
				}
			}
			if n := len(strings.Split(err.Error(), "\n")); n != len(tc.want) {
				t.Errorf("Validate reported %d problems, want %d: %v", n, len(tc.want), err)
			}
			if !reflect.DeepEqual(bad, before) {
				t.Error("Validate changed the config")
			}
		})
	}
	bad := c
	bad.Index = "-x"
	if err := bad.Validate(); !errors.Is(err, subject.ErrBadName) {
		t.Errorf("a bad index name: %v, want it to wrap subject.ErrBadName", err)
	}
}
