package indexer

import (
	"errors"
	"log/slog"
	"reflect"
	"testing"
	"time"

	"github.com/quarrysearch/quarry/internal/configtest"
	"github.com/quarrysearch/quarry/internal/shard"
	"github.com/quarrysearch/quarry/internal/subject"
)

// EnsureDefaults fills zero fields only and is idempotent; Validate
// reports every problem, each naming its setting, and changes nothing.
func TestConfigDefaultsAndValidate(t *testing.T) {
	c := configtest.Defaults(t, Config{DataDir: t.TempDir()})
	want := Defaults
	want.DataDir, want.Logger = c.DataDir, slog.Default()
	if !reflect.DeepEqual(c, want) || c.Writes.ApplyInterval != DefaultApplyInterval || c.MaxBatch != shard.DefaultMaxBatch {
		t.Fatalf("defaults:\n%+v\nwant\n%+v", c, want)
	}
	if c.Logger != slog.Default() {
		t.Error("EnsureDefaults gave the logger attributes (the role's are New's)")
	}

	configtest.Keeps(t, Config{SnapshotInterval: -1, Writes: shard.WriteOptions{ApplyInterval: -1, PersistNap: 3}, SnapshotTimeout: time.Second, MaxBatch: 9,
		Logger: slog.Default()})

	configtest.Problems(t, c, []configtest.Case[Config]{
		configtest.Wrong("data dir", func(c *Config) { c.DataDir = "" }, "indexer: data dir is required"),
		configtest.Wrong("every problem", func(c *Config) { c.Index, c.SnapshotTimeout, c.MaxBatch = "Bad Name", -time.Minute, -4 },
			`indexer: index: invalid index name "Bad Name"`, "indexer: snapshot timeout must be above 0, got -1m0s",
			"indexer: max batch must be 1 or more, got -4"),
	})
	bad := c
	bad.Index = "-x"
	if err := bad.Validate(); !errors.Is(err, subject.ErrBadName) {
		t.Errorf("a bad index name: %v, want it to wrap subject.ErrBadName", err)
	}
}
