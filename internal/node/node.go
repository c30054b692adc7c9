package node

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/quarrysearch/quarry/broker"
	"github.com/quarrysearch/quarry/client"
	"github.com/quarrysearch/quarry/indexer"
	"github.com/quarrysearch/quarry/internal/embednats"
	"github.com/quarrysearch/quarry/internal/httpapi"
	"github.com/quarrysearch/quarry/internal/meta"
	"github.com/quarrysearch/quarry/plugins"
	"github.com/quarrysearch/quarry/registry"
	"github.com/quarrysearch/quarry/searcher"
)

// Config says which roles to run and how.
type Config struct {
	// DataDir holds JetStream's store (when embedded) and each role's
	// local files. Required.
	DataDir string
	// NATSURL connects to an existing NATS deployment; empty starts an
	// embedded server.
	NATSURL string
	// NATSOptions are extra connection options (auth, TLS) for NATSURL,
	// or for the in-process connection to the embedded server.
	NATSOptions []nats.Option
	// NATSConfigFile configures the embedded server (users, permissions;
	// see docs/teams.md); empty: no authentication.
	NATSConfigFile string
	// NATSHost and NATSPort are where the embedded server listens
	// (NATSPort -1: a free port; 0: 4222).
	NATSHost string
	NATSPort int
	// HTTPAddr is the HTTP API's listen address; empty disables it.
	HTTPAddr string
	// MetricsAddr serves GET /metrics (Prometheus) on a listener of its
	// own, for roles without the HTTP API; empty: none. The HTTP API
	// serves /metrics too.
	MetricsAddr string
	// MaxBulkBytes caps an NDJSON upload over HTTP (default 1 GiB).
	MaxBulkBytes int64
	// Replicas is the JetStream replication factor of Quarry's resources.
	Replicas int

	// Pipelines maps an index to its pipeline file, loaded into the broker
	// (see broker.LoadPipelineFile).
	Pipelines map[string]string
	// PluginCacheDir keeps compiled and built plugins (default
	// DataDir/plugins).
	PluginCacheDir string
	// PluginMemoryPages caps each plugin instance's memory, in 64 KiB
	// pages (default 1024: 64 MiB).
	PluginMemoryPages uint32
	// TeamMaxInstances caps the warm plugin instances of one team on a
	// broker, over all its indexes and versions (0: no cap). With
	// PluginMemoryPages it bounds a team's plugin memory.
	TeamMaxInstances int

	Indexer  *indexer.Config  // nil: no indexer
	Searcher *searcher.Config // nil: no searcher
	Broker   *broker.Config   // nil: no broker
	Logger   *slog.Logger
}

// Node is a running set of roles.
type Node struct {
	cfg    Config
	ns     *embednats.Server
	nc     *nats.Conn
	store  *meta.Store
	client *client.Client
	http   *http.Server
	// HTTPAddr is the HTTP listener's actual address.
	HTTPAddr string
	// Metrics holds every role's metrics, the Go runtime's and the
	// process's: what GET /metrics serves.
	Metrics *prometheus.Registry
	// MetricsAddr is the metrics listener's actual address.
	MetricsAddr string

	Indexer  *indexer.Indexer
	Searcher *searcher.Searcher
	Broker   *broker.Broker

	plugins *plugins.Teams

	closing atomic.Bool
	// Roles stop in tiers, front first, so that what is draining can
	// still reach what is behind it: brokers (with the admin API and the
	// pipeline watch), then searchers, then the indexer.
	tiers [3]tier
	errs  chan error
}

// Shutdown tiers.
const (
	tierBroker = iota
	tierSearcher
	tierIndexer
)

