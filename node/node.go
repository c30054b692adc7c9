package node

import (
	"cmp"
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
	"github.com/quarrysearch/quarry/httpapi"
	"github.com/quarrysearch/quarry/indexer"
	"github.com/quarrysearch/quarry/internal/control"
	"github.com/quarrysearch/quarry/internal/embednats"
	"github.com/quarrysearch/quarry/internal/meta"
	"github.com/quarrysearch/quarry/internal/shard"
	"github.com/quarrysearch/quarry/internal/tracenats"
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
	// NATSSync is when the embedded server's JetStream fsyncs what it
	// stores (embednats.Config.Sync): embednats.SyncAlways, an interval,
	// or zero for NATSConfigFile's sync_interval, else always.
	NATSSync time.Duration
	// HTTPAddr is the HTTP API's listen address; empty disables it.
	HTTPAddr string
	// HTTPAuth requires a token on every HTTP API request and keeps each
	// team's tokens to its own indexes (httpapi.Guard; tokens: quarry
	// token create). Without it the HTTP API is open: for loopback only.
	HTTPAuth bool
	// MetricsAddr serves GET /metrics (Prometheus) on a listener of its
	// own, for roles without the HTTP API; empty: none. The HTTP API
	// serves /metrics too.
	MetricsAddr string
	// Profiling also serves Go's profiles (net/http/pprof) under
	// /debug/pprof/ on the MetricsAddr listener; it needs MetricsAddr.
	Profiling bool
	// MaxBulkBytes caps an NDJSON upload over HTTP (default 1 GiB).
	MaxBulkBytes int64
	// HTTPBodyTimeout is how long the HTTP API waits for more of a
	// request's body before it answers 400 and closes the connection
	// (default httpapi.DefaultBodyTimeout, 30s).
	HTTPBodyTimeout time.Duration
	// HTTPIdleTimeout closes an HTTP connection (the API's, the metrics
	// listener's) kept alive with no request for that long (default
	// DefaultHTTPIdleTimeout, 30s), so idle connections do not pile up.
	// Headers must come within 10s of a request's start, and a request
	// refused for want of a valid token (401) closes its connection.
	HTTPIdleTimeout time.Duration
	// HTTPMaxConns caps the HTTP API's open connections (default
	// httpapi.DefaultMaxConns, 4096, or fewer where the open-file limit
	// less HTTPFDReserve is lower); a connection past it is answered 503
	// and closed.
	HTTPMaxConns int
	// HTTPMaxConnsPerClient caps the HTTP API's open connections from one
	// client address, an IPv4 address or an IPv6 /64 (default
	// httpapi.DefaultMaxConnsPerClient, 256, at most HTTPMaxConns); one
	// past it is answered 429 and closed.
	HTTPMaxConnsPerClient int
	// HTTPFDReserve is how many of the process's file descriptors the
	// HTTP API's connections leave to the rest (NATS, JetStream, the
	// indexes, plugins): HTTPMaxConns may not be more than the open-file
	// limit (RLIMIT_NOFILE, whose soft limit Start raises to the hard one)
	// less this. Default: half the limit.
	HTTPFDReserve int
	// HTTPHosts are names the HTTP API answers to besides localhost and
	// loopback addresses (Host header, any port). On loopback nothing else
	// is answered (DNS rebinding); beyond loopback, when set, only these,
	// localhost and IP addresses are (unset: any name).
	HTTPHosts []string
	// HTTPOrigins are the web origins (scheme://host[:port]) whose pages
	// may call the HTTP API besides the server's own (the console); a
	// request with any other Origin header is refused with 403.
	HTTPOrigins []string
	// fileLimit is the open-file limit Start found (0: unknown) and
	// fileLimitRaised whether it raised it, for the log.
	fileLimit       uint64
	fileLimitRaised bool
	// Replicas is the JetStream replication factor of Quarry's resources:
	// what the node makes missing ones with, or, with BindResources, the
	// count it checks the deployment has.
	Replicas int
	// BindResources makes the node create none of Quarry's JetStream
	// resources: it binds to those `quarry init` (or `quarry serve`)
	// made, and waits while one is missing, saying so in the log, until
	// Start's context ends. The role commands (quarry indexer, searcher,
	// broker) set it, so roles started beside the init job never race it
	// to create; `quarry serve` makes them.
	BindResources bool

	// PluginCacheDir keeps compiled and built plugins (default
	// DataDir/plugins).
	PluginCacheDir string
	// PluginMemoryPages caps each plugin instance's memory, in 64 KiB
	// pages (default plugins.DefaultMemoryLimitPages: 64 MiB).
	PluginMemoryPages uint32
	// TeamMaxInstances caps the warm plugin instances of one team on a
	// broker, over all its indexes and versions (default
	// plugins.DefaultMaxInstances; negative: no cap). With
	// PluginMemoryPages it bounds a team's plugin memory.
	TeamMaxInstances int
	// TeamMaxPluginCalls caps the calls of one team's plugins that run at
	// once on a broker (default plugins.DefaultMaxCalls: half the
	// processors; negative: no cap): a guest's call takes a processor
	// until it returns, so one team's spinning plugins cannot take them
	// all.
	TeamMaxPluginCalls int
	// PluginWarmInstances is how many instances of each plugin's pool are
	// made when it loads (default plugins.DefaultWarmInstances); the
	// others are made when calls overlap.
	PluginWarmInstances int
	// PluginMaxBudget is the longest time budget a plugin call may be
	// given (a step's budget_ms; default plugins.DefaultMaxBudget): a
	// longer one is refused when a version is pushed or activated.
	PluginMaxBudget time.Duration
	// PluginCompile bounds what a plugin module may ask of the compiler
	// (zero fields: plugins.DefaultCompileLimits), and
	// PluginCompileTimeout one module's compile (default
	// plugins.DefaultCompileTimeout).
	PluginCompile        plugins.CompileLimits
	PluginCompileTimeout time.Duration
	// GateTimeout bounds one relevance gate of the admin service (an
	// activation's, a promotion's, a pipeline set's), which runs as a job
	// of its own, at most one per index (default
	// registry.DefaultGateTimeout, 30 min); GateWait is how long the
	// change's request waits for it before it answers gate_running and
	// the gate goes on in the background (default
	// registry.DefaultGateWait, 20 s; under a minute, the admin
	// request's deadline).
	GateTimeout time.Duration
	GateWait    time.Duration
	// MinFreeDisk is the free space a node running the embedded NATS
	// keeps on the disks of JetStream's store and of its data directory
	// (default DefaultMinFreeDisk, 512 MiB; negative: not watched): below
	// it, writes of documents are held, refused at once with
	// insufficient_storage (HTTP 507) naming the directory, and /readyz
	// says so; above it and a half they are taken again, with no restart.
	// DiskCheckInterval is how often the space is looked at (default
	// DefaultDiskCheckInterval, 1s).
	MinFreeDisk       int64
	DiskCheckInterval time.Duration

	Indexer  *indexer.Config  // nil: no indexer
	Searcher *searcher.Config // nil: no searcher
	Broker   *broker.Config   // nil: no broker
	// SeparateReplicas keeps a searcher's replicas apart from the
	// indexer's when both run in the node, as on separate machines: the
	// searcher downloads snapshots and follows the stream itself, and
	// every update is indexed twice in the process. By default the
	// indexer lends its replicas to the searcher (searcher.Config
	// .Replicas), which then paces their writes (the searcher's
	// Writes; the indexer's ApplyInterval is not used).
	SeparateReplicas bool
	// ShardsOverNATS makes the broker ask a searcher in the same node
	// through the NATS server, as it asks one on another machine. By
	// default it asks it directly (broker.UseLocal): the same queue and
	// limits, without the server's hops.
	ShardsOverNATS bool
	Logger         *slog.Logger
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
	metrics *httpapi.Listener // the metrics listener, with its caps
	lock    *dirLock
	guard   *httpapi.Guard    // with HTTPAuth
	admin   *registry.Service // with a broker
	control *control.Service  // with a broker or an indexer

	holdMu sync.Mutex
	holds  map[*string]struct{} // see Hold

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

// Start starts every configured role. Stop it with Close. A failure that
// one setting causes (a port in use, a data directory another process
// holds, NATS out of reach) is a *SettingError naming that setting.
func Start(ctx context.Context, cfg Config) (*Node, error) {
	if cfg.DataDir == "" {
		return nil, errors.New("node: DataDir is required")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.MaxBulkBytes <= 0 {
		cfg.MaxBulkBytes = 1 << 30
	}
	if cfg.HTTPBodyTimeout < 0 || cfg.HTTPIdleTimeout < 0 {
		return nil, fmt.Errorf("node: HTTP timeouts must be 0 (the default) or positive, got a body timeout of %s and an idle timeout of %s", cfg.HTTPBodyTimeout, cfg.HTTPIdleTimeout)
	}
	cfg.HTTPIdleTimeout = cmp.Or(cfg.HTTPIdleTimeout, DefaultHTTPIdleTimeout)
	if err := checkGate(&cfg); err != nil {
		return nil, err
	}
	if err := checkDisk(&cfg); err != nil {
		return nil, err
	}
	if err := checkHTTPDoor(&cfg); err != nil {
		return nil, err
	}
	if cfg.Profiling && cfg.MetricsAddr == "" {
		return nil, settingErr(SettingMetricsAddr, "profiles are served on the metrics listener: set its address too")
	}
	// Absolute from here on: nothing below may depend on the working
	// directory (plugins are built in their own directories).
	var err error
	if cfg.DataDir, err = filepath.Abs(cfg.DataDir); err != nil {
		return nil, settingErr(SettingDataDir, "data directory %s: %v", cfg.DataDir, err)
	}
	if cfg.PluginCacheDir != "" {
		if cfg.PluginCacheDir, err = filepath.Abs(cfg.PluginCacheDir); err != nil {
			return nil, err
		}
	}
	n := &Node{cfg: cfg, errs: make(chan error, 4)}
	if err := n.start(ctx); err != nil {
		n.Close()
		return nil, err
	}
	return n, nil
}

// start does Start's work; on an error, Start closes what it opened.
func (n *Node) start(ctx context.Context) (err error) {
	cfg := n.cfg
	for i := range n.tiers {
		n.tiers[i].ctx, n.tiers[i].cancel = context.WithCancel(context.Background())
	}
	if n.lock, err = lockDataDir(cfg.DataDir, cfg.role()); err != nil {
		return err
	}
	if n.Metrics, err = newRegistry(); err != nil {
		return err
	}
	// Listeners first: a taken port fails start-up before anything else
	// is started.
	var httpLn net.Listener
	if cfg.HTTPAddr != "" {
		if httpLn, err = listen(SettingHTTPAddr, "HTTP", cfg.HTTPAddr); err != nil {
			return err
		}
		n.HTTPAddr = httpLn.Addr().String()
		defer func() {
			if err != nil {
				httpLn.Close()
			}
		}()
	}
	if cfg.MetricsAddr != "" {
		if err := n.serveMetrics(cfg.MetricsAddr); err != nil {
			return err
		}
	}
	if cfg.NATSURL == "" {
		if cfg.NATSConfigFile == "" {
			if err := checkPortFree(SettingNATSPort, "NATS", cmp.Or(cfg.NATSHost, "127.0.0.1"), cfg.NATSPort); err != nil {
				return err
			}
		}
		n.ns, err = embednats.Start(embednats.Config{StoreDir: filepath.Join(cfg.DataDir, "nats"), Host: cfg.NATSHost, Port: cfg.NATSPort,
			ConfigFile: cfg.NATSConfigFile, Sync: cfg.NATSSync, Logger: cfg.Logger})
		if err != nil {
			return err
		}
		if n.nc, err = n.ns.Connect("quarry", cfg.NATSOptions...); err != nil {
			return err
		}
	} else {
		opts := append([]nats.Option{nats.Name("quarry"), nats.MaxReconnects(-1)}, cfg.NATSOptions...)
		if n.nc, err = nats.Connect(cfg.NATSURL, opts...); err != nil {
			return settingErr(SettingNATSURL, "cannot connect to NATS at %s: %v", cfg.NATSURL, err)
		}
	}
	js, err := jetstream.New(n.nc)
	if err != nil {
		return err
	}
	if n.store, err = meta.Open(ctx, js, meta.Options{Replicas: cfg.Replicas, Logger: cfg.Logger, Bind: cfg.BindResources, Wait: cfg.BindResources}); err != nil {
		return err
	}
	if n.client, err = client.New(ctx, n.nc, client.Options{Propagate: tracenats.Propagate}); err != nil {
		return err
	}
	if n.ns != nil && cfg.MinFreeDisk > 0 {
		w := &diskWatch{n: n, dirs: watchedDirs(n.ns.NATS().StoreDir(), cfg.DataDir)}
		n.run(tierIndexer, "disk-watch", w.run) // the last tier stopped: until the end
	}
	if cfg.Indexer != nil || cfg.Broker != nil {
		// The control API (creating an index) beside either role, so
		// an index can be made as soon as one of them runs; stopped
		// with the last tier.
		n.control = control.New(n.nc, n.store, cfg.Logger)
		n.run(tierIndexer, "control", n.control.Run)
	}
	lend := cfg.Indexer != nil && cfg.Searcher != nil && !cfg.SeparateReplicas
	if cfg.Indexer != nil {
		c := *cfg.Indexer
		if c.DataDir == "" {
			c.DataDir = filepath.Join(cfg.DataDir, "indexer")
		}
		if lend {
			// The replicas are searched: they apply updates the way
			// the searcher's would, at its freshness (the indexer's
			// own default interval, a second, is for replicas nobody
			// searches).
			sc := *cfg.Searcher
			sc.EnsureDefaults()
			c.Writes, c.MaxBatch = sc.Writes, sc.MaxBatch
			c.Serving.MaxPITs, c.Serving.ColumnBytes = sc.MaxPITs, sc.ColumnBytes
			c.Writes.ApplyInterval = cmp.Or(c.Writes.ApplyInterval, shard.DefaultApplyInterval)
		}
		c.Logger, c.Registerer = cfg.Logger, n.Metrics
		if n.Indexer, err = indexer.New(n.nc, n.store, c); err != nil {
			return err
		}
		n.run(tierIndexer, "indexer", func(ctx context.Context) error { return n.Indexer.Run(ctx) })
	}
	if cfg.Searcher != nil {
		c := *cfg.Searcher
		if c.DataDir == "" {
			c.DataDir = filepath.Join(cfg.DataDir, "searcher")
		}
		c.Logger, c.Registerer = cfg.Logger, n.Metrics
		if lend {
			c.Replicas = n.Indexer
		}
		if n.Searcher, err = searcher.New(n.nc, n.store, c); err != nil {
			return err
		}
		n.run(tierSearcher, "searcher", func(ctx context.Context) error { return n.Searcher.Run(ctx) })
	}
	if cfg.Broker != nil {
		c := *cfg.Broker
		c.Logger, c.Registerer = cfg.Logger, n.Metrics
		c.WaitForPipelines = true // WatchPipelines runs beside it, below
		if n.Broker, err = broker.New(n.nc, n.store, c); err != nil {
			return err
		}
		if n.Searcher != nil && !cfg.ShardsOverNATS {
			n.Broker.UseLocal(n.Searcher)
		}
		limits := plugins.Config{MemoryLimitPages: cfg.PluginMemoryPages, MaxInstances: cfg.TeamMaxInstances, MaxCalls: cfg.TeamMaxPluginCalls, WarmInstances: cfg.PluginWarmInstances, MaxBudget: cfg.PluginMaxBudget,
			Compile: cfg.PluginCompile, CompileTimeout: cfg.PluginCompileTimeout, Logger: cfg.Logger}
		cached := limits
		cached.CacheDir = filepath.Join(n.pluginDir(), "compiled")
		// Plugin log lines go to each team's subject, never waited for.
		logs, err := broker.NewPluginLogs(n.nc, broker.PluginLogsConfig{Rate: c.PluginLogRate, ProcessRate: c.PluginLogProcessRate, Registerer: n.Metrics, Logger: cfg.Logger})
		if err != nil {
			return fmt.Errorf("plugin logs: %w", err)
		}
		n.run(tierBroker, "plugin-logs", logs.Run)
		teams := cached
		teams.LogSink = logs
		n.plugins = plugins.NewTeams(teams) // one runtime per team
		if err := n.Metrics.Register(n.plugins.Collector()); err != nil {
			return fmt.Errorf("team plugin metrics: %w", err)
		}
		// Pipelines from the registry (quarry-pipelines), swapped in live.
		n.run(tierBroker, "pipelines", func(ctx context.Context) error { return n.Broker.WatchPipelines(ctx, n.plugins) })
		// The admin API (plugins and pipelines) runs beside the broker.
		// Validation compiles with the brokers' cache: a version it
		// validated goes live without compiling again.
		admin, err := registry.New(ctx, n.nc, n.store, registry.Config{Plugins: cached, Logger: cfg.Logger, Registerer: n.Metrics,
			GateTimeout: cfg.GateTimeout, GateWait: cfg.GateWait})
		if err != nil {
			return err
		}
		n.admin = admin
		n.run(tierBroker, "admin", func(ctx context.Context) error { return admin.Run(ctx) })
		n.run(tierBroker, "broker", func(ctx context.Context) error { return n.Broker.Run(ctx) })
	}
	if httpLn != nil {
		opts := httpapi.Options{MaxBulkBytes: cfg.MaxBulkBytes, BodyTimeout: cfg.HTTPBodyTimeout, Logger: cfg.Logger}
		if cfg.HTTPAuth {
			n.guard = httpapi.NewGuard()
			n.run(tierBroker, "http-guard", func(ctx context.Context) error { return n.guard.Run(ctx, n.store) })
			opts.Guard = n.guard
		}
		// Connections within their caps, requests through the door
		// (Host, Origin), bodies of their routes' Content-Type.
		ln, door, err := n.httpDoor(httpLn)
		if err != nil {
			return err
		}
		opts.Door = door
		mux := http.NewServeMux()
		mux.Handle("/", httpapi.Handler(n.client, opts))
		mux.HandleFunc("GET /readyz", n.serveReady)
		// With tokens, a team reads only its own indexes' series here; the
		// --metrics listener (for the operators' network) serves them all.
		mux.Handle("GET /metrics", httpapi.GuardedMetrics(n.Metrics, cfg.Logger, opts.Guard))
		n.http = &http.Server{Handler: door.Wrap(httpapi.Strict(mux)), ReadHeaderTimeout: 10 * time.Second, IdleTimeout: cfg.HTTPIdleTimeout}
		n.run(tierBroker, "http", func(context.Context) error {
			if err := n.http.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
				return err
			}
			return nil
		})
	}
	return nil
}

// pluginDir keeps compiled and built plugins.
func (n *Node) pluginDir() string {
	if n.cfg.PluginCacheDir != "" {
		return n.cfg.PluginCacheDir
	}
	return filepath.Join(n.cfg.DataDir, "plugins")
}

// role names the roles a node runs, for the data directory's lock.
func (c *Config) role() string {
	var roles []string
	if c.NATSURL == "" {
		roles = append(roles, "nats")
	}
	for _, r := range []struct {
		on   bool
		name string
	}{{c.Indexer != nil, "indexer"}, {c.Searcher != nil, "searcher"}, {c.Broker != nil, "broker"}} {
		if r.on {
			roles = append(roles, r.name)
		}
	}
	return strings.Join(roles, "+")
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
	if n.admin != nil {
		chans = append(chans, n.admin.Ready())
	}
	if n.control != nil {
		chans = append(chans, n.control.Ready())
	}
	if n.guard != nil {
		chans = append(chans, n.guard.Ready())
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
	n.lock.release()
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
	n.holdMu.Lock()
	for h := range n.holds {
		why = append(why, *h)
	}
	n.holdMu.Unlock()
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
	if n.guard != nil {
		pending("the HTTP API is loading its tokens", n.guard.Ready())
	}
	if n.admin != nil {
		pending("the admin service is starting", n.admin.Ready())
	}
	if n.control != nil {
		pending("the control API is starting", n.control.Ready())
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

// Hold keeps the node not ready (GET /readyz answers 503 with reason)
// until release is called: for work a command does after start-up that
// traffic should wait for, such as loading the demo index.
func (n *Node) Hold(reason string) (release func()) {
	h := &reason
	n.holdMu.Lock()
	if n.holds == nil {
		n.holds = map[*string]struct{}{}
	}
	n.holds[h] = struct{}{}
	n.holdMu.Unlock()
	return func() {
		n.holdMu.Lock()
		delete(n.holds, h)
		n.holdMu.Unlock()
	}
}

// serveReady answers GET /readyz: 200 "ready", or 503 and why not.
func (n *Node) serveReady(w http.ResponseWriter, _ *http.Request) {
	if err := n.Ready(); err != nil {
		http.Error(w, err.Error(), http.StatusServiceUnavailable)
		return
	}
	io.WriteString(w, "ready\n")
}
