package broker

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// syncFS returns a sync of the filesystem dir is on (syncfs(2)): every
// file written there, each stream's and bucket's, in one call.
func syncFS(dir string) (sync func() error, closeFn func(), err error) {
	d, err := os.Open(dir)
	if err != nil {
		return nil, nil, fmt.Errorf("nats: storage: %w", err)
	}
	fd := int(d.Fd())
	return func() error {
		if err := unix.Syncfs(fd); err != nil {
			return fmt.Errorf("syncfs %s: %w", dir, err)
		}
		return nil
	}, func() { d.Close() }, nil
}
