package natstest

import (
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/quarrysearch/quarry/internal/embednats"
)

// Server is a test nats-server and one connection to it.
type Server struct {
	*embednats.Server
	// NC is an in-process connection, closed at the end of the test.
	NC *nats.Conn
	// JS is a JetStream context on NC.
	JS jetstream.JetStream
}

// Sync is how the test servers' JetStream syncs what it stores: in the
// background, once a minute. A test's process never crashes under its
// server (a server stopped by a test is shut down, which syncs), so no
// acknowledged write is lost, and a write costs no fsync: that made a
// node's tests several times slower. The durability tests, which kill
// real processes, run servers of their own (quarry serve's default is
// to sync every write).
const Sync = time.Minute

// Start starts a server with JetStream in a temp dir, listening on a free
// loopback port, and stops it when the test ends.
func Start(tb testing.TB) *Server {
	tb.Helper()
	s, err := embednats.Start(embednats.Config{StoreDir: tb.TempDir(), Port: -1, Sync: Sync})
	if err != nil {
		tb.Fatalf("start nats: %v", err)
	}
	tb.Cleanup(s.Shutdown)
	srv := &Server{Server: s}
	nc := srv.Conn(tb, "test")
	js, err := jetstream.New(nc)
	if err != nil {
		tb.Fatalf("jetstream: %v", err)
	}
	srv.NC, srv.JS = nc, js
	return srv
}

// Conn opens another in-process connection, closed when the test ends.
func (s *Server) Conn(tb testing.TB, name string) *nats.Conn {
	tb.Helper()
	nc, err := s.Server.Connect(name)
	if err != nil {
		tb.Fatalf("connect: %v", err)
	}
	tb.Cleanup(nc.Close)
	return nc
}

// FreePort returns a loopback TCP port that was free a moment ago, for a
// server that must come back on the same port; never one it returned
// before in this process. The kernel may hand a port just closed out
// again: CI's three-member cluster got the same port for one member's
// monitor and another's routes, and the second member could not start.
func FreePort(tb testing.TB) int {
	tb.Helper()
	portsMu.Lock()
	defer portsMu.Unlock()
	for range 1000 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			tb.Fatal(err)
		}
		port := l.Addr().(*net.TCPAddr).Port
		l.Close()
		if !portsGiven[port] {
			portsGiven[port] = true
			return port
		}
	}
	tb.Fatal("no loopback port that FreePort had not returned before, in 1,000 tries")
	return 0
}

// portsGiven are the ports FreePort returned.
var (
	portsMu    sync.Mutex
	portsGiven = map[int]bool{}
)

// Restartable is a test nats-server with JetStream that a fault test can
// stop and start again on the same port and store.
type Restartable struct {
	tb   testing.TB
	port int
	dir  string
	srv  *embednats.Server
}

// StartRestartable starts a restartable server. It is shut down when the
// test ends, after the cleanups registered later (so nodes started on it
// drain against a live server).
func StartRestartable(tb testing.TB) *Restartable {
	tb.Helper()
	r := &Restartable{tb: tb, port: FreePort(tb), dir: tb.TempDir()}
	r.Start()
	tb.Cleanup(r.Stop)
	return r
}

// Start starts the server again after Stop.
func (r *Restartable) Start() {
	r.tb.Helper()
	srv, err := embednats.Start(embednats.Config{StoreDir: r.dir, Port: r.port})
	if err != nil {
		r.tb.Fatalf("start nats: %v", err)
	}
	r.srv = srv
}

// Stop shuts the server down (a second Stop does nothing).
func (r *Restartable) Stop() {
	if r.srv != nil {
		r.srv.Shutdown()
		r.srv = nil
	}
}

// URL is the server's client URL, the same across restarts.
func (r *Restartable) URL() string { return fmt.Sprintf("nats://127.0.0.1:%d", r.port) }
