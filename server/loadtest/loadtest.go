// Package loadtest drives running syncloop servers on loopback the way a
// class would: M feeds, each fed by a relay-like ingest client at L lines/s
// and read by N browser-like websocket clients, for a bounded time. Given
// several replicas of one cluster, feeds' relays and each feed's readers
// are spread over them, as a load balancer would. It
// measures what a reader sees (ingest-send → browser-receive latency, lines
// delivered, skipped by the server's markers, lost, duplicated) and what the
// server costs (RSS and CPU of its process, read from /proc).
//
// Every line carries "lt=RUN:SEQ:SENTNS": the run's id (so history from an
// earlier run on the same server is ignored), its number in its feed, and
// the time it was sent in Unix nanoseconds, so a reader needs no clock but
// the load tester's own.
package loadtest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"

	"github.com/syncloop/syncloop/extractor"
	"github.com/syncloop/syncloop/server/jsonstr"
	"github.com/syncloop/syncloop/server/relay"
)

// Options says what load to apply to which server.
type Options struct {
	Servers  []string      // base URLs, http://127.0.0.1:PORT (replicas of one cluster); only loopback hosts are accepted
	Token    string        // the server's ingest token
	Rooms    int           // feeds (one per room, until rooms exist)
	Readers  int           // browser clients per feed
	Rate     int           // lines per second sent to each feed
	Duration time.Duration // how long lines are sent
	Drain    time.Duration // how long readers may take to catch up after the last ack; 10 s
	PIDs     []int         // the server's processes (its replicas, its NATS), measured through /proc
	Tag      string        // the tag whose log sites lines are written at; extractor.DefaultTag
	Journal  bool          // send each line wrapped in a journald JSON entry, as journalctl -o json writes it
	Sites    []extractor.LogSite
	Log      io.Writer // progress; nil: none

	// AfterSend, when set, is called once the last line is acknowledged,
	// before readers drain: when the server holds the most (a heap profile).
	AfterSend func()
}

// Result is what one run measured.
type Result struct {
	Rooms, Readers, Rate int
	Journal              bool          // lines were sent as journald JSON entries
	Duration             time.Duration // how long lines were actually being sent

	Sent     int64 // lines sent, all feeds
	Acked    int64 // lines the server acknowledged
	Expected int64 // Sent × readers: deliveries if nothing were dropped

	Delivered  int64 // distinct lines received, all readers
	Messages   int64 // websocket messages readers received (a message carries one line or more)
	Skipped    int64 // lines the server said it skipped ({"skipped":N})
	Lost       int64 // Expected − Delivered − Skipped: neither received nor reported
	LostKeptUp int64 // of Lost, by readers that got no skipped marker
	Duplicated int64 // lines received more than once by one reader
	KeptUp     int   // readers with no skipped marker and no dropped connection
	Dropped    int   // reader connections that ended before the run did

	P50, P99, Max time.Duration // ingest-send → browser-receive

	RSSPeak, RSSEnd int64         // server VmRSS in bytes, its processes' summed; 0 when not measured
	ServerCPU       time.Duration // server user+system CPU while lines were sent, its processes' summed
	Procs           []ProcResult  // each process measured
	ClientCPU       time.Duration // this process's user+system CPU over the same time
	Sites           int           // distinct log sites lines were written at
}

// ProcResult is what one of the server's processes cost.
type ProcResult struct {
	PID             int
	RSSPeak, RSSEnd int64
	CPU             time.Duration
}

