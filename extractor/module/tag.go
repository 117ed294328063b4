package module

import (
	"errors"
	"fmt"
	"regexp"

	"golang.org/x/mod/semver"
)

// Errors a caller can test for with errors.Is. Every error Load returns is a
// single line that says what to do next; these classify it.
var (
	// ErrInvalidTag: the tag is not vMAJOR.MINOR.PATCH[-pre]. No request was made.
	ErrInvalidTag = errors.New("invalid tag")
	// ErrUnknownTag: the module proxy does not serve the tag.
	ErrUnknownTag = errors.New("unknown tag")
	// ErrUnsupportedTag: the tag is older than MinTag, or its source has no
	// syncLoopIteration to read. Extract may return an error wrapping it.
	ErrUnsupportedTag = errors.New("unsupported tag")
	// ErrProxyUnreachable: the module proxy (or the checksum database behind
	// it) could not be reached or answered with an error.
	ErrProxyUnreachable = errors.New("module proxy unreachable")
	// ErrNoProxy: GOPROXY allows no download syncloop can do ("off", or
	// "direct", which means version control).
	ErrNoProxy = errors.New("no usable module proxy")
	// ErrChecksumMismatch: the module zip's h1: hash differs from the checksum
	// database, the module cache's .ziphash or the pinned DefaultTagHash.
	ErrChecksumMismatch = errors.New("checksum mismatch")
	// ErrNotKubernetes: Options.SourceDir is not a Kubernetes source tree.
	ErrNotKubernetes = errors.New("not a Kubernetes source tree")
)

// MinTag is the oldest tag syncloop reads.
const MinTag = "v1.20.0"

// Error is a one-line message for a person, classified by the sentinel
// errors it wraps (and carrying its cause for errors.Is/As).
type Error struct {
	msg  string
	errs []error
}

func (e *Error) Error() string   { return e.msg }
func (e *Error) Unwrap() []error { return e.errs }

// Errorf returns an error reading msg (formatted) that matches kind and,
// when non-nil, cause.
func Errorf(kind, cause error, format string, args ...any) error {
	errs := []error{kind}
	if cause != nil {
		errs = append(errs, cause)
	}
	return &Error{msg: fmt.Sprintf(format, args...), errs: errs}
}

// tagRE is the only tag shape accepted: a release or pre-release, no build
// metadata, no shorthand like v1.30.
var tagRE = regexp.MustCompile(`^v(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(-[0-9A-Za-z.-]+)?$`)

// CheckTag reports whether tag is one syncloop can read, before any request
// is made: ErrInvalidTag for a malformed tag, ErrUnsupportedTag for one
// before MinTag.
func CheckTag(tag string) error {
	if !tagRE.MatchString(tag) || !semver.IsValid(tag) {
		return Errorf(ErrInvalidTag, nil,
			"invalid tag %q: want a Kubernetes release tag like %s (vMAJOR.MINOR.PATCH[-pre])", tag, DefaultTag)
	}
	if semver.Compare(tag, MinTag) < 0 {
		return Errorf(ErrUnsupportedTag, nil,
			"tag %s: a tag before %s is not supported; use %s or later (the default is %s)", tag, MinTag, MinTag, DefaultTag)
	}
	return nil
}

func semverLess(a, b string) bool { return semver.Compare(a, b) < 0 }
