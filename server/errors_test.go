package server

import (
	"bytes"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/syncloop/syncloop/server/httperr"
)

// TestAccessLogKeepsTheCause: an error a handler answers shows its reader
// what went wrong and what to do, and the access log, not the reader,
// gets its cause.
func TestAccessLogKeepsTheCause(t *testing.T) {
	var log bytes.Buffer
	cause := errors.New("nats: no responders available for request")
	h := logRequests(slog.New(slog.NewTextHandler(&log, nil)))(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		httperr.Text(w, &httperr.Error{Status: http.StatusServiceUnavailable, Heading: "could not read the room", Advice: "Try again in a moment.", Err: cause})
	}))
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/rooms/x", nil))
	if rec.Code != 503 || rec.Body.String() != "could not read the room\nTry again in a moment.\n" {
		t.Errorf("answer: %d %q", rec.Code, rec.Body)
	}
	if !strings.Contains(log.String(), `err="nats: no responders available for request"`) || !strings.Contains(log.String(), "status=503") {
		t.Errorf("the access log has not the cause:\n%s", log.String())
	}
}
