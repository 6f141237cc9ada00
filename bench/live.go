package bench

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"
	"github.com/coder/websocket/wsjson"
)

// LiveConfig is one run of the live-updates tool: Subscribers open
// subscriptions to procedureEvents with one token while procedures are
// renamed at WriteRate, each delivery timed against its write.
type LiveConfig struct {
	URL   string // base URL, e.g. http://127.0.0.1:8080
	Token string
	// Subscribers is how many subscriptions are held open. They share the
	// token, so the server's --subscriptions-per-token (and, over
	// WebSockets, one socket each, --websockets-per-token) must be at least
	// this (and its --rate-limit high enough, or 0, to open them at once).
	Subscribers int
	// WriteRate is the writes sent per second (each a PUT /procedures/{id}
	// renaming one procedure).
	WriteRate float64
	// Duration is how long writes are sent.
	Duration time.Duration
	// Transport is "sse" (Server-Sent Events, the default) or "ws"
	// (graphql-transport-ws).
	Transport string
	// Sample is how many existing procedures are renamed in turn (default
	// 100). Each is written every Sample/WriteRate seconds. One more
	// procedure is renamed before, until every subscription has seen it.
	Sample int
	// Drain bounds the wait, once writes are done, for the events still
	// due (default 10 s).
	Drain time.Duration
	// Progress, when set, is told of each phase ("live: writing", "live:
	// writes done"), so that a script can measure the server over the
	// writes alone.
	Progress io.Writer
}

// Transports of the live tool.
const (
	TransportSSE = "sse"
	TransportWS  = "ws"
)

// LiveReport is what a live run measured. Delivery latency is the time
// from a write's send to an event's arrival at one subscriber.
type LiveReport struct {
	Transport   string
	Subscribers int
	// Sample is how many procedures were renamed in turn.
	Sample int
	// Opened is how long opening every subscription (and seeing a first
	// event on each) took.
	Opened time.Duration
	// Elapsed is the time writes were sent over.
	Elapsed time.Duration
	// Writes were sent, Acked of them answered 200.
	Writes, Acked      int
	WriteP50, WriteP99 time.Duration
	// Expected is Acked × Subscribers; Received the events matched to an
	// acknowledged write; Missed the difference.
	Expected, Received, Missed int
	// Stale counts deliveries whose procedure, read at delivery, already
	// showed a later write's name. Extra counts events beyond the
	// acknowledged writes of their procedure (a write that committed but
	// was not acknowledged). Other counts events of other procedures.
	Stale, Extra, Other int
	P50, P90, P99, Max  time.Duration
	// Errors counts failures by kind: "write/<code>" for writes,
	// "stream/<code>" for subscriptions ended by the server, "refetch" for
	// REFETCH events.
	Errors map[string]int
}

// Print writes the report.
func (r *LiveReport) Print(w io.Writer, cfg LiveConfig) {
	rd := func(d time.Duration) time.Duration { return d.Round(10 * time.Microsecond) }
	rate := 0.0
	if r.Elapsed > 0 {
		rate = float64(r.Writes) / r.Elapsed.Seconds()
	}
	fmt.Fprintf(w, "transport=%s subscribers=%d write_rate=%g/s duration=%s sample=%d opened_in=%s\n",
		r.Transport, r.Subscribers, cfg.WriteRate, r.Elapsed.Round(time.Millisecond), r.Sample, r.Opened.Round(time.Millisecond))
	fmt.Fprintf(w, "writes=%d acked=%d writes/s=%.1f write_p50=%s write_p99=%s\n", r.Writes, r.Acked, rate, rd(r.WriteP50), rd(r.WriteP99))
	fmt.Fprintf(w, "events: expected=%d received=%d missed=%d stale=%d extra=%d other=%d\n", r.Expected, r.Received, r.Missed, r.Stale, r.Extra, r.Other)
	fmt.Fprintf(w, "delivery_p50=%s delivery_p90=%s delivery_p99=%s delivery_max=%s\n", rd(r.P50), rd(r.P90), rd(r.P99), rd(r.Max))
	printErrors(w, r.Errors)
}

