package database

// The PostgreSQL connector: lib/pq's, with what a failover needs around it.
// lib/pq finds the server a URL's target_session_attrs asks for among
// several hosts, but leaves three things to us:
//
//   - a server that goes silent (host down, network partition: no RST) hangs
//     every read on its connections for as long as the kernel keeps them,
//     past any request's deadline (lib/pq's cancel request goes to the same
//     silent host). Every connection is dialled with TCP keepalives and a
//     TCP user timeout, and is tracked by server, so that the probe
//     (monitor.go) can abort them all at once when their server stops
//     answering;
//   - every new connection tries the URL's hosts in order, so after a
//     failover each dial first waits out connect_timeout on a dead first
//     host. The connector tries the host that last accepted a connection
//     first, and moves a host that failed its probe to the back;
//   - a connection that finds itself on a read-only server (SQLSTATE 25006:
//     a demoted primary, a PgBouncer pointed at a standby) is discarded
//     instead of going back to the pool.

import (
	"context"
	"database/sql/driver"
	"errors"
	"math/rand/v2"
	"net"
	"net/netip"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lib/pq"
)

// TCP settings of every PostgreSQL connection (docs/operations.md,
// "Failover"). The keepalives find an idle pooled connection whose server
// vanished within about 25 s even without the probe; the user timeout
// fails a write the server never acknowledges after 20 s.
const (
	keepAliveIdle     = 10 * time.Second
	keepAliveInterval = 5 * time.Second
	keepAliveCount    = 3
	tcpUserTimeout    = 20 * time.Second
)

// DefaultConnectTimeout is the connect_timeout added to a PostgreSQL URL
// that has none: how long one host may take to accept a connection and
// finish the startup exchange before the next host of the URL is tried.
const DefaultConnectTimeout = 5 * time.Second

// connector opens the connections of one pool (the primary's, or the
// standbys' read pool).
type connector struct {
	cfg    pq.Config
	hosts  []pq.ConfigMultihost // every host of the URL, in its order
	dialer net.Dialer
	// preferred is the index in hosts of the host tried first: the one
	// that last accepted a connection.
	preferred atomic.Int32
	// generation grows whenever the pool moves to another server (see
	// moved) or its connections are retired (retire); a connection of an
	// older generation is not reused.
	generation atomic.Uint64
	// server is the address of the server the last connection reached.
	server atomic.Pointer[string]

	mu    sync.Mutex
	conns map[*trackedConn]struct{} // open network connections
}

func newConnector(dsn string) (*connector, error) {
	cfg, err := pq.NewConfig(dsn)
	if err != nil {
		return nil, err
	}
	c := NewDialer().c
	c.cfg = cfg
	c.hosts = append([]pq.ConfigMultihost{{Host: cfg.Host, Hostaddr: cfg.Hostaddr, Port: cfg.Port}}, cfg.Multi...)
	if cfg.LoadBalanceHosts == pq.LoadBalanceHostsRandom {
		// One host at random per process, kept (see prefer): lib/pq would
		// shuffle the hosts on every dial, spreading one pool's
		// connections over standbys whose replay positions differ.
		c.cfg.LoadBalanceHosts = pq.LoadBalanceHostsDisable
		c.preferred.Store(int32(rand.IntN(len(c.hosts))))
	}
	return c, nil
}

// dialSlot receives the connection a Connect dialled last: lib/pq closes
// those of hosts it rejects, so the last one is the connection it keeps.
type dialSlot struct{ conn *trackedConn }

type dialSlotKey struct{}

// Connect implements driver.Connector.
func (c *connector) Connect(ctx context.Context) (driver.Conn, error) {
	slot := &dialSlot{}
	ctx = context.WithValue(ctx, dialSlotKey{}, slot)
	cfg := c.ordered()
	var (
		dc  driver.Conn
		err error
	)
	if c.preferStandby() {
		// lib/pq (v1.12.3) retries prefer-standby as "any" by jumping
		// back with the URL's setting unchanged: when no host answers at
		// all it loops forever, burning a CPU. Ask for a standby, then for
		// any server, ourselves.
		cfg.TargetSessionAttrs = pq.TargetSessionAttrsStandby
		if dc, err = c.open(ctx, cfg); err != nil {
			cfg.TargetSessionAttrs = pq.TargetSessionAttrsAny
			dc, err = c.open(ctx, cfg)
		}
	} else {
		dc, err = c.open(ctx, cfg)
	}
	if err != nil {
		return nil, err
	}
	if slot.conn == nil {
		// Not dialled through c: nothing to track.
		return &conn{Conn: dc, owner: c, generation: c.generation.Load()}, nil
	}
	// The generation after prefer: that of the server this connection is on.
	c.prefer(slot.conn.server)
	return &conn{Conn: dc, owner: c, net: slot.conn, generation: c.generation.Load()}, nil
}

