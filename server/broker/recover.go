package broker

// A disk that fills and frees. When a write of the embedded server's store
// fails (the disk is full), the stream or bucket it was for stops taking
// writes for good: JetStream keeps the error and answers none of its
// publishes again, though space frees a second later. The broker hears of
// that error from the server's log and says so (StoreProblem: /healthz,
// the note writes, new feeds); once the disk has room again it says that
// the process must restart (NeedsRestart), which opens every stream and
// bucket anew from its files: what was acknowledged is there, and writes
// are taken again. syncloop serve then exits non-zero, for its supervisor
// (systemd's Restart=, a container's restart policy) to start it again.
//
// Restarting only JetStream in the process (Server.ShutdownJetStream, then
// EnableJetStream) brings the stores back too, but nats-server v2.15.3
// races there with the API requests in flight (setJetStreamExportSubs
// against apiDispatch), so it is not done.

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"
)

// recoverEvery is how often a broker whose store failed checks for space.
const recoverEvery = time.Second

// recoverFree is the least free space the store needs before the process
// is restarted (besides Config.MinFree: what it needs to start).
const recoverFree = 16 << 20

// StoreProblem says why the embedded server's store cannot be written
// now, "" when it can (or the broker is a cluster's).
func (b *Broker) StoreProblem() string {
	b.faultMu.Lock()
	defer b.faultMu.Unlock()
	return b.fault
}

// storeFailed records that a store write failed (msg: the server's words)
// and starts waiting for space, once.
func (b *Broker) storeFailed(msg string) {
	b.faultMu.Lock()
	defer b.faultMu.Unlock()
	if b.fault != "" || b.recoverCtx == nil {
		return
	}
	b.fault = fmt.Sprintf("the disk under %s could not be written (%s); syncloop restarts to store them again once space is freed there", b.storeDir, msg)
	b.log.Error("nats: storage write failed: notes and feeds are not stored until space is freed", "dir", b.storeDir, "err", msg)
	b.recoverWG.Add(1)
	go func() { // owned: stopped by close (recoverStop)
		defer b.recoverWG.Done()
		b.awaitSpace()
	}()
}

// awaitSpace waits until the store has room again, and then says that
// the process must restart.
func (b *Broker) awaitSpace() {
	t := time.NewTicker(recoverEvery)
	defer t.Stop()
	for {
		select {
		case <-b.recoverCtx.Done():
			return
		case <-t.C:
		}
		if CheckSpace(b.storeDir, max(b.minFree, recoverFree), "a restart of syncloop") != nil {
			continue
		}
		b.faultMu.Lock()
		b.fault = fmt.Sprintf("the disk under %s was full and has space again; syncloop restarts to take writes again", b.storeDir)
		b.faultMu.Unlock()
		b.log.Error("nats: storage has space again; its streams take writes only once opened anew: restart syncloop", "dir", b.storeDir)
		close(b.restart)
		return
	}
}

// NeedsRestart is closed when the store failed a write and its disk has
// space again: the streams take writes once the process restarts.
func (b *Broker) NeedsRestart() <-chan struct{} { return b.restart }

// serverLog is the embedded server's logger: quiet, but for its errors,
// which are logged, and its store's write errors, which the broker acts on.
type serverLog struct {
	b   *Broker
	log *slog.Logger
}

func (l serverLog) Errorf(format string, v ...any) {
	msg := fmt.Sprintf(format, v...)
	l.log.Warn("nats: " + msg)
	// A filestore's and a stream's "critical write error"s keep the store
	// from writes until it is opened anew.
	if strings.Contains(strings.ToLower(msg), "critical write error") || strings.Contains(msg, "no space left on device") {
		l.b.storeFailed(msg)
	}
}
func (l serverLog) Fatalf(format string, v ...any) { l.log.Error("nats: " + fmt.Sprintf(format, v...)) }
func (l serverLog) Noticef(string, ...any)         {}
func (l serverLog) Warnf(string, ...any)           {}
func (l serverLog) Debugf(string, ...any)          {}
func (l serverLog) Tracef(string, ...any)          {}

// watchStore makes b act on its embedded server's store errors.
func (b *Broker) watchStore(log *slog.Logger) {
	b.log = log
	b.recoverCtx, b.recoverStop = context.WithCancel(context.Background())
	b.restart = make(chan struct{})
	b.ns.SetLoggerV2(serverLog{b: b, log: log}, false, false, false)
}
