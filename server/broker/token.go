package broker

// The embedded server's client token: what another replica presents to
// join it (serve --nats-listen on the first, --nats on the others).

import (
	"crypto/rand"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
)

// listenToken is the token the embedded server listening on host
// requires: read from file, or made and written there (mode 0600) when
// the file does not exist. With no file, a token of its own, which no
// other host can learn: then only a loopback host is taken.
func listenToken(host, file string) (string, error) {
	if file == "" {
		if !loopback(host) {
			return "", fmt.Errorf("--nats-listen on %s takes replicas from other hosts, and they need its token: give a --data-dir (the token is written there) or --nats-token-file", host)
		}
		return rand.Text(), nil
	}
	token, err := readToken(file)
	if !errors.Is(err, fs.ErrNotExist) {
		return token, err
	}
	if err := os.MkdirAll(filepath.Dir(file), 0o700); err != nil {
		return "", fmt.Errorf("nats token: %w", err)
	}
	token = rand.Text()
	f, err := os.OpenFile(file, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return "", fmt.Errorf("nats token: %w", err)
	}
	_, err = f.WriteString(token + "\n")
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(file)
		return "", fmt.Errorf("nats token: %w", err)
	}
	return token, nil
}

// readToken reads a token file, which only its owner may read.
func readToken(file string) (string, error) {
	fi, err := os.Stat(file)
	if err != nil {
		return "", fmt.Errorf("nats token: %w", err)
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return "", fmt.Errorf("nats token %s: mode %v lets others read it: chmod 600 %s", file, fi.Mode().Perm(), file)
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return "", fmt.Errorf("nats token: %w", err)
	}
	token := strings.TrimSpace(string(b))
	if token == "" || strings.ContainsAny(token, " \t\r\n@/:") {
		return "", fmt.Errorf("nats token %s: want one word, without @, / or a colon", file)
	}
	return token, nil
}

// loopback reports whether host names this machine only.
func loopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