// liveQuery is the subscription each subscriber holds: the procedure's
// name tells a delivery that read a later write apart.
const liveQuery = `subscription { procedureEvents { kind procedureId workspaceVersion procedure { name } } }`

// delivery is one event of a sampled procedure at one subscriber.
type delivery struct {
	proc int32         // index in the sample
	seq  int32         // the write whose name the procedure showed (-1: none of this run's)
	at   time.Duration // arrival, since the run's start
}

// subscriber is one open subscription. Its reader alone appends to
// deliveries, read once it is done.
type subscriber struct {
	deliveries []delivery
	count      atomic.Int64 // len(deliveries), for the drain
	ready      atomic.Bool  // an event of the readiness probe arrived
	done       chan struct{}
	other      int
	refetch    int
	// endCode (and endMessage) are set when the server ended the
	// subscription.
	endCode, endMessage string
}

// liveRun is what a run's subscribers share.
type liveRun struct {
	cfg    LiveConfig
	c      *client
	start  time.Time
	prefix string           // names of this run's writes: prefix + seq
	ready  string           // the readiness probe's names: ready + n
	probe  string           // the readiness probe's id
	procs  map[string]int32 // measured procedure id -> index
}

// Live opens cfg.Subscribers subscriptions, waits until each has seen an
// event, renames sampled procedures at cfg.WriteRate for cfg.Duration, and
// measures every delivery. A subscription refused at opening ends the run
// with an error naming the server flags to raise.
func Live(ctx context.Context, cfg LiveConfig) (*LiveReport, error) {
	if cfg.Subscribers <= 0 || cfg.Duration <= 0 || cfg.WriteRate <= 0 || cfg.URL == "" || cfg.Token == "" {
		return nil, errors.New("live: url, token, subscribers, write rate and duration are required")
	}
	if cfg.Transport == "" {
		cfg.Transport = TransportSSE
	}
	if cfg.Transport != TransportSSE && cfg.Transport != TransportWS {
		return nil, fmt.Errorf("live: transport must be sse or ws, not %q", cfg.Transport)
	}
	if cfg.Sample <= 0 {
		cfg.Sample = 100
	}
	if cfg.Drain <= 0 {
		cfg.Drain = 10 * time.Second
	}
	cfg.URL = strings.TrimRight(cfg.URL, "/")
	// Every subscription holds a connection of its own.
	tr := &http.Transport{MaxConnsPerHost: 0, MaxIdleConns: cfg.Subscribers + 64, MaxIdleConnsPerHost: cfg.Subscribers + 64,
		ResponseHeaderTimeout: 30 * time.Second}
	defer tr.CloseIdleConnections()
	runID := strconv.FormatInt(time.Now().UnixNano(), 36)
	run := &liveRun{cfg: cfg, prefix: "live-" + runID + "-", ready: "live-" + runID + "-ready-", procs: map[string]int32{},
		c: &client{cfg: LoadConfig{URL: cfg.URL, Token: cfg.Token}, http: &http.Client{Transport: tr}}}
	sample, err := run.sample(ctx)
	if err != nil {
		return nil, err
	}
	// The last sampled procedure is renamed only to tell that every
	// subscription has started; its events are not measured.
	probe := sample[len(sample)-1]
	sample = sample[:len(sample)-1]
	run.probe = probe.id
	for i, p := range sample {
		run.procs[p.id] = int32(i)
	}

	streamCtx, stop := context.WithCancel(ctx)
	subs := make([]*subscriber, cfg.Subscribers)
	var readers sync.WaitGroup
	defer readers.Wait()
	defer stop()
	run.start = time.Now()
	if err := run.openAll(streamCtx, subs, &readers); err != nil {
		return nil, err
	}
	// A subscription that has seen an event hears of every later write.
	// On a WebSocket nothing else says it has started, so the probe is
	// renamed until each has seen one.
	deadline := time.Now().Add(30 * time.Second)
	for n := 0; ; n++ {
		if err := run.put(ctx, probe.shortID, run.ready+strconv.Itoa(n)); err != nil {
			return nil, fmt.Errorf("live: renaming the readiness probe %s: %w", probe.shortID, err)
		}
		left := run.wait(ctx, subs, 500*time.Millisecond, func(s *subscriber) bool { return s.ready.Load() })
		if left == 0 {
			break
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return nil, fmt.Errorf("live: %d of %d subscriptions saw no event within 30s", left, cfg.Subscribers)
		}
	}
	for i, s := range subs {
		select {
		case <-s.done:
			return nil, fmt.Errorf("live: subscription %d of %d ended before the writes: %w", i+1, cfg.Subscribers, openRefused(s.endCode, s.endMessage))
		default:
		}
	}
	rep := &LiveReport{Transport: cfg.Transport, Subscribers: cfg.Subscribers, Sample: len(sample), Opened: time.Since(run.start), Errors: map[string]int{}}

	run.progress("live: writing for %s", cfg.Duration)
	type write struct {
		proc    int32
		sent    time.Duration
		latency time.Duration
		code    string
	}
	var (
		writes  []*write
		writers sync.WaitGroup
	)
	writeStart := time.Now()
	tick := time.NewTicker(max(time.Duration(float64(time.Second)/cfg.WriteRate), time.Microsecond))
	end := time.After(cfg.Duration)
loop:
	for seq := 0; ; seq++ {
		w := &write{proc: int32(seq % len(sample)), sent: time.Since(run.start)}
		writes = append(writes, w)
		writers.Add(1)
		go func() {
			defer writers.Done()
			t := time.Now()
			err := run.put(ctx, sample[w.proc].shortID, run.prefix+strconv.Itoa(seq))
			w.latency = time.Since(t)
			var ae *apiError
			switch {
			case err == nil:
			case errors.As(err, &ae):
				w.code = ae.code
			case ctx.Err() != nil:
				w.code = "canceled"
			default:
				w.code = "transport"
			}
		}()
		select {
		case <-tick.C:
		case <-end:
			break loop
		case <-ctx.Done():
			break loop
		}
	}
	tick.Stop()
	writers.Wait()
	rep.Elapsed = time.Since(writeStart)
	run.progress("live: writes done")

	// acked[p] are the acknowledged writes to sample procedure p in send
	// order; a subscriber's k-th event of p is taken for the k-th of them
	// (writes to one procedure are Sample/WriteRate apart, so they commit
	// in that order).
	acked := make([][]int32, len(sample))
	var writeLat []time.Duration
	for seq, w := range writes {
		writeLat = append(writeLat, w.latency)
		if w.code != "" {
			rep.Errors["write/"+w.code]++
			continue
		}
		rep.Acked++
		acked[w.proc] = append(acked[w.proc], int32(seq))
	}
	rep.Writes = len(writes)
	rep.WriteP50, _, rep.WriteP99, _ = percentiles(writeLat)
	run.wait(ctx, subs, cfg.Drain, func(s *subscriber) bool { return s.count.Load() >= int64(rep.Acked) })
	stop()
	readers.Wait()

	rep.Expected = rep.Acked * cfg.Subscribers
	lat := make([]time.Duration, 0, rep.Expected)
	seen := make([]int, len(sample))
	for _, s := range subs {
		clear(seen)
		for _, d := range s.deliveries {
			k := seen[d.proc]
			seen[d.proc]++
			if k >= len(acked[d.proc]) {
				rep.Extra++
				continue
			}
			seq := acked[d.proc][k]
			lat = append(lat, d.at-writes[seq].sent)
			if d.seq != seq {
				rep.Stale++
			}
		}
		rep.Other += s.other
		if s.refetch > 0 {
			rep.Errors["refetch"] += s.refetch
		}
		if s.endCode != "" {
			rep.Errors["stream/"+s.endCode]++
		}
	}
	rep.Received = len(lat)
	rep.Missed = rep.Expected - rep.Received
	rep.P50, rep.P90, rep.P99, rep.Max = percentiles(lat)
	return rep, nil
}

