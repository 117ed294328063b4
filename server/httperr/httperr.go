// Package httperr is how every handler of the site answers a request it
// refuses or cannot serve (after pkgsite's serverError): one Error value
// carries the status, what the reader is told went wrong, what to do
// next, and the cause, which is logged with the request and never shown.
// A handler returns one (Handler), or writes one where it stands (Text,
// JSON, or the site's page: site.Site.Error); each says the same thing in
// the form its route answers in.
package httperr

import (
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
)

// Error is a refusal or a failure, as the reader is told it.
type Error struct {
	Status int
	// Heading is what went wrong, as the reader reads it: a page's
	// heading, a plain answer's first line. It may say what to do next
	// itself ("no such feed: a feed exists once a relay sends to it").
	Heading string
	Message string // more of what went wrong or is happening; "" for none
	Advice  string // what to do next; "" when Heading says it
	// RetryAfter, when positive, is sent as Retry-After (seconds).
	RetryAfter int
	// Err is the cause: logged with the request (Cause), never shown.
	Err error
}

// New is the Error of status whose text, heading and advice in one, is
// heading.
func New(status int, heading string) *Error { return &Error{Status: status, Heading: heading} }

// Error is the heading, and the cause when there is one.
func (e *Error) Error() string {
	if e.Err != nil {
		return e.Heading + ": " + e.Err.Error()
	}
	return e.Heading
}

// Unwrap is the cause.
func (e *Error) Unwrap() error { return e.Err }

// Text is what a plain answer's body says: the heading, the message and
// the advice, a line each.
func (e *Error) Text() string {
	var parts []string
	for _, s := range []string{e.Heading, e.Message, e.Advice} {
		if s != "" {
			parts = append(parts, s)
		}
	}
	return strings.Join(parts, "\n")
}

// Internal is what a reader is told of an error that is not an *Error:
// nothing of it (it is logged).
func Internal(cause error) *Error {
	return &Error{Status: http.StatusInternalServerError, Heading: "internal error",
		Advice: "Try again; if it happens again, the server's log says why.", Err: cause}
}

// As is err as an *Error: itself, or Internal(err).
func As(err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	return Internal(err)
}

// Causer is a ResponseWriter that keeps the cause of an error answered
// through it (the access log's writer, which logs it with the request).
type Causer interface{ SetCause(error) }

// head records e's cause with w's Causer, when it has one, and sets the
// headers every form of the answer carries.
func head(w http.ResponseWriter, e *Error) {
	for u := w; u != nil; {
		if c, ok := u.(Causer); ok {
			if e.Err != nil {
				c.SetCause(e.Err)
			}
			break
		}
		uw, ok := u.(interface{ Unwrap() http.ResponseWriter })
		if !ok {
			break
		}
		u = uw.Unwrap()
	}
	if e.RetryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(e.RetryAfter))
	}
}

// Text answers err as plain text (e.Text()).
func Text(w http.ResponseWriter, err error) {
	e := As(err)
	head(w, e)
	http.Error(w, e.Text(), e.Status)
}

// JSON answers err as {"error": text}, for the routes that answer JSON.
func JSON(w http.ResponseWriter, err error) {
	e := As(err)
	head(w, e)
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(e.Status)
	json.NewEncoder(w).Encode(map[string]string{"error": e.Text()})
}

// Handler is a handler that returns what it could not do (pkgsite's
// pattern): Serve answers a returned error in the route's form.
type Handler func(w http.ResponseWriter, r *http.Request) error

// Serve is h as an http.Handler whose errors are answered by answer (Text,
// JSON, or a Page).
func Serve(h Handler, answer func(w http.ResponseWriter, r *http.Request, err error)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := h(w, r); err != nil {
			answer(w, r, err)
		}
	})
}

// AsText is Text in Serve's form.
func AsText(w http.ResponseWriter, _ *http.Request, err error) { Text(w, err) }

// AsJSON is JSON in Serve's form.
func AsJSON(w http.ResponseWriter, _ *http.Request, err error) { JSON(w, err) }

// Head records err's cause for the access log and sets its headers, for a
// writer that answers err in a form of its own (the site's page).
func Head(w http.ResponseWriter, err error) *Error {
	e := As(err)
	head(w, e)
	return e
}
