package extractor

import (
	"errors"
	"io/fs"
)

// Extract: see api.go. (stub, replaced by the parse work)
func Extract(fsys fs.FS, tag string, symbols []string) (*Reading, error) {
	return nil, errors.New("extractor.Extract: not implemented yet")
}
