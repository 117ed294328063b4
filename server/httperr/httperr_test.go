package httperr

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
)

// causeKeeper is the access log's writer, as far as Text and JSON see it.
type causeKeeper struct {
	http.ResponseWriter
	cause error
}

func (c *causeKeeper) SetCause(err error)          { c.cause = err }
func (c *causeKeeper) Unwrap() http.ResponseWriter { return c.ResponseWriter }

// layer is a middleware's writer around it, reached through Unwrap.
type layer struct{ http.ResponseWriter }

func (l layer) Unwrap() http.ResponseWriter { return l.ResponseWriter }

// TestAnswers: an Error is answered with its status and its text (heading,
// message, advice, a line each), as text or as JSON; its cause is kept for
// the log and not shown; any other error is a 500 that shows nothing of it.
func TestAnswers(t *testing.T) {
	cause := errors.New("nats: timeout on KV get rooms.abc")
	full := &Error{Status: http.StatusInsufficientStorage, Heading: "this server's disk is nearly full",
		Message: "12 MB free", Advice: "Retry once space frees.", RetryAfter: 60, Err: cause}
	tests := []struct {
		name       string
		err        error
		answer     func(http.ResponseWriter, *http.Request, error)
		status     int
		body, ct   string
		retryAfter string
		cause      error
	}{
		{"text", full, AsText, 507, "this server's disk is nearly full\n12 MB free\nRetry once space frees.\n", "text/plain; charset=utf-8", "60", cause},
		{"JSON", full, AsJSON, 507, `{"error":"this server's disk is nearly full\n12 MB free\nRetry once space frees."}` + "\n", "application/json", "60", cause},
		{"a heading alone", New(http.StatusNotFound, "no such feed: a feed exists once a relay sends to it"), AsText, 404,
			"no such feed: a feed exists once a relay sends to it\n", "text/plain; charset=utf-8", "", nil},
		{"wrapped", errors.Join(New(http.StatusGone, "this room expired")), AsText, 410, "this room expired\n", "text/plain; charset=utf-8", "", nil},
		{"not an Error", cause, AsText, 500, "internal error\nTry again; if it happens again, the server's log says why.\n", "text/plain; charset=utf-8", "", cause},
	}
	for _, tc := range tests {
		rec := httptest.NewRecorder()
		keep := &causeKeeper{ResponseWriter: rec}
		h := Serve(func(http.ResponseWriter, *http.Request) error { return tc.err }, tc.answer)
		h.ServeHTTP(layer{keep}, httptest.NewRequest("GET", "/", nil))
		if rec.Code != tc.status || rec.Body.String() != tc.body || rec.Header().Get("Content-Type") != tc.ct {
			t.Errorf("%s: %d %q %q, want %d %q %q", tc.name, rec.Code, rec.Body, rec.Header().Get("Content-Type"), tc.status, tc.body, tc.ct)
		}
		if got := rec.Header().Get("Retry-After"); got != tc.retryAfter {
			t.Errorf("%s: Retry-After %q, want %q", tc.name, got, tc.retryAfter)
		}
		if keep.cause != tc.cause {
			t.Errorf("%s: the cause kept for the log is %v, want %v", tc.name, keep.cause, tc.cause)
		}
		var m map[string]string
		if tc.ct == "application/json" && (json.Unmarshal(rec.Body.Bytes(), &m) != nil || m["error"] == "") {
			t.Errorf("%s: not JSON with an error: %q", tc.name, rec.Body)
		}
	}
	ok := Serve(func(w http.ResponseWriter, _ *http.Request) error { w.Write([]byte("fine")); return nil }, AsText)
	rec := httptest.NewRecorder()
	ok.ServeHTTP(rec, httptest.NewRequest("GET", "/", nil))
	if rec.Code != 200 || rec.Body.String() != "fine" {
		t.Errorf("a handler that returns nil: %d %q", rec.Code, rec.Body)
	}
}