func (run *liveRun) progress(format string, args ...any) {
	if run.cfg.Progress != nil {
		fmt.Fprintf(run.cfg.Progress, format+"\n", args...)
	}
}

// sampledProcedure is a procedure the run renames.
type sampledProcedure struct{ id, shortID string }

// sample pages through the newest procedures until it holds Sample of
// them and the readiness probe.
func (run *liveRun) sample(ctx context.Context) ([]sampledProcedure, error) {
	var out []sampledProcedure
	for page := 1; len(out) < run.cfg.Sample+1; page++ {
		var resp struct {
			Data []struct {
				ID      string  `json:"id"`
				ShortID *string `json:"shortId"`
			}
		}
		if err := run.c.do(ctx, http.MethodGet, "/procedures?limit=100&page="+strconv.Itoa(page), nil, &resp); err != nil {
			return nil, fmt.Errorf("live: sampling procedures (page %d): %w", page, err)
		}
		for _, d := range resp.Data {
			if d.ShortID != nil && len(out) < run.cfg.Sample+1 {
				out = append(out, sampledProcedure{id: d.ID, shortID: *d.ShortID})
			}
		}
		if len(resp.Data) < 100 {
			break
		}
	}
	if len(out) < 2 {
		return nil, errors.New("live: the workspace needs at least 2 procedures to rename (one probes readiness); seed it first")
	}
	return out, nil
}

