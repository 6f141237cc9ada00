package database

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"time"
)

// Defaults of the probe (docs/operations.md, "Failover").
const (
	DefaultProbeInterval = time.Second
	DefaultProbeTimeout  = 3 * time.Second
)

// PoolState is what the probe last found of a pool's server.
type PoolState struct {
	// Pool is "primary" or "read".
	Pool string
	// Server is the address of the server the probe reached ("" when none).
	Server string
	// Standby is set when that server is in recovery.
	Standby bool
	// ReplayLag is how far a standby's replay is behind what it received,
	// in time (0 when it has replayed all of it, and for a primary).
	ReplayLag time.Duration
	// Healthy is set when the last probe got an answer from a server of
	// the kind the pool needs within the probe timeout.
	Healthy bool
	// Err says why the pool is not healthy.
	Err error
	// At is when the last probe ended.
	At time.Time
	// Failures counts the probes that failed since the start.
	Failures int64
}

// probeQuery asks whether the server is a standby and how far its replay
// lags: the time since the last transaction it replayed, but only while it
// has received WAL it has not replayed yet (an idle primary would otherwise
// read as a growing lag).
const probeQuery = `SELECT pg_is_in_recovery(), CASE WHEN NOT pg_is_in_recovery() OR pg_last_wal_receive_lsn() = pg_last_wal_replay_lsn() THEN 0 ELSE COALESCE(EXTRACT(EPOCH FROM now() - pg_last_xact_replay_timestamp()), 0) END::float8`

// monitor probes a pool's server on a connection of its own, every
// interval: a server that does not answer within timeout has every
// connection to it aborted (a silent primary would otherwise hold each
// request that drew one of them until its deadline) and is tried last by
// later dials; a pool that writes and finds its server in recovery does the
// same (the old primary, back as a standby).
type monitor struct {
	pool        string
	c           *connector
	interval    time.Duration
	timeout     time.Duration
	connTimeout time.Duration
	wantPrimary bool
	log         *slog.Logger

	mu    sync.Mutex
	state PoolState
	probe driver.Conn // the probe's connection, nil between failures

	stop chan struct{}
	done chan struct{}
}

func newMonitor(pool string, c *connector, wantPrimary bool, o Options) *monitor {
	m := &monitor{pool: pool, c: c, wantPrimary: wantPrimary, interval: o.ProbeInterval, timeout: o.ProbeTimeout,
		connTimeout: o.ConnectTimeout, log: o.Log, stop: make(chan struct{}), done: make(chan struct{})}
	if m.timeout <= 0 {
		m.timeout = DefaultProbeTimeout
	}
	if m.log == nil {
		m.log = slog.New(slog.DiscardHandler)
	}
	m.state = PoolState{Pool: pool, Err: errors.New("not probed yet")}
	return m
}

// start probes once, then every interval until close.
func (m *monitor) start() {
	m.check()
	go func() {
		defer close(m.done)
		t := time.NewTicker(m.interval)
		defer t.Stop()
		for {
			select {
			case <-m.stop:
				return
			case <-t.C:
				m.check()
			}
		}
	}()
}

func (m *monitor) close() {
	close(m.stop)
	<-m.done
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.probe != nil {
		_ = m.probe.Close()
		m.probe = nil
	}
}

// State returns what the last probe found.
func (m *monitor) State() PoolState {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.state
}

// check runs one probe and records its outcome.
func (m *monitor) check() {
	m.mu.Lock()
	prev := m.state
	m.mu.Unlock()
	server, standby, lag, err := m.run()
	m.mu.Lock()
	defer m.mu.Unlock()
	m.state = PoolState{Pool: m.pool, Server: server, Standby: standby, ReplayLag: lag, At: time.Now(), Failures: prev.Failures}
	switch {
	case err != nil:
		m.state.Err = err
	case m.wantPrimary && standby:
		m.state.Err = fmt.Errorf("%s is in recovery (a standby)", server)
	default:
		m.state.Healthy = true
	}
	if !m.state.Healthy {
		m.state.Failures++
		if prev.Healthy || prev.Failures == 0 {
			m.log.Warn("database: probe failed", "pool", m.pool, "server", server, "error", m.state.Err.Error())
		}
	} else if !prev.Healthy || prev.Server != server {
		m.log.Info("database: pool on server", "pool", m.pool, "server", server, "standby", standby)
	}
}

