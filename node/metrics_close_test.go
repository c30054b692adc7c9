package node

import (
	"fmt"
	"io"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/quarrysearch/quarry/broker"
	"github.com/quarrysearch/quarry/indexer"
	"github.com/quarrysearch/quarry/internal/testwait"
	"github.com/quarrysearch/quarry/searcher"
)

// String returns what was logged so far.
func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// A scraper that hangs up in the middle of GET /metrics is no error of
// the node's: nothing is logged at ERROR.
func TestMetricsClientHangsUp(t *testing.T) {
	t.Parallel()
	var log syncBuffer
	n := startConfig(t, Config{Indexer: &indexer.Config{SnapshotInterval: -1}, Searcher: &searcher.Config{}, Broker: &broker.Config{},
		Logger: slog.New(slog.NewTextHandler(&log, &slog.HandlerOptions{Level: slog.LevelInfo}))})
	// Series per shard make the page big enough not to fit in the socket
	// buffers at once.
	loadCatalog(t, n, "menu", 8, catalogNDJSON(t, 200))
	hangUp := func(t *testing.T, read int) {
		t.Helper()
		conn, err := net.Dial("tcp", n.HTTPAddr)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		fmt.Fprintf(conn, "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
		if _, err := io.ReadFull(conn, make([]byte, read)); err != nil {
			t.Fatal(err)
		}
		conn.(*net.TCPConn).SetLinger(0) // a reset, as from a killed scraper
	}
	for _, read := range []int{0, 16, 0, 16, 0} {
		hangUp(t, read)
	}
	// Every handler has found out (a connection is counted open until
	// the server is done with it): whatever it logs is logged.
	testwait.Until(t, 10*time.Second, "the hung-up connections closed", func() bool {
		return counter(t, n, "quarry_http_connections", nil) == 0
	})
	var errs []string
	for line := range strings.Lines(log.String()) {
		if strings.Contains(line, "level=ERROR") {
			errs = append(errs, line)
		}
	}
	if len(errs) > 0 {
		t.Errorf("%d ERROR lines logged, the first: %s", len(errs), errs[0])
	}
}
