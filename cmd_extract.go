package main

import (
	"context"
	"errors"
)

func runExtract(ctx context.Context, s stdio, args []string) error {
	return errors.New("extract: not implemented yet")
}