// run probes the pool's server: it connects if it must (through the pool's
// connector, so to the server its connections go to), then asks
// probeQuery, giving the server timeout to answer.
func (m *monitor) run() (server string, standby bool, lag time.Duration, err error) {
	server, standby, lag, kept, err := m.runOnce()
	if err != nil && kept {
		// The probe's own connection, kept from an earlier probe, failed
		// at once (the server answered, or the connection was already
		// dead: every backend terminated, a pooler restarted): ask again
		// on a new one before calling the server unhealthy, as the pool
		// does for a request's dead connection. Without it /readyz
		// answered 503 for up to an interval after the server had
		// closed connections it was still serving.
		server, standby, lag, _, err = m.runOnce()
	}
	return server, standby, lag, err
}

// runOnce is one probe; kept reports whether it asked on a connection kept
// from an earlier probe and failed without waiting for its timeout.
func (m *monitor) runOnce() (server string, standby bool, lag time.Duration, kept bool, err error) {
	m.mu.Lock()
	dc := m.probe
	m.mu.Unlock()
	kept = dc != nil
	if dc == nil {
		// A dial tries each host for up to connect_timeout.
		ctx, cancel := context.WithTimeout(context.Background(), time.Duration(len(m.c.hosts))*max(m.connTimeout, m.timeout))
		c, err := m.c.Connect(ctx)
		cancel()
		if err != nil {
			return "", false, 0, false, fmt.Errorf("cannot connect: %w", err)
		}
		dc = c
		m.mu.Lock()
		m.probe = dc
		m.mu.Unlock()
	}
	cn := dc.(*conn)
	server = cn.server()
	type answer struct {
		standby bool
		lag     float64
		err     error
	}
	answered := make(chan answer, 1)
	go func() {
		var a answer
		a.standby, a.lag, a.err = ask(cn)
		answered <- a
	}()
	timer := time.NewTimer(m.timeout)
	defer timer.Stop()
	var a answer
	select {
	case a = <-answered:
	case <-timer.C:
		// Silent: free every request waiting on this server, and try the
		// other hosts first from now on. The pool reads unhealthy before
		// the first of those requests fails, so nothing that saw its
		// statement aborted can still find the pool healthy.
		m.markSilent(server)
		n := m.c.abortServer(server)
		m.c.avoid(server)
		a = <-answered
		a.err = fmt.Errorf("no answer within %s (aborted %d connections)", m.timeout, n)
		kept = false // silent: asked long enough
	}
	if a.err == nil && m.wantPrimary && a.standby {
		m.c.abortServer(server)
		m.c.avoid(server)
	}
	// A prefer-standby pool on the primary fell back to it because no
	// standby took a connection: the probe dials again each time, and
	// once a standby takes its connection the pool moves there (prefer).
	fellBack := a.err == nil && !m.wantPrimary && !a.standby && m.c.preferStandby()
	if a.err != nil || (m.wantPrimary && a.standby) || fellBack {
		m.mu.Lock()
		_ = m.probe.Close()
		m.probe = nil
		m.mu.Unlock()
	}
	return server, a.standby, time.Duration(a.lag * float64(time.Second)), kept && a.err != nil, a.err
}

// markSilent records, ahead of the probe's end, that server did not
// answer; check then writes the probe's full outcome.
func (m *monitor) markSilent(server string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.state.Healthy = false
	m.state.Server = server
	m.state.Err = fmt.Errorf("no answer within %s", m.timeout)
}

// ask runs probeQuery on cn.
func ask(cn *conn) (standby bool, lag float64, err error) {
	rows, err := cn.QueryContext(context.Background(), probeQuery, nil)
	if err != nil {
		return false, 0, err
	}
	defer rows.Close()
	dest := make([]driver.Value, 2)
	if err := rows.Next(dest); err != nil {
		if errors.Is(err, io.EOF) {
			return false, 0, errors.New("probe: no row")
		}
		return false, 0, err
	}
	standby, _ = dest[0].(bool)
	lag, _ = dest[1].(float64)
	return standby, lag, nil
}
