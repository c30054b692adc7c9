package embednats

import (
	"errors"
	"fmt"
	"net/url"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
)

// Config configures an embedded server.
type Config struct {
	// StoreDir is where JetStream keeps its data. Required.
	StoreDir string
	// Host and Port are where the server listens for other processes.
	// Port -1 picks a free port; Port 0 means the NATS default, 4222.
	Host string
	Port int
	// NoListen runs the server for in-process connections only.
	NoListen bool
	// ServerName names the server in logs and monitoring (default "quarry").
	ServerName string
	// ReadyTimeout bounds start-up (default 10s).
	ReadyTimeout time.Duration
	// ConfigFile is a nats-server configuration file (users, permissions,
	// accounts, TLS…); see docs/teams.md. Quarry still turns JetStream on
	// and sets the listen address, server name and StoreDir (unless the
	// file sets a store_dir).
	ConfigFile string

	// ClusterName joins the server to a NATS cluster of that name (the
	// same on every member), with clustered JetStream: streams and
	// buckets with Replicas > 1 are kept on several members. Every member
	// needs its own ServerName and StoreDir. Empty: a lone server (or the
	// cluster of ConfigFile, if it has one).
	ClusterName string
	// ClusterPort is where the server listens for routes from the other
	// members, on Host (-1: a free port; see RouteURL).
	ClusterPort int
	// Routes are the members' route URLs ("nats://127.0.0.1:6222"). A
	// route to the server itself is ignored, so every member can be given
	// the same list; the server keeps trying a member that is down.
	Routes []string
}

// Server is a running embedded nats-server.
type Server struct {
	ns *server.Server
}

// Start starts a server and waits until it accepts connections.
func Start(cfg Config) (*Server, error) {
	if cfg.StoreDir == "" {
		return nil, errors.New("embednats: StoreDir is required")
	}
	if cfg.Host == "" {
		cfg.Host = "127.0.0.1"
	}
	if cfg.ServerName == "" {
		cfg.ServerName = "quarry"
	}
	if cfg.ReadyTimeout == 0 {
		cfg.ReadyTimeout = 10 * time.Second
	}
	opts := &server.Options{}
	if cfg.ConfigFile != "" {
		var err error
		if opts, err = server.ProcessConfigFile(cfg.ConfigFile); err != nil {
			return nil, fmt.Errorf("embedded nats: config %s: %w", cfg.ConfigFile, err)
		}
	}
	opts.ServerName, opts.Host, opts.Port, opts.DontListen = cfg.ServerName, cfg.Host, cfg.Port, cfg.NoListen
	opts.JetStream, opts.NoSigs, opts.NoLog = true, true, true
	if cfg.ClusterName != "" {
		opts.Cluster.Name, opts.Cluster.Host, opts.Cluster.Port = cfg.ClusterName, cfg.Host, cfg.ClusterPort
		opts.Routes = nil
		for _, r := range cfg.Routes {
			u, err := url.Parse(r)
			if err != nil || u.Host == "" {
				return nil, fmt.Errorf("embedded nats: bad route %q: want nats://host:port", r)
			}
			opts.Routes = append(opts.Routes, u)
		}
	}
	if opts.StoreDir == "" {
		opts.StoreDir = cfg.StoreDir
	}
	if opts.MaxPayload == 0 {
		// Shard snapshots travel through the object store in chunks;
		// this keeps room for large search responses too.
		opts.MaxPayload = 8 << 20
	}
	ns, err := server.NewServer(opts)
	if err != nil {
		return nil, fmt.Errorf("embedded nats: %w", err)
	}
	go ns.Start()
	if !ns.ReadyForConnections(cfg.ReadyTimeout) {
		ns.Shutdown()
		return nil, fmt.Errorf("embedded nats: not ready after %s (is port %d in use?)", cfg.ReadyTimeout, cfg.Port)
	}
	return &Server{ns: ns}, nil
}

// Connect opens an in-process connection (no TCP) to the server.
func (s *Server) Connect(name string, opts ...nats.Option) (*nats.Conn, error) {
	opts = append([]nats.Option{nats.InProcessServer(s.ns), nats.Name(name), nats.MaxReconnects(-1)}, opts...)
	nc, err := nats.Connect("", opts...)
	if err != nil {
		return nil, fmt.Errorf("connect in-process: %w", err)
	}
	return nc, nil
}

// ClientURL is the URL other processes connect to ("" with NoListen).
func (s *Server) ClientURL() string { return s.ns.ClientURL() }

// RouteURL is the URL other cluster members route to ("" outside a
// cluster).
func (s *Server) RouteURL() string {
	a := s.ns.ClusterAddr()
	if a == nil {
		return ""
	}
	return fmt.Sprintf("nats://%s", a)
}

// Shutdown stops the server and waits for it to finish.
func (s *Server) Shutdown() {
	s.ns.Shutdown()
	s.ns.WaitForShutdown()
}

// NATS returns the underlying server, for tests that need to restart or
// inspect it.
func (s *Server) NATS() *server.Server { return s.ns }
