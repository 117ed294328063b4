package main

import (
	"context"
	"errors"
)

func runClassify(ctx context.Context, s stdio, args []string) error {
	return errors.New("classify: not implemented yet")
}