// Run applies the load and returns what it measured. It stops on its own
// after Duration plus the time to drain; ctx may end it sooner.
func Run(ctx context.Context, o Options) (Result, error) {
	if err := o.check(); err != nil {
		return Result{}, err
	}
	if o.Drain <= 0 {
		o.Drain = 10 * time.Second
	}
	if o.Tag == "" {
		o.Tag = extractor.DefaultTag
	}
	logf := func(format string, args ...any) {
		if o.Log != nil {
			fmt.Fprintf(o.Log, "loadtest: "+format+"\n", args...)
		}
	}
	if len(o.Sites) == 0 {
		o.Sites = FetchSites(ctx, o.Servers[0], o.Tag)
	}
	run := strconv.FormatUint(rand.Uint64()>>40, 36)
	res := Result{Rooms: o.Rooms, Readers: o.Readers, Rate: o.Rate, Journal: o.Journal, Sites: len(o.Sites)}
	total := int64(o.Rate) * int64(o.Duration/time.Millisecond) / 1000
	if total < 1 {
		return res, errors.New("loadtest: rate × duration is less than one line")
	}

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	// Readers first, every one connected before the first line is sent.
	client := loopbackClient(o.Rooms*o.Readers + o.Rooms)
	var rwg sync.WaitGroup
	defer func() { cancel(); rwg.Wait() }()
	feeds, readers, err := o.connect(ctx, client, run, total)
	if err != nil {
		return res, err
	}
	rctx, rcancel := context.WithCancel(ctx)
	defer rcancel()
	for _, r := range readers {
		rwg.Go(func() { r.read(rctx) })
	}
	logf("%d readers connected to %d feeds; sending %d lines/s to each for %v", len(readers), len(feeds), o.Rate, o.Duration)

	var stats []*procStats
	for _, pid := range o.PIDs {
		stats = append(stats, startProcStats(ctx, pid))
	}
	selfBefore := selfCPU()
	if err := o.ingest(ctx, client, run, feeds, total, &res); err != nil {
		return res, err
	}
	res.Procs = make([]ProcResult, len(stats))
	for i, st := range stats {
		res.Procs[i] = ProcResult{PID: st.pid, CPU: st.cpuSince()}
		res.ServerCPU += res.Procs[i].CPU
	}
	res.ClientCPU = selfCPU() - selfBefore
	logf("sent %d lines in %v (%d acknowledged); waiting up to %v for readers", res.Sent, res.Duration.Round(time.Millisecond), res.Acked, o.Drain)
	if o.AfterSend != nil {
		o.AfterSend()
	}

	drain(ctx, readers, o.Drain)
	for i, st := range stats {
		p := &res.Procs[i]
		p.RSSPeak, p.RSSEnd = st.stop()
		res.RSSPeak += p.RSSPeak
		res.RSSEnd += p.RSSEnd
	}
	rcancel()
	rwg.Wait()
	res.tally(readers, total)
	return res, nil
}

// connect makes the run's feeds (a relay's connection to each replica
// makes one there) and connects each feed's readers, spread over the
// replicas.
func (o *Options) connect(ctx context.Context, client *http.Client, run string, total int64) (feeds []string, readers []*reader, err error) {
	feeds = make([]string, o.Rooms)
	for i := range feeds {
		feeds[i] = fmt.Sprintf("load-%s-%d", run, i)
		// A browser socket does not create a feed: a relay does, on each
		// replica it connects to.
		for _, server := range o.Servers {
			if err := openFeed(ctx, client, server, o.Token, feeds[i]); err != nil {
				return nil, nil, err
			}
		}
		for j := range o.Readers {
			r := &reader{run: run, total: total, seen: make([]uint64, (total+64)/64)}
			if err := r.dial(ctx, client, o.server(i+j), feeds[i]); err != nil {
				return nil, nil, err
			}
			readers = append(readers, r)
		}
	}
	return feeds, readers, nil
}

// ingest sends total lines to each feed, one client per feed, all on one
// schedule, and counts in res what was sent and acknowledged, and for how
// long.
func (o *Options) ingest(ctx context.Context, client *http.Client, run string, feeds []string, total int64, res *Result) error {
	began := time.Now()
	ings := make([]*ingester, len(feeds))
	var iwg sync.WaitGroup
	errs := make([]error, len(feeds))
	for i, f := range feeds {
		ings[i] = &ingester{run: run, feed: f, room: i, sites: o.Sites, journal: o.Journal}
		iwg.Go(func() { errs[i] = ings[i].send(ctx, client, o.server(i), o.Token, o.Rate, total, began) })
	}
	iwg.Wait()
	res.Duration = time.Since(began)
	for i, in := range ings {
		res.Sent += in.sent.Load()
		res.Acked += in.acked.Load()
		if errs[i] != nil && ctx.Err() == nil {
			return fmt.Errorf("loadtest: feed %s: %w", in.feed, errs[i])
		}
	}
	return nil
}