// put renames the procedure with shortID.
func (run *liveRun) put(ctx context.Context, shortID, name string) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	return run.c.do(ctx, http.MethodPut, "/procedures/"+url.PathEscape(shortID), map[string]any{"name": name}, nil)
}

// wait polls until every subscriber is ok or done, or timeout; it returns
// how many are neither.
func (run *liveRun) wait(ctx context.Context, subs []*subscriber, timeout time.Duration, ok func(*subscriber) bool) int {
	deadline := time.Now().Add(timeout)
	for {
		left := 0
		for _, s := range subs {
			select {
			case <-s.done:
			default:
				if !ok(s) {
					left++
				}
			}
		}
		if left == 0 || time.Now().After(deadline) || ctx.Err() != nil {
			return left
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// openAll opens every subscription, a few at a time, each read on a
// goroutine of its own until ctx ends.
func (run *liveRun) openAll(ctx context.Context, subs []*subscriber, readers *sync.WaitGroup) error {
	var (
		mu       sync.Mutex
		firstErr error
		wg       sync.WaitGroup
		slots    = make(chan struct{}, 32)
	)
	for i := range subs {
		slots <- struct{}{}
		mu.Lock()
		failed := firstErr != nil
		mu.Unlock()
		if failed {
			<-slots
			break
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-slots }()
			s := &subscriber{done: make(chan struct{})}
			var err error
			if run.cfg.Transport == TransportWS {
				err = run.openWS(ctx, s, readers)
			} else {
				err = run.openSSE(ctx, s, readers)
			}
			mu.Lock()
			defer mu.Unlock()
			if err != nil && firstErr == nil {
				firstErr = fmt.Errorf("live: opening subscription %d of %d: %w", i+1, len(subs), err)
			}
			subs[i] = s
		}()
	}
	wg.Wait()
	return firstErr
}

// openRefused describes a subscription the server refused with code.
func openRefused(code, message string) error {
	if code == "rate_limited" {
		return fmt.Errorf("rate_limited (%s): every subscription uses the same token, so start the server with "+
			"--subscriptions-per-token and --websockets-per-token at least --subscribers, and --rate-limit 0", message)
	}
	return fmt.Errorf("%s (%s)", code, message)
}

// gqlErrors is the errors member of a GraphQL response.
type gqlErrors []struct {
	Message    string
	Extensions struct{ Code string }
}

func (e gqlErrors) code() (string, string) {
	if len(e) == 0 {
		return "", ""
	}
	code := e[0].Extensions.Code
	if code == "" {
		code = "unknown"
	}
	return code, e[0].Message
}

// handle records one delivered response; it returns the error code and
// message the response carries, if any (the subscription ends with them).
func (run *liveRun) handle(s *subscriber, payload []byte) (string, string) {
	at := time.Since(run.start)
	ev, ok := scanEvent(payload)
	if !ok {
		var resp struct {
			Data struct {
				ProcedureEvents *liveEvent
			}
			Errors gqlErrors
		}
		if err := json.Unmarshal(payload, &resp); err != nil {
			return "malformed_event", ""
		}
		if code, msg := resp.Errors.code(); code != "" {
			return code, msg
		}
		if ev = resp.Data.ProcedureEvents; ev == nil {
			return "malformed_event", ""
		}
	}
	if ev.Kind == "REFETCH" {
		s.refetch++
		return "", ""
	}
	proc, ok := int32(0), false
	if ev.ProcedureID != nil {
		if *ev.ProcedureID == run.probe {
			s.ready.Store(true)
			return "", ""
		}
		proc, ok = run.procs[*ev.ProcedureID]
	}
	if !ok {
		s.other++
		return "", ""
	}
	seq := int32(-1)
	if ev.Procedure != nil {
		if rest, found := strings.CutPrefix(ev.Procedure.Name, run.prefix); found {
			if n, err := strconv.Atoi(rest); err == nil {
				seq = int32(n)
			}
		}
	}
	s.deliveries = append(s.deliveries, delivery{proc: proc, seq: seq, at: at})
	s.count.Add(1)
	return "", ""
}

// openSSE posts the subscription with Accept: text/event-stream and, once
// its stream has started, reads it on a goroutine of its own.
func (run *liveRun) openSSE(ctx context.Context, s *subscriber, readers *sync.WaitGroup) error {
	body, err := json.Marshal(map[string]any{"query": liveQuery})
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, run.cfg.URL+"/graphql", bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Authorization", "Bearer "+run.cfg.Token)
	resp, err := run.c.http.Do(req)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		defer resp.Body.Close()
		raw, _ := io.ReadAll(resp.Body)
		var out struct{ Errors gqlErrors }
		_ = json.Unmarshal(raw, &out)
		code, msg := out.Errors.code()
		if code == "" {
			code, msg = "http_"+strconv.Itoa(resp.StatusCode), strings.TrimSpace(string(raw))
		}
		return openRefused(code, msg)
	}
	readers.Add(1)
	go func() {
		defer readers.Done()
		defer close(s.done)
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 4096), 1<<24)
		var event string
		for sc.Scan() {
			line := sc.Bytes()
			switch {
			case bytes.HasPrefix(line, []byte("event: ")):
				switch ev := line[len("event: "):]; {
				case bytes.Equal(ev, []byte("next")):
					event = "next"
				case bytes.Equal(ev, []byte("complete")):
					event = "complete"
				default:
					event = string(ev)
				}
			case bytes.HasPrefix(line, []byte("data: ")) && event == "next":
				if code, msg := run.handle(s, line[len("data: "):]); code != "" {
					s.endCode, s.endMessage = code, msg
				}
			case len(line) == 0 && event == "complete":
				if s.endCode == "" {
					s.endCode = "completed"
				}
				return
			}
		}
		if ctx.Err() == nil && s.endCode == "" {
			s.endCode = "closed"
		}
	}()
	return nil
}