// open connects with cfg through lib/pq, dialling through c.
func (c *connector) open(ctx context.Context, cfg pq.Config) (driver.Conn, error) {
	pc, err := pq.NewConnectorConfig(cfg)
	if err != nil {
		return nil, err
	}
	pc.Dialer(c)
	return pc.Connect(ctx)
}

// Driver implements driver.Connector.
func (c *connector) Driver() driver.Driver { return pq.Driver{} }

// ordered is the configuration with the preferred host first and the
// others in the URL's order.
func (c *connector) ordered() pq.Config {
	cfg := c.cfg.Clone()
	p := int(c.preferred.Load())
	if p == 0 || p >= len(c.hosts) {
		return cfg
	}
	first := c.hosts[p]
	cfg.Host, cfg.Hostaddr, cfg.Port = first.Host, first.Hostaddr, first.Port
	cfg.Multi = make([]pq.ConfigMultihost, 0, len(c.hosts)-1)
	for i, h := range c.hosts {
		if i != p {
			cfg.Multi = append(cfg.Multi, h)
		}
	}
	return cfg
}

// hostIndex is the index in hosts of the host dialled at address, or -1.
func (c *connector) hostIndex(address string) int {
	for i, h := range c.hosts {
		for _, a := range hostAddresses(h) {
			if a == address {
				return i
			}
		}
	}
	return -1
}

// hostAddresses are the addresses lib/pq may dial for h.
func hostAddresses(h pq.ConfigMultihost) []string {
	port := strconv.Itoa(int(h.Port))
	out := []string{net.JoinHostPort(h.Host, port)}
	if h.Hostaddr != (netip.Addr{}) {
		out = append(out, net.JoinHostPort(h.Hostaddr.String(), port))
	}
	return out
}

// prefer makes the host at address the first one tried. A connection to
// another server than the last one is a move of the pool: moved.
func (c *connector) prefer(address string) {
	if i := c.hostIndex(address); i >= 0 {
		c.preferred.Store(int32(i))
	}
	if old := c.server.Swap(&address); old != nil && *old != address {
		c.moved()
	}
}

// preferStandby reports whether the pool's URL asks for a standby first
// (target_session_attrs=prefer-standby), falling back to any server.
func (c *connector) preferStandby() bool {
	return c.cfg.TargetSessionAttrs == pq.TargetSessionAttrsPreferStandby
}

// avoid makes the hosts after the one at address tried first, after its
// server failed its probe: a silent host would otherwise cost every new
// connection connect_timeout.
func (c *connector) avoid(address string) {
	i := c.hostIndex(address)
	if i < 0 || len(c.hosts) < 2 {
		return
	}
	c.preferred.CompareAndSwap(int32(i), int32((i+1)%len(c.hosts)))
}

// moved starts a new generation when the pool's connections go to another
// server than before: the older ones finish what they run and are closed
// instead of reused, and reads pinned to the old generation go to the
// primary (ReadsAt), so that no request reads from two servers whose data
// may differ. (A server that stopped answering has its connections
// aborted by the probe instead.)
func (c *connector) moved() { c.generation.Add(1) }

// retire makes every connection open now be closed rather than reused
// (a new generation, as moved starts), when it is next drawn from the pool
// or returned to it: their server has likely dropped them.
func (c *connector) retire() { c.generation.Add(1) }

// abortServer ends every connection to the server at address: a read or
// write waiting on one fails at once (lib/pq then marks the connection
// bad), and an idle one fails its next use.
func (c *connector) abortServer(address string) int {
	return c.abort(func(server string) bool { return server == address })
}

func (c *connector) abort(match func(server string) bool) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for tc := range c.conns {
		if match(tc.server) {
			tc.abort()
			n++
		}
	}
	return n
}

