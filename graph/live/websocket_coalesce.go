package live

// Coalesced WebSocket writes. coder/websocket flushes its buffered writer
// after every message, so each message would be a system call of its own
// (on a busy replica most of what a delivery costs, and ~1 000 of them per
// event with 1 000 subscribers). The socket's connection is hijacked
// through a coalescer instead: while a sender holds it corked, what the
// library flushes is kept, and the sender's uncork writes it all at once.
// The library still frames every message (and its control frames), so the
// bytes on the wire are the ones it would have written, in its order; only
// the number of writes changes.

import (
	"bufio"
	"net"
	"net/http"
	"sync"
	"time"
)

// maxCoalesced bounds the bytes a socket's coalescer holds while corked:
// a flush that would take it beyond goes out at once (what is held first),
// so a batch of large events costs no more memory than writing them one by
// one would.
const maxCoalesced = 64 << 10

// coalescedBuffers hold what coalescers keep while corked, lent for a
// batch's writes only: an idle socket holds none.
var coalescedBuffers = sync.Pool{New: func() any { b := make([]byte, 0, 8<<10); return &b }}

// coalescer is a socket's connection as coder/websocket writes to it (the
// writer under its buffered writer). Writes are serialised by mu, whoever
// makes them: the library's frames (under its own lock) and uncork.
type coalescer struct {
	conn    net.Conn
	timeout time.Duration

	mu sync.Mutex
	// corks counts the senders writing a batch: while any is, flushes are
	// kept in held (up to maxCoalesced) instead of written.
	corks int
	held  *[]byte
	// deadline is conn's write deadline, moved forward only once less
	// than half the timeout is left (as sseWriter's): each network write
	// has at least half of it, and most set none.
	deadline time.Time
	// err is the first write's error: the bytes after a failed write
	// would not frame, so none are written again.
	err error
}

// Write takes what coder/websocket flushes: kept while corked (p is the
// library's buffer, reused once Write returns: copied), written otherwise.
func (g *coalescer) Write(p []byte) (int, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.err != nil {
		return 0, g.err
	}
	if g.heldLen()+len(p) > maxCoalesced || g.corks == 0 {
		// Written in order: what is held first.
		if err := g.flushLocked(); err != nil {
			return 0, err
		}
	}
	if g.corks > 0 && len(p) <= maxCoalesced {
		if g.held == nil {
			g.held = coalescedBuffers.Get().(*[]byte)
		}
		*g.held = append(*g.held, p...)
		return len(p), nil
	}
	if err := g.writeLocked(p); err != nil {
		return 0, err
	}
	return len(p), nil
}

// cork starts a batch: until the matching uncork, flushes are kept.
func (g *coalescer) cork() {
	g.mu.Lock()
	g.corks++
	g.mu.Unlock()
}

// uncork ends a batch and writes everything kept so far, the batch's and
// any other sender's (a control frame, another subscription's message),
// in one write: nothing waits for another batch to end.
func (g *coalescer) uncork() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.corks--
	if g.err != nil {
		return g.err
	}
	return g.flushLocked()
}

func (g *coalescer) heldLen() int {
	if g.held == nil {
		return 0
	}
	return len(*g.held)
}

// flushLocked writes what is kept, and gives its buffer back.
func (g *coalescer) flushLocked() error {
	if g.held == nil {
		return nil
	}
	err := g.writeLocked(*g.held)
	if cap(*g.held) <= maxCoalesced {
		*g.held = (*g.held)[:0]
		coalescedBuffers.Put(g.held)
	}
	g.held = nil
	return err
}

// writeLocked writes p to the connection within the write timeout: a
// client that takes nothing for that long is cut (the write fails, and
// so does every later one).
func (g *coalescer) writeLocked(p []byte) error {
	if len(p) == 0 {
		return nil
	}
	if now := time.Now(); g.timeout > 0 && g.deadline.Sub(now) < g.timeout/2 {
		g.deadline = now.Add(g.timeout)
		if err := g.conn.SetWriteDeadline(g.deadline); err != nil {
			g.err = err
			return err
		}
	}
	if _, err := g.conn.Write(p); err != nil {
		g.err = err
		return err
	}
	return nil
}

// coalescingWriter is the ResponseWriter a socket is accepted through: its
// Hijack hands coder/websocket the connection with its buffered writer
// writing to a coalescer (out, once hijacked).
type coalescingWriter struct {
	http.ResponseWriter
	timeout time.Duration
	out     *coalescer
}

func (w *coalescingWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	conn, brw, err := http.NewResponseController(w.ResponseWriter).Hijack()
	if err != nil {
		return nil, nil, err
	}
	// net/http flushed the 101 before hijacking, so this writes nothing;
	// were anything left, it goes first.
	if err := brw.Writer.Flush(); err != nil {
		_ = conn.Close()
		return nil, nil, err
	}
	w.out = &coalescer{conn: conn, timeout: w.timeout}
	// The same buffer, now writing to the coalescer.
	brw.Writer.Reset(w.out)
	return conn, brw, nil
}

func (w *coalescingWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
