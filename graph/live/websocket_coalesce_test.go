package live

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// writeCounter is a listener whose connections count the writes made to
// them: each is one system call, what coalescing saves.
type writeCounter struct {
	net.Listener
	mu     sync.Mutex
	writes int
	sizes  []int
}

func (l *writeCounter) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &countedConn{Conn: c, l: l}, nil
}

// state is how many writes were made, and the size of each.
func (l *writeCounter) state() (int, []int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.writes, append([]int(nil), l.sizes...)
}

type countedConn struct {
	net.Conn
	l *writeCounter
}

func (c *countedConn) Write(p []byte) (int, error) {
	c.l.mu.Lock()
	c.l.writes++
	c.l.sizes = append(c.l.sizes, len(p))
	c.l.mu.Unlock()
	return c.Conn.Write(p)
}

// coalescedMessage is the i-th message of a test batch, size bytes: its
// index first, so that an order or a message lost shows.
func coalescedMessage(i, size int) []byte {
	return []byte(fmt.Sprintf("%06d", i) + strings.Repeat("x", size-6))
}

// TestCoalescedMessagesDecodeInOrder: the messages a corked socket writes
// reach the client as the same messages, whole and in order, in fewer
// writes than messages; what the coalescer holds never exceeds
// maxCoalesced, however large the batch or its messages.
func TestCoalescedMessagesDecodeInOrder(t *testing.T) {
	repeat := func(n, size int) []int {
		sizes := make([]int, n)
		for i := range sizes {
			sizes[i] = size
		}
		return sizes
	}
	for _, tc := range []struct {
		name  string
		sizes []int
		// writes is how many writes the batch may take, at most.
		writes int
	}{
		{"small messages", repeat(50, 200), 1},
		// 20 × 10 KiB: a write per maxCoalesced held, not one a message.
		{"over the bound", repeat(20, 10<<10), 4},
		// One larger than the bound is written as it comes, what is held
		// before it first; the ones after it are held again.
		{"one larger than the bound", []int{100, 100, 3 * maxCoalesced, 100, 100}, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			counter := &writeCounter{Listener: ln}
			type outcome struct {
				writes, maxHeld int
				err             error
			}
			done := make(chan outcome, 1)
			srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				cw := &coalescingWriter{ResponseWriter: w, timeout: 5 * time.Second}
				conn, err := websocket.Accept(cw, r, nil)
				if err != nil {
					done <- outcome{err: err}
					return
				}
				defer conn.CloseNow()
				conn.SetReadLimit(-1)
				before, _ := counter.state()
				var o outcome
				cw.out.cork()
				for i, size := range tc.sizes {
					if o.err = conn.Write(context.Background(), websocket.MessageText, coalescedMessage(i, size)); o.err != nil {
						break
					}
					cw.out.mu.Lock()
					o.maxHeld = max(o.maxHeld, cw.out.heldLen())
					cw.out.mu.Unlock()
				}
				if err := cw.out.uncork(); o.err == nil {
					o.err = err
				}
				after, _ := counter.state()
				o.writes = after - before
				done <- o
				// Until the client has read it all and closes.
				_, _, _ = conn.Read(context.Background())
			}))
			srv.Listener = counter
			srv.Start()
			defer srv.Close()

			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			c, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(srv.URL, "http"), nil)
			if err != nil {
				t.Fatal(err)
			}
			defer c.CloseNow()
			c.SetReadLimit(-1)
			for i, size := range tc.sizes {
				typ, got, err := c.Read(ctx)
				if err != nil {
					t.Fatalf("message %d: %v", i, err)
				}
				if want := coalescedMessage(i, size); typ != websocket.MessageText || !bytes.Equal(got, want) {
					t.Fatalf("message %d: %v of %d bytes %.12q…, want text of %d bytes %.12q…", i, typ, len(got), got, len(want), want)
				}
			}
			o := <-done
			if o.err != nil {
				t.Fatal(o.err)
			}
			if o.writes > tc.writes || o.writes < 1 {
				_, sizes := counter.state()
				t.Fatalf("%d messages in %d writes, want 1 to %d (writes of %v bytes)", len(tc.sizes), o.writes, tc.writes, sizes)
			}
			if o.maxHeld > maxCoalesced {
				t.Fatalf("held %d bytes, more than the bound %d", o.maxHeld, maxCoalesced)
			}
		})
	}
}

// TestUncorkedWritesGoOutAtOnce: without a batch under way, each message
// is written as the library flushes it, and a write that fails fails every
// later one (the bytes after it would not frame).
func TestUncorkedWritesGoOutAtOnce(t *testing.T) {
	server, client := net.Pipe()
	defer client.Close()
	g := &coalescer{conn: server, timeout: time.Second}
	got := make(chan []byte, 1)
	go func() {
		b := make([]byte, 5)
		n, _ := client.Read(b)
		got <- b[:n]
	}()
	if _, err := g.Write([]byte("hello")); err != nil {
		t.Fatal(err)
	}
	if b := <-got; string(b) != "hello" {
		t.Fatalf("read %q", b)
	}
	// Nobody reads: the write times out, and so does every later one,
	// corked or not, without another attempt.
	g.timeout = 20 * time.Millisecond
	g.deadline = time.Time{}
	if _, err := g.Write([]byte("stuck")); err == nil {
		t.Fatal("a write nobody reads succeeded")
	}
	g.cork()
	if _, err := g.Write([]byte("after")); err == nil {
		t.Fatal("a write after a failed one was taken")
	}
	if err := g.uncork(); err == nil {
		t.Fatal("uncork after a failed write succeeded")
	}
}
