package node

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/pprof"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/quarrysearch/quarry/httpapi"
)

// newRegistry makes a node's metrics registry, with the Go runtime's and
// the process's collectors; the roles register their own.
func newRegistry() (*prometheus.Registry, error) {
	reg := prometheus.NewRegistry()
	for _, c := range []prometheus.Collector{collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{})} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("node: register metrics: %w", err)
		}
	}
	return reg, nil
}

// MetricsMaxConns and MetricsMaxConnsPerClient cap the connections the
// metrics listener (Config.MetricsAddr) keeps open, in all and from one
// client address; one past them is answered 503 or 429 and closed.
const (
	MetricsMaxConns          = 64
	MetricsMaxConnsPerClient = 16
)

// serveMetrics serves GET /metrics, /healthz and /readyz on a listener of
// its own at addr until the last tier stops, so a draining node can still
// be watched.
func (n *Node) serveMetrics(addr string) error {
	raw, err := listen(SettingMetricsAddr, "metrics", addr)
	if err != nil {
		return err
	}
	// Scrapers are few: a cap keeps anyone who can reach the port from
	// holding the process's descriptors (the HTTP API's are capped the
	// same way, higher).
	ln, err := httpapi.LimitListener(raw, httpapi.ConnLimits{Total: MetricsMaxConns, PerClient: MetricsMaxConnsPerClient}, n.cfg.Logger)
	if err != nil {
		raw.Close()
		return err
	}
	n.MetricsAddr, n.metrics = ln.Addr().String(), ln
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", httpapi.Metrics(n.Metrics, n.cfg.Logger))
	// Roles without the HTTP API get their health checks here too.
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "ok\n") })
	mux.HandleFunc("GET /readyz", n.serveReady)
	if n.cfg.Profiling {
		mux.HandleFunc("GET /debug/pprof/", pprof.Index)
		mux.HandleFunc("GET /debug/pprof/cmdline", pprof.Cmdline)
		mux.HandleFunc("GET /debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("GET /debug/pprof/symbol", pprof.Symbol)
		mux.HandleFunc("GET /debug/pprof/trace", pprof.Trace)
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: n.cfg.HTTPIdleTimeout}
	n.run(tierIndexer, "metrics", func(ctx context.Context) error {
		stop := context.AfterFunc(ctx, func() { srv.Close() })
		defer stop()
		if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
			return err
		}
		return nil
	})
	return nil
}
