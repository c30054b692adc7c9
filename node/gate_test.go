package node

import (
	"context"
	"strings"
	"testing"
	"time"
)

// The relevance gate's bounds are checked at start-up, naming the flag.
func TestGateSettingsChecked(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		cfg  Config
		want string
	}{
		{Config{GateTimeout: -time.Second}, "--gate-timeout"},
		{Config{GateWait: -time.Second}, "--gate-wait"},
		{Config{GateWait: time.Minute}, "under 1m0s, an admin request's deadline"},
	} {
		c.cfg.DataDir = t.TempDir()
		n, err := Start(context.Background(), c.cfg)
		if err == nil {
			n.Close()
			t.Fatalf("%+v started", c.cfg)
		}
		if !strings.Contains(err.Error(), c.want) {
			t.Errorf("GateTimeout %s, GateWait %s: %v, want it to name %s", c.cfg.GateTimeout, c.cfg.GateWait, err, c.want)
		}
	}
}
