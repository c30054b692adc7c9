package httpapi

import (
	"log/slog"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Metrics serves the metrics g gathers in the Prometheus text format (GET
// /metrics). A collector that fails is logged and left out; the rest are
// served. A client that hangs up before the page is sent is no error of
// the server's: it is logged at debug level, once.
func Metrics(g prometheus.Gatherer, log *slog.Logger) http.Handler {
	h := promhttp.HandlerFor(g, promhttp.HandlerOpts{
		ErrorLog:      slog.NewLogLogger(log.Handler(), slog.LevelError),
		ErrorHandling: promhttp.ContinueOnError,
	})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		cw := &clientWriter{ResponseWriter: w}
		h.ServeHTTP(cw, r)
		if cw.err != nil {
			log.Debug("metrics: the client went away before the page was sent", "remote", r.RemoteAddr, "err", cw.err)
		}
	})
}

// clientWriter keeps the first error writing the response (the client
// hung up) from promhttp, which would log one ERROR line for every metric
// family still to come; the writes after it are dropped.
type clientWriter struct {
	http.ResponseWriter
	err error
}

func (w *clientWriter) Write(p []byte) (int, error) {
	if w.err == nil {
		_, w.err = w.ResponseWriter.Write(p)
	}
	return len(p), nil
}

// Unwrap gives http.ResponseController the connection's own writer.
func (w *clientWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
