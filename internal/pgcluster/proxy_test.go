package pgcluster

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// echoServer echoes what it reads, counting bytes and ended connections,
// and can push bytes of its own to every client.
type echoServer struct {
	ln       net.Listener
	received atomic.Int64
	ended    atomic.Int64

	mu    sync.Mutex
	conns []net.Conn
}

func newEchoServer(t *testing.T) *echoServer {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &echoServer{ln: ln}
	var wg sync.WaitGroup
	t.Cleanup(func() {
		ln.Close()
		s.mu.Lock()
		for _, c := range s.conns {
			c.Close()
		}
		s.mu.Unlock()
		wg.Wait()
	})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s.mu.Lock()
			s.conns = append(s.conns, c)
			s.mu.Unlock()
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer s.ended.Add(1)
				buf := make([]byte, 1024)
				for {
					n, err := c.Read(buf)
					s.received.Add(int64(n))
					if err != nil {
						return
					}
					if _, err := c.Write(buf[:n]); err != nil {
						return
					}
				}
			}()
		}
	}()
	return s
}

func (s *echoServer) accepted() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.conns)
}

func (s *echoServer) push(t *testing.T, msg string) {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range s.conns {
		if _, err := c.Write([]byte(msg)); err != nil {
			t.Fatal(err)
		}
	}
}

func dialProxy(t *testing.T, p *Proxy) net.Conn {
	t.Helper()
	c, err := net.DialTimeout("tcp", p.Addr(), 5*time.Second)
	if err != nil {
		t.Fatalf("dialing the proxy: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func send(t *testing.T, c net.Conn, msg string) {
	t.Helper()
	c.SetWriteDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Write([]byte(msg)); err != nil {
		t.Fatalf("write: %v", err)
	}
}

func roundTrip(t *testing.T, c net.Conn, msg string) {
	t.Helper()
	send(t, c, msg)
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	got := make([]byte, len(msg))
	if _, err := io.ReadFull(c, got); err != nil || string(got) != msg {
		t.Fatalf("echo of %q: got %q, %v", msg, got, err)
	}
}

// expectSilence fails unless c stays open yet quiet for a while.
func expectSilence(t *testing.T, c net.Conn) {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
	n, err := c.Read(make([]byte, 64))
	if !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("silenced connection read %d bytes, %v; want a timeout", n, err)
	}
}

// expectClosed fails unless c ends (EOF or reset) promptly.
func expectClosed(t *testing.T, c net.Conn) {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, err := io.Copy(io.Discard, c)
	if errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatal("connection still open after Close")
	}
}

func TestProxySilenceResumeClose(t *testing.T) {
	t.Parallel()
	srv := newEchoServer(t)
	p := NewProxy(t, srv.ln.Addr().String())

	a := dialProxy(t, p)
	roundTrip(t, a, "ping")

	p.Silence()
	received := srv.received.Load()
	send(t, a, "lost upstream")
	expectSilence(t, a)
	srv.push(t, "lost downstream")
	expectSilence(t, a)
	b := dialProxy(t, p) // the listener still accepts, then nothing happens
	send(t, b, "hello?")
	expectSilence(t, b)
	if got := srv.received.Load(); got != received {
		t.Errorf("server received %d bytes while silenced", got-received)
	}
	if got := srv.accepted(); got != 1 {
		t.Errorf("server saw %d connections, want 1: the one made while silenced must not reach it", got)
	}
	if got := srv.ended.Load(); got != 0 {
		t.Errorf("%d server connections ended while silenced; Silence must close nothing", got)
	}

	p.Resume()
	c := dialProxy(t, p)
	roundTrip(t, c, "pong")
	expectSilence(t, a) // silenced before: stays dead

	p.Close()
	for _, conn := range []net.Conn{a, b, c} {
		expectClosed(t, conn)
	}
	if _, err := net.DialTimeout("tcp", p.Addr(), time.Second); err == nil {
		t.Error("proxy still accepts after Close")
	}
}

// TestProxyPostgres: a query through a silenced proxy neither returns nor
// errors; it stays stuck, as on a primary that dropped off the network.
func TestProxyPostgres(t *testing.T) {
	t.Parallel()
	c := New(t, Options{})
	p := NewProxy(t, fmt.Sprintf("127.0.0.1:%d", c.Primary.Port))
	url := fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", p.Port())
	openPool := func() *sql.DB {
		db, err := sql.Open("postgres", url)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		return db
	}
	selectOne := func(db *sql.DB, timeout time.Duration) error {
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		var one int
		return db.QueryRowContext(ctx, "SELECT 1").Scan(&one)
	}

	db := openPool()
	db.SetMaxOpenConns(1)
	if err := selectOne(db, sqlTimeout); err != nil {
		t.Fatalf("through the proxy: %v", err)
	}

	p.Silence()
	const queryTimeout = 500 * time.Millisecond
	start := time.Now()
	done := make(chan error, 1)
	go func() { done <- selectOne(db, queryTimeout) }()
	stuck := true
	select {
	case err := <-done:
		// Ending is fine only at the context's deadline: that is a hang cut
		// short, not an error from the network.
		if took := time.Since(start); !errors.Is(err, context.DeadlineExceeded) || took < queryTimeout {
			t.Fatalf("query through a silenced proxy ended after %v with %v; want it to hang", took, err)
		}
		stuck = false
		t.Logf("the silenced query ended at its deadline, after %v", time.Since(start))
	case <-time.After(queryTimeout + 1500*time.Millisecond):
		t.Logf("the silenced query is still stuck after %v", time.Since(start))
		// Still stuck past its own deadline: lib/pq cannot interrupt a read
		// from a peer that never answers, and its cancel request, sent over
		// a new connection through the proxy, hangs as well.
	}

	p.Resume()
	if err := selectOne(openPool(), sqlTimeout); err != nil {
		t.Fatalf("new connection after Resume: %v", err)
	}

	p.Close()
	if !stuck {
		return
	}
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("the silenced query succeeded after Close")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the silenced query is still stuck after Close")
	}
}
