package server

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"runtime/debug"
	"time"

	"github.com/syncloop/syncloop/server/httperr"
	"github.com/syncloop/syncloop/server/redact"
)

// csp allows nothing but this origin: no inline script or style, no
// plugins, no framing. The pages are built to need nothing more.
const csp = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'"

// The headers every response carries, made once and shared (a Header.Add
// to one copies the slice, whose capacity is its length); the keys are
// canonical already.
var (
	hPolicy   = []string{csp}
	hNosniff  = []string{"nosniff"}
	hReferrer = []string{"no-referrer"}
	hFrame    = []string{"DENY"}
	hOpener   = []string{"same-origin"}
)

// setSecurityHeaders sets the headers every response carries on h.
func setSecurityHeaders(h http.Header) {
	h["Content-Security-Policy"] = hPolicy
	h["X-Content-Type-Options"] = hNosniff
	h["Referrer-Policy"] = hReferrer
	h["X-Frame-Options"] = hFrame
	h["Cross-Origin-Opener-Policy"] = hOpener
}

// securityHeaders sets the headers every response carries.
func securityHeaders(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		setSecurityHeaders(w.Header())
		next.ServeHTTP(w, r)
	})
}

// statusWriter remembers the status written, and the cause of an error
// answered (httperr.Causer), for the access log. It keeps Unwrap so
// http.ResponseController (websockets, flushing) still works.
type statusWriter struct {
	http.ResponseWriter
	status int
	bytes  int
	cause  error
}

// SetCause keeps the cause of the error the handler answers.
func (w *statusWriter) SetCause(err error) { w.cause = err }

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
// at warn and error, with the cause of an error the handler answered
// (httperr: "err"); a panic becomes a 500, not a dead connection.
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
					log.Error("panic", "method", r.Method, "path", redact.String(r.URL.Path), "panic", v, "stack", string(debug.Stack()))
					if sw.status == 0 {
						httperr.Text(sw, errInternal)
					}
				}
				level := slog.LevelDebug
				if sw.status >= 500 {
					level = slog.LevelWarn
				}
				// Asked first: the record's values cost allocations, and the
				// debug level is off in production.
				if !log.Enabled(r.Context(), level) {
					return
				}
				// The path names a room, which is its viewer link: masked.
				attrs := []any{"method", r.Method, "path", redact.String(r.URL.Path),
					"status", sw.status, "bytes", sw.bytes, "took", time.Since(start)}
				if sw.cause != nil {
					attrs = append(attrs, "err", sw.cause)
				}
				log.Log(r.Context(), level, "request", attrs...)
			}()
			next.ServeHTTP(sw, r)
		})
	}
}

// Request bodies. Every request's body is bounded: limitBodies cuts every
// body off at noBody bytes, and the routes that take one raise that to
// what they need in routes.go (formBody, jsonBody). A body over its limit
// ends the read with an error the handler answers (413), and net/http
// closes the connection rather than drain the rest. Nothing is ever
// spooled to disk: multipart bodies, which net/http writes to temp files
// past 32 MB, are refused where a form is taken.

// noBody is what a route that takes no body reads of one: nothing.
const noBody = 0

// originalBody is the context key under which limitBodies keeps the body
// it wrapped, so a route can set its own limit over the original.
type originalBody struct{}

// limitBodies bounds every request body at noBody bytes.
// A request without a body (net/http gives it http.NoBody) has nothing to
// bound, and goes on as it is: the copy of the request a context value
// costs was most of what a cached page's request allocated.
func limitBodies(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Body == http.NoBody {
			next.ServeHTTP(w, r)
			return
		}
		body := r.Body
		r = r.WithContext(context.WithValue(r.Context(), originalBody{}, body))
		r.Body = http.MaxBytesReader(w, body, noBody)
		next.ServeHTTP(w, r)
	})
}

// withBodyLimit is r with its body bounded at n bytes instead.
func withBodyLimit(w http.ResponseWriter, r *http.Request, n int64) {
	body, ok := r.Context().Value(originalBody{}).(io.ReadCloser)
	if !ok {
		body = r.Body
	}
	r.Body = http.MaxBytesReader(w, body, n)
}

// jsonBody lets the route read a body of up to n bytes (its handler
// decodes it and may bound it further).
func jsonBody(n int64) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			withBodyLimit(w, r, n)
			next.ServeHTTP(w, r)
		})
	}
}

// formBody parses a URL-encoded form of up to n bytes before the route's
// handler runs, which then finds it in r.PostForm. Any other kind of body
// is refused (415), multipart above all: net/http would write its files
// to the temp dir.
func formBody(n int64) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
			if ct != "" && ct != "application/x-www-form-urlencoded" {
				w.Header().Set("Connection", "close") // do not read what was sent
				httperr.Text(w, errFormType(ct))
				return
			}
			withBodyLimit(w, r, n)
			if err := r.ParseForm(); err != nil {
				if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
					httperr.Text(w, errFormTooLarge(n))
					return
				}
				httperr.Text(w, errBadForm(err))
				return
			}
			next.ServeHTTP(w, r)
		})
	}
}

// streamBody lets the route read a body of any length, for as long as it
// lasts: its handler holds a line of it at a time, each bounded
// (feeds.HandleJournal), and sets its own read deadlines.
func streamBody(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if body, ok := r.Context().Value(originalBody{}).(io.ReadCloser); ok {
			r.Body = body
		}
		next.ServeHTTP(w, r)
	})
}