// tier is roles stopped together: their context and their goroutines.
type tier struct {
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// Start starts every configured role. Stop it with Close.
func Start(ctx context.Context, cfg Config) (n *Node, err error) {
	if cfg.DataDir == "" {
		return nil, errors.New("node: DataDir is required")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.MaxBulkBytes <= 0 {
		cfg.MaxBulkBytes = 1 << 30
	}
	n = &Node{cfg: cfg, errs: make(chan error, 4)}
	defer func() {
		if err != nil {
			n.Close()
		}
	}()
	if n.Metrics, err = newRegistry(); err != nil {
		return nil, err
	}
	if cfg.NATSURL == "" {
		n.ns, err = embednats.Start(embednats.Config{StoreDir: filepath.Join(cfg.DataDir, "nats"), Host: cfg.NATSHost, Port: cfg.NATSPort,
			ConfigFile: cfg.NATSConfigFile})
		if err != nil {
			return nil, err
		}
		n.nc, err = n.ns.Connect("quarry", cfg.NATSOptions...)
	} else {
		opts := append([]nats.Option{nats.Name("quarry"), nats.MaxReconnects(-1)}, cfg.NATSOptions...)
		n.nc, err = nats.Connect(cfg.NATSURL, opts...)
		if err != nil {
			err = fmt.Errorf("connect to %s: %w", cfg.NATSURL, err)
		}
	}
	if err != nil {
		return nil, err
	}
	js, err := jetstream.New(n.nc)
	if err != nil {
		return nil, err
	}
	if n.store, err = meta.Open(ctx, js, meta.Options{Replicas: cfg.Replicas}); err != nil {
		return nil, err
	}
	if n.client, err = client.New(ctx, n.nc, client.Options{Replicas: cfg.Replicas}); err != nil {
		return nil, err
	}
	for i := range n.tiers {
		n.tiers[i].ctx, n.tiers[i].cancel = context.WithCancel(context.Background())
	}
	if cfg.Indexer != nil {
		c := *cfg.Indexer
		if c.DataDir == "" {
			c.DataDir = filepath.Join(cfg.DataDir, "indexer")
		}
		c.Logger, c.Registerer = cfg.Logger, n.Metrics
		if n.Indexer, err = indexer.New(n.nc, n.store, c); err != nil {
			return nil, err
		}
		n.run(tierIndexer, "indexer", func(ctx context.Context) error { return n.Indexer.Run(ctx) })
	}
	if cfg.Searcher != nil {
		c := *cfg.Searcher
		if c.DataDir == "" {
			c.DataDir = filepath.Join(cfg.DataDir, "searcher")
		}
		c.Logger, c.Registerer = cfg.Logger, n.Metrics
		if n.Searcher, err = searcher.New(n.nc, n.store, c); err != nil {
			return nil, err
		}
		n.run(tierSearcher, "searcher", func(ctx context.Context) error { return n.Searcher.Run(ctx) })
	}
	if cfg.Broker != nil {
		c := *cfg.Broker
		c.Logger, c.Registerer = cfg.Logger, n.Metrics
		if n.Broker, err = broker.New(n.nc, n.store, c); err != nil {
			return nil, err
		}
		dir := cfg.PluginCacheDir
		if dir == "" {
			dir = filepath.Join(cfg.DataDir, "plugins")
		}
		limits := plugins.Config{MemoryLimitPages: cfg.PluginMemoryPages, MaxInstances: cfg.TeamMaxInstances, Logger: cfg.Logger}
		cached := limits
		cached.CacheDir = filepath.Join(dir, "compiled")
		n.plugins = plugins.NewTeams(cached) // one runtime per team
		// Pipelines from the registry (quarry-pipelines), swapped in live.
		n.run(tierBroker, "pipelines", func(ctx context.Context) error { return n.Broker.WatchPipelines(ctx, n.plugins) })
		// The admin API (plugins and pipelines) runs beside the broker.
		admin, err := registry.New(ctx, n.nc, n.store, registry.Config{Plugins: limits, Logger: cfg.Logger})
		if err != nil {
			return nil, err
		}
		n.run(tierBroker, "admin", func(ctx context.Context) error { return admin.Run(ctx) })
		if len(cfg.Pipelines) > 0 {
			for index, file := range cfg.Pipelines {
				rt, err := n.plugins.Runtime(ctx, "pipeline-file-"+index)
				if err != nil {
					return nil, err
				}
				pl, err := broker.LoadPipelineFile(ctx, rt, file, filepath.Join(dir, "built"))
				if err != nil {
					return nil, err
				}
				n.Broker.SetPipeline(index, pl)
				cfg.Logger.Info("pipeline loaded", "index", index, "file", file, "rewriters", len(pl.Rewriters), "rankers", len(pl.Rankers))
			}
		}
		n.run(tierBroker, "broker", func(ctx context.Context) error { return n.Broker.Run(ctx) })
	}
	if cfg.HTTPAddr != "" {
		ln, err := net.Listen("tcp", cfg.HTTPAddr)
		if err != nil {
			return nil, fmt.Errorf("http listener: %w", err)
		}
		n.HTTPAddr = ln.Addr().String()
		mux := http.NewServeMux()
		mux.Handle("/", httpapi.Handler(n.client, cfg.MaxBulkBytes, cfg.Logger))
		mux.HandleFunc("GET /readyz", n.serveReady)
		mux.Handle("GET /metrics", httpapi.Metrics(n.Metrics, cfg.Logger))
		n.http = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
		n.run(tierBroker, "http", func(context.Context) error {
			if err := n.http.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
				return err
			}
			return nil
		})
	}
	if cfg.MetricsAddr != "" {
		if err := n.serveMetrics(cfg.MetricsAddr); err != nil {
			return nil, err
		}
	}
	return n, nil
}

// run runs a role in a tier until the tier's context is done.
func (n *Node) run(t int, role string, f func(ctx context.Context) error) {
	ctx := n.tiers[t].ctx
	n.tiers[t].wg.Go(func() {
		if err := f(ctx); err != nil {
			n.cfg.Logger.Error("role stopped", "role", role, "err", err)
			select {
			case n.errs <- fmt.Errorf("%s: %w", role, err):
			default:
			}
		}
	})
}

// Errors reports a role that stopped with an error.
func (n *Node) Errors() <-chan error { return n.errs }

// Client is a client on the node's connection.
func (n *Node) Client() *client.Client { return n.client }

// Conn is the node's NATS connection.
func (n *Node) Conn() *nats.Conn { return n.nc }

// NATSURL is the URL other processes use to reach the node's NATS.
func (n *Node) NATSURL() string {
	if n.ns != nil {
		return n.ns.ClientURL()
	}
	return n.cfg.NATSURL
}

// WaitReady waits until every role has loaded what existed at start-up.
func (n *Node) WaitReady(ctx context.Context) error {
	var chans []<-chan struct{}
	if n.Indexer != nil {
		chans = append(chans, n.Indexer.Ready())
	}
	if n.Searcher != nil {
		chans = append(chans, n.Searcher.Ready())
	}
	if n.Broker != nil {
		chans = append(chans, n.Broker.Ready(), n.Broker.PipelinesReady())
	}
	for _, c := range chans {
		select {
		case <-c:
		case err := <-n.errs:
			return err
		case <-ctx.Done():
			return fmt.Errorf("wait for roles to be ready: %w", ctx.Err())
		}
	}
	return nil
}

// Close stops the node: the HTTP listener first (requests in flight
// finish), then each tier in turn (brokers, searchers, the indexer), each
// draining its requests before it stops, then NATS.
func (n *Node) Close() {
	n.closing.Store(true)
	if n.http != nil {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		n.http.Shutdown(sctx)
		cancel()
	}
	for i := range n.tiers {
		if n.tiers[i].cancel != nil {
			n.tiers[i].cancel()
			n.tiers[i].wg.Wait()
		}
	}
	if n.nc != nil {
		n.nc.Drain()
		n.nc.Close()
	}
	if n.ns != nil {
		n.ns.Shutdown()
	}
	if n.plugins != nil {
		n.plugins.Close(context.Background())
	}
}

// Ready reports whether the node should get traffic: nil when NATS is
// connected, every role is ready (the searcher's shards are loaded and
// caught up, the broker knows the indexes and has loaded the pipelines)
// and nothing is shutting down; otherwise an error naming what is not.
func (n *Node) Ready() error {
	var why []string
	if n.closing.Load() {
		why = append(why, "shutting down")
	}
	if n.nc == nil || !n.nc.IsConnected() {
		why = append(why, "NATS is not connected")
	}
	pending := func(name string, c <-chan struct{}) {
		select {
		case <-c:
		default:
			why = append(why, name)
		}
	}
	if n.Indexer != nil {
		pending("the indexer is starting", n.Indexer.Ready())
	}
	if n.Searcher != nil {
		pending("the searcher's shards are loading", n.Searcher.Ready())
		if n.Searcher.Draining() {
			why = append(why, "the searcher is draining")
		}
	}
	if n.Broker != nil {
		pending("the broker is reading the indexes", n.Broker.Ready())
		pending("the broker is loading the pipelines", n.Broker.PipelinesReady())
		if n.Broker.Draining() {
			why = append(why, "the broker is draining")
		}
	}
	if len(why) > 0 {
		return fmt.Errorf("not ready: %s", strings.Join(why, "; "))
	}
	return nil
}

// serveReady answers GET /readyz: 200 "ready", or 503 and why not.
func (n *Node) serveReady(w http.ResponseWriter, _ *http.Request) {
	if err := n.Ready(); err != nil {
		http.Error(w, err.Error(), http.StatusServiceUnavailable)
		return
	}
	io.WriteString(w, "ready\n")
}