// wsMessage is a graphql-transport-ws message.
type wsMessage struct {
	ID      string          `json:"id,omitempty"`
	Type    string          `json:"type"`
	Payload json.RawMessage `json:"payload,omitempty"`
}

// openWS opens a graphql-transport-ws socket, waits for its
// acknowledgement, subscribes, and reads the socket on a goroutine of its
// own, answering pings.
func (run *liveRun) openWS(ctx context.Context, s *subscriber, readers *sync.WaitGroup) error {
	dialCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	c, resp, err := websocket.Dial(dialCtx, "ws"+strings.TrimPrefix(run.cfg.URL, "http")+"/graphql",
		&websocket.DialOptions{Subprotocols: []string{"graphql-transport-ws"}, HTTPClient: run.c.http})
	if err != nil {
		if resp != nil && resp.StatusCode != http.StatusSwitchingProtocols {
			return fmt.Errorf("upgrade refused: HTTP %d", resp.StatusCode)
		}
		return err
	}
	c.SetReadLimit(1 << 24)
	fail := func(err error) error {
		_ = c.CloseNow()
		return err
	}
	initPayload, _ := json.Marshal(map[string]string{"authorization": "Bearer " + run.cfg.Token})
	if err := wsjson.Write(dialCtx, c, wsMessage{Type: "connection_init", Payload: initPayload}); err != nil {
		return fail(err)
	}
	for {
		var m wsMessage
		if err := wsjson.Read(dialCtx, c, &m); err != nil {
			if code := websocket.CloseStatus(err); code == 4429 {
				return fail(openRefused("rate_limited", "the socket was closed with 4429"))
			} else if code != -1 {
				return fail(fmt.Errorf("the socket was closed with %d before connection_ack", code))
			}
			return fail(err)
		}
		if m.Type == "connection_ack" {
			break
		}
		if m.Type == "ping" {
			_ = wsjson.Write(dialCtx, c, wsMessage{Type: "pong"})
		}
	}
	sub, _ := json.Marshal(map[string]any{"query": liveQuery})
	if err := wsjson.Write(dialCtx, c, wsMessage{ID: "1", Type: "subscribe", Payload: sub}); err != nil {
		return fail(err)
	}
	readers.Add(1)
	go func() {
		defer readers.Done()
		defer close(s.done)
		defer c.CloseNow()
		go func() {
			<-ctx.Done()
			_ = c.Close(websocket.StatusNormalClosure, "")
		}()
		// One buffer per socket, each message read into it: a next
		// message of the server's shape is read without decoding it
		// (nextPayload), anything else is decoded as JSON.
		var buf bytes.Buffer
		for {
			buf.Reset()
			_, r, err := c.Reader(context.Background())
			if err == nil {
				_, err = buf.ReadFrom(r)
			}
			if err != nil {
				if ctx.Err() == nil && s.endCode == "" {
					s.endCode = "closed_" + strconv.Itoa(int(websocket.CloseStatus(err)))
				}
				return
			}
			if payload, ok := nextPayload(buf.Bytes()); ok {
				if code, msg := run.handle(s, payload); code != "" {
					s.endCode, s.endMessage = code, msg
				}
				continue
			}
			var m wsMessage
			if err := json.Unmarshal(buf.Bytes(), &m); err != nil {
				s.endCode = "malformed_message"
				return
			}
			switch m.Type {
			case "ping":
				_ = wsjson.Write(ctx, c, wsMessage{Type: "pong"})
			case "next":
				if code, msg := run.handle(s, m.Payload); code != "" {
					s.endCode, s.endMessage = code, msg
				}
			case "error":
				var errs gqlErrors
				_ = json.Unmarshal(m.Payload, &errs)
				s.endCode, s.endMessage = errs.code()
				return
			case "complete":
				if s.endCode == "" {
					s.endCode = "completed"
				}
				return
			}
		}
	}()
	return nil
}