// drain waits, up to within, until every reader has each line or a word
// of its skip.
func drain(ctx context.Context, readers []*reader, within time.Duration) {
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		if !slices.ContainsFunc(readers, func(r *reader) bool { return !r.complete() }) {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// tally adds up what the readers saw of the total lines sent to each feed.
func (res *Result) tally(readers []*reader, total int64) {
	var h hist
	for _, r := range readers {
		r.mu.Lock()
		res.Delivered += r.distinct
		res.Messages += r.messages
		res.Skipped += r.skipped
		res.Duplicated += r.dups
		lost := total - r.distinct - r.skipped
		res.Lost += lost
		if r.dropped {
			res.Dropped++
		}
		if r.skipped == 0 {
			res.LostKeptUp += lost
			if !r.dropped {
				res.KeptUp++
			}
		}
		h.merge(&r.lat)
		r.mu.Unlock()
	}
	res.Expected = res.Sent * int64(res.Readers)
	res.P50, res.P99, res.Max = h.quantile(0.50), h.quantile(0.99), h.max
}

func (o *Options) check() error {
	switch {
	case o.Rooms < 1 || o.Readers < 0 || o.Rate < 1 || o.Duration <= 0:
		return errors.New("loadtest: want at least 1 room, 0 or more readers, a rate of 1 line/s or more and a duration")
	case o.Token == "":
		return errors.New("loadtest: the server's ingest token is needed")
	case len(o.Servers) == 0:
		return errors.New("loadtest: no server to load")
	}
	for _, s := range o.Servers {
		if err := CheckLoopback(s); err != nil {
			return err
		}
	}
	return nil
}

// server is the replica the i-th client uses.
func (o *Options) server(i int) string { return o.Servers[i%len(o.Servers)] }

// CheckLoopback refuses a server URL whose host is not a loopback address:
// a load test is not to be pointed at someone else's server.
func CheckLoopback(server string) error {
	u, err := url.Parse(server)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return fmt.Errorf("loadtest: server %q: want http://127.0.0.1:PORT", server)
	}
	host := u.Hostname()
	if host == "localhost" {
		return nil
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return nil
	}
	return fmt.Errorf("loadtest: server %q is not on loopback: a load test only targets 127.0.0.1, ::1 or localhost", server)
}

// loopbackClient is an HTTP client for many concurrent websockets to one host.
func loopbackClient(conns int) *http.Client {
	return &http.Client{Transport: &http.Transport{
		MaxIdleConnsPerHost: conns,
		DialContext:         (&net.Dialer{Timeout: 10 * time.Second}).DialContext,
	}}
}

// FetchSites returns the klog log sites of the server's Reading of tag
// (structured ones: they name their file:line in the kubelet's own lines),
// or one made-up site when the Reading cannot be had within 60 s.
func FetchSites(ctx context.Context, server, tag string) []extractor.LogSite {
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	for ctx.Err() == nil {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, server+"/k8s/"+tag+"/reading.json", nil)
		if err != nil {
			break
		}
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			var r extractor.Reading
			derr := json.NewDecoder(resp.Body).Decode(&r)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK && derr == nil {
				if sites := SitesOf(&r); len(sites) > 0 {
					return sites
				}
				break
			}
		}
		select {
		case <-ctx.Done():
		case <-time.After(500 * time.Millisecond):
		}
	}
	return []extractor.LogSite{{File: "pkg/kubelet/kubelet.go", Line: 2500, Message: "SyncLoop (PLEG): event for pod"}}
}

// SitesOf returns the structured (and contextual) klog log sites of a
// Reading's cases: the kubelet's lines at them name their file:line and
// message, which is what a load line or a test journal imitates.
func SitesOf(r *extractor.Reading) []extractor.LogSite {
	var sites []extractor.LogSite
	for _, c := range r.Function.Cases {
		for _, s := range c.Logs {
			if s.Style != "printf" {
				sites = append(sites, s)
			}
		}
	}
	return sites
}

// ingester is one relay-like client sending to one feed.
type ingester struct {
	run, feed string
	room      int
	sites     []extractor.LogSite
	journal   bool
	sent      atomic.Int64
	acked     atomic.Int64 // number of the last line acknowledged
}

const (
	// maxBatch and maxBatchBytes keep a catching-up batch well under the
	// server's 1 MiB message limit, as the relay's own batches are.
	maxBatch      = 2000
	maxBatchBytes = 512 << 10
	// window is how many lines may be sent ahead of the last ack, as the
	// relay's Client.Window: a server that cannot keep up slows the sender
	// (and shows as a shortfall in the rate) instead of piling lines up in
	// socket buffers, where they would only add latency.
	window = 8192
)

