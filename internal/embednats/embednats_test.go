package embednats

import (
	"strings"
	"testing"
)

// A route that is not a URL with a host is refused, naming it.
func TestBadRoute(t *testing.T) {
	_, err := Start(Config{StoreDir: t.TempDir(), Port: -1, ClusterName: "c", ClusterPort: -1, Routes: []string{"127.0.0.1"}})
	if err == nil || !strings.Contains(err.Error(), `bad route "127.0.0.1"`) {
		t.Fatalf("a route without a scheme: %v", err)
	}
}
