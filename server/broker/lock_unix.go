//go:build unix

package broker

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// lockDir takes an exclusive lock on dir for this process: two embedded
// NATS servers on one directory would corrupt each other's streams.
func lockDir(dir string) (func(), error) {
	name := filepath.Join(dir, "syncloop.lock")
	f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("nats: storage lock: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("data dir %s is in use by another syncloop serve: stop it, give this one another --data-dir, or share state through a NATS cluster (--nats-listen on the first, --nats on the others)", filepath.Dir(dir))
		}
		return nil, fmt.Errorf("nats: storage lock: %w", err)
	}
	return func() { f.Close() }, nil
}
