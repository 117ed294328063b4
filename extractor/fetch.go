package extractor

import (
	"context"
	"errors"
)

// Load: see api.go. (stub, replaced by the fetch work)
func Load(ctx context.Context, opts Options) (*Reading, error) {
	return nil, errors.New("extractor.Load: not implemented yet")
}
