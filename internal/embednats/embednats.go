package embednats

import (
	"errors"
	"fmt"
	"log/slog"
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

	// Sync is when JetStream makes what it stores durable (see
	// docs/operations.md). SyncAlways: every write is fsynced before it
	// is acknowledged, so an acknowledged message survives a machine
	// crash. A positive interval: a write is acknowledged once it is in
	// the OS page cache and fsynced in the background every Sync, so a
	// process crash loses nothing but a machine crash (kernel panic,
	// power cut, VM kill) loses up to Sync of acknowledged writes. Zero:
	// the ConfigFile's jetstream sync_interval if it sets one, else
	// SyncAlways. Negative values other than SyncAlways are refused.
	Sync time.Duration
	// Logger gets the start-up line that says how writes are synced, a
	// warning when they are acknowledged before they are on disk (nil:
	// no line).
	Logger *slog.Logger
}

// SyncAlways, as Config.Sync, fsyncs every JetStream write before it is
// acknowledged.
const SyncAlways time.Duration = -1

// ParseSync parses a sync setting as the --sync flag gives it: "always"
// (SyncAlways) or a positive duration such as "2m".
func ParseSync(s string) (time.Duration, error) {
	if s == "always" {
		return SyncAlways, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("sync %q: want always or a positive interval such as 2m", s)
	}
	return d, nil
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
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Sync < 0 && cfg.Sync != SyncAlways {
		return nil, fmt.Errorf("embedded nats: Sync %s: want SyncAlways, 0 or a positive interval", cfg.Sync)
	}
	opts := &server.Options{}
	if cfg.ConfigFile != "" {
		var err error
		if opts, err = server.ProcessConfigFile(cfg.ConfigFile); err != nil {
			return nil, fmt.Errorf("embedded nats: config %s: %w", cfg.ConfigFile, err)
		}
	}
	setSync(opts, cfg.Sync)
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
	s := &Server{ns: ns}
	if always, interval, err := s.Sync(); err != nil {
		s.Shutdown()
		return nil, err
	} else if always {
		cfg.Logger.Info("JetStream puts every write on disk before acknowledging it", "sync", "always")
	} else {
		cfg.Logger.Warn("JetStream acknowledges writes before they are on disk: a machine crash (power cut, kernel panic, VM kill) can lose the acknowledged writes of the last sync_interval; a process crash loses none",
			"sync_interval", interval, "durable", "sync always (quarry serve --sync always)")
	}
	return s, nil
}

// setSync applies a Config.Sync to the server's options: an explicit
// setting wins over the configuration file's, and with neither every
// write is synced. (server.Options has no exported way to tell that a
// file set sync; a file that did leaves SyncAlways or a non-zero
// SyncInterval, which the server's own default is applied after.)
func setSync(opts *server.Options, sync time.Duration) {
	switch {
	case sync == SyncAlways:
		opts.SyncAlways, opts.SyncInterval = true, 0
	case sync > 0:
		opts.SyncAlways, opts.SyncInterval = false, sync
	case opts.SyncAlways || opts.SyncInterval > 0:
		// The configuration file's setting.
	default:
		opts.SyncAlways = true
	}
}

// Sync reports how the running server's JetStream syncs its writes: always
// (every write fsynced before its acknowledgement), or in the background
// every interval. It reads the server's effective configuration, what
// /varz shows under jetstream.config.
func (s *Server) Sync() (always bool, interval time.Duration, err error) {
	v, err := s.ns.Varz(nil)
	if err != nil {
		return false, 0, fmt.Errorf("embedded nats: varz: %w", err)
	}
	if v.JetStream.Config == nil {
		return false, 0, errors.New("embedded nats: varz shows no JetStream configuration")
	}
	return v.JetStream.Config.SyncAlways, v.JetStream.Config.SyncInterval, nil
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
