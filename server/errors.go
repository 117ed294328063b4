package server

import (
	"fmt"
	"net/http"
)

// serverError is how the server's own refusals reach a reader (after
// pkgsite's serverError): the status, what went wrong, and what to do
// next. The parts answer their own routes' errors; what this package
// answers itself (a form's body, a method, a panic) goes through
// serveError and nowhere else.
type serverError struct {
	status  int
	message string // what went wrong
	advice  string // what to do next
}

func (e *serverError) Error() string { return e.message }

// The server's refusals, by what the request did.
func errFormType(ct string) *serverError {
	return &serverError{http.StatusUnsupportedMediaType,
		fmt.Sprintf("this form is sent as application/x-www-form-urlencoded, not %s", ct),
		"Send it from the site's own page, or as a URL-encoded form."}
}

func errFormTooLarge(n int64) *serverError {
	return &serverError{http.StatusRequestEntityTooLarge,
		fmt.Sprintf("this form takes at most %d bytes", n),
		"Send a shorter form."}
}

func errBadForm(err error) *serverError {
	return &serverError{http.StatusBadRequest, "bad form: " + err.Error(),
		"Send it from the site's own page, or as a URL-encoded form."}
}

var (
	errMethod = &serverError{http.StatusMethodNotAllowed, "method not allowed",
		"The routes and their methods are listed in routes.go; a page is fetched with GET."}
	errInternal = &serverError{http.StatusInternalServerError, "internal error",
		"Try again; if it happens again, the server's log says why (a panic, with its stack)."}
)

// serveError answers with e as plain text: what went wrong, then what to
// do next. These are answers to requests the site's own pages do not
// make, so they need no page around them.
func serveError(w http.ResponseWriter, e *serverError) {
	http.Error(w, e.message+"\n"+e.advice, e.status)
}