// openFeed makes the server create feed, as a relay does by connecting
// to it, so readers can connect before the first line is sent.
func openFeed(ctx context.Context, client *http.Client, server, token, feed string) error {
	u := "ws" + server[len("http"):] + "/feeds/" + url.PathEscape(feed) + "/ingest"
	conn, resp, err := websocket.Dial(ctx, u, &websocket.DialOptions{
		HTTPClient: client,
		HTTPHeader: http.Header{"Authorization": {"Bearer " + token}},
	})
	if err != nil {
		if resp != nil {
			return fmt.Errorf("open feed %s: %s: %w", u, resp.Status, err)
		}
		return fmt.Errorf("open feed %s: %w", u, err)
	}
	return conn.Close(websocket.StatusNormalClosure, "")
}

// send sends total lines at rate lines/s from began, then waits (at most
// 30 s) for the server to acknowledge the last one.
func (in *ingester) send(ctx context.Context, client *http.Client, server, token string, rate int, total int64, began time.Time) error {
	u := "ws" + server[len("http"):] + "/feeds/" + url.PathEscape(in.feed) + "/ingest"
	conn, resp, err := websocket.Dial(ctx, u, &websocket.DialOptions{
		HTTPClient: client,
		HTTPHeader: http.Header{"Authorization": {"Bearer " + token}},
	})
	if err != nil {
		if resp != nil {
			return fmt.Errorf("ingest %s: %s: %w", u, resp.Status, err)
		}
		return fmt.Errorf("ingest %s: %w", u, err)
	}
	defer conn.CloseNow()
	allAcked := make(chan struct{})
	acked := make(chan struct{}, 1)
	readErr := make(chan error, 1)
	go func() { readErr <- in.readAcks(ctx, conn, total, acked, allAcked) }() // owned: ends when conn closes (deferred CloseNow)

	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	batch := make([]relay.Line, 0, maxBatch)
	var msg []byte
	var seq int64
	for seq < total {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case err := <-readErr:
			return fmt.Errorf("connection lost after %d lines: %w", seq, err)
		case <-tick.C:
		}
		for seq-in.acked.Load() >= window {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case err := <-readErr:
				return fmt.Errorf("connection lost after %d lines: %w", seq, err)
			case <-acked:
			}
		}
		due := min(total, int64(time.Since(began).Seconds()*float64(rate)), in.acked.Load()+window)
		batch = in.fill(batch[:0], &seq, due)
		if len(batch) == 0 {
			continue
		}
		msg = relay.AppendBatch(msg[:0], batch) // as the relay writes it
		if err := conn.Write(ctx, websocket.MessageText, msg); err != nil {
			return fmt.Errorf("send: %w", err)
		}
		in.sent.Store(seq)
	}
	select {
	case <-allAcked:
		conn.Close(websocket.StatusNormalClosure, "load test done")
		return nil
	case err := <-readErr:
		return fmt.Errorf("connection lost before the last ack (%d of %d acknowledged): %w", in.acked.Load(), total, err)
	case <-time.After(30 * time.Second):
		return fmt.Errorf("%d of %d lines acknowledged 30 s after the last was sent", in.acked.Load(), total)
	case <-ctx.Done():
		return ctx.Err()
	}
}

// readAcks reads the server's acks until conn fails, and returns why: it
// records the last line acknowledged, wakes the sender (acked) and closes
// allAcked once line total is.
func (in *ingester) readAcks(ctx context.Context, conn *websocket.Conn, total int64, acked chan<- struct{}, allAcked chan<- struct{}) error {
	closed := false
	for {
		_, b, err := conn.Read(ctx)
		if err != nil {
			return err
		}
		var m struct {
			Ack string `json:"ack"`
		}
		if json.Unmarshal(b, &m) != nil {
			continue
		}
		i := strings.LastIndexByte(m.Ack, '-')
		if i < 0 {
			continue
		}
		n, _ := strconv.ParseInt(m.Ack[i+1:], 10, 64)
		in.acked.Store(n)
		select {
		case acked <- struct{}{}:
		default:
		}
		if n == total && !closed {
			close(allAcked)
			closed = true
		}
	}
}

// fill appends to batch the lines after *seq up to due, within a batch's
// bounds, advancing *seq.
func (in *ingester) fill(batch []relay.Line, seq *int64, due int64) []relay.Line {
	now := time.Now()
	for size := 0; *seq < due && len(batch) < maxBatch && size < maxBatchBytes; {
		*seq++
		// Stamped as a relay stamps a line it read (relay.Line.Read): the
		// server and its browsers carry the stamps, and their bytes count.
		batch = append(batch, relay.Line{ID: in.run + "-" + in.feed + "-" + strconv.FormatInt(*seq, 10), Raw: in.line(*seq, now), Read: now.UnixMicro()})
		size += len(batch[len(batch)-1].Raw)
	}
	return batch
}