// Dial, DialTimeout and DialContext implement pq.Dialer and
// pq.DialerContext.
func (c *connector) Dial(network, address string) (net.Conn, error) {
	return c.DialContext(context.Background(), network, address)
}

func (c *connector) DialTimeout(network, address string, timeout time.Duration) (net.Conn, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	return c.DialContext(ctx, network, address)
}

func (c *connector) DialContext(ctx context.Context, network, address string) (net.Conn, error) {
	nc, err := c.dialer.DialContext(ctx, network, address)
	if err != nil {
		return nil, err
	}
	tc := &trackedConn{Conn: nc, server: address, owner: c}
	c.mu.Lock()
	c.conns[tc] = struct{}{}
	c.mu.Unlock()
	if slot, ok := ctx.Value(dialSlotKey{}).(*dialSlot); ok {
		slot.conn = tc
	}
	return tc, nil
}

// trackedConn is a network connection the connector can abort.
type trackedConn struct {
	net.Conn
	server  string
	owner   *connector
	aborted atomic.Bool
	once    sync.Once
}

// abort makes every pending and later read and write fail.
func (tc *trackedConn) abort() {
	tc.aborted.Store(true)
	_ = tc.Conn.SetDeadline(time.Unix(1, 0))
}

// SetDeadline, SetReadDeadline and SetWriteDeadline keep an aborted
// connection aborted: lib/pq clears the connect deadline after startup.
func (tc *trackedConn) SetDeadline(t time.Time) error {
	if tc.aborted.Load() {
		return tc.Conn.SetDeadline(time.Unix(1, 0))
	}
	return tc.Conn.SetDeadline(t)
}

func (tc *trackedConn) SetReadDeadline(t time.Time) error {
	if tc.aborted.Load() {
		return tc.Conn.SetReadDeadline(time.Unix(1, 0))
	}
	return tc.Conn.SetReadDeadline(t)
}

func (tc *trackedConn) SetWriteDeadline(t time.Time) error {
	if tc.aborted.Load() {
		return tc.Conn.SetWriteDeadline(time.Unix(1, 0))
	}
	return tc.Conn.SetWriteDeadline(t)
}

func (tc *trackedConn) Close() error {
	tc.once.Do(func() {
		tc.owner.mu.Lock()
		delete(tc.owner.conns, tc)
		tc.owner.mu.Unlock()
	})
	return tc.Conn.Close()
}

// servers counts the open connections by server, for the metrics.
func (c *connector) servers() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[string]int{}
	for tc := range c.conns {
		out[tc.server]++
	}
	return out
}

// errReadOnlyServer marks a connection found on a read-only server.
var errReadOnlyServer = errors.New("database: the server is read-only")

// Dialer dials PostgreSQL connections as the pools do (keepalives, user
// timeout) and can abort every connection it made: for a session that
// lives outside the pools, the events listener's.
type Dialer struct{ c *connector }

// NewDialer returns a Dialer; it implements pq.Dialer and pq.DialerContext.
func NewDialer() *Dialer {
	return &Dialer{c: &connector{conns: map[*trackedConn]struct{}{}, dialer: net.Dialer{
		KeepAliveConfig: net.KeepAliveConfig{Enable: true, Idle: keepAliveIdle, Interval: keepAliveInterval, Count: keepAliveCount},
		Control:         setUserTimeout(tcpUserTimeout),
	}}}
}

func (d *Dialer) Dial(network, address string) (net.Conn, error) { return d.c.Dial(network, address) }

func (d *Dialer) DialTimeout(network, address string, timeout time.Duration) (net.Conn, error) {
	return d.c.DialTimeout(network, address, timeout)
}

func (d *Dialer) DialContext(ctx context.Context, network, address string) (net.Conn, error) {
	return d.c.DialContext(ctx, network, address)
}

// AbortAll ends every open connection the Dialer made, and returns how many.
func (d *Dialer) AbortAll() int { return d.c.abort(func(string) bool { return true }) }

// WithConnectTimeout returns the PostgreSQL URL raw with connect_timeout set
// to d (in whole seconds, at least 1) unless it has one.
func WithConnectTimeout(raw string, d time.Duration) (string, error) {
	return postgresDSN(raw, nil, d)
}
