package natstest

import (
	"testing"

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

// Start starts a server with JetStream in a temp dir, listening on a free
// loopback port, and stops it when the test ends.
func Start(tb testing.TB) *Server {
	tb.Helper()
	s, err := embednats.Start(embednats.Config{StoreDir: tb.TempDir(), Port: -1})
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
