package server

import (
	"log/slog"
	"net/http"
	"runtime/debug"
	"time"
)

// csp allows nothing but this origin: no inline script or style, no
// plugins, no framing. The pages are built to need nothing more.
const csp = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'"

// securityHeaders sets the headers every response carries.
func securityHeaders(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", csp)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Cross-Origin-Opener-Policy", "same-origin")
		next.ServeHTTP(w, r)
	})
}

// statusWriter remembers the status written, for the access log. It keeps
// Unwrap so http.ResponseController (websockets, flushing) still works.
type statusWriter struct {
	http.ResponseWriter
	status int
	bytes  int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	n, err := w.ResponseWriter.Write(b)
	w.bytes += n
	return n, err
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// logRequests logs each request at debug level, and failures (5xx, panics)
// at warn and error; a panic becomes a 500, not a dead connection.
func logRequests(log *slog.Logger) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			start := time.Now()
			sw := &statusWriter{ResponseWriter: w}
			defer func() {
				if v := recover(); v != nil {
					if v == http.ErrAbortHandler {
						panic(v)
					}
					log.Error("panic", "method", r.Method, "path", r.URL.Path, "panic", v, "stack", string(debug.Stack()))
					if sw.status == 0 {
						http.Error(sw, "internal error", http.StatusInternalServerError)
					}
				}
				level := slog.LevelDebug
				if sw.status >= 500 {
					level = slog.LevelWarn
				}
				log.Log(r.Context(), level, "request", "method", r.Method, "path", r.URL.Path,
					"status", sw.status, "bytes", sw.bytes, "took", time.Since(start))
			}()
			next.ServeHTTP(sw, r)
		})
	}
}
