package server

// GET /metrics: one Prometheus registry, made by Build, with which each
// part registers its own collectors (feeds, rooms, clients' sockets, ...).

import (
	"fmt"
	"log/slog"
	"net/http"
	"strings"

	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// handleMetrics serves the registry in Prometheus's exposition formats.
func (s *Server) handleMetrics() http.Handler {
	return promhttp.HandlerFor(s.metrics, promhttp.HandlerOpts{
		ErrorLog:      promLog{s.log},
		ErrorHandling: promhttp.ContinueOnError, // one failing collector does not hide the others
	})
}

// promLog logs promhttp's errors (a collector that failed) as warnings.
type promLog struct{ log *slog.Logger }

func (l promLog) Println(v ...any) {
	l.log.Warn("metrics: " + strings.TrimSuffix(fmt.Sprintln(v...), "\n"))
}
