package server

import (
	"fmt"
	"net/http"

	"github.com/syncloop/syncloop/server/httperr"
)

// The refusals this package answers itself (a form's body, a method, a
// panic), as httperr.Errors: the parts answer their own routes' errors
// the same way. These answer requests the site's own pages do not make,
// so they are plain text (httperr.Text), with no page around them.

func errFormType(ct string) *httperr.Error {
	return &httperr.Error{Status: http.StatusUnsupportedMediaType,
		Heading: fmt.Sprintf("this form is sent as application/x-www-form-urlencoded, not %s", ct),
		Advice:  "Send it from the site's own page, or as a URL-encoded form."}
}

func errFormTooLarge(n int64) *httperr.Error {
	return &httperr.Error{Status: http.StatusRequestEntityTooLarge,
		Heading: fmt.Sprintf("this form takes at most %d bytes", n),
		Advice:  "Send a shorter form."}
}

func errBadForm(err error) *httperr.Error {
	return &httperr.Error{Status: http.StatusBadRequest, Heading: "bad form: " + err.Error(),
		Advice: "Send it from the site's own page, or as a URL-encoded form."}
}

var (
	errMethod = &httperr.Error{Status: http.StatusMethodNotAllowed, Heading: "method not allowed",
		Advice: "The routes and their methods are listed in routes.go; a page is fetched with GET."}
	errInternal = &httperr.Error{Status: http.StatusInternalServerError, Heading: "internal error",
		Advice: "Try again; if it happens again, the server's log says why (a panic, with its stack)."}
)
