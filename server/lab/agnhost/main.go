// Command agnhost is the lab's stand-in for the image the course's exercise runs,
// registry.k8s.io/e2e-test-images/agnhost:2.47, which cannot be pulled on the lab's
// machines: it knows one of the real agnhost's subcommands, `netexec --http-port=N`,
// an HTTP server answering / (the time), /hostname, /echo?msg= and /healthz. lab.sh
// builds it static (CGO_ENABLED=0) and packs it under the real image's name, with
// /agnhost as the entrypoint, so the exercise's `kubectl run` runs it as written.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"
)

func main() {
	if err := run(os.Args[1:], os.Stderr); err != nil {
		log.Print(err)
		os.Exit(2)
	}
}

// run runs a subcommand; only netexec is known.
func run(args []string, stderr io.Writer) error {
	if len(args) == 0 || args[0] != "netexec" {
		return errors.New("usage: agnhost netexec [--http-port=8080] (the lab's agnhost knows only netexec)")
	}
	fs := flag.NewFlagSet("netexec", flag.ContinueOnError)
	fs.SetOutput(stderr)
	port := fs.Int("http-port", 8080, "the HTTP port to listen on")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	ln, err := net.Listen("tcp", ":"+strconv.Itoa(*port))
	if err != nil {
		return fmt.Errorf("netexec: %w (is another process on port %d?)", err, *port)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	return serve(ctx, ln)
}

// serve answers netexec's requests on ln until ctx ends.
func serve(ctx context.Context, ln net.Listener) error {
	srv := &http.Server{Handler: handler(), ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(sctx) //nolint:errcheck // the process exits after
	}()
	log.Printf("netexec: serving HTTP on %s", ln.Addr())
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

func handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "NOW: %s", time.Now().UTC().Format(time.RFC3339Nano))
	})
	mux.HandleFunc("/hostname", func(w http.ResponseWriter, r *http.Request) {
		h, err := os.Hostname()
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		io.WriteString(w, h) //nolint:errcheck // a client gone is no error of ours
	})
	mux.HandleFunc("/echo", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		io.WriteString(w, r.URL.Query().Get("msg")) //nolint:errcheck // as above
	})
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "ok") //nolint:errcheck // as above
	})
	return mux
}