// line is a klog text line at one of the tag's log sites, as the kubelet
// writes it, with the load marker at its end.
func (in *ingester) line(seq int64, now time.Time) string {
	s := in.sites[int(seq)%len(in.sites)]
	b := make([]byte, 0, 200)
	b = append(b, 'I')
	b = now.UTC().AppendFormat(b, "0102 15:04:05.000000")
	b = append(b, "    4242 "...)
	b = append(b, filepath.Base(s.File)...)
	b = append(b, ':')
	b = strconv.AppendInt(b, int64(s.Line), 10)
	b = append(b, "] "...)
	b = strconv.AppendQuote(b, s.Message)
	b = append(b, ` pod="default/load-`...)
	b = strconv.AppendInt(b, int64(in.room), 10)
	b = append(b, `" lt=`...)
	b = append(b, in.run...)
	b = append(b, ':')
	b = strconv.AppendInt(b, seq, 10)
	b = append(b, ':')
	b = strconv.AppendInt(b, now.UnixNano(), 10)
	if in.journal {
		return in.journalEntry(b, seq, now)
	}
	return string(b)
}

// journalEntry wraps a kubelet line in a journald JSON entry with the
// fields a real one has (what `journalctl -u kubelet -o json` prints on a
// kubeadm node: about 1.2 KB, most of it besides the MESSAGE).
func (in *ingester) journalEntry(msg []byte, seq int64, now time.Time) string {
	us := now.UnixMicro()
	b := make([]byte, 0, 1280+len(msg))
	b = append(b, `{"__CURSOR":"s=6a1c0b1e2f3a4b5c8d9e0f1a2b3c4d5e;i=`...)
	b = strconv.AppendInt(b, seq, 16)
	b = append(b, `;b=0f5e1c2d3b4a59687766554433221100;m=`...)
	b = strconv.AppendInt(b, us%1e12, 16)
	b = append(b, `;t=`...)
	b = strconv.AppendInt(b, us, 16)
	b = append(b, `;x=9d8c7b6a5f4e3d2c","__REALTIME_TIMESTAMP":"`...)
	b = strconv.AppendInt(b, us, 10)
	b = append(b, `","__MONOTONIC_TIMESTAMP":"`...)
	b = strconv.AppendInt(b, us%1e12, 10)
	b = append(b, `","_BOOT_ID":"0f5e1c2d3b4a59687766554433221100","_MACHINE_ID":"5c8d9e0f1a2b3c4d5e6a1c0b1e2f3a4b","_HOSTNAME":"load-`...)
	b = strconv.AppendInt(b, int64(in.room), 10)
	b = append(b, `","PRIORITY":"6","SYSLOG_FACILITY":"3","SYSLOG_IDENTIFIER":"kubelet","_TRANSPORT":"stdout","_STREAM_ID":"7e1f0d2c3b4a59687e1f0d2c3b4a5968",`+
		`"_PID":"4242","_UID":"0","_GID":"0","_COMM":"kubelet","_EXE":"/usr/bin/kubelet",`+
		`"_CMDLINE":"/usr/bin/kubelet --bootstrap-kubeconfig=/etc/kubernetes/bootstrap-kubelet.conf --kubeconfig=/etc/kubernetes/kubelet.conf --config=/var/lib/kubelet/config.yaml --container-runtime-endpoint=unix:///var/run/containerd/containerd.sock --pod-infra-container-image=registry.k8s.io/pause:3.10 --node-ip=10.0.0.12 --v=4",`+
		`"_CAP_EFFECTIVE":"1ffffffffff","_SELINUX_CONTEXT":"unconfined\n","_SYSTEMD_CGROUP":"/system.slice/kubelet.service","_SYSTEMD_UNIT":"kubelet.service",`+
		`"_SYSTEMD_SLICE":"system.slice","_SYSTEMD_INVOCATION_ID":"3b4a59687e1f0d2c3b4a59687e1f0d2c","MESSAGE":`...)
	b = jsonstr.Append(b, string(msg))
	return string(append(b, '}'))
}
