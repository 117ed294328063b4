package annotations

import (
	"errors"
	"fmt"
	"os"
	"time"

	natsserver "github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Embedded starts a NATS server with JetStream inside this process, with no
// port, storing JetStream's files in dir ("" keeps them in a temporary
// directory removed by stop), and returns an in-process connection to it.
// (The server gives the Store its broker's JetStream; this is for the
// package's own tests.)
func Embedded(dir string) (js jetstream.JetStream, stop func(), err error) {
	memory := dir == ""
	if memory {
		if dir, err = os.MkdirTemp("", "syncloop-nats-*"); err != nil {
			return nil, nil, err
		}
	}
	ns, err := natsserver.NewServer(&natsserver.Options{
		ServerName: "syncloop",
		DontListen: true,
		JetStream:  true,
		StoreDir:   dir,
		NoSigs:     true,
		NoLog:      true,
	})
	if err != nil {
		return nil, nil, fmt.Errorf("nats: %w", err)
	}
	ns.Start()
	if !ns.ReadyForConnections(10 * time.Second) {
		ns.Shutdown()
		return nil, nil, errors.New("nats: the embedded server did not start in 10s")
	}
	nc, err := nats.Connect("", nats.InProcessServer(ns), nats.Name("syncloop annotations"))
	if err != nil {
		ns.Shutdown()
		return nil, nil, fmt.Errorf("nats: connect in-process: %w", err)
	}
	if js, err = jetstream.New(nc); err != nil {
		nc.Close()
		ns.Shutdown()
		return nil, nil, err
	}
	return js, func() {
		nc.Close()
		ns.Shutdown()
		ns.WaitForShutdown()
		if memory {
			os.RemoveAll(dir)
		}
	}, nil
}
