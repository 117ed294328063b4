// Package natstest is how the tests of the server and its packages share
// NATS as replicas do.
package natstest

import (
	"testing"

	"github.com/syncloop/syncloop/server/broker"
)

// Pair opens two brokers on one NATS, as two replicas share one: the first
// embeds the server (JetStream's files under dir; "" keeps them in memory)
// and listens on loopback, the second connects to it over TCP. Both close
// when the test ends.
func Pair(t testing.TB, dir string) (first, second *broker.Broker) {
	t.Helper()
	first, err := broker.Open(t.Context(), broker.Config{Dir: dir, Listen: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(first.Close)
	second, err = broker.Open(t.Context(), broker.Config{URLs: []string{first.ClientURL()}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(second.Close)
	return first, second
}
