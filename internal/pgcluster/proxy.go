package pgcluster

import (
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Proxy forwards TCP connections from a free 127.0.0.1 port to a target,
// and can go silent like a host that dropped off the network: bytes stop
// flowing but nothing is closed or reset.
type Proxy struct {
	target string
	ln     net.Listener
	wg     sync.WaitGroup

	mu       sync.Mutex
	silenced bool
	closed   bool
	links    []*link
}

// NewProxy starts a proxy to target (host:port), closed when t ends.
func NewProxy(t testing.TB, target string) *Proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &Proxy{target: target, ln: ln}
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(p.Close)
	return p
}

// Accepted returns how many connections the proxy has accepted so far.
func (p *Proxy) Accepted() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.links)
}

// Port returns the port the proxy listens on.
func (p *Proxy) Port() int { return p.ln.Addr().(*net.TCPAddr).Port }

// Addr returns the proxy's host:port.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Silence stops forwarding in both directions on every connection, now and
// later, closing nothing: peers see no error, only silence. Connections
// accepted while silenced are never forwarded. Once Silence returns, no
// further byte crosses the proxy.
func (p *Proxy) Silence() {
	p.mu.Lock()
	p.silenced = true
	links := append([]*link(nil), p.links...)
	p.mu.Unlock()
	for _, l := range links {
		l.silence()
	}
}

// Resume forwards new connections again; connections silenced before stay
// dead, as they would after a real partition.
func (p *Proxy) Resume() {
	p.mu.Lock()
	p.silenced = false
	p.mu.Unlock()
}

// Close stops the proxy and closes every connection, then waits for its
// goroutines.
func (p *Proxy) Close() {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return
	}
	p.closed = true
	links := p.links
	p.links = nil
	p.mu.Unlock()
	p.ln.Close()
	for _, l := range links {
		l.close()
	}
	p.wg.Wait()
}

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		conn, err := p.ln.Accept()
		if err != nil {
			return // closed
		}
		l := &link{client: conn}
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			conn.Close()
			return
		}
		p.links = append(p.links, l)
		if p.silenced {
			l.dead.Store(true)
		}
		p.wg.Add(1)
		p.mu.Unlock()
		go p.serve(l)
	}
}

// serve connects l to the target (unless l is already dead) and pumps
// bytes both ways until either side ends.
func (p *Proxy) serve(l *link) {
	defer p.wg.Done()
	if l.dead.Load() {
		drain(l.client)
		return
	}
	server, err := net.DialTimeout("tcp", p.target, 10*time.Second)
	if err != nil {
		l.client.Close()
		return
	}
	// Close or Silence may have run during the dial; both read l.server
	// under l.mu.
	l.mu.Lock()
	l.server = server
	l.mu.Unlock()
	p.mu.Lock()
	closed := p.closed
	p.mu.Unlock()
	if closed {
		l.close()
		return
	}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		l.pump(server, l.client)
	}()
	l.pump(l.client, server)
}

// drain reads and discards until conn ends, so a silenced peer's writes
// vanish as they would on a dead network.
func drain(conn net.Conn) {
	buf := make([]byte, 32<<10)
	for {
		if _, err := conn.Read(buf); err != nil {
			return
		}
	}
}

// link is one proxied connection.
type link struct {
	client net.Conn
	dead   atomic.Bool // silenced: forward nothing, close nothing

	// mu guards server; writers hold it shared across their check of dead
	// and their write, so silence, holding it exclusively, knows no write
	// is under way once it has it.
	mu     sync.RWMutex
	server net.Conn
}

func (l *link) pump(src, dst net.Conn) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 && !l.forward(dst, buf[:n]) {
			l.close()
			return
		}
		if err != nil {
			if !l.dead.Load() {
				l.close()
			}
			// A silenced link keeps the other side open and unaware.
			return
		}
	}
}

// forward writes b to dst unless l is dead, in which case b is dropped.
// It reports false when dst failed on a live link.
func (l *link) forward(dst net.Conn, b []byte) bool {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if l.dead.Load() {
		return true
	}
	_, err := dst.Write(b)
	return err == nil || l.dead.Load()
}

func (l *link) silence() {
	l.dead.Store(true)
	// A write blocked on a peer that does not read would hold mu forever:
	// cut it short; a dead link's bytes are dropped anyway.
	past := time.Unix(1, 0)
	l.client.SetWriteDeadline(past)
	l.mu.RLock()
	if l.server != nil {
		l.server.SetWriteDeadline(past)
	}
	l.mu.RUnlock()
	// Taking mu exclusively waits out writes that saw the link still live.
	l.mu.Lock()
	l.mu.Unlock()

}

func (l *link) close() {
	l.client.Close()
	l.mu.RLock()
	server := l.server
	l.mu.RUnlock()
	if server != nil {
		server.Close()
	}
}
