package broker

import (
	"reflect"
	"strings"
	"testing"
	"time"
)

// EnsureDefaults fills zero fields only and is idempotent; Validate
// reports every problem, each naming its setting, and changes nothing.
func TestConfigDefaultsAndValidate(t *testing.T) {
	var c Config
	c.EnsureDefaults()
	if c.DefaultTimeout != Defaults.DefaultTimeout || c.MaxInFlight != Defaults.MaxInFlight || c.TeamMaxInFlight != Defaults.MaxInFlight/4 ||
		c.HeavySearches < 1 || c.QueueGroup != Defaults.QueueGroup || c.Logger == nil {
		t.Fatalf("defaults: %+v", c)
	}
	if err := c.Validate(); err != nil {
		t.Fatalf("the defaults do not validate: %v", err)
	}
	again := c
	again.EnsureDefaults()
	if !reflect.DeepEqual(again, c) {
		t.Error("EnsureDefaults changed a config it had filled")
	}
	set := Config{SlowQuery: -1, HeavyAfter: -1, StatsCacheSize: -1, MaxInFlight: 8}
	set.EnsureDefaults()
	if set.SlowQuery != -1 || set.HeavyAfter != -1 || set.StatsCacheSize != -1 || set.MaxInFlight != 8 || set.TeamMaxInFlight != 2 {
		t.Errorf("EnsureDefaults changed set values: %+v", set)
	}

	bad := c
	bad.DefaultTimeout, bad.MaxTimeout = 5*time.Second, time.Second
	bad.RecordPercent = 101
	bad.FallbackErrorRate = 2
	bad.FallbackMinCalls = bad.FallbackWindow + 1
	bad.HeavySearches = -3
	bad.RateUnit = time.Microsecond
	bad.StatsMaxUpdates, bad.StatsMaxAge = MaxStatsMaxUpdates+1, -time.Second
	bad.TeamMaxSearchMemory, bad.MaxResponseBytes, bad.MaxExplain = -1, -2, 10001
	before := bad
	err := bad.Validate()
	if err == nil {
		t.Fatal("a bad config validated")
	}
	for _, want := range []string{"default timeout 5s is over the max timeout 1s", "record percent must be 0-100, got 101",
		"fallback error rate must be in [0,1], got 2", "fallback min calls (101) must not be above the fallback window (100)",
		"heavy searches must be 1 or more, got -3", "stats max updates must be 1-4096 (what a searcher remembers of its updates), got 4097",
		"stats max age must be above 0, got -1s", "rate unit must be 1ms or more (negative: a search counts once), got 1µs",
		"team max search memory must be above 0, got -1", "max response bytes must be 0 (what one NATS reply carries) or more, got -2", "max explain must be 1-10000, got 10001"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Validate: %v\nwant it to say %q", err, want)
		}
	}
	if !reflect.DeepEqual(bad, before) {
		t.Error("Validate changed the config")
	}
}
