package embednats

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A route that is not a URL with a host is refused, naming it.
func TestBadRoute(t *testing.T) {
	_, err := Start(Config{StoreDir: t.TempDir(), Port: -1, ClusterName: "c", ClusterPort: -1, Routes: []string{"127.0.0.1"}})
	if err == nil || !strings.Contains(err.Error(), `bad route "127.0.0.1"`) {
		t.Fatalf("a route without a scheme: %v", err)
	}
}

// The server's effective JetStream configuration (what /varz shows) syncs
// every write by default; Config.Sync, else the configuration file's
// sync_interval, says otherwise.
func TestSync(t *testing.T) {
	file := func(jetstream string) string {
		t.Helper()
		p := filepath.Join(t.TempDir(), "nats.conf")
		if err := os.WriteFile(p, []byte("jetstream {"+jetstream+"}\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, c := range []struct {
		name       string
		sync       time.Duration
		file       string
		always     bool
		interval   time.Duration
		warnLogged bool
	}{
		{name: "default", always: true},
		{name: "always", sync: SyncAlways, always: true},
		{name: "interval", sync: 2 * time.Minute, interval: 2 * time.Minute, warnLogged: true},
		{name: "file interval", file: file("sync_interval: 30s"), interval: 30 * time.Second, warnLogged: true},
		{name: "file always", file: file("sync_interval: always"), always: true},
		{name: "file without sync", file: file(""), always: true},
		{name: "flag always over file interval", sync: SyncAlways, file: file("sync_interval: 30s"), always: true},
		{name: "flag interval over file always", sync: 5 * time.Second, file: file("sync: always"), interval: 5 * time.Second, warnLogged: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			var logs bytes.Buffer
			s, err := Start(Config{StoreDir: t.TempDir(), NoListen: true, Sync: c.sync, ConfigFile: c.file,
				Logger: slog.New(slog.NewTextHandler(&logs, nil))})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Shutdown()
			always, interval, err := s.Sync()
			if err != nil {
				t.Fatal(err)
			}
			if always != c.always || (!c.always && interval != c.interval) {
				t.Errorf("sync always %v, interval %s; want always %v, interval %s", always, interval, c.always, c.interval)
			}
			if warned := strings.Contains(logs.String(), "level=WARN"); warned != c.warnLogged {
				t.Errorf("start-up warning logged: %v, want %v:\n%s", warned, c.warnLogged, &logs)
			}
		})
	}
}

// A sync setting is "always" or a positive interval.
func TestParseSync(t *testing.T) {
	for in, want := range map[string]time.Duration{"always": SyncAlways, "2m": 2 * time.Minute, "500ms": 500 * time.Millisecond} {
		if got, err := ParseSync(in); err != nil || got != want {
			t.Errorf("ParseSync(%q) = %s, %v; want %s", in, got, err, want)
		}
	}
	for _, in := range []string{"", "0", "-1s", "never", "Always"} {
		if _, err := ParseSync(in); err == nil {
			t.Errorf("ParseSync(%q) accepted", in)
		}
	}
	if _, err := Start(Config{StoreDir: t.TempDir(), NoListen: true, Sync: -2 * time.Second}); err == nil {
		t.Error("a negative Sync other than SyncAlways was accepted")
	}
}
