package main

import (
	"context"
	"errors"
)

func runRelay(ctx context.Context, s stdio, args []string) error {
	return errors.New("relay: not implemented yet")
}
